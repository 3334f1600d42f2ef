"""A neighbour-attention importance layer that recovers agent importance from topology.

Our design from the abstract (the paper fits its layer on Bluesky data, which we do not have).
Every node ``j`` gets an importance score from its topology features alone,
``e_j = MLP(f_j)``, and agent ``i`` weighs its neighbours' declarations by
``α_ij = softmax_{j ∈ N(i)}(e_j)``::

    h_i = Σ_{j ∈ N(i)} α_ij · onehot(d_j),        p_i(T = k) ∝ exp(β · h_ik).

:func:`fit_importance` trains ``(MLP, β)`` by cross-entropy to predict the truth from the
neighbours' round-1 declarations in games where node ``j``'s signal is right with a planted
probability ``q_j``. If the layer works, the learned score ``e_j`` ranks nodes like ``q_j``
(Spearman correlation), although it only ever sees the graph.

Shapes: ``features`` ``(N, F)``, ``x`` ``(N, K)``, ``senders``/``receivers`` ``(2|E|,)``.
"""

from __future__ import annotations

from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from consensusgame.graphs import Graph, topology_features


class NeighbourAttention(nn.Module):
    """``forward(features, x, senders, receivers) -> (h (N, K), alpha (2|E|,), scores (N,))``."""

    hidden: int = 16

    @nn.compact
    def __call__(self, features, x, senders, receivers):
        n = features.shape[0]
        scores = nn.Dense(1)(nn.tanh(nn.Dense(self.hidden)(features)))[:, 0]
        e = scores[senders]
        e_max = jax.ops.segment_max(e, receivers, num_segments=n)
        w = jnp.exp(e - e_max[receivers])
        alpha = w / jax.ops.segment_sum(w, receivers, num_segments=n)[receivers]
        h = jax.ops.segment_sum(alpha[:, None] * x[senders], receivers, num_segments=n)
        return h, alpha, scores


def attention_received(graph: Graph, alpha) -> np.ndarray:
    """Mean attention node ``j`` receives from its neighbours, shape ``(N,)`` (0 if isolated)."""
    alpha = np.asarray(alpha)
    tot = np.bincount(graph.senders, weights=alpha, minlength=graph.n_nodes)
    deg = np.bincount(graph.senders, minlength=graph.n_nodes)
    return tot / np.maximum(deg, 1)


def fit_importance(graph: Graph, signal_accuracy, *, key=None, n_options: int = 2, steps: int = 300,
                   batch: int = 32, lr: float = 0.03, hidden: int = 16, features=None) -> dict:
    """Fit the attention layer on simulated round-1 declarations; return the learned importance.

    Args:
        graph: a static graph.
        signal_accuracy: planted per-node accuracy ``q_j``, shape ``(N,)``, in [0, 1].
        key: JAX PRNG key (default ``jax.random.key(0)``).
        n_options: ``K >= 2``.
        steps, batch, lr, hidden: Adam steps, games per step, learning rate, MLP width.
        features: topology features ``(N, F)`` (default :func:`~consensusgame.graphs.topology_features`).

    Returns:
        ``{"scores": (N,), "received": (N,), "beta": float, "loss": (steps,)}``.
    """
    if not isinstance(graph, Graph) or graph.kind != "static":
        raise ValueError("graph must be a static consensusgame Graph")
    q = np.asarray(signal_accuracy, dtype=np.float32)
    if q.shape != (graph.n_nodes,):
        raise ValueError(f"signal_accuracy must have shape ({graph.n_nodes},), got {q.shape}")
    if np.any(q < 0) or np.any(q > 1):
        raise ValueError("signal_accuracy must lie in [0, 1]")
    if n_options < 2:
        raise ValueError(f"n_options must be >= 2, got {n_options}")
    key = jax.random.key(0) if key is None else key
    f = jnp.asarray(topology_features(graph) if features is None else features, jnp.float32)
    snd, rcv = jnp.asarray(graph.senders), jnp.asarray(graph.receivers)
    has_nb = jnp.asarray(np.bincount(graph.receivers, minlength=graph.n_nodes) > 0)
    qj = jnp.asarray(q)
    p, losses, alpha, scores = _fit(key, f, snd, rcv, has_nb, qj, hidden=int(hidden), steps=int(steps),
                                    batch=int(batch), lr=float(lr), n_options=int(n_options))
    return {"scores": np.asarray(scores), "received": attention_received(graph, alpha),
            "beta": float(np.exp(p["log_beta"])), "loss": np.asarray(losses)}


