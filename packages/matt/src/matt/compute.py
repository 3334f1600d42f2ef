"""Deterministic compute accounting: counted FLOPs of training steps as a function of the batch shape.

Wall time on a shared machine varies by ±20% for identical work, so equal compute is defined by
counted floating-point operations instead: ``torch.utils.flop_counter.FlopCounterMode`` counts the
matrix products (forward and backward) that a step actually runs. Counting every step under the
counter would slow training down by half, so each kind of work is counted once per batch shape:
for a decoder the matrix products of a padded batch of ``B`` sequences of length ``T`` cost exactly
``B·(a·T + b·T²)`` (linear layers and the LM head are linear in ``T``, the attention products
quadratic). ``a`` and ``b`` are read from two counted runs and the form is verified on a third
length; a model where it does not hold is counted at every new length instead (still exact).
"""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode


def count_flops(fn) -> int:
    """Matrix-product FLOPs (forward and backward) counted while ``fn()`` runs."""
    with FlopCounterMode(display=False) as fc:
        fn()
    return int(fc.get_total_flops())


class ShapeFlops:
    """FLOPs of ``work(ids, mask)`` for a padded ``(B, T)`` batch, counted once and reused.

    ``work`` runs the model work of one step on a batch (forward, and backward where the step has
    one); it is called on dummy token ids under a forked random state, so counting changes neither
    the training data order nor dropout.
    """

    def __init__(self, work, *, token_id: int, device="cpu"):
        self.work, self.token_id, self.device = work, int(token_id), device
        self.coef: tuple[int, int] | None = None
        self.exact: dict[int, int] = {}
        self._fitted = False

    def _count(self, t: int) -> int:
        ids = torch.full((1, t), self.token_id, dtype=torch.long, device=self.device)
        mask = torch.ones_like(ids)
        with torch.random.fork_rng(devices=[]):
            return count_flops(lambda: self.work(ids, mask))

    def _fit(self):
        self._fitted = True
        f2, f4, f6 = self._count(2), self._count(4), self._count(6)
        # f(T) = a T + b T^2: f(2) = 2a + 4b, f(4) = 4a + 16b
        b2 = f4 - 2 * f2  # = 8b
        if b2 % 8 == 0:
            b = b2 // 8
            a2 = f2 - 4 * b
            if a2 % 2 == 0:
                a = a2 // 2
                if a * 6 + b * 36 == f6:
                    self.coef = (a, b)
                    return
        self.exact.update({2: f2, 4: f4, 6: f6})

    def per_sequence(self, t: int) -> int:
        if not self._fitted:
            self._fit()
        if self.coef is not None:
            a, b = self.coef
            return a * t + b * t * t
        if t not in self.exact:
            self.exact[t] = self._count(t)
        return self.exact[t]

    def __call__(self, batch: int, t: int) -> int:
        return int(batch) * self.per_sequence(int(t))
