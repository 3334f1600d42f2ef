"""``hebbrnn evaluate model=FILE``: recall accuracy of a saved model on fresh lists (no training data needed)."""

from __future__ import annotations

from pathlib import Path

import torch

from hebbrnn.baselines import ControlRNN
from hebbrnn.model import HebbRNN
from hebbrnn.train import evaluate
from paperworks import Claim

CLASSES = {"HebbRNN": HebbRNN, "ControlRNN": ControlRNN}


def load_model(path):
    """A :class:`HebbRNN` or :class:`ControlRNN` saved with ``model.save(path)`` (``weights_only`` load)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no saved model at {path}")
    doc = torch.load(path, map_location="cpu", weights_only=True)
    name = doc.get("class") if isinstance(doc, dict) else None
    if name not in CLASSES:
        raise ValueError(f"{path} does not hold a saved HebbRNN or ControlRNN (found {name!r})")
    return CLASSES[name].load(path)


def run_evaluate(cfg, out_dir: Path | None = None) -> dict:
    from hebbrnn.experiments import test_tasks

    if cfg.get("model") is None:
        raise ValueError("hebbrnn evaluate needs model=FILE (a model saved by a run or by model.save)")
    model = load_model(str(cfg.model))
    tc = dict(cfg.task)
    tc["item_dim"] = model.output_size
    cue = model.input_size - model.output_size
    if cue != int(tc["n_items"]):
        raise ValueError(f"the model has {cue} cue channels but task.n_items={tc['n_items']}; set task.n_items={cue}")
    rows = [{"test": name, "accuracy": evaluate(model, task, batches=int(cfg.eval_batches), seed=int(cfg.seed))}
            for name, task in test_tasks(tc).items()]
    check = Claim.check("every_test_set_evaluated", "The saved model was evaluated on every test set.",
                        "test sets evaluated", len(rows), target=3, tol=0)
    return {"claims": [], "checks": [check], "metrics": rows,
            "extra": {"model": str(cfg.model), "class": type(model).__name__, **{r["test"]: r["accuracy"] for r in rows}}}
