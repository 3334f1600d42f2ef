"""The real study's inputs: a user's local model (``model=``), benchmark (``data.path=``), traits and pool."""

from __future__ import annotations

from metaknow.documents import generate_documents, load_traits, neutral_documents
from metaknow.evaluate import load_jsonl


def real_inputs(cfg) -> dict:
    from paperworks.lm import load_local

    if cfg.data.path is None:
        raise ValueError("model= needs data.path= (a benchmark JSONL with 'id' and 'prompt' per line)")
    rows, skipped = load_jsonl(cfg.data.path)
    if not rows:
        raise ValueError(f"data.path: no usable rows in {cfg.data.path} ({len(skipped)} skipped)")
    rc = cfg.real
    docs = generate_documents(load_traits(cfg.get("traits")), int(rc.n_per_trait))
    if cfg.data.get("control_path"):
        pool, _ = load_jsonl(cfg.data.control_path, required=("text",))
    else:
        pool = neutral_documents(20 * len(docs), seed=3)
    _, tok = load_local(cfg.model)
    if tok is None:
        raise ValueError(f"model: {cfg.model} has no tokenizer files")

    def base_for_seed(seed):
        return load_local(cfg.model)

    return {"base_for_seed": base_for_seed, "sdf_docs": docs, "pool": pool, "benchmark": {"benchmark": rows},
            "heldout": [d["text"] for d in neutral_documents(50, seed=4)],
            "train": {"lora_config": {"r": int(rc.lora_r), "lora_alpha": 2 * int(rc.lora_r)}, "lr": float(rc.lr),
                      "epochs": int(rc.epochs), "batch_tokens": int(rc.batch_tokens), "max_len": int(rc.max_len)},
            "samples": int(rc.samples), "max_tokens": int(rc.max_tokens), "doc_prefix": "<doc>",
            "treated_set": "benchmark", "tokenizer": tok, "skipped": len(skipped)}
