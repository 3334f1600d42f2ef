"""An independent NumPy/SciPy-sparse implementation of one round of the game.

Used by the tests (rewards against the JAX game) and by ``bench`` (the JAX game's throughput
as a ratio to this vectorised NumPy reference).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from consensusgame.graphs import Graph


def adjacency(graph: Graph) -> sparse.csr_matrix:
    """Symmetric 0/1 adjacency matrix (static graphs)."""
    if graph.kind != "static":
        raise ValueError("adjacency needs a static graph")
    n = graph.n_nodes
    data = np.ones(graph.senders.shape[0])
    return sparse.csr_matrix((data, (graph.receivers, graph.senders)), shape=(n, n))


def round_rewards(adj: sparse.csr_matrix, actions: np.ndarray, truth: int, conformity: float,
                  n_options: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rewards (N,), neighbour counts (N, K))`` of one round, from the rule in :mod:`consensusgame.game`."""
    onehot = np.eye(n_options)[actions]
    counts = adj @ onehot
    deg = counts.sum(1)
    agree = np.where(deg > 0, counts[np.arange(len(actions)), actions] / np.maximum(deg, 1), 0.0)
    return (1 - conformity) * (actions == truth) + conformity * agree, counts


def random_episodes(graph: Graph, *, episodes: int, n_options: int, rounds: int, conformity: float,
                    signal_accuracy: float, rng: np.random.Generator) -> float:
    """Play ``episodes`` episodes of random declarations; returns the mean reward (keeps work honest)."""
    adj = adjacency(graph)
    n, total = graph.n_nodes, 0.0
    for _ in range(episodes):
        truth = rng.integers(n_options)
        right = rng.random(n) < signal_accuracy
        _signals = np.where(right, truth, (truth + rng.integers(1, n_options, n)) % n_options)
        for _ in range(rounds):
            r, _ = round_rewards(adj, rng.integers(0, n_options, n), truth, conformity, n_options)
            total += r.mean()
    return total / (episodes * rounds)
