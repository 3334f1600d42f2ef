"""The mini-leaderboard: ~40 scikit-learn configurations × ~60 datasets, and the planted toy.

``generate_leaderboard()`` fits every model configuration on every dataset (70/30 split, features
standardised) and records accuracy, macro-F1 and log-loss (classification) or R² and RMSE (regression,
target standardised). A leaderboard only shows some of that: each (model, dataset) cell is *observed*
with a probability that grows with the model's and the dataset's popularity (Zipf weights), ~30% in
all, and an observed cell reports each of its metrics with probability 0.8. The shipped file
``leaderboard/mini_leaderboard.csv.gz`` holds every cell with its ``observed`` flag: training uses the
observed records only, and the unobserved truth is used only to score rankings of held-out entities.
Regenerate it with ``python -m modellens.data`` (about 4 minutes on one core).

Everything is deterministic: the datasets are rebuilt from their names (:func:`make_dataset`), which
is what the run-each-candidate baseline and the router experiment use.
"""

from __future__ import annotations

import logging
import re
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

log = logging.getLogger("modellens")

DATA_FILE = "mini_leaderboard.csv.gz"
REAL_DATASETS = ("iris", "wine", "breast_cancer", "digits", "diabetes")
CLASSIFICATION_METRICS = ("accuracy", "f1_macro", "log_loss")
REGRESSION_METRICS = ("r2", "rmse")

# model zoo ----------------------------------------------------------------------------------------

MODEL_NAMES = (
    "linear-a0.01", "linear-a1", "linear-a10", "linear-a100",
    "knn-k1", "knn-k5", "knn-k10", "knn-k15", "knn-k50",
    "tree-d2", "tree-d4", "tree-d6", "tree-d16",
    "rf-n10-d4", "rf-n50-d4", "rf-n50-d8", "rf-n100-d16", "rf-n200-d8",
    "et-n25-d4", "et-n50-d8", "et-n100-d8", "et-n200-d16",
    "gbm-lr0.03-n100", "gbm-lr0.1-n50", "gbm-lr0.1-n100", "gbm-lr0.1-n200", "gbm-lr0.3-n50",
    "mlp-16", "mlp-32", "mlp-64", "mlp-64x2", "mlp-256x2",
    "svm-rbf-C0.1", "svm-rbf-C1", "svm-rbf-C10", "svm-rbf-C100", "svm-lin-C1",
    "bayes-gauss", "ada-n50", "prior-mean",
)


def _num(name: str, key: str, default=None):
    m = re.search(rf"(?:^|-){key}([0-9.]+)", name)
    return float(m.group(1)) if m else default


def model_family(name: str) -> str:
    """The family prefix of a zoo name (``rf-n200-d8`` → ``rf``; ``svm-rbf-C1`` → ``svm``)."""
    return name.split("-", 1)[0]


def model_size(name: str) -> float:
    """A size proxy (a rough parameter count) read from a zoo name; 1 when the name says nothing."""
    fam = model_family(name)
    if fam in ("rf", "et", "gbm", "ada"):
        n = _num(name, "n", 50)
        d = _num(name, "d", 3 if fam == "gbm" else 1)
        return float(n * 2 ** min(d, 10))
    if fam == "tree":
        return float(2 ** min(_num(name, "d", 1), 10))
    if fam == "mlp":
        m = re.match(r"mlp-(\d+)(?:x(\d+))?", name)
        w, depth = int(m.group(1)), int(m.group(2) or 1)
        return float(w * 20 + w * w * (depth - 1))
    if fam == "knn":
        return float(1000 / _num(name, "k", 5))  # a small k is a complex model
    if fam == "svm":
        return float(10 * _num(name, "C", 1))
    if fam == "linear":
        return float(20 / _num(name, "a", 1))
    return 1.0


def model_meta(names=MODEL_NAMES) -> pd.DataFrame:
    """``model, family, size`` for zoo names (the metadata a user would give for unseen models)."""
    names = list(names)
    return pd.DataFrame({"model": names, "family": [model_family(n) for n in names],
                         "size": [model_size(n) for n in names]})


