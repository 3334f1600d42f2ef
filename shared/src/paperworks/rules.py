"""Verdict rules: a claim's verdict is computed from its numbers, never typed in.

Every rule answers ``supported`` / ``not supported`` / ``inconclusive`` and a short reason.
The rules are deliberately hard to flatter:

- **No interval, no verdict.** A value without a confidence interval is ``inconclusive``
  unless the rule says ``exact=True`` (an identity, a closed-form count, a deterministic
  solver's objective): then the bare values are compared.
- **Censored runs are never imputed.** An estimate whose runs mostly missed the target
  (``n_censored > n / 2``) makes the rule ``inconclusive``.
- **Preconditions** (``requires``): when one is not met (models not trained to the target,
  validity near zero), the verdict is ``inconclusive`` and the reason names it.
- A tie is no win: "beats" is strict.

Rules (``rule["kind"]``):

``threshold``
    The value is above (``better="higher"``) or below a fixed threshold. Supported when the
    whole interval is on the right side, not supported when it is wholly on the wrong side.
``compare``
    The method beats one baseline by more than ``margin`` (in the ``better`` direction).
    A negative margin is a non-inferiority claim ("no worse than the baseline by more than
    ``-margin``"). Unpaired: the two intervals must be separated by the margin. Paired
    (``paired=True``, same seeds): the interval of the per-seed difference (or, for
    ``scale="log"``, the ratio method/baseline, whose margin is a log-ratio) must clear it.
``compare_all``
    The method beats every named baseline (each as ``compare``); not supported when it is
    beaten by any, inconclusive otherwise.
``within``
    Two-sided: the value equals ``target`` within ``tol``. Supported when the whole interval
    lies inside ``[target - tol, target + tol]``, not supported when it lies wholly outside.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from paperworks.stats import Estimate

VERDICTS = ("supported", "not supported", "inconclusive")
KINDS = ("threshold", "compare", "compare_all", "within")


def as_estimate(x, name: str = "value") -> Estimate:
    """An :class:`Estimate` from an Estimate, its dict, or a bare number (no interval)."""
    if isinstance(x, Estimate):
        return x
    if isinstance(x, Mapping):
        return Estimate.from_dict(dict(x))
    if isinstance(x, bool) or isinstance(x, str):
        raise TypeError(f"{name}: expected an Estimate, a dict or a number, got {type(x).__name__}")
    if isinstance(x, (int, float)) or hasattr(x, "item"):
        return Estimate(float(x))
    raise TypeError(f"{name}: expected an Estimate, a dict or a number, got {type(x).__name__}")


def check_better(better: str) -> None:
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', got {better!r}")


def _finite_number(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) and not hasattr(x, "item"):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}")
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def _censored(est: Estimate, who: str) -> str | None:
    if est.n_censored and est.n_censored * 2 > est.n:
        return f"{est.n_censored} of {est.n} runs of {who} missed the target"
    return None


def _interval(est: Estimate, exact: bool) -> tuple[float, float] | None:
    """The interval to judge on: the CI, or the bare value when the quantity is exact."""
    if est.has_ci:
        return est.lower, est.upper
    if exact:
        return est.value, est.value
    return None


def _unmet(requires) -> str | None:
    for r in requires or ():
        if not r["met"]:
            return f"precondition not met: {r['what']}"
    return None


def _judged_interval(est: Estimate, exact: bool) -> tuple[float, float] | str:
    """The method's interval to judge a one-estimate rule on, or why there is none."""
    if not math.isfinite(est.value) and not est.has_ci:
        return "the value is undefined (NaN)"
    why = _censored(est, "the method")
    if why:
        return why
    iv = _interval(est, exact)
    return "no confidence interval (a single value; exact=False)" if iv is None else iv


