"""Neural block mirror: mirrored lag blocks in a neural sequence model, group permutation SHAP, and
the SHAP derivative along each mirror copy as block importance.

**A reconstruction** (the paper's neural construction is not public; inferred from its abstract and
from Neural Gaussian Mirror, Xing et al. 2020):

1. Every group's block (its channels over all lags) is mirrored at once: X_g^± = X_g ± t_g Z_g C_g,
   with C_g the linear block-mirror matrix (residualised copies uncorrelated; see
   :mod:`groupfdr.mirror`) and the scale t_g chosen on a grid to minimise the HSIC between the
   residualised copies (a kernel dependence measure, so non-linear dependence counts too).
2. The model is trained on the mirrored input (2C channels). It must see the copies while it learns:
   null symmetry comes from the independent estimation noise of the + and − copies, which a model
   fitted on the original input does not have. (So ``fit`` trains the model; pass it unfitted.)
3. Group permutation SHAP (block masking) gives φ_{g±}(x_i) for every copy; the smoothed SHAP
   derivative d_g^± is the least-squares slope of φ_{g±} on the copy's block input (for a linear
   model it is the coefficient itself).
4. M_g = ‖d_g⁺ + d_g⁻‖ − ‖d_g⁺ − d_g⁻‖ and the mirror threshold, as in the linear case.
"""

from __future__ import annotations

import copy
import logging
import numbers

import numpy as np

from groupfdr.mirror import _check_q, mirror_matrix, mirror_threshold
from groupfdr.shapley import _group_masks, group_permutation_shap

log = logging.getLogger(__name__)


def hsic(X, Y, *, bandwidth_x: float | None = None, bandwidth_y: float | None = None, kernel: str = "gaussian") -> float:
    """Biased HSIC estimate tr(K H L H)/n² (Gretton et al. 2005).

    Gaussian kernels with the median-distance bandwidth by default; ``kernel="linear"`` gives
    ‖X_cᵀY_c‖²_F / n² (the squared cross-covariance), which the tests use as a reference.
    Written here rather than taken from ``dcor``/``hyppo``: both compile numba kernels at import
    (about 12 s for dcor here), more than the whole scale search costs.
    """
    X = np.asarray(X, float).reshape(len(X), -1)
    Y = np.asarray(Y, float).reshape(len(Y), -1)
    if len(X) != len(Y) or len(X) < 2:
        raise ValueError(f"X and Y need the same number (≥ 2) of rows, got {len(X)} and {len(Y)}")
    n = len(X)

    def gram(A, bw):
        if kernel == "linear":
            return A @ A.T
        sq = np.sum(A * A, 1)
        D = np.maximum(sq[:, None] + sq[None] - 2 * A @ A.T, 0.0)
        if bw is None:
            med = np.median(D[np.triu_indices(n, 1)])
            bw = np.sqrt(med / 2) if med > 0 else 1.0
        return np.exp(-D / (2 * bw * bw))

    if kernel not in ("gaussian", "linear"):
        raise ValueError(f"kernel must be 'gaussian' or 'linear', got {kernel!r}")
    K, L = gram(X, bandwidth_x), gram(Y, bandwidth_y)
    Kc = K - K.mean(0) - K.mean(1)[:, None] + K.mean()
    return float(np.sum(Kc * L) / n**2)


def mirror_design(X, groups, *, scales=(0.5, 1.0, 2.0), max_hsic_rows: int = 300, random_state=None):
    """Mirror every group of a (n, T, C) or (n, p) input at once.

    Returns:
        X_aug (n, T, 2C) (channels: all + copies, then all − copies; 2-D inputs give (n, 2p)),
        groups_aug (labels 0..2G−1: k for group k's + copy, G + k for its − copy), and a dict with
        the chosen scales t_g and the C_g.
    """
    X = np.asarray(X, float)
    labels, masks = _group_masks(X, groups)
    n = len(X)
    rng = np.random.default_rng(random_state)
    flat = X.reshape(n, -1)
    fmask = masks.reshape(len(masks), -1)
    Xc = flat - flat.mean(0)
    plus, minus = X.copy(), X.copy()
    chosen, Cs = [], []
    rows = rng.choice(n, size=min(n, max_hsic_rows), replace=False)
    for m in fmask:
        g, rest = np.flatnonzero(m), np.flatnonzero(~m)
        Z = rng.standard_normal((n, g.size))
        Zc = Z - Z.mean(0)
        Xr = Xc[:, rest]
        if n > rest.size + g.size + 1:
            A = Xc[:, g] - Xr @ np.linalg.lstsq(Xr, Xc[:, g], rcond=None)[0]
            B = Zc - Xr @ np.linalg.lstsq(Xr, Zc, rcond=None)[0]
        else:  # ridge residuals when the other blocks span the rows
            lam = 1e-2 * np.trace(Xr.T @ Xr) / max(rest.size, 1)
            P = Xr @ np.linalg.solve(Xr.T @ Xr + lam * np.eye(rest.size), Xr.T)
            A, B = Xc[:, g] - P @ Xc[:, g], Zc - P @ Zc
        C = mirror_matrix(A, B)
        scores = [hsic((A + t * B @ C)[rows], (A - t * B @ C)[rows]) for t in scales]
        t = float(scales[int(np.argmin(scores))])
        shift = (t * Z @ C).reshape(n, -1)
        pf, mf = plus.reshape(n, -1), minus.reshape(n, -1)
        pf[:, g] += shift
        mf[:, g] -= shift
        chosen.append(t)
        Cs.append(C)
    X_aug = np.concatenate([plus, minus], axis=-1)
    base = np.searchsorted(labels, np.asarray(groups))
    groups_aug = np.concatenate([base, base + len(labels)])
    return X_aug, groups_aug, {"labels": labels.tolist(), "scales": chosen, "mirror_matrices": Cs}


