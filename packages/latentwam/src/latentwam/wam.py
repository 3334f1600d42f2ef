"""The latent world-action model (Being-H0.7, BeingBeyond 2026) and the VLA-style policy it extends.

Every policy here shares one layout::

    frames (B, T, C, H, W) ─ tokenizer ─┐
    proprio (B, P) ─ linear ────────────┼─ [obs tokens | M latent slots | ACT] ─ transformer ─ ACT ─ head ─ chunk (B, K, A)

* :class:`VLAPolicy`: no latent slots (M = 0): observation → action.
* :class:`LatentWAM`: M learnable latent queries between perception and action. Training adds a
  **posterior** branch, a separate sequence through the *same* weights, whose M slots hold
  tokenizer embeddings of the future frames t + 4 and t + 8 (two slots per frame, attention-pooled).
  The two branches never share a sequence and the network has LayerNorm only (no batch statistics),
  so the prior never sees the future. The loss is

      L = ℓ_act(prior) + ℓ_act(post) + λ_align ‖h_prior − sg(h_post)‖²/d + λ_reg · R(h_prior) + λ_reg · R(h_post),

  with R a VICReg-style anti-collapse term: per slot, the hinge ``mean_d max(0, γ − std_B h_d)`` plus the
  squared off-diagonal covariance ``Σ_{i≠j} C_ij² / d``. Inference runs the prior alone (no frames rendered).

**Inferred, not from the paper's text** (no code or full text is public): the pooling of a future
frame's tokens into two slots (learned attention pooling), the slot position embeddings shared by
queries and posterior slots, the alignment on the transformer's outputs at the slots, the exact
form and weight of the variance/covariance regulariser, and the action losses on both branches.
The alignment is averaged over the d dimensions: with the summed ‖·‖² (64× larger) a pilot run drove
both branches to collapse (alignment ≈ 0, latent std ≈ 0.006) and stalled the action loss.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from paperworks import atomic_torch_save

HEADS = ("mse", "flow")


# validation -----------------------------------------------------------------------------------

def _int(v, name, lo=1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    return int(v)


def _float(v, name, lo=0.0):
    if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not math.isfinite(v) or v < lo:
        raise ValueError(f"{name} must be a finite number >= {lo}, got {v!r}")
    return float(v)


def as_frames(x, name: str, *, count: int, channels: int, size: int, device=None) -> torch.Tensor:
    """Validate (B, count, C, H, W) frames; uint8 is scaled to [0, 1]; float must lie in [0, 1]."""
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(x)
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a tensor or array (B, {count}, {channels}, {size}, {size}), "
                        f"got {type(x).__name__}")
    if x.ndim != 5 or tuple(x.shape[1:]) != (count, channels, size, size):
        raise ValueError(f"{name} must have shape (B, {count}, {channels}, {size}, {size}), got {tuple(x.shape)}")
    if x.dtype == torch.uint8:
        x = x.float() / 255.0
    elif x.is_floating_point():
        if not torch.isfinite(x).all():
            raise ValueError(f"{name} contain NaN or inf")
        if x.numel() and (x.min() < 0 or x.max() > 1):
            raise ValueError(f"float {name} must lie in [0, 1] (uint8 is scaled), got [{x.min():.3g}, {x.max():.3g}]")
    else:
        raise TypeError(f"{name} must be float in [0, 1] or uint8, got {x.dtype}")
    return x if device is None else x.to(device)


class Tokenizer(nn.Module):
    """3-layer CNN: (C, H, W) (the context frames stacked as channels) → (H/8)·(W/8) tokens of width ``dim`` (no normalisation).

    A 4×4 stride-4 patch convolution, a 3×3 stride-2 convolution and a 1×1 projection (24×24 → 3×3 = 9
    tokens); cheap enough for the CPU miniature. Learned position embeddings per token.
    """

    def __init__(self, channels: int = 3, dim: int = 64, image_size: int = 24):
        super().__init__()
        if image_size % 4:
            raise ValueError(f"image_size must be a multiple of 4 for the CNN tokenizer, got {image_size}")
        self.net = nn.Sequential(
            nn.Conv2d(channels, 32, 4, 4), nn.GELU(),
            nn.Conv2d(32, 64, 3, 2, 1), nn.GELU(),
            nn.Conv2d(64, dim, 1),
        )
        side = math.ceil(image_size / 8)
        self.num_tokens = side * side
        self.pos = nn.Parameter(torch.randn(self.num_tokens, dim) * 0.02)
        self.out_dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, C, H, W) -> (N, T, dim)
        return self.net(x).flatten(2).transpose(1, 2) + self.pos


class HFBackbone(nn.Module):
    """Any Hugging Face vision model whose output has ``last_hidden_state`` as a frame tokenizer.

    Frames in [0, 1] are resized to the model's ``config.image_size`` and normalised with
    ``mean``/``std`` (ImageNet by default); the tokens are ``last_hidden_state`` (N, T, hidden).

    Example::

        from transformers import ViTConfig, ViTModel
        vit = ViTModel(ViTConfig(image_size=24, patch_size=8, hidden_size=32, num_hidden_layers=1,
                                 num_attention_heads=2, intermediate_size=64))
        model = LatentWAM(action_dim=2, proprio_dim=2, backbone=HFBackbone(vit))
    """

    def __init__(self, model: nn.Module, *, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)):
        super().__init__()
        cfg = getattr(model, "config", None)
        if cfg is None or not hasattr(cfg, "hidden_size"):
            raise TypeError("model must be a Hugging Face model with a config.hidden_size")
        self.model = model
        self.out_dim = int(cfg.hidden_size)
        size = getattr(cfg, "image_size", None)
        self.image_size = int(size if not isinstance(size, (list, tuple)) else size[0]) if size else None
        ch = int(getattr(cfg, "num_channels", 3))
        self._norm = ([float(v) for v in mean], [float(v) for v in std])
        self.register_buffer("mean", torch.tensor(mean[:ch]).view(1, ch, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std[:ch]).view(1, ch, 1, 1), persistent=False)

    def describe(self) -> dict:
        """What :meth:`from_description` needs to rebuild this backbone (weights excluded): plain types only."""
        return {"class": type(self.model).__name__, "config": self.model.config.to_json_string(),
                "mean": self._norm[0], "std": self._norm[1]}

    @classmethod
    def from_description(cls, desc: dict) -> HFBackbone:
        """Rebuild a backbone (random weights: the caller loads the state dict) from :meth:`describe`."""
        import json

        try:
            import transformers
        except ImportError as err:  # pragma: no cover - transformers is installed with the [test] extra
            raise ImportError("this model was saved with a Hugging Face backbone: pip install \"paperworks-latentwam[hf]\" (transformers)") from err
        model_cls = getattr(transformers, desc["class"], None)
        if model_cls is None:
            raise ValueError(f"transformers has no class {desc['class']!r} (saved backbone)")
        config = model_cls.config_class.from_dict(json.loads(desc["config"]))
        return cls(model_cls(config), mean=desc["mean"], std=desc["std"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.image_size and x.shape[-1] != self.image_size:
            x = F.interpolate(x, size=(self.image_size, self.image_size), mode="bilinear", align_corners=False)
        out = self.model(pixel_values=(x - self.mean) / self.std)
        h = getattr(out, "last_hidden_state", None)
        if h is None:
            raise TypeError("the backbone's output has no last_hidden_state")
        return h


class SlotPool(nn.Module):
    """Learned attention pooling of a frame's tokens into ``slots`` vectors (posterior slot embeddings)."""

    def __init__(self, dim: int, slots: int):
        super().__init__()
        self.query = nn.Parameter(torch.randn(slots, dim) * 0.02)
        self.proj = nn.Linear(dim, dim)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # (N, T, d) -> (N, slots, d)
        att = torch.softmax(torch.einsum("sd,ntd->nst", self.query, tokens) / math.sqrt(tokens.shape[-1]), -1)
        return self.proj(torch.einsum("nst,ntd->nsd", att, tokens))


