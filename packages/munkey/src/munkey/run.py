"""``run(cfg) -> dict``: the unlearning miniature (paper/quick/smoke) and the bench; verdicts by paperworks rules."""

from __future__ import annotations

import copy
import logging
import math
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from munkey import data as D
from munkey.baselines import BASELINES, DATA_ACCESS, METHODS, grid_for
from munkey.metrics import avg_gap, per_sample, unlearning_metrics
from munkey.munkey import MUNKEY
from munkey.train import fit
from munkey.vit import ViT
from paperworks import Claim, seeds_of, timer

log = logging.getLogger("munkey")
SCENARIOS = ("random", "class", "noisy")


# set-up ---------------------------------------------------------------------------------------------

def _model_kwargs(cfg, split: D.Split) -> dict:
    m = cfg.model
    _, c, h, _ = split.x_train.shape
    return dict(image_size=int(h), patch_size=int(m.patch_size), num_classes=split.num_classes, dim=int(m.dim),
                depth=int(m.depth), heads=int(m.heads), mlp_dim=int(m.mlp_dim), channels=int(c))


def _train(cls, cfg, split, idx, seed, device):
    kw = _model_kwargs(cfg, split)
    if cls is MUNKEY:
        kw.update(key_dim=int(cfg.model.key_dim), topk=int(cfg.model.topk),
                  memory_dropout=float(cfg.model.memory_dropout))
    torch.manual_seed(seed)
    model = cls(**kw).to(device)
    t = cfg.train
    ids = torch.as_tensor(idx) if cls is MUNKEY else None
    return fit(model, split.x_train[idx].to(device), split.y_train[idx].to(device), ids, epochs=int(t.epochs),
               lr=float(t.lr), batch_size=int(t.batch_size), weight_decay=float(t.weight_decay),
               memory_lr=float(t.memory_lr), seed=seed)


def _split(cfg, name: str, seed: int) -> D.Split:
    rng = np.random.default_rng(seed)
    if name == "user":
        return _user_split(cfg, rng)
    kw = dict(cfg.data.get(name, {}) or {})
    return D.load(name, rng, **kw)


def _user_split(cfg, rng) -> D.Split:
    p = Path(str(cfg.data.path))
    if p.suffix == ".npz":
        x, y = D.load_npz(p)
    else:
        x, y, _, skipped = D.load_image_folder(p, image_size=int(cfg.data.image_size),
                                               channels=int(cfg.data.channels))
        log.info("user folder: %d images, %d unreadable file(s) skipped", len(x), len(skipped))
    k = int(y.max()) + 1
    return D._split(x.numpy(), y.numpy(), rng, 0.3, float(cfg.data.noise), k, "user")


def _forget_set(split: D.Split, scenario: str, cfg, seed: int) -> np.ndarray:
    n = len(split.x_train)
    rng = np.random.default_rng(10_000 + seed)
    if scenario == "random":
        count = cfg.get("forget_count", None)
        k = int(count) if count else int(round(float(cfg.forget_frac) * n))
        return np.sort(rng.choice(n, k, replace=False))
    if scenario == "class":
        c = seed % split.num_classes
        return np.flatnonzero(split.y_train.numpy() == c)
    if scenario == "noisy":
        if len(split.noisy) == 0:
            raise ValueError("the 'noisy' scenario needs label noise (data.<set>.noise > 0)")
        return split.noisy
    raise ValueError(f"unknown scenario {scenario!r}; known: {SCENARIOS}")


# pathway sensitivity (inferred form of the review's "Pathway Sensitivity Score") ------------------------

@torch.no_grad()
def pathway_sensitivity(model: MUNKEY, x, forget_ids, seed: int = 0) -> dict:
    """Output change (mean L1 between softmaxes) on ``x`` when the memory path is cut, and when the
    backbone's weights get a random perturbation of the same Frobenius norm as the deleted value rows."""
    model.eval()
    p = torch.softmax(model(x), -1)
    d_cut = float((p - torch.softmax(model(x, use_memory=False), -1)).abs().sum(1).mean())
    rows = torch.isin(model.mem_ids, torch.as_tensor(forget_ids, device=model.mem_ids.device))
    norm = float(model.mem_values[rows].norm())
    m2 = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    noise = [torch.randn(q.shape, generator=g) for q in m2.backbone_parameters()]
    scale = norm / max(float(torch.sqrt(sum((z ** 2).sum() for z in noise))), 1e-12)
    for q, z in zip(m2.backbone_parameters(), noise, strict=True):
        q.add_(z.to(q.device) * scale)
    d_w = float((p - torch.softmax(m2(x), -1)).abs().sum(1).mean())
    return {"pss_cut": d_cut, "pss_weight": d_w, "pss_ratio": d_cut / max(d_w, 1e-12), "deleted_value_norm": norm}