def threshold(est: Estimate, thr: float, better: str, *, exact: bool = False) -> tuple[str, str]:
    check_better(better)
    iv = _judged_interval(est, exact)
    if isinstance(iv, str):
        return "inconclusive", iv
    lo, hi = iv
    if better == "higher":
        if lo >= thr:
            return "supported", f"the whole interval is at or above {thr:g}"
        if hi < thr:
            return "not supported", f"the whole interval is below {thr:g}"
    else:
        if hi <= thr:
            return "supported", f"the whole interval is at or below {thr:g}"
        if lo > thr:
            return "not supported", f"the whole interval is above {thr:g}"
    return "inconclusive", f"the interval contains {thr:g}"


def within(est: Estimate, target: float, tol: float, *, exact: bool = False) -> tuple[str, str]:
    iv = _judged_interval(est, exact)
    if isinstance(iv, str):
        return "inconclusive", iv
    lo, hi = iv
    a, b = target - tol, target + tol
    if a <= lo and hi <= b:
        return "supported", f"the whole interval lies within {target:g} ± {tol:g}"
    if hi < a or lo > b:
        return "not supported", f"the whole interval lies outside {target:g} ± {tol:g}"
    return "inconclusive", f"the interval straddles the edge of {target:g} ± {tol:g}"


def compare_one(method: Estimate, baseline: Estimate, better: str, margin: float = 0.0, *,
                difference: Estimate | None = None, scale: str = "linear", exact: bool = False,
                name: str = "the baseline") -> tuple[str, str]:
    """One comparison; ``difference`` is the paired estimate (method − baseline, or ratio for log)."""
    check_better(better)
    sign = 1.0 if better == "higher" else -1.0
    for est, who in ((method, "the method"), (baseline, name)):
        why = _censored(est, who)
        if why:
            return "inconclusive", why
    if difference is not None:
        d = difference
        if scale == "log":
            if not d.has_ci and not exact:
                return "inconclusive", "no confidence interval on the paired ratio"
            lo, hi = (d.lower, d.upper) if d.has_ci else (d.value, d.value)
            if lo is None or lo <= 0 or not math.isfinite(d.value):
                return "inconclusive", "the paired ratio is undefined"
            lo, hi = math.log(lo), math.log(hi)
        else:
            iv = _interval(d, exact)
            if iv is None or not (math.isfinite(iv[0]) and math.isfinite(iv[1])):
                return "inconclusive", "no confidence interval on the paired difference"
            lo, hi = iv
        lo, hi = (lo, hi) if sign > 0 else (-hi, -lo)
        what = "log ratio" if scale == "log" else "difference"
        if lo > margin:
            return "supported", f"the paired {what}'s interval clears the margin {margin:g} vs {name}"
        if hi <= margin:
            return "not supported", f"the paired {what}'s interval is below the margin {margin:g} vs {name}"
        return "inconclusive", f"the paired {what}'s interval contains the margin {margin:g} vs {name}"
    if not (math.isfinite(method.value) and math.isfinite(baseline.value)):
        return "inconclusive", "a value is undefined (NaN)"
    im, ib = _interval(method, exact), _interval(baseline, exact)
    if im is None or ib is None:
        return "inconclusive", f"no confidence interval on {'the method' if im is None else name} (exact=False)"
    if scale == "log":  # compare log intervals: the margin is a log ratio
        if min(im[0], ib[0]) <= 0:
            return "inconclusive", "scale='log' needs positive intervals"
        im, ib = (math.log(im[0]), math.log(im[1])), (math.log(ib[0]), math.log(ib[1]))
    if sign > 0:
        worst, best = im[0] - ib[1], im[1] - ib[0]
    else:
        worst, best = ib[0] - im[1], ib[1] - im[0]
    if worst > margin:
        return "supported", f"the intervals are separated by more than the margin {margin:g} from {name}"
    if best <= margin:
        return "not supported", f"even the best case is not better than {name} by the margin {margin:g}"
    return "inconclusive", f"the intervals of the method and {name} overlap (margin {margin:g})"


