"""The ``bench`` experiment: closed-form robust decisions against the generic numerical min–max.

Every candidate runs interleaved under :func:`paperworks.bench.compare` (threads pinned, wall and
CPU time): per problem the closed form and FTP on 10^6 predictions, the closed form and the generic
numerical min–max on the same ``n_generic`` predictions (a paired per-decision ratio), RIC-h on
10^6 for posted pricing, and the named reference, the linear predictor on the 10^6 contexts. Peak
memory comes from :func:`paperworks.bench.peak_memory` (a fresh process, inputs built there first).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from paperworks import Claim, Estimate, seeds_of
from paperworks.bench import compare, peak_memory
from robustpredict.baselines import RICh
from robustpredict.data import MeanFunction, make_contexts
from robustpredict.problems import DecisionProblem, HouseFlipping, PostedPricing, SkiRental

EPS = 0.1


def make_problem(name: str, cfg) -> DecisionProblem:
    if name == "pricing":
        return PostedPricing()
    if name == "ski":
        return SkiRental(buy_cost=float(cfg.buy_cost))
    if name == "house":
        return HouseFlipping(purchase_cost=float(cfg.purchase_cost), holding_cost=float(cfg.holding_cost))
    raise ValueError(f"unknown problem {name!r}; choose from ['house', 'pricing', 'ski']")


# picklable pieces for peak_memory's fresh process --------------------------------------------------


def _inputs(problem: DecisionProblem, n: int, d: int, mean: float, spread: float, seed: int) -> tuple:
    f = MeanFunction("linear", d=d, mean=mean, spread=spread, seed=0)
    return problem, f(make_contexts(np.random.default_rng(seed), n, d))


def _closed_form(problem: DecisionProblem, y_hat: np.ndarray) -> None:
    problem.robust_action(y_hat, EPS)


def _generic(problem: DecisionProblem, y_hat: np.ndarray) -> None:
    DecisionProblem.robust_action(problem, y_hat, EPS)


def _scaled(e: Estimate, k: float) -> Estimate:
    """``k`` times an estimate (a per-``n`` time extrapolated to 10^6 decisions)."""
    return Estimate(e.value * k, e.lower * k, e.upper * k, e.n, e.level, e.method)


def run_bench(cfg, out_dir=None) -> dict:
    b = cfg.bench
    seed = seeds_of(cfg)[0]
    d, mean, spread = int(cfg.d), float(cfg.mean), float(cfg.spread)
    n, ng = int(b.n_contexts), int(b.n_generic)
    rng = np.random.default_rng(seed)
    f = MeanFunction("linear", d=d, mean=mean, spread=spread, seed=0)
    X = make_contexts(rng, n, d)
    y_hat = f(X)
    sub = y_hat[:ng]
    problems = {p: make_problem(p, cfg) for p in cfg.problems}

    # timing: one interleaved comparison of every candidate
    cands = {"predict (linear, 10^6 contexts)": lambda: f(X)}
    for p, prob in problems.items():
        cands[f"{p}: closed form"] = partial(prob.robust_action, y_hat, EPS)
        cands[f"{p}: FTP"] = partial(prob.ftp_action, y_hat)
        cands[f"{p}: closed form (n_generic)"] = partial(prob.robust_action, sub, EPS)
        cands[f"{p}: generic numerical (n_generic)"] = partial(DecisionProblem.robust_action, prob, sub, EPS)
        if p == "pricing":
            y_cal = f(X[:2000]) + 0.1 * rng.standard_normal(2000)
            ric = RICh(f, ks=list(cfg.ric_ks)).fit(X[:2000], y_cal)
            cands[f"{p}: RIC-h"] = partial(ric.act_on, y_hat)
    res = compare(cands, repeats=int(b.repeats), warmup=int(b.warmup), threads=cfg.get("threads"))
    sizes = {k: (ng if "n_generic" in k else n) for k in cands}
    rows = []
    for r in res.rows():
        k = r["candidate"]
        rows.append({"problem": k.split(":")[0] if ":" in k else "—", "candidate": k, "n": sizes[k], **r,
                     "decisions_per_s": sizes[k] / r["wall_median_s"]})

    # peak memory, in fresh processes, apart from the timings
    agree, ratio, cpu_cf, cpu_gen = {}, {}, {}, {}
    for p, prob in problems.items():
        mem_cf = peak_memory(_closed_form, setup=partial(_inputs, prob, n, d, mean, spread, seed))
        mem_gen = peak_memory(_generic, setup=partial(_inputs, prob, ng, d, mean, spread, seed))
        cpu_cf[p] = res.time(f"{p}: closed form", "cpu")
        cpu_gen[p] = _scaled(res.time(f"{p}: generic numerical (n_generic)", "cpu"), 1e6 / ng)
        ratio[p] = res.speedup(f"{p}: closed form (n_generic)", over=f"{p}: generic numerical (n_generic)", kind="cpu")
        # the two paths must solve the same min-max: compare their worst-case losses on the ball
        states = prob.ball(sub, np.full(sub.shape, EPS), 513)
        a_gen, a_cf = DecisionProblem.robust_action(prob, sub, EPS), prob.robust_action(sub, EPS)
        agree[p] = float(np.max(np.abs(prob.loss(a_gen[:, None], states).max(-1)
                                       - prob.loss(a_cf[:, None], states).max(-1))))
        rows.append({"problem": p, "candidate": f"{p}: peak memory", "closed_form_peak_mib": mem_cf.mib,
                     "generic_peak_mib": mem_gen.mib, "memory_method": mem_cf.method,
                     "generic_over_closed_cpu_per_decision": ratio[p].value})

    slowest = max(cpu_cf, key=lambda p: cpu_cf[p].value)
    ref = "predict (linear, 10^6 contexts)"
    rel = res.speedup(ref, over=f"{slowest}: closed form", kind="cpu")  # closed-form time / predictor time
    claims = [Claim.threshold(
        "closed_form_1e6_under_1s",
        "Closed-form robust decisions for 10^6 contexts take under a second on 2 cores",
        f"CPU time (s) for 10^6 decisions from predictions, slowest problem ({slowest}); median over "
        f"{int(b.repeats)} interleaved repeats, bootstrap 95% CI; threads={res.threads}",
        cpu_cf[slowest], threshold=1.0, better="lower",
        baselines={ref: res.time(ref, "cpu"),
                   **{f"generic numerical ({p}), per 10^6 extrapolated from {ng}": v for p, v in cpu_gen.items()}},
        notes=(f"{rel.value:.3g}× [{rel.lower:.3g}, {rel.upper:.3g}] the CPU time of the named reference, "
               f"predicting the 10^6 contexts with the linear predictor; generic numerical / closed form per "
               "decision (CPU, paired): " + ", ".join(f"{p} {r.value:.3g}×" for p, r in ratio.items())))]
    checks = [Claim.check(
        f"closed_form_matches_generic_{p}",
        f"{p}: the closed-form robust action and the generic numerical min–max reach the same worst-case loss "
        "over the ε-ball (within the tests' 1e-4)",
        f"max |worst-case loss difference| over {ng} predictions, ε = {EPS}",
        v, threshold=1e-4, better="lower") for p, v in agree.items()]

    def plots(out_dir):
        from robustpredict import plot

        plot.plot_bench([r for r in rows if "decisions_per_s" in r], out_dir / "bench.png")

    return {"claims": claims, "checks": checks, "metrics": rows, "plots": plots,
            "extra": {"closed_vs_generic_worst_loss_max_abs_diff": agree,
                      "generic_over_closed_cpu_per_decision": {p: r.to_dict() for p, r in ratio.items()},
                      "closed_form_over_predict_cpu": rel.to_dict()}}