@partial(jax.jit, static_argnames=("hidden", "steps", "batch", "lr", "n_options"))
def _fit(key, f, snd, rcv, has_nb, qj, *, hidden, steps, batch, lr, n_options):
    layer = NeighbourAttention(hidden)
    tx = optax.adam(lr)
    n = f.shape[0]
    k_init, key = jax.random.split(key)
    params = {"layer": layer.init(k_init, f, jnp.zeros((n, n_options)), snd, rcv), "log_beta": jnp.float32(1.0)}

    def sample(k):
        kt, kc, kw = jax.random.split(k, 3)
        t = jax.random.randint(kt, (), 0, n_options)
        right = jax.random.uniform(kc, (n,)) < qj
        wrong = (t + jax.random.randint(kw, (n,), 1, n_options)) % n_options
        return t, jax.nn.one_hot(jnp.where(right, t, wrong), n_options)

    def loss_fn(p, k):
        t, x = jax.vmap(sample)(jax.random.split(k, batch))
        h = jax.vmap(lambda xx: layer.apply(p["layer"], f, xx, snd, rcv)[0])(x)     # (B, N, K)
        logp = jax.nn.log_softmax(jnp.exp(p["log_beta"]) * h, -1)
        nll = -jnp.take_along_axis(logp, jnp.broadcast_to(t[:, None, None], logp.shape[:2] + (1,)), -1)[..., 0]
        return jnp.sum(jnp.where(has_nb, nll, 0.0)) / (batch * jnp.maximum(has_nb.sum(), 1))

    def step(c, k):
        p, s = c
        loss, g = jax.value_and_grad(loss_fn)(p, k)
        u, s = tx.update(g, s, p)
        return (optax.apply_updates(p, u), s), loss

    (p, _), losses = jax.lax.scan(step, (params, tx.init(params)), jax.random.split(key, steps))
    _, alpha, scores = layer.apply(p["layer"], f, jnp.zeros((n, n_options)), snd, rcv)
    return p, losses, alpha, scores


def planted_accuracy(graph: Graph, *, rng: np.random.Generator, low: float = 0.5, high: float = 0.9,
                     noise: float = 0.5, weights=None) -> np.ndarray:
    """Planted importance ``q_j`` in ``[low, high]``: the percentile of a latent topology score
    plus ``noise·ε_j``, mapped linearly.

    ``weights=None``: the latent is the standardised ``log(1+deg_j)`` (influence grows with
    in-degree, blurred), which ranking nodes by degree recovers without learning anything.
    ``weights`` (4,): the latent is ``topology_features(graph) @ weights`` (normalised), a mix of
    log-degree, PageRank, clustering and core number that the layer must find from behaviour.
    """
    if weights is None:
        lat = np.log1p(graph.degree().astype(float))
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (4,) or not np.all(np.isfinite(w)) or not np.any(w):
            raise ValueError(f"weights must be 4 finite numbers, not all zero, got {weights!r}")
        lat = topology_features(graph) @ (w / np.linalg.norm(w))
    lat = (lat - lat.mean()) / (lat.std() or 1.0)
    latent = lat + noise * rng.standard_normal(graph.n_nodes)
    pct = np.argsort(np.argsort(latent)) / max(graph.n_nodes - 1, 1)
    return low + (high - low) * pct


def planted_independent(graph: Graph, *, rng: np.random.Generator, low: float = 0.5, high: float = 0.9) -> np.ndarray:
    """Planted importance ``q_j`` in ``[low, high]`` drawn independently of the graph: the percentile
    of i.i.d. normal draws, mapped linearly. No topology heuristic (degree, PageRank, ...) can rank
    it better than chance; only the declarations carry it."""
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a consensusgame Graph, got {type(graph).__name__}")
    latent = rng.standard_normal(graph.n_nodes)
    pct = np.argsort(np.argsort(latent)) / max(graph.n_nodes - 1, 1)
    return low + (high - low) * pct


def engagement_accuracy(engagement, *, low: float = 0.5, high: float = 0.9) -> np.ndarray:
    """Signal accuracy ``q_j`` in ``[low, high]`` from a real graph's per-node engagement: the
    engagement's percentile (ties share their mean rank), mapped linearly. The game is then played
    with these accuracies, and the layer (on node identities) must recover the engagement ranking
    from the declarations alone — our stand-in for the paper's fit on real engagement data."""
    from scipy.stats import rankdata

    e = np.asarray(engagement, dtype=float)
    if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)):
        raise ValueError(f"engagement must be a finite 1-D array of >= 2 values, got shape {e.shape}")
    pct = (rankdata(e) - 1) / (e.size - 1)
    return low + (high - low) * pct


def identity_features(graph: Graph) -> np.ndarray:
    """One-hot node identities ``(N, N)``: with these the layer's score is a free per-node parameter,
    learnable only from declaration statistics (use with :func:`planted_independent`)."""
    return np.eye(graph.n_nodes, dtype=np.float32)
