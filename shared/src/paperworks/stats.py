"""Confidence intervals over seeds (t-based and bootstrap) and for binomial proportions."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats as _st


@dataclass(frozen=True)
class Estimate:
    """A point value with a confidence interval.

    ``lower``/``upper`` are ``None`` for a single deterministic measurement
    (``n == 1``); ``method`` says how the interval was made.
    """

    value: float
    lower: float | None = None
    upper: float | None = None
    n: int = 1
    level: float = 0.95
    method: str = "point"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Estimate:
        """Inverse of :meth:`to_dict`; a ``null`` value (NaN written as JSON) reads back as NaN."""
        d = dict(d)
        if d.get("value") is None:
            d["value"] = float("nan")
        return cls(**d)


def _as_values(values) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("values must hold at least one number")
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite (found NaN or inf)")
    return x


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")


def t_ci(values, level: float = 0.95) -> Estimate:
    """Student-t interval for the mean of ``values`` (e.g. one number per seed).

    mean ± t_{(1+level)/2, n-1} · s / sqrt(n). With one value the interval is absent.
    """
    _check_level(level)
    x = _as_values(values)
    m = float(x.mean())
    if x.size == 1:
        return Estimate(m, None, None, 1, level, "t")
    se = float(x.std(ddof=1) / math.sqrt(x.size))
    h = float(_st.t.ppf(0.5 + level / 2, x.size - 1) * se)
    return Estimate(m, m - h, m + h, int(x.size), level, "t")


def bootstrap_ci(values, level: float = 0.95, n_resamples: int = 9999, seed: int = 0,
                 statistic=np.mean) -> Estimate:
    """Percentile-bootstrap interval (``scipy.stats.bootstrap``, BCa where it is defined)."""
    _check_level(level)
    x = _as_values(values)
    v = float(statistic(x))
    if x.size == 1 or np.all(x == x[0]):
        return Estimate(v, v if x.size > 1 else None, v if x.size > 1 else None, int(x.size), level, "bootstrap")
    res = _st.bootstrap((x,), statistic, confidence_level=level, n_resamples=n_resamples,
                        method="percentile", random_state=np.random.default_rng(seed))
    ci = res.confidence_interval
    return Estimate(v, float(ci.low), float(ci.high), int(x.size), level, "bootstrap")


def estimate(values, level: float = 0.95, method: str = "t", **kw) -> Estimate:
    """Summarise ``values`` with ``method`` = ``"t"`` or ``"bootstrap"``."""
    if method == "t":
        return t_ci(values, level)
    if method == "bootstrap":
        return bootstrap_ci(values, level, **kw)
    raise ValueError(f"method must be 't' or 'bootstrap', got {method!r}")


def binomial_ci(successes: int, trials: int, level: float = 0.95) -> Estimate:
    """Clopper–Pearson interval for a proportion (coverage checks, success rates)."""
    _check_level(level)
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, got {successes}/{trials}")
    ci = _st.binomtest(int(successes), int(trials)).proportion_ci(confidence_level=level, method="exact")
    return Estimate(successes / trials, float(ci.low), float(ci.high), int(trials), level, "clopper-pearson")
