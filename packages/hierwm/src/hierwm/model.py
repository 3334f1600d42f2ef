"""The two-level world model (high-level causal transformer over coarse layouts, low-level conv denoiser).

Inferred parts (no paper text or code is public): the coarse representation is the frame average-pooled
to ``coarse_shape`` at the last frame of every ``coarse_stride``-step segment; the high level is a causal
transformer over those tokens with a small denoising head (x₀-prediction) that also sees the segment's
actions; the low level denoises one frame from the previous two frames, the action that leads to it,
the segment's coarse plan (upsampled, as input channels) and the high-level state (FiLM). In training
the low level is conditioned on the true coarse plan (a teacher-forced hierarchy); in a rollout, on the
high level's sample. Both levels predict x₀ and are trained jointly with the summed MSE.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from hierwm.noise import NoiseSchedule, check_objective, phase, sample_noise_levels
from paperworks import atomic_torch_save


def _groups(ch: int) -> int:
    return math.gcd(8, ch)


class LevelEmbedding(nn.Module):
    """Sinusoidal features of a noise std σ ∈ [0, 1] → MLP → ``dim`` (σ = 0: clean)."""

    def __init__(self, dim: int, freqs: int = 8):
        super().__init__()
        self.register_buffer("freqs", (2.0 ** torch.arange(freqs)) * math.pi, persistent=False)
        self.mlp = nn.Sequential(nn.Linear(2 * freqs, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, sigma: torch.Tensor) -> torch.Tensor:
        a = sigma[..., None].to(self.freqs.dtype) * self.freqs
        return self.mlp(torch.cat([a.sin(), a.cos()], dim=-1).to(self.mlp[0].weight.dtype))


class ResBlock(nn.Module):
    """GroupNorm–SiLU–conv ×2 with FiLM from a conditioning vector, residual."""

    def __init__(self, ch: int, dim: int):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(_groups(ch), ch), nn.Conv2d(ch, ch, 3, padding=1)
        self.n2, self.c2 = nn.GroupNorm(_groups(ch), ch), nn.Conv2d(ch, ch, 3, padding=1)
        self.film = nn.Linear(dim, 2 * ch)

    def forward(self, x, cond):
        h = self.c1(F.silu(self.n1(x)))
        scale, shift = self.film(cond)[..., None, None].chunk(2, dim=1)
        h = self.n2(h) * (1 + scale) + shift
        return x + self.c2(F.silu(h))


class LowLevelDenoiser(nn.Module):
    """Per-frame conv denoiser: x̃_t, x_{t−1}, x_{t−2} (+ plan) → x̂₀_t, FiLM-conditioned on
    σ_t, the context's σ's, the action a_{t−1} (+ the high-level state).

    Shapes: frames ``(N, C, H, W)`` (H, W even), σ ``(N,)``, action ``(N, action_dim)``, plan
    ``(N, C', H', W')``, high ``(N, high_dim)``.
    """

    def __init__(self, *, frame_shape, action_dim: int, dim: int, width: int, plan_channels: int = 0,
                 high_dim: int = 0, blocks: int = 2):
        super().__init__()
        c = frame_shape[0]
        w1, w2 = max(width // 2, 8), width
        self.plan_channels, self.high_dim = plan_channels, high_dim
        self.inp = nn.Conv2d(3 * c + plan_channels, w1, 3, padding=1)
        self.down = nn.Conv2d(w1, w2, 4, stride=2, padding=1)
        self.blocks = nn.ModuleList([ResBlock(w2, dim) for _ in range(blocks)])
        self.up = nn.ConvTranspose2d(w2, w1, 4, stride=2, padding=1)
        self.out = nn.Sequential(nn.GroupNorm(_groups(2 * w1), 2 * w1), nn.SiLU(), nn.Conv2d(2 * w1, c, 3, padding=1))
        self.ctx_enc = nn.Sequential(nn.Conv2d(2 * c, w1, 3, stride=2, padding=1), nn.SiLU(),
                                     nn.Conv2d(w1, w1, 3, stride=2, padding=1), nn.SiLU(),
                                     nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(w1, dim))
        self.level_emb, self.ctx_level_emb = LevelEmbedding(dim), LevelEmbedding(dim)
        self.act = nn.Linear(action_dim, dim)
        self.high = nn.Linear(high_dim, dim) if high_dim else None

    def context_vector(self, ctx1, ctx2, s1, s2, high=None):
        """The state the low level predicts the next frame from: ``(N, dim)``."""
        z = self.ctx_enc(torch.cat([ctx1, ctx2], dim=1)) + self.ctx_level_emb(s1) + self.ctx_level_emb(s2)
        if self.high is not None:
            z = z + self.high(high)
        return z

    def forward(self, x, sigma, ctx1, ctx2, s1, s2, action, plan=None, high=None):
        cond = F.silu(self.context_vector(ctx1, ctx2, s1, s2, high) + self.level_emb(sigma) + self.act(action))
        inp = [x, ctx1, ctx2]
        if self.plan_channels:
            inp.append(F.interpolate(plan, size=x.shape[-2:], mode="nearest"))
        h0 = self.inp(torch.cat(inp, dim=1))
        h = self.down(F.silu(h0))
        for b in self.blocks:
            h = b(h, cond)
        return ctx1 + self.out(torch.cat([self.up(h), h0], dim=1))  # x̂₀ as a change from the last frame


class HighLevelTransformer(nn.Module):
    """Causal transformer over coarse tokens (one per segment) and an x₀ denoising head.

    ``states(tokens, sigma)`` ``(B, S, D), (B, S) → (B, S, dim)``: position s sees tokens ≤ s.
    ``denoise(h, noisy, sigma, seg_actions, prev)``: token s+1 from ``h_s``, its noisy version, the actions
    that lead to its segment ``(B, S, stride·action_dim)`` and token s (``prev``, as seen in the context).
    """

    def __init__(self, *, token_dim: int, seg_action_dim: int, dim: int, layers: int = 2, heads: int = 4,
                 max_tokens: int = 8):
        super().__init__()
        self.max_tokens = max_tokens
        self.tok = nn.Linear(token_dim, dim)
        self.pos = nn.Parameter(torch.zeros(max_tokens, dim))
        self.ctx_level_emb = LevelEmbedding(dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head_in = nn.Linear(token_dim + seg_action_dim, dim)
        self.level_emb = LevelEmbedding(dim)
        self.head = nn.Sequential(nn.SiLU(), nn.Linear(dim, 2 * dim), nn.SiLU(), nn.Linear(2 * dim, token_dim))
        self.start = nn.Parameter(torch.zeros(dim))  # the state before any complete segment
        nn.init.normal_(self.pos, std=0.02)

    def states(self, tokens, sigma):
        s = tokens.shape[1]
        if s > self.max_tokens:
            raise ValueError(f"at most {self.max_tokens} coarse tokens per pass, got {s}")
        x = self.tok(tokens) + self.pos[:s] + self.ctx_level_emb(sigma)
        mask = nn.Transformer.generate_square_subsequent_mask(s, device=x.device, dtype=x.dtype)
        return self.norm(self.encoder(x, mask=mask, is_causal=True))

    def denoise(self, h, noisy, sigma, seg_actions, prev):
        """x̂₀ of the next token as a change from ``prev``, the last context token."""
        return prev + self.head(h + self.head_in(torch.cat([noisy, seg_actions], dim=-1)) + self.level_emb(sigma))


def _check_shape(name, v, n):
    if not isinstance(v, (tuple, list)) or len(v) != n or any(isinstance(a, bool) or not isinstance(a, int)
                                                              or a < 1 for a in v):
        raise ValueError(f"{name} must be a tuple of {n} positive ints, got {v!r}")
    return tuple(int(a) for a in v)


def _check_pos_int(name, v, lo=1):
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    return v


class _WorldModel(nn.Module):
    """Shared validation, loss, rollout, hidden states and save/load of both world models."""

    hierarchical = True

    def _setup(self, frame_shape, coarse_shape, coarse_stride, action_dim, dim, num_levels):
        self.frame_shape = _check_shape("frame_shape", frame_shape, 3)
        self.coarse_shape = _check_shape("coarse_shape", coarse_shape, 3)
        self.coarse_stride = _check_pos_int("coarse_stride", coarse_stride)
        self.action_dim = _check_pos_int("action_dim", action_dim)
        self.dim = _check_pos_int("dim", dim, 4)
        c, h, w = self.frame_shape
        if h % 2 or w % 2:
            raise ValueError(f"frame_shape's height and width must be even, got {frame_shape}")
        if self.hierarchical and (h % self.coarse_shape[1] or w % self.coarse_shape[2]):
            raise ValueError(f"coarse_shape {coarse_shape} must divide frame_shape {frame_shape} spatially")
        self.noise = NoiseSchedule(_check_pos_int("num_levels", num_levels, 2))

    # ---- helpers ------------------------------------------------------------------------
    @property
    def _p(self):
        return next(self.parameters())

    def _validate(self, frames, actions, *, min_frames=3):
        if not isinstance(frames, torch.Tensor) or not isinstance(actions, torch.Tensor):
            raise TypeError("frames and actions must be torch tensors")
        if frames.dim() != 5 or tuple(frames.shape[2:]) != self.frame_shape:
            raise ValueError(f"frames must be (B, T, {', '.join(map(str, self.frame_shape))}), got {tuple(frames.shape)}")
        if actions.dim() != 3 or actions.shape[-1] != self.action_dim:
            raise ValueError(f"actions must be (B, T, action_dim={self.action_dim}), got {tuple(actions.shape)}")
        if actions.shape[:2] != frames.shape[:2]:
            raise ValueError(f"actions {tuple(actions.shape[:2])} and frames {tuple(frames.shape[:2])} differ in (B, T)")
        if frames.shape[1] < min_frames:
            raise ValueError(f"need at least {min_frames} frames, got {frames.shape[1]}")
        if not (torch.isfinite(frames).all() and torch.isfinite(actions).all()):
            raise ValueError("frames and actions must be finite (found NaN or inf)")
        p = self._p
        return frames.to(p.device, p.dtype), actions.to(p.device, p.dtype)

    def coarse(self, frames):
        """The coarse layout of frames ``(..., C, H, W)`` → ``(..., C', H', W')`` (average pooling)."""
        lead = frames.shape[:-3]
        x = frames.reshape(-1, *frames.shape[-3:])
        x = F.adaptive_avg_pool2d(x, self.coarse_shape[1:])
        if self.coarse_shape[0] != x.shape[1]:
            raise ValueError(f"coarse_shape channels {self.coarse_shape[0]} must equal frame channels {x.shape[1]}")
        return x.reshape(*lead, *self.coarse_shape)

    def _tokens(self, frames):  # (B, S, D): the layout of every segment's last frame
        k = self.coarse_stride
        return self.coarse(frames[:, k - 1::k]).flatten(2)

    def _high_states(self, frames, sigma=None):
        """h_{s−1} for every segment s, i.e. padded with the start state: ``(B, S+1, dim)``."""
        tok = self._tokens(frames)
        if sigma is None:
            sigma = torch.zeros(tok.shape[:2], device=tok.device, dtype=tok.dtype)
        h = self._windowed_states(tok, sigma)
        start = self.high_level.start.expand(h.shape[0], 1, -1)
        return torch.cat([start, h], dim=1), tok

    def _windowed_states(self, tok, sigma):
        m = self.high_level.max_tokens
        if tok.shape[1] <= m:
            return self.high_level.states(tok, sigma)
        out = [self.high_level.states(tok[:, max(0, s + 1 - m):s + 1], sigma[:, max(0, s + 1 - m):s + 1])[:, -1]
               for s in range(tok.shape[1])]
        return torch.stack(out, dim=1)

    def _seg_actions(self, actions, first_frame, n_seg):
        """Actions leading to the frames of segments starting at ``first_frame``: ``(B, n_seg, k·A)``."""
        k = self.coarse_stride
        idx = torch.arange(n_seg * k, device=actions.device) + first_frame - 1
        a = actions[:, idx.clamp(min=0, max=actions.shape[1] - 1)]
        return a.reshape(actions.shape[0], n_seg, k * self.action_dim)

    # ---- training -----------------------------------------------------------------------
    def loss(self, frames, actions, *, objective: str, generator: torch.Generator | None = None,
             progress: float = 0.0, levels=None, context_levels=None, positions: int | None = None):
        """Denoising loss (x₀-MSE) of both levels under ``objective`` (``tf``, ``df`` or ``df_tf``).

        Every token gets an independent target level; the context is noised at the same levels with the
        same noise (DF) or is clean (TF). ``levels``/``context_levels`` ``(B, T)`` override the draws
        (TF forces clean context). ``positions``: train the low level on that many random frames per
        sequence (all by default). The action at step t leads to frame t+1; the last is unused.
        """
        check_objective(objective)
        frames, actions = self._validate(frames, actions)
        b, t = frames.shape[:2]
        if self.hierarchical and t % self.coarse_stride:
            raise ValueError(f"the number of frames ({t}) must be a multiple of coarse_stride={self.coarse_stride}")
        kind = phase(objective, progress)
        dev = frames.device
        n = self.noise.num_levels
        if levels is None:
            levels = sample_noise_levels(b, t, objective="df", num_levels=n, generator=generator)
        levels = torch.as_tensor(levels, dtype=torch.long).to(dev)
        if kind == "tf":
            context_levels = torch.zeros_like(levels)
        elif context_levels is None:
            context_levels = levels
        context_levels = torch.as_tensor(context_levels, dtype=torch.long).to(dev)
        eps = torch.randn(frames.shape, generator=generator).to(dev, frames.dtype)
        noisy = self.noise.add_noise(frames, levels, eps)
        ctx = self.noise.add_noise(frames, context_levels, eps)
        sig, csig = self.noise.sigma(levels).to(frames.dtype), self.noise.sigma(context_levels).to(frames.dtype)
        # the low level on frames t ≥ 2
        pos = torch.arange(2, t, device=dev).expand(b, -1)
        if positions is not None and positions < t - 2:
            pick = torch.rand(b, t - 2, generator=generator).argsort(dim=1)[:, :positions].to(dev)
            pos = pos.gather(1, pick)
        bi = torch.arange(b, device=dev)[:, None].expand_as(pos)
        kw = {}
        total_high = frames.new_zeros(())
        if self.hierarchical:
            # the high level: per-token levels on the coarse tokens too
            tok = self._tokens(frames)
            s = tok.shape[1]
            tl = levels[:, self.coarse_stride - 1::self.coarse_stride]  # a token shares its frame's levels
            cl = context_levels[:, self.coarse_stride - 1::self.coarse_stride]
            teps = torch.randn(tok.shape, generator=generator).to(dev, tok.dtype)
            tnoisy = self.noise.add_noise(tok, tl, teps)
            tctx = self.noise.add_noise(tok, cl, teps)
            tsig, tcsig = self.noise.sigma(tl).to(tok.dtype), self.noise.sigma(cl).to(tok.dtype)
            h = self._windowed_states(tctx, tcsig)
            if s > 1:
                seg_a = self._seg_actions(actions, self.coarse_stride, s - 1)
                pred = self.high_level.denoise(h[:, :-1], tnoisy[:, 1:], tsig[:, 1:], seg_a, tctx[:, :-1])
                total_high = F.mse_loss(pred, tok[:, 1:])
            hpad = torch.cat([self.high_level.start.expand(b, 1, -1), h], dim=1)
            seg = pos // self.coarse_stride
            kw = {"plan": tok.view(b, s, *self.coarse_shape)[bi, seg].flatten(0, 1), "high": hpad[bi, seg].flatten(0, 1)}
        pred = self.low_level(noisy[bi, pos].flatten(0, 1), sig[bi, pos].flatten(), ctx[bi, pos - 1].flatten(0, 1),
                              ctx[bi, pos - 2].flatten(0, 1), csig[bi, pos - 1].flatten(), csig[bi, pos - 2].flatten(),
                              actions[bi, pos - 1].flatten(0, 1), **kw)
        return F.mse_loss(pred, frames[bi, pos].flatten(0, 1)) + total_high

    def forward(self, frames, actions, **kwargs):
        """The training loss (so that DDP's gradient hooks see it): ``self.loss(frames, actions, **kwargs)``."""
        return self.loss(frames, actions, **kwargs)

    # ---- representation -----------------------------------------------------------------
    @torch.no_grad()
    def hidden_states(self, frames, actions):
        """One state per frame ``(B, T, dim)``: what the low level predicts frame t+1 from (clean inputs).

        State t uses frames ≤ t only (the high-level state of the last complete segment)."""
        frames, actions = self._validate(frames, actions, min_frames=1)
        b, t = frames.shape[:2]
        prev = torch.cat([frames[:, :1], frames[:, :-1]], dim=1)
        zero = frames.new_zeros(b * t)
        high = None
        if self.hierarchical:
            k = self.coarse_stride
            full = (t // k) * k
            hpad = self._high_states(frames[:, :full])[0] if full else self.high_level.start.expand(b, 1, -1)
            idx = (torch.arange(t, device=frames.device) + 1) // k
            high = hpad[:, idx].flatten(0, 1)
        z = self.low_level.context_vector(frames.flatten(0, 1), prev.flatten(0, 1), zero, zero, high)
        return z.view(b, t, -1)

    # ---- sampling -----------------------------------------------------------------------
    @torch.no_grad()
    def rollout(self, context, actions, *, horizon: int, steps: int = 10, stabilization: float = 0.02,
                generator: torch.Generator | None = None, clip: float | None = None):
        """Autoregressive sampling: ``horizon`` new frames ``(B, horizon, C, H, W)`` after ``context``.

        Each frame (and, first, each segment's coarse token) is denoised with ``steps`` deterministic DDIM
        steps from pure noise; the context the model sees is held at the stabilisation level
        ``round(stabilization · num_levels)`` (fresh noise at each use; 0.02 as in DFoT). ``actions``
        ``(B, horizon, action_dim)``: ``actions[:, i]`` leads to new frame ``i``. ``clip``: clamp each x̂₀
        to ``[−clip, clip]`` (``DDPMScheduler``'s ``clip_sample``; 1 for data in [−1, 1], None for latents).
        """
        if not isinstance(context, torch.Tensor) or not isinstance(actions, torch.Tensor):
            raise TypeError("context and actions must be torch tensors")
        horizon = _check_pos_int("horizon", horizon)
        steps = _check_pos_int("steps", steps)
        if isinstance(stabilization, bool) or not isinstance(stabilization, (int, float)) \
                or not 0.0 <= float(stabilization) < 1.0:
            raise ValueError(f"stabilization must be a number in [0, 1), got {stabilization!r}")
        k = self.coarse_stride
        if horizon % k:
            raise ValueError(f"horizon must be a multiple of coarse_stride={k}, got {horizon}")
        if context.dim() != 5 or actions.dim() != 3 or actions.shape[1] != horizon:
            raise ValueError(f"context must be (B, T0, C, H, W) and actions (B, horizon={horizon}, action_dim), "
                             f"got {tuple(context.shape)} and {tuple(actions.shape)}")
        ctx_actions = actions.new_zeros(actions.shape[0], context.shape[1], actions.shape[2])
        context, _ = self._validate(context, ctx_actions, min_frames=2)
        _, actions = self._validate(context[:, :1].expand(-1, horizon, -1, -1, -1), actions, min_frames=1)
        if self.hierarchical and context.shape[1] % k:
            raise ValueError(f"the context length must be a multiple of coarse_stride={k}, got {context.shape[1]}")
        b, dev, dt = context.shape[0], context.device, context.dtype
        stab = self.noise.level_of(stabilization)
        s_stab = float(self.noise.sigma(torch.tensor(stab)))
        ladder = self.noise.ddim_levels(steps)
        if clip is not None and not (isinstance(clip, (int, float)) and not isinstance(clip, bool) and clip > 0
                                     and math.isfinite(clip)):
            raise ValueError(f"clip must be None or a positive finite number, got {clip!r}")

        def randn(shape):
            return torch.randn(shape, generator=generator).to(dev, dt)

        def held(x):  # the context at the stabilisation level
            lv = torch.full(x.shape[:1], stab, dtype=torch.long)
            return self.noise.add_noise(x[:, None], lv[:, None].to(dev), randn(x[:, None].shape))[:, 0]

        def sample(shape, denoise):
            x = randn(shape)
            for lv, nxt in zip(ladder[:-1], ladder[1:], strict=True):
                sig = self.noise.sigma(torch.full(shape[:1], lv, dtype=torch.long)).to(dev, dt)
                x0 = denoise(x, sig)
                if clip is not None:  # diffusers' clip_sample: keep x̂₀ in the data range
                    x0 = x0.clamp(-clip, clip)
                x = self.noise.ddim_step(x, x0, lv, nxt)
            return x

        frames = list(context.unbind(1))
        tokens = list(self._tokens(context).unbind(1)) if self.hierarchical else []
        out = []
        sfull = torch.full((b,), s_stab, device=dev, dtype=dt)
        for i0 in range(0, horizon, k):
            kw = {}
            if self.hierarchical:  # high level first: the segment's coarse token
                tok = torch.stack([held(x) for x in tokens[-self.high_level.max_tokens:]], dim=1)
                h = self.high_level.states(tok, sfull[:, None].expand(-1, tok.shape[1]))[:, -1]
                seg_a = actions[:, i0:i0 + k].reshape(b, 1, -1)
                c = sample((b, tok.shape[-1]), lambda x, sig, h=h, seg_a=seg_a, tok=tok: self.high_level.denoise(
                    h[:, None], x[:, None], sig[:, None], seg_a, tok[:, -1:])[:, 0])
                kw = {"plan": c.view(b, *self.coarse_shape), "high": h}
            for j in range(k):
                c1, c2 = held(frames[-1]), held(frames[-2])
                a = actions[:, i0 + j]
                x = sample((b, *self.frame_shape), lambda x, sig, c1=c1, c2=c2, a=a, kw=kw: self.low_level(
                    x, sig, c1, c2, sfull, sfull, a, **kw))
                frames.append(x)
                out.append(x)
            if self.hierarchical:
                tokens.append(self.coarse(frames[-1]).flatten(1))
        return torch.stack(out, dim=1)

    # ---- persistence --------------------------------------------------------------------
    def save(self, path) -> Path:
        """One self-contained file: the constructor's keyword arguments and the weights."""
        path = Path(path)
        atomic_torch_save({"class": type(self).__name__, "config": dict(self.config),
                           "state_dict": {k: v.detach().cpu() for k, v in self.state_dict().items()}}, path)
        return path

    @classmethod
    def load(cls, path, map_location="cpu"):
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no saved model at {path}")
        doc = torch.load(path, map_location=map_location, weights_only=True)
        if not isinstance(doc, dict) or doc.get("class") != cls.__name__:
            raise ValueError(f"{path} does not hold a {cls.__name__} (found {doc.get('class') if isinstance(doc, dict) else type(doc).__name__})")
        cfg = {k: tuple(v) if isinstance(v, list) else v for k, v in doc["config"].items()}
        model = cls(**cfg)
        model.load_state_dict(doc["state_dict"])
        return model


class HierarchicalWorldModel(_WorldModel):
    """Two-level driving world model: a causal transformer (2 layers, ``dim``) denoising coarse layouts every
    ``coarse_stride`` steps, and a conv denoiser (≤ 300k parameters at the defaults) per frame
    conditioned on the previous two frames, the action, and its segment's high-level output.

    Args:
        frame_shape: ``(C, H, W)`` of a frame or latent (H, W even).
        coarse_shape: ``(C, H', W')`` of the coarse layout (average-pooled frame; C equal).
        coarse_stride: frames per segment (one coarse token per segment).
        action_dim: width of an action.
        dim: transformer width and conditioning width.
        width: the low level's channel width at half resolution.
        num_levels: DDPM noise levels (``DDPMScheduler`` timesteps).

    Example:
        >>> m = HierarchicalWorldModel(frame_shape=(3, 8, 8), coarse_shape=(3, 4, 4))
        >>> m.loss(torch.zeros(2, 8, 3, 8, 8), torch.zeros(2, 8, 2), objective="df").shape
        torch.Size([])
    """

    hierarchical = True

    def __init__(self, *, frame_shape=(3, 16, 16), coarse_shape=(3, 8, 8), coarse_stride: int = 4,
                 action_dim: int = 2, dim: int = 64, width: int = 48, num_levels: int = 1000, max_tokens: int = 8):
        super().__init__()
        self._setup(frame_shape, coarse_shape, coarse_stride, action_dim, dim, num_levels)
        _check_pos_int("width", width, 8)
        _check_pos_int("max_tokens", max_tokens, 2)
        token_dim = math.prod(self.coarse_shape)
        self.high_level = HighLevelTransformer(token_dim=token_dim, seg_action_dim=self.coarse_stride * action_dim,
                                               dim=dim, max_tokens=max_tokens)
        self.low_level = LowLevelDenoiser(frame_shape=self.frame_shape, action_dim=action_dim, dim=dim, width=width,
                                          plan_channels=self.coarse_shape[0], high_dim=dim)
        self.config = {"frame_shape": list(self.frame_shape), "coarse_shape": list(self.coarse_shape),
                       "coarse_stride": coarse_stride, "action_dim": action_dim, "dim": dim, "width": width,
                       "num_levels": num_levels, "max_tokens": max_tokens}


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
