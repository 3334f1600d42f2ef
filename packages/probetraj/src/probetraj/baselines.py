"""What the trajectory monitor is compared with: static probe read-outs and a keyword CoT-text monitor.

- :func:`readout_at`: the probe's value at one relative CoT position (0 = first CoT token, 1 = the
  last one before ``</think>``); the end-of-prompt read-out is the probe applied to the prompt's last state.
- :class:`BestPositionReadout`: the single CoT position (on a grid of relative positions) whose read-out
  separates the training folds best, applied to the test fold: the strongest static read-out at the
  same end point as the trajectory.
- :class:`KeywordMonitor`: logistic regression on the counts of the stance keywords in the CoT text
  (what a keyword text monitor sees; it never sees the activations).
"""

from __future__ import annotations

import re

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression

from probetraj.features import as_trajectories


def readout_at(trajectories, frac: float) -> np.ndarray:
    """``p[round(frac · (T - 1))]`` of every trajectory, ``(n,)``."""
    if not 0.0 <= float(frac) <= 1.0:
        raise ValueError(f"frac must be in [0, 1], got {frac!r}")
    X = as_trajectories(trajectories)
    return np.array([p[int(round(frac * (len(p) - 1)))] for p in X])


class BestPositionReadout(ClassifierMixin, BaseEstimator):
    """Static read-out at the relative CoT position chosen on the training data (by AUROC).

    Args:
        grid: relative positions to choose from (default 0, 0.1, ..., 1).
    """

    def __init__(self, grid: tuple[float, ...] | None = None):
        self.grid = grid

    def fit(self, X, y):
        grid = np.linspace(0, 1, 11) if self.grid is None else np.asarray(self.grid, dtype=float)
        y = np.asarray(y)
        classes = np.unique(y)
        if len(classes) != 2:
            raise ValueError(f"y must hold exactly two classes, got {classes.tolist()}")
        self.classes_ = classes
        from probetraj.evaluate import auroc

        aucs = [auroc(y == classes[1], readout_at(X, f)) for f in grid]
        self.position_ = float(grid[int(np.argmax(aucs))])
        self.train_auroc_ = float(np.max(aucs))
        return self

    def predict_proba(self, X) -> np.ndarray:
        p = readout_at(X, self.position_)
        return np.stack([1 - p, p], 1)

    def predict(self, X):
        return self.classes_[(self.predict_proba(X)[:, 1] > 0.5).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags


class KeywordMonitor(ClassifierMixin, BaseEstimator):
    """A CoT-text monitor: logistic regression on keyword counts.

    Args:
        keywords: the words counted (e.g. :meth:`ReasoningWorld.keywords`, both classes).
        C: inverse L2 strength of the logistic regression.
    """

    def __init__(self, keywords: tuple[str, ...] = (), C: float = 1.0):
        self.keywords = keywords
        self.C = C

    def _counts(self, texts) -> np.ndarray:
        if isinstance(texts, str) or not len(texts):
            raise ValueError("texts must be a non-empty list of strings")
        kw = list(self.keywords)
        out = np.zeros((len(texts), len(kw)))
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"texts[{i}] must be a string, got {type(t).__name__}")
            words = re.findall(r"\S+", t)
            for j, k in enumerate(kw):
                out[i, j] = words.count(k)
        return out

    def fit(self, texts, y):
        if not len(self.keywords):
            raise ValueError("keywords must name at least one word")
        self.lr_ = LogisticRegression(C=self.C, max_iter=1000).fit(self._counts(texts), y)
        self.classes_ = self.lr_.classes_
        return self

    def predict_proba(self, texts) -> np.ndarray:
        return self.lr_.predict_proba(self._counts(texts))

    def predict(self, texts):
        return self.lr_.predict(self._counts(texts))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        return tags