# one scenario ---------------------------------------------------------------------------------------

def _wrong_rate(model, x, y_wrong) -> float:
    return float((per_sample(model, x, y_wrong)["pred"] == y_wrong.cpu().numpy()).mean())


def run_scenario(cfg, split, scenario, seed, mk, vt, device, hist=None, checks=None) -> list[dict]:
    F_ = _forget_set(split, scenario, cfg, seed)
    R_ = np.setdiff1d(np.arange(len(split.x_train)), F_)
    xf, yf = split.x_train[F_].to(device), split.y_train[F_].to(device)
    forget, retain = (xf, yf), (split.x_train[R_].to(device), split.y_train[R_].to(device))
    test = (split.x_test.to(device), split.y_test.to(device))
    base = {"dataset": split.name, "scenario": scenario, "seed": seed, "n_forget": len(F_)}
    rows, times = [], {}
    with timer(times, "oracle_munkey"):
        mko = _train(MUNKEY, cfg, split, R_, seed, device)
    with timer(times, "oracle_vit"):
        vto = _train(ViT, cfg, split, R_, seed, device)
    o_mk, o_vt = unlearning_metrics(mko, forget, retain, test), unlearning_metrics(vto, forget, retain, test)
    noisy = scenario == "noisy"

    def row(method, model, met, oracle, **kw):
        r = {**base, "method": method, **{k: v for k, v in met.items() if not isinstance(v, bool)},
             "over_forgetting": int(met["over_forgetting"]), "avg_gap": avg_gap(met, oracle),
             "avg_gap_vs_vit_oracle": avg_gap(met, o_vt), "data_access": DATA_ACCESS.get(method, ""), **kw}
        if noisy:
            r["wrong_label_rate"] = _wrong_rate(model, xf, yf)
        rows.append(r)

    row("oracle_munkey", mko, o_mk, o_mk, time_s=times["oracle_munkey"])
    row("oracle", vto, o_vt, o_vt, time_s=times["oracle_vit"])
    row("original_munkey", mk, unlearning_metrics(mk, forget, retain, test), o_mk)
    row("original_vit", vt, unlearning_metrics(vt, forget, retain, test), o_vt)

    # MUNKEY: delete the rows
    pss = pathway_sensitivity(mk, xf, F_, seed)
    with torch.no_grad():
        before_test = mk(test[0]) if checks is not None else None
        before_pos = mk.retrieve(test[0])[0] if checks is not None else None
    md = copy.deepcopy(mk)
    weights_before = {k: v.detach().clone() for k, v in md.named_parameters() if not k.startswith("mem_")}
    with timer(times, "delete"):
        md.forget(F_.tolist())
    met = unlearning_metrics(md, forget, retain, test, oracle=o_mk)
    row("munkey_delete", md, met, o_mk, time_s=times["delete"], **pss)
    if hist is not None:
        hist.update({"test": per_sample(md, *test)["loss"], "original": per_sample(mk, *forget)["loss"],
                     "deleted": per_sample(md, *forget)["loss"], "oracle": per_sample(mko, *forget)["loss"],
                     "title": f"{split.name} / {scenario} forget set, seed {seed}"})
    if checks is not None:
        checks.update(_identity_checks(mk, md, F_, xf, test[0], before_test, before_pos, weights_before))

    # post-hoc baselines on the plain ViT: best grid value by Avg-Gap to the ViT oracle (oracle-tuned)
    u = cfg.unlearn
    for name in [m for m in u.methods if m in METHODS]:
        best = None
        for val in grid_for(name, u.lrs, u.ssd_alphas):
            t = {}
            with timer(t, "t"):
                um = METHODS[name](vt, forget, retain, lr=float(val), epochs=int(u.epochs), bs=int(u.batch_size),
                                   seed=seed)
            m = unlearning_metrics(um, forget, retain, test, oracle=o_vt)
            if best is None or m["avg_gap"] < best[0]["avg_gap"]:
                best = (m, val, t["t"], um)
        grid = grid_for(name, u.lrs, u.ssd_alphas)
        row(name, best[3], best[0], o_vt, time_s=best[2], hyper=float(best[1]),
            hyper_on_grid_edge=int(len(grid) > 1 and best[1] in (grid[0], grid[-1])))
    return rows