class FlowHead(nn.Module):
    """A small conditional flow-matching head: v_θ(x_τ, τ, c) with x_τ = (1−τ)x₀ + τa, target a − x₀."""

    def __init__(self, dim: int, out: int, steps: int = 5):
        super().__init__()
        self.steps = steps
        self.net = nn.Sequential(nn.Linear(out + 1 + dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, 2 * dim),
                                 nn.GELU(), nn.Linear(2 * dim, out))

    def velocity(self, x, tau, c):
        return self.net(torch.cat([x, tau, c], -1))

    def loss(self, c, target, generator=None):
        x0 = torch.randn(target.shape, generator=generator, device=target.device, dtype=target.dtype)
        tau = torch.rand((target.shape[0], 1), generator=generator, device=target.device, dtype=target.dtype)
        xt = (1 - tau) * x0 + tau * target
        return F.mse_loss(self.velocity(xt, tau, c), target - x0)

    def sample(self, c, generator=None):
        """Euler integration from x₀ (zeros without a generator, so ``act`` is deterministic; else N(0, I))."""
        shape = (c.shape[0], self.net[-1].out_features)
        x = (torch.zeros(shape, device=c.device, dtype=c.dtype) if generator is None
             else torch.randn(shape, generator=generator, device=c.device, dtype=c.dtype))
        for i in range(self.steps):
            tau = torch.full((c.shape[0], 1), i / self.steps, device=c.device, dtype=c.dtype)
            x = x + self.velocity(x, tau, c) / self.steps
        return x


