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
    """``episodes`` parallel episodes of random declarations, vectorised over episodes and agents
    (one sparse product per round), building the same observations as the JAX game.

    Returns the mean reward (so the work cannot be skipped).
    """
    adj = adjacency(graph)
    n, k, b = graph.n_nodes, n_options, episodes
    eye = np.eye(k, dtype=np.float32)
    truth = rng.integers(k, size=b)
    right = rng.random((b, n)) < signal_accuracy
    signals = np.where(right, truth[:, None], (truth[:, None] + rng.integers(1, k, (b, n))) % k)
    deg = np.asarray(adj.sum(1)).ravel()
    logdeg = np.broadcast_to((np.log1p(deg) / np.log1p(n))[None, :, None], (b, n, 1))
    own = eye[signals]
    total = 0.0
    for t in range(rounds):
        actions = rng.integers(0, k, (b, n))
        onehot = eye[actions]                                               # (B, N, K)
        counts = (adj @ onehot.transpose(1, 0, 2).reshape(n, b * k)).reshape(n, b, k).transpose(1, 0, 2)
        d = counts.sum(-1)
        mine = np.take_along_axis(counts, actions[..., None], -1)[..., 0]
        agree = np.where(d > 0, mine / np.maximum(d, 1), 0.0)
        rew = (1 - conformity) * (actions == truth[:, None]) + conformity * agree
        hist = counts / np.maximum(d, 1)[..., None]
        obs = np.concatenate([own, onehot, hist, np.full((b, n, 1), (t + 1) / rounds), logdeg], axis=-1)
        total += float(rew.mean()) + 0.0 * float(obs[0, 0, 0])
    return total / rounds
