"""``run(cfg) -> dict``: the experiments behind the paper's claims, pure and callable from tests.

Tasks (``cfg.tasks``): ``math`` (claims 1 and 3 on random graphs), ``colours`` (claim 5),
``motifs`` (claim 2: faithfulness and determinism of q), ``csbm`` (claim 2: shape of p),
``ring`` (claim 4), ``bench`` (the performance claims).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from paperworks import Claim, estimate, seeds_of
from tikhonovgnn.baselines import make_model
from tikhonovgnn.data import colour_topology_graphs, csbm, motif_graphs, ring_graphs
from tikhonovgnn.solve import dense_laplacian, solve_cg
from tikhonovgnn.tikhonov import TikhonovLayer, propagation_matrix, recover_explanation, tikhonov_objective
from tikhonovgnn.train import (
    graph_accuracy,
    node_accuracy,
    train_graph_classifier,
    train_node_classifier,
    tune_on_ladder,
)

log = logging.getLogger(__name__)


def _split(graphs, frac: float, seed: int):
    idx = np.random.default_rng(seed + 10_000).permutation(len(graphs))
    k = int(round(frac * len(graphs)))
    return [graphs[i] for i in idx[:k]], [graphs[i] for i in idx[k:]]


def _tik_kwargs(cfg, **over) -> dict:
    m = cfg.model
    kw = {"degree": int(m.degree), "q_hidden": int(m.q_hidden), "q_layers": int(m.q_layers), "solver": "dense"}
    kw.update(over)
    return kw


def _seeded_model(name, seed, *args, **kw):
    torch.manual_seed(seed)
    return make_model(name, *args, **kw)


# claims 1 and 3: exact minimiser, identifiability ------------------------------------------

def task_math(cfg, seeds) -> tuple[list, list, dict]:
    c = cfg.math
    rows = []
    for seed in seeds:
        gen = torch.Generator().manual_seed(seed)
        for i in range(int(c.graphs)):
            n = int(c.nodes)
            # a ring plus random chords: connected, so R is dense and the gauge is the only ambiguity
            ring = torch.stack([torch.arange(n), torch.roll(torch.arange(n), -1)])
            chords = torch.randint(0, n, (2, n // 2), generator=gen)
            ei = torch.cat([ring, chords], 1)
            ei = torch.cat([ei, ei.flip(0)], 1)
            x = torch.randn(n, 3, generator=gen, dtype=torch.float64)
            layer = TikhonovLayer(3, 3, degree=int(cfg.model.degree), solver="dense").double()
            with torch.no_grad():
                layer.poly.raw.copy_(torch.randn(layer.poly.raw.shape, generator=gen, dtype=torch.float64))
            q = layer.importance(x, ei).detach()
            theta = layer.poly.theta.detach()
            coeffs = layer.poly.monomial(torch.float64).detach()  # what recover_explanation solves for
            L = dense_laplacian(ei, n, dtype=torch.float64)[0][0]
            R = propagation_matrix(L, q, theta)
            y = (R @ x).requires_grad_(True)
            (grad,) = torch.autograd.grad(tikhonov_objective(y, x, L, q, theta), y)
            scale = (2 * q[:, None] * x).norm()  # the gradient's size at y = 0
            # the CG path on the same problem
            from tikhonovgnn.solve import normalized_laplacian

            ycg = solve_cg(normalized_laplacian(ei, n, dtype=torch.float64), theta, q, q[:, None] * x, tol=1e-12)
            qh, ch, gap = recover_explanation(R, L, int(cfg.model.degree))
            R2 = propagation_matrix(L, 2 * q, 2 * theta)  # the gauge (2p, 2Q): same operator
            rows.append({
                "task": "math", "seed": seed, "graph": i,
                "grad_rel": float(grad.norm() / scale),
                "cg_vs_dense_rel": float((ycg - R @ x).norm() / (R @ x).norm()),
                "R_density": float((R.abs() > 0).double().mean()),
                "recovery_err": float(max((qh - q).norm() / q.norm(), (ch - coeffs).norm() / coeffs.norm())),
                "nullspace_gap": gap,
                "gauge_same_R": float((R2 - R).abs().max()),
            })
    n_graphs = len(rows)
    # claims 1 and 3 are theorems: on any correct implementation they hold to round-off, so they are checks
    checks = [
        Claim.check(
            "exact_minimiser", "Rx is the exact minimiser of (y-x)^T Q (y-x) + y^T p(L) y (gradient zero at Rx).",
            "max ||grad J(Rx)|| / ||grad J(0)|| over random graphs (float64)", max(r["grad_rel"] for r in rows),
            threshold=1e-8, better="lower",
            notes=f"{n_graphs} random connected graphs of {int(c.nodes)} nodes, random q and p."),
        Claim.check(
            "cg_matches_dense", "The CG solve path gives the dense solve's Rx.",
            "max ||y_CG - Rx|| / ||Rx|| (float64, CG tol 1e-12)", max(r["cg_vs_dense_rel"] for r in rows),
            threshold=1e-8, better="lower"),
        Claim.check(
            "distinct_explanations_distinct_operators",
            "After gauge fixing (mean q = 1), (q, p) is recovered from R alone: distinct explanations, distinct R.",
            "max relative error recovering (q, p) from R alone", max(r["recovery_err"] for r in rows),
            threshold=1e-6, better="lower",
            notes="R -> (q, p) is inverted by a homogeneous linear solve; a 1-D null space means identifiable."),
        Claim.check(
            "nullspace_one_dimensional", "The recovery system has a one-dimensional null space (the gauge).",
            "max ratio of the two smallest singular values", max(r["nullspace_gap"] for r in rows),
            threshold=1e-6, better="lower"),
        Claim.check(
            "gauge_freedom", "Without gauge fixing, (2p, 2Q) gives the same R as (p, Q).",
            "max |R(2p, 2Q) - R(p, Q)|", max(r["gauge_same_R"] for r in rows), threshold=1e-10, better="lower"),
        Claim.check(
            "R_dense_on_connected_graphs", "R has no zero entry on a connected graph (a global receptive field).",
            "min fraction of non-zero entries of R", min(r["R_density"] for r in rows), threshold=1.0, better="higher"),
    ]
    return checks, rows, {"R_density_min": min(r["R_density"] for r in rows)}


# claim 5: accuracy on the colour-and-topology set --------------------------------------------

def _split3(graphs, seed: int, fractions=(0.6, 0.2)):
    """Train / validation / test lists (60 / 20 / 20 by default)."""
    idx = np.random.default_rng(seed + 10_000).permutation(len(graphs))
    k1 = int(round(fractions[0] * len(graphs)))
    k2 = k1 + int(round(fractions[1] * len(graphs)))
    return [graphs[i] for i in idx[:k1]], [graphs[i] for i in idx[k1:k2]], [graphs[i] for i in idx[k2:]]


def tuning_seeds(cfg, seeds) -> list[int]:
    """``colours.tune_seeds`` seeds disjoint from the evaluation ``seeds`` (data and init of the lr tuning)."""
    k = int(cfg.colours.get("tune_seeds", 1))
    if k < 1:
        raise ValueError(f"colours.tune_seeds must be >= 1, got {k}")
    start = max(seeds) + 1000
    return list(range(start, start + k))


def task_colours(cfg, seeds) -> tuple[list, list, dict]:
    c, m = cfg.colours, cfg.model
    models = ["tikhonov", *cfg.baselines]
    cap = int(c.max_epochs)
    rows, tuned, interior = [], {}, {}

    def data(seed):
        graphs = colour_topology_graphs(int(c.graphs), np.random.default_rng(seed), min_nodes=int(c.min_nodes),
                                        max_nodes=int(c.max_nodes))
        return _split3(graphs, seed)

    def fit(name, seed, lr, train, val):
        model = _seeded_model(name, seed, 5, int(m.hidden), 3, task="graph", pool=str(c.pool),
                              num_layers=int(m.layers), tikhonov=_tik_kwargs(cfg))
        info = {}
        train_graph_classifier(model, train, epochs=cap, lr=lr, batch_size=int(c.get("batch_size", m.batch_size)),
                               seed=seed, name=name, val=val, patience=int(c.patience), log=info,
                               stop_on_nonfinite=True, min_delta=float(c.min_delta))
        return model, info

    # learning rates: tuned per model on separate tuning seeds (their own data and init), the same ladder and
    # starting grid for every model, the grid extended off an edge (tune_on_ladder); the lowest mean
    # validation loss over the tuning seeds wins. The evaluation seeds never see the tuning.
    tseeds = tuning_seeds(cfg, seeds)
    tdata = {s: data(s) for s in tseeds}
    for name in tqdm(models, desc="colours tuning", disable=None):
        def score(lr, name=name):
            losses = []
            for s in tseeds:
                t0 = time.perf_counter()
                _, info = fit(name, s, lr, tdata[s][0], tdata[s][1])
                rows.append({"task": "colours_tuning", "seed": s, "model": name, "lr": lr, **info,
                             "hit_cap": info["epochs_run"] >= cap and not info["diverged"],
                             "train_s": time.perf_counter() - t0})
                losses.append(info["best_val_loss"])
            return float(np.mean(losses))

        tuned[name], _, interior[name] = tune_on_ladder(score, c.lr_ladder, c.lr_grid)
        log.info("colours: %s lr %g (interior: %s)", name, tuned[name], interior[name])
    for seed in tqdm(seeds, desc="colours", disable=None):
        train, val, test = data(seed)
        for name in models:
            t0 = time.perf_counter()
            model, info = fit(name, seed, tuned[name], train, val)
            rows.append({"task": "colours", "seed": seed, "model": name, "lr": tuned[name],
                         "test_acc": graph_accuracy(model, test), "train_acc": graph_accuracy(model, train),
                         "val_acc": info["best_val_acc"], "val_loss": info["best_val_loss"],
                         "epochs_run": info["epochs_run"], "best_epoch": info["best_epoch"],
                         "diverged": info["diverged"], "hit_cap": info["epochs_run"] >= cap and not info["diverged"],
                         "train_s": time.perf_counter() - t0})
    runs = [r for r in rows if r["task"] == "colours"]
    acc = {n: [r["test_acc"] for r in runs if r["model"] == n] for n in models}
    n_capped = {n: sum(r["hit_cap"] for r in runs if r["model"] == n) for n in models}
    n_tune_capped = sum(r["hit_cap"] for r in rows if r["task"] == "colours_tuning")
    n_tune = sum(r["task"] == "colours_tuning" for r in rows)
    diverged = sorted({r["model"] for r in runs if r["diverged"]})
    compared = ("tikhonov", "gin")
    scored = {n: sorted({r["lr"] for r in rows if r["task"] == "colours_tuning" and r["model"] == n}) for n in models}
    claim = Claim.compare(
        "accuracy_matches_gin", "Accuracy matches opaque GNNs (GIN) on graph classification.",
        "test accuracy, colour-and-topology set", acc["tikhonov"], baseline="gin",
        baselines={n: v for n, v in acc.items() if n != "tikhonov"}, better="higher", margin=-0.05, paired=True,
        bounds=(0, 1),
        requires={"GIN above chance (1/3) on every seed": min(acc["gin"]) > 1 / 3,
                  "Tikhonov and GIN early-stopped before the epoch cap on every seed":
                      all(n_capped[n] == 0 for n in compared),
                  "no Tikhonov or GIN run diverged": not any(n in diverged for n in compared),
                  "the tuned learning rates of Tikhonov and GIN interior to their scored grids":
                      all(interior[n] for n in compared)},
        notes=f"non-inferiority margin 5 accuracy points (our choice; the abstract says 'matches'); paired over "
              f"{len(seeds)} seeds; chance is 1/3. {int(c.graphs)} graphs of {int(c.min_nodes)}-{int(c.max_nodes)} "
              f"nodes per seed, split 60/20/20; every model early-stopped on the validation loss (patience "
              f"{int(c.patience)}, min_delta {float(c.min_delta):g}, cap {cap} epochs), its learning rate tuned "
              f"on {len(tseeds)} separate tuning seed(s) {tseeds} by the validation loss, starting from {sorted(float(v) for v in c.lr_grid)} and "
              f"extended along {sorted(float(v) for v in c.lr_ladder)} while the best was on an edge: "
              + ", ".join(f"{n} {tuned[n]:g} (scored {scored[n]}{'' if interior[n] else ', ON THE EDGE'})"
                          for n in models)
              + f". Evaluation runs that hit the epoch cap: {sum(n_capped.values())} of {len(runs)}"
              + "".join(f"; {n} {k}" for n, k in n_capped.items() if k)
              + f"; tuning runs that hit it: {n_tune_capped} of {n_tune}"
              + (f"; diverged on some seed: {', '.join(diverged)}" if diverged else "") + ".")
    return [claim], rows, {"colours_lr": tuned, "colours_lr_interior": interior, "colours_capped": n_capped}


# claim 2: faithfulness and determinism of q on motif graphs ------------------------------------

def task_motifs(cfg, seeds) -> tuple[list, list, dict]:
    from tikhonovgnn.explain import motif_faithfulness, rank_agreement, rerun_agreement

    c, m = cfg.motifs, cfg.model
    rows, keep, masks = [], {}, []
    capped = {"tikhonov": 0, "gin": 0}  # runs cut by the epoch cap rather than by early stopping
    # one data set and split for every seed (the seeds retrain the models), so that explanations of the
    # same graphs can be compared across retraining seeds
    graphs = motif_graphs(int(c.graphs), int(cfg.seed), base_nodes=int(c.base_nodes))
    train, val, test = _split3(graphs, int(cfg.seed))
    ex = test[: int(c.explain_graphs)]
    for seed in tqdm(seeds, desc="motifs", disable=None):
        tik = _seeded_model("tikhonov", seed, graphs[0].x.size(1), int(m.hidden), 2, task="graph", pool="sum",
                            tikhonov=_tik_kwargs(cfg, q_kind="gin", q_layers=3))
        gin = _seeded_model("gin", seed, graphs[0].x.size(1), int(m.hidden), 2, task="graph", pool="sum",
                            num_layers=int(m.layers))
        epochs = {}
        for name, model in (("tikhonov", tik), ("gin", gin)):
            info = {}
            train_graph_classifier(model, train, epochs=int(c.max_epochs), lr=float(m.lr),
                                   batch_size=int(m.batch_size), seed=seed, name=name, val=val,
                                   patience=int(c.patience), log=info, min_delta=float(c.min_delta))
            epochs[name] = info["epochs_run"]
            capped[name] += info["epochs_run"] >= int(c.max_epochs)
        mk = {}
        faith = motif_faithfulness(tik, gin, ex, top_k=5, gnnexplainer_epochs=int(c.gnnexplainer_epochs), seed=seed,
                                   masks=mk)
        masks.append(mk)
        agree = rerun_agreement(tik, gin, ex[: int(c.rerun_graphs)], gnnexplainer_epochs=int(c.gnnexplainer_epochs),
                                seed=seed)
        rows.append({"task": "motifs", "seed": seed, "acc_tikhonov": graph_accuracy(tik, test),
                     "acc_gin": graph_accuracy(gin, test), **faith, "epochs_tikhonov": epochs["tikhonov"],
                     "epochs_gin": epochs["gin"], "rerun_q": agree["q"], "rerun_gnnexplainer": agree["gnnexplainer"]})
        if seed == seeds[0]:
            keep = {"graph": ex[0], "q": tik.explain(ex[0].x, ex[0].edge_index)["q"]}
    # agreement across retraining seeds, per explained graph (mean over pairs of seeds)
    pairs = [(i, j) for i in range(len(masks)) for j in range(i + 1, len(masks))]
    across = {k: [float(np.mean([rank_agreement(masks[i][k][g], masks[j][k][g]) for i, j in pairs]))
                  for g in range(len(ex))] if pairs else [] for k in ("q", "gnnexplainer")}
    for g in range(len(ex) if pairs else 0):
        rows.append({"task": "motifs_across_seeds", "graph": g, "q": across["q"][g],
                     "gnnexplainer": across["gnnexplainer"][g]})

    def col(k):
        return [r[k] for r in rows if r["task"] == "motifs"]

    acc = (f"accuracy Tikhonov {np.mean(col('acc_tikhonov')):.3f}, GIN {np.mean(col('acc_gin')):.3f}; lr "
           f"{float(m.lr):g}, early-stopped on the validation loss (patience {int(c.patience)}, min_delta "
           f"{float(c.min_delta):g}, cap "
           f"{int(c.max_epochs)}), runs cut by the cap: Tikhonov {capped['tikhonov']}, GIN {capped['gin']}")
    uncapped = {"Tikhonov and GIN early-stopped before the epoch cap on every seed": not any(capped.values())}
    claims = [
        Claim.compare(
            "q_masking_faithful", "Large q_i marks the nodes that drive the prediction (masking them changes it).",
            "fidelity+ (PyG) masking the top-5 q nodes", col("fid_plus_q"), baseline="random 5 nodes",
            baselines={"random 5 nodes": col("fid_plus_random"), "motif nodes": col("fid_plus_motif")},
            better="higher", paired=True, bounds=(0, 1), requires=uncapped,
            notes=f"BA+house vs BA+cycle (ExplainerDataset); Q-network = 3-layer GIN; {acc}."),
        Claim.compare(
            "q_motif_auroc", "The q ranking recovers the ground-truth motif (vs GNNExplainer on GIN).",
            "AUROC of q vs motif node mask", col("auroc_q"), baseline="GNNExplainer on GIN",
            baselines={"GNNExplainer on GIN": col("auroc_gnnexplainer")}, better="higher", paired=True,
            bounds=(0, 1), requires=uncapped, notes=f"{acc}; a random ranking has AUROC 0.5."),
    ]
    if pairs:
        claims.append(Claim.compare(
            "q_agrees_across_seeds",
            "The q explanation of a graph agrees across retraining seeds more than GNNExplainer's on retrained GINs.",
            f"Spearman correlation of q between models retrained with different seeds (mean over {len(pairs)} pairs),"
            " per explained graph", across["q"], baseline="GNNExplainer on GIN",
            baselines={"GNNExplainer on GIN": across["gnnexplainer"]}, better="higher", paired=True, bounds=(-1, 1),
            requires=uncapped,
            notes=f"{acc}. {len(ex)} test graphs, the same for every seed; models early-stopped on a validation split; "
                  "a constant mask agrees only with another constant one. A faithful explanation of the data should "
                  "not depend on the initialisation."))
    # a forward pass run twice agrees: a property of the design (no optimisation), hence a check
    checks = [
        Claim.check(
            "explanation_deterministic", "The built-in explanation is the same on every rerun.",
            "min Spearman correlation of q between two reruns", min(col("rerun_q")), threshold=0.999,
            better="higher",
            notes=f"GNNExplainer on GIN, two reruns: mean Spearman {np.mean(col('rerun_gnnexplainer')):.3f}."),
    ]
    return claims + checks, rows, keep


# claim 2: the shape of p on CSBMs -------------------------------------------------------------

def _tilt(response: torch.Tensor) -> float:
    """``r(0) - r(2)`` of the response ``1/(1+p)``: > 0 low-pass, < 0 high-pass."""
    return float(response[0] - response[-1])


def task_csbm(cfg, seeds) -> tuple[list, list, dict]:
    c, m = cfg.csbm, cfg.model
    seeds = seeds[: int(c.get("seeds", len(seeds)))]
    rows, curves = [], {}
    for h in c.homophily:
        for seed in seeds:
            g = csbm(int(c.nodes), float(h), np.random.default_rng(seed), avg_degree=float(c.avg_degree),
                     num_features=int(c.features), signal=float(c.signal))
            # a flat initial p, so the low/high-pass tilt is learned rather than inherited from the init
            tik = _seeded_model("tikhonov", seed, g.x.size(1), int(m.hidden), 2, task="node",
                                tikhonov=_tik_kwargs(cfg, p_init=str(c.p_init)))
            mlp = _seeded_model("mlp", seed, g.x.size(1), int(m.hidden), 2, task="node", num_layers=2)
            for name, model in (("tikhonov", tik), ("mlp", mlp)):
                train_node_classifier(model, [g], mask_key="train_mask", epochs=int(c.epochs), lr=float(m.lr),
                                      weight_decay=5e-4, seed=seed, name=name)
            e = tik.explain(g.x, g.edge_index)
            curves.setdefault(float(h), []).append(e["response"].numpy())
            rows.append({"task": "csbm", "seed": seed, "homophily": float(h),
                         "acc_tikhonov": node_accuracy(tik, [g], mask_key="test_mask"),
                         "acc_mlp": node_accuracy(mlp, [g], mask_key="test_mask"),
                         "tilt": _tilt(e["response"]), "p0": float(e["p_values"][0]), "p2": float(e["p_values"][-1])})
    lam = torch.linspace(0, 2, 101).numpy()

    def tilt(h):
        return [r["tilt"] for r in rows if r["homophily"] == h]

    hs = [float(h) for h in c.homophily]
    others = {f"tilt at h={h}": estimate(tilt(h), bounds=(-1, 1)) for h in hs}
    # a p that never leaves its flat start has tilt exactly 0 and would sit on the threshold
    moved = {"p moved from its flat start on every seed (tilt != 0)": all(abs(r["tilt"]) > 1e-6 for r in rows)}
    claims = [
        Claim.threshold("p_lowpass_at_high_homophily", f"At high homophily (h={max(hs):g}) the learned p is low-pass.",
                        f"response tilt r(0) - r(2), r = 1/(1+p), h={max(hs):g}", tilt(max(hs)), threshold=0.0,
                        better="higher", baselines=others, bounds=(-1, 1), requires=moved,
                        notes="node-level CSBM, 2 classes; model = MLP then one Tikhonov layer; flat initial p."),
        Claim.threshold("p_highpass_at_low_homophily", f"At low homophily (h={min(hs):g}) the learned p is high-pass.",
                        f"response tilt r(0) - r(2), r = 1/(1+p), h={min(hs):g}", tilt(min(hs)), threshold=0.0,
                        better="lower", baselines=others, bounds=(-1, 1), requires=moved),
    ]
    return claims, rows, {"csbm_lambda": lam, "csbm_curves": {h: np.mean(v, 0) for h, v in curves.items()}}


# claim 4: a global receptive field in one layer -------------------------------------------------

def task_ring(cfg, seeds) -> tuple[list, list, dict]:
    c, m = cfg.ring, cfg.model
    seeds = seeds[: int(c.get("seeds", len(seeds)))]
    models = {"tikhonov": {}, "gcn": {"num_layers": 2}, "mlp": {"num_layers": 2}}
    rows = []
    for seed in seeds:
        graphs = ring_graphs(int(c.graphs), np.random.default_rng(seed), length=int(c.length), ring=bool(c.ring))
        train, test = _split(graphs, 0.7, seed)
        for name, kw in models.items():
            model = _seeded_model(name, seed, 4, int(m.hidden), 2, task="node", tikhonov=_tik_kwargs(cfg), **kw)
            train_node_classifier(model, train, mask_key="target_mask", epochs=int(c.epochs), lr=float(m.lr),
                                  batch_size=int(m.batch_size), seed=seed, name=name)
            rows.append({"task": "ring", "seed": seed, "model": name,
                         "test_acc": node_accuracy(model, test, mask_key="target_mask")})
    acc = {n: [r["test_acc"] for r in rows if r["model"] == n] for n in models}
    claim = Claim.compare(
        "global_receptive_field", "One Tikhonov layer reaches across the graph where a 2-layer GCN cannot.",
        f"test accuracy, label {int(c.length) // 2 if c.ring else int(c.length) - 1} hops from the read-out node",
        acc["tikhonov"], baseline="gcn", baselines={"gcn": acc["gcn"], "mlp": acc["mlp"]}, better="higher",
        paired=True, bounds=(0, 1), notes="2 classes, chance 0.5; a 2-layer GCN cannot see the label by construction.")
    return [claim], rows, {}


# performance claims ------------------------------------------------------------------------------

def task_bench(cfg, seeds) -> tuple[list, list, dict]:
    from paperworks.metrics import loglog_slope
    from paperworks.threads import resolve_threads
    from tikhonovgnn.bench import memory_mib, time_methods, time_skewed_batch, trained_q_and_p

    c, r = cfg.bench, cfg.ring
    threads = resolve_threads(cfg.get("threads", None) or 1)
    # CG's cost depends on the spread of q: use the q and p of a trained model (the ring task's)
    t0 = time.perf_counter()
    trained = trained_q_and_p(seed=seeds[0], graphs=int(r.graphs), length=int(r.length), epochs=int(r.epochs),
                              degree=int(cfg.model.degree), hidden=int(cfg.model.hidden), lr=float(cfg.model.lr))
    qv = np.asarray(trained["q"])
    log.info("bench: ring model trained in %.1f s (test accuracy %.2f), q in [%.2e, %.2e]",
             time.perf_counter() - t0, trained["test_acc"], qv.min(), qv.max())
    case = {"avg_degree": float(c.avg_degree), "channels": int(c.channels), "seed": seeds[0],
            "theta": trained["theta"], "q_pool": trained["q"]}
    sizes = sorted(int(n) for n in c.sizes)
    largest = sizes[-1]
    rows, res_largest, its_largest = [], None, {}
    # time: every method on the same graph, interleaved, threads pinned
    for n in tqdm(sizes, desc="bench time", disable=None):
        methods = [m for m in ("gcn", "cg", "cg_cheb", "dense") if m != "dense" or n <= int(c.dense_max)]
        res, n_edges, its = time_methods(methods, n, repeats=int(c.repeats), warmup=int(c.warmup), threads=threads,
                                         **case)
        for row in res.rows():
            m = row.pop("candidate")
            row = {"task": "bench", "method": m, "num_nodes": n, "num_edges": n_edges,
                   "time_s": row.pop("wall_median_s"), "cpu_s": row.pop("cpu_median_s"), **row}
            if m != "gcn":
                e = res.speedup("gcn", over=m)
                row.update(time_ratio_vs_gcn=e.value, time_ratio_lo=e.lower, time_ratio_hi=e.upper,
                           cpu_ratio_vs_gcn=res.speedup("gcn", over=m, kind="cpu").value)
            if m in its:
                row.update(cg_iters_forward=its[m][0], cg_iters_backward=its[m][-1])
            log.info("bench %-7s n=%-7d wall %.4f s cpu %.4f s", m, n, row["time_s"], row["cpu_s"])
            rows.append(row)
        if n == largest:
            res_largest, its_largest = res, its
    # a skewed batch: solver="auto" against CG
    skew = time_skewed_batch(small=int(c.skew_small), small_nodes=int(c.skew_small_nodes),
                             large_nodes=int(c.skew_large_nodes), avg_degree=float(c.avg_degree),
                             channels=int(c.channels), degree=int(cfg.model.degree), repeats=int(c.repeats),
                             warmup=int(c.warmup), threads=threads, seed=seeds[0])
    for row in skew.rows():
        m = row.pop("candidate")
        rows.append({"task": "bench_skewed", "method": m, "time_s": row.pop("wall_median_s"),
                     "cpu_s": row.pop("cpu_median_s"), **row})
    # memory: one fresh process per measurement; below memory_min_nodes the allocator's noise dominates
    mem_sizes = [n for n in sizes if n >= int(c.memory_min_nodes) or n == largest]
    cg_mem_largest = []
    for n in tqdm(mem_sizes, desc="bench memory", disable=None):
        for m in ("gcn", "cg", "dense"):
            if m == "dense" and n > int(c.dense_max):
                continue
            k = int(c.memory_repeats) if (m == "cg" and n == largest) else 1
            mib = [memory_mib(m, n, threads=threads, **case) for _ in range(k)]
            if m == "cg" and n == largest:
                cg_mem_largest = mib
            row = next(r for r in rows if r.get("method") == m and r.get("num_nodes") == n)
            row["peak_extra_mib"] = float(np.median(mib))
            log.info("bench %-5s n=%-7d peak extra %.1f MiB (%d process(es))", m, n, row["peak_extra_mib"], k)

    def mem(method, n):
        return next(r.get("peak_extra_mib", float("nan")) for r in rows
                    if r.get("method") == method and r.get("num_nodes") == n)

    dense_bytes = largest * largest * 4 / 2**20
    cg_mem = [r for r in rows if r.get("method") == "cg" and "peak_extra_mib" in r]
    slope = (loglog_slope([r["num_nodes"] for r in cg_mem], [r["peak_extra_mib"] for r in cg_mem])[0]
             if len(cg_mem) >= 2 else float("nan"))
    n_edges = next(r["num_edges"] for r in rows if r.get("num_nodes") == largest)
    setting = (f"{n_edges} directed edges, {int(c.channels)} channels; q drawn from the trained ring model's q "
               f"(range [{qv.min():.2g}, {qv.max():.2g}], median {np.median(qv):.2g}) and its p (degree "
               f"{int(cfg.model.degree)}); Jacobi-preconditioned CG, tol 1e-5, float32; {threads} CPU thread(s); "
               f"{int(c.repeats)} interleaved rounds after {int(c.warmup)} warm-up")
    claims = []
    for m, how in (("cg", "de Casteljau (the default p_recursion)"), ("cg_cheb", "the Chebyshev expansion")):
        ratio = res_largest.speedup("gcn", over=m)
        cpu = res_largest.speedup("gcn", over=m, kind="cpu")
        claims.append(Claim.threshold(
            f"{m}_time_within_3x_gcn",
            f"The CG path ({how}) runs forward+backward on a {largest}-node graph with a trained model's q "
            f"within 3x a 2-layer GCN.",
            f"time(CG Tikhonov) / time(2-layer GCN), forward+backward, {largest} nodes (wall, paired per round)",
            ratio, threshold=3.0, better="lower",
            baselines={"CG wall s": res_largest.time(m), "GCN wall s": res_largest.time("gcn"),
                       "CPU-time ratio CG/GCN": cpu},
            notes=f"{setting}; CG iterations of the last pass (forward, backward): {its_largest.get(m)}."))
    claims.append(Claim.threshold(
        "auto_within_2x_cg_skewed",
        "solver='auto' is never more than 2x slower than CG on a skewed batch.",
        f"time(auto) / time(CG), forward+backward, {int(c.skew_small)} graphs of {int(c.skew_small_nodes)} nodes "
        f"and one of {int(c.skew_large_nodes)} (wall, paired per round)",
        skew.speedup("cg", over="auto"), threshold=2.0, better="lower",
        baselines={"auto wall s": skew.time("auto"), "CG wall s": skew.time("cg")},
        notes="auto: size buckets (2^(j-1), 2^j] padded within the bucket, dense up to 64 nodes, CG above; "
              f"untrained Q-network, degree {int(cfg.model.degree)}."))
    claims.append(Claim.threshold(
        "cg_bounded_memory", "The CG path runs in bounded memory (no dense N x N matrix).",
        f"peak extra memory of CG / size of one dense N x N float32 matrix, {largest} nodes",
        [m / dense_bytes for m in cg_mem_largest], threshold=0.01, better="lower",
        baselines={"CG MiB": estimate(cg_mem_largest), "GCN MiB": mem("gcn", largest),
                   "dense N x N MiB": dense_bytes, "CG memory log-log slope in N": slope},
        notes=f"peak-RSS rise in {len(cg_mem_largest)} fresh processes (paperworks.bench.peak_memory); "
              f"slope over {[r['num_nodes'] for r in cg_mem]} nodes."))
    return claims, rows, {"bench_q_range": [float(qv.min()), float(qv.max())]}


# the entry point ------------------------------------------------------------------------------

TASKS = {"math": task_math, "colours": task_colours, "motifs": task_motifs, "csbm": task_csbm, "ring": task_ring,
         "bench": task_bench}


def run(cfg, out_dir: Path | None = None) -> dict:
    """Run ``cfg.tasks``; return ``{"claims", "checks", "metrics", "seeds", "timings", "extra", "plots"}``.

    Threads are pinned by the caller (the ``threads`` key, through :mod:`paperworks.hydra_glue`);
    ``plots(out_dir)`` draws the figures (it needs matplotlib; the glue calls it after writing results).
    """
    seeds = seeds_of(cfg)
    unknown = [t for t in cfg.tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"tasks must be among {sorted(TASKS)}, got unknown {unknown}")
    items, metrics, timings, extras = [], [], {}, {}
    for name in cfg.tasks:
        t0 = time.perf_counter()
        cl, rows, extra = TASKS[name](cfg, seeds)
        timings[f"{name}_s"] = time.perf_counter() - t0
        log.info("task %s done in %.1f s", name, timings[f"{name}_s"])
        items += cl
        metrics += rows
        extras[name] = extra
    summary = {"R_density_min": extras.get("math", {}).get("R_density_min"),
               "colours_lr": extras.get("colours", {}).get("colours_lr"),
               "colours_runs_capped": extras.get("colours", {}).get("colours_capped")}

    def plots(out_dir: Path) -> None:
        from tikhonovgnn import plot

        if "csbm" in extras:
            plot.plot_response_curves(extras["csbm"]["csbm_lambda"], extras["csbm"]["csbm_curves"],
                                      Path(out_dir) / "p_response_csbm.png")
        if extras.get("motifs"):
            plot.plot_q_graph(extras["motifs"]["graph"], extras["motifs"]["q"], Path(out_dir) / "q_motif_graph.png")
        bench = [r for r in metrics if r.get("task") == "bench"]  # the skewed-batch rows have no size
        if bench:
            plot.plot_bench(bench, Path(out_dir) / "bench_time_memory.png")

    return {"claims": [c for c in items if c.kind == "claim"], "checks": [c for c in items if c.kind == "check"],
            "metrics": metrics, "seeds": seeds, "timings": timings,
            "extra": {k: v for k, v in summary.items() if v is not None}, "plots": plots}
