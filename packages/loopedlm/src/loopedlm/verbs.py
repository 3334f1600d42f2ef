"""``loopedlm analyze model=DIR text.path=FILE [num_recurrences=32]``: trace a saved :class:`LoopedLM` on a
user's prompts and write fixed-point metrics, ColSum per layer × recurrence and the limit-class rates."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import torch

from loopedlm.baselines import colsum_profile
from loopedlm.data import CHARS
from loopedlm.metrics import LIMITS, classify_limits, fixed_point_metrics
from loopedlm.model import LoopedLM
from loopedlm.trace import trace
from paperworks import Claim
from paperworks.hydra_glue import ConfigError


def load_model(path) -> LoopedLM:
    """A :class:`LoopedLM` from a ``save_pretrained`` directory (clear errors for anything else)."""
    if path is None:
        raise ConfigError("loopedlm analyze needs model=DIR (a LoopedLM.save_pretrained directory)")
    d = Path(str(path))
    if not d.is_dir():
        raise ConfigError(f"model={d}: no such directory")
    cfg_file = d / "config.json"
    if not cfg_file.is_file():
        raise ConfigError(f"model={d}: no config.json (not a save_pretrained directory)")
    model_type = json.loads(cfg_file.read_text(encoding="utf-8")).get("model_type")
    if model_type != "looped_lm":
        raise ConfigError(f"model={d}: model_type is {model_type!r}, not 'looped_lm' (a Hugging Face decoder "
                          "is analysed from Python through HFLoopAdapter)")
    return LoopedLM.from_pretrained(str(d)).eval()


def read_prompts(cfg) -> tuple[list[str], str]:
    """The prompts (non-blank lines) from ``text.path`` or ``text.lines``, and where they came from."""
    text = cfg.get("text") or {}
    path, lines = text.get("path"), text.get("lines")
    if (path is None) == (lines is None):
        raise ConfigError("loopedlm analyze needs exactly one of text.path=FILE or 'text.lines=[...]'")
    if path is not None:
        p = Path(str(path))
        if not p.is_file():
            raise ConfigError(f"text.path={p}: no such file")
        raw, source = p.read_text(encoding="utf-8").splitlines(), str(p)
    else:
        if isinstance(lines, str):
            lines = [lines]
        raw, source = [str(x) for x in lines], "text.lines"
    prompts = [ln for ln in raw if ln.strip()]
    if not prompts:
        raise ConfigError(f"{source}: no prompts (empty or only blank lines)")
    return prompts, source


def run_analyze(cfg, out_dir: Path | None = None) -> dict:
    model = load_model(cfg.get("model"))
    prompts, source = read_prompts(cfg)
    r = cfg.get("num_recurrences")
    if isinstance(r, bool) or not isinstance(r, int) or r < 3:
        raise ConfigError(f"num_recurrences must be an int >= 3 (the limit classifier needs 3 states), got {r!r}")
    vocab = CHARS if cfg.get("vocab") is None else str(cfg.vocab)
    if len(set(vocab)) != len(vocab):
        raise ConfigError("vocab has repeated characters")
    if len(vocab) > model.config.vocab_size:
        raise ConfigError(f"vocab has {len(vocab)} characters but the model's vocab_size is "
                          f"{model.config.vocab_size}: pass vocab='...' (id = index)")
    tau, rho = float(cfg.tau), float(cfg.rho)
    index = {ch: i for i, ch in enumerate(vocab)}
    device = torch.device(str(cfg.device))
    model.to(device)
    max_len = model.config.max_len

    rows, colsum_rows, token_rows, fps, profiles, skipped = [], [], [], [], [], {}
    counts = dict.fromkeys(LIMITS, 0)
    n_short = n_truncated = n_oov = 0
    for i, prompt in enumerate(prompts):
        kept = [ch for ch in prompt if ch in index]
        for ch in prompt:
            if ch not in index:
                skipped[ch] = skipped.get(ch, 0) + 1
        n_oov += len(prompt) - len(kept)
        if len(kept) > max_len:
            kept, n_truncated = kept[:max_len], n_truncated + 1
        if len(kept) < 2:  # ColSum needs T >= 2
            n_short += 1
            continue
        ids = torch.tensor([[index[ch] for ch in kept]], device=device)
        tr = trace(model, ids, r, generator=torch.Generator().manual_seed(int(cfg.seed)))
        tr.residuals, tr.attentions = tr.residuals.cpu(), tr.attentions.cpu()
        fp = fixed_point_metrics(tr)
        lim = classify_limits(tr, tau, rho)
        cs = colsum_profile(tr.attentions.numpy())  # (R, k)
        profiles.append(cs)
        for t in range(cs.shape[0]):
            for layer in range(cs.shape[1]):
                colsum_rows.append({"prompt": i, "recurrence": t + 1, "layer": layer, "colsum": float(cs[t, layer])})
        for pos, label in enumerate(lim["labels"][0]):
            token_rows.append({"prompt": i, "position": pos, "char": kept[pos], "limit": label})
        for k, v in lim["counts"].items():
            counts[k] += v
        fps.append({"prompt": i, "tokens": len(kept), "successive": fp["successive"].tolist(),
                    "distance": fp["distance"].tolist(), "cosine": fp["cosine"].tolist(),
                    "fixed_point_cosine": fp["fixed_point_cosine"].tolist(), "min_cosine": fp["min_cosine"],
                    "tail": fp["tail"]})
        rows.append({"prompt": i, "tokens": len(kept), "skipped_chars": len(prompt) - len(kept),
                     "tail": fp["tail"], "min_cosine": fp["min_cosine"], "mean_colsum": float(cs.mean()),
                     **{f"rate_{k}": v for k, v in lim["rates"].items()}})
    if not rows:
        raise ConfigError(f"{source}: no prompt has >= 2 characters in the vocabulary {vocab!r}")
    n_tokens = sum(counts.values())
    rates = {k: v / n_tokens for k, v in counts.items()}
    summary = {"model": str(cfg.model), "text": source, "num_recurrences": r, "block": model.config.block,
               "vocab": vocab, "prompts": len(prompts), "analysed": len(rows), "too_short": n_short,
               "truncated": n_truncated, "skipped_chars": n_oov, "skipped_by_char": skipped,
               "tokens": n_tokens, "limit_counts": counts, "limit_rates": rates, "tau": tau, "rho": rho,
               "mean_tail": float(np.mean([f["tail"] for f in fps])),
               "colsum_per_recurrence_layer": np.mean(profiles, axis=0).tolist()}
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "fixed_point_metrics.json").write_text(json.dumps(fps), encoding="utf-8")
        (out_dir / "limits.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
        for name, table in (("colsum.csv", colsum_rows), ("limits.csv", token_rows)):
            with open(out_dir / name, "w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, fieldnames=list(table[0]))
                w.writeheader()
                w.writerows(table)
    check = Claim.check("prompts_analysed", "Every prompt with >= 2 in-vocabulary characters was traced.",
                        "prompts", float(len(rows)), target=float(len(prompts) - n_short), tol=0.0)
    return {"claims": [], "checks": [check], "metrics": rows, "extra": summary}


__all__ = ["load_model", "read_prompts", "run_analyze"]
