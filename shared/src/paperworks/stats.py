"""Confidence intervals: over seeds, paired differences, ratios, proportions, censored times.

Every helper returns an :class:`Estimate`. The rules in :mod:`paperworks.results` turn
estimates into verdicts; these helpers decide how honest the intervals are:

- **bounded metrics** (accuracy, AUROC, coverage, validity): pass ``bounds=(0, 1)`` and the
  interval is clipped to the metric's range (a t-interval never reaches 1.3);
- **ratios and speed-ups**: ``scale="log"`` summarises on the log scale (geometric mean, an
  interval that stays positive and is symmetric in ``a/b`` versus ``b/a``);
- **paired designs** (method and baseline on the same seeds): :func:`paired_difference` gives
  the interval of the per-seed differences, much tighter than two marginal intervals;
- **proportions**: :func:`binomial_ci` (Clopper–Pearson or Wilson);
- **time-, steps- or shots-to-target**: :func:`censored_summary` keeps runs that missed the
  target as censored (never imputed as a multiple of the budget).

Per-seed values are kept in ``Estimate.samples`` so a sweep can be pooled later
(``python -m paperworks aggregate``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as _st

#: estimators that :func:`resummarise` can recompute from pooled samples
POOLABLE = ("t", "bootstrap", "bootstrap-percentile", "bootstrap-median", "log-t", "paired-t", "paired-log-t", "clopper-pearson",
            "wilson", "censored-median")


def _enc(x: float | None):
    if x is None:
        return None
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def _dec(x, *, nan_for_none: bool = False):
    if x is None:
        return float("nan") if nan_for_none else None
    if isinstance(x, str):
        if x in ("inf", "+inf", "Infinity"):
            return math.inf
        if x in ("-inf", "-Infinity"):
            return -math.inf
        raise ValueError(f"not a number: {x!r}")
    return float(x)


@dataclass(frozen=True)
class Estimate:
    """A point value with a confidence interval.

    Args:
        value: the point estimate (NaN when undefined, e.g. a median that is censored).
        lower, upper: the interval; ``None`` for a single measurement without one. ``upper`` may
            be ``inf`` (a censored upper end, stored in JSON as the string ``"inf"``).
        n: the number of runs (or trials) behind it.
        level: the confidence level.
        method: how it was made (``t``, ``bootstrap``, ``log-t``, ``paired-t``, ``wilson``, ...).
        n_censored: runs that missed the target (censored at the budget), counted in ``n``.
        bounds: the metric's range the interval was clipped to, if any.
        samples: the per-run values it summarises (kept for pooling sweeps); for proportions
            ``(successes, trials)``.
    """

    value: float
    lower: float | None = None
    upper: float | None = None
    n: int = 1
    level: float = 0.95
    method: str = "point"
    n_censored: int = 0
    bounds: tuple[float, float] | None = None
    samples: tuple | None = field(default=None, compare=False)

    def __post_init__(self):
        for name in ("value", "lower", "upper"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer))):
                raise TypeError(f"Estimate.{name} must be a number, got {type(v).__name__}")
        if self.lower is not None and self.upper is not None and math.isfinite(self.value):
            if not self.lower <= self.upper:
                raise ValueError(f"Estimate: lower {self.lower} > upper {self.upper}")
            tol = 1e-9 * max(1.0, abs(self.value))
            if not (self.lower - tol <= self.value <= self.upper + tol):
                raise ValueError(f"Estimate: value {self.value} outside [{self.lower}, {self.upper}]")
        if not 0 <= self.n_censored <= max(self.n, 0):
            raise ValueError(f"Estimate: n_censored {self.n_censored} not in [0, n={self.n}]")

    @property
    def has_ci(self) -> bool:
        return self.lower is not None and self.upper is not None

    @property
    def censored_fraction(self) -> float:
        return self.n_censored / self.n if self.n else 0.0

    def to_dict(self) -> dict:
        d = {"value": _enc(float(self.value)), "lower": _enc(_f(self.lower)), "upper": _enc(_f(self.upper)),
             "n": int(self.n), "level": float(self.level), "method": self.method}
        if self.n_censored:
            d["n_censored"] = int(self.n_censored)
        if self.bounds is not None:
            d["bounds"] = [float(b) for b in self.bounds]
        if self.samples is not None:
            d["samples"] = [_enc(float(s)) for s in self.samples]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Estimate:
        """Inverse of :meth:`to_dict`; a ``null`` value (NaN written as JSON) reads back as NaN."""
        d = dict(d)
        d["value"] = _dec(d.get("value"), nan_for_none=True)
        d["lower"] = _dec(d.get("lower"))
        d["upper"] = _dec(d.get("upper"))
        if d.get("bounds") is not None:
            d["bounds"] = tuple(float(b) for b in d["bounds"])
        if d.get("samples") is not None:
            d["samples"] = tuple(_dec(s, nan_for_none=True) for s in d["samples"])
        return cls(**d)


def _f(x):
    return None if x is None else float(x)


def _as_values(values, name: str = "values") -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be numbers, got a string")
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError(f"{name} must hold at least one number")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return x


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")


def _check_bounds(bounds):
    if bounds is None:
        return None
    lo, hi = (float(b) for b in bounds)
    if not lo < hi:
        raise ValueError(f"bounds must be (low, high) with low < high, got {bounds}")
    return lo, hi


def _clip(est: Estimate, bounds) -> Estimate:
    if bounds is None:
        return est
    lo, hi = bounds
    if est.value < lo - 1e-12 or est.value > hi + 1e-12:
        raise ValueError(f"values lie outside the metric's bounds {bounds}: mean {est.value}")
    def clip(v):
        return (None if v is None else min(max(v, lo), hi))
    return Estimate(est.value, clip(est.lower), clip(est.upper), est.n, est.level, est.method,
                    est.n_censored, (lo, hi), est.samples)


def t_ci(values, level: float = 0.95, *, bounds=None) -> Estimate:
    """Student-t interval for the mean of ``values`` (e.g. one number per seed).

    mean ± t_{(1+level)/2, n-1} · s / sqrt(n), clipped to ``bounds`` when given.
    With one value the interval is absent (and a verdict needs ``exact=True``).
    """
    _check_level(level)
    bounds = _check_bounds(bounds)
    x = _as_values(values)
    m = float(x.mean())
    samples = tuple(float(v) for v in x)
    if x.size == 1:
        return _clip(Estimate(m, None, None, 1, level, "t", samples=samples), bounds)
    se = float(x.std(ddof=1) / math.sqrt(x.size))
    h = float(_st.t.ppf(0.5 + level / 2, x.size - 1) * se)
    return _clip(Estimate(m, m - h, m + h, int(x.size), level, "t", samples=samples), bounds)


def log_t_ci(values, level: float = 0.95) -> Estimate:
    """Interval for a positive ratio (a speed-up, a volume ratio) on the log scale.

    The value is the geometric mean exp(mean log x); the interval is the t-interval of
    log x, exponentiated. It stays positive, and ``1/x`` gives exactly the reciprocal interval.
    """
    _check_level(level)
    x = _as_values(values)
    if np.any(x <= 0):
        raise ValueError("log-scale intervals need positive values (ratios, speed-ups)")
    e = t_ci(np.log(x), level)
    lo = None if e.lower is None else math.exp(e.lower)
    hi = None if e.upper is None else math.exp(e.upper)
    return Estimate(math.exp(e.value), lo, hi, e.n, level, "log-t", samples=tuple(float(v) for v in x))


def bootstrap_ci(values, level: float = 0.95, n_resamples: int = 9999, seed: int = 0,
                 statistic=np.mean, *, method: str = "BCa", bounds=None) -> Estimate:
    """Bootstrap interval of ``statistic(values)`` with ``scipy.stats.bootstrap``.

    Args:
        method: ``"BCa"`` (bias-corrected and accelerated, the default) or ``"percentile"``.
            Where BCa is undefined (a degenerate resample distribution), the percentile interval
            is used and ``Estimate.method`` says ``bootstrap-percentile``.
        bounds: the metric's range; the interval is clipped to it.
    """
    _check_level(level)
    bounds = _check_bounds(bounds)
    if method not in ("BCa", "percentile"):
        raise ValueError(f"method must be 'BCa' or 'percentile', got {method!r}")
    x = _as_values(values)
    v = float(statistic(x))
    samples = tuple(float(s) for s in x)
    if x.size == 1 or np.all(x == x[0]):
        lo = v if x.size > 1 else None
        return _clip(Estimate(v, lo, lo, int(x.size), level, "bootstrap", samples=samples), bounds)
    used = method
    with np.errstate(all="ignore"):
        try:
            res = _st.bootstrap((x,), statistic, confidence_level=level, n_resamples=n_resamples,
                                method=method, random_state=np.random.default_rng(seed))
            ci = res.confidence_interval
            if not (np.isfinite(ci.low) and np.isfinite(ci.high)):
                raise ValueError("degenerate BCa interval")
        except (ValueError, RuntimeWarning):
            used = "percentile"
            res = _st.bootstrap((x,), statistic, confidence_level=level, n_resamples=n_resamples,
                                method="percentile", random_state=np.random.default_rng(seed))
            ci = res.confidence_interval
    lo, hi = min(float(ci.low), v), max(float(ci.high), v)
    name = "bootstrap" if used == "BCa" else "bootstrap-percentile"
    return _clip(Estimate(v, lo, hi, int(x.size), level, name, samples=samples), bounds)


def estimate(values, level: float = 0.95, method: str = "t", *, bounds=None, scale: str = "linear",
             **kw) -> Estimate:
    """Summarise per-seed ``values``.

    Args:
        method: ``"t"`` or ``"bootstrap"``.
        bounds: the metric's range (e.g. ``(0, 1)`` for accuracy); intervals are clipped to it.
        scale: ``"log"`` for positive ratios (see :func:`log_t_ci`).
    """
    if scale not in ("linear", "log"):
        raise ValueError(f"scale must be 'linear' or 'log', got {scale!r}")
    if scale == "log":
        if method != "t":
            raise ValueError("scale='log' uses the t-interval of log values; method must be 't'")
        return log_t_ci(values, level)
    if method == "t":
        return t_ci(values, level, bounds=bounds)
    if method == "bootstrap":
        return bootstrap_ci(values, level, bounds=bounds, **kw)
    raise ValueError(f"method must be 't' or 'bootstrap', got {method!r}")


def paired_difference(method_values, baseline_values, level: float = 0.95, *, scale: str = "linear") -> Estimate:
    """Interval of the per-seed difference ``method - baseline`` (or ratio, ``scale="log"``).

    Use it when the method and the baseline ran on the same seeds (same data, same
    initialisation): the seed-to-seed variation they share cancels.
    """
    a = _as_values(method_values, "method values")
    b = _as_values(baseline_values, "baseline values")
    if a.shape != b.shape:
        raise ValueError(f"paired values need the same number of seeds: {a.size} vs {b.size}")
    if scale == "log":
        if np.any(a <= 0) or np.any(b <= 0):
            raise ValueError("scale='log' needs positive values")
        e = log_t_ci(a / b, level)
        return Estimate(e.value, e.lower, e.upper, e.n, level, "paired-log-t", samples=e.samples)
    if scale != "linear":
        raise ValueError(f"scale must be 'linear' or 'log', got {scale!r}")
    e = t_ci(a - b, level)
    return Estimate(e.value, e.lower, e.upper, e.n, level, "paired-t", samples=e.samples)


def binomial_ci(successes: int, trials: int, level: float = 0.95, *, method: str = "clopper-pearson") -> Estimate:
    """Interval for a proportion: ``"clopper-pearson"`` (exact, conservative) or ``"wilson"``."""
    _check_level(level)
    for name, v in (("successes", successes), ("trials", trials)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, got {successes}/{trials}")
    if method == "clopper-pearson":
        kind = "exact"
    elif method == "wilson":
        kind = "wilson"
    else:
        raise ValueError(f"method must be 'clopper-pearson' or 'wilson', got {method!r}")
    ci = _st.binomtest(int(successes), int(trials)).proportion_ci(confidence_level=level, method=kind)
    p = successes / trials
    return Estimate(p, min(float(ci.low), p), max(float(ci.high), p), int(trials), level, method,
                    bounds=(0.0, 1.0), samples=(float(successes), float(trials)))


def censored_summary(values: Sequence[float | None], level: float = 0.95, *, budget: float | None = None) -> Estimate:
    """Median time-, steps- or shots-to-target, with runs that missed the target censored.

    Args:
        values: one entry per run: the time at which it reached the target, or ``None`` / ``inf``
            when it missed (ran out of budget).
        budget: when given, values above it are treated as misses too.

    Returns:
        An :class:`Estimate` of the median with a distribution-free (order-statistic) interval.
        Every miss lies beyond every hit (all runs share the budget), so sorting misses last is
        exact. When the median falls among the misses its value is unknown and reported as
        ``nan`` (not ``inf``: it is beyond the budget, by how much is not measured), so test
        "needs at least k" as ``2 * est.n_censored > est.n or est.value >= k``; the interval's upper
        end is ``inf`` when it falls among the misses. ``n_censored`` counts the misses; a rule
        treats an estimate whose runs mostly missed as inconclusive. Nothing is imputed.
    """
    _check_level(level)
    if isinstance(values, (str, bytes)):
        raise TypeError("values must be numbers or None")
    vals = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isinf(v) and v > 0):
            vals.append(math.inf)
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"values must be numbers or None, got {type(v).__name__}")
        v = float(v)
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"times to target must be finite and >= 0 (None for a miss), got {v}")
        vals.append(math.inf if budget is not None and v > budget else v)
    n = len(vals)
    if n == 0:
        raise ValueError("values must hold at least one run")
    x = np.sort(np.asarray(vals, dtype=float))
    n_cens = int(np.sum(np.isinf(x)))
    med = float(np.median(x))  # inf when the middle run(s) missed
    # order-statistic CI for the median: [x_(r), x_(n-r+1)] covers it with prob 1 - 2 P(B <= r-1),
    # B ~ Bin(n, 1/2); take the largest r that keeps the level (none for tiny n)
    lo = hi = None
    r = 0
    while r + 1 <= (n + 1) // 2 and 1 - 2 * _st.binom.cdf(r, n, 0.5) >= level:
        r += 1
    if r >= 1:
        lo, hi = float(x[r - 1]), float(x[n - r])
    value = med
    if lo is not None and math.isfinite(value):
        lo, hi = min(lo, value), max(hi, value)
    samples = tuple(float(v) for v in vals)
    return Estimate(value if math.isfinite(value) else math.nan, lo, hi, n, level, "censored-median",
                    n_censored=n_cens, samples=samples)


def resummarise(est: Estimate, samples, *, level: float | None = None) -> Estimate:
    """Recompute ``est`` (same estimator, bounds and level) on other ``samples`` (pooled seeds)."""
    level = est.level if level is None else level
    m = est.method
    if m == "t":
        return t_ci(samples, level, bounds=est.bounds)
    if m == "bootstrap-median":
        e = bootstrap_ci(samples, level, statistic=np.median, method="percentile")
        return Estimate(e.value, e.lower, e.upper, e.n, level, m, samples=e.samples)
    if m.startswith("bootstrap"):
        return bootstrap_ci(samples, level, bounds=est.bounds,
                            method="percentile" if m == "bootstrap-percentile" else "BCa")
    if m == "log-t":
        return log_t_ci(samples, level)
    if m in ("paired-t", "paired-log-t"):
        e = t_ci(samples, level) if m == "paired-t" else log_t_ci(samples, level)
        return Estimate(e.value, e.lower, e.upper, e.n, level, m, samples=e.samples)
    if m in ("clopper-pearson", "wilson"):
        s, t = samples
        return binomial_ci(int(s), int(t), level, method=m)
    if m == "censored-median":
        return censored_summary([None if math.isinf(v) else v for v in samples], level)
    raise ValueError(f"an estimate made by {m!r} cannot be recomputed from samples")