def _identity_checks(mk, md, F_, xf, x_test, before_test, before_pos, weights_before) -> dict:
    """Measured on one seed: the properties deletion has by construction."""
    out = {}
    after = {k: v for k, v in md.named_parameters() if not k.startswith("mem_")}
    out["weight_change"] = max(float((after[k].detach() - v).abs().max()) for k, v in weights_before.items())
    fset = torch.as_tensor(F_)
    g = torch.Generator().manual_seed(0)
    near = (xf + 0.02 * torch.randn(xf.shape, generator=g).to(xf.device)).clamp(0, 1)
    hits = 0
    for x in (xf, near):
        with torch.no_grad():
            pos = md.retrieve(x)[0]
        hits += int(torch.isin(md.mem_ids[pos].cpu(), fset).sum())
    out["deleted_retrieved"] = hits
    out["rows_removed_error"] = abs((len(mk) - len(md)) - len(F_)) + int(torch.isin(md.memory_ids(), fset).sum())
    untouched = ~torch.isin(mk.mem_ids[before_pos].cpu(), fset).any(1)
    with torch.no_grad():
        diff = (md(x_test) - before_test).abs().max(1).values.cpu()
    out["untouched_max_diff"] = float(diff[untouched].max()) if bool(untouched.any()) else 0.0
    out["untouched_n"] = int(untouched.sum())
    import io

    buf = io.BytesIO()
    md.save(buf)
    buf.seek(0)
    loaded = MUNKEY.load(buf).to(x_test.device)
    out["saved_deleted_rows"] = int(torch.isin(loaded.memory_ids(), fset).sum()) + abs(len(loaded) - len(md))
    with torch.no_grad():
        out["reload_max_diff"] = float((loaded(x_test) - md(x_test)).abs().max())
    return out


# claims ---------------------------------------------------------------------------------------------

def _per_seed(rows, key, **f):
    sel = sorted((r for r in rows if all(r.get(k) == v for k, v in f.items())), key=lambda r: r["seed"])
    return [float(r[key]) for r in sel]


