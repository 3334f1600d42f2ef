"""The pixel-space world-action model (the baseline the paper argues against).

:class:`PixelWAM` predicts the future frames t + 4 and t + 8 from the current context, then acts on
them: pass 1 runs [obs tokens | F frame queries] through the transformer and decodes each query's
output into a (C, H, W) frame (``decoder="regress"``: a transposed-CNN regression, its cheapest
form; ``"flow"``: a small conditional flow-matching decoder integrated in a few Euler steps); pass 2
re-encodes the predicted frames with the shared tokenizer and runs [obs tokens | frame tokens | ACT]
through the same transformer to the action head. Loss = action loss + frame loss (pixel MSE, or
the flow-matching loss). Same tokenizer, transformer and head as :class:`~latentwam.VLAPolicy`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from latentwam.wam import ChunkPolicy, _float

DECODERS = ("regress", "flow")


class FrameDecoder(nn.Module):
    """(N, d) → (N, C, S, S): linear to a 3×3 map, then three stride-2 transposed convolutions."""

    def __init__(self, dim, channels, size, extra_in=0):
        super().__init__()
        self.size, self.channels = size, channels
        self.inp = nn.Linear(dim, 64 * 9)
        self.up = nn.Sequential(
            nn.ConvTranspose2d(64 + extra_in, 64, 4, 2, 1), nn.GELU(),
            nn.ConvTranspose2d(64, 32, 4, 2, 1), nn.GELU(),
            nn.ConvTranspose2d(32, channels, 4, 2, 1),
        )

    def forward(self, c, extra=None):
        x = self.inp(c).view(-1, 64, 3, 3)
        if extra is not None:  # the noisy frame, pooled to the seed resolution (flow decoder)
            x = torch.cat([x, F.adaptive_avg_pool2d(extra, 3)], 1)
        x = self.up(x)
        if x.shape[-1] != self.size:
            x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False)
        return x


class FlowFrameDecoder(nn.Module):
    """Conditional flow matching over frames: v_θ(x_τ, τ, c); a conv refinement on the upsampled field."""

    def __init__(self, dim, channels, size, steps=4):
        super().__init__()
        self.steps = steps
        self.cond = FrameDecoder(dim + 1, channels, size, extra_in=channels)
        self.refine = nn.Sequential(nn.Conv2d(2 * channels, 32, 3, 1, 1), nn.GELU(), nn.Conv2d(32, channels, 3, 1, 1))

    def velocity(self, x, tau, c):
        base = self.cond(torch.cat([c, tau], -1), x)
        return base + self.refine(torch.cat([x, base], 1))

    def loss(self, c, target):
        x0 = torch.randn_like(target)
        tau = torch.rand(target.shape[0], 1, device=target.device, dtype=target.dtype)
        t4 = tau.view(-1, 1, 1, 1)
        xt = (1 - t4) * x0 + t4 * target
        v = self.velocity(xt, tau, c)
        est = xt + (1 - t4) * v  # one-step estimate of the clean frame, fed to the action pass
        return F.mse_loss(v, target - x0), est.clamp(0, 1)

    def sample(self, c, shape):
        x = torch.zeros((c.shape[0], *shape), device=c.device, dtype=c.dtype)
        for i in range(self.steps):
            tau = torch.full((c.shape[0], 1), i / self.steps, device=c.device, dtype=c.dtype)
            x = x + self.velocity(x, tau, c) / self.steps
        return x.clamp(0, 1)


class PixelWAM(ChunkPolicy):
    """Pixel world-action model: predict frames t + offsets, re-encode them, then act.

    Args: as :class:`~latentwam.LatentWAM` (``action_dim``, ``proprio_dim``, ``image_size``, ``chunk``,
    ``dim``, ``head``, ``backbone``), plus ``future_offsets``, ``decoder`` (``"regress"`` or ``"flow"``)
    and ``frame_weight`` (weight of the per-pixel frame loss; 100 by default because the frames are sparse
    blobs, whose per-pixel MSE is about 1e-3 of the action loss's scale).

    ``forward`` → ``{"actions", "frames_pred" (B, F, C, H, W), "latents_prior" (the frame queries' outputs),
    "latents_post": None, "features"}``.
    """

    def __init__(self, *, action_dim, proprio_dim, image_size=24, chunk=8, dim=64, future_offsets=(4, 8),
                 decoder="regress", frame_weight=100.0, head="mse", context=2, channels=3, depth=2, heads=4,
                 backbone=None):
        super().__init__(action_dim=action_dim, proprio_dim=proprio_dim, image_size=image_size, chunk=chunk,
                         dim=dim, context=context, channels=channels, head=head, depth=depth, heads=heads,
                         backbone=backbone)
        from latentwam.data import _check_offsets

        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
        self.decoder_kind = decoder
        self.future_offsets = _check_offsets(future_offsets)
        self.frame_weight = _float(frame_weight, "frame_weight")
        nf = len(self.future_offsets)
        self.frame_queries = nn.Parameter(torch.randn(nf, self.dim) * 0.02)
        self.future_emb = nn.Parameter(torch.randn(nf, self.dim) * 0.02)
        if decoder == "regress":
            self.decoder = FrameDecoder(self.dim, self.channels, self.image_size)
        else:
            self.decoder = FlowFrameDecoder(self.dim, self.channels, self.image_size)

    @property
    def num_future(self) -> int:
        return len(self.future_offsets)

    def config(self) -> dict:
        return {**super().config(), "future_offsets": list(self.future_offsets), "decoder": self.decoder_kind,
                "frame_weight": self.frame_weight}

    def _queries(self, obs):
        n = obs.shape[1]
        h = self.transformer(torch.cat([obs, self.frame_queries.expand(len(obs), -1, -1)], 1))
        return h[:, n:]  # (B, F, d)

    def _act_pass(self, obs, frames_pred):
        tok = self.tokenize_future(frames_pred) + self.future_emb[None, :, None]
        h = self.transformer(torch.cat([obs, tok.flatten(1, 2), self.act_token.expand(len(obs), 1, -1)], 1))
        return h[:, -1]

    def predict_frames(self, q):
        B, nf = q.shape[:2]
        shape = (self.channels, self.image_size, self.image_size)
        if self.decoder_kind == "regress":
            x = torch.sigmoid(self.decoder(q.flatten(0, 1)))
        else:
            x = self.decoder.sample(q.flatten(0, 1), shape)
        return x.view(B, nf, *shape)

    def forward(self, frames, proprio, future=None, generator=None) -> dict:
        frames, proprio, _ = self.check_inputs(frames, proprio)
        obs = self.observe(frames, proprio)
        q = self._queries(obs)
        pred = self.predict_frames(q)
        act = self._act_pass(obs, pred)
        return {"actions": self.decode_actions(act, generator), "frames_pred": pred, "latents_prior": q,
                "latents_post": None, "features": q.flatten(1)}

    def loss(self, batch, generator=None):
        frames, proprio, future = self.check_inputs(batch["frames"], batch["proprio"], batch.get("future"),
                                                    self.num_future)
        if future is None:
            raise ValueError("PixelWAM.loss needs batch['future'] (the frames it learns to predict)")
        actions = self.check_actions(batch["actions"], len(frames))
        obs = self.observe(frames, proprio)
        q = self._queries(obs)
        B, nf = q.shape[:2]
        if self.decoder_kind == "regress":
            pred = torch.sigmoid(self.decoder(q.flatten(0, 1))).view_as(future)
            l_frame = F.mse_loss(pred, future)
        else:
            l_frame, est = self.decoder.loss(q.flatten(0, 1), future.flatten(0, 1))
            pred = est.view_as(future)
        l_act = self.action_loss(self._act_pass(obs, pred), actions, generator)
        loss = l_act + self.frame_weight * l_frame
        return loss, {"loss": float(loss.detach()), "action": float(l_act.detach()), "frame": float(l_frame.detach())}
