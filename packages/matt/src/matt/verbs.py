"""CLI verbs on users' models and text: ``matt transfer ...`` and ``matt evaluate ...``."""

from __future__ import annotations

import logging
from pathlib import Path

from paperworks.hydra_glue import ConfigError

log = logging.getLogger(__name__)


def _load(path, what: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    p = Path(str(path))
    if not (p / "config.json").is_file():
        raise ConfigError(f"{what}={p} is not a saved model folder (no config.json)")
    model = AutoModelForCausalLM.from_pretrained(p, attn_implementation="eager", local_files_only=True).eval()
    return model, AutoTokenizer.from_pretrained(p, local_files_only=True)


def run_transfer(cfg, out_dir: Path | None = None) -> dict:
    """``matt transfer model=DIR tokenizer=DIR data.path=FILE``: transfer and save model + tokenizer."""
    from transformers import AutoTokenizer

    from matt.data import read_lines
    from matt.transfer import bits_per_byte, transfer

    for key in ("model", "tokenizer"):
        if not cfg.get(key):
            raise ConfigError(f"matt transfer needs {key}=DIR (a local Hugging Face folder)")
    if not cfg.data.get("path"):
        raise ConfigError("matt transfer needs data.path=FILE (target-language text, one example per line)")
    model, tok = _load(cfg.model, "model")
    new_tok = AutoTokenizer.from_pretrained(str(cfg.tokenizer), local_files_only=True)
    lines, report = read_lines(cfg.data.path)
    n_eval = max(1, len(lines) // 10)
    held, texts = lines[:n_eval], lines[n_eval:] or lines
    student, new_tok = transfer(model, tok, new_tok, texts, init=str(cfg.init), aim_steps=int(cfg.aim_steps),
                                lm_steps=int(cfg.lm_steps), aim_layers=cfg.get("aim_layers"),
                                freeze_overlap=bool(cfg.freeze_overlap), train=str(cfg.train), lr=float(cfg.lr),
                                batch_size=int(cfg.batch_size), seed=int(cfg.seed))
    row = {"bpb_teacher": bits_per_byte(model, tok, held), "bpb_student": bits_per_byte(student, new_tok, held),
           "held_out_lines": len(held), "train_lines": len(texts), "skipped_lines": report["skipped"]}
    if out_dir is not None:
        student.save_pretrained(Path(out_dir) / "model")
        new_tok.save_pretrained(Path(out_dir) / "model")
        log.info("transferred model and tokenizer saved to %s", Path(out_dir) / "model")
    return {"claims": [], "metrics": [row], "seeds": [int(cfg.seed)], "extra": row}


def run_evaluate(cfg, out_dir: Path | None = None) -> dict:
    """``matt evaluate model=DIR data.path=FILE``: bits per byte of a saved model (with its tokenizer)."""
    from matt.data import read_lines
    from matt.transfer import bits_per_byte

    if not cfg.get("model"):
        raise ConfigError("matt evaluate needs model=DIR (a saved model folder with its tokenizer)")
    if not cfg.data.get("path"):
        raise ConfigError("matt evaluate needs data.path=FILE (text, one example per line)")
    model, tok = _load(cfg.model, "model")
    lines, report = read_lines(cfg.data.path)
    row = {"bpb": bits_per_byte(model, tok, lines), "lines": len(lines), "skipped_lines": report["skipped"]}
    log.info("bits per byte %.4f on %d lines", row["bpb"], len(lines))
    return {"claims": [], "metrics": [row], "seeds": [int(cfg.seed)], "extra": row}