def make_estimator(name: str, task: str, seed: int = 0):
    """The scikit-learn estimator for a zoo name and task (``classification``/``regression``)."""
    from sklearn import ensemble, linear_model, naive_bayes, neighbors, neural_network, svm, tree
    from sklearn.dummy import DummyClassifier, DummyRegressor

    clf = task == "classification"
    fam = model_family(name)
    if fam == "linear":
        a = _num(name, "a")
        return linear_model.LogisticRegression(C=1 / a, max_iter=500) if clf else linear_model.Ridge(alpha=a)
    if fam == "knn":
        k = int(_num(name, "k"))
        return neighbors.KNeighborsClassifier(k) if clf else neighbors.KNeighborsRegressor(k)
    if fam == "tree":
        d = int(_num(name, "d"))
        return (tree.DecisionTreeClassifier if clf else tree.DecisionTreeRegressor)(max_depth=d, random_state=seed)
    if fam in ("rf", "et"):
        cls = {("rf", True): ensemble.RandomForestClassifier, ("rf", False): ensemble.RandomForestRegressor,
               ("et", True): ensemble.ExtraTreesClassifier, ("et", False): ensemble.ExtraTreesRegressor}[fam, clf]
        return cls(n_estimators=int(_num(name, "n")), max_depth=int(_num(name, "d")), random_state=seed, n_jobs=1)
    if fam == "gbm":
        cls = ensemble.HistGradientBoostingClassifier if clf else ensemble.HistGradientBoostingRegressor
        return cls(learning_rate=_num(name, "lr"), max_iter=int(_num(name, "n")), early_stopping=False,
                   random_state=seed)
    if fam == "mlp":
        m = re.match(r"mlp-(\d+)(?:x(\d+))?", name)
        layers = (int(m.group(1)),) * int(m.group(2) or 1)
        cls = neural_network.MLPClassifier if clf else neural_network.MLPRegressor
        return cls(hidden_layer_sizes=layers, max_iter=150, random_state=seed)
    if fam == "svm":
        c = _num(name, "C")
        kernel = "linear" if "-lin-" in name else "rbf"
        return svm.SVC(C=c, kernel=kernel, probability=True, random_state=seed) if clf else svm.SVR(C=c, kernel=kernel)
    if fam == "bayes":
        return naive_bayes.GaussianNB() if clf else linear_model.BayesianRidge()
    if fam == "ada":
        cls = ensemble.AdaBoostClassifier if clf else ensemble.AdaBoostRegressor
        return cls(n_estimators=int(_num(name, "n")), random_state=seed)
    if fam == "prior":
        return DummyClassifier(strategy="prior") if clf else DummyRegressor()
    raise ValueError(f"unknown model name {name!r} (families: linear, knn, tree, rf, et, gbm, mlp, svm, bayes, "
                     "ada, prior)")


# datasets -----------------------------------------------------------------------------------------

