"""Pooled linear probes on one layer's activations, and their per-token read-out (the trajectory).

A probe scores every token, ``s_t = w · (h_t - m) / sd + b``, and pools the token scores into one
logit per sequence; it is fitted by minimising the L2-regularised logistic loss of scikit-learn,

    C · Σ_i log(1 + exp(-y_i · pool(s)_i)) + ½ ||w||²,

with scipy's L-BFGS-B (gradients by torch autograd). Poolings (``(T,)`` token scores → one logit):

- ``mean``: ``mean_t s_t`` (= logistic regression on mean-pooled activations, exactly);
- ``last``: ``s_T`` (= logistic regression on the last token's activation);
- ``max``: ``max_t s_t``;
- ``rolling``: ``max_t mean(s_{t-window+1..t})`` (max of rolling means, GDM's production probe);
- ``multimax``: ``heads`` directions, ``Σ_k max_t w_k · h_t + b`` (MultiMax).

The trajectory of a sequence is the per-token read-out ``p_t = σ(s_t)`` (MultiMax: ``σ(Σ_k w_k·h_t + b)``).
The paper evaluates "a probe at each generated token"; that the per-token read-out of a pooled probe is
the token score its pooling aggregates is inferred (no code is public).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClassifierMixin

from paperworks import atomic_torch_save, check_float, check_int

POOLINGS = ("mean", "last", "max", "rolling", "multimax")


def as_sequences(H, name: str = "H", *, width: int | None = None) -> list[np.ndarray]:
    """Validate a batch of activation sequences: a list of ``(T_i, d)`` arrays (or a ``(n, T, d)``
    array; a ``(n, d)`` array is ``n`` sequences of one token). Finite, ``T_i ≥ 1``, one width."""
    if isinstance(H, np.ndarray | torch.Tensor):
        H = np.asarray(H.detach().cpu() if isinstance(H, torch.Tensor) else H)
        if H.ndim == 2:
            H = H[:, None, :]
        if H.ndim != 3:
            raise ValueError(f"{name} must be a list of (T, d) arrays or a (n, T, d) array, got shape {H.shape}")
        H = list(H)
    if isinstance(H, str | bytes) or not hasattr(H, "__len__") or len(H) == 0:
        raise ValueError(f"{name} must be a non-empty list of (T, d) arrays")
    out = []
    for i, h in enumerate(H):
        if isinstance(h, torch.Tensor):
            h = h.detach().cpu().numpy()
        try:
            h = np.asarray(h, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name}[{i}] must be a numeric array") from None
        if h.ndim == 1:
            h = h[None, :]
        if h.ndim != 2 or h.shape[0] < 1 or h.shape[1] < 1:
            raise ValueError(f"{name}[{i}] must have shape (T >= 1, d >= 1), got {h.shape}")
        if not np.all(np.isfinite(h)):
            raise ValueError(f"{name}[{i}] has NaN or inf activations")
        width = h.shape[1] if width is None else width
        if h.shape[1] != width:
            raise ValueError(f"{name}[{i}] has width {h.shape[1]}, expected {width} (mismatched widths)")
        out.append(h)
    return out


def _padded(H: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    T = max(len(h) for h in H)
    x = torch.zeros(len(H), T, H[0].shape[1], dtype=torch.float64)
    mask = torch.zeros(len(H), T, dtype=torch.bool)
    for i, h in enumerate(H):
        x[i, : len(h)] = torch.from_numpy(h)
        mask[i, : len(h)] = True
    return x, mask


def pool_scores(s: torch.Tensor, mask: torch.Tensor, pooling: str, window: int = 8) -> torch.Tensor:
    """Pool token scores ``s`` ``(n, T)`` (or ``(n, T, heads)``, summed over heads after pooling)
    with a validity ``mask`` ``(n, T)`` into ``(n,)`` logits."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    heads = s.dim() == 3
    m = mask[..., None] if heads else mask
    if pooling == "mean":
        out = (s * m).sum(1) / m.sum(1).clamp_min(1)
    elif pooling == "last":
        idx = (mask.sum(1) - 1).clamp_min(0)
        out = s[torch.arange(len(s)), idx]
    elif pooling in ("max", "multimax"):
        out = s.masked_fill(~m, float("-inf")).amax(1)
    else:  # rolling: max over windows of the mean; short sequences use their whole length
        lengths = mask.sum(1)
        c = torch.cat([torch.zeros_like(s[:, :1]), (s * m).cumsum(1)], 1)
        T = s.shape[1]
        ends = torch.arange(1, T + 1, device=s.device)
        w = torch.minimum(torch.full_like(lengths, window), lengths)  # (n,)
        wt = w[:, None].expand(-1, T)
        starts = (ends[None, :] - wt).clamp_min(0)
        idx_e = ends[None, :].expand(len(s), -1)
        if heads:
            sums = c.gather(1, idx_e[..., None].expand(-1, -1, s.shape[2])) - c.gather(
                1, starts[..., None].expand(-1, -1, s.shape[2])
            )
            means = sums / wt[..., None]
        else:
            means = (c.gather(1, idx_e) - c.gather(1, starts)) / wt
        valid = (ends[None, :] >= wt) & (ends[None, :] <= lengths[:, None])
        if heads:
            valid = valid[..., None]
        out = means.masked_fill(~valid, float("-inf")).amax(1)
    return out.sum(-1) if heads else out


