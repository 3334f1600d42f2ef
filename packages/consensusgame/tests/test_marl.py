"""JaxMARL's MultiAgentEnv contract, checked without jaxmarl (not installed here)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from consensusgame import ConsensusGame
from consensusgame.marl import Box, Discrete, MultiAgentConsensusGame


@pytest.fixture(scope="module")
def menv(env10):
    return MultiAgentConsensusGame(env10)


def test_agents_and_spaces(menv, env10):
    assert menv.num_agents == 10 and menv.agents == [f"agent_{i}" for i in range(10)]
    assert set(menv.observation_spaces) == set(menv.agents) == set(menv.action_spaces)
    a = menv.agents[3]
    assert isinstance(menv.action_space(a), Discrete) and menv.action_space(a).n == env10.n_options
    assert isinstance(menv.observation_space(a), Box) and menv.observation_space(a).shape == (env10.obs_dim,)
    obs, state = menv.reset(jax.random.key(0))
    assert set(obs) == set(menv.agents)
    assert all(bool(menv.observation_space(a).contains(obs[a])) for a in menv.agents)   # features lie in [0, 1]
    keys = jax.random.split(jax.random.key(1), 50)
    draws = np.array([int(menv.action_space(a).sample(k)) for k in keys])
    assert set(draws.tolist()) == {0, 1}
    assert bool(menv.action_space(a).contains(1)) and not bool(menv.action_space(a).contains(2))
    assert all(v.shape == (2,) and bool(v.all()) for v in menv.get_avail_actions(state).values())


def test_dicts_match_the_array_game(menv, env10):
    obs, state = menv.reset(jax.random.key(2))
    o2, s2 = env10.reset(jax.random.key(2))
    np.testing.assert_array_equal(np.stack([obs[a] for a in menv.agents]), np.asarray(o2))
    acts = {a: state.signals[i] for i, a in enumerate(menv.agents)}
    obs, st, rew, dones, info = menv.step_env(jax.random.key(3), state, acts)
    _, _, r2, _, _ = env10.step(jax.random.key(3), s2, s2.signals)
    np.testing.assert_allclose(np.array([rew[a] for a in menv.agents]), np.asarray(r2))
    assert set(dones) == set(menv.agents) | {"__all__"} and not bool(dones["__all__"])


def test_auto_reset_after_the_last_round(menv, env10):
    obs, state = menv.reset(jax.random.key(4))
    seen = []
    for t in range(env10.rounds):
        acts = {a: jnp.int32(0) for a in menv.agents}
        obs, state, rew, dones, info = menv.step(jax.random.key(10 + t), state, acts)
        seen.append(bool(dones["__all__"]))
    assert seen == [False] * (env10.rounds - 1) + [True]
    # the returned state is a fresh episode: round 0, no declarations yet, zero "last declaration" block
    assert int(state.round) == 0 and np.all(np.asarray(state.last_decl) == -1)
    k = env10.n_options
    assert np.all(np.stack([np.asarray(obs[a])[k:2 * k] for a in menv.agents]) == 0)
    # reset_state is honoured
    _, fixed = menv.reset(jax.random.key(99))
    for t in range(env10.rounds):
        obs, state, *_ = menv.step(jax.random.key(20 + t), state, {a: jnp.int32(1) for a in menv.agents},
                                   reset_state=fixed if t == env10.rounds - 1 else None)
    np.testing.assert_array_equal(np.asarray(state.signals), np.asarray(fixed.signals))


def test_jaxmarl_style_vmapped_rollout(menv, env10):
    """The usual JaxMARL loop: vmap over environments, scan over steps, actions sampled per agent."""
    def run(key):
        obs, state = menv.reset(key)

        def body(c, k):
            obs, state = c
            ks = jax.random.split(k, menv.num_agents + 1)
            acts = {a: menv.action_space(a).sample(ks[i]) for i, a in enumerate(menv.agents)}
            obs, state, rew, dones, _ = menv.step(ks[-1], state, acts)
            return (obs, state), (jnp.stack([rew[a] for a in menv.agents]), dones["__all__"])

        return jax.lax.scan(body, (obs, state), jax.random.split(key, 2 * env10.rounds))[1]

    rew, done = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(5), 3))
    assert rew.shape == (3, 2 * env10.rounds, 10) and np.all(np.isfinite(np.asarray(rew)))
    assert np.asarray(done).sum(1).tolist() == [2, 2, 2]


def test_bad_game():
    with pytest.raises(TypeError, match="ConsensusGame"):
        MultiAgentConsensusGame("game")
    assert isinstance(MultiAgentConsensusGame(ConsensusGame(np.array([[0, 1], [1, 2]]))).game, ConsensusGame)
