"""The LVQMark green list: a KGW-style logit bias over the codebook (Kirchenbauer et al. 2023), with the
paper's fixed partition, parity alternation and unbiased warm-up.

- Partition: one fixed 50/50 split of the ``K`` codes, drawn from ``key`` (a ``torch.Generator`` permutation;
  the first ``K/2`` codes of the permutation are green). It does not depend on the context.
- Alternation: at odd **absolute** token positions (0-based: 1, 3, 5, ...) green and red swap. A stream
  that repeats one code is then half green whatever the key, which keeps the null centred.
- Warm-up: the first ``m`` positions get no bias and are not scored; ``warmup="auto"`` is
  ``m = min(4, L // 3)`` (``L`` tokens per series; with ``L = 15``, ``m = 4``).
- Bias: ``δ`` is added to the logits of the green codes at positions ``≥ m``.
- Detection statistic over the valid range ``[m, L)`` of ``L' = L − m`` tokens with green fraction ``g``:
  ``z = (g − ½)·√L' / ½ = 2(g − ½)√L'`` (γ = ½), one-sided p-value ``1 − Φ(z)``.
"""

from __future__ import annotations

import math

import torch

from paperworks import check_float, check_int

__all__ = ["Watermark"]


class Watermark:
    """A logits processor ``(positions, logits) → logits`` that biases the green codes by ``delta``.

    Args:
        key: non-negative int; fixes the partition.
        codebook_size: K (even).
        delta: the logit bias δ ≥ 0 (default 10, as in the official configs).
        alternate: swap green/red at odd absolute positions (default True).
        warmup: ``"auto"`` (``min(4, L // 3)``; needs ``length``) or an int number of unbiased tokens.
        length: L, tokens per series; bound by :class:`lvqmark.LVQMark` when left ``None``.

    ``positions`` is the absolute 0-based position of the token being sampled: an int (the same for
    the whole batch) or a ``(B,)`` LongTensor; ``logits`` is ``(B, K)`` (or ``(K,)`` with an int position).

    Example:
        >>> wm = Watermark(7, codebook_size=64, length=15)
        >>> int(wm.green_mask(0).sum()), wm.warmup_tokens
        (32, 4)
    """

    def __init__(self, key, *, codebook_size, delta=10.0, alternate=True, warmup="auto", length=None):
        self.key = check_int(key, "key", minimum=0)
        self.codebook_size = check_int(codebook_size, "codebook_size", minimum=2)
        if self.codebook_size % 2:
            raise ValueError(f"codebook_size must be even for a 50/50 split, got {codebook_size}")
        self.delta = check_float(delta, "delta", minimum=0.0)
        if not isinstance(alternate, bool):
            raise TypeError(f"alternate must be a bool, got {alternate!r}")
        self.alternate = alternate
        if warmup != "auto":
            check_int(warmup, "warmup", minimum=0)
        self.warmup = warmup
        self.length = check_int(length, "length", optional=True)
        if self.length is not None and warmup != "auto" and warmup >= self.length:
            raise ValueError(f"warmup ({warmup}) must be smaller than length ({self.length})")
        g = torch.Generator().manual_seed(self.key)
        perm = torch.randperm(self.codebook_size, generator=g)
        base = torch.zeros(self.codebook_size, dtype=torch.bool)
        base[perm[: self.codebook_size // 2]] = True
        self._base = base

    # ---- settings ----------------------------------------------------------------------------------
    @property
    def warmup_tokens(self) -> int:
        """m, the number of unbiased, unscored leading tokens."""
        if self.warmup != "auto":
            return int(self.warmup)
        if self.length is None:
            raise ValueError("warmup='auto' needs length (L); pass length= or bind the watermark with LVQMark")
        return min(4, self.length // 3)

    def settings(self) -> dict:
        """Everything but the key: what generator and detector must share."""
        return {"codebook_size": self.codebook_size, "delta": self.delta, "alternate": self.alternate,
                "warmup": self.warmup, "length": self.length}

    def with_key(self, key) -> Watermark:
        """The same settings under another key (the wrong-key control)."""
        return Watermark(key, **self.settings())

    def with_length(self, length) -> Watermark:
        s = self.settings()
        s["length"] = length
        return Watermark(self.key, **s)

    def check_matches(self, other: Watermark) -> None:
        """Refuse a detector whose settings differ from the generator's (TGI #2474: a silent γ/δ mismatch)."""
        if not isinstance(other, Watermark):
            raise TypeError(f"watermark must be a Watermark, got {type(other).__name__}")
        diff = {k: (v, other.settings()[k]) for k, v in self.settings().items() if other.settings()[k] != v}
        if diff:
            words = ", ".join(f"{k}: generator {a!r} vs detector {b!r}" for k, (a, b) in diff.items())
            raise ValueError(f"detector settings differ from the generator's ({words}); the z-test would be "
                             "invalid")

    def __repr__(self):
        s = ", ".join(f"{k}={v!r}" for k, v in self.settings().items())
        return f"Watermark(key={self.key}, {s})"

    # ---- the processor -----------------------------------------------------------------------------
    def _positions(self, positions, batch: int | None):
        if isinstance(positions, bool):
            raise TypeError("positions must be an int or a (B,) LongTensor, got a bool")
        if isinstance(positions, int):
            if positions < 0:
                raise ValueError(f"positions must be >= 0, got {positions}")
            return positions
        if not torch.is_tensor(positions) or positions.dtype not in (torch.int64, torch.int32) or positions.ndim != 1:
            raise TypeError("positions must be an int or a (B,) LongTensor")
        if batch is not None and positions.shape[0] != batch:
            raise ValueError(f"positions has {positions.shape[0]} entries but logits has {batch} rows")
        if (positions < 0).any():
            raise ValueError("positions must be >= 0")
        return positions.long()

    def green_mask(self, positions) -> torch.Tensor:
        """Green codes at ``positions``: ``(K,)`` for an int, ``(B, K)`` for a ``(B,)`` tensor."""
        pos = self._positions(positions, None)
        if isinstance(pos, int):
            return self._base ^ bool(self.alternate and pos % 2 == 1)
        flip = (pos % 2 == 1) & self.alternate
        return self._base[None, :] ^ flip[:, None].cpu()

    def __call__(self, positions, logits: torch.Tensor) -> torch.Tensor:
        if not torch.is_tensor(logits) or logits.shape[-1] != self.codebook_size:
            raise ValueError(f"logits must be a tensor (B, {self.codebook_size})")
        pos = self._positions(positions, logits.shape[0] if logits.ndim == 2 else None)
        m = self.warmup_tokens
        mask = self.green_mask(pos).to(logits.device)
        if isinstance(pos, int):
            return logits if pos < m else logits + self.delta * mask.to(logits.dtype)
        active = (pos >= m).to(logits.device)[:, None]
        return logits + self.delta * (mask & active).to(logits.dtype)

    # ---- detection ---------------------------------------------------------------------------------
    def is_green(self, tokens) -> torch.Tensor:
        """``(B, L)`` bool: token ``tokens[b, i]`` is green at absolute position ``i``."""
        tokens = torch.as_tensor(tokens)
        if tokens.ndim != 2 or tokens.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"tokens must be an integer tensor (B, L), got {tuple(tokens.shape)} {tokens.dtype}")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.codebook_size):
            raise ValueError(f"tokens must lie in [0, {self.codebook_size})")
        L = tokens.shape[1]
        masks = self.green_mask(torch.arange(L))                         # (L, K)
        return masks[torch.arange(L)[None, :], tokens.cpu().long()]

    def z_score(self, tokens) -> tuple[torch.Tensor, int]:
        """``(z (B,), L')``: z = 2(g − ½)√L' over positions ``[m, L)``."""
        green = self.is_green(tokens)
        L = green.shape[1]
        if self.length is not None and L != self.length:
            raise ValueError(f"tokens have length {L} but the watermark is bound to length {self.length}")
        m = self.warmup_tokens if self.warmup != "auto" or self.length is not None else min(4, L // 3)
        n_valid = L - m
        if n_valid < 1:
            raise ValueError(f"no valid tokens to score (L={L}, warm-up {m})")
        g = green[:, m:].double().mean(1)
        return 2.0 * (g - 0.5) * math.sqrt(n_valid), n_valid