def _dataset_specs() -> list[dict]:
    """The ~55 generated dataset specs (deterministic), each with its name and description."""
    rng = np.random.default_rng(2026)
    specs = []
    for i in range(22):  # make_classification variants
        n = int(rng.choice([150, 300, 500]))
        f = int(rng.choice([4, 8, 16, 32]))
        inf = max(2, int(round(f * rng.choice([0.25, 0.5, 1.0]))))
        c = int(rng.choice([2, 2, 3, 5]))
        sep = float(rng.choice([0.5, 1.0, 2.0]))
        flip = float(rng.choice([0.0, 0.05, 0.2]))
        clus = int(rng.choice([1, 2])) if inf >= 3 else 1
        while c * clus > 2 ** inf:
            clus = 1
            c = 2
        specs.append(dict(name=f"clf{i:02d}-n{n}-f{f}", kind="classification", task="classification", n=n, f=f,
                          inf=inf, classes=c, sep=sep, flip=flip, clusters=clus, seed=100 + i,
                          description=(f"synthetic {'binary' if c == 2 else f'{c}-class'} classification, {n} samples, "
                                       f"{f} features of which {inf} informative, class separation {sep:g}, "
                                       f"label noise {int(flip * 100)} percent, {clus} cluster(s) per class, "
                                       "linear gaussian clusters")))
    for i in range(11):  # nonlinear classification
        n = int(rng.choice([150, 300, 500]))
        kind = ["moons", "circles", "quantiles"][i % 3]
        noise = float(rng.choice([0.05, 0.2, 0.35]))
        extra = int(rng.choice([0, 2, 8]))
        c = 2 if kind != "quantiles" else int(rng.choice([2, 3]))
        specs.append(dict(name=f"{kind}{i:02d}-n{n}-f{2 + extra}", kind=kind, task="classification", n=n,
                          f=2 + extra, noise=noise, classes=c, seed=200 + i,
                          description=(f"synthetic {kind} classification, nonlinear curved decision boundary, {n} samples, "
                                       f"2 informative features and {extra} noise features, noise {noise:g}, "
                                       f"{c} classes")))
    for i in range(16):  # make_regression variants
        n = int(rng.choice([150, 300, 500]))
        f = int(rng.choice([4, 8, 16, 32]))
        inf = max(1, int(round(f * rng.choice([0.25, 0.5, 1.0]))))
        noise = float(rng.choice([1.0, 10.0, 50.0]))
        rank = None if rng.random() < 0.6 else max(2, f // 4)
        specs.append(dict(name=f"reg{i:02d}-n{n}-f{f}", kind="regression", task="regression", n=n, f=f, inf=inf,
                          noise=noise, rank=rank, seed=300 + i,
                          description=(f"synthetic linear regression, {n} samples, {f} features of which {inf} "
                                       f"informative, noise {noise:g}, "
                                       + ("full rank inputs" if rank is None else f"low rank correlated inputs rank {rank}"))))
    for i in range(6):  # nonlinear regression
        n = int(rng.choice([150, 300, 500]))
        kind = ["friedman1", "friedman2", "friedman3"][i % 3]
        noise = float(rng.choice([0.1, 1.0]))
        specs.append(dict(name=f"{kind}{i:02d}-n{n}", kind=kind, task="regression", n=n, noise=noise, seed=400 + i,
                          f=10 if kind == "friedman1" else 4,
                          description=(f"synthetic {kind} regression, nonlinear interactions, {n} samples, "
                                       f"{10 if kind == 'friedman1' else 4} features, noise {noise:g}")))
    return specs


_REAL_DESCRIPTIONS = {
    "iris": "real iris flowers classification, 150 samples, 4 measurements, 3 species, small clean dataset",
    "wine": "real wine cultivars classification, 178 samples, 13 chemical measurements, 3 classes",
    "breast_cancer": "real breast cancer diagnosis binary classification, 569 samples, 30 features from cell nuclei",
    "digits": "real handwritten digits classification, 1797 samples, 64 pixel features, 10 classes",
    "diabetes": "real diabetes disease progression regression, 442 samples, 10 baseline features, noisy target",
}


def dataset_meta() -> pd.DataFrame:
    """``dataset, task, description, n_samples, n_features, n_classes, source`` for every dataset."""
    from sklearn import datasets as skd

    rows = []
    for s in _dataset_specs():
        rows.append(dict(dataset=s["name"], task=s["task"], description=s["description"], n_samples=s["n"],
                         n_features=s["f"], n_classes=s.get("classes", 0), source="generated"))
    for name in REAL_DATASETS:
        X, y = getattr(skd, f"load_{name}")(return_X_y=True)
        task = "regression" if name == "diabetes" else "classification"
        rows.append(dict(dataset=name, task=task, description=_REAL_DESCRIPTIONS[name], n_samples=len(y),
                         n_features=X.shape[1], n_classes=0 if task == "regression" else len(np.unique(y)),
                         source="bundled"))
    return pd.DataFrame(rows)


def make_dataset(name: str) -> tuple[np.ndarray, np.ndarray, str]:
    """``(X, y, task)`` for a mini-leaderboard dataset name, rebuilt deterministically."""
    from sklearn import datasets as skd

    if name in REAL_DATASETS:
        X, y = getattr(skd, f"load_{name}")(return_X_y=True)
        return X.astype(float), y, "regression" if name == "diabetes" else "classification"
    spec = {s["name"]: s for s in _dataset_specs()}.get(name)
    if spec is None:
        raise ValueError(f"unknown mini-leaderboard dataset {name!r}")
    k, n, seed = spec["kind"], spec["n"], spec["seed"]
    rng = np.random.default_rng(seed)
    if k == "classification":
        X, y = skd.make_classification(n_samples=n, n_features=spec["f"], n_informative=spec["inf"],
                                       n_redundant=0, n_classes=spec["classes"], class_sep=spec["sep"],
                                       flip_y=spec["flip"], n_clusters_per_class=spec["clusters"], random_state=seed)
    elif k in ("moons", "circles", "quantiles"):
        if k == "moons":
            X, y = skd.make_moons(n_samples=n, noise=spec["noise"], random_state=seed)
        elif k == "circles":
            X, y = skd.make_circles(n_samples=n, noise=spec["noise"] / 2, factor=0.5, random_state=seed)
        else:
            X, y = skd.make_gaussian_quantiles(n_samples=n, n_features=2, n_classes=spec["classes"], random_state=seed)
            X = X + rng.normal(scale=spec["noise"], size=X.shape)
        X = np.hstack([X, rng.normal(size=(n, spec["f"] - 2))])
    elif k == "regression":
        X, y = skd.make_regression(n_samples=n, n_features=spec["f"], n_informative=spec["inf"], noise=spec["noise"],
                                   effective_rank=spec["rank"], random_state=seed)
    else:
        maker = getattr(skd, f"make_{k}")
        X, y = maker(n_samples=n, noise=spec["noise"] * (1 if k == "friedman1" else 100 if k == "friedman2" else 0.1),
                     random_state=seed)
    return X.astype(float), y, spec["task"]


# evaluation ---------------------------------------------------------------------------------------

def score_predictions(task: str, y_true, pred, proba=None, classes=None) -> dict[str, float]:
    """The leaderboard metrics of one fit (log-loss on probabilities clipped to ≥ 1e-6 and renormalised)."""
    from sklearn import metrics

    if task == "classification":
        out = {"accuracy": metrics.accuracy_score(y_true, pred),
               "f1_macro": metrics.f1_score(y_true, pred, average="macro")}
        if proba is not None:
            p = np.clip(proba, 1e-6, 1)
            out["log_loss"] = metrics.log_loss(y_true, p / p.sum(axis=1, keepdims=True), labels=classes)
        return {k: float(v) for k, v in out.items()}
    return {"r2": float(metrics.r2_score(y_true, pred)),
            "rmse": float(np.sqrt(metrics.mean_squared_error(y_true, pred)))}


def fit_and_score(model: str, X_tr, y_tr, X_te, y_te, task: str, seed: int = 0) -> dict[str, float]:
    """Fit the zoo model ``model`` on standardised features and score it on the test part."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    est = make_pipeline(StandardScaler(), make_estimator(model, task, seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X_tr, y_tr)
        pred = est.predict(X_te)
        proba = est.predict_proba(X_te) if task == "classification" else None
    classes = est.classes_ if task == "classification" else None
    return score_predictions(task, y_te, pred, proba, classes)


def split_dataset(name: str, seed: int = 0, train_size: float = 0.7):
    """The leaderboard's fixed 70/30 split (stratified for classification); regression targets standardised."""
    from sklearn.model_selection import train_test_split

    X, y, task = make_dataset(name)
    if task == "regression":
        y = (y - y.mean()) / (y.std() + 1e-12)
    strat = y if task == "classification" else None
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, train_size=train_size, random_state=seed, stratify=strat)
    return X_tr, X_te, y_tr, y_te, task