def train_torch(module, X, y, *, epochs: int = 200, lr: float = 3e-3, batch_size: int = 64, patience: int = 20,
                val_fraction: float = 0.2, weight_decay: float = 1e-4, random_state=None, device: str = "cpu"):
    """Fit ``module`` (in place) by Adam on MSE with early stopping on a validation split; returns
    ``(predict_fn, history)``. Stops with an error naming the epoch if the loss turns NaN."""
    import torch

    rng = np.random.default_rng(random_state)
    torch.manual_seed(int(rng.integers(2**31)))
    n = len(X)
    perm = rng.permutation(n)
    n_val = max(1, int(round(val_fraction * n)))
    va, tr = perm[:n_val], perm[n_val:]
    dt = next(module.parameters()).dtype
    Xt = torch.as_tensor(X, dtype=dt, device=device)
    yt = torch.as_tensor(y, dtype=dt, device=device).reshape(-1)
    module.to(device)
    opt = torch.optim.Adam(module.parameters(), lr=lr, weight_decay=weight_decay)
    best, best_state, wait, hist = np.inf, copy.deepcopy(module.state_dict()), 0, []
    for epoch in range(epochs):
        module.train()
        for i in range(0, len(tr), batch_size):
            b = torch.as_tensor(tr[i:i + batch_size])
            opt.zero_grad()
            loss = torch.mean((module(Xt[b]).reshape(-1) - yt[b]) ** 2)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"training loss is {loss.item()} at epoch {epoch}")
            loss.backward()
            opt.step()
        rng.shuffle(tr)
        module.eval()
        with torch.no_grad():
            v = float(torch.mean((module(Xt[va]).reshape(-1) - yt[va]) ** 2))
        hist.append(v)
        if v < best - 1e-6:
            best, best_state, wait = v, copy.deepcopy(module.state_dict()), 0
        else:
            wait += 1
            if wait >= patience:
                break
    module.load_state_dict(best_state)
    module.eval()

    def predict(Z):
        with torch.no_grad():
            return module(torch.as_tensor(Z, dtype=dt, device=device)).reshape(-1).cpu().numpy()

    return predict, {"val_mse": hist, "best_val_mse": best, "epochs": len(hist)}


def _fit_model(model, X, y, random_state, train_kwargs):
    try:
        import torch

        is_module = isinstance(model, torch.nn.Module)
    except ImportError:  # pragma: no cover
        is_module = False
    if is_module:
        m = copy.deepcopy(model)
        predict, hist = train_torch(m, X, y, random_state=random_state, **(train_kwargs or {}))
        return m, predict, hist
    if not callable(model):
        raise TypeError(f"model must be a torch.nn.Module or a callable train(X, y) -> predict, got {type(model).__name__}")
    predict = model(X, y)
    if not callable(predict):
        raise TypeError("a callable model must return a predict function: train(X, y) -> predict(X)")
    return None, predict, {}


def shap_slopes(phi, X, masks) -> np.ndarray:
    """Least-squares slope of each group's SHAP values on its block input: (G, block size)."""
    n = len(X)
    flat = X.reshape(n, -1)
    out = []
    for k, m in enumerate(masks.reshape(len(masks), -1)):
        B = flat[:, m] - flat[:, m].mean(0)
        out.append(np.linalg.lstsq(B, phi[:, k] - phi[:, k].mean(), rcond=None)[0])
    return np.stack(out)