def build_claims(rows, datasets, scen, cfg) -> list:
    claims = []
    tol = cfg.claims
    have = {(r["dataset"], r["scenario"]) for r in rows}
    meth = [m for m in cfg.unlearn.methods if m in METHODS]

    # claim 1: deletion is forgetting only where the forget set looks as it does to the oracle
    for ds, sc in sorted(have):
        d = _per_seed(rows, "mia_auc", dataset=ds, scenario=sc, method="munkey_delete")
        o = _per_seed(rows, "mia_auc", dataset=ds, scenario=sc, method="oracle_munkey")
        g = _per_seed(rows, "mia_auc", dataset=ds, scenario=sc, method="original_munkey")
        memorised = float(np.mean(np.array(g) - np.array(o))) >= tol.memorised_gap if g else False
        claims.append(Claim.within(
            f"delete_mia_matches_oracle.{ds}.{sc}",
            f"Claim 1 ({ds}, {sc} forget set): after key deletion the forget-set loss-MIA AUC (forget vs test) "
            f"equals the MUNKEY retrain oracle's within ±{tol.mia_tol:g} (paired over seeds).",
            "MIA AUC(deleted) − MIA AUC(oracle)", list(np.array(d) - np.array(o)), target=0.0, tol=float(tol.mia_tol),
            requires={f"before deletion the forget set was distinguishable (mean MIA(original) − MIA(oracle) ≥ "
                      f"{tol.memorised_gap:g})": bool(memorised)},
            notes=f"MIA deleted {np.mean(d):.3f}, oracle {np.mean(o):.3f}, original {np.mean(g):.3f}"))
        ld = _per_seed(rows, "forget_loss", dataset=ds, scenario=sc, method="munkey_delete")
        lo = _per_seed(rows, "forget_loss", dataset=ds, scenario=sc, method="oracle_munkey")
        claims.append(Claim.within(
            f"delete_loss_matches_oracle.{ds}.{sc}",
            f"Claim 1 ({ds}, {sc}): after deletion the mean forget-set loss equals the oracle's within a factor "
            f"{tol.loss_factor:g} (log ratio within ±log {tol.loss_factor:g}, paired over seeds).",
            "log(forget loss deleted / oracle)", list(np.log(np.array(ld) / np.array(lo))), target=0.0,
            tol=float(math.log(tol.loss_factor)),
            notes=f"forget loss deleted {np.mean(ld):.3f}, oracle {np.mean(lo):.3f}"))
        if sc == "class":
            fd = _per_seed(rows, "forget_acc", dataset=ds, scenario=sc, method="munkey_delete")
            fo = _per_seed(rows, "forget_acc", dataset=ds, scenario=sc, method="oracle_munkey")
            claims.append(Claim.within(
                f"delete_class_acc_matches_oracle.{ds}",
                f"Claim 1 ({ds}, one class): after deletion the forgotten class's training accuracy equals the "
                f"oracle's within ±{tol.acc_tol:g} (an oracle that never saw the class scores ~0).",
                "forget acc(deleted) − forget acc(oracle)", list(np.array(fd) - np.array(fo)), target=0.0,
                tol=float(tol.acc_tol), notes=f"deleted {np.mean(fd):.3f}, oracle {np.mean(fo):.3f}"))
        if sc == "noisy":
            wd = _per_seed(rows, "wrong_label_rate", dataset=ds, scenario=sc, method="munkey_delete")
            wo = _per_seed(rows, "wrong_label_rate", dataset=ds, scenario=sc, method="oracle_munkey")
            wg = _per_seed(rows, "wrong_label_rate", dataset=ds, scenario=sc, method="original_munkey")
            claims.append(Claim.within(
                f"delete_wrong_labels_at_oracle_rate.{ds}",
                f"Claim 1 ({ds}, the mislabelled {100 * float(cfg.data.digits.noise):g} %): after deletion the share "
                f"of deleted samples still given their wrong label equals the oracle's within ±{tol.acc_tol:g}.",
                "wrong-label rate(deleted) − rate(oracle)", list(np.array(wd) - np.array(wo)), target=0.0,
                tol=float(tol.acc_tol), notes=f"deleted {np.mean(wd):.3f}, oracle {np.mean(wo):.3f}, "
                f"original {np.mean(wg):.3f}"))
        # claim 2: smaller Avg-Gap than every post-hoc baseline
        if meth:
            mine = _per_seed(rows, "avg_gap", dataset=ds, scenario=sc, method="munkey_delete")
            claims.append(Claim.compare_all(
                f"beats_posthoc_avg_gap.{ds}.{sc}",
                f"Claim 2 ({ds}, {sc}): MUNKEY deletion's Avg-Gap to its retrain oracle is smaller than that of "
                f"every post-hoc baseline on the plain ViT ({', '.join(meth)}; each oracle-tuned on its grid) to the "
                "ViT oracle.", "Avg-Gap (points)", mine,
                baselines={m: _per_seed(rows, "avg_gap", dataset=ds, scenario=sc, method=m) for m in meth},
                better="lower", paired=True))
    # claim 3: predictive performance preserved
    for ds in datasets:
        sc = scen[ds][0]
        a = _per_seed(rows, "test_acc", dataset=ds, scenario=sc, method="original_munkey")
        b = _per_seed(rows, "test_acc", dataset=ds, scenario=sc, method="original_vit")
        if a:
            claims.append(Claim.compare(
                f"test_acc_vs_vit.{ds}",
                f"Claim 3 ({ds}): MUNKEY's test accuracy is no worse than the plain ViT's (same backbone and "
                f"training budget) by more than {tol.acc_margin:g}.", "test accuracy", a,
                baseline="vit", baselines={"vit": b}, better="higher", margin=-float(tol.acc_margin), paired=True,
                notes=f"MUNKEY {np.mean(a):.3f}, ViT {np.mean(b):.3f}"))
    return claims


