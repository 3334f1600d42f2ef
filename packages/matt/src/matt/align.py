"""Segment alignment between two tokenisations of the same text (fast-tokenizer offsets).

A *segment* is a minimal character span ``[s, e)`` at whose ends both tokenisations have a token
boundary: every segment is covered exactly by whole tokens of the old tokenizer and by whole tokens
of the new one, and no shorter spans have that property. AIM compares the two models only at
segment ends, where both have read exactly the same text.
"""

from __future__ import annotations


class AlignmentError(ValueError):
    """A line whose tokens do not tile the text (overlapping offsets, tokens split a character)."""


def check_fast(tokenizer, name: str = "tokenizer") -> None:
    """Offsets need a fast (Rust ``tokenizers``) tokenizer."""
    if not getattr(tokenizer, "is_fast", False) or not hasattr(tokenizer, "backend_tokenizer"):
        raise TypeError(f"{name}: a fast tokenizer (PreTrainedTokenizerFast) is needed for character offsets; "
                        f"got {type(tokenizer).__name__} (load it with use_fast=True)")


def _check_normalizer(text: str, tokenizer, name: str) -> None:
    norm = tokenizer.backend_tokenizer.normalizer
    if norm is not None and norm.normalize_str(text) != text:
        raise ValueError(f"{name}: its normalisation changes the text (e.g. {text[:40]!r}); offsets then do not "
                         "address the same characters in both tokenisations, so segments cannot be aligned")


def token_spans(text: str, tokenizer, name: str = "tokenizer") -> list[tuple[int, int]]:
    """``(start, end)`` character offsets of ``text``'s tokens (no special tokens)."""
    check_fast(tokenizer, name)
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    _check_normalizer(text, tokenizer, name)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return [(int(s), int(e)) for s, e in enc["offset_mapping"]]


def _boundaries(spans, n: int, name: str) -> set[int]:
    out, prev = {0, n}, 0
    for s, e in spans:
        if s < prev or e < s or e > n:
            raise AlignmentError(f"{name}: token offsets overlap or leave the text at ({s}, {e})")
        if s > prev:  # skipped characters (e.g. dropped whitespace) form their own boundary
            out.add(prev)
        out.add(s)
        out.add(e)
        prev = e
    return out


def align_segments(text: str, tokenizer, new_tokenizer) -> list[tuple[int, int]]:
    """Minimal character spans on which both tokenisations agree.

    Args:
        text: one line.
        tokenizer, new_tokenizer: fast tokenizers (offsets needed).

    Returns:
        The segments ``[(start, end), ...]``, sorted, tiling ``[0, len(text))``: the boundaries are
        exactly the offsets where both tokenisations have a token boundary.

    Raises:
        TypeError: a slow tokenizer (no offsets). ValueError: a normaliser that changes the text.
        AlignmentError: overlapping token offsets (the line cannot be aligned; callers skip it).

    Example:
        >>> align_segments("kyrkuwyla textix", t_a, t_b)   # doctest: +SKIP
        [(0, 4), (4, 10), (10, 16)]
    """
    a = _boundaries(token_spans(text, tokenizer, "tokenizer"), len(text), "tokenizer")
    b = _boundaries(token_spans(text, new_tokenizer, "new_tokenizer"), len(text), "new_tokenizer")
    cuts = sorted(a & b)
    return [(s, e) for s, e in zip(cuts[:-1], cuts[1:])]


def segment_ends(spans: list[tuple[int, int]], segments: list[tuple[int, int]]) -> list[int | None]:
    """Index of the token ending each segment (``None`` when no token ends there, e.g. a skipped gap)."""
    end_at = {e: i for i, (s, e) in enumerate(spans) if e > s}
    return [end_at.get(e) for _, e in segments]


def identical_share(texts, tokenizer, new_tokenizer) -> float:
    """Share of segments tokenised identically (same token strings) by both tokenizers.

    AIM is trivial on such a segment's own tokens; the share says how much of the text is new.
    """
    same = total = 0
    for text in texts:
        try:
            segs = align_segments(text, tokenizer, new_tokenizer)
        except AlignmentError:
            continue
        sa = token_spans(text, tokenizer)
        sb = token_spans(text, new_tokenizer)
        for s, e in segs:
            pa = [text[x:y] for x, y in sa if x >= s and y <= e]
            pb = [text[x:y] for x, y in sb if x >= s and y <= e]
            same += pa == pb
            total += 1
    return same / total if total else float("nan")
