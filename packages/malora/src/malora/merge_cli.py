"""``malora merge``: MaLoRA-merge saved PEFT adapter directories of a saved Hugging Face classifier.

``malora merge model=BASE_DIR adapters=[DIR1,DIR2,...] calibration=CAL.npz out=OUT_DIR``

- ``model``: a ``save_pretrained`` directory of a sequence classifier (loaded offline with
  ``AutoModelForSequenceClassification``; the adapters' own base-model path is ignored).
- ``adapters``: PEFT adapter directories (``adapter_config.json`` + weights), all on the same modules.
- ``calibration``: an ``.npz`` with ``X_0, y_0, X_1, y_1, ...`` (task t's input ids and labels, in the
  order of ``adapters``), optionally ``X_base, y_base`` (the base model's task, kept in the union).
- ``out``: where the merged adapter is written (``save_pretrained``; it loads with
  ``PeftModel.from_pretrained(model, OUT_DIR/<adapter_name>)``) with ``alpha.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from paperworks import Claim, atomic_write_text


def load_adapters(model_dir, adapter_dirs):
    """(PeftModel with every adapter loaded, adapter names) — all offline."""
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification

    model_dir = Path(str(model_dir))
    if not (model_dir / "config.json").exists():
        raise FileNotFoundError(f"model {model_dir} is not a save_pretrained directory (no config.json)")
    dirs = [Path(str(d)) for d in adapter_dirs]
    if len(dirs) < 2:
        raise ValueError(f"adapters must list at least 2 adapter directories, got {len(dirs)}")
    for d in dirs:
        if not (d / "adapter_config.json").exists():
            raise FileNotFoundError(f"adapter {d} has no adapter_config.json")
    names = [f"t{i}_{d.name}" for i, d in enumerate(dirs)]
    base = AutoModelForSequenceClassification.from_pretrained(model_dir, local_files_only=True)
    pm = PeftModel.from_pretrained(base, dirs[0], adapter_name=names[0], is_trainable=False)
    for n, d in zip(names[1:], dirs[1:]):
        pm.load_adapter(d, adapter_name=n)
    return pm.eval(), names


def run_merge(cfg, out_dir: Path | None = None) -> dict:
    import torch

    from malora.peft_merge import _lora_modules, merge_peft

    if cfg.model is None or not cfg.adapters or cfg.calibration is None or cfg.out is None:
        raise ValueError("malora merge needs model=DIR adapters=[DIR,...] calibration=FILE.npz out=DIR")
    pm, names = load_adapters(cfg.model, list(cfg.adapters))
    path = Path(str(cfg.calibration))
    if not path.exists() or path.suffix != ".npz":
        raise FileNotFoundError(f"calibration {path} must be an existing .npz file")
    with np.load(path, allow_pickle=False) as f:
        keys = set(f.files)
        missing = [k for t in range(len(names)) for k in (f"X_{t}", f"y_{t}") if k not in keys]
        if missing:
            raise ValueError(f"calibration {path.name} lacks {missing}")
        cal = {n: (torch.as_tensor(f[f"X_{t}"]), torch.as_tensor(f[f"y_{t}"])) for t, n in enumerate(names)}
        base = (torch.as_tensor(f["X_base"]), torch.as_tensor(f["y_base"])) if "X_base" in keys else None
    alpha, info = merge_peft(pm, names, cal, adapter_name=str(cfg.adapter_name), base_data=base, log=True)
    out = Path(str(cfg.out))
    pm.save_pretrained(out, selected_adapters=[str(cfg.adapter_name)])
    doc = {"adapters": [str(a) for a in cfg.adapters], "alpha": [float(a) for a in alpha],
           "min_margin": info["min_margin"], "dropped": info["dropped"], "adapter_name": str(cfg.adapter_name)}
    atomic_write_text(out / "alpha.json", json.dumps(doc, indent=2))
    err = 0.0
    with torch.no_grad():
        for mod in _lora_modules(pm, str(cfg.adapter_name)).values():
            ref = sum(float(a) * mod.get_delta_weight(n) for a, n in zip(alpha, names))
            err = max(err, float((mod.get_delta_weight(str(cfg.adapter_name)) - ref).abs().max()))
    check = Claim.check("merged_adapter_is_weighted_sum", "The written adapter equals Σ_t α_t B_tA_t.",
                        "max abs error", err, threshold=1e-4, better="lower")
    rows = [{"adapter": str(a), "alpha": float(x)} for a, x in zip(cfg.adapters, alpha)]
    return {"claims": [], "checks": [check], "metrics": rows, "extra": doc}