class NeuralBlockMirror:
    """Group-level FDR selection for neural sequence models (a reconstruction; see the module docstring).

    Args:
        model: an *unfitted* ``torch.nn.Module`` taking the mirrored input (twice the channels of X;
            it is deep-copied and trained by :meth:`fit`), or any callable ``train(X_aug, y) -> predict``.
        groups: one label per channel of a (n, T, C) input (or per column of (n, p)).
        q: target FDR in (0, 1).
        n_permutations: SHAP permutations (each with its reverse).
        n_background: background rows for SHAP masking; n_explain: rows explained.
        scales: the grid for the HSIC-chosen mirror scale t_g.
        offset: 1 (knockoff+) or 0.
        train_kwargs: passed to :func:`train_torch`.

    Attributes (after ``fit``): ``mirror_statistics_``, ``threshold_``, ``selected_groups_``,
    ``groups_``, ``slopes_`` (the d^±), ``scales_``, ``model_`` (the trained module), ``history_``.
    """

    def __init__(self, model, groups, q: float = 0.1, n_permutations: int = 5, random_state=None, *,
                 n_background: int = 8, n_explain: int = 150, scales=(0.5, 1.0, 2.0), offset: int = 1,
                 train_kwargs=None):
        if not callable(model):
            raise TypeError(f"model must be a torch.nn.Module or a callable train(X, y) -> predict, "
                            f"got {type(model).__name__}")
        self.model, self.groups, self.q = model, groups, _check_q(q)
        for name, v in (("n_permutations", n_permutations), ("n_background", n_background), ("n_explain", n_explain)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if isinstance(offset, bool) or offset not in (0, 1):
            raise ValueError(f"offset must be 0 or 1, got {offset!r}")
        scales = tuple(float(s) for s in scales)
        if not scales or min(scales) <= 0 or not np.all(np.isfinite(scales)):
            raise ValueError(f"scales must be positive finite numbers, got {scales}")
        self.n_permutations, self.n_background, self.n_explain = int(n_permutations), int(n_background), int(n_explain)
        self.random_state, self.scales, self.offset, self.train_kwargs = random_state, scales, offset, train_kwargs

    def fit(self, X, y):
        X, y = np.asarray(X, float), np.asarray(y, float).reshape(-1)
        if X.ndim not in (2, 3) or len(X) != len(y):
            raise ValueError(f"X must be (n, p) or (n, T, C) with n = len(y); got {X.shape} and {y.shape}")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise ValueError("X and y must be finite (found NaN or inf)")
        rng = np.random.default_rng(self.random_state)
        X_aug, groups_aug, info = mirror_design(X, self.groups, scales=self.scales, random_state=rng)
        self.model_, predict, self.history_ = _fit_model(self.model, X_aug, y, rng, self.train_kwargs)
        rows = rng.choice(len(X), size=min(len(X), self.n_explain), replace=False)
        bg = X_aug[rng.choice(len(X), size=min(len(X), self.n_background), replace=False)]
        phi = group_permutation_shap(predict, X_aug[rows], groups_aug, bg, self.n_permutations, random_state=rng)
        _, masks = _group_masks(X_aug, groups_aug)
        slopes = shap_slopes(phi, X_aug[rows], masks)
        G = len(info["labels"])
        d_plus, d_minus = slopes[:G], slopes[G:]
        M = np.linalg.norm(d_plus + d_minus, axis=1) - np.linalg.norm(d_plus - d_minus, axis=1)
        self.groups_ = info["labels"]
        self.scales_ = info["scales"]
        self.slopes_ = (d_plus, d_minus)
        self.shap_values_ = phi
        self.mirror_statistics_ = M
        self.threshold_ = mirror_threshold(M, self.q, offset=self.offset)
        self.selected_groups_ = [g for g, s in zip(self.groups_, M >= self.threshold_) if s]
        return self


def block_permutation_importance(predict, X, y, groups, *, n_repeats: int = 5, random_state=None) -> np.ndarray:
    """Increase in MSE when a group's block is permuted across rows (mean over repeats): (G,)."""
    X, y = np.asarray(X, float), np.asarray(y, float).reshape(-1)
    _, masks = _group_masks(X, groups)
    rng = np.random.default_rng(random_state)
    base = float(np.mean((predict(X) - y) ** 2))
    out = np.zeros(len(masks))
    for k, m in enumerate(masks):
        for _ in range(n_repeats):
            Xp = X.copy()
            Xp[:, m] = X[rng.permutation(len(X))][:, m]
            out[k] += np.mean((predict(Xp) - y) ** 2) - base
    return out / n_repeats
