"""``EntropyExplainer``: Shapley values of entropy games over the input features, in shap's idiom.

For an explained point x and a coalition S of features, removing the features outside S turns the
model's predictive distribution into a **mixture** over the removed features' values, and the games are

    G1 marginal   v_j(S) = H(Y_j | X_S = x_S)                      (one game per output j)
    G2 ordered    v_j(S) = H(Y_j | Y_<j, X_S = x_S)                (sums over j to G3; depends on order)
    G3 joint      v(S)   = H(Y | X_S = x_S)
    TC            v(S)   = Σ_j H(Y_j | X_S = x_S) − H(Y | X_S = x_S)   (conditional total correlation)

Shapley linearity gives the chain rule ``φ_joint = Σ_j φ_marg,j − φ_TC`` exactly when TC is computed as
that difference (closed form, Monte Carlo); with the separate KSG estimate of TC (``estimator="knn"``)
the residual measures the estimators' disagreement. Values are Shapley values of an *entropy*, so a
feature that reduces uncertainty gets a **negative** value; ``base_values`` is ``v(∅)`` (all features
removed). The global variant averages the local games over the explained points.

The game definitions are inferred from the paper's abstract and the project brief (no paper text or
code is public): in particular G2's form ``H(Y_j | Y_<j, X_S)`` and the TC cross term are our reading.

Removal:
    ``interventional``: the removed features take the background rows' values (the predictive
    distributions are mixed over background rows). ``conditional``: they are drawn from the Gaussian
    fitted to the background (its mean and covariance) conditioned on ``x_S`` (Gaussian X only).

Estimators:
    ``gaussian``: exact closed form, for :class:`~entropyshap.models.LinearGaussianModel` (the removed
    features are Gaussian with the background's moments, so ``Y | x_S`` is Gaussian).
    ``mc``: Monte-Carlo entropy of the Gaussian mixture (common random numbers across coalitions).
    ``knn``: Kozachenko–Leonenko entropies and KSG total correlation from mixture samples (the only
    choice for a path sampler).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

from entropyshap.entropy import gaussian_columns, knn_columns, mixture_columns
from entropyshap.models import LinearGaussianModel, SamplerModel, _matrix, ngboost_predictor
from entropyshap.shapley import coalition_matrix, permutation_shapley, shapley_from_table
from paperworks.utils import check_int

log = logging.getLogger(__name__)

GAMES = ("joint", "marginal", "ordered", "tc")
REMOVALS = ("interventional", "conditional")
ESTIMATORS = ("auto", "gaussian", "mc", "knn")
ALGORITHMS = ("exact", "permutation")
#: exact enumeration is refused above this many features (suggests permutation sampling instead)
MAX_EXACT_FEATURES = 16


def _choice(value, name, options):
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def _clean_background(background) -> tuple[np.ndarray, int]:
    b = _matrix(background, "background", finite=False)  # NaN rows are skipped and counted below
    if b.shape[0] == 0 or b.shape[1] == 0:
        raise ValueError(f"background must be a non-empty 2-D array (n_rows, p), got shape {b.shape}")
    ok = np.all(np.isfinite(b), axis=1)
    skipped = int(np.sum(~ok))
    if skipped:
        bad = np.flatnonzero(~ok)
        warnings.warn(f"background: skipped {skipped} row(s) with NaN/inf (rows {bad[:10].tolist()}"
                      f"{' …' if skipped > 10 else ''})", stacklevel=3)
    b = b[ok]
    if len(b) < 2:
        raise ValueError(f"background needs at least 2 finite rows, got {len(b)} (skipped {skipped})")
    return b, skipped


class EntropyExplainer:
    """Shapley attribution of a multivariate predictive distribution's entropy to the input features.

    Args:
        model: a :class:`LinearGaussianModel`, any callable ``X (n, p) → (mean (n, d), cov (n, d, d))``
            (e.g. :class:`GaussianMLP`), a fitted NGBoost ``MultivariateNormal`` regressor, or a
            :class:`SamplerModel`.
        background: ``(n_rows, p)`` rows defining feature removal; rows with NaN/inf are skipped and
            counted (``n_skipped_background_``).
        game: ``"joint"`` (G3), ``"marginal"`` (G1), ``"ordered"`` (G2) or ``"tc"`` (the cross term).
        removal: ``"interventional"`` or ``"conditional"`` (Gaussian fitted to the background).
        estimator: ``"auto"`` (closed form for a linear-Gaussian model, ``mc`` for Gaussian
            predictors, ``knn`` for samplers), ``"gaussian"``, ``"mc"`` or ``"knn"``.
        algorithm: ``"exact"`` (2^p coalitions, p ≤ 16) or ``"permutation"`` (antithetic).
        seed: seed of the Monte-Carlo draws (shared across coalitions: common random numbers).
        n_components: background rows (or conditional draws) per mixture (mc/knn; default 128).
        n_mc: Monte-Carlo draws per mixture entropy (default 512).
        n_samples: samples per coalition for ``knn`` (default 2000; ≥ 200).
        k: neighbours for the kNN estimators (default 4).
        n_permutations: permutations for ``algorithm="permutation"`` (default 64).

    Calling ``explainer(X)`` returns a ``shap.Explanation`` with values ``(n, p)`` for ``joint``/``tc``
    and ``(n, p, d)`` for ``marginal``/``ordered``; ``base_values`` is ``v(∅)``.

    Example:
        >>> model = LinearGaussianModel(W, noise_cov)           # W: (d, p)
        >>> ex = EntropyExplainer(model, background, game="joint")
        >>> ex(X).values                                         # (n, p), negative = reduces entropy
    """

    def __init__(self, model, background, *, game: str = "joint", removal: str = "interventional",
                 estimator: str = "auto", algorithm: str = "exact", seed: int | None = None,
                 n_components: int = 128, n_mc: int = 512, n_samples: int = 2000, k: int = 4,
                 n_permutations: int = 64):
        self.game = _choice(game, "game", GAMES)
        self.removal = _choice(removal, "removal", REMOVALS)
        self.estimator = _choice(estimator, "estimator", ESTIMATORS)
        self.algorithm = _choice(algorithm, "algorithm", ALGORITHMS)
        self.n_components = check_int(n_components, "n_components", minimum=1)
        self.n_mc = check_int(n_mc, "n_mc", minimum=16)
        self.k = check_int(k, "k", minimum=1)
        self.n_samples = check_int(n_samples, "n_samples", minimum=1)
        if self.n_samples < max(200, 20 * self.k):
            raise ValueError(f"n_samples must be at least max(200, 20 k) = {max(200, 20 * self.k)} for the kNN "
                             f"estimators (they are badly biased with few samples), got {self.n_samples}")
        self.n_permutations = check_int(n_permutations, "n_permutations", minimum=2)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
        self.seed = seed
        self.background, self.n_skipped_background_ = _clean_background(background)
        self.p = self.background.shape[1]
        # the model's kind
        if isinstance(model, SamplerModel):
            self.kind, self.predict = "sampler", None
        elif isinstance(model, LinearGaussianModel):
            self.kind, self.predict = "linear", model
            if model.n_features != self.p:
                raise ValueError(f"background has {self.p} columns but the model's W has {model.n_features}")
        elif hasattr(model, "pred_dist"):
            self.kind, self.predict = "gaussian", ngboost_predictor(model)
        elif callable(model):
            self.kind, self.predict = "gaussian", model
        else:
            raise TypeError(f"model must be callable (X → (mean, cov)), a LinearGaussianModel or a SamplerModel, "
                            f"got {type(model).__name__}")
        self.model = model
        if self.estimator == "auto":
            self.estimator_ = {"linear": "gaussian", "gaussian": "mc", "sampler": "knn"}[self.kind]
        else:
            self.estimator_ = self.estimator
        if self.estimator_ == "gaussian" and self.kind != "linear":
            raise ValueError("estimator='gaussian' (closed form) needs a LinearGaussianModel; use 'mc' or 'knn'")
        if self.kind == "sampler" and self.estimator_ != "knn":
            raise ValueError("a SamplerModel only gives samples: use estimator='knn' (or 'auto')")
        if self.removal == "conditional" and self.kind == "sampler":
            raise ValueError("removal='conditional' needs Gaussian features; a sampler's context uses 'interventional'")
        if self.algorithm == "exact" and self.p > MAX_EXACT_FEATURES:
            raise ValueError(f"p = {self.p} features is too many for exact enumeration (2^{self.p} coalitions; "
                             f"limit {MAX_EXACT_FEATURES}): use algorithm='permutation'")
        self.x_mean = self.background.mean(0)
        self.x_cov = np.atleast_2d(np.cov(self.background, rowvar=False))
        self.d = self._n_outputs()
        # common random numbers, drawn once
        rng = np.random.default_rng(seed)
        K = min(self.n_components, len(self.background))
        self.rows_ = rng.choice(len(self.background), size=K, replace=False)
        self.eps_x_ = rng.standard_normal((max(self.n_components, 1), self.p))
        self.eps_ = rng.standard_normal((self.n_mc, self.d))
        self.comp_ = np.arange(self.n_mc) % K
        self.eps_knn_ = rng.standard_normal((self.n_samples, self.d))
        self._rng = rng

    # model plumbing ------------------------------------------------------------------------------------

    def _n_outputs(self) -> int:
        if self.kind == "sampler":
            return self.model.horizon
        mean, cov = self._predict(self.background[:2])
        return mean.shape[1]

    def _predict(self, Z):
        out = self.predict(Z)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("model(X) must return a tuple (mean (n, d), cov (n, d, d))")
        mean, cov = (np.asarray(a, dtype=float) for a in out)
        n = len(Z)
        if mean.ndim != 2 or mean.shape[0] != n or cov.shape != (n, mean.shape[1], mean.shape[1]):
            raise ValueError(f"model(X) must return mean (n, d) and cov (n, d, d) for n = {n}, "
                             f"got {mean.shape} and {cov.shape}")
        return mean, cov

    def _check_X(self, X) -> np.ndarray:
        if isinstance(X, (str, bytes)):
            raise TypeError(f"X must be an array of numbers, got {type(X).__name__}")
        X = np.asarray(X)
        if X.dtype.kind not in "fiu":
            raise TypeError(f"X must be numeric, got dtype {X.dtype}")
        X = np.atleast_2d(X.astype(float))
        if X.ndim != 2 or X.shape[1] != self.p:
            raise ValueError(f"X must have {self.p} columns (the background's width), got shape {X.shape}")
        if not np.all(np.isfinite(X)):
            raise ValueError("X must be finite (found NaN or inf)")
        return X

    def _fill(self, x: np.ndarray, mask: int) -> np.ndarray:
        """``(K, p)`` rows: x on the coalition, the removed features from background rows or conditional draws."""
        keep = ((mask >> np.arange(self.p)) & 1).astype(bool)
        if self.removal == "interventional":
            Z = self.background[self.rows_].copy()
        else:
            K = len(self.rows_)
            S, R = np.flatnonzero(keep), np.flatnonzero(~keep)
            mu, C = self.x_mean.copy(), self.x_cov
            Z = np.broadcast_to(mu, (K, self.p)).copy()
            if len(R):
                cond_cov = C[np.ix_(R, R)]
                m = mu[R]
                if len(S):
                    G = np.linalg.solve(C[np.ix_(S, S)], C[np.ix_(S, R)])
                    m = m + (x[S] - mu[S]) @ G
                    cond_cov = cond_cov - C[np.ix_(R, S)] @ G
                Lc = np.linalg.cholesky(0.5 * (cond_cov + cond_cov.T) + 1e-12 * np.eye(len(R)))
                Z[:, R] = m + self.eps_x_[:K, R] @ Lc.T
        Z[:, keep] = x[keep]
        return Z

    # coalition values --------------------------------------------------------------------------------

    def coalition_values(self, X, masks) -> np.ndarray:
        """Entropy columns ``(len(masks), n, 2d + 2)`` for each coalition mask and explained row.

        Columns: joint, marginals (d), ordered (d), TC — see :mod:`entropyshap.entropy`.
        """
        X = self._check_X(X)
        masks = np.asarray(masks, dtype=np.int64)
        if self.estimator_ == "gaussian":
            covs = self.model.removal_covariances(masks, self.x_cov, self.removal)
            cols = gaussian_columns(covs)
            return np.broadcast_to(cols[:, None], (len(masks), len(X), cols.shape[-1])).copy()
        out = np.empty((len(masks), len(X), 2 * self.d + 2))
        for i, x in enumerate(X):
            if self.estimator_ == "mc":
                K = len(self.rows_)
                chunk = max(1, int(4e6 // (self.n_mc * K * self.d)))
                for a in range(0, len(masks), chunk):
                    ms = masks[a:a + chunk]
                    Z = np.concatenate([self._fill(x, int(m)) for m in ms])
                    mean, cov = self._predict(Z)
                    out[a:a + len(ms), i] = mixture_columns(mean.reshape(len(ms), K, self.d),
                                                            cov.reshape(len(ms), K, self.d, self.d),
                                                            self.eps_, self.comp_)
            else:
                for a, m in enumerate(masks):
                    out[a, i] = knn_columns(self._mixture_samples(x, int(m)), self.k)
        return out

    def _mixture_samples(self, x, mask) -> np.ndarray:
        Z = self._fill(x, mask)
        if self.kind == "sampler":
            return np.concatenate([self.model.sample(z) for z in Z])
        comp = np.arange(self.n_samples) % len(Z)
        mean, cov = self._predict(Z)
        L = np.linalg.cholesky(cov)
        return mean[comp] + np.einsum("mij,mj->mi", L[comp], self.eps_knn_)

    # Shapley values ------------------------------------------------------------------------------------

    def shapley_all(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Shapley values of every column ``(n, p, 2d + 2)`` and the base values ``v(∅)`` ``(n, 2d + 2)``."""
        X = self._check_X(X)
        if self.algorithm == "exact":
            masks = np.arange(2 ** self.p, dtype=np.int64)
            table = self.coalition_values(X, masks)
            phi = shapley_from_table(table, self.p)
            base = table[0]
        else:
            rng = np.random.default_rng(self._rng.integers(2 ** 63))
            phi = permutation_shapley(lambda m: self.coalition_values(X, m), self.p, self.n_permutations, rng)
            base = self.coalition_values(X, np.array([0]))[0]
        return np.moveaxis(phi, 0, 1), base

    def _select(self, cols: np.ndarray) -> np.ndarray:
        d = self.d
        return {"joint": cols[..., 0], "marginal": cols[..., 1:d + 1], "ordered": cols[..., d + 1:2 * d + 1],
                "tc": cols[..., 2 * d + 1]}[self.game]

    def __call__(self, X):
        import shap

        X = self._check_X(X)
        phi, base = self.shapley_all(X)
        names = [f"x{j + 1}" for j in range(self.p)]
        outputs = None if self.game in ("joint", "tc") else [f"Y{j + 1}" for j in range(self.d)]
        return shap.Explanation(values=self._select(phi), base_values=self._select(base), data=X,
                                feature_names=names, output_names=outputs)

    def global_values(self, X) -> np.ndarray:
        """Global attributions: the local values averaged over the rows of ``X`` (``(p,)`` or ``(p, d)``)."""
        phi, _ = self.shapley_all(X)
        return self._select(phi).mean(axis=0)


def decompose(explainer: EntropyExplainer, X) -> dict:
    """The chain-rule decomposition ``φ_joint = Σ_j φ_marg,j − φ_TC`` at the rows of ``X``.

    Returns a dict: ``joint`` ``(n, p)``, ``marginal`` ``(n, p, d)``, ``ordered`` ``(n, p, d)``, ``tc``
    ``(n, p)`` and ``residual = joint − (Σ_j marginal − tc)`` ``(n, p)`` (≈ 1e-15 for closed form and
    Monte Carlo; the estimators' disagreement for ``knn``, whose TC is the separate KSG estimate).
    """
    if not isinstance(explainer, EntropyExplainer):
        raise TypeError(f"explainer must be an EntropyExplainer, got {type(explainer).__name__}")
    phi, _ = explainer.shapley_all(X)
    d = explainer.d
    joint, marg, ordered, tc = phi[..., 0], phi[..., 1:d + 1], phi[..., d + 1:2 * d + 1], phi[..., 2 * d + 1]
    return {"joint": joint, "marginal": marg, "ordered": ordered, "tc": tc,
            "residual": joint - (marg.sum(-1) - tc)}


__all__ = ["EntropyExplainer", "decompose", "GAMES", "coalition_matrix"]
