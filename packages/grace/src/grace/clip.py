"""A tiny CLIP trained here, with open_clip's interface (``encode_image``, ``encode_text``, ``forward``).

Image tower: a 3-block CNN (~60k parameters); text tower: bag of words (mean of word embeddings
over non-pad tokens) and a linear projection; trained with the symmetric InfoNCE loss and a
learned temperature (Radford et al. 2021). Any open_clip model (``open_clip.create_model_and_transforms``)
has the same two methods and drops into :class:`grace.ConceptDictionary` and the decomposers.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("grace")


class TinyCLIP(nn.Module):
    """CLIP in miniature: ``encode_image((n,3,24,24))``, ``encode_text((n,L) token ids)`` → ``(n, embed_dim)``."""

    def __init__(self, vocab_size: int, *, embed_dim: int = 64, width: int = 32):
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("embed_dim", embed_dim), ("width", width)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.config = {"vocab_size": vocab_size, "embed_dim": embed_dim, "width": width}
        w = width
        self.visual = nn.Sequential(
            nn.Conv2d(3, w // 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(w // 2, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(2 * w * 9, embed_dim))
        self.token_embedding = nn.Embedding(vocab_size, 64, padding_idx=0)
        self.text_projection = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, embed_dim))
        self.logit_scale = nn.Parameter(torch.tensor(np.log(10.0), dtype=torch.float32))

    def encode_image(self, image, normalize: bool = False):
        x = self.visual(image)
        return F.normalize(x, dim=-1) if normalize else x

    def encode_text(self, text, normalize: bool = False):
        mask = (text != 0).float().unsqueeze(-1)
        bag = (self.token_embedding(text) * mask).sum(1) / mask.sum(1).clamp_min(1.0)
        x = self.text_projection(bag)
        return F.normalize(x, dim=-1) if normalize else x

    def forward(self, image=None, text=None):
        img = self.encode_image(image, normalize=True) if image is not None else None
        txt = self.encode_text(text, normalize=True) if text is not None else None
        return img, txt, self.logit_scale.exp()

    def save(self, path) -> Path:
        path = Path(path)
        torch.save({"config": self.config, "state_dict": self.state_dict()}, path)
        return path

    @classmethod
    def load(cls, path) -> TinyCLIP:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no TinyCLIP checkpoint at {path}")
        blob = torch.load(path, map_location="cpu", weights_only=True)
        m = cls(**blob["config"])
        m.load_state_dict(blob["state_dict"])
        return m.eval()


def train_clip(world, tokenizer, *, n_pairs: int = 20000, steps: int = 1500, batch_size: int = 256,
               lr: float = 2e-3, seed: int = 0, device: str = "cpu", embed_dim: int = 64) -> TinyCLIP:
    """Train a :class:`TinyCLIP` on ``n_pairs`` (image, caption) pairs of the seen combinations (InfoNCE)."""
    torch.manual_seed(seed)
    images, _, captions = world.sample(n_pairs, split="seen", seed=10_000 + seed)
    if images.ndim == 5:  # a video world: train on single frames
        images = images[:, 0]
    x = torch.from_numpy(images).to(device)
    t = tokenizer(captions).to(device)
    model = TinyCLIP(len(tokenizer.vocab), embed_dim=embed_dim).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    g = torch.Generator(device="cpu").manual_seed(seed)
    labels = torch.arange(batch_size, device=device)
    for step in range(steps):
        idx = torch.randint(0, n_pairs, (batch_size,), generator=g).to(device)
        img, txt, scale = model(x[idx], t[idx])
        logits = scale.clamp(max=100) * img @ txt.T
        # captions of the same attributes are duplicates within a batch: InfoNCE as in CLIP regardless
        loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2
        if not torch.isfinite(loss):
            raise FloatingPointError(f"TinyCLIP training diverged at step {step}")
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 200 == 0:
            log.info("tinyclip seed %d step %d loss %.3f", seed, step, loss.item())
    return model.eval()


@torch.no_grad()
def embed_images(model, images, *, batch_size: int = 1024, device: str = "cpu") -> np.ndarray:
    """Image embeddings (normalised) of ``(n,3,H,W)`` images, or of clips ``(n,T,3,H,W)``: the mean of the
    normalised frame embeddings, normalised (mean pooling over frames, as CLIP video baselines do)."""
    if not hasattr(model, "encode_image"):
        raise TypeError(f"model must have encode_image (open_clip's interface), got {type(model).__name__}")
    x = torch.as_tensor(images)
    video = x.ndim == 5
    flat = x.reshape(-1, *x.shape[-3:]) if video else x
    out = []
    for i in range(0, len(flat), batch_size):
        out.append(F.normalize(model.encode_image(flat[i:i + batch_size].to(device)).float(), dim=-1).cpu())
    z = torch.cat(out)
    if video:
        z = F.normalize(z.reshape(x.shape[0], x.shape[1], -1).mean(1), dim=-1)
    return z.numpy()
