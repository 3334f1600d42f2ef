"""CF-free class-IL learners in scikit-learn's idiom: ``fit`` (joint), ``partial_fit`` (one task).

Each learner keeps per-task state that later tasks never touch ("CF-optimal": no forgetting by
construction). ``fit(X, y)`` is the *same family* fitted jointly on all classes at once, the
reference of the TC gap's reading (a). What each learner streams:

- :class:`NCM`: Euclidean nearest class mean (no covariance). Class-IL equals joint exactly.
- :class:`SLDA`: class means and the *pooled* within-class scatter, updated task by task (Hayes &
  Kanan's streaming LDA; the covariance is shared and keeps growing), shrunk at test time (Ledoit–Wolf
  from streamed statistics, or a fixed value). Class-IL equals joint exactly.
- :class:`FeCAM`: class mean and a per-class shrunk covariance, frozen with its task, normalised to unit
  diagonal as FeCAM does (so that classes' distances are comparable); score = −squared Mahalanobis
  distance (FeCAM's classifier without the Tukey transform). Class-IL equals joint.
- :class:`RanPAC`: a fixed random ReLU projection, then the Gram matrix G = Σ hhᵀ and C = Σ h yᵀ
  streamed; W = (G + λI)⁻¹C ("RanPAC-lite": no first-session adaptation, fixed λ). Class-IL equals joint.
- :class:`TaskHeadCE`: a softmax cross-entropy head per task, trained on that task only and frozen;
  class-IL scores are the concatenated logits (the paper's "slope learners"). Its joint reference is one
  softmax head over all classes with the same regularisation and solver: the two differ, and the
  difference is the task confusion a discriminative learner cannot remove.

Every learner saves to one file (``save(path)``, ``Cls.load(path)``, ``torch.load(weights_only=True)``).
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from tcgap.margin import ledoit_wolf_coefficient


def _key(c):
    return c.item() if isinstance(c, np.generic) else c


def _check_shrinkage(s, name="shrinkage"):
    if s is None or s == "ledoit_wolf" and isinstance(s, str):
        return
    if isinstance(s, str):
        raise ValueError(f"{name} must be 'ledoit_wolf', a float in [0, 1] or None, got {s!r}")
    if isinstance(s, bool) or not isinstance(s, numbers.Real) or not (np.isfinite(s) and 0 <= s <= 1):
        raise ValueError(f"{name} must be 'ledoit_wolf', a float in [0, 1] or None, got {s!r}")


def _positive(v, name):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {v!r}")


def _shrink(scatter, n, sum_r4, shrinkage):
    d = scatter.shape[0]
    S = scatter / n
    if shrinkage is None:
        if n <= d:
            raise ValueError(f"shrinkage=None needs more samples than dimensions (n={n}, d={d})")
        return S, 0.0
    a = ledoit_wolf_coefficient(scatter, n, sum_r4) if isinstance(shrinkage, str) else float(shrinkage)
    out = (1 - a) * S
    out.flat[:: d + 1] += a * np.trace(S) / d
    return out, a


class _CFFree(ClassifierMixin, BaseEstimator):
    """Shared machinery: task bookkeeping, validation, class-IL / task-IL prediction, save/load."""

    # subclasses: _learn(X, y) adds one task's classes; _finalise() builds test-time state; _scores(X)

    def fit(self, X, y):
        """The joint reference: all classes at once (one "task")."""
        self._validate_params_()
        X, y = validate_data(self, X, y, reset=True)
        check_classification_targets(y)
        self._reset(X.shape[1])
        self.classes_ = np.unique(y)
        self.tasks_ = [self.classes_.copy()]
        self._learn(X, y)
        self._finalise()
        return self

    def partial_fit(self, X, y, classes=None):
        """Learn one task's classes; earlier tasks' heads/statistics are frozen. A class may appear in one task only.

        ``classes`` (scikit-learn's signature) is not needed: class-IL learns each task's classes as they come.
        """
        self._validate_params_()
        first = not hasattr(self, "classes_")
        X, y = validate_data(self, X, y, reset=first)
        check_classification_targets(y)
        new = np.unique(y)
        if first:
            self._reset(X.shape[1])
            self.tasks_ = []
            seen = new[:0]
        else:
            seen = self.classes_
        both = np.intersect1d(new, seen)
        if both.size:
            raise ValueError(f"class(es) {both.tolist()} already belong to an earlier task: a class must appear "
                             "in one task only (class-IL tasks are disjoint)")
        self.tasks_.append(new)
        self.classes_ = np.sort(np.concatenate([seen, new]))
        self._learn(X, y)
        self._finalise()
        return self

    def _validate_params_(self):
        pass

    def decision_function(self, X):
        """Scores ``(n, n_classes)`` in ``classes_`` order (``(n,)`` for two classes, as scikit-learn does)."""
        s = self.class_scores(X)
        return s[:, 1] - s[:, 0] if s.shape[1] == 2 else s

    def class_scores(self, X):
        check_is_fitted(self, "classes_")
        X = validate_data(self, X, reset=False)
        return self._scores(X)

    def predict(self, X):
        """Class-IL prediction: the arg-max over every class seen (no task id)."""
        s = self.class_scores(X)
        return self.classes_[np.argmax(s, 1)]

    def predict_task_il(self, X, task):
        """Task-IL prediction: the arg-max over the classes of each sample's given task (index into ``tasks_``)."""
        s = self.class_scores(X)
        task = np.asarray(task)
        if task.shape != (s.shape[0],):
            raise ValueError(f"task must give one task index per row of X, got shape {task.shape}")
        if task.size and (task.min() < 0 or task.max() >= len(self.tasks_)):
            raise ValueError(f"task indices must be in [0, {len(self.tasks_)}), got {task.min()}..{task.max()}")
        mask = np.zeros((len(self.tasks_), self.classes_.size), bool)
        for t, cls in enumerate(self.tasks_):
            mask[t, np.searchsorted(self.classes_, cls)] = True
        return self.classes_[np.argmax(np.where(mask[task], s, -np.inf), 1)]

    # save / load ----------------------------------------------------------------------------

    def _state(self) -> dict:
        raise NotImplementedError

    def save(self, path) -> None:
        """One self-contained file: parameters, classes, tasks and the fitted state (tensors)."""
        import torch

        check_is_fitted(self, "classes_")
        if self.classes_.dtype.kind not in "iu":
            raise TypeError("save needs integer class labels")
        state = {k: torch.as_tensor(np.asarray(v)) for k, v in self._state().items()}
        torch.save({"cls": type(self).__name__, "params": self.get_params(), "n_features_in": int(self.n_features_in_),
                    "classes": torch.as_tensor(self.classes_), "tasks": [torch.as_tensor(t) for t in self.tasks_],
                    "state": state}, path)

    @classmethod
    def load(cls, path):
        import torch

        doc = torch.load(path, weights_only=True)
        if doc.get("cls") != cls.__name__:
            raise ValueError(f"{path} holds a {doc.get('cls')!r}, not a {cls.__name__}")
        self = cls(**doc["params"])
        self.n_features_in_ = doc["n_features_in"]
        self.classes_ = doc["classes"].numpy()
        self.tasks_ = [t.numpy() for t in doc["tasks"]]
        self._set_state({k: v.numpy() for k, v in doc["state"].items()})
        self._finalise()
        return self

    def _means(self):
        return np.stack([self.sums_[c] / self.counts_[c] for c in self.classes_])


class NCM(_CFFree):
    """Nearest class mean, **Euclidean** (score = −‖x − μ_c‖²)."""

    def _reset(self, d):
        self.sums_, self.counts_ = {}, {}

    def _learn(self, X, y):
        for c in np.unique(y):
            self.sums_[_key(c)] = X[y == c].sum(0)
            self.counts_[_key(c)] = int((y == c).sum())

    def _finalise(self):
        self.means_ = np.stack([self.sums_[_key(c)] / self.counts_[_key(c)] for c in self.classes_])

    def _scores(self, X):
        return -((X[:, None, :] - self.means_[None]) ** 2).sum(-1)

    def _state(self):
        return {"sums": np.stack([self.sums_[_key(c)] for c in self.classes_]),
                "counts": np.array([self.counts_[_key(c)] for c in self.classes_])}

    def _set_state(self, st):
        self.sums_ = {_key(c): s for c, s in zip(self.classes_, st["sums"])}
        self.counts_ = {_key(c): int(n) for c, n in zip(self.classes_, st["counts"])}


class SLDA(NCM):
    """Streaming LDA: class means + pooled within-class covariance, shrunk (``"ledoit_wolf"`` or a float).

    score_c(x) = μ_cᵀΣ̂⁻¹x − ½ μ_cᵀΣ̂⁻¹μ_c (equal priors); Σ̂ = (1 − s)S_w + s·(tr S_w/d)·I.
    """

    def __init__(self, shrinkage="ledoit_wolf"):
        self.shrinkage = shrinkage

    def _validate_params_(self):
        _check_shrinkage(self.shrinkage)

    def _reset(self, d):
        super()._reset(d)
        self.scatter_, self.n_, self.sum_r4_ = np.zeros((d, d)), 0, 0.0

    def _learn(self, X, y):
        super()._learn(X, y)
        for c in np.unique(y):
            R = X[y == c] - X[y == c].mean(0)
            self.scatter_ += R.T @ R
            self.sum_r4_ += float(np.sum(np.sum(R * R, 1) ** 2))
        self.n_ += X.shape[0]

    def _finalise(self):
        super()._finalise()
        S, self.shrinkage_ = _shrink(self.scatter_, self.n_, self.sum_r4_, self.shrinkage)
        cf = cho_factor(S + 1e-12 * np.eye(S.shape[0]) * max(np.trace(S), 1e-300), lower=True)
        self.coef_ = cho_solve(cf, self.means_.T).T
        self.intercept_ = -0.5 * np.sum(self.coef_ * self.means_, 1)

    def _scores(self, X):
        return X @ self.coef_.T + self.intercept_

    def _state(self):
        return {**super()._state(), "scatter": self.scatter_, "n": np.array(self.n_), "sum_r4": np.array(self.sum_r4_)}

    def _set_state(self, st):
        super()._set_state(st)
        self.scatter_, self.n_, self.sum_r4_ = st["scatter"], int(st["n"]), float(st["sum_r4"])


class FeCAM(NCM):
    """Per-class shrunk covariance (frozen with the class's task); score = −(x − μ_c)ᵀΣ̂_c⁻¹(x − μ_c).

    ``normalize=True`` rescales each Σ̂_c to unit diagonal (D^{-1/2}Σ̂_cD^{-1/2}), FeCAM's normalisation.
    """

    def __init__(self, shrinkage="ledoit_wolf", normalize=True):
        self.shrinkage = shrinkage
        self.normalize = normalize

    def _validate_params_(self):
        _check_shrinkage(self.shrinkage)

    def _reset(self, d):
        super()._reset(d)
        self.covs_, self.shrinkages_ = {}, {}

    def _learn(self, X, y):
        super()._learn(X, y)
        for c in np.unique(y):
            R = X[y == c] - X[y == c].mean(0)
            S, a = _shrink(R.T @ R, R.shape[0], float(np.sum(np.sum(R * R, 1) ** 2)), self.shrinkage)
            if self.normalize:
                sd = np.sqrt(np.maximum(np.diag(S), 1e-12))
                S = S / np.outer(sd, sd)
            self.covs_[_key(c)], self.shrinkages_[_key(c)] = S, a

    def _finalise(self):
        super()._finalise()
        self.factors_ = []
        for c in self.classes_:
            S = self.covs_[_key(c)]
            self.factors_.append(cho_factor(S + 1e-10 * np.eye(S.shape[0]) * max(np.trace(S) / S.shape[0], 1e-12),
                                            lower=True))

    def _scores(self, X):
        out = np.empty((X.shape[0], self.classes_.size))
        for k, cf in enumerate(self.factors_):
            D = X - self.means_[k]
            out[:, k] = -np.sum(D * cho_solve(cf, D.T).T, 1)
        return out

    def _state(self):
        return {**super()._state(), "covs": np.stack([self.covs_[_key(c)] for c in self.classes_]),
                "shrinkages": np.array([self.shrinkages_[_key(c)] for c in self.classes_])}

    def _set_state(self, st):
        super()._set_state(st)
        self.covs_ = {_key(c): S for c, S in zip(self.classes_, st["covs"])}
        self.shrinkages_ = {_key(c): float(a) for c, a in zip(self.classes_, st["shrinkages"])}


class RanPAC(_CFFree):
    """RanPAC-lite: h = ReLU(xW_rp) with a fixed Gaussian W_rp (d × ``n_components``), streamed Gram ridge.

    W = (G + λI)⁻¹C with G = Σ hhᵀ, C = Σ h·onehot(y)ᵀ; score = hW. ``ridge`` is fixed (RanPAC picks it on
    a validation split; that step is left out).
    """

    def __init__(self, n_components=1000, ridge=1.0, random_state=0):
        self.n_components = n_components
        self.ridge = ridge
        self.random_state = random_state

    def _validate_params_(self):
        if isinstance(self.n_components, bool) or not isinstance(self.n_components, numbers.Integral) \
                or self.n_components < 1:
            raise ValueError(f"n_components must be a positive int, got {self.n_components!r}")
        _positive(self.ridge, "ridge")

    def _reset(self, d):
        rng = np.random.default_rng(self.random_state)
        self.projection_ = rng.standard_normal((d, self.n_components)) / np.sqrt(d)
        self.gram_ = np.zeros((self.n_components, self.n_components))
        self.targets_ = {}

    def _features(self, X):
        return np.maximum(X @ self.projection_, 0.0)

    def _learn(self, X, y):
        H = self._features(X)
        self.gram_ += H.T @ H
        for c in np.unique(y):
            self.targets_[_key(c)] = H[y == c].sum(0)

    def _finalise(self):
        C = np.stack([self.targets_[_key(c)] for c in self.classes_], 1)
        G = self.gram_ + self.ridge * np.eye(self.gram_.shape[0])
        self.coef_ = cho_solve(cho_factor(G, lower=True), C)

    def _scores(self, X):
        return self._features(X) @ self.coef_

    def _state(self):
        return {"projection": self.projection_, "gram": self.gram_,
                "targets": np.stack([self.targets_[_key(c)] for c in self.classes_])}

    def _set_state(self, st):
        self.projection_, self.gram_ = st["projection"], st["gram"]
        self.targets_ = {_key(c): t for c, t in zip(self.classes_, st["targets"])}


def softmax_loss_grad(Wb, Xa, Y, lam):
    """Mean softmax CE of logits Xa·Wbᵀ plus (λ/2)‖W‖² (bias column unpenalised) and its gradient."""
    Z = Xa @ Wb.T
    Z -= Z.max(1, keepdims=True)
    P = np.exp(Z)
    P /= P.sum(1, keepdims=True)
    n = Xa.shape[0]
    loss = -np.sum(Y * np.log(np.maximum(P, 1e-300))) / n + 0.5 * lam * np.sum(Wb[:, :-1] ** 2)
    G = (P - Y).T @ Xa / n
    G[:, :-1] += lam * Wb[:, :-1]
    return loss, G


def train_softmax(X, y, n_classes, *, C=1.0, solver="lbfgs", n_steps=200, lr=0.1, batch_size=32, clip=None,
                  seed=0, w0=None):
    """Multinomial logistic regression, mean CE + ‖W‖²/(2Cn) (scikit-learn's scaling), float64 numpy.

    ``solver="lbfgs"``: full batch to convergence (scipy's L-BFGS-B, ``n_steps`` iterations at most);
    ``"sgd"``: ``n_steps`` mini-batch steps of size ``batch_size`` at rate ``lr`` (norm-clipped at
    ``clip`` when given). Returns (W (n_classes, d), b (n_classes,)).
    """
    from scipy.optimize import minimize

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    n, d = X.shape
    lam = 1.0 / (C * n)
    Xa = np.c_[X, np.ones(n)]
    Y = np.eye(n_classes)[y]
    W = np.zeros((n_classes, d + 1)) if w0 is None else np.array(w0, dtype=np.float64)
    if solver == "lbfgs":
        def f(w):
            loss, G = softmax_loss_grad(w.reshape(W.shape), Xa, Y, lam)
            return loss, G.ravel()

        res = minimize(f, W.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": n_steps, "gtol": 1e-9})
        W = res.x.reshape(W.shape)
    elif solver == "sgd":
        rng = np.random.default_rng(seed)
        for _ in range(n_steps):
            idx = rng.integers(0, n, min(batch_size, n))
            G = softmax_loss_grad(W, Xa[idx], Y[idx], lam)[1]
            if clip is not None:
                G = G * min(1.0, clip / (np.linalg.norm(G) + 1e-300))
            W = W - lr * G
    else:
        raise ValueError(f"solver must be 'lbfgs' or 'sgd', got {solver!r}")
    return W[:, :-1].copy(), W[:, -1].copy()


class TaskHeadCE(_CFFree):
    """A softmax cross-entropy head per task (trained on that task only, then frozen); logits concatenated.

    The joint reference (``fit``) is one softmax head over all classes, same ``C`` and solver.
    """

    def __init__(self, C=1.0, solver="lbfgs", n_steps=200, lr=0.1, batch_size=32, random_state=0):
        self.C = C
        self.solver = solver
        self.n_steps = n_steps
        self.lr = lr
        self.batch_size = batch_size
        self.random_state = random_state

    def _validate_params_(self):
        _positive(self.C, "C")
        _positive(self.lr, "lr")
        if self.solver not in ("lbfgs", "sgd"):
            raise ValueError(f"solver must be 'lbfgs' or 'sgd', got {self.solver!r}")
        for name in ("n_steps", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")

    def _reset(self, d):
        self.heads_ = {}

    def _learn(self, X, y):
        cls = np.unique(y)
        W, b = train_softmax(X, np.searchsorted(cls, y), cls.size, C=self.C, solver=self.solver,
                             n_steps=self.n_steps, lr=self.lr, batch_size=self.batch_size,
                             seed=(self.random_state or 0) + len(self.heads_))
        for k, c in enumerate(cls):
            self.heads_[_key(c)] = (W[k], b[k])

    def _finalise(self):
        self.coef_ = np.stack([self.heads_[_key(c)][0] for c in self.classes_])
        self.intercept_ = np.array([self.heads_[_key(c)][1] for c in self.classes_])

    def _scores(self, X):
        return X @ self.coef_.T + self.intercept_

    def _state(self):
        return {"coef": self.coef_, "intercept": self.intercept_}

    def _set_state(self, st):
        self.heads_ = {_key(c): (w, b) for c, w, b in zip(self.classes_, st["coef"], st["intercept"])}


LEARNERS = {"ncm": NCM, "slda": SLDA, "fecam": FeCAM, "ranpac": RanPAC, "ce": TaskHeadCE}


def load_learner(path):
    """Load any learner saved with ``save`` (the file names its class)."""
    import torch

    from tcgap.schedule import TheoryScheduleCE

    doc = torch.load(path, weights_only=True)
    classes = {c.__name__: c for c in (*LEARNERS.values(), TheoryScheduleCE)}
    if doc.get("cls") not in classes:
        raise ValueError(f"{path} holds no tcgap learner (cls={doc.get('cls')!r})")
    return classes[doc["cls"]].load(path)
