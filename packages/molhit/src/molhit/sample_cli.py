"""``molhit sample model=FILE n=N``: SMILES from a saved model, without the training data."""

from __future__ import annotations

from pathlib import Path

from paperworks import Claim, check_int


def run_sample(cfg, out_dir: Path | None = None) -> dict:
    from molhit.metrics import moses_metrics
    from molhit.model import MolHIT

    if cfg.model is None:
        raise ValueError("molhit sample needs model=FILE (MolHIT.save, or a run's checkpoints/<process>.pt)")
    n = check_int(cfg.n, "n", minimum=1)
    model = MolHIT.load(str(cfg.model))
    cond = cfg.get("cond")
    if cond is not None and not isinstance(cond, int):
        cond = [None if c is None else int(c) for c in cond]
    graphs = model.generate(n, temperature=float(cfg.temperature), top_p=float(cfg.top_p),
                            guidance=float(cfg.guidance), cond=cond, seed=int(cfg.seed), scaffold=cfg.get("scaffold"))
    smiles = model.decode(graphs, lenient=bool(cfg.get("lenient", False)))
    rows = [{"sample": i, "n_atoms": int(len(a)), "smiles": s or ""} for i, ((a, _), s) in enumerate(zip(graphs, smiles))]
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "samples.smi").write_text("".join(f"{s}\n" for s in smiles if s), encoding="utf-8")
    m = moses_metrics(smiles, compute_fcd=False)
    sizes_ok = sum(bool(model.n_atoms_dist[len(a)] > 0) for a, _ in graphs)
    check = Claim.check("sizes_from_saved_distribution",
                        "Every sampled molecule has an atom count the saved model's training size distribution holds "
                        "(the distribution was stored in the model file, not rebuilt from data).",
                        "samples with a size outside the saved distribution's support", n - sizes_ok, threshold=0,
                        better="lower")
    return {"claims": [], "checks": [check], "metrics": rows,
            "extra": {"model": str(cfg.model), "process": model.process_name, "n": n,
                      **{k: m[k] for k in ("valid", "valid_lenient", "unique", "n_valid")}}}
