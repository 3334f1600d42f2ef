"""Data: scikit-learn's digits with label noise, generated fine-grained and medical-like sets, user folders.

Every set is returned as a :class:`Split`: float images (N, C, H, W) in [0, 1], the (possibly noisy)
training labels, the clean labels, and a test part. Nothing is downloaded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

log = logging.getLogger("munkey")


@dataclass
class Split:
    x_train: torch.Tensor
    y_train: torch.Tensor        # the labels trained on (noisy where noise was injected)
    y_train_clean: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    name: str

    @property
    def noisy(self) -> np.ndarray:
        return np.flatnonzero((self.y_train != self.y_train_clean).numpy())


def _split(x, y, rng, test_frac, noise, num_classes, name) -> Split:
    if not 0 < test_frac < 1:
        raise ValueError(f"test_frac must be in (0, 1), got {test_frac}")
    if not 0 <= noise < 1:
        raise ValueError(f"noise must be in [0, 1), got {noise}")
    idx = rng.permutation(len(x))
    n_test = int(round(test_frac * len(x)))
    te, tr = idx[:n_test], idx[n_test:]
    y_tr = y[tr].copy()
    y_noisy = y_tr.copy()
    n_noise = int(round(noise * len(tr)))
    flip = rng.choice(len(tr), n_noise, replace=False)
    y_noisy[flip] = (y_tr[flip] + rng.integers(1, num_classes, n_noise)) % num_classes  # always a wrong label
    t = lambda a: torch.as_tensor(a, dtype=torch.float32)  # noqa: E731
    return Split(t(x[tr]), torch.as_tensor(y_noisy), torch.as_tensor(y_tr), t(x[te]), torch.as_tensor(y[te]),
                 num_classes, name)


def digits(rng: np.random.Generator, *, noise: float = 0.05, test_frac: float = 0.3, n: int | None = None) -> Split:
    """scikit-learn's bundled 8×8 digits (1,797 images, 10 classes), pixels /16, ``noise`` labels flipped."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = d.images[:, None].astype(np.float32) / 16.0, d.target.astype(np.int64)
    if n is not None:
        keep = rng.permutation(len(x))[:n]
        x, y = x[keep], y[keep]
    return _split(x, y, rng, test_frac, noise, 10, "digits")


def _blob(size, cy, cx, s):
    g = np.arange(size, dtype=np.float32)
    return np.exp(-((g[:, None] - cy) ** 2 + (g[None, :] - cx) ** 2) / (2 * s * s))


def fine_grained(rng: np.random.Generator, *, n: int = 1200, num_classes: int = 10, size: int = 8,
                 noise: float = 0.0, test_frac: float = 0.3, shift: float = 0.6, pixel_noise: float = 0.15) -> Split:
    """Subtle classes: every image is three Gaussian blobs at a shared base layout; each class moves the
    blobs by ``shift`` pixels in its own direction (plus per-image jitter and pixel noise)."""
    base = np.array([[2.0, 2.0], [2.5, 5.5], [5.5, 3.5]])
    dirs = rng.normal(size=(num_classes, 3, 2))
    dirs /= np.linalg.norm(dirs, axis=-1, keepdims=True)
    y = rng.integers(0, num_classes, n)
    x = np.zeros((n, 1, size, size), np.float32)
    for i in range(n):
        centers = base + shift * dirs[y[i]] + rng.normal(scale=0.25, size=(3, 2))
        img = sum(_blob(size, cy, cx, 0.9) for cy, cx in centers)
        x[i, 0] = np.clip(img + rng.normal(scale=pixel_noise, size=(size, size)), 0, None)
    x /= x.max()
    return _split(x, y, rng, test_frac, noise, num_classes, "fine_grained")


def medical_like(rng: np.random.Generator, *, n: int = 1200, size: int = 8, noise: float = 0.0,
                 test_frac: float = 0.3, priors=(0.55, 0.25, 0.12, 0.08)) -> Split:
    """Imbalanced 4-class "lesion" images: a smooth tissue texture plus a lesion blob whose size and
    contrast grow with the class (class 0: no lesion); priors 55/25/12/8 %."""
    priors = np.asarray(priors, float) / np.sum(priors)
    y = rng.choice(len(priors), n, p=priors)
    x = np.zeros((n, 1, size, size), np.float32)
    for i in range(n):
        tex = rng.normal(size=(size, size))
        tex = (tex + np.roll(tex, 1, 0) + np.roll(tex, 1, 1) + np.roll(tex, -1, 0)) / 4
        cy, cx = rng.uniform(2, size - 2, 2)
        lesion = 0.35 * y[i] * _blob(size, cy, cx, 0.6 + 0.25 * y[i])
        x[i, 0] = 0.5 + 0.15 * tex + lesion
    x = (x - x.min()) / (x.max() - x.min())
    return _split(x, y, rng, test_frac, noise, len(priors), "medical_like")


# users' data ---------------------------------------------------------------------------------------

def load_npz(path, *, split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """A medmnist-format ``.npz`` (``{split}_images`` (N, H, W[, C]) uint8, ``{split}_labels`` (N, 1))."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    with np.load(path, allow_pickle=False) as z:
        for k in (f"{split}_images", f"{split}_labels"):
            if k not in z:
                raise ValueError(f"{path} has no array {k!r} (has {sorted(z.files)})")
        imgs, labels = z[f"{split}_images"], z[f"{split}_labels"].reshape(-1)
    if imgs.ndim == 3:
        imgs = imgs[:, None]
    elif imgs.ndim == 4:
        imgs = np.moveaxis(imgs, -1, 1)
    else:
        raise ValueError(f"{path}: {split}_images must be (N, H, W) or (N, H, W, C), got {imgs.shape}")
    x = torch.as_tensor(imgs.astype(np.float32) / (255.0 if imgs.dtype == np.uint8 else 1.0))
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{path}: {split}_images holds NaN or inf")
    return x, torch.as_tensor(labels.astype(np.int64))


def load_image_folder(root, *, image_size: int = 8, channels: int = 1):
    """An ImageFolder tree (``root/<class>/<image>``): images resized to ``image_size``, classes sorted.

    Unreadable files are skipped and counted. Returns ``(x, y, classes, skipped)`` with ``skipped`` the
    list of paths that could not be read.
    """
    from PIL import Image, UnidentifiedImageError

    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    if not classes:
        raise ValueError(f"{root} holds no class folders")
    xs, ys, skipped = [], [], []
    mode = "L" if channels == 1 else "RGB"
    for ci, c in enumerate(classes):
        for f in sorted((root / c).iterdir()):
            if not f.is_file():
                continue
            try:
                with Image.open(f) as im:
                    a = np.asarray(im.convert(mode).resize((image_size, image_size)), dtype=np.float32) / 255.0
            except (UnidentifiedImageError, OSError, ValueError):
                skipped.append(str(f))
                continue
            xs.append(a[None] if channels == 1 else np.moveaxis(a, -1, 0))
            ys.append(ci)
    if skipped:
        log.warning("skipped %d unreadable file(s) under %s", len(skipped), root)
    if not xs:
        raise ValueError(f"{root}: no readable images ({len(skipped)} skipped)")
    return torch.as_tensor(np.stack(xs)), torch.as_tensor(ys), classes, skipped


def load(name: str, rng: np.random.Generator, **kw) -> Split:
    table = {"digits": digits, "fine_grained": fine_grained, "medical_like": medical_like}
    if name not in table:
        raise ValueError(f"unknown data set {name!r}; known: {sorted(table)}")
    return table[name](rng, **kw)
