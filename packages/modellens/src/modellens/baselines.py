"""Baselines, all on the same records (oriented z-scores) and splits as ModelLens.

- :class:`Popularity`: a model's mean z over its training records (the mean-rank prior); an
  unseen model gets its family's mean (from meta), else the global mean.
- :class:`NeighbourRanker`: kernel regression over the training matrix: similar datasets by
  metadata (``features="meta"``: task, log sizes, classes) or by description text
  (``features="text"``: TF-IDF cosine), similar models by name character n-grams.
- :class:`MatrixFactorisation`: biased MF fitted by alternating ridge on (model, dataset·metric)
  cells; it only scores seen models on seen datasets (the completion split).
- :func:`run_each_candidate`: fit every candidate on 10% of the target dataset and score it on a
  held-out part (with LogME/LEEP/NCE on its outputs); the compute it costs is what ModelLens saves.
- :class:`RandomRanker`.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from modellens.metrics import leep, logme, nce
from modellens.records import normalise, validate_records


def _family(name: str) -> str:
    return name.split("-", 1)[0].lower()


class _Base:
    def _prep(self, records):
        df = normalise(validate_records(records))
        df["metric"] = df["metric"].str.lower()
        return df

    def rank(self, dataset, candidates, metric=None, k=None):
        s = self.predict(candidates, dataset, metric)
        out = [candidates[i] for i in np.argsort(-s, kind="stable")]
        return out if k is None else out[:k]


class Popularity(_Base):
    """Mean z-score of each model over its training records (per metric when it has some)."""

    def fit(self, records, model_meta=None, dataset_meta=None):
        df = self._prep(records)
        self.mean_ = df.groupby("model")["z"].mean().to_dict()
        self.by_metric_ = df.groupby(["model", "metric"])["z"].mean().to_dict()
        fam = {m: _family(m) for m in df["model"].unique()}
        if model_meta is not None and "family" in model_meta:
            fam.update({str(m): str(f).lower() for m, f in zip(model_meta["model"], model_meta["family"])})
        self.family_of_ = fam
        fam_z = df.assign(family=df["model"].map(fam)).groupby("family")["z"].mean()
        self.family_mean_ = fam_z.to_dict()
        return self

    def predict(self, models, dataset=None, metric=None):
        out = []
        for m in models:
            if metric is not None and (m, str(metric).lower()) in self.by_metric_:
                out.append(self.by_metric_[m, str(metric).lower()])
            elif m in self.mean_:
                out.append(self.mean_[m])
            else:
                out.append(self.family_mean_.get(self.family_of_.get(m, _family(m)), 0.0))
        return np.asarray(out, dtype=float)


def _char_ngrams(names):
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4)).fit(names)


class NeighbourRanker(_Base):
    """Score(m, d) = Σ w(d, d′)·w(m, m′)·z(m′, d′) / Σ w over observed training cells, top neighbours only.

    Dataset similarity from metadata (``features="meta"``) or description text (``"text"``);
    model similarity from name character n-grams (a seen model is its own nearest neighbour).
    ``k_datasets``/``k_models`` neighbours; weights are similarities to the power ``sharpness``.
    """

    def __init__(self, features: str = "meta", k_datasets: int = 5, k_models: int = 3, sharpness: float = 4.0):
        if features not in ("meta", "text"):
            raise ValueError(f"features must be 'meta' or 'text', got {features!r}")
        self.features, self.k_datasets, self.k_models, self.sharpness = features, k_datasets, k_models, sharpness

    def fit(self, records, model_meta=None, dataset_meta=None):
        from sklearn.feature_extraction.text import TfidfVectorizer

        df = self._prep(records)
        self.train_models_ = sorted(df["model"].unique())
        self.train_datasets_ = sorted(df["dataset"].unique())
        dm = dataset_meta if dataset_meta is not None else pd.DataFrame({"dataset": self.train_datasets_})
        dm = dm.set_index(dm["dataset"].astype(str))
        self.all_datasets_ = list(dict.fromkeys(self.train_datasets_ + list(dm.index)))
        task = dict(zip(df["dataset"], df["task"]))
        if "task" in dm:
            task.update(dm["task"].dropna().astype(str).to_dict())
        if self.features == "text":
            desc = [str(dm["description"].get(d, d)) if "description" in dm else d for d in self.all_datasets_]
            X = TfidfVectorizer(sublinear_tf=True).fit_transform(desc).toarray()
        else:
            cols = []
            for c in ("n_samples", "n_features", "n_classes"):
                if c in dm:
                    v = pd.to_numeric(dm[c].reindex(self.all_datasets_), errors="coerce").fillna(0).to_numpy(float)
                    cols.append(np.log1p(v))
            X = np.column_stack(cols) if cols else np.zeros((len(self.all_datasets_), 1))
            X = (X - X.mean(0)) / (X.std(0) + 1e-9)
        X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-9)
        self.d_feat_ = dict(zip(self.all_datasets_, X))
        self.task_ = task
        names = list(dict.fromkeys(self.train_models_ + ([] if model_meta is None else
                                                         list(model_meta["model"].astype(str)))))
        self.name_vec_ = _char_ngrams(names)
        self.m_feat_ = dict(zip(names, self.name_vec_.transform(names).toarray()))
        self.cells_ = df.groupby(["model", "dataset", "metric"])["z"].mean()
        self.cell_any_ = df.groupby(["model", "dataset"])["z"].mean()
        return self

    def _feat_model(self, m):
        if m not in self.m_feat_:
            self.m_feat_[m] = self.name_vec_.transform([m]).toarray()[0]
        return self.m_feat_[m]

    def predict(self, models, dataset, metric=None):
        if dataset not in self.d_feat_:
            raise ValueError(f"unseen dataset {dataset!r} without meta")
        same = [d for d in self.train_datasets_ if d != dataset and self.task_.get(d) == self.task_.get(dataset)]
        same = same or [d for d in self.train_datasets_ if d != dataset]
        if dataset in self.train_datasets_:
            same = [dataset] + same
        sims = np.array([self.d_feat_[dataset] @ self.d_feat_[d] for d in same])
        order = np.argsort(-sims, kind="stable")[: self.k_datasets + (dataset in self.train_datasets_)]
        nd = [(same[i], max(sims[i], 1e-3) ** self.sharpness) for i in order]
        mfeat = np.array([self._feat_model(m) for m in self.train_models_])
        out = []
        for m in models:
            ms = mfeat @ self._feat_model(m)
            mo = np.argsort(-ms, kind="stable")[: self.k_models]
            num = den = 0.0
            for j in mo:
                wm = max(ms[j], 1e-3) ** self.sharpness
                for d, wd in nd:
                    key = (self.train_models_[j], d)
                    if metric is not None and (key + (str(metric).lower(),)) in self.cells_:
                        zval = self.cells_[key + (str(metric).lower(),)]
                    elif key in self.cell_any_:
                        zval = self.cell_any_[key]
                    else:
                        continue
                    num += wm * wd * zval
                    den += wm * wd
            out.append(num / den if den > 0 else 0.0)
        return np.asarray(out, dtype=float)


class MatrixFactorisation(_Base):
    """Biased MF z(m, c) ≈ b_m + b_c + p_mᵀq_c on cells c = (dataset, metric), alternating ridge.

    Seen models and datasets only (an unseen one gets its bias alone, i.e. popularity): use it
    on the completion split. ``rank`` and ``reg`` are tuned by the caller on a validation split.
    """

    def __init__(self, rank: int = 4, reg: float = 1.0, iters: int = 30, seed: int = 0):
        self.rank, self.reg, self.iters, self.seed = rank, reg, iters, seed

    def fit(self, records, model_meta=None, dataset_meta=None):
        df = self._prep(records)
        self.models_ = sorted(df["model"].unique())
        cols = sorted(set(zip(df["dataset"], df["metric"])))
        self.cols_ = {c: i for i, c in enumerate(cols)}
        mi = {m: i for i, m in enumerate(self.models_)}
        r = df["model"].map(mi).to_numpy()
        c = np.array([self.cols_[k] for k in zip(df["dataset"], df["metric"])])
        z = df["z"].to_numpy()
        rng = np.random.default_rng(self.seed)
        nm, nc, k = len(self.models_), len(cols), self.rank
        P, Q = 0.1 * rng.normal(size=(nm, k)), 0.1 * rng.normal(size=(nc, k))
        bm, bc = np.zeros(nm), np.zeros(nc)
        for _ in range(self.iters):
            for rows, cols_, A, B, ba, bb in ((r, c, P, Q, bm, bc), (c, r, Q, P, bc, bm)):
                for i in range(A.shape[0]):
                    sel = rows == i
                    if not sel.any():
                        continue
                    X = np.hstack([B[cols_[sel]], np.ones((sel.sum(), 1))])
                    y = z[sel] - bb[cols_[sel]]
                    reg = self.reg * np.eye(k + 1)
                    reg[-1, -1] = 1e-3
                    sol = np.linalg.solve(X.T @ X + reg, X.T @ y)
                    A[i], ba[i] = sol[:-1], sol[-1]
        self.P_, self.Q_, self.bm_, self.bc_ = P, Q, bm, bc
        self.m_index_ = mi
        return self

    def predict(self, models, dataset, metric=None):
        keys = [c for c in self.cols_ if c[0] == dataset and (metric is None or c[1] == str(metric).lower())]
        out = np.zeros(len(models))
        for key in keys:
            j = self.cols_[key]
            for a, m in enumerate(models):
                i = self.m_index_.get(m)
                out[a] += self.bc_[j] + (0.0 if i is None else self.bm_[i] + self.P_[i] @ self.Q_[j])
        return out / max(len(keys), 1)


class RandomRanker(_Base):
    """Uniformly random scores (seeded)."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def fit(self, records=None, model_meta=None, dataset_meta=None):
        return self

    def predict(self, models, dataset=None, metric=None):
        return self.rng.random(len(models))


