"""Predictive models the explainer takes: anything that maps X to Gaussian means and covariances,
or a path sampler.

- :class:`LinearGaussianModel` — ``Y = W X + ε``, ``ε ~ N(0, Σ_ε)``, ``W`` of shape ``(d, p)``: every game
  has a closed form (the brief's exact ground truth).
- :class:`GaussianMLP` — a torch MLP with a mean head and a Cholesky head (``full_cov=True``) or its
  diagonal twin (``full_cov=False``), trained by Gaussian negative log-likelihood with early stopping,
  saved and loaded as one self-contained file.
- :func:`ngboost_predictor` — NGBoost's ``MultivariateNormal`` as a ``X → (mean, cov)`` callable.
- :class:`SamplerModel` / :class:`ARGARCHSampler` — ``sampler(context) -> paths (n_samples, horizon)``,
  the interface a time-series foundation model (e.g. Chronos) plugs into; tested on a local AR(1)/GARCH(1,1).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np

from entropyshap.entropy import cholesky
from paperworks.utils import check_float, check_int

log = logging.getLogger(__name__)


def _matrix(a, name: str, ndim: int = 2, *, finite: bool = True) -> np.ndarray:
    if isinstance(a, (str, bytes)):
        raise TypeError(f"{name} must be an array of numbers, got {type(a).__name__}")
    a = np.asarray(a)
    if a.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be numeric, got dtype {a.dtype}")
    a = a.astype(float)
    if a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {a.shape}")
    if finite and not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return a


class LinearGaussianModel:
    """``Y | X = x ~ N(W x, Σ_ε)`` with ``W`` of shape ``(d, p)`` and ``Σ_ε`` SPD ``(d, d)``.

    With ``X_{−S}`` Gaussian with covariance ``Σ_X`` (fitted to the background), removing the features
    outside S gives ``Y | x_S ~ N(·, W_{−S} Σ_{−S} W_{−S}ᵀ + Σ_ε)`` (interventional: the marginal
    covariance of ``X_{−S}``; conditional: its covariance given ``x_S``), so every game is exact.

    Example:
        >>> m = LinearGaussianModel([[1.0, 0.0], [0.0, 1.0]], np.eye(2))
        >>> mean, cov = m(np.zeros((3, 2)))
    """

    def __init__(self, W, noise_cov):
        self.W = _matrix(W, "W")
        self.noise_cov = _matrix(noise_cov, "noise_cov")
        d = self.W.shape[0]
        if self.noise_cov.shape != (d, d):
            raise ValueError(f"noise_cov must be (d, d) = ({d}, {d}) to match W's {d} rows, got {self.noise_cov.shape}")
        cholesky(self.noise_cov, "noise_cov")

    @property
    def n_features(self) -> int:
        return self.W.shape[1]

    @property
    def n_outputs(self) -> int:
        return self.W.shape[0]

    def __call__(self, X):
        X = np.asarray(X, dtype=float)
        mean = X @ self.W.T
        return mean, np.broadcast_to(self.noise_cov, (len(X),) + self.noise_cov.shape)

    def removal_covariances(self, masks: np.ndarray, x_cov: np.ndarray, removal: str) -> np.ndarray:
        """``Cov(Y | x_S)`` for every coalition mask, batched ``(m, d, d)``."""
        p = self.n_features
        keep = ((np.asarray(masks)[:, None] >> np.arange(p)) & 1).astype(float)  # (m, p): in S
        out = 1.0 - keep
        if removal == "interventional":
            cx = out[:, :, None] * x_cov * out[:, None, :]
        else:  # conditional: Σ − Σ_{·S} Σ_SS⁻¹ Σ_{S·}, with the S block replaced by I outside S
            A = keep[:, :, None] * x_cov * keep[:, None, :] + np.eye(p) * out[:, None, :]
            right = keep[:, :, None] * x_cov  # Σ_{S·} padded with zeros
            cx = x_cov - np.einsum("pq,mqr->mpr", x_cov, keep[:, :, None] * np.linalg.solve(A, right))
            cx = 0.5 * (cx + np.swapaxes(cx, 1, 2))
        return np.einsum("ip,mpq,jq->mij", self.W, cx, self.W) + self.noise_cov


# torch MLP ---------------------------------------------------------------------------------------------

def _torch():
    import torch

    return torch


class GaussianMLP:
    """MLP ``x → (μ(x), Σ(x))`` with a Cholesky head (``full_cov=True``) or a diagonal head.

    ``Σ = L Lᵀ``, ``L`` lower triangular with ``softplus`` diagonal (+1e-4) and free off-diagonal
    entries; the diagonal twin keeps only the diagonal. Trained by Gaussian NLL (Adam, early stopping
    on a validation split). ``model(X)`` returns numpy ``(mean (n, d), cov (n, d, d))``.
    """

    def __init__(self, n_features: int, n_outputs: int, *, hidden: int = 64, full_cov: bool = True,
                 seed: int = 0, device: str = "cpu"):
        torch = _torch()
        self.n_features = check_int(n_features, "n_features")
        self.n_outputs = check_int(n_outputs, "n_outputs")
        self.hidden = check_int(hidden, "hidden")
        if not isinstance(full_cov, bool):
            raise TypeError(f"full_cov must be a bool, got {type(full_cov).__name__}")
        self.full_cov = full_cov
        self.device = device
        d = self.n_outputs
        self.n_chol = d * (d + 1) // 2 if full_cov else d
        torch.manual_seed(int(seed))
        self.net = torch.nn.Sequential(
            torch.nn.Linear(self.n_features, hidden), torch.nn.SiLU(),
            torch.nn.Linear(hidden, hidden), torch.nn.SiLU(),
            torch.nn.Linear(hidden, d + self.n_chol)).to(device)
        self.x_mean = np.zeros(self.n_features)
        self.x_scale = np.ones(self.n_features)
        self.history_: dict = {}

    def _chol(self, out):
        torch = _torch()
        d = self.n_outputs
        mean, raw = out[:, :d], out[:, d:]
        L = torch.zeros(out.shape[0], d, d, dtype=out.dtype, device=out.device)
        if self.full_cov:
            rows, cols = torch.tril_indices(d, d, device=out.device)
            L[:, rows, cols] = raw
            diag = torch.arange(d, device=out.device)
            L[:, diag, diag] = torch.nn.functional.softplus(L[:, diag, diag]) + 1e-4
        else:
            diag = torch.arange(d, device=out.device)
            L[:, diag, diag] = torch.nn.functional.softplus(raw) + 1e-4
        return mean, L

    def _forward(self, X):
        torch = _torch()
        x = torch.as_tensor((np.asarray(X, dtype=float) - self.x_mean) / self.x_scale, dtype=torch.float32,
                            device=self.device)
        return self._chol(self.net(x))

    def __call__(self, X):
        torch = _torch()
        X = np.asarray(X, dtype=float)
        with torch.no_grad():
            means, covs = [], []
            for i in range(0, len(X), 65536):
                mean, L = self._forward(X[i:i + 65536])
                means.append(mean.double().cpu().numpy())
                Ld = L.double()
                covs.append((Ld @ Ld.transpose(1, 2)).cpu().numpy())
        return np.concatenate(means), np.concatenate(covs)

    def fit(self, X, Y, *, epochs: int = 200, batch_size: int = 512, lr: float = 3e-3, patience: int = 20,
            val_fraction: float = 0.2, seed: int = 0):
        """Gaussian NLL training with early stopping on a validation split (the best epoch is kept)."""
        torch = _torch()
        X = _matrix(X, "X")
        Y = _matrix(Y, "Y")
        if X.shape[1] != self.n_features or Y.shape[1] != self.n_outputs or len(X) != len(Y):
            raise ValueError(f"X must be (n, {self.n_features}) and Y (n, {self.n_outputs}), got {X.shape}, {Y.shape}")
        epochs = check_int(epochs, "epochs")
        val_fraction = check_float(val_fraction, "val_fraction", minimum=0.01, maximum=0.9)
        self.x_mean, self.x_scale = X.mean(0), X.std(0) + 1e-12
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(X))
        n_val = max(1, int(val_fraction * len(X)))
        va, tr = perm[:n_val], perm[n_val:]
        xs = torch.as_tensor((X - self.x_mean) / self.x_scale, dtype=torch.float32, device=self.device)
        ys = torch.as_tensor(Y, dtype=torch.float32, device=self.device)
        opt = torch.optim.Adam(self.net.parameters(), lr=lr)
        gen = torch.Generator().manual_seed(int(seed))

        def nll(idx):
            mean, L = self._chol(self.net(xs[idx]))
            dist = torch.distributions.MultivariateNormal(mean, scale_tril=L)
            return -dist.log_prob(ys[idx]).mean()

        best, best_state, bad, hist = np.inf, None, 0, []
        tr_t, va_t = torch.as_tensor(tr), torch.as_tensor(va)
        for epoch in range(epochs):
            self.net.train()
            order = tr_t[torch.randperm(len(tr_t), generator=gen)]
            for i in range(0, len(order), batch_size):
                loss = nll(order[i:i + batch_size])
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"GaussianMLP.fit: NaN/inf loss at epoch {epoch}, step {i // batch_size}")
                opt.zero_grad()
                loss.backward()
                opt.step()
            self.net.eval()
            with torch.no_grad():
                v = float(nll(va_t))
            hist.append(v)
            if v < best - 1e-4:
                best, bad = v, 0
                best_state = {k: t.detach().clone() for k, t in self.net.state_dict().items()}
            else:
                bad += 1
                if bad >= patience:
                    break
        self.net.load_state_dict(best_state)
        self.net.eval()
        self.history_ = {"val_nll": hist, "best_val_nll": best, "epochs": len(hist)}
        return self

    def save(self, path) -> Path:
        """One self-contained file: weights, architecture and the input standardisation."""
        torch = _torch()
        path = Path(path)
        torch.save({"state": self.net.state_dict(), "n_features": self.n_features, "n_outputs": self.n_outputs,
                    "hidden": self.hidden, "full_cov": self.full_cov,
                    "x_mean": torch.as_tensor(self.x_mean), "x_scale": torch.as_tensor(self.x_scale)}, path)
        return path

    @classmethod
    def load(cls, path, device: str = "cpu") -> GaussianMLP:
        torch = _torch()
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no GaussianMLP file at {path}")
        blob = torch.load(path, map_location=device, weights_only=True)
        m = cls(int(blob["n_features"]), int(blob["n_outputs"]), hidden=int(blob["hidden"]),
                full_cov=bool(blob["full_cov"]), device=device)
        m.net.load_state_dict(blob["state"])
        m.net.eval()
        m.x_mean, m.x_scale = blob["x_mean"].numpy(), blob["x_scale"].numpy()
        return m


def ngboost_predictor(ngb) -> Callable:
    """NGBoost with a ``MultivariateNormal`` distribution as ``X → (mean, cov)``."""
    if not hasattr(ngb, "pred_dist"):
        raise TypeError(f"ngb must be a fitted NGBRegressor, got {type(ngb).__name__}")

    def predict(X):
        dist = ngb.pred_dist(np.asarray(X, dtype=float))
        if not hasattr(dist, "cov"):
            raise TypeError("ngb's distribution has no covariance: fit it with Dist=MultivariateNormal(d)")
        return np.asarray(dist.mean(), dtype=float), np.asarray(dist.cov, dtype=float)

    return predict


# samplers ----------------------------------------------------------------------------------------------

class SamplerModel:
    """A path sampler ``sampler(context) -> paths (n_samples, horizon)`` as an explainable model.

    The features are the context values (``p`` of them); removing a feature replaces it by the
    background contexts' values, and the predictive distribution is the pooled set of paths over those
    contexts (the mixture), so coalition entropies come from samples (``estimator="knn"``).
    """

    def __init__(self, sampler: Callable[[np.ndarray], np.ndarray], *, horizon: int):
        if not callable(sampler):
            raise TypeError(f"sampler must be callable, got {type(sampler).__name__}")
        self.sampler = sampler
        self.horizon = check_int(horizon, "horizon")

    def sample(self, context: np.ndarray) -> np.ndarray:
        paths = np.asarray(self.sampler(context))
        if paths.ndim != 2 or paths.shape[1] != self.horizon or paths.shape[0] < 1:
            raise ValueError(f"sampler must return paths of shape (n_samples, horizon={self.horizon}), "
                             f"got {paths.shape}")
        if not np.all(np.isfinite(paths)):
            raise ValueError("sampler returned NaN or inf paths")
        return paths.astype(float)


class ARGARCHSampler:
    """AR(1) with GARCH(1,1) errors: ``y_t = a y_{t−1} + σ_t z_t``, ``σ_t² = ω + α (y_{t−1} − a y_{t−2})² + β σ_{t−1}²``.

    ``alpha = beta = 0`` is a plain AR(1) with noise variance ``omega``. The variance recursion starts
    at its unconditional value at the start of the context. ``sampler(context)`` returns
    ``(n_samples, horizon)`` paths; :meth:`simulate` draws stationary series for backgrounds.
    """

    def __init__(self, a: float = 0.8, omega: float = 1.0, alpha: float = 0.0, beta: float = 0.0, *,
                 horizon: int = 3, n_samples: int = 64, seed: int = 0):
        self.a = check_float(a, "a", minimum=-0.999, maximum=0.999)
        self.omega = check_float(omega, "omega", minimum=1e-12)
        self.alpha = check_float(alpha, "alpha", minimum=0.0)
        self.beta = check_float(beta, "beta", minimum=0.0)
        if self.alpha + self.beta >= 1:
            raise ValueError(f"alpha + beta must be < 1 (stationary variance), got {self.alpha + self.beta}")
        self.horizon = check_int(horizon, "horizon")
        self.n_samples = check_int(n_samples, "n_samples")
        self.rng = np.random.default_rng(seed)

    @property
    def uncond_var(self) -> float:
        return self.omega / (1 - self.alpha - self.beta)

    def _sig2(self, context):
        s2, prev = self.uncond_var, None
        for y in context:
            if prev is not None:
                s2 = self.omega + self.alpha * (y - self.a * prev) ** 2 + self.beta * s2
            prev = y
        return s2

    def __call__(self, context) -> np.ndarray:
        c = np.asarray(context, dtype=float)
        n = self.n_samples
        y_prev = np.full(n, c[-1])
        innov = np.full(n, c[-1] - self.a * c[-2]) if len(c) > 1 else np.zeros(n)
        s2 = np.full(n, self._sig2(c))
        out = np.empty((n, self.horizon))
        for h in range(self.horizon):
            s2 = self.omega + self.alpha * innov ** 2 + self.beta * s2
            innov = np.sqrt(s2) * self.rng.standard_normal(n)
            y_prev = self.a * y_prev + innov
            out[:, h] = y_prev
        return out

    def simulate(self, n_series: int, length: int, rng: np.random.Generator, burn: int = 200) -> np.ndarray:
        """``(n_series, length)`` stationary stretches (after ``burn`` steps)."""
        y = np.zeros(n_series)
        innov, s2 = np.zeros(n_series), np.full(n_series, self.uncond_var)
        out = np.empty((n_series, length))
        for t in range(burn + length):
            s2 = self.omega + self.alpha * innov ** 2 + self.beta * s2
            innov = np.sqrt(s2) * rng.standard_normal(n_series)
            y = self.a * y + innov
            if t >= burn:
                out[:, t - burn] = y
        return out


__all__ = ["LinearGaussianModel", "GaussianMLP", "ngboost_predictor", "SamplerModel", "ARGARCHSampler"]