class PooledProbe(ClassifierMixin, BaseEstimator):
    """A logistic probe on pooled token scores (scikit-learn estimator).

    Args:
        pooling: ``"mean" | "last" | "max" | "rolling" | "multimax"`` (see the module docstring).
        window: rolling-mean window (tokens) for ``"rolling"``.
        C: inverse L2 strength, as in :class:`sklearn.linear_model.LogisticRegression`.
        heads: directions of ``"multimax"`` (ignored otherwise).
        max_iter: L-BFGS iterations.
        random_state: initialisation of ``"multimax"`` (the other poolings are convex, started at zero).

    Shapes: ``fit(H, y)`` takes a list of ``(T_i, d)`` arrays and ``n`` binary labels;
    ``predict_proba(H)`` returns ``(n, 2)``; ``trajectory(h)`` returns ``(T,)`` probabilities.

    Example::

        probe = PooledProbe(pooling="max").fit(H, y)
        probe.trajectory(H[0])          # per-token P(class 1)
    """

    def __init__(
        self,
        pooling: str = "max",
        window: int = 8,
        C: float = 1.0,
        heads: int = 4,
        max_iter: int = 100,
        random_state: int = 0,
    ):
        self.pooling = pooling
        self.window = window
        self.C = C
        self.heads = heads
        self.max_iter = max_iter
        self.random_state = random_state

    def _check_params(self):
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        check_int(self.window, "window", minimum=1)
        check_float(self.C, "C", minimum=0.0)
        if not self.C > 0:
            raise ValueError(f"C must be > 0, got {self.C!r}")
        check_int(self.heads, "heads", minimum=1)
        check_int(self.max_iter, "max_iter", minimum=1)

    def fit(self, H, y):
        self._check_params()
        H = as_sequences(H)
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != len(H):
            raise ValueError(f"y must be 1-D with one label per sequence ({len(H)}), got shape {y.shape}")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("y has NaN or inf labels")
        classes = np.unique(y)
        if len(classes) != 2:
            raise ValueError(
                f"y must hold exactly two classes, got {len(classes)} ({classes.tolist()}): "
                "one-class labels cannot train a probe"
            )
        self.classes_ = classes
        self.n_features_in_ = H[0].shape[1]
        t = torch.from_numpy((y == classes[1]).astype(np.float64))
        allh = np.concatenate(H)
        self.mean_ = allh.mean(0)
        self.scale_ = np.where(allh.std(0) > 1e-12, allh.std(0), 1.0)
        x, mask = _padded([(h - self.mean_) / self.scale_ for h in H])
        k = self.heads if self.pooling == "multimax" else 1
        g = torch.Generator().manual_seed(int(self.random_state))
        w = (
            torch.randn(self.n_features_in_, k, generator=g, dtype=torch.float64) * 0.01
            if self.pooling == "multimax"
            else torch.zeros(self.n_features_in_, k, dtype=torch.float64)
        )
        C = float(self.C)
        shape = w.shape

        def objective(theta):
            wb = torch.from_numpy(theta).requires_grad_(True)
            w_, b_ = wb[:-1].reshape(shape), wb[-1]
            z = self._pool(x @ w_, mask) + b_
            loss = (
                C * torch.nn.functional.binary_cross_entropy_with_logits(z, t, reduction="sum") + 0.5 * (w_ * w_).sum()
            )
            loss.backward()
            return float(loss.detach()), wb.grad.numpy().copy()

        theta0 = np.concatenate([w.numpy().ravel(), [0.0]])
        res = minimize(
            objective,
            theta0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": int(self.max_iter), "gtol": 1e-8, "ftol": 1e-13},
        )
        w = torch.from_numpy(res.x[:-1].reshape(shape))
        b = torch.from_numpy(res.x[-1:].copy())
        self.n_iter_ = int(res.nit)
        self.coef_ = w.detach().numpy().T.copy()  # (k, d) on standardised activations
        self.intercept_ = b.detach().numpy().copy()
        return self

    def _pool(self, s, mask):
        return pool_scores(s if self.pooling == "multimax" else s[..., 0], mask, self.pooling, int(self.window))

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("PooledProbe is not fitted yet: call fit(H, y) first")

    def decision_function(self, H) -> np.ndarray:
        """Pooled logits, ``(n,)``."""
        self._check_fitted()
        H = as_sequences(H, width=self.n_features_in_)
        x, mask = _padded([(h - self.mean_) / self.scale_ for h in H])
        with torch.no_grad():
            z = self._pool(x @ torch.from_numpy(self.coef_.T), mask) + torch.from_numpy(self.intercept_)
        return z.numpy()

    def predict_proba(self, H) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(-self.decision_function(H)))
        return np.stack([1 - p, p], 1)

    def predict(self, H) -> np.ndarray:
        return self.classes_[(self.decision_function(H) > 0).astype(int)]

    def token_scores(self, h) -> np.ndarray:
        """Per-token logits ``s_t`` of one ``(T, d)`` sequence (heads summed for MultiMax)."""
        self._check_fitted()
        h = as_sequences([h], "h", width=self.n_features_in_)[0]
        return ((h - self.mean_) / self.scale_) @ self.coef_.sum(0) + float(self.intercept_[0])

    def trajectory(self, h) -> np.ndarray:
        """The probe trajectory ``p_t = σ(s_t)`` of one ``(T, d)`` sequence, ``(T,)`` in [0, 1]."""
        return 1.0 / (1.0 + np.exp(-self.token_scores(h)))

    def trajectories(self, H) -> list[np.ndarray]:
        return [self.trajectory(h) for h in H]

    # save / load --------------------------------------------------------------------------------

    def save(self, path) -> None:
        """One self-contained file (``torch.save`` of tensors and plain values)."""
        self._check_fitted()
        path = Path(path)
        doc = {
            "class": "PooledProbe",
            "params": {k: v for k, v in self.get_params().items()},
            "classes": torch.from_numpy(np.asarray(self.classes_, dtype=np.float64)),
            "coef": torch.from_numpy(self.coef_),
            "intercept": torch.from_numpy(self.intercept_),
            "mean": torch.from_numpy(self.mean_),
            "scale": torch.from_numpy(self.scale_),
        }
        atomic_torch_save(doc, path)  # written whole, then renamed

    @classmethod
    def load(cls, path) -> PooledProbe:
        """Load a probe saved by :meth:`save` (``weights_only=True``)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no saved probe at {path}")
        doc = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(doc, dict) or doc.get("class") != "PooledProbe":
            raise ValueError(f"{path} does not hold a saved PooledProbe")
        probe = cls(**doc["params"])
        probe._check_params()
        probe.classes_ = doc["classes"].numpy()
        if np.all(probe.classes_ == np.round(probe.classes_)):
            probe.classes_ = probe.classes_.astype(int)
        probe.coef_ = doc["coef"].numpy()
        probe.intercept_ = doc["intercept"].numpy()
        probe.mean_ = doc["mean"].numpy()
        probe.scale_ = doc["scale"].numpy()
        probe.n_features_in_ = probe.coef_.shape[1]
        return probe