# run each candidate ---------------------------------------------------------------------------------

def run_each_candidate(dataset: str, candidates, *, frac: float = 0.1, seed: int = 0,
                       transferability: bool = True) -> dict:
    """Fit every candidate on ``frac`` of the target's training part and score it on the rest of it.

    Returns ``{"scores": {metric: array}, "logme", "leep", "nce": arrays (NaN where undefined),
    "seconds": wall time}``. The leaderboard's test part is never touched, so the proxy is an
    honest estimate from the target's training data only. LEEP/NCE use the candidate's predicted
    class probabilities / labels as "source" outputs (classification only); LogME regresses the
    labels on the candidate's outputs (probabilities, or the prediction for regression).
    """
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from modellens.data import make_estimator, score_predictions, split_dataset

    t0 = time.perf_counter()
    X_tr, _, y_tr, _, task = split_dataset(dataset)
    strat = y_tr if task == "classification" else None
    try:
        Xa, Xb, ya, yb = train_test_split(X_tr, y_tr, train_size=frac, random_state=seed, stratify=strat)
    except ValueError:  # too few per class to stratify
        Xa, Xb, ya, yb = train_test_split(X_tr, y_tr, train_size=frac, random_state=seed)
    scores, lm, le, nc = {}, [], [], []
    for m in candidates:
        est = make_pipeline(StandardScaler(), make_estimator(m, task, seed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                est.fit(Xa, ya)
                pred = est.predict(Xb)
                proba = est.predict_proba(Xb) if task == "classification" else None
                if proba is not None:  # align to all classes of the target
                    full = np.full((len(yb), len(np.unique(y_tr))), 1e-6)
                    idx = np.searchsorted(np.unique(y_tr), est.classes_)
                    full[:, idx] = proba
                    proba = full / full.sum(1, keepdims=True)
                res = score_predictions(task, yb, pred, proba, np.unique(y_tr) if proba is not None else None)
            except ValueError:  # e.g. a k-NN with k larger than the 10% slice
                res = {k: np.nan for k in (("accuracy", "f1_macro", "log_loss") if task == "classification"
                                           else ("r2", "rmse"))}
                proba = None
                pred = None
        for k, v in res.items():
            scores.setdefault(k, []).append(v)
        if transferability and pred is not None:
            feats = proba if proba is not None else np.asarray(pred, float)[:, None]
            lm.append(logme(feats, yb, regression=task == "regression"))
            le.append(leep(proba, yb) if proba is not None else np.nan)
            nc.append(nce(pred, yb) if task == "classification" else np.nan)
        else:
            lm.append(np.nan)
            le.append(np.nan)
            nc.append(np.nan)
    return {"scores": {k: np.asarray(v, float) for k, v in scores.items()}, "logme": np.asarray(lm),
            "leep": np.asarray(le), "nce": np.asarray(nc), "seconds": time.perf_counter() - t0, "task": task}