def generate_leaderboard(models=MODEL_NAMES, datasets=None, *, observed_frac: float = 0.3,
                         metric_keep: float = 0.8, seed: int = 0, progress: bool = True) -> pd.DataFrame:
    """Fit every model on every dataset; return the long table with the popularity-biased ``observed`` flag.

    Columns: ``model, dataset, task, metric, score, observed``. ``datasets=None`` means all of
    :func:`dataset_meta`; a subset gives the same scores for those cells (every fit is seeded by
    the cell alone), which is how the tests regenerate a slice of the shipped file.
    """
    all_datasets = list(dataset_meta()["dataset"])
    datasets = all_datasets if datasets is None else list(datasets)
    models = list(models)
    rows = []
    for i, d in enumerate(datasets):
        if progress and i % 10 == 0:
            log.info("leaderboard: dataset %d/%d (%s)", i + 1, len(datasets), d)
        X_tr, X_te, y_tr, y_te, task = split_dataset(d)
        for m in models:
            for metric, score in fit_and_score(m, X_tr, y_tr, X_te, y_te, task).items():
                rows.append((m, d, task, metric, score))
    df = pd.DataFrame(rows, columns=["model", "dataset", "task", "metric", "score"])
    df["observed"] = observed_mask(df, list(MODEL_NAMES), all_datasets, observed_frac, metric_keep, seed)
    return df