def evaluate(claim: Mapping) -> tuple[str, str]:
    """The verdict and reason implied by a stored claim's numbers and rule."""
    rule = claim["rule"]
    kind = rule.get("kind")
    unmet = _unmet(rule.get("requires"))
    method = as_estimate(claim["method"])
    exact = bool(rule.get("exact", False))
    if kind == "threshold":
        out = threshold(method, rule["threshold"], rule["better"], exact=exact)
    elif kind == "within":
        out = within(method, rule["target"], rule["tol"], exact=exact)
    elif kind in ("compare", "compare_all"):
        names = [rule["baseline"]] if kind == "compare" else list(rule["baselines"])
        diffs = claim.get("differences") or {}
        results = []
        for n in names:
            if n not in claim["baselines"]:
                raise ValueError(f"claim {claim.get('id')!r}: rule names baseline {n!r} that is not stored")
            d = diffs.get(n)
            if rule.get("paired") and d is None:
                raise ValueError(f"claim {claim.get('id')!r}: paired rule without a difference for {n!r}")
            results.append(compare_one(method, as_estimate(claim["baselines"][n]), rule["better"],
                                       rule.get("margin", 0.0), difference=None if d is None else as_estimate(d),
                                       scale=rule.get("scale", "linear"), exact=exact, name=n))
        verdicts = [v for v, _ in results]
        if kind == "compare" or len(results) == 1:
            out = results[0]
        elif "not supported" in verdicts:
            out = ("not supported", "; ".join(r for v, r in results if v == "not supported"))
        elif all(v == "supported" for v in verdicts):
            out = ("supported", f"beats all {len(results)} baselines")
        else:
            out = ("inconclusive", "; ".join(r for v, r in results if v == "inconclusive"))
    else:
        raise ValueError(f"unknown rule kind {kind!r} (known: {KINDS})")
    if unmet and out[0] != "inconclusive":
        return "inconclusive", unmet
    if unmet:
        return "inconclusive", f"{unmet}; {out[1]}"
    return out


def describe(rule: Mapping) -> str:
    """The rule in words, for tables and the report."""
    kind = rule.get("kind")
    exact = " (exact values)" if rule.get("exact") else ""
    better = rule.get("better")
    if kind == "threshold":
        words = f"{'≥' if better == 'higher' else '≤'} {rule['threshold']:g}{exact}"
    elif kind == "within":
        words = f"within {rule['target']:g} ± {rule['tol']:g} (two-sided){exact}"
    elif kind in ("compare", "compare_all"):
        names = rule["baseline"] if kind == "compare" else " and ".join(rule["baselines"])
        m = float(rule.get("margin", 0.0))
        verb = "beats" if m >= 0 else "no worse than"
        d = "" if m == 0 else (f" by > {m:g}" if m > 0 else f" by more than {-m:g}")
        unit = " (log ratio)" if rule.get("scale") == "log" else ""
        way = "higher" if better == "higher" else "lower"
        kind_words = "paired over seeds" if rule.get("paired") else "unpaired intervals"
        words = f"{verb} {names}{d}{unit}, {way} is better, {kind_words}{exact}"
    else:
        words = str(kind)
    req = [r["what"] for r in rule.get("requires") or ()]
    if req:
        words += "; requires " + ", ".join(req)
    return words


# the 0.1 name, kept for callers
def compare(method, baseline, better: str, margin: float = 0.0, *, exact: bool = False) -> str:
    """Verdict of "method beats baseline by more than ``margin``" from two (unpaired) estimates."""
    return compare_one(as_estimate(method), as_estimate(baseline), better, margin, exact=exact)[0]


def threshold_verdict(est, thr: float, better: str, *, exact: bool = False) -> str:
    """Verdict of "the value is above (``higher``) / below (``lower``) ``thr``"."""
    return threshold(as_estimate(est), thr, better, exact=exact)[0]
