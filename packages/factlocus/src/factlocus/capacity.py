"""The capacity load and the parameter-counting calculator for the predicted crossover.

The capacity load is ``lambda = facts * log2|A| / parameters`` (bits a lookup table would need per
parameter). The calculator counts the bits each *pathway class* must store for a world (our reading
of the abstract's parameter-counting argument; the paper's derivation is not public):

- the MLP-storage pathway stores every fact in its answer entropy:  ``F * H(A)``;
- the attention-routing pathway gathers the subject and can route a *cluster id* instead of the
  subject, so a subject collision of cluster size ``c`` shrinks its table to the ``S / c`` distinct
  rows plus the subject-to-cluster map: ``(S / c) * R * log2|A| + S * log2(S / c)``; relation and
  answer collisions do not shrink what it must route (``F * log2|A|``).

With a knowledge capacity of ``bits_per_param`` (Allen-Zhu & Li report about 2 bits per parameter)
a pathway needs ``bits / bits_per_param`` parameters; the *crossover ratio* of a motif is the
factor by which its collision lowers the routing pathway's parameter need relative to independent
facts -- the predicted shift of the capacity threshold at which that pathway can carry the recall.
"""

from __future__ import annotations

import math

import numpy as np


def capacity_load(n_facts: int, n_answers: int, n_params: int) -> float:
    """``lambda = n_facts * log2(n_answers) / n_params``."""
    if n_facts < 1 or n_answers < 2 or n_params < 1:
        raise ValueError(f"need n_facts >= 1, n_answers >= 2, n_params >= 1; got {n_facts}, {n_answers}, {n_params}")
    return n_facts * math.log2(n_answers) / n_params


def entropy_bits(p) -> float:
    p = np.asarray(p, dtype=float)
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def pathway_bits(world) -> dict[str, float]:
    """Bits the MLP-storage and attention-routing pathways must hold for ``world`` (see module doc)."""
    S, R, A = world.n_subjects, world.n_relations, world.n_answers
    F = S * R
    h = entropy_bits(world.answer_distribution())
    routing = F * math.log2(A)
    if world.motif in ("subject", "joint"):
        c = world.cluster
        routing = (S / c) * R * math.log2(A) + S * math.log2(max(S / c, 1.0))
    storage = F * h
    if world.motif == "subject":
        storage = (S / world.cluster) * R * h + S * math.log2(max(S / world.cluster, 1.0))
    if world.motif == "relation":
        storage = S * (R / world.cluster) * h + R * math.log2(max(R / world.cluster, 1.0))
    return {"storage": storage, "routing": routing, "independent": F * math.log2(A)}


def crossover(world, bits_per_param: float = 2.0) -> dict[str, float]:
    """Predicted parameter needs of each pathway and the routing pathway's crossover ratio."""
    b = pathway_bits(world)
    return {
        "storage_params": b["storage"] / bits_per_param,
        "routing_params": b["routing"] / bits_per_param,
        "routing_crossover_ratio": b["independent"] / b["routing"],
        "storage_crossover_ratio": b["independent"] / b["storage"],
    }
