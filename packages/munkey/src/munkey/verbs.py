"""CLI verbs on a saved model (no training data needed): ``munkey forget model=PATH ids=[...]``."""

from __future__ import annotations

from pathlib import Path

from munkey.munkey import MUNKEY
from paperworks import Claim
from paperworks.hydra_glue import ConfigError


def run_forget(cfg, out_dir: Path | None = None) -> dict:
    """Load a saved MUNKEY, delete ``ids`` (rows only: no data, no weight update), save the result.

    Writes ``<out>`` (default: ``munkey.pt`` in the run directory) and records the deletion, which is
    also appended to the model's own audit log.
    """
    if not cfg.get("model"):
        raise ValueError("forget: give the saved model, model=PATH (written by an experiment with save_model=true)")
    path = Path(str(cfg.model))
    if not path.exists():
        raise FileNotFoundError(f"forget: model file {path} does not exist")
    model = MUNKEY.load(path)
    ids = [int(i) for i in cfg.ids] if cfg.get("ids") is not None else []
    before = len(model)
    try:
        rec = model.forget(ids)
    except (ValueError, TypeError) as e:  # unknown / already-deleted / duplicate ids: a clean CLI error
        raise ConfigError(str(e)) from None
    out = Path(str(cfg.out)) if cfg.get("out") else (Path(out_dir) / "munkey.pt" if out_dir else None)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        model.save(out)
    check = Claim.check("forget_removed_rows", f"forget removed exactly the {len(ids)} requested rows from {path.name}.",
                        "|rows removed − |ids||", float(abs(before - len(model) - len(ids))), target=0.0, tol=0.0)
    return {"claims": [], "checks": [check], "metrics": [{**rec.to_dict(), "ids": " ".join(map(str, rec.ids)),
                                                          "saved_to": str(out) if out else ""}]}
