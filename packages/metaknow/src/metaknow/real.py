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

    from paperworks import resolve_device

    device = resolve_device(cfg.get("device", "auto"))

    def base_for_seed(seed):
        model, tok = load_local(cfg.model)
        return model.to(device), tok

    return {"base_for_seed": base_for_seed, "sdf_docs": docs, "pool": pool, "benchmark": {"benchmark": rows},
            "heldout": [d["text"] for d in neutral_documents(50, seed=4)],
            "train": {"lora_config": {"r": int(rc.lora_r), "lora_alpha": 2 * int(rc.lora_r)}, "lr": float(rc.lr),
                      "epochs": int(rc.epochs), "batch_tokens": int(rc.batch_tokens), "max_len": int(rc.max_len)},
            "samples": int(rc.samples), "max_tokens": int(rc.max_tokens), "doc_prefix": "<doc>",
            "treated_set": "benchmark", "tokenizer": tok, "skipped": len(skipped)}


def openai_study(cfg, seeds) -> tuple[dict, dict]:
    """``backend=openai``: evaluate three served models (``openai.base``, ``openai.sdf``, ``openai.control``)
    on ``data.path``, each seed a sampling seed; capability from ``data.mc_path`` (multiple choice);
    the SDF corpus (``data.sdf_path``, JSONL ``{"text"}``) is linted against the benchmark (claim 4)."""
    import pandas as pd

    from metaknow.documents import lint_corpus
    from metaknow.evaluate import evaluate, multiple_choice_accuracy
    from metaknow.judges import AwarenessJudge, HarmJudge, RefusalJudge
    from paperworks import Claim
    from paperworks.lm import OpenAIChat

    oc = cfg.openai
    if cfg.data.path is None:
        raise ValueError("backend=openai needs data.path= (a benchmark JSONL with 'id' and 'prompt' per line)")
    for arm in ("base", "sdf", "control"):
        if not oc.get(arm):
            raise ValueError(f"backend=openai needs openai.{arm}= (the served model name of the {arm} arm)")
    rows, skipped = load_jsonl(cfg.data.path)
    if not rows:
        raise ValueError(f"data.path: no usable rows in {cfg.data.path} ({len(skipped)} skipped)")
    kw = {"base_url": oc.base_url, "api_key_env": oc.get("api_key_env")}
    judge = OpenAIChat(oc.judge, **kw) if oc.get("judge") else None
    judges = [RefusalJudge(judge), AwarenessJudge(judge), HarmJudge(judge)]
    frames, cap = {}, {}
    for arm in ("base", "sdf", "control"):
        chat = OpenAIChat(oc[arm], **kw)
        dfs = []
        for seed in seeds:
            df = evaluate(chat, rows, judges=judges, samples=int(cfg.real.samples), seed=seed,
                          max_tokens=int(cfg.real.max_tokens))
            df["seed"] = seed
            dfs.append(df)
        frames[(arm, "benchmark")] = pd.concat(dfs, ignore_index=True)
        if cfg.data.get("mc_path"):
            cap[arm] = [multiple_choice_accuracy(chat, cfg.data.mc_path)]
    checks = []
    lint_ok = False
    if cfg.data.get("sdf_path"):
        docs, _ = load_jsonl(cfg.data.sdf_path, required=("text",))
        n = len(lint_corpus(docs, benchmark=rows, strict=False))
        lint_ok = n == 0
        checks.append(Claim.check("sdf_corpus_lint_clean", "Claim 4 precondition: the SDF corpus has no chat turns, "
                                  "assistant roles, refusal phrases or n-gram overlap with the benchmark prompts.",
                                  "lint issues", n, target=0, tol=0))
    res = {"frames": frames, "capability": cap}
    info = {"real": True, "set": "benchmark", "checks": checks, "rows": [], "extra": {"skipped_rows": len(skipped)},
            "timings": {}, "lint_ok": lint_ok}
    return res, info
