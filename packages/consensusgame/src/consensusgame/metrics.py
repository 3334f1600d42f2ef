"""Rollouts and the game's metrics.

Per episode (``d_t`` the declarations of round ``t = 1..R``, ``s`` the signals, ``T`` the truth):

- ``accuracy``: fraction of agents with ``d_R = T`` (collective accuracy).
- ``majority_correct``: 1 if ``T`` is the strict plurality of ``d_R``.
- ``agreement``: mean fraction of neighbours agreeing in round ``R`` (agents with neighbours).
- ``dishonesty_r1``: P(``d_1 ≠ s``) — against the agent's **own signal**, not the truth.
- ``dishonesty``: P(``d_t ≠ s``) over all rounds.
- ``dishonesty_disagree``: P(``d_t ≠ s``) for ``t ≥ 2`` among agents whose neighbours'
  round-``t−1`` plurality was strictly another option ("lying to fit in").
- ``return``: mean per-agent sum of rewards.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from consensusgame.game import ConsensusGame, EnvParams, StructureKey
from consensusgame.policy import Policy


def rollout(env: ConsensusGame, policy: Policy, key, params: EnvParams | None = None) -> dict:
    """One episode; arrays of shape ``(R, N)`` (``counts``: ``(R, N, K)`` neighbours' declarations)."""
    k_reset, k_init, k_run = jax.random.split(key, 3)
    obs, state = env.reset(k_reset, params)
    carry = policy.init(policy.args, k_init, obs, state)

    def body(c, k):
        obs, state, carry = c
        ka, ks = jax.random.split(k)
        actions, carry = policy.act(policy.args, ka, obs, state, carry)
        obs2, state2, rew, _, info = env.step(ks, state, actions, params)
        out = {"decl": actions, "reward": rew, "agreement": info["agreement"], "degree": info["degree"],
               "counts": state2.counts}
        return (obs2, state2, carry), out

    _, traj = jax.lax.scan(body, (obs, state, carry), jax.random.split(k_run, env.rounds))
    traj["signals"] = state.signals
    traj["truth"] = state.truth
    return traj


def episode_metrics(traj: dict, n_options: int) -> dict:
    """Metrics of one trajectory from :func:`rollout` (numerators and denominators for ratios)."""
    decl, s, t = traj["decl"], traj["signals"], traj["truth"]
    final = decl[-1]
    votes = jnp.sum(jax.nn.one_hot(final, n_options), axis=0)
    others = jnp.max(jnp.where(jnp.arange(n_options) == t, -1.0, votes))
    has_nb = traj["degree"][-1] > 0
    lied = (decl != s[None, :]).astype(jnp.float32)
    prev = traj["counts"][:-1]                                        # neighbours' d_{t-1}, t = 2..R
    top = jnp.max(prev, axis=-1)
    own = jnp.take_along_axis(prev, jnp.broadcast_to(s[None, :, None], prev.shape[:2] + (1,)), -1)[..., 0]
    disagree = (prev.sum(-1) > 0) & (own < top)
    return {
        "accuracy": jnp.mean(final == t),
        "majority_correct": (votes[t] > others).astype(jnp.float32),
        "agreement_num": jnp.sum(jnp.where(has_nb, traj["agreement"][-1], 0.0)),
        "agreement_den": jnp.sum(has_nb).astype(jnp.float32),
        "dishonesty_r1": jnp.mean(lied[0]),
        "dishonesty": jnp.mean(lied),
        "disagree_num": jnp.sum(jnp.where(disagree, lied[1:], 0.0)),
        "disagree_den": jnp.sum(disagree).astype(jnp.float32),
        "return": jnp.mean(jnp.sum(traj["reward"], axis=0)),
        "accuracy_r1": jnp.mean(decl[0] == t),
    }


@partial(jax.jit, static_argnums=(0, 1, 4))
def _batch_metrics(skey, fns, args, key, episodes, params):
    env = skey.game
    policy = Policy(fns[0], fns[1], args)

    def one(k):
        return episode_metrics(rollout(env, policy, k, params), env.n_options)

    return jax.vmap(one)(jax.random.split(key, episodes))


def evaluate(env: ConsensusGame, policy, *, key=None, episodes: int = 64, params: EnvParams | None = None) -> dict:
    """Mean metrics of ``policy`` over ``episodes`` episodes (see the module docstring).

    Args:
        env: the game.
        policy: a :class:`~consensusgame.policy.Policy`, or network parameters from
            :func:`~consensusgame.ippo.train_ippo` (then sampled from the learned policy).
        key: a JAX PRNG key (default ``jax.random.key(0)``).
        episodes: number of episodes (>= 1).
        params: game parameters (default ``env.default_params``).
    """
    if not isinstance(env, ConsensusGame):
        raise TypeError(f"env must be a ConsensusGame, got {type(env).__name__}")
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be an int >= 1, got {episodes!r}")
    if not isinstance(policy, Policy):
        from consensusgame.ippo import make_policy

        policy = make_policy(policy, env)
    key = jax.random.key(0) if key is None else key
    params = env.complete_params(params)       # the graph travels as traced parameters: one compile per structure
    m = jax.device_get(_batch_metrics(StructureKey(env), policy.static, policy.args, key, episodes, params))
    out = {k: float(np.mean(m[k])) for k in ("accuracy", "majority_correct", "dishonesty_r1", "dishonesty",
                                              "return", "accuracy_r1")}
    out["agreement"] = float(np.sum(m["agreement_num"]) / max(np.sum(m["agreement_den"]), 1.0))
    den = float(np.sum(m["disagree_den"]))
    out["dishonesty_disagree"] = float(np.sum(m["disagree_num"]) / den) if den > 0 else float("nan")
    return out


@partial(jax.jit, static_argnums=(0, 2))
def _sample_obs(env, key, episodes):
    def one(k):
        kr, ks = jax.random.split(k)
        obs, state = env.reset(kr)

        def body(c, kk):
            obs, state = c
            ka, ke = jax.random.split(kk)
            a = jax.random.randint(ka, (env.num_agents,), 0, env.n_options)
            obs2, state2, *_ = env.step(ke, state, a)
            return (obs2, state2), obs

        return jax.lax.scan(body, (obs, state), jax.random.split(ks, env.rounds))[1]

    return jax.vmap(one)(jax.random.split(key, episodes)).reshape(-1, env.obs_dim)


def sample_observations(env: ConsensusGame, key, *, episodes: int = 8) -> jax.Array:
    """Observations ``(episodes·R·N, 3K + 2)`` met under random declarations (for equivariance checks)."""
    return _sample_obs(env, key, int(episodes))


def declaration_deviation(env: ConsensusGame, params_played, params_ref, params_other, *, key=None,
                          episodes: int = 64, params: EnvParams | None = None) -> dict:
    """Lying to fit in, measured against a reference policy on the *same* observations.

    ``params_played`` (e.g. the policy trained at high conformity) is rolled out (sampled). On every
    observation from round 2 on (a neighbour histogram exists), compare greedy declarations:

    - ``fit_in``: P(played declares the neighbours' strict plurality ∧ the reference, e.g. the c = 0
      policy of the same seed, would not): declaring to fit in where the truth-seeking policy would not;
    - ``deviation``: P(played ≠ reference);
    - ``noise_fit_in`` / ``noise_deviation``: the same with ``params_other`` (e.g. the c = 0 policy of
      another seed) in place of the played policy: what training noise alone gives.
    """
    from consensusgame.ippo import _check_finite, make_policy

    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be an int >= 1, got {episodes!r}")
    _check_finite((params_played, params_ref, params_other), "the policy parameters")
    key = jax.random.key(0) if key is None else key
    params = env.complete_params(params)
    pol = make_policy(params_played, env)
    out = jax.device_get(_deviation(StructureKey(env), pol.static, params_played, params_ref, params_other, key, int(episodes),
                                    params))
    return {k: float(v) for k, v in out.items()}


@partial(jax.jit, static_argnums=(0, 1, 6))
def _deviation(skey, fns, pa, pr, po, key, episodes, params):
    from consensusgame.ippo import action_probs

    env = skey.game

    policy = Policy(fns[0], fns[1], pa)
    k = env.n_options

    def one(kk):
        k_reset, k_init, k_run = jax.random.split(kk, 3)
        obs, state = env.reset(k_reset, params)
        carry = policy.init(policy.args, k_init, obs, state)

        def body(c, k2):
            obs, state, carry = c
            ka, ks = jax.random.split(k2)
            actions, carry = policy.act(policy.args, ka, obs, state, carry)
            obs2, state2, *_ = env.step(ks, state, actions, params)
            return (obs2, state2, carry), obs

        return jax.lax.scan(body, (obs, state, carry), jax.random.split(k_run, env.rounds))[1]

    obs = jax.vmap(one)(jax.random.split(key, episodes))[:, 1:].reshape(-1, env.obs_dim)   # rounds 2..R
    hist = obs[:, 2 * k:3 * k]
    top = jnp.max(hist, -1, keepdims=True)
    plural = jnp.where(jnp.sum(hist == top, -1) == 1, jnp.argmax(hist, -1), -1)  # strict plurality, else −1
    plural = jnp.where(jnp.sum(hist, -1) > 0, plural, -1)
    da, dr, do = (jnp.argmax(action_probs(p, obs), -1) for p in (pa, pr, po))
    return {"fit_in": jnp.mean((da == plural) & (dr != plural)), "deviation": jnp.mean(da != dr),
            "noise_fit_in": jnp.mean((do == plural) & (dr != plural)), "noise_deviation": jnp.mean(do != dr)}