def observed_mask(df: pd.DataFrame, models, datasets, frac: float, metric_keep: float, seed: int) -> np.ndarray:
    """Popularity-biased observation: P(cell) ∝ Zipf(model) · Zipf(dataset), scaled to ``frac`` overall.

    The draw for a cell depends only on (model, dataset, metric) positions in the full zoo, so a
    slice regenerates the same flags.
    """
    rng = np.random.default_rng(seed)
    pm = 1.0 / np.arange(1, len(models) + 1) ** 0.8
    pd_ = 1.0 / np.arange(1, len(datasets) + 1) ** 0.6
    pm, pd_ = rng.permutation(pm), rng.permutation(pd_)
    p0 = np.outer(pm, pd_)
    lo, hi = 0.0, 100.0 * frac / p0.mean()
    for _ in range(60):  # scale so that the clipped probabilities average to ``frac``
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.clip(p0 * mid, 0.05, 0.95).mean() < frac else (lo, mid)
    p = np.clip(p0 * lo, 0.05, 0.95)
    u_cell = rng.random(p.shape)
    u_metric = rng.random(p.shape + (3,))
    mi = {m: i for i, m in enumerate(models)}
    di = {d: i for i, d in enumerate(datasets)}
    order = {m: j for j, m in enumerate(CLASSIFICATION_METRICS)} | {m: j for j, m in enumerate(REGRESSION_METRICS)}
    a = df["model"].map(mi).to_numpy()
    b = df["dataset"].map(di).to_numpy()
    c = df["metric"].map(order).to_numpy()
    keep = (u_cell[a, b] < p[a, b]) & ((u_metric[a, b, c] < metric_keep) | (c == 0))
    return keep.astype(int)


def leaderboard_path() -> Path:
    return Path(str(resources.files("modellens") / "leaderboard" / DATA_FILE))


def load_mini_leaderboard(*, observed_only: bool = True) -> pd.DataFrame:
    """The shipped mini-leaderboard: ``model, dataset, task, metric, score`` (and ``observed``).

    ``observed_only=True`` (default) returns what a leaderboard shows (~30% of cells, popularity-biased);
    ``False`` returns every cell with its ``observed`` flag (the truth used to score held-out rankings).
    """
    df = pd.read_csv(leaderboard_path())
    if observed_only:
        df = df[df["observed"] == 1].drop(columns="observed").reset_index(drop=True)
    return df


# planted latent factors ---------------------------------------------------------------------------

def planted_leaderboard(n_models: int = 8, n_datasets: int = 12, *, rank: int = 2, noise: float = 0.05,
                        seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A toy leaderboard with planted factors: score = u_m · v_d + noise (accuracy, higher is better).

    Dataset descriptions name the signs and sizes of v_d in words, model names carry their family
    (the sign pattern of u_m), so both views are informative and a method that reads them can rank
    models on a dataset it has never seen. Returns ``(records, model_meta, dataset_meta)``.
    """
    rng = np.random.default_rng(seed)
    u = rng.normal(size=(n_models, rank))
    v = rng.normal(size=(n_datasets, rank))
    words = ["alpha", "beta", "gamma", "delta"]
    models = [f"{'p' if u[i, 0] > 0 else 'n'}{'p' if u[i, 1] > 0 else 'n'}-m{i}" for i in range(n_models)]
    datasets = [f"set{j}" for j in range(n_datasets)]
    desc = [" ".join(f"{words[r]}-{'high' if v[j, r] > 0.5 else 'low' if v[j, r] < -0.5 else 'mid'}"
                     for r in range(rank)) for j in range(n_datasets)]
    score = u @ v.T + noise * rng.normal(size=(n_models, n_datasets))
    recs = pd.DataFrame([(m, d, "classification", "accuracy", float(score[i, j]))
                         for i, m in enumerate(models) for j, d in enumerate(datasets)],
                        columns=["model", "dataset", "task", "metric", "score"])
    mm = pd.DataFrame({"model": models, "family": [m.split("-")[0] for m in models], "size": 1.0})
    dm = pd.DataFrame({"dataset": datasets, "task": "classification", "description": desc})
    return recs, mm, dm


def main() -> None:  # python -m modellens.data [out_path]
    import sys
    import time

    logging.basicConfig(level=logging.INFO)
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "leaderboard" / DATA_FILE
    t0 = time.perf_counter()
    df = generate_leaderboard()
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False, float_format="%.6g")
    log.info("wrote %s: %d rows, %d observed, %.0f s", out, len(df), int(df["observed"].sum()),
             time.perf_counter() - t0)


if __name__ == "__main__":
    main()
