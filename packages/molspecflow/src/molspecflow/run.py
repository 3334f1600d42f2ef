"""``run(cfg) -> dict``: the experiments (smoke / quick / paper / bench / users' files), pure and callable.

Every spectrum here is SIMULATED by :class:`~molspecflow.simulator.FragmentSimulator` (except a
user's ``data.path``); every table and claim says so.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch

from molspecflow.baselines import FingerprintMLP, SpectrumMLP, neims_library_match, oracle_library_match, random_ranking
from molspecflow.chem import formula_decoys, formula_of
from molspecflow.data import SPEC, load_spectra, make_dataset, spectra_arrays
from molspecflow.metrics import annotation_metrics, binned_cosine
from molspecflow.model import MolSpecFlow
from molspecflow.train import train
from paperworks import Claim, binomial_ci, estimate, seeds_of

log = logging.getLogger(__name__)
SIM = "[simulated spectra] "


def run(cfg, out_dir: Path | None = None) -> dict:
    if cfg.data.get("path"):
        return run_user(cfg, out_dir)
    if cfg.experiment.name == "bench":
        return run_bench(cfg, out_dir)
    return run_paper(cfg, out_dir)


# helpers ------------------------------------------------------------------------------------------

def _model(cfg, **over):
    kw = dict(dim=int(cfg.model.dim), depth=int(cfg.model.depth), heads=int(cfg.model.heads),
              mass_weight=float(cfg.model.mass_weight), max_len=int(cfg.data.max_len))
    kw.update(over)
    return MolSpecFlow(**kw)


def _train(cfg, model, ds, rows, seed, name, out_dir, steps=None, tasks=None):
    ckpt = Path(out_dir) / "checkpoints" / f"{name}_seed{seed}.pt" if out_dir is not None else None
    resume = bool(cfg.get("resume", False)) and ckpt is not None and ckpt.exists()
    torch.manual_seed(seed)
    kw = {"tasks": tasks} if tasks is not None else {}
    t0 = time.perf_counter()
    info = train(model, ds, rows=rows, steps=int(steps if steps is not None else cfg.train.steps),
                 batch_size=int(cfg.train.batch_size), lr=float(cfg.train.lr), seed=seed, checkpoint=ckpt,
                 checkpoint_every=int(cfg.train.checkpoint_every), resume=resume, device=str(cfg.device),
                 log_every=int(cfg.train.log_every), **kw)
    info["train_s"] = time.perf_counter() - t0
    log.info("seed %d %-22s loss %.3f -> %.3f (%d steps, %.0f s)", seed, name, info["loss_first"], info["loss_last"],
             info["steps"], info["train_s"])
    return info


def _queries(ds, n, n_candidates, index_size, seed):
    """Test rows with enough formula-matched decoys, their candidate lists (true one included) and truths."""
    test = ds.rows("test")
    rng = np.random.default_rng(seed)
    rows, cands, truth = [], [], []
    for i in rng.permutation(test):
        dec = formula_decoys(ds.smiles[i], n_candidates - 1, index_size=index_size, seed=int(i))
        if len(dec) < n_candidates - 1:
            continue
        c = [ds.smiles[i], *dec]
        rng.shuffle(c)
        rows.append(int(i))
        cands.append(c)
        truth.append(ds.smiles[i])
        if len(rows) == n:
            break
    return np.array(rows, dtype=int), cands, truth


def _arrays(ds, rows, spec=None, ce=None):
    return {"spec": (ds.spec if spec is None else spec)[rows], "precursor": ds.precursor[rows],
            "ce": (ds.ce if ce is None else ce)[rows]}


def _topk(ranked, truth, ks=(1, 5)):
    return {f"top{k}": float(np.mean([t in r[:k] for r, t in zip(ranked, truth)])) for k in ks}


# the CPU miniature ------------------------------------------------------------------------------

def run_paper(cfg, out_dir):
    seeds = seeds_of(cfg)
    d, e = cfg.data, cfg.eval
    t0 = time.perf_counter()
    from paperworks.moses import load_moses

    smiles = load_moses("train", n=int(d.n_molecules), seed=int(cfg.seed))
    base = dict(seed=int(cfg.seed), smiles=smiles, profiles=tuple(d.profiles), test_profile=d.heldout_profile,
                max_len=int(d.max_len))
    fr = [float(x) for x in d.fractions]           # paired, molecule_only, spectrum_only at the low setting
    fr_hi = [float(x) for x in d.fractions_high]   # the same at the high-paired setting
    ds = make_dataset(int(d.n_molecules), paired=fr[0], molecule_only=fr[1], spectrum_only=fr[2], **base)
    ds_hi = make_dataset(int(d.n_molecules), paired=fr_hi[0], molecule_only=fr_hi[1], spectrum_only=fr_hi[2], **base)
    ds_clean = make_dataset(int(d.n_molecules), paired=fr[0], molecule_only=fr[1], spectrum_only=fr[2], noise=False,
                            **base)
    t_data = time.perf_counter() - t0
    log.info("data: %d rows %s, skipped %s (%.0f s)", len(ds), {r: int((ds.role == r).sum()) for r in
             ("paired", "molecule_only", "spectrum_only", "test")}, ds.skipped, t_data)
    q_rows, cands, truth = _queries(ds, int(e.n_retrieval), int(e.n_candidates), d.index_size, int(cfg.seed))
    if len(q_rows) == 0:
        raise RuntimeError("no test molecule has enough formula-matched decoys; raise data.index_size")
    assert np.array_equal(ds.rows("test"), ds_hi.rows("test")), "the test split must not depend on the fractions"
    qa = _arrays(ds, q_rows)
    qa_held = _arrays(ds, q_rows, ds.extra["spec_heldout"], ds.extra["ce_heldout"])
    qa_clean = _arrays(ds_clean, q_rows)
    dn_rows = q_rows[: int(e.n_denovo)]
    dn_truth = truth[: int(e.n_denovo)]
    dn_formula = [formula_of(s) for s in dn_truth]
    sim_rows = ds.rows("test")[: int(e.n_simulation)]
    train_rows = np.nonzero(ds.role != "test")[0]
    train_rows_hi = np.nonzero(ds_hi.role != "test")[0]
    steps = int(cfg.train.steps)
    metrics, per = [], {}

    def put(arm, key, seed, v):
        per.setdefault((arm, key), {})[seed] = float(v)
        metrics.append({"seed": seed, "arm": arm, "metric": key, "value": float(v)})

    def eval_retrieval(arm, seed, model, *, held=True):
        top = _topk(model.retrieve(qa, cands, k=5), truth)
        put(arm, "top1", seed, top["top1"])
        put(arm, "top5", seed, top["top5"])
        if held:
            put(arm, "heldout_top1", seed, _topk(model.retrieve(qa_held, cands, k=5), truth)["top1"])

    def eval_sim(arm, seed, model):
        pred = model.simulate([ds.smiles[i] for i in sim_rows], collision_energy=ds.ce[sim_rows],
                              steps=int(e.sim_steps), binned=True, seed=seed)
        put(arm, "sim_cosine", seed, float(binned_cosine(pred, ds.spec[sim_rows]).mean()))

    def eval_denovo(arm, seed, model, formula_too=True):
        arr = _arrays(ds, dn_rows)
        m = annotation_metrics(model.denovo(arr, k=int(e.k), steps=int(e.denovo_steps), seed=seed), dn_truth)
        for key in ("top1", "top10", "tanimoto@10", "formula@1", "formula@10", "validity"):
            put(arm, f"denovo_{key}", seed, m[key])
        if formula_too:
            m = annotation_metrics(model.denovo(arr, k=int(e.k), formula=dn_formula, steps=int(e.denovo_steps),
                                                seed=seed), dn_truth)
            for key in ("top1", "top10", "tanimoto@10"):
                put(arm, f"denovo_formula_{key}", seed, m[key])

    timings = {"data_s": t_data}
    for seed in seeds:
        ts = time.perf_counter()
        torch.manual_seed(seed)
        # the method, modality-incomplete, all interfaces
        joint = _model(cfg)
        _train(cfg, joint, ds, train_rows, seed, "joint", out_dir)
        eval_retrieval("molspecflow", seed, joint)
        eval_sim("molspecflow", seed, joint)
        eval_denovo("molspecflow", seed, joint)
        n_lik = int(e.n_likelihood)
        if n_lik:
            sub = {k: v[:n_lik] for k, v in qa.items()}
            put("molspecflow", "likelihood_top1", seed,
                _topk(joint.retrieve(sub, cands[:n_lik], k=5, score="likelihood"), truth[:n_lik])["top1"])
            put("molspecflow", "embedding_top1_same_queries", seed,
                _topk(joint.retrieve(sub, cands[:n_lik], k=5), truth[:n_lik])["top1"])
        if seed == seeds[0] and out_dir is not None:
            joint.save(Path(out_dir) / "molspecflow.pt", experiment=str(cfg.experiment.name), seed=seed)
        # paired rows only
        po = _model(cfg)
        _train(cfg, po, ds, ds.rows("paired"), seed, "paired_only", out_dir)
        eval_retrieval("paired_only", seed, po)
        eval_sim("paired_only", seed, po)
        # the high-paired setting
        jh = _model(cfg)
        _train(cfg, jh, ds_hi, train_rows_hi, seed, "joint_high", out_dir)
        eval_retrieval("molspecflow_high", seed, jh, held=False)
        ph = _model(cfg)
        _train(cfg, ph, ds_hi, ds_hi.rows("paired"), seed, "paired_only_high", out_dir)
        eval_retrieval("paired_only_high", seed, ph, held=False)
        # no regulariser
        nr = _model(cfg, mass_weight=0.0)
        _train(cfg, nr, ds, train_rows, seed, "no_regulariser", out_dir)
        eval_denovo("no_regulariser", seed, nr)
        # single-task models: equal per-model steps, and equal total steps (a third each)
        for task in ("retrieval", "simulation", "denovo"):
            for tag, st in (("single", steps), ("single_total", max(1, steps // 3))):
                m = _model(cfg)
                _train(cfg, m, ds, train_rows, seed, f"{tag}_{task}", out_dir, steps=st, tasks=[task])
                arm = f"{tag}_{task}"
                if task == "retrieval":
                    eval_retrieval(arm, seed, m, held=False)
                elif task == "simulation":
                    eval_sim(arm, seed, m)
                else:
                    eval_denovo(arm, seed, m, formula_too=False)
        # MIST-like and NEIMS-like MLPs on the paired rows, same steps and batches
        torch.manual_seed(seed)
        mist = FingerprintMLP()
        _train(cfg, mist, ds, ds.rows("paired"), seed, "mist_like", out_dir)
        top = _topk(mist.retrieve(qa, cands), truth)
        put("mist_like", "top1", seed, top["top1"])
        put("mist_like", "top5", seed, top["top5"])
        put("mist_like", "heldout_top1", seed, _topk(mist.retrieve(qa_held, cands), truth)["top1"])
        neims = SpectrumMLP()
        _train(cfg, neims, ds, ds.rows("paired"), seed, "neims_like", out_dir)
        pred = neims.simulate(ds.fp[sim_rows], ds.precursor[sim_rows], ds.ce[sim_rows])
        put("neims_like", "sim_cosine", seed, float(binned_cosine(pred, ds.spec[sim_rows]).mean()))
        put("neims_like", "top1", seed, _topk(neims_library_match(neims, qa, cands), truth)["top1"])
        # the noiseless-simulator control
        cl = _model(cfg)
        _train(cfg, cl, ds_clean, train_rows, seed, "noiseless", out_dir)
        put("noiseless_control", "top1", seed, _topk(cl.retrieve(qa_clean, cands, k=5), truth)["top1"])
        # bounds
        put("random", "top1", seed, _topk(random_ranking(cands, seed=seed), truth)["top1"])
        timings[f"seed{seed}_s"] = time.perf_counter() - ts
        log.info("seed %d done in %.0f s", seed, timings[f"seed{seed}_s"])
    oracle = _topk(oracle_library_match(qa["spec"], cands, ds.profile[q_rows], ds.ce[q_rows]), truth)
    oracle_clean = _topk(oracle_library_match(qa_clean["spec"], cands, ds.profile[q_rows], ds.ce[q_rows]), truth)
    for seed in seeds:
        put("oracle_library", "top1", seed, oracle["top1"])
        put("oracle_library_noiseless", "top1", seed, oracle_clean["top1"])

    def v(arm, key):
        return [per[(arm, key)][s] for s in seeds]

    claims, checks = _paper_claims(v, seeds, len(q_rows), int(e.n_candidates), steps)
    checks += _paper_checks(ds, q_rows, cands)
    summary = {f"{a}/{k}": float(np.mean(list(x.values()))) for (a, k), x in per.items()}
    extra = {"simulated": True, "formula_given": "both: de novo is reported with and without the formula; "
             "retrieval and simulation never get it", "n_queries": len(q_rows), "n_denovo": len(dn_rows),
             "n_simulation": len(sim_rows), "rows": {r: int((ds.role == r).sum()) for r in
                                                     ("paired", "molecule_only", "spectrum_only", "test")},
             "skipped": ds.skipped, "summary": summary, "train_steps": steps}

    def plots(out_dir):
        from molspecflow.plot import plot_topk_vs_paired

        plot_topk_vs_paired({a: (estimate(v(a, "top1"), bounds=(0, 1)), estimate(v(b, "top1"), bounds=(0, 1)))
                             for a, b in (("molspecflow", "molspecflow_high"), ("paired_only", "paired_only_high"))},
                            (fr[0], fr_hi[0]), Path(out_dir) / "topk_vs_paired.png")

    return {"claims": claims, "checks": checks, "metrics": metrics, "seeds": seeds, "plots": plots,
            "timings": timings, "extra": extra}


def _paper_claims(v, seeds, n_q, n_c, steps):
    b = (0, 1)
    chance = 1.0 / n_c
    # pooled over queries and seeds: the lower 95% Clopper-Pearson bound of top-1 must clear chance
    hits = int(round(float(np.sum(v("molspecflow", "top1"))) * n_q))
    lower = binomial_ci(hits, n_q * len(seeds)).lower
    req = {f"MolSpecFlow's retrieval top-1 is above chance (1/{n_c}) after {steps} steps (pooled binomial "
           f"lower bound {lower:.3f})": bool(lower > chance)}
    note = f"{SIM}{n_q} test molecules (unseen scaffolds), each among {n_c} formula-matched MOSES candidates"
    claims = [
        Claim.compare_all(
            "incomplete_beats_paired_low", f"{SIM}At 5% paired rows, modality-incomplete training (adding "
            "molecule-only and spectrum-only rows) beats training on the paired rows only, and the MIST-like "
            "fingerprint MLP trained on the same paired rows (same steps).",
            "retrieval top-1 among formula-matched decoys", v("molspecflow", "top1"),
            baselines={"paired_only": v("paired_only", "top1"), "mist_like": v("mist_like", "top1")},
            better="higher", paired=True, bounds=b, requires=req, notes=note),
        Claim.compare(
            "incomplete_beats_paired_high", f"{SIM}At 50% paired rows, modality-incomplete training beats "
            "paired-only training (the gap is expected to shrink).",
            "retrieval top-1 among formula-matched decoys", v("molspecflow_high", "top1"), baseline="paired_only",
            baselines={"paired_only": v("paired_only_high", "top1")}, better="higher", paired=True, bounds=b,
            requires=req, notes=note),
        Claim.compare_all(
            "joint_beats_single_retrieval", f"{SIM}One backbone for all interfaces beats a retrieval-only model, "
            "at equal per-model steps and at equal total steps.", "retrieval top-1", v("molspecflow", "top1"),
            baselines={"single_task": v("single_retrieval", "top1"),
                       "single_task_equal_total": v("single_total_retrieval", "top1")},
            better="higher", paired=True, bounds=b, requires=req, notes=note),
        Claim.compare_all(
            "joint_beats_single_simulation", f"{SIM}One backbone beats a simulation-only model and the NEIMS-like "
            "MLP at spectrum simulation.", "binned cosine to the simulated test spectrum", v("molspecflow", "sim_cosine"),
            baselines={"single_task": v("single_simulation", "sim_cosine"),
                       "single_task_equal_total": v("single_total_simulation", "sim_cosine"),
                       "neims_like": v("neims_like", "sim_cosine")},
            better="higher", paired=True, bounds=b, notes=SIM + "molecule → spectrum on test molecules"),
        Claim.compare_all(
            "joint_beats_single_denovo", f"{SIM}One backbone beats a de novo-only model at de novo annotation "
            "(formula not given).", "max Tanimoto of the top-10 to the true molecule",
            v("molspecflow", "denovo_tanimoto@10"),
            baselines={"single_task": v("single_denovo", "denovo_tanimoto@10"),
                       "single_task_equal_total": v("single_total_denovo", "denovo_tanimoto@10")},
            better="higher", paired=True, bounds=b, notes=SIM + "formula not given"),
        Claim.compare(
            "regulariser_raises_formula_match", f"{SIM}The expected mass/formula regulariser raises the rate at "
            "which the top de novo candidate has the true formula (formula not given).", "formula match of top-1",
            v("molspecflow", "denovo_formula@1"), baseline="no_regulariser",
            baselines={"no_regulariser": v("no_regulariser", "denovo_formula@1")}, better="higher", paired=True,
            bounds=b, notes=SIM + "formula not given"),
        Claim.compare(
            "regulariser_raises_exact_match", f"{SIM}The regulariser raises de novo exact match in the top 10 "
            "(formula not given).", "top-10 exact match", v("molspecflow", "denovo_top10"),
            baseline="no_regulariser", baselines={"no_regulariser": v("no_regulariser", "denovo_top10")},
            better="higher", paired=True, bounds=b, notes=SIM + "formula not given",
            requires={"an exact match occurred in either arm (otherwise the metric cannot tell them apart)":
                      bool(np.any(v("molspecflow", "denovo_top10")) or np.any(v("no_regulariser", "denovo_top10")))}),
        Claim.compare_all(
            "transfer_external", "The gains transfer to external de novo benchmarks (MassSpecGym, NPLIB1). "
            f"Offline miniature: {SIM}retrieval on unseen MOSES scaffolds under a held-out instrument profile "
            "(ion trap) never seen in training.", "retrieval top-1, held-out profile",
            v("molspecflow", "heldout_top1"),
            baselines={"paired_only": v("paired_only", "heldout_top1"), "mist_like": v("mist_like", "heldout_top1")},
            better="higher", paired=True, bounds=b,
            requires={"external benchmarks (MassSpecGym/NPLIB1 real spectra) are available offline": False},
            notes="inconclusive by construction offline; the numbers are the labelled miniature"),
    ]
    checks = [
        Claim.check("oracle_above_random", f"{SIM}The task is decidable from spectra: the simulator-oracle library "
                    "match (upper bound) beats chance.", "oracle top-1", float(np.mean(v("oracle_library", "top1"))),
                    threshold=chance, better="higher"),
    ]
    return claims, checks


def _paper_checks(ds, q_rows, cands):
    from rdkit import Chem
    from rdkit.Chem.Descriptors import ExactMolWt

    from molspecflow.chem import PROTON, inchikey
    from molspecflow.simulator import FragmentSimulator

    sim = FragmentSimulator(noise=False)
    test = ds.rows("test")[:50]
    err = max(abs(sim.simulate(ds.smiles[i]).get("precursor_mz") - ExactMolWt(Chem.MolFromSmiles(ds.smiles[i]))
                  - PROTON) for i in test)
    so = ds.rows("spectrum_only")
    leak = int(ds.tokens[so].any(1).sum() + ds.fp[so].any(1).sum() + ds.formula[so].any(1).sum()
               + sum(ds.smiles[i] is not None for i in so))
    same_formula = np.mean([len({formula_of(c) for c in cs}) == 1 and len({inchikey(c) for c in cs}) == len(cs)
                            for cs in cands])
    return [
        Claim.check("precursor_is_exact_mass_plus_proton", "Simulated precursor m/z = ExactMolWt + 1.007276.",
                    "max |error| (Da)", float(err), threshold=1e-6, better="lower"),
        Claim.check("spectrum_only_rows_carry_no_molecule", "Spectrum-only rows carry no tokens, bits, formula or "
                    "SMILES (the spy).", "rows leaking a molecular view", leak, target=0, tol=0),
        Claim.check("candidates_share_formula", "Every candidate list shares one formula and has distinct "
                    "InChIKeys (no query duplicate).", "share of lists", float(same_formula), target=1.0, tol=0),
        Claim.check("spectrum_views_available", "Every test query has a spectrum.", "share",
                    float(ds.avail[q_rows, SPEC].mean()), target=1.0, tol=0),
    ]


# bench: embedding vs likelihood retrieval, throughput --------------------------------------------

def run_bench(cfg, out_dir):
    from paperworks.bench import compare

    seeds = seeds_of(cfg)
    d, e = cfg.data, cfg.eval
    ds = make_dataset(int(d.n_molecules), paired=float(d.fractions[0]), molecule_only=float(d.fractions[1]),
                      spectrum_only=float(d.fractions[2]), seed=int(cfg.seed), profiles=tuple(d.profiles),
                      max_len=int(d.max_len))
    q_rows, cands, truth = _queries(ds, int(e.n_retrieval), int(e.n_candidates), d.index_size, int(cfg.seed))
    model = _model(cfg)
    _train(cfg, model, ds, np.nonzero(ds.role != "test")[0], seeds[0], "bench_joint", out_dir)
    qa = _arrays(ds, q_rows)
    one = {k: v[:1] for k, v in qa.items()}
    for c in cands:  # cached candidate encodings, as a deployed library would hold
        for s in c:
            model._encode_candidate(s)
    res = compare({"embedding": lambda: model.retrieve(one, cands[:1], k=5),
                   "likelihood": lambda: model.retrieve(one, cands[:1], k=5, score="likelihood")},
                  repeats=int(cfg.bench.repeats), warmup=1, threads=1)
    speed = res.speedup("embedding", over="likelihood")
    n_lik = int(e.n_likelihood)
    emb_top1 = _topk(model.retrieve(qa, cands, k=5), truth)["top1"]
    lik_top1 = _topk(model.retrieve({k: v[:n_lik] for k, v in qa.items()}, cands[:n_lik], k=5, score="likelihood"),
                     truth[:n_lik])["top1"]
    emb_top1_same = _topk(model.retrieve({k: v[:n_lik] for k, v in qa.items()}, cands[:n_lik], k=5),
                          truth[:n_lik])["top1"]
    # throughput: spectra simulated per second, de novo samples per second
    smi = [ds.smiles[i] for i in ds.rows("test")[: int(cfg.bench.n_throughput)]]
    arr = _arrays(ds, ds.rows("test")[: max(1, int(cfg.bench.n_throughput) // 8)])
    k = int(e.k)
    thr = compare({"simulate": lambda: model.simulate(smi, steps=int(e.sim_steps), binned=True),
                   "denovo": lambda: model.denovo(arr, k=k, steps=int(e.denovo_steps))},
                  repeats=3, warmup=0, threads=1)
    sps = len(smi) / thr.median("simulate")
    dps = len(arr["spec"]) * k / thr.median("denovo")
    claims = [Claim.threshold(
        "embedding_20x_faster", f"{SIM}Embedding retrieval (one spectrum pass, cached candidate encodings) is at "
        f"least 20× faster per query than likelihood scoring (ELBO over {int(e.levels)} masking levels) at "
        f"{int(e.n_candidates)} candidates.", "speed-up (median of paired wall-time ratios)", speed,
        threshold=20.0, better="higher",
        baselines={"embedding top-1": emb_top1, f"likelihood top-1 ({n_lik} queries)": lik_top1,
                   f"embedding top-1 on those {n_lik}": emb_top1_same, "embedding s/query": res.time("embedding"),
                   "likelihood s/query": res.time("likelihood")},
        notes=f"top-1: embedding {emb_top1:.3f} over {len(q_rows)} queries ({emb_top1_same:.3f} on the likelihood's "
              f"{n_lik}), likelihood {lik_top1:.3f} over {n_lik} queries")]
    rows = [{**r, "what": "per-query retrieval"} for r in res.rows()] + \
           [{**r, "what": "throughput"} for r in thr.rows()]
    extra = {"simulated": True, "speedup": speed.to_dict(), "embedding_top1": emb_top1,
             "embedding_top1_same_queries": emb_top1_same, "likelihood_top1": lik_top1,
             "n_queries": len(q_rows), "n_likelihood_queries": n_lik, "spectra_per_s": sps,
             "denovo_samples_per_s": dps, "cpu_speedup": res.speedup("embedding", over="likelihood", kind="cpu").to_dict()}
    timings = {"embedding_query_s": res.median("embedding"), "likelihood_query_s": res.median("likelihood")}
    return {"claims": claims, "metrics": rows, "seeds": seeds, "extra": extra, "timings": timings}


# users' spectra files ---------------------------------------------------------------------------------

def run_user(cfg, out_dir):
    """Annotate a user's MGF/mzML/MassSpecGym file with a saved model (``model_path=``) — or one trained now."""
    spectra = load_spectra(cfg.data.path)
    if not spectra:
        raise ValueError(f"{cfg.data.path}: no usable spectra (skipped: {spectra.skipped})")
    if cfg.get("model_path"):
        model = MolSpecFlow.load(cfg.model_path)
    else:
        ds = make_dataset(int(cfg.data.n_molecules), paired=float(cfg.data.fractions[0]),
                          molecule_only=float(cfg.data.fractions[1]), spectrum_only=float(cfg.data.fractions[2]),
                          seed=int(cfg.seed), max_len=int(cfg.data.max_len))
        model = _model(cfg)
        _train(cfg, model, ds, np.nonzero(ds.role != "test")[0], int(cfg.seed), "user", out_dir)
    arr = spectra_arrays(spectra)
    given = bool(cfg.data.get("formula_given", False))
    formula = [s.get("formula") for s in spectra] if given else None
    preds = model.denovo(arr, k=int(cfg.eval.k), formula=formula, steps=int(cfg.eval.denovo_steps))
    rows = [{"index": i, "precursor_mz": float(arr["precursor"][i]), "formula_given": given,
             "top1": (p[0] if p else ""), "candidates": "|".join(p)} for i, p in enumerate(preds)]
    n_skip = sum(len(v) for v in spectra.skipped.values())
    checks = [Claim.check("spectra_read", "Spectra read from the user's file (bad records skipped and counted).",
                          "spectra annotated", len(spectra), threshold=1, better="higher")]
    extra = {"path": str(cfg.data.path), "skipped": spectra.skipped, "n_skipped": n_skip, "formula_given": given,
             "simulated": False}
    truth = [s.get("smiles") for s in spectra]
    if all(isinstance(t, str) and t for t in truth):
        extra["metrics"] = annotation_metrics(preds, truth)
    return {"claims": [], "checks": checks, "metrics": rows, "seeds": seeds_of(cfg), "extra": extra}