def anti_collapse(h: torch.Tensor, gamma: float = 1.0, eps: float = 1e-4) -> torch.Tensor:
    """VICReg-style variance/covariance term on latents h (B, M, d) or (B, d), per slot over the batch.

    R = mean_slots[ mean_d relu(γ − √(Var_B h_d + ε)) + Σ_{i≠j} Cov_B(h)_ij² / d ]. Zero when every
    dimension has std ≥ γ and the dimensions are uncorrelated; ≈ γ when the latents collapse.
    """
    if h.ndim == 2:
        h = h[:, None]
    B, M, d = h.shape
    if B < 2:
        return h.new_zeros(())
    z = h - h.mean(0, keepdim=True)
    std = torch.sqrt(z.var(0) + eps)  # (M, d)
    var_term = F.relu(gamma - std).mean(-1)
    cov = torch.einsum("bmi,bmj->mij", z, z) / (B - 1)
    off = cov - torch.diag_embed(torch.diagonal(cov, dim1=-2, dim2=-1))
    return (var_term + off.pow(2).sum((-2, -1)) / d).mean()


def effective_rank(x) -> float:
    """Roy & Vetterli's effective rank exp(H(p)), p = σ / Σσ of the centred (N, D) matrix."""
    x = torch.as_tensor(x, dtype=torch.float64).reshape(len(x), -1)
    s = torch.linalg.svdvals(x - x.mean(0))
    if s.sum() <= 0:
        return 1.0
    p = s / s.sum()
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


# the shared policy ----------------------------------------------------------------------------

