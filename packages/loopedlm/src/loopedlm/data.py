"""Generated arithmetic strings and a character vocabulary (nothing is downloaded)."""

from __future__ import annotations

import numpy as np
import torch

CHARS = "\n0123456789+-*= "
PAD = 0  # "\n" doubles as separator and padding


def arithmetic_lines(rng: np.random.Generator, n: int, *, max_digits: int = 3) -> list[str]:
    """``n`` lines ``a+b=c`` / ``a-b=c`` / ``a*b=c`` with operands of up to ``max_digits`` digits."""
    if n < 1 or max_digits < 1:
        raise ValueError(f"n and max_digits must be >= 1, got {n}, {max_digits}")
    out = []
    for _ in range(n):
        op = "+-*"[rng.integers(3)]
        a, b = (int(rng.integers(0, 10 ** int(rng.integers(1, max_digits + 1)))) for _ in range(2))
        if op == "*":
            b %= 100
        c = a + b if op == "+" else a - b if op == "-" else a * b
        out.append(f"{a}{op}{b}={c}")
    return out


def encode(text: str) -> list[int]:
    bad = sorted(set(text) - set(CHARS))
    if bad:
        raise ValueError(f"text has characters outside the vocabulary {CHARS!r}: {bad}")
    return [CHARS.index(ch) for ch in text]


def arithmetic_batches(rng: np.random.Generator, n_seq: int, t: int) -> torch.Tensor:
    """``(n_seq, t)`` token ids: a stream of newline-separated arithmetic lines cut into windows."""
    if n_seq < 1 or t < 2:
        raise ValueError(f"need n_seq >= 1 and t >= 2, got {n_seq}, {t}")
    stream = []
    while len(stream) < n_seq * t:
        stream += encode("\n".join(arithmetic_lines(rng, 512)) + "\n")
    return torch.tensor(stream[:n_seq * t]).view(n_seq, t)
