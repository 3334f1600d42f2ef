"""``metaknow evaluate model=DIR data.path=FILE [reference=DIR]``: judge a saved model's answers (e.g. an SDF
model saved by :func:`~metaknow.save_sdf`) on a benchmark, without the training data; with ``reference=``
the paired refusal shift (all pairs and non-verbalised pairs) against a second saved model."""

from __future__ import annotations

from pathlib import Path

from metaknow.evaluate import evaluate, load_jsonl, summarize
from metaknow.stats import paired_shift
from paperworks import Claim, resolve_device
from paperworks.hydra_glue import ConfigError


def _load(path, device):
    from paperworks.lm import HFChat, load_local

    d = Path(str(path))
    if not (d / "config.json").is_file():
        raise ConfigError(f"model={d}: not a saved model folder (no config.json); save one with metaknow.save_sdf")
    model, tok = load_local(d)
    if tok is None:
        raise ConfigError(f"model={d}: no tokenizer files beside the weights")
    return HFChat(model.to(device), tok)


def run_evaluate(cfg, out_dir: Path | None = None) -> dict:
    if cfg.get("model") is None or cfg.data.get("path") is None:
        raise ConfigError("metaknow evaluate needs model=DIR and data.path=FILE (JSONL with 'id' and 'prompt')")
    rows, skipped = load_jsonl(cfg.data.path)
    if not rows:
        raise ConfigError(f"data.path={cfg.data.path}: no usable rows ({len(skipped)} skipped)")
    device = resolve_device(cfg.get("device", "auto"))
    kw = {"samples": int(cfg.samples), "max_tokens": int(cfg.max_tokens), "seed": int(cfg.seed)}
    frames = {"model": evaluate(_load(cfg.model, device), rows, **kw)}
    if cfg.get("reference") is not None:
        frames["reference"] = evaluate(_load(cfg.reference, device), rows, **kw)
    metrics = []
    for arm, df in frames.items():
        for r in df.to_dict("records"):
            metrics.append({"arm": arm, **{k: r[k] for k in ("prompt_id", "sample", "refused", "verbalized", "harm",
                                                             "response")}})
    extra = {arm: summarize(df) for arm, df in frames.items()}
    extra["skipped_rows"] = [f"line {n}: {why}" for n, why in skipped]
    claims = []
    if "reference" in frames:
        for filt in (False, True):
            s = paired_shift(frames["model"], frames["reference"], exclude_verbalized=filt)
            claims.append(Claim.threshold(
                "refusal_shift" + ("_non_verbalised" if filt else ""),
                "The model refuses more often than the reference on the same prompts"
                + (" (pairs whose answer does not verbalise awareness)" if filt else "") + ".",
                "paired refusal shift", s.estimate(), threshold=0.0, better="higher",
                notes=f"{s.n_pairs} pairs over {s.n_prompts} prompts; exact McNemar p = "
                      f"{paired_shift(frames['model'], frames['reference'], exclude_verbalized=filt, method='mcnemar').p_value:.3g}"))
    return {"claims": claims, "checks": [], "metrics": metrics, "seeds": [int(cfg.seed)], "extra": extra}
