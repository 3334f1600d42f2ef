"""Data: two synthetic languages on one alphabet, users' text files, and BPE tokenizers.

Language A is high-resource (short words from a Zipfian lexicon, a class-bigram grammar).
Language B is agglutinative: a word is a stem and two or three suffixes from ordered slots; stems follow a
sparse grammar over stem classes, the first suffix agrees with the previous word's class, the second
marks the word's own class and the optional third a tense shared by the whole sentence. Its words
are long and a BPE fitted mostly on A fragments them.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>")


def _syllables(rng, cons: str, vows: str, n: int, *, coda: str = "") -> list[str]:
    out = set()
    while len(out) < n:
        s = rng.choice(list(cons)) + rng.choice(list(vows))
        if coda and rng.random() < 0.5:
            s += rng.choice(list(coda))
        out.add(s)
    return sorted(out)


class SyntheticLanguages:
    """Two synthetic languages sharing the alphabet ``a``–``z``.

    Args:
        seed: seed of the lexicons and grammars (``None``: fresh entropy, as numpy does).
        words_a: lexicon size of A.
        stems_b: number of B stems (6 classes); B has 3 suffix slots of 6 suffixes each.

    Example:
        >>> langs = SyntheticLanguages(seed=0)
        >>> a, b = langs.sample("A", 3, seed=1), langs.sample("B", 3, seed=1)
    """

    def __init__(self, seed: int | None = None, *, words_a: int = 3000, stems_b: int = 240):
        for name, v in (("words_a", words_a), ("stems_b", stems_b)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 10:
                raise ValueError(f"{name} must be an int >= 10, got {v!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be None or a non-negative int, got {seed!r}")
        rng = np.random.default_rng(seed)
        # A: CV syllables, 1-3 per word, Zipfian frequencies, 8 word classes with a bigram grammar
        syl_a = _syllables(rng, "bdfglmnprst", "aeiou", 40)
        lex = set()
        while len(lex) < words_a:
            lex.add("".join(rng.choice(syl_a, size=rng.integers(1, 4))))
        self.lexicon_a = sorted(lex)
        rng.shuffle(self.lexicon_a)
        self.class_a = rng.integers(0, 8, size=words_a)
        self.freq_a = 1.0 / np.arange(1, words_a + 1) ** 1.1
        self.trans_a = rng.dirichlet(np.full(8, 0.3), size=8)
        # B: CVC-ish syllables on other letters, 2-3 per stem; ordered suffix slots; agreement
        syl_b = _syllables(rng, "kzvhwjcqxy", "aeiouy", 40, coda="rnkt")
        stems = set()
        while len(stems) < stems_b:
            stems.add("".join(rng.choice(syl_b, size=rng.integers(2, 4))))
        self.stems_b = sorted(stems)
        rng.shuffle(self.stems_b)
        self.class_b = rng.integers(0, 6, size=stems_b)
        self.trans_b = rng.dirichlet(np.full(6, 0.1), size=6)  # a sparse grammar over stem classes
        self.freq_b = 1.0 / np.arange(1, stems_b + 1) ** 1.0
        self.suffixes_b = [_syllables(rng, "lmnrst", "aeiou", 6, coda="kxz") for _ in range(3)]
        self.agree_b = rng.permutation(6)  # previous stem class -> first-slot suffix

    def _a(self, rng) -> str:
        n = int(rng.integers(4, 13))
        p = self.freq_a / self.freq_a.sum()
        words, c = [], int(rng.integers(0, 8))
        for _ in range(n):
            w = self.trans_a[c][self.class_a] * p  # next word: grammar over classes times frequency
            i = int(rng.choice(len(p), p=w / w.sum()))
            words.append(self.lexicon_a[i])
            c = int(self.class_a[i])
        return " ".join(words)

    def _b(self, rng) -> str:
        n = int(rng.integers(3, 8))
        tense = int(rng.integers(0, 6))  # one per sentence: a long-range agreement
        words, prev = [], int(rng.integers(0, 6))
        for _ in range(n):
            c = int(rng.choice(6, p=self.trans_b[prev]))
            w = self.freq_b * (self.class_b == c)
            if not w.any():
                w = self.freq_b
            i = int(rng.choice(len(w), p=w / w.sum()))
            word = self.stems_b[i] + self.suffixes_b[0][self.agree_b[prev]] + self.suffixes_b[1][c]
            if rng.random() < 0.3:
                word += self.suffixes_b[2][tense]
            words.append(word)
            prev = c
        return " ".join(words)

    def sample(self, lang: str, n: int, *, seed: int | None = None) -> list[str]:
        """``n`` lines of language ``lang`` (``"A"`` or ``"B"``)."""
        if lang not in ("A", "B"):
            raise ValueError(f"lang must be 'A' or 'B', got {lang!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n must be a non-negative int, got {n!r}")
        rng = np.random.default_rng(seed)
        f = self._a if lang == "A" else self._b
        return [f(rng) for _ in range(n)]


def split_corpora(langs: SyntheticLanguages, *, n_teacher: int, share_b: float, n_transfer: int, n_eval: int,
                  seed: int, tokenizer_share_b: float | None = None) -> dict:
    """Teacher data (A/B mix), B transfer data, held-out B evaluation and validation text, pairwise disjoint.

    ``tokenizer`` is the corpus T_A is fitted on: ``n_teacher`` lines with a B share of
    ``tokenizer_share_b`` (default: ``share_b``, i.e. the teacher's own data). A tokenizer fitted on
    less B than the model saw is the situation tokenizer transfer is for: the model knows B, its
    tokenizer fragments it. Lines of the transfer and evaluation sets that also occur in the teacher's
    or the tokenizer's data (or in each other) are dropped and counted, so the held-out B text never
    reaches the teacher.
    """
    tokenizer_share_b = share_b if tokenizer_share_b is None else tokenizer_share_b
    for name, v in (("share_b", share_b), ("tokenizer_share_b", tokenizer_share_b)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {v}")

    def mix(share):
        n_b = int(round(n_teacher * share))
        out = langs.sample("A", n_teacher - n_b, seed=seed) + langs.sample("B", n_b, seed=seed + 1)
        np.random.default_rng(seed).shuffle(out)
        return out

    teacher = mix(share_b)
    tok = teacher if tokenizer_share_b == share_b else mix(tokenizer_share_b)
    seen = set(teacher) | set(tok)
    transfer = [t for t in langs.sample("B", n_transfer, seed=seed + 2) if t not in seen]
    seen |= set(transfer)
    held = [t for t in langs.sample("B", n_eval, seed=seed + 3) if t not in seen]
    seen |= set(held)
    val = [t for t in langs.sample("B", n_eval, seed=seed + 4) if t not in seen]
    dropped = (n_transfer - len(transfer)) + 2 * n_eval - len(held) - len(val)
    return {"teacher": teacher, "tokenizer": tok, "transfer": transfer, "eval": held, "val": val,
            "dropped_duplicates": dropped}


def read_lines(path, *, min_chars: int = 1) -> tuple[list[str], dict]:
    """Non-empty lines of a UTF-8 text file; bad lines (undecodable, empty) are skipped and counted.

    Returns ``(lines, report)`` with ``report = {"kept", "skipped", "skipped_lines"}`` (1-based
    line numbers, the first 20).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data.path: {path} is not a file")
    lines, bad = [], []
    with open(path, "rb") as f:
        for no, raw in enumerate(f, 1):
            try:
                s = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                bad.append(no)
                continue
            if len(s) < min_chars:
                bad.append(no)
                continue
            lines.append(s)
    if bad:
        log.warning("%s: skipped %d bad lines (first: %s)", path, len(bad), bad[:20])
    if not lines:
        raise ValueError(f"data.path: {path} has no usable lines")
    return lines, {"kept": len(lines), "skipped": len(bad), "skipped_lines": bad[:20]}


def train_bpe(texts, vocab_size: int, *, model_max_length: int = 128):
    """A byte-level BPE ``PreTrainedTokenizerFast`` (``<pad>``, ``<bos>``, ``<eos>``; offsets cover the text)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 260:
        raise ValueError(f"vocab_size must be an int >= 260 (256 bytes + specials), got {vocab_size!r}")
    texts = list(texts)
    if not texts:
        raise ValueError("texts must be a non-empty list of strings")
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tk.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>",
                                   model_max_length=model_max_length)