class ChunkPolicy(nn.Module):
    """Shared machinery: tokenizer, transformer, action head, input checks, ``act``, save/load."""

    def __init__(self, *, action_dim, proprio_dim, image_size=24, chunk=8, dim=64, context=2, channels=3,
                 head="mse", depth=2, heads=4, backbone=None):
        super().__init__()
        self.action_dim = _int(action_dim, "action_dim")
        self.proprio_dim = _int(proprio_dim, "proprio_dim")
        self.image_size = _int(image_size, "image_size", 8)
        self.chunk = _int(chunk, "chunk")
        self.dim = _int(dim, "dim", 8)
        self.context = _int(context, "context")
        self.channels = _int(channels, "channels")
        self.depth = _int(depth, "depth")
        self.heads = _int(heads, "heads")
        if self.dim % self.heads:
            raise ValueError(f"dim ({self.dim}) must be divisible by heads ({self.heads})")
        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {head!r}")
        self.head_kind = head
        if backbone is not None:
            if not isinstance(backbone, nn.Module) or not hasattr(backbone, "out_dim"):
                raise TypeError("backbone must be an nn.Module with out_dim (e.g. HFBackbone(model))")
            self.tokenizer = backbone
            self.token_proj = nn.Linear(backbone.out_dim, self.dim)
        else:
            self.tokenizer = Tokenizer(self.channels * self.context, self.dim, self.image_size)
            self.token_proj = nn.Identity()
        self.frame_emb = nn.Parameter(torch.randn(self.context, self.dim) * 0.02)
        self.proprio_in = nn.Linear(self.proprio_dim, self.dim)
        self.act_token = nn.Parameter(torch.randn(1, self.dim) * 0.02)
        layer = nn.TransformerEncoderLayer(self.dim, self.heads, 2 * self.dim, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, self.depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(self.dim)
        out = self.chunk * self.action_dim
        if head == "mse":
            self.head = nn.Sequential(nn.Linear(self.dim, 2 * self.dim), nn.GELU(), nn.Linear(2 * self.dim, out))
        else:
            self.head = FlowHead(self.dim, out)

    # config for save/load
    def config(self) -> dict:
        return {"action_dim": self.action_dim, "proprio_dim": self.proprio_dim, "image_size": self.image_size,
                "chunk": self.chunk, "dim": self.dim, "context": self.context, "channels": self.channels,
                "head": self.head_kind, "depth": self.depth, "heads": self.heads}

    # pieces
    def tokenize(self, frames: torch.Tensor) -> torch.Tensor:
        """Context frames (B, T, C, H, W) in [0, 1] → tokens (B, n, dim).

        The CNN tokenizer sees the T frames stacked as channels (motion is visible to its first layer);
        a backbone embeds each frame and the frame tokens are concatenated with a frame embedding.
        """
        B, T = frames.shape[:2]
        if isinstance(self.tokenizer, Tokenizer):
            return self.tokenizer(frames.flatten(1, 2))
        tok = self.token_proj(self.tokenizer(frames.flatten(0, 1)))
        tok = tok.view(B, T, tok.shape[1], self.dim) + self.frame_emb[None, :, None]
        return tok.flatten(1, 2)

    def tokenize_future(self, future: torch.Tensor) -> torch.Tensor:
        """Future frames (B, F, C, H, W) → (B, F, n, dim): each embedded by the same tokenizer as a still
        context (the frame repeated T times)."""
        B, Fn = future.shape[:2]
        still = future.flatten(0, 1)[:, None].expand(-1, self.context, -1, -1, -1)
        tok = self.tokenize(still)
        return tok.view(B, Fn, tok.shape[1], self.dim)

    def observe(self, frames, proprio) -> torch.Tensor:
        """Observation tokens (B, n + 1, dim): the context's frame tokens and the proprioception token."""
        return torch.cat([self.tokenize(frames), self.proprio_in(proprio)[:, None]], 1)

    def transformer(self, seq):
        return self.norm(self.blocks(seq))

    def decode_actions(self, act_feat, generator=None) -> torch.Tensor:
        if self.head_kind == "mse":
            a = self.head(act_feat)
        else:
            a = self.head.sample(act_feat, generator)
        return a.view(-1, self.chunk, self.action_dim)

    def action_loss(self, act_feat, actions, generator=None) -> torch.Tensor:
        if self.head_kind == "mse":
            return F.mse_loss(self.head(act_feat).view_as(actions), actions)
        return self.head.loss(act_feat, actions.flatten(1), generator)

    def check_inputs(self, frames, proprio, future=None, num_future=None):
        dev = self.act_token.device
        frames = as_frames(frames, "frames", count=self.context, channels=self.channels, size=self.image_size,
                           device=dev)
        if isinstance(proprio, np.ndarray):
            proprio = torch.from_numpy(proprio)
        if not isinstance(proprio, torch.Tensor) or not proprio.is_floating_point():
            raise TypeError(f"proprio must be a float tensor (B, {self.proprio_dim})")
        if proprio.shape != (frames.shape[0], self.proprio_dim):
            raise ValueError(f"proprio must have shape ({frames.shape[0]}, {self.proprio_dim}), got {tuple(proprio.shape)}")
        if not torch.isfinite(proprio).all():
            raise ValueError("proprio contains NaN or inf")
        proprio = proprio.to(dev, frames.dtype)
        if future is not None and num_future:
            future = as_frames(future, "future", count=num_future, channels=self.channels, size=self.image_size,
                               device=dev)
            if future.shape[0] != frames.shape[0]:
                raise ValueError(f"future has batch {future.shape[0]}, frames {frames.shape[0]}")
        return frames, proprio, future

    def check_actions(self, actions, batch):
        if not isinstance(actions, torch.Tensor):
            actions = torch.as_tensor(np.asarray(actions), dtype=torch.float32)
        if actions.shape != (batch, self.chunk, self.action_dim):
            raise ValueError(f"actions must have shape ({batch}, {self.chunk}, {self.action_dim}), "
                             f"got {tuple(actions.shape)}")
        if not torch.isfinite(actions).all():
            raise ValueError("actions contain NaN or inf")
        if actions.abs().max() > 1.0 + 1e-5:
            raise ValueError(f"actions must lie inside the action space [-1, 1], got max |a| = {actions.abs().max():.3g}")
        return actions.to(self.act_token.device, self.act_token.dtype)

    @torch.no_grad()
    def act(self, frames, proprio, generator=None) -> torch.Tensor:
        """The action chunk (B, chunk, action_dim), clipped to [-1, 1]; the prior branch only."""
        was = self.training
        self.eval()
        try:
            return self(frames, proprio, generator=generator)["actions"].clamp(-1.0, 1.0)
        finally:
            self.train(was)

    # save / load
    def save(self, path) -> Path:
        """One self-contained file: class name, config and weights (``torch.load(weights_only=True)``).

        A model built on an :class:`HFBackbone` saves the backbone too: its Hugging Face class name and
        config (as JSON) and its normalisation, beside the weights; :meth:`load` rebuilds it with
        ``transformers`` (no download: the architecture comes from the saved config)."""
        blob = {"class": type(self).__name__, "config": self.config(),
                "state_dict": {k: v.detach().cpu() for k, v in self.state_dict().items()}}
        if not isinstance(self.tokenizer, Tokenizer):
            if not isinstance(self.tokenizer, HFBackbone):
                raise TypeError("save() covers the built-in CNN tokenizer and HFBackbone; for another backbone "
                                "save state_dict() and rebuild the backbone yourself")
            blob["backbone"] = self.tokenizer.describe()
        path = Path(path)
        atomic_torch_save(blob, path)
        return path

    @classmethod
    def load(cls, path, map_location="cpu"):
        """Load a model saved by :meth:`save` (any policy class of this package when called on ChunkPolicy)."""
        from latentwam.baselines import PixelWAM

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no model file at {path}")
        blob = torch.load(path, map_location=map_location, weights_only=True)
        if not isinstance(blob, dict) or "class" not in blob or "state_dict" not in blob:
            raise ValueError(f"{path} is not a latentwam model file")
        classes = {c.__name__: c for c in (LatentWAM, VLAPolicy, PixelWAM)}
        target = classes.get(blob["class"])
        if target is None or not issubclass(target, cls):
            raise ValueError(f"{path} holds a {blob['class']}, not a {cls.__name__}")
        kwargs = dict(blob["config"])
        if "backbone" in blob:
            kwargs["backbone"] = HFBackbone.from_description(blob["backbone"])
        model = target(**kwargs)
        model.load_state_dict(blob["state_dict"])
        return model.eval()


class VLAPolicy(ChunkPolicy):
    """The VLA-style baseline: observation tokens and an ACT token through the transformer, no latents.

    ``forward(frames, proprio, future=None)`` → ``{"actions", "latents_prior": None, "latents_post": None,
    "features"}``; ``future`` is accepted and ignored.
    """

    num_future = 0

    def forward(self, frames, proprio, future=None, generator=None) -> dict:
        frames, proprio, _ = self.check_inputs(frames, proprio)
        obs = self.observe(frames, proprio)
        h = self.transformer(torch.cat([obs, self.act_token.expand(len(obs), 1, -1)], 1))
        return {"actions": self.decode_actions(h[:, -1], generator), "latents_prior": None, "latents_post": None,
                "features": self._features(h)}

    def _features(self, h):
        """Probe features as wide as four latents: mean and max of the frame tokens, the proprio and ACT tokens."""
        frame = h[:, :-2]
        return torch.cat([frame.mean(1), frame.amax(1), h[:, -2], h[:, -1]], -1)

    def loss(self, batch, generator=None):
        frames, proprio, _ = self.check_inputs(batch["frames"], batch["proprio"])
        actions = self.check_actions(batch["actions"], len(frames))
        obs = self.observe(frames, proprio)
        h = self.transformer(torch.cat([obs, self.act_token.expand(len(obs), 1, -1)], 1))
        loss = self.action_loss(h[:, -1], actions, generator)
        return loss, {"loss": float(loss.detach()), "action": float(loss.detach())}


class LatentWAM(ChunkPolicy):
    """Latent world-action model: M learnable latent queries, a future-informed posterior at training.

    Args:
        action_dim, proprio_dim: sizes of an action and of the proprioception vector.
        image_size: frame side (frames are (C, image_size, image_size)); chunk: action-chunk length.
        dim: transformer width; num_latents: M latent queries (split evenly over the future frames).
        future_offsets: which future frames the posterior embeds (t + 4, t + 8).
        head: ``"mse"`` (regression) or ``"flow"`` (flow matching) action head.
        reg_weight: weight of the anti-collapse term (0 disables it); align_weight: weight of the alignment.
        stop_grad: stop the alignment gradient into the posterior (``sg(h_post)``).
        posterior: False keeps the queries but drops the posterior branch (an ablation).
        backbone: an optional frame tokenizer (e.g. :class:`HFBackbone`) in place of the CNN.

    ``forward(frames, proprio, future=None)`` → ``{"actions", "latents_prior", "latents_post", "features"}``;
    ``latents_post`` (and the posterior's actions, ``actions_post``) only when ``future`` is given.

    Example::

        model = LatentWAM(action_dim=2, proprio_dim=2)
        out = model(torch.rand(4, 2, 3, 24, 24), torch.rand(4, 2), future=torch.rand(4, 2, 3, 24, 24))
        out["actions"].shape, out["latents_prior"].shape   # (4, 8, 2), (4, 4, 64)
    """

    def __init__(self, *, action_dim, proprio_dim, image_size=24, chunk=8, dim=64, num_latents=4,
                 future_offsets=(4, 8), head="mse", reg_weight=0.1, stop_grad=True, align_weight=1.0,
                 posterior=True, reg_gamma=1.0, context=2, channels=3, depth=2, heads=4, backbone=None):
        super().__init__(action_dim=action_dim, proprio_dim=proprio_dim, image_size=image_size, chunk=chunk,
                         dim=dim, context=context, channels=channels, head=head, depth=depth, heads=heads,
                         backbone=backbone)
        from latentwam.data import _check_offsets

        self.num_latents = _int(num_latents, "num_latents")
        self.future_offsets = _check_offsets(future_offsets)
        if self.num_latents % len(self.future_offsets):
            raise ValueError(f"num_latents ({self.num_latents}) must be a multiple of len(future_offsets) "
                             f"({len(self.future_offsets)}): each future frame fills the same number of slots")
        self.reg_weight = _float(reg_weight, "reg_weight")
        self.align_weight = _float(align_weight, "align_weight")
        self.reg_gamma = _float(reg_gamma, "reg_gamma")
        if not isinstance(stop_grad, bool) or not isinstance(posterior, bool):
            raise TypeError("stop_grad and posterior must be bools")
        self.stop_grad, self.posterior = stop_grad, posterior
        self.queries = nn.Parameter(torch.randn(self.num_latents, self.dim) * 0.02)
        self.slot_pos = nn.Parameter(torch.randn(self.num_latents, self.dim) * 0.02)
        self.slot_pool = SlotPool(self.dim, self.num_latents // len(self.future_offsets))

    @property
    def num_future(self) -> int:
        return len(self.future_offsets)

    def config(self) -> dict:
        return {**super().config(), "num_latents": self.num_latents, "future_offsets": list(self.future_offsets),
                "reg_weight": self.reg_weight, "stop_grad": self.stop_grad, "align_weight": self.align_weight,
                "posterior": self.posterior, "reg_gamma": self.reg_gamma}

    def _branch(self, obs, slots):
        """One branch: its own sequence [obs | slots | ACT] → (latent outputs (B, M, d), ACT output (B, d))."""
        B, n = len(obs), obs.shape[1]
        h = self.transformer(torch.cat([obs, slots + self.slot_pos, self.act_token.expand(B, 1, -1)], 1))
        return h[:, n:n + self.num_latents], h[:, -1]

    def posterior_slots(self, future) -> torch.Tensor:
        """Tokenizer embeddings of the future frames pooled into the M slots (B, M, d)."""
        tok = self.tokenize_future(future)  # (B, F, n, d)
        return self.slot_pool(tok.flatten(0, 1)).view(len(tok), -1, self.dim)

    def _run(self, frames, proprio, future, generator=None, with_post=True):
        obs = self.observe(frames, proprio)
        lat_p, act_p = self._branch(obs, self.queries.expand(len(obs), -1, -1))  # the prior: no future
        lat_q = act_q = None
        if future is not None and self.posterior and with_post:
            lat_q, act_q = self._branch(obs, self.posterior_slots(future))
        return lat_p, act_p, lat_q, act_q

    def forward(self, frames, proprio, future=None, generator=None) -> dict:
        frames, proprio, future = self.check_inputs(frames, proprio, future, self.num_future)
        lat_p, act_p, lat_q, act_q = self._run(frames, proprio, future)
        out = {"actions": self.decode_actions(act_p, generator), "latents_prior": lat_p, "latents_post": lat_q,
               "features": lat_p.flatten(1)}
        if act_q is not None:
            out["actions_post"] = self.decode_actions(act_q, generator)
        return out

    def loss(self, batch, generator=None):
        """(loss, logs) on a batch dict with ``frames``, ``proprio``, ``actions``, ``future``."""
        frames, proprio, future = self.check_inputs(batch["frames"], batch["proprio"], batch.get("future"),
                                                    self.num_future)
        actions = self.check_actions(batch["actions"], len(frames))
        if self.posterior and future is None:
            raise ValueError("the posterior branch needs batch['future'] (B, len(future_offsets), C, H, W)")
        lat_p, act_p, lat_q, act_q = self._run(frames, proprio, future)
        l_prior = self.action_loss(act_p, actions, generator)
        loss = l_prior
        logs = {"action": float(l_prior.detach())}
        if lat_q is not None:
            l_post = self.action_loss(act_q, actions, generator)
            target = lat_q.detach() if self.stop_grad else lat_q
            align = (lat_p - target).pow(2).mean()
            loss = loss + l_post + self.align_weight * align
            logs.update(action_post=float(l_post.detach()), align=float(align.detach()))
        if self.reg_weight > 0:
            reg = anti_collapse(lat_p, self.reg_gamma)
            if lat_q is not None:
                reg = reg + anti_collapse(lat_q, self.reg_gamma)
            loss = loss + self.reg_weight * reg
            logs["reg"] = float(reg.detach())
        logs["latent_std"] = float(lat_p.detach().std(0).mean())
        logs["loss"] = float(loss.detach())
        return loss, logs
