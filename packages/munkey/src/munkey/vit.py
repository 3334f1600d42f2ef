"""The backbone: a plain Vision Transformer in vit-pytorch's style (no memory).

``ViT(image_size=8, patch_size=2, ...)`` cuts an image into (image_size/patch_size)² patches, embeds
each, prepends a learnable CLS token, adds learned positions, runs ``depth`` pre-norm transformer
blocks and classifies the final CLS. Shapes: ``img`` (B, C, H, W) → logits (B, num_classes).
"""

from __future__ import annotations

import torch
from einops import rearrange, repeat
from einops.layers.torch import Rearrange
from torch import nn


def _pos_int(name, v):
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return v


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        return self.net(x)


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int, dim_head: int):
        super().__init__()
        inner = heads * dim_head
        self.heads, self.scale = heads, dim_head ** -0.5
        self.norm = nn.LayerNorm(dim)
        self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
        self.to_out = nn.Linear(inner, dim)

    def forward(self, x):
        q, k, v = self.to_qkv(self.norm(x)).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        attn = torch.softmax(torch.einsum("bhid,bhjd->bhij", q, k) * self.scale, dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


class ViT(nn.Module):
    """Vision Transformer (Dosovitskiy et al., 2021), the backbone of MUNKEY, also used alone.

    Args:
        image_size: side of the square input images (divisible by ``patch_size``).
        patch_size: side of the square patches; tokens = (image_size / patch_size)² + 1 (CLS).
        num_classes: number of output logits.
        dim, depth, heads, mlp_dim: width, blocks, attention heads, MLP hidden width.
        channels: image channels (1 for digits).

    Example:
        >>> m = ViT(image_size=8, patch_size=2, num_classes=10, dim=64, depth=2, heads=4, mlp_dim=256)
        >>> m(torch.zeros(3, 1, 8, 8)).shape
        torch.Size([3, 10])
    """

    def __init__(self, *, image_size: int, patch_size: int, num_classes: int, dim: int, depth: int, heads: int,
                 mlp_dim: int, channels: int = 1):
        super().__init__()
        for name, v in (("image_size", image_size), ("patch_size", patch_size), ("num_classes", num_classes),
                        ("dim", dim), ("depth", depth), ("heads", heads), ("mlp_dim", mlp_dim),
                        ("channels", channels)):
            _pos_int(name, v)
        if image_size % patch_size:
            raise ValueError(f"image_size {image_size} must be divisible by patch_size {patch_size}")
        if dim % heads:
            raise ValueError(f"dim {dim} must be divisible by heads {heads}")
        self.config = dict(image_size=image_size, patch_size=patch_size, num_classes=num_classes, dim=dim,
                           depth=depth, heads=heads, mlp_dim=mlp_dim, channels=channels)
        self.image_size, self.channels, self.num_classes = image_size, channels, num_classes
        n = (image_size // patch_size) ** 2
        patch_dim = channels * patch_size ** 2
        self.to_patch_embedding = nn.Sequential(
            # no LayerNorm on the raw patch: with 2×2 patches it would erase each patch's intensity
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch_size, p2=patch_size),
            nn.Linear(patch_dim, dim), nn.LayerNorm(dim))
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embedding = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.layers = nn.ModuleList(
            nn.ModuleList([Attention(dim, heads, dim // heads), FeedForward(dim, mlp_dim)]) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    # input validation -----------------------------------------------------------------------------
    def check_images(self, img, name: str = "img") -> torch.Tensor:
        """``img`` as a float tensor of shape (B, C, H, W) on the model's device, or a clear error."""
        if not isinstance(img, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of shape (B, {self.channels}, {self.image_size}, "
                            f"{self.image_size}), got {type(img).__name__}")
        want = (self.channels, self.image_size, self.image_size)
        if img.ndim != 4 or tuple(img.shape[1:]) != want:
            raise ValueError(f"{name} must have shape (B, {want[0]}, {want[1]}, {want[2]}) (channels "
                             f"{self.channels}), got {tuple(img.shape)}")
        if not img.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {img.dtype}")
        if not bool(torch.isfinite(img).all()):
            raise ValueError(f"{name} holds NaN or inf pixels")
        p = next(self.parameters())
        return img.to(device=p.device, dtype=p.dtype)

    # forward -------------------------------------------------------------------------------------
    def features(self, img: torch.Tensor) -> torch.Tensor:
        """The final CLS token before the last norm, (B, dim)."""
        x = self.to_patch_embedding(img)
        cls = repeat(self.cls_token, "1 1 d -> b 1 d", b=x.shape[0])
        x = torch.cat([cls, x], dim=1) + self.pos_embedding
        for attn, ff in self.layers:
            x = x + attn(x)
            x = x + ff(x)
        return x[:, 0]

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        img = self.check_images(img)
        return self.head(self.norm(self.features(img)))

    def backbone_parameters(self):
        """Every weight of the network (for a plain ViT: all of them)."""
        return [p for n, p in self.named_parameters() if not n.startswith("mem_")]

    def n_backbone_parameters(self) -> int:
        return sum(p.numel() for p in self.backbone_parameters())

    # persistence ---------------------------------------------------------------------------------
    def save(self, path) -> None:
        """One self-contained file: config and weights (``torch.load(weights_only=True)`` reads it)."""
        torch.save(self._payload(), path)

    def _payload(self) -> dict:
        return {"format": f"munkey.{type(self).__name__}/1", "config": dict(self.config),
                "state_dict": {k: v.detach().cpu() for k, v in self.state_dict().items()}}

    @classmethod
    def load(cls, path, map_location="cpu"):
        """Rebuild a model saved with :meth:`save` (safe loader: ``weights_only=True``)."""
        payload = torch.load(path, map_location=map_location, weights_only=True)
        fmt = payload.get("format", "") if isinstance(payload, dict) else ""
        if fmt != f"munkey.{cls.__name__}/1":
            raise ValueError(f"{path} is not a saved munkey.{cls.__name__} (format {fmt!r})")
        model = cls(**payload["config"])
        model.load_state_dict(payload["state_dict"])
        model._restore_extra(payload)
        return model.eval()

    def _restore_extra(self, payload) -> None:
        pass

