"""Data: scikit-learn's digits (shipped in the wheel), the base MLP, and the three task streams."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


class TensorLoader:
    """A light ``DataLoader`` stand-in over in-memory tensors: (x, y) batches, reshuffled each pass."""

    def __init__(self, X, y, *, batch_size: int = 64, shuffle: bool = True, seed: int = 0):
        self.X = torch.as_tensor(X, dtype=torch.float32)
        self.y = torch.as_tensor(y, dtype=torch.long)
        if len(self.X) != len(self.y):
            raise ValueError(f"X and y differ in length: {len(self.X)} vs {len(self.y)}")
        self.batch_size, self.shuffle = int(batch_size), shuffle
        self.gen = torch.Generator().manual_seed(seed)

    def __len__(self):
        return (len(self.y) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        idx = torch.randperm(len(self.y), generator=self.gen) if self.shuffle else torch.arange(len(self.y))
        for i in range(0, len(idx), self.batch_size):
            j = idx[i:i + self.batch_size]
            yield self.X[j], self.y[j]


@dataclass
class Task:
    """One task: train / validation / test splits (numpy)."""

    name: str
    X: np.ndarray
    y: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    def loader(self, batch_size: int = 64, seed: int = 0) -> TensorLoader:
        return TensorLoader(self.X, self.y, batch_size=batch_size, seed=seed)


def mlp(d_in: int = 64, hidden: int = 256, n_classes: int = 10) -> nn.Sequential:
    """The paper miniature's MLP d_in→256→256→10 (modules ``fc1``, ``fc2``, ``head``)."""
    from collections import OrderedDict

    return nn.Sequential(OrderedDict([("fc1", nn.Linear(d_in, hidden)), ("act1", nn.ReLU()),
                                      ("fc2", nn.Linear(hidden, hidden)), ("act2", nn.ReLU()),
                                      ("head", nn.Linear(hidden, n_classes))]))


def digits_splits(seed: int, *, n_val: int = 300, n_test: int = 400):
    """Standardised digits, split (train, val, test) by a seeded permutation."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = ((X - X.mean(0)) / (X.std(0) + 1e-8)).astype(np.float32)
    idx = np.random.default_rng(seed).permutation(len(y))
    te, va, tr = idx[:n_test], idx[n_test:n_test + n_val], idx[n_test + n_val:]
    return (X[tr], y[tr]), (X[va], y[va]), (X[te], y[te])


def pretrain(seed: int, *, epochs: int = 60, lr: float = 1e-3) -> nn.Sequential:
    """The base model: the MLP trained on the original digits (Adam, batches of 64)."""
    (X, y), _, _ = digits_splits(seed)
    torch.manual_seed(seed)
    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for x, t in _epochs(TensorLoader(X, y, seed=seed), epochs):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), t).backward()
        opt.step()
    return model.eval()


def _epochs(loader, epochs):
    for _ in range(epochs):
        yield from loader


_DIHEDRAL = {
    "rot90": lambda im: np.rot90(im, 1, axes=(1, 2)),
    "rot180": lambda im: np.rot90(im, 2, axes=(1, 2)),
    "rot270": lambda im: np.rot90(im, 3, axes=(1, 2)),
    "flip_lr": lambda im: im[:, :, ::-1],
    "flip_ud": lambda im: im[:, ::-1, :],
    "transpose": lambda im: np.transpose(im, (0, 2, 1)),
}


def _pixel_map(name: str) -> np.ndarray:
    return _DIHEDRAL[name](np.arange(64).reshape(1, 8, 8)).reshape(64)


def domain_tasks(seed: int, T: int = 6) -> list[Task]:
    """Domain-incremental: the digits under T of the 6 fixed pixel permutations of the square's symmetries."""
    if not 1 <= T <= len(_DIHEDRAL):
        raise ValueError(f"T must be in [1, {len(_DIHEDRAL)}], got {T}")
    tr, va, te = digits_splits(seed)
    tasks = []
    for name in list(_DIHEDRAL)[:T]:
        P = _pixel_map(name)
        tasks.append(Task(name, tr[0][:, P], tr[1], va[0][:, P], va[1], te[0][:, P], te[1]))
    return tasks


def class_tasks(seed: int, T: int = 5) -> list[Task]:
    """Class-incremental: T tasks of 2 classes each ({0,1}, {2,3}, ...), one shared 10-way head, no task ID.

    The images are transposed (a fixed pixel permutation) so the base model cannot already solve them.
    """
    if not 1 <= T <= 5:
        raise ValueError(f"T must be in [1, 5], got {T}")
    tr, va, te = digits_splits(seed)
    P = _pixel_map("transpose")

    def part(split, cls):
        X, y = split
        keep = np.isin(y, cls)
        return X[keep][:, P], y[keep]

    tasks = []
    for t in range(T):
        cls = [2 * t, 2 * t + 1]
        tasks.append(Task(f"classes{cls[0]}{cls[1]}", *part(tr, cls), *part(va, cls), *part(te, cls)))
    return tasks


def gaussian_tasks(seed: int, *, T: int = 5, block: int = 12, overlap: float = 0.0, n_classes: int = 10,
                   separation: float = 2.5, n: int = 600, n_val: int = 200, n_test: int = 400,
                   d: int = 64, background: float = 0.3) -> list[Task]:
    """Gaussian-mixture tasks with controlled overlap of their input coordinates.

    Task t's class means live on a block of ``block`` coordinates starting at t·round(block·(1 − overlap))
    (``overlap`` = 0: disjoint blocks; 1: the same block); the other coordinates are N(0, background²).
    Each task's 10 classes have means ``separation``·N(0, I) on its block and unit noise.
    """
    if not 0.0 <= overlap < 1.0:
        raise ValueError(f"overlap must be in [0, 1), got {overlap}")
    step = max(1, round(block * (1 - overlap)))
    if (T - 1) * step + block > d:
        raise ValueError(f"T={T} blocks of {block} with overlap {overlap} do not fit in d={d}")
    rng = np.random.default_rng(seed)
    tasks = []
    for t in range(T):
        cols = np.arange(t * step, t * step + block)
        mu = separation * rng.standard_normal((n_classes, block))

        def draw(m, cols=cols, mu=mu):
            y = rng.integers(0, n_classes, m)
            X = background * rng.standard_normal((m, d))
            X[:, cols] = mu[y] + rng.standard_normal((m, block))
            return X.astype(np.float32), y

        tasks.append(Task(f"gauss{t}", *draw(n), *draw(n_val), *draw(n_test)))
    return tasks
