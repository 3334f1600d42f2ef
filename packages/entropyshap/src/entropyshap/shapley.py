"""Shapley values of a (vector-valued) coalition game: exact enumeration and antithetic permutations.

A game is a table of values over coalitions. Coalitions are integer bit masks: player ``i`` is in
coalition ``m`` when bit ``i`` of ``m`` is set. For ``p`` players the exact Shapley value is

    φ_i = Σ_{S ⊆ N∖{i}} |S|! (p − |S| − 1)! / p! · (v(S ∪ {i}) − v(S)),

computed here for every trailing axis of the value table at once (all games, all explained points),
so one pass over the 2^p coalitions serves every game.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import gammaln

from paperworks.utils import check_int

#: exact enumeration is refused above this many players (2^p coalitions)
MAX_EXACT_PLAYERS = 20


def popcount(masks: np.ndarray) -> np.ndarray:
    """Number of set bits of each integer mask."""
    m = np.asarray(masks, dtype=np.int64)
    out = np.zeros(m.shape, dtype=np.int64)
    while np.any(m):
        out += m & 1
        m = m >> 1
    return out


def coalition_matrix(masks, p: int) -> np.ndarray:
    """Boolean matrix ``(len(masks), p)``: row r says which players are in coalition ``masks[r]``."""
    masks = np.asarray(masks, dtype=np.int64)
    return ((masks[:, None] >> np.arange(p)) & 1).astype(bool)


def masks_of(coalitions) -> np.ndarray:
    """Integer masks of a boolean coalition matrix ``(m, p)``."""
    c = np.asarray(coalitions, dtype=bool)
    return (c.astype(np.int64) << np.arange(c.shape[1])).sum(axis=1)


def shapley_weights(p: int) -> np.ndarray:
    """``w[s] = s! (p − s − 1)! / p!`` for ``s = 0 … p − 1``."""
    s = np.arange(p)
    return np.exp(gammaln(s + 1) + gammaln(p - s) - gammaln(p + 1))


def shapley_from_table(values: np.ndarray, p: int) -> np.ndarray:
    """Exact Shapley values from a full table ``values[mask, ...]`` of the 2^p coalitions.

    Args:
        values: array ``(2**p, ...)`` indexed by coalition mask.
        p: number of players.

    Returns:
        ``(p, ...)``: the Shapley value of each player for every trailing index.
    """
    values = np.asarray(values, dtype=float)
    if values.shape[0] != 2 ** p:
        raise ValueError(f"values must have 2**p = {2 ** p} rows, got {values.shape[0]}")
    masks = np.arange(2 ** p, dtype=np.int64)
    size = popcount(masks)
    w = shapley_weights(p)
    phi = np.empty((p,) + values.shape[1:])
    flat = values.reshape(2 ** p, -1)
    for i in range(p):
        without = masks[((masks >> i) & 1) == 0]
        phi[i] = (w[size[without]] @ (flat[without | (1 << i)] - flat[without])).reshape(values.shape[1:])
    return phi


def exact_shapley(value_fn: Callable[[np.ndarray], np.ndarray], p: int) -> np.ndarray:
    """Exact Shapley values of the game ``value_fn`` over ``p`` players (all 2^p coalitions, one call).

    Args:
        value_fn: takes a boolean coalition matrix ``(2**p, p)`` (shapiq's convention) and returns
            the values ``(2**p,)`` or ``(2**p, ...)`` (several games at once).
        p: number of players, ``1 ≤ p ≤ 20``.

    Returns:
        ``(p,)`` or ``(p, ...)``.

    Example:
        >>> exact_shapley(lambda C: C.sum(1) ** 2.0, 3)   # symmetric: each gets 9 / 3
        array([3., 3., 3.])
    """
    p = check_int(p, "p", minimum=1, maximum=MAX_EXACT_PLAYERS)
    if not callable(value_fn):
        raise TypeError(f"value_fn must be callable, got {type(value_fn).__name__}")
    C = coalition_matrix(np.arange(2 ** p), p)
    v = np.asarray(value_fn(C), dtype=float)
    if v.ndim == 0 or v.shape[0] != 2 ** p:
        raise ValueError(f"value_fn must return one value per coalition ({2 ** p} rows), got shape {v.shape}")
    return shapley_from_table(v, p)


def permutation_masks(p: int, n_permutations: int, rng: np.random.Generator) -> np.ndarray:
    """Antithetic permutations: ``(n_permutations, p)`` orders, each followed by its reverse."""
    n_permutations = check_int(n_permutations, "n_permutations", minimum=2)
    half = (n_permutations + 1) // 2
    perms = np.stack([rng.permutation(p) for _ in range(half)])
    return np.concatenate([perms, perms[:, ::-1]])[:n_permutations]


def permutation_shapley(eval_masks: Callable[[np.ndarray], np.ndarray], p: int, n_permutations: int,
                        rng: np.random.Generator) -> np.ndarray:
    """Shapley values by antithetic permutation sampling.

    Each sampled order π and its reverse walk the chain ∅ → {π1} → {π1, π2} → …; a player's value
    is the mean of its marginal contributions. ``eval_masks`` is called once, on the unique masks.

    Args:
        eval_masks: integer masks ``(m,)`` → values ``(m, ...)``.
        p: number of players.
        n_permutations: permutations (antithetic pairs; ≥ 2).
        rng: the random generator.
    """
    perms = permutation_masks(p, n_permutations, rng)
    steps = np.cumsum(np.left_shift(1, perms), axis=1)  # mask after adding each player
    chain = np.concatenate([np.zeros((len(perms), 1), dtype=np.int64), steps], axis=1)
    uniq, inv = np.unique(chain, return_inverse=True)
    vals = np.asarray(eval_masks(uniq), dtype=float)
    table = vals[inv.reshape(chain.shape)]  # (n_perm, p + 1, ...)
    contrib = table[:, 1:] - table[:, :-1]
    phi = np.zeros((p,) + vals.shape[1:])
    for k in range(len(perms)):
        phi[perms[k]] += contrib[k]
    return phi / len(perms)


__all__ = ["exact_shapley", "shapley_from_table", "permutation_shapley", "coalition_matrix", "masks_of",
           "popcount", "shapley_weights", "MAX_EXACT_PLAYERS"]
