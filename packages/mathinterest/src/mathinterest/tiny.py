"""A random tiny GPT-2 with a word-level tokenizer over the prompts' words (plumbing, never findings)."""

from __future__ import annotations

import re

from mathinterest.data import RATIONALES
from mathinterest.raters import PROMPTS

_WORD = re.compile(r"[A-Za-z]+|\d+|[^\w\s]")


def tiny_rater_model(texts=(), *, seed: int = 0, width: int = 32, layers: int = 2, heads: int = 4, n_ctx: int = 512):
    """``(model, tokenizer)``: a randomly initialised ``GPT2Config`` model (``paperworks.lm.tiny_gpt2``) and a
    word tokenizer whose vocabulary holds the digits, the prompt templates' words, the rationales and
    the words of ``texts``. Nothing is downloaded; the ratings it gives are meaningless by design."""
    from paperworks.lm import tiny_gpt2, word_tokenizer

    words = [str(d) for d in range(10)]
    corpus = [t for v in PROMPTS.values() for t in v.values()] + list(RATIONALES) + list(texts)
    for t in corpus:
        words += _WORD.findall(t)
    words = [w for w in dict.fromkeys(words) if not re.fullmatch(r"[^\w\s]", w)]
    tok = word_tokenizer(words, model_max_length=n_ctx)
    model = tiny_gpt2(len(tok), seed=seed, width=width, layers=layers, heads=heads, n_ctx=n_ctx)
    return model, tok
