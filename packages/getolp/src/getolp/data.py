"""Histograms on grids: synthetic generators, the data bundled with scikit-learn, users' files.

Nothing is downloaded: digits and the two sample images ship inside scikit-learn.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from getolp.barycenter import check_grid_shape

KINDS = ("random", "sparse", "blobs", "gaussian", "equal", "dirac", "disjoint")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")


def _normalise(h: np.ndarray) -> np.ndarray:
    return h / h.sum(axis=tuple(range(1, h.ndim)), keepdims=True)


def synthetic_histograms(rng: np.random.Generator, n_histograms: int, grid_shape, kind: str = "random",
                         *, density: float = 0.1, n_blobs: int = 3) -> np.ndarray:
    """``n_histograms`` probability histograms of shape ``grid_shape``, stacked.

    ``kind``: ``"random"`` (i.i.d. uniform entries), ``"sparse"`` (a random ``density`` fraction of
    the points, at least one, carries uniform mass), ``"blobs"`` (mixtures of ``n_blobs``
    Gaussian bumps of random centre and width, with a 1e-12 floor: smooth, strictly positive),
    ``"gaussian"`` (one Gaussian bump each, no floor: entries down to ~1e-300), or the
    near-degenerate cases ``"equal"`` (``n_histograms`` copies of one random histogram),
    ``"dirac"`` (each a single point mass at a random point) and ``"disjoint"`` (random
    histograms on disjoint random sets of points).
    """
    shape = check_grid_shape(grid_shape)
    if n_histograms < 1:
        raise ValueError(f"n_histograms must be >= 1, got {n_histograms}")
    size = (n_histograms, *shape)
    if kind == "random":
        h = rng.random(size)
    elif kind == "sparse":
        if not 0 < density <= 1:
            raise ValueError(f"density must be in (0, 1], got {density}")
        n = int(np.prod(shape))
        k = max(1, round(density * n))
        h = np.zeros((n_histograms, n))
        for row in h:
            row[rng.choice(n, size=k, replace=False)] = rng.random(k) + 0.1
        h = h.reshape(size)
    elif kind == "blobs":
        axes = np.meshgrid(*[np.linspace(0, 1, s) for s in shape], indexing="ij")
        h = np.zeros(size)
        for m in range(n_histograms):
            for _ in range(n_blobs):
                centre = rng.uniform(0.15, 0.85, len(shape))
                width = rng.uniform(0.05, 0.15)
                r2 = sum((a - c) ** 2 for a, c in zip(axes, centre))
                h[m] += rng.uniform(0.5, 1.5) * np.exp(-r2 / (2 * width**2))
        h += 1e-12  # keep every point in the support, as a smooth density would
    elif kind == "gaussian":
        axes = np.meshgrid(*[np.linspace(0, 1, s) for s in shape], indexing="ij")
        h = np.zeros(size)
        for m in range(n_histograms):
            centre, width = rng.uniform(0.2, 0.8, len(shape)), rng.uniform(0.05, 0.2)
            h[m] = np.exp(-sum((a - c) ** 2 for a, c in zip(axes, centre)) / (2 * width**2))
    elif kind == "equal":
        h = np.broadcast_to(rng.random(shape), size).copy()
    elif kind == "dirac":
        n = int(np.prod(shape))
        h = np.zeros((n_histograms, n))
        h[np.arange(n_histograms), rng.integers(0, n, n_histograms)] = 1.0
        h = h.reshape(size)
    elif kind == "disjoint":
        n = int(np.prod(shape))
        if n < n_histograms:
            raise ValueError(f"kind='disjoint' needs at least n_histograms={n_histograms} grid points, got {n}")
        owner = rng.permutation(np.arange(n) % n_histograms)
        h = np.where(owner[None, :] == np.arange(n_histograms)[:, None], rng.random((n_histograms, n)) + 0.1, 0.0)
        h = h.reshape(size)
    else:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return _normalise(h)


def digits_histograms(digit: int = 3, n_images: int = 8, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """``n_images`` 8×8 images of ``digit`` from :func:`sklearn.datasets.load_digits`, as histograms."""
    from sklearn.datasets import load_digits

    if digit not in range(10):
        raise ValueError(f"digit must be in 0..9, got {digit}")
    X, y = load_digits(return_X_y=True)
    idx = np.flatnonzero(y == digit)
    if n_images < 1 or n_images > idx.size:
        raise ValueError(f"n_images must be in 1..{idx.size} for digit {digit}, got {n_images}")
    pick = idx[:n_images] if rng is None else rng.choice(idx, size=n_images, replace=False)
    return _normalise(X[pick].reshape(-1, 8, 8).astype(float))


def rgb_histogram(image: np.ndarray, bins: int = 8) -> np.ndarray:
    """Colour histogram of an ``(H, W, 3)`` uint8 image on a ``bins³`` RGB grid (mass 1)."""
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] < 3:
        raise ValueError(f"image must have shape (H, W, 3), got {image.shape}")
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    pix = image[..., :3].reshape(-1, 3).astype(float)
    h, _ = np.histogramdd(pix, bins=(bins,) * 3, range=[(0, 256)] * 3)
    return h / h.sum()


def sample_images() -> dict[str, np.ndarray]:
    """scikit-learn's bundled sample images (``china.jpg``, ``flower.jpg``) as uint8 arrays."""
    from sklearn.datasets import load_sample_images

    data = load_sample_images()
    return {Path(name).stem: img for name, img in zip(data.filenames, data.images)}