def build_checks(ch: dict, mia_null: float) -> list:
    return [
        Claim.check("forget_changes_no_weight", "forget() leaves every backbone weight bit-identical.",
                    "max |Δθ|", ch["weight_change"], threshold=0.0, better="lower"),
        Claim.check("deleted_never_retrieved", "After deletion no deleted id is retrieved, for the deleted images "
                    "and for noisy near-duplicates (σ = 0.02).", "retrieved deleted ids", ch["deleted_retrieved"],
                    threshold=0.0, better="lower"),
        Claim.check("rows_removed", "Deletion removes exactly |F| rows and none of the forget ids remain.",
                    "row-count error + remaining forget ids", ch["rows_removed_error"], threshold=0.0, better="lower"),
        Claim.check("untouched_bit_identical", f"Test samples whose top-k held no deleted key ({ch['untouched_n']} "
                    "of them) keep bit-identical logits.", "max |Δlogit|", ch["untouched_max_diff"], threshold=0.0,
                    better="lower"),
        Claim.check("saved_model_has_no_deleted_rows", "A saved and reloaded model holds no deleted row and gives "
                    "the same logits.", "deleted rows in the file + max |Δlogit|",
                    ch["saved_deleted_rows"] + ch["reload_max_diff"], threshold=0.0, better="lower"),
        Claim.check("mia_null_half_half", "MIA AUC between two halves of the test set (both unseen) is 0.5 ± 0.1.",
                    "AUC", mia_null, target=0.5, tol=0.1),
    ]


# the run ---------------------------------------------------------------------------------------------

def run(cfg, out_dir: Path | None = None) -> dict:
    if cfg.experiment.name == "bench" or cfg.get("bench_only", False):
        from munkey.bench import run_bench

        claims, checks, rows = run_bench(cfg)
        return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds_of(cfg)}
    device = str(cfg.get("device", "cpu"))
    seeds = seeds_of(cfg)
    datasets = ["user"] if cfg.data.get("path") else list(cfg.datasets)
    scen = {ds: list(cfg.scenarios.get(ds, ["random"])) for ds in datasets}
    rows, hist, ch, mia_null = [], {}, {}, float("nan")
    timings: dict = {}
    for seed in tqdm(seeds, desc="seeds", disable=None):
        for ds in datasets:
            split = _split(cfg, ds, seed)
            with timer(timings, "train_originals_s"):
                mk = _train(MUNKEY, cfg, split, np.arange(len(split.x_train)), seed, device)
                vt = _train(ViT, cfg, split, np.arange(len(split.x_train)), seed, device)
            first = seed == seeds[0] and ds == datasets[0]
            if first and cfg.get("save_model", False) and out_dir is not None:
                Path(out_dir).mkdir(parents=True, exist_ok=True)
                mk.save(Path(out_dir) / "munkey.pt")  # before any deletion; `munkey forget` works on it
            if first:
                p = per_sample(mk, split.x_test.to(device), split.y_test.to(device))["loss"]
                from munkey.metrics import mia_auc

                h = len(p) // 2
                mia_null = mia_auc(p[:h], p[h:])
            for sc in scen[ds]:
                with timer(timings, "scenarios_s"):
                    rows += run_scenario(cfg, split, sc, seed, mk, vt, device,
                                         hist=hist if first and sc == scen[ds][0] else None,
                                         checks=ch if first and sc == scen[ds][0] else None)
            log.info("seed %d %s done", seed, ds)
    claims = build_claims(rows, datasets, scen, cfg)
    checks = build_checks(ch, mia_null)
    n_params = sum(p.numel() for p in ViT(**_model_kwargs(cfg, _split(cfg, datasets[0], seeds[0]))).parameters())
    extra = {"data_access": DATA_ACCESS, "baselines": list(BASELINES), "vit_parameters": n_params,
             "summary": _summary(rows)}

    def plots(out):
        from munkey.plot import plot_gap_vs_time, plot_mia_hist

        if hist:
            plot_mia_hist(hist, Path(out) / "mia_loss_hist.png")
        plot_gap_vs_time(rows, Path(out) / "avg_gap_vs_time.png")

    return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds, "timings": timings,
            "extra": extra, "plots": plots}


def _summary(rows) -> dict:
    """Mean over seeds of the main metrics, per data set / scenario / method (for the README)."""
    out: dict = {}
    keys = ("forget_acc", "retain_acc", "test_acc", "mia_auc", "mia_attack_auc", "forget_loss", "avg_gap",
            "avg_gap_vs_vit_oracle", "time_s", "wrong_label_rate", "pss_ratio")
    for r in rows:
        k = f"{r['dataset']}/{r['scenario']}/{r['method']}"
        out.setdefault(k, {kk: [] for kk in keys})
        for kk in keys:
            if r.get(kk) is not None and not (isinstance(r[kk], float) and math.isnan(r[kk])):
                out[k][kk].append(float(r[kk]))
    return {k: {kk: float(np.mean(v)) for kk, v in d.items() if v} for k, d in out.items()}
