"""(b) The SDF study: base vs SDF vs token-matched control, per seed, judged and paired.

The same code runs the exploratory toy (a tiny GPT pre-trained here) and a user's real model
(``model=<local HF folder>`` with ``data.path=<benchmark JSONL>``).
"""

from __future__ import annotations

import copy
import logging
import time

import numpy as np
import pandas as pd

from metaknow.documents import lint_corpus
from metaknow.evaluate import evaluate
from metaknow.sdf import base_weights_equal, count_tokens, document_losses, matched_control, train_sdf

log = logging.getLogger("metaknow")


def run_study(base_for_seed, *, sdf_docs, pool, benchmark: dict[str, list[dict]], heldout, seeds, train: dict,
              samples: int, max_tokens: int, doc_prefix: str = "<doc>", extra_metric=None, chat_for=None) -> dict:
    """For each seed: a base model (``base_for_seed(seed) -> (model, tokenizer)``), SDF on ``sdf_docs`` and on a
    control matched from ``pool`` with the same recipe, each arm answering every prompt set of ``benchmark``.

    Returns ``{"frames": {(arm, set): DataFrame over seeds}, "loss": {arm: [per seed]}, "tokens": ...,
    "extra": {arm: {set: [per seed]}}, "sanity": {...}}``.
    """
    from paperworks.lm import HFChat

    chat_for = chat_for or (lambda m, tok: HFChat(m, tok, max_new_tokens=max_tokens))
    frames: dict[tuple[str, str], list[pd.DataFrame]] = {}
    loss: dict[str, list[float]] = {"base": [], "sdf": [], "control": []}
    extra: dict[str, dict[str, list[float]]] = {a: {} for a in loss}
    tokens, base_unchanged, times = [], [], {}
    first = None
    all_prompts = [r for rows in benchmark.values() for r in rows]
    for seed in seeds:
        t0 = time.perf_counter()
        base, tok = base_for_seed(seed)
        first = first if seed != seeds[0] else (base, tok)
        times.setdefault("base_s", []).append(time.perf_counter() - t0)
        lint_corpus(sdf_docs, benchmark=all_prompts, ngram=train.get("lint_ngram", 8))
        control = matched_control(sdf_docs, pool, tok, doc_prefix=doc_prefix, max_len=train["max_len"], seed=seed)
        n_sdf = count_tokens(sdf_docs, tok, doc_prefix=doc_prefix, max_len=train["max_len"])
        n_ctl = count_tokens(control, tok, doc_prefix=doc_prefix, max_len=train["max_len"])
        tokens.append((n_sdf, n_ctl))
        snapshot = {k: v.clone() for k, v in base.state_dict().items()}
        arms = {"base": base}
        kw = {k: v for k, v in train.items() if k != "lint_ngram"}
        for arm, docs in (("sdf", sdf_docs), ("control", control)):
            t0 = time.perf_counter()
            arms[arm] = train_sdf(copy.deepcopy(base), tok, docs, doc_prefix=doc_prefix, seed=seed,
                                  benchmark=all_prompts, lint=arm == "sdf", **kw)
            times.setdefault(f"{arm}_train_s", []).append(time.perf_counter() - t0)
        base_unchanged.append(all(base_weights_equal(arms[a], snapshot) for a in ("sdf", "control")))
        for arm, m in arms.items():
            chat = chat_for(m, tok)
            for name, rows in benchmark.items():
                df = evaluate(chat, rows, samples=samples, seed=seed, max_tokens=max_tokens)
                df["arm"], df["seed"] = arm, seed
                frames.setdefault((arm, name), []).append(df)
                if extra_metric is not None:
                    extra[arm].setdefault(name, []).append(float(np.mean(extra_metric(m, tok, [r["prompt"] for r in rows]))))
            loss[arm].append(float(np.mean(document_losses(m, tok, heldout, doc_prefix="", max_len=train["max_len"]))))
        log.info("study seed %d: refusal %s", seed,
                 {a: round(float(frames[(a, next(iter(benchmark)))][-1]["refused"].mean()), 3) for a in arms})
    return {"frames": {k: pd.concat(v, ignore_index=True) for k, v in frames.items()}, "loss": loss, "extra": extra,
            "tokens": tokens, "base_unchanged": all(base_unchanged),
            "times": {k: float(np.mean(v)) for k, v in times.items()}, "first_base": first}


def per_seed_rates(df: pd.DataFrame, col: str = "refused") -> list[float]:
    return [float(g[col].mean()) for _, g in df.groupby("seed", sort=True)]


def per_seed_filtered(treated: pd.DataFrame, reference: pd.DataFrame) -> tuple[list[float], list[float]]:
    """Per seed, refusal of treated and reference on the pairs whose treated answer did not verbalise."""
    from metaknow.stats import pair_frames

    tv, rv = [], []
    for s in sorted(treated["seed"].unique()):
        p = pair_frames(treated[treated["seed"] == s], reference[reference["seed"] == s])
        p = p[~p["verbalized"]]
        tv.append(float(p["t"].mean()) if len(p) else float("nan"))
        rv.append(float(p["r"].mean()) if len(p) else float("nan"))
    return tv, rv
