"""Data: scikit-learn's digits (shipped inside the wheel; nothing is downloaded), split and scaled."""

from __future__ import annotations

import numpy as np

from paperworks.utils import check_float


def digits_splits(seed: int, *, val: float = 0.2, test: float = 0.2) -> dict:
    """Stratified train/val/test split of ``load_digits`` (1,797 8×8 images, 10 classes), float32,
    standardised with the training split's mean and scale. Returns ``{"train": (X, y), "val": ..., "test": ...}``."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    val = check_float(val, "val", minimum=0.0, maximum=0.5, open_minimum=True)
    test = check_float(test, "test", minimum=0.0, maximum=0.5, open_minimum=True)
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test, stratify=y, random_state=seed)
    Xtr, Xva, ytr, yva = train_test_split(Xtr, ytr, test_size=val / (1 - test), stratify=ytr, random_state=seed)
    sc = StandardScaler().fit(Xtr)
    f = lambda a: sc.transform(a).astype(np.float32)  # noqa: E731
    return {"train": (f(Xtr), ytr), "val": (f(Xva), yva), "test": (f(Xte), yte)}
