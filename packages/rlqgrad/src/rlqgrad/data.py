"""Data: scikit-learn's bundled sets and ``make_moons``, PCA to n features, angle embedding in [0, π].

``breast_cancer`` (malignant vs benign), ``digits`` (0 vs 1), ``iris`` (versicolor vs virginica, the two
classes that are not linearly separable from each other trivially) and ``moons``. Labels are ±1.
Splits: train / validation (step-size selection) / test, stratified; PCA and scaling are fitted on
train only. Meta-training uses ``make_classification`` tasks that share no data with these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DATASETS = ("breast_cancer", "digits", "iris", "moons")


@dataclass
class Split:
    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def _raw(name: str, rng: np.random.Generator):
    from sklearn import datasets

    if name == "breast_cancer":
        X, y = datasets.load_breast_cancer(return_X_y=True)
    elif name == "digits":
        X, y = datasets.load_digits(n_class=2, return_X_y=True)
    elif name == "iris":
        X, y = datasets.load_iris(return_X_y=True)
        keep = y > 0
        X, y = X[keep], y[keep] - 1
    elif name == "moons":
        X, y = datasets.make_moons(n_samples=400, noise=0.15, random_state=int(rng.integers(2**31)))
    else:
        raise ValueError(f"unknown dataset {name!r}; known: {DATASETS}")
    return X.astype(float), np.where(y > 0, 1.0, -1.0)


def embed_features(X_train, X_other, n_features: int):
    """PCA to ``n_features`` (zero-padded if the data has fewer), scaled to [0, π] on train."""
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    sc = StandardScaler().fit(X_train)
    k = min(n_features, X_train.shape[1], X_train.shape[0])
    pca = PCA(n_components=k, random_state=0).fit(sc.transform(X_train))
    mm = MinMaxScaler(feature_range=(0.0, np.pi)).fit(pca.transform(sc.transform(X_train)))

    def f(X):
        Z = np.clip(mm.transform(pca.transform(sc.transform(X))), 0.0, np.pi)
        if k < n_features:
            Z = np.hstack([Z, np.zeros((Z.shape[0], n_features - k))])
        return Z

    return f(X_train), [f(X) for X in X_other]


def load_split(name: str, n_features: int, *, seed: int = 0, shuffle_labels: bool = False) -> Split:
    """Stratified 60/20/20 split of ``name`` embedded into ``n_features`` angles."""
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(seed)
    X, y = _raw(name, rng)
    if shuffle_labels:
        y = rng.permutation(y)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, stratify=y, random_state=seed)
    Xtr, Xva, ytr, yva = train_test_split(Xtr, ytr, test_size=0.25, stratify=ytr, random_state=seed)
    Ztr, (Zva, Zte) = embed_features(Xtr, [Xva, Xte], n_features)
    return Split(name, Ztr, ytr, Zva, yva, Zte, yte)


def meta_tasks(n_features: int, n_tasks: int, *, seed: int = 0, n_samples: int = 256):
    """Random ``make_classification`` tasks (angles in [0, π], labels ±1) for meta-training."""
    from sklearn.datasets import make_classification

    rng = np.random.default_rng(10_000 + seed)
    out = []
    for _ in range(n_tasks):
        X, y = make_classification(n_samples=n_samples, n_features=max(n_features, 2), n_informative=2,
                                   n_redundant=0, n_clusters_per_class=1, class_sep=float(rng.uniform(0.8, 2.0)),
                                   random_state=int(rng.integers(2**31)))
        Z, _ = embed_features(X, [], n_features)
        out.append((Z, np.where(y > 0, 1.0, -1.0)))
    return out
