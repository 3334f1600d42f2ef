"""``run(cfg) -> dict``: smoke, quick, paper (the CPU miniature of the claims); bench goes to :mod:`hebbrnn.bench`.

Claims (each decided by a paperworks rule from this run's numbers; per-seed values, paired over seeds):

1. ``generalise_<test>``: the Hebb-RNN's recall accuracy on novel items / a longer list / a new chunk pattern
   beats each parameter-matched control (RNN, GRU, LSTM) (``compare_all``).
2. ``orthogonal_scaffold``: the mean principal angle between its global- and local-rank coding subspaces
   beats the shuffled-label null, the random (untrained) network and every control's; requires that its
   states carry both ranks. ``abstract_local_rank``: cross-condition decoding of the local rank beats the
   shuffled null and the random network.
3. ``hebbian_binding``: novel-item accuracy beats the Hebb-off ablation (η = 0).
4. ``transfer_steps`` / ``transfer_accuracy``: backward recall from the scaffold reaches the criterion in fewer
   episodes (censored medians) and is more accurate after a fixed budget than from scratch.
5. ``predictive_local_rank``: on a task without boundary gaps, the Hebb-RNN with the predictive module codes
   the local rank (cross-condition decoding) better than the shuffled null and the same model without it.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import torch

from hebbrnn import experiments as ex
from paperworks import Claim, censored_summary, seeds_of, timer

log = logging.getLogger(__name__)


def _plain(x):
    """A Hydra/OmegaConf config (or plain containers) as plain dicts and lists."""
    if hasattr(x, "items"):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) or (hasattr(x, "__iter__") and not isinstance(x, (str, bytes))):
        return [_plain(v) for v in x]
    return x


def identity_checks(tc: dict) -> list:
    """The cell's exact identities on a small float64 case (the tests check them too)."""
    from hebbrnn.cell import HebbianRNNCell

    torch.manual_seed(0)
    fact = HebbianRNNCell(5, 12, clip=0.3, factored=True).double()
    mat = HebbianRNNCell(5, 12, clip=0.3, factored=False).double()
    mat.load_state_dict(fact.state_dict())
    x = torch.randn(3, 9, 5, dtype=torch.float64)
    outs, grads = [], []
    for cell in (fact, mat):
        s, hs = None, []
        for t in range(x.shape[1]):
            h, s = cell(x[:, t], s)
            hs.append(h)
        y = torch.stack(hs, 1)
        cell.zero_grad()
        (y.sin().sum()).backward()
        outs.append(y.detach())
        grads.append(torch.cat([p.grad.flatten() for p in cell.parameters()]))
    return [
        Claim.check("factored_equals_materialised", "The factored and materialised paths agree in outputs and "
                    "gradients (float64, clipping active).", "max |difference| over outputs and gradients",
                    float(max((outs[0] - outs[1]).abs().max(), (grads[0] - grads[1]).abs().max())),
                    threshold=1e-10, better="lower"),
    ]


def _pick_lr(pilots: dict, lrs) -> tuple[float, bool]:
    scores = [pilots[lr] for lr in lrs]
    i = int(np.argmax(scores))
    return float(lrs[i]), i in (0, len(lrs) - 1)


