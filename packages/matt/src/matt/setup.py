"""The miniature's world: languages, corpora, tokenizers T_A / T_B and the cached teacher."""

from __future__ import annotations

import logging

from matt.data import SyntheticLanguages, read_lines, split_corpora, train_bpe
from matt.teacher import cached_teacher
from paperworks import cache_dir

log = logging.getLogger(__name__)


def build(cfg) -> dict:
    """Corpora, tokenizers and teacher from ``cfg.data`` / ``cfg.teacher`` (or users' ``model=``, ``tokenizer=``)."""
    d, t = cfg.data, cfg.teacher
    langs = SyntheticLanguages(seed=int(d.lang_seed))
    tsb = d.get("tokenizer_share_b")
    corp = split_corpora(langs, n_teacher=int(d.n_teacher), share_b=float(d.share_b), n_transfer=int(d.n_transfer),
                         n_eval=int(d.n_eval), seed=int(d.lang_seed),
                         tokenizer_share_b=None if tsb is None else float(tsb))
    report = None
    if d.get("path"):  # users' B text: the transfer and held-out sets come from it
        lines, report = read_lines(d.path)
        seen = set(corp["teacher"]) | set(corp["tokenizer"])
        lines = [x for x in dict.fromkeys(lines) if x not in seen]
        n_eval = max(1, len(lines) // 10)
        corp["eval"], corp["val"], corp["transfer"] = lines[:n_eval], lines[n_eval:2 * n_eval], lines[2 * n_eval:]
        if not corp["transfer"]:
            raise ValueError(f"data.path: {d.path} has too few distinct lines to split into transfer and held-out")
    out = {"langs": langs, **corp, "data_report": report}
    if cfg.get("model"):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        out["teacher_model"] = AutoModelForCausalLM.from_pretrained(cfg.model, attn_implementation="eager",
                                                                    local_files_only=True).eval()
        out["tok_a"] = AutoTokenizer.from_pretrained(cfg.model, local_files_only=True)
        out["teacher_info"] = {"loaded": str(cfg.model)}
    else:
        out["tok_a"] = train_bpe(corp["tokenizer"], int(d.vocab), model_max_length=int(t.n_ctx))
        key = {k: int(t[k]) for k in ("layers", "width", "heads", "n_ctx", "steps", "batch_size")}
        key.update(lr=float(t.lr), seed=int(t.seed), lang_seed=int(d.lang_seed), n_teacher=int(d.n_teacher),
                   share_b=float(d.share_b), vocab=int(d.vocab), version=2)
        if tsb is not None and float(tsb) != float(d.share_b):
            key["tokenizer_share_b"] = float(tsb)  # absent otherwise: older cached teachers keep their key
        out["teacher_model"], out["teacher_info"] = cached_teacher(
            out["tok_a"], corp["teacher"], key=key, cache=cache_dir("matt"), steps=int(t.steps), lr=float(t.lr),
            batch_size=int(t.batch_size))
    dev = str(cfg.get("device", "cpu"))
    out["teacher_model"] = out["teacher_model"].to("cpu" if dev == "auto" else dev)
    if cfg.get("tokenizer"):
        from transformers import AutoTokenizer

        out["tok_b"] = AutoTokenizer.from_pretrained(cfg.tokenizer, local_files_only=True)
    else:
        out["tok_b"] = train_bpe(out["transfer"], int(d.vocab), model_max_length=int(t.n_ctx))
    return out
