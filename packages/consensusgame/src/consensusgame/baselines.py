"""Hand-crafted opinion-dynamics baselines, as :class:`~consensusgame.policy.Policy` objects.

All declare their own signal in round 1. Then, each round:

- ``degroot``: beliefs ``b_i`` (start: one-hot signal) are averaged with the current neighbours'
  beliefs, ``b_i ← (b_i + Σ_j b_j) / (1 + deg_i)`` (DeGroot 1974; beliefs are exchanged, not only
  declarations); declare ``argmax b_i``, ties to the own signal.
- ``majority``: adopt the plurality of the neighbours' last declarations and one's own
  (majority rule with self-vote); ties keep the own declaration.
- ``voter``: copy the last declaration of a uniformly random neighbour (voter model);
  isolated agents keep theirs.
- ``signal_then_majority``: follow the plurality of the neighbours' last declarations,
  ties (and no neighbours) to the own signal.
- ``random``: a uniformly random option every round (the random-declaration policy).
- ``honest``: always the own signal.
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp

from consensusgame.game import ConsensusGame
from consensusgame.policy import Policy, stateless


def random_policy(env: ConsensusGame) -> Policy:
    def fn(args, key, obs, state):
        return jax.random.randint(key, (env.num_agents,), 0, env.n_options)

    return stateless(fn, "random")


def honest(env: ConsensusGame) -> Policy:
    return stateless(lambda args, key, obs, state: state.signals, "honest")


def majority(env: ConsensusGame) -> Policy:
    def fn(args, key, obs, state):
        own = jax.nn.one_hot(state.last_decl, env.n_options)
        later = jnp.argmax(state.counts + 1.5 * own, axis=-1).astype(jnp.int32)
        return jnp.where(state.round == 0, state.signals, later)

    return stateless(fn, "majority")


def signal_then_majority(env: ConsensusGame) -> Policy:
    def fn(args, key, obs, state):
        sig = jax.nn.one_hot(state.signals, env.n_options)
        later = jnp.argmax(state.counts + 0.5 * sig, axis=-1).astype(jnp.int32)
        return jnp.where(state.round == 0, state.signals, later)

    return stateless(fn, "signal_then_majority")


def voter(env: ConsensusGame) -> Policy:
    def fn(args, key, obs, state):
        deg = state.counts.sum(-1)
        logits = jnp.log(jnp.maximum(state.counts, 1e-30))
        copied = jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)
        later = jnp.where(deg > 0, copied, state.last_decl)
        return jnp.where(state.round == 0, state.signals, later)

    return stateless(fn, "voter")


def degroot(env: ConsensusGame) -> Policy:
    k = env.n_options

    def init(args, key, obs, state):
        return jax.nn.one_hot(state.signals, k)

    def act(args, key, obs, state, beliefs):
        deg = env.degree(state.groups)[:, None]
        averaged = (beliefs + env.neighbour_sum(beliefs, state.groups)) / (1.0 + deg)
        beliefs = jnp.where(state.round == 0, beliefs, averaged)
        tie_break = 1e-6 * jax.nn.one_hot(state.signals, k)
        return jnp.argmax(beliefs + tie_break, axis=-1).astype(jnp.int32), beliefs

    return Policy(init, act, (), "degroot")


BASELINES = {
    "random": random_policy,
    "honest": honest,
    "degroot": degroot,
    "majority": majority,
    "voter": voter,
    "signal_then_majority": signal_then_majority,
}


@lru_cache(maxsize=256)
def make_baseline(name: str, env: ConsensusGame) -> Policy:
    """The baseline ``name`` for ``env`` (cached, so repeated evaluations compile once)."""
    if name not in BASELINES:
        raise ValueError(f"baseline must be one of {sorted(BASELINES)}, got {name!r}")
    return BASELINES[name](env)