def run(cfg, out_dir: Path | None = None) -> dict:
    if cfg.experiment.name == "bench":
        from hebbrnn.bench import run_bench

        return run_bench(cfg)
    seeds = seeds_of(cfg)
    c = _plain(cfg)
    tc, H, models = c["task"], int(c["hidden"]), list(c["models"])
    timings: dict = {}
    base = {"task": tc, "hidden": H, "batch_size": int(c["batch_size"]), "eval_every": int(c["eval_every"]),
            "eval_batches": int(c["eval_batches"]), "geometry": c["geometry"]}
    pilot_scores = {m: {} for m in models}
    lr_of: dict = {}
    trained: dict = {}
    transfer: dict = {}
    predictive: dict = {}
    lrs = [float(v) for v in c["pilot"]["lrs"]]
    grid = {m: list(lrs) for m in models}
    extended = dict.fromkeys(models, 0)

    def main_jobs(m):
        return [(("train", m, s), "train", {**base, "model": m, "seed": s, "lr": lr_of[m],
                                           "episodes": int(c["episodes"])}, 3 if m == "hebb" else 1) for s in seeds]

    def hebb_dependants():
        jobs = []
        if c["predictive"]["enabled"]:
            jobs += [(("predictive", w, s), "predictive", {**base, "seed": s, "lr": lr_of["hebb"], "with_module": w,
                                                           "predictive": c["predictive"]}, 2)
                     for s in seeds for w in (True, False)]
        if c["transfer"]["enabled"]:
            jobs += [(("transfer", "scratch", s), "transfer", {**base, "seed": s, "lr": lr_of["hebb"], "start": "scratch",
                                                               "transfer": c["transfer"]}, 2) for s in seeds]
        return jobs

    def on_done(key, res):
        what = key[0]
        if what == "pilot":
            _, m, lr = key
            pilot_scores[m][lr] = res["score"]
            if len(pilot_scores[m]) < len(grid[m]):
                return []
            best, edge = _pick_lr(pilot_scores[m], grid[m])
            if edge and extended[m] < int(c["pilot"]["max_extensions"]):  # best on the grid's edge: extend it
                extended[m] += 1
                new = best / 3 if best == min(grid[m]) else best * 3
                grid[m] = sorted([*grid[m], new])
                log.info("pilot %s: best lr %g on the grid's edge, trying %g", m, best, new)
                return [pilot_job(m, new)]
            lr_of[m] = best
            log.info("pilot %s: lr %g (scores %s)", m, lr_of[m], pilot_scores[m])
            return main_jobs(m) + (hebb_dependants() if m == "hebb" else [])
        if what == "train":
            _, m, s = key
            trained[(m, s)] = res
            log.info("trained %s seed %d in %.0fs: novel %.3f", m, s, res["seconds"], res["acc"]["novel"])
            if m == "hebb" and c["transfer"]["enabled"]:
                return [(("transfer", "scaffold", s), "transfer",
                         {**base, "seed": s, "lr": lr_of["hebb"], "start": "scaffold", "transfer": c["transfer"],
                          "state_dict": res["state_dict"]}, 4)]
            return []
        if what == "transfer":
            transfer[(key[1], key[2])] = res
            log.info("transfer %s seed %d: reached %s", key[1], key[2], res["reached"])
        if what == "predictive":
            predictive[(key[1], key[2])] = res
        return []

    pilot_seed = int(c["pilot"]["seed"])

    def pilot_job(m, lr):
        return (("pilot", m, lr), "pilot", {**base, "model": m, "seed": pilot_seed, "lr": lr,
                                            "episodes": int(c["pilot"]["episodes"])}, 5 if m == "hebb" else 0)

    jobs = [pilot_job(m, lr) for m in models for lr in lrs]
    with timer(timings, "jobs_s"):
        ex.run_jobs(jobs, on_done, workers=int(c["workers"]))
    claims, checks, metrics, extra = [], identity_checks(tc), [], {}
    extra["learning_rates"] = lr_of
    extra["lr_on_grid_edge"] = {m: _pick_lr(pilot_scores[m], grid[m])[1] for m in models}
    extra["lr_grid_extensions"] = extended
    extra["pilot_scores"] = {m: {str(k): v for k, v in d.items()} for m, d in pilot_scores.items()}
    for (m, s), r in sorted(trained.items()):
        g = r["geometry"]
        metrics.append({"part": "train", "model": m, "seed": s, "hidden_size": r["hidden_size"],
                        "n_params": r["n_params"], "lr": lr_of[m], **{f"acc_{k}": v for k, v in r["acc"].items()},
                        **{k: g[k] for k in ("mean_angle", "null_mean_angle", "p_mean_angle", "decode_global",
                                             "decode_local", "null_decode_local", "pca2_variance",
                                             "null_pca2_variance", "additive_r2")},
                        "seconds": r["seconds"]})
    hebb_n = trained[("hebb", seeds[0])]["n_params"]
    mism = max(abs(trained[(m, s)]["n_params"] - hebb_n) / hebb_n for m in models for s in seeds)
    checks.append(Claim.check("parameters_matched", "Every control's parameter count is within 5% of the Hebb-RNN's.",
                              "max relative parameter mismatch", float(mism), threshold=0.05, better="lower"))

    def per_seed(m, f):
        return [f(trained[(m, s)]) for s in seeds]

    controls = [m for m in ex.CONTROLS if m in models]
    names = {"novel": "novel items (fresh item–rank bindings)", "longer": "a longer list (4 chunks of 3, first 9 "
             "ranks cued)", "pattern": f"a new chunk pattern {tuple(tc['new_pattern'])}"}
    for test, words in names.items():
        if controls:
            claims.append(Claim.compare_all(
                f"generalise_{test}", f"The meta-trained Hebb-RNN recalls {words} better than every parameter-matched "
                f"control ({', '.join(controls)}).", f"recall accuracy, {test} (chance 1/{tc['n_items']})",
                per_seed("hebb", lambda r, t=test: r["acc"][t]),
                baselines={m: per_seed(m, lambda r, t=test: r["acc"][t]) for m in controls},
                better="higher", paired=True, bounds=(0, 1)))
    # claim 2: geometry
    ang = per_seed("hebb", lambda r: r["geometry"]["mean_angle"])
    carries = all(r["geometry"]["p_decode_global"] < 0.05 and r["geometry"]["p_decode_local"] < 0.05
                  for r in (trained[("hebb", s)] for s in seeds))
    bases = {"shuffled_null": per_seed("hebb", lambda r: r["geometry"]["null_mean_angle"]),
             "random_network": per_seed("hebb", lambda r: r["geometry_random"]["mean_angle"]),
             **{m: per_seed(m, lambda r: r["geometry"]["mean_angle"]) for m in controls}}
    claims.append(Claim.compare_all(
        "orthogonal_scaffold", "The Hebb-RNN's delay states code global (chunk) and local (within-chunk) rank in "
        "subspaces closer to orthogonal than the shuffled-label null, the untrained network and every control.",
        "mean principal angle between the global- and local-rank coding subspaces (degrees)", ang,
        baselines=bases, better="higher", paired=True,
        requires={"its states carry both ranks (cross-condition decoding above the shuffled null, p < 0.05, "
                  "every seed)": carries}))
    claims.append(Claim.compare_all(
        "abstract_local_rank", "The Hebb-RNN's local-rank code generalises across chunks (cross-condition decoding, "
        "train on two chunks, test on the third) better than the shuffled-label null and the untrained network.",
        "cross-condition decoding accuracy of the local rank (chance 1/3)",
        per_seed("hebb", lambda r: r["geometry"]["decode_local"]),
        baselines={"shuffled_null": per_seed("hebb", lambda r: r["geometry"]["null_decode_local"]),
                   "random_network": per_seed("hebb", lambda r: r["geometry_random"]["decode_local"])},
        better="higher", paired=True, bounds=(0, 1)))
    extra["geometry_hebb"] = {k: per_seed("hebb", lambda r, k=k: r["geometry"][k]) for k in
                              ("mean_angle", "null_mean_angle", "pca2_variance", "null_pca2_variance",
                               "decode_global", "decode_local", "additive_r2", "null_additive_r2")}
    # claim 3: Hebbian binding
    if "hebb_off" in models:
        claims.append(Claim.compare(
            "hebbian_binding", "Fast Hebbian plasticity binds fresh items to ranks within one episode: the Hebb-RNN "
            "recalls novel items better than the Hebb-off ablation (η = 0, same architecture and training).",
            "recall accuracy, novel items", per_seed("hebb", lambda r: r["acc"]["novel"]), baseline="hebb_off",
            baselines={"hebb_off": per_seed("hebb_off", lambda r: r["acc"]["novel"])}, better="higher", paired=True,
            bounds=(0, 1)))
    extra["hebb_eta_decay"] = [[trained[("hebb", s)]["eta"], trained[("hebb", s)]["decay"]] for s in seeds]
    extra["acc_random_network"] = per_seed("hebb", lambda r: r["acc_random"])
    # claim 4: transfer
    xc = c["transfer"]
    if xc["enabled"]:
        cap = int(xc["cap"])
        st = {k: [transfer[(k, s)]["reached"] for s in seeds] for k in ("scaffold", "scratch")}
        claims.append(Claim.compare(
            "transfer_steps", f"Starting from the pre-learned scaffold, backward recall reaches accuracy "
            f"{xc['criterion']:g} in fewer meta-training episodes than from scratch (cap {cap}; misses censored).",
            "episodes to criterion (median, censored)", censored_summary(st["scaffold"], budget=cap),
            baseline="scratch", baselines={"scratch": censored_summary(st["scratch"], budget=cap)}, better="lower"))
        claims.append(Claim.compare(
            "transfer_accuracy", f"After {int(xc['budget'])} episodes of backward-recall training, the scaffold start "
            "is more accurate than the scratch start.", f"backward recall accuracy after {int(xc['budget'])} episodes",
            [transfer[("scaffold", s)]["acc_at_budget"] for s in seeds], baseline="scratch",
            baselines={"scratch": [transfer[("scratch", s)]["acc_at_budget"] for s in seeds]}, better="higher",
            paired=True, bounds=(0, 1)))
        for (k, s), r in sorted(transfer.items()):
            metrics.append({"part": "transfer", "model": k, "seed": s, "reached": r["reached"],
                            "acc_at_budget": r["acc_at_budget"], "acc_start": r["evals"][0][1], "seconds": r["seconds"]})
        extra["transfer_curves"] = {f"{k}_{s}": r["evals"] for (k, s), r in transfer.items()}
    # claim 5: predictive module
    pc = c["predictive"]
    if pc["enabled"]:
        w = [predictive[(True, s)] for s in seeds]
        wo = [predictive[(False, s)] for s in seeds]
        claims.append(Claim.compare_all(
            "predictive_local_rank", "Without boundary gaps (chunks marked only by shared item content), the Hebb-RNN "
            "with the predictive module codes the local rank (cross-condition decoding) better than the shuffled null "
            "and than the same Hebb-RNN without the module.", "cross-condition decoding accuracy of the local rank",
            [r["geometry"]["decode_local"] for r in w],
            baselines={"shuffled_null": [r["geometry"]["null_decode_local"] for r in w],
                       "no_predictive_module": [r["geometry"]["decode_local"] for r in wo]},
            better="higher", paired=True, bounds=(0, 1)))
        for r in w + wo:
            g = r["geometry"]
            metrics.append({"part": "predictive", "model": "hebb+pred" if r["with_module"] else "hebb", "seed": r["seed"],
                            "acc_novel": r["acc"], "decode_local": g["decode_local"],
                            "null_decode_local": g["null_decode_local"], "decode_global": g["decode_global"],
                            "mean_angle": g["mean_angle"], "null_mean_angle": g["null_mean_angle"],
                            "prediction_loss": r["prediction_loss"], "seconds": r["seconds"]})
    extra["learning_curves"] = {f"{m}_{s}": r["history"]["evals"] for (m, s), r in trained.items()}
    hebb0 = trained[("hebb", seeds[0])]["state_dict"]
    if out_dir is not None:  # the first seed's trained models, one self-contained file each (hebbrnn evaluate)
        for m in models:
            model = ex.make_model(m, tc, H, seeds[0])
            model.load_state_dict(trained[(m, seeds[0])]["state_dict"])
            model.save(Path(out_dir) / f"model_{m}_seed{seeds[0]}.pt")
        extra["saved_models"] = [f"model_{m}_seed{seeds[0]}.pt" for m in models]

    def plots(out_dir):
        from hebbrnn import plot

        model = ex.make_model("hebb", tc, H, seeds[0])
        model.load_state_dict(hebb0)
        S, g, loc = ex.delay_states(model, ex.make_task(tc), episodes=64, seed=1)
        plot.plot_all(metrics, S, g, loc, Path(out_dir))

    if any(isinstance(v, float) and math.isnan(v) for v in extra["acc_random_network"]):  # pragma: no cover
        log.warning("random-network accuracy is NaN")
    return {"claims": claims, "checks": checks, "metrics": metrics, "seeds": seeds, "plots": plots, "extra": extra,
            "timings": timings}