def bin_centres(bins: int) -> np.ndarray:
    """RGB value (0..255) of the centre of each of ``bins`` bins on one channel."""
    return (np.arange(bins) + 0.5) * (256.0 / bins)


def recolor(image: np.ndarray, plan, bins: int) -> np.ndarray:
    """Move each pixel's colour by its bin's barycentric image under ``plan`` (palette transfer).

    ``plan`` is a coupling with rows the barycenter's bins and columns the image histogram's bins
    (as returned in ``log["plans"]``). Bin ``y`` moves to ``Σ_x π(x, y) x / Σ_x π(x, y)``; each
    pixel keeps its offset from its bin's centre.
    """
    image = np.asarray(image)
    import scipy.sparse as sp

    P = sp.csc_matrix(plan)
    centres = np.stack(np.meshgrid(*[bin_centres(bins)] * 3, indexing="ij"), -1).reshape(-1, 3)
    col_mass = np.asarray(P.sum(axis=0)).ravel()
    target = np.where(col_mass[:, None] > 0, (P.T @ centres) / np.maximum(col_mass, 1e-300)[:, None], centres)
    pix = image[..., :3].reshape(-1, 3).astype(int)
    ijk = np.minimum(pix * bins // 256, bins - 1)
    flat = np.ravel_multi_index(ijk.T, (bins,) * 3)
    out = pix + (target[flat] - centres[flat])
    return np.clip(np.rint(out), 0, 255).astype(np.uint8).reshape(*image.shape[:2], 3)


def load_histogram(path, grid_shape=None, *, mode: str = "gray", bins: int = 8) -> np.ndarray:
    """A histogram from a user's file, normalised to mass 1.

    ``.npy``: a non-negative array (loaded without pickle). An image (PNG, JPEG, ...): its
    grayscale intensities resized to ``grid_shape`` (``mode="gray"``, a 2D grid) or its colour
    histogram on ``bins³`` (``mode="rgb"``).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path {str(path)!r} is not a file")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        h = np.load(path, allow_pickle=False)
        if h.dtype.kind not in "fiu":
            raise ValueError(f"{path.name}: a histogram must hold real numbers, got dtype {h.dtype} (not coerced)")
        h = h.astype(float)
        if grid_shape is not None and h.size == int(np.prod(grid_shape)):
            h = h.reshape(tuple(grid_shape))
    elif suffix in IMAGE_SUFFIXES:
        from PIL import Image

        with Image.open(path) as img:
            if mode == "rgb":
                h = rgb_histogram(np.asarray(img.convert("RGB")), bins)
            elif mode == "gray":
                g = img.convert("L")
                if grid_shape is not None:
                    shape = check_grid_shape(grid_shape)
                    if len(shape) != 2:
                        raise ValueError(f"grid_shape must be 2D for a grayscale image, got {shape}")
                    g = g.resize((shape[1], shape[0]), Image.Resampling.BOX)
                h = np.asarray(g, dtype=float)
            else:
                raise ValueError(f"mode must be 'gray' or 'rgb', got {mode!r}")
    else:
        raise ValueError(f"path must be a .npy file or an image ({', '.join(IMAGE_SUFFIXES)}), got {path.name!r}")
    if not np.all(np.isfinite(h)) or np.any(h < 0) or h.sum() <= 0:
        raise ValueError(f"{path.name}: a histogram must be finite, non-negative and not all zero")
    if grid_shape is not None and h.shape != tuple(grid_shape):
        raise ValueError(f"{path.name}: histogram shape {h.shape} does not match grid_shape {tuple(grid_shape)}")
    return h / h.sum()


def resample(h: np.ndarray, grid_shape) -> np.ndarray:
    """A 2D histogram area-resampled (box filter) to ``grid_shape``, normalised to mass 1."""
    from PIL import Image

    h = np.asarray(h, dtype=float)
    shape = check_grid_shape(grid_shape)
    if h.ndim != 2 or len(shape) != 2:
        raise ValueError(f"resample needs a 2D histogram and a 2D grid, got {h.shape} -> {shape}")
    if h.shape == shape:
        return h / h.sum()
    g = np.asarray(Image.fromarray(h.astype(np.float32)).resize((shape[1], shape[0]), Image.Resampling.BOX),
                   dtype=float)
    g = np.clip(g, 0.0, None)
    return g / g.sum()


def fit_grid(grid_shape, n_histograms: int, max_variables: int) -> tuple[int, ...]:
    """The largest grid of ``grid_shape``'s aspect ratio whose GETO-LP has at most ``max_variables`` variables."""
    from getolp.barycenter import n_variables

    shape = check_grid_shape(grid_shape)
    if n_variables(shape, n_histograms) <= max_variables:
        return shape
    lo, hi = 0.0, 1.0
    for _ in range(60):  # bisection on the scale factor
        mid = (lo + hi) / 2
        cand = tuple(max(1, int(s * mid)) for s in shape)
        lo, hi = (mid, hi) if n_variables(cand, n_histograms) <= max_variables else (lo, mid)
    best = tuple(max(1, int(s * lo)) for s in shape)
    if n_variables(best, n_histograms) > max_variables:
        raise ValueError(f"no grid fits max_variables={max_variables} for {n_histograms} histograms")
    return best
