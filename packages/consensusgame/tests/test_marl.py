"""JaxMARL's MultiAgentEnv contract: checked directly, and with jaxmarl's own wrappers (a [test] dependency)."""

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


@pytest.fixture(scope="module")
def jm(env10):
    from consensusgame import jaxmarl_env

    return jaxmarl_env(env10)


def test_jaxmarl_env_is_a_jaxmarl_multiagentenv(jm):
    from jaxmarl.environments import spaces
    from jaxmarl.environments.multi_agent_env import MultiAgentEnv

    assert isinstance(jm, MultiAgentEnv) and isinstance(jm, MultiAgentConsensusGame)
    assert all(isinstance(jm.action_space(a), spaces.Discrete) for a in jm.agents)
    assert all(isinstance(jm.observation_space(a), spaces.Box) for a in jm.agents)


def test_jaxmarl_log_wrapper_counts_episode_returns(jm, env10):
    """JaxMARL's LogWrapper over 3 vmapped games for two episodes of honest play: the returns it
    reports when an episode ends equal the rewards summed by hand."""
    from jaxmarl.wrappers.baselines import LogWrapper

    env = LogWrapper(jm)

    def run(key):
        obs, state = env.reset(key)

        def body(state, k):
            acts = {a: state.env_state.signals[i] for i, a in enumerate(jm.agents)}
            obs, state, rew, dones, info = env.step(k, state, acts)
            return state, (jnp.stack([rew[a] for a in jm.agents]), info["returned_episode_returns"],
                           info["returned_episode"])

        return jax.lax.scan(body, state, jax.random.split(key, 2 * env10.rounds))[1]

    rew, ret, ended = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(6), 3))
    r = env10.rounds
    np.testing.assert_allclose(np.asarray(ret[:, r - 1]), np.asarray(rew[:, :r].sum(1)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ret[:, 2 * r - 1]), np.asarray(rew[:, r:].sum(1)), rtol=1e-6)
    assert np.asarray(ended)[:, :, 0].sum(1).tolist() == [2, 2, 2]


def test_jaxmarl_ct_rollout_manager(jm, env10):
    """JaxMARL's CTRolloutManager (its Q-learning baselines' batcher): agent-id features, the global
    state and the global reward on the game."""
    from jaxmarl.wrappers.baselines import CTRolloutManager

    mgr = CTRolloutManager(jm, batch_size=4)
    obs, state = mgr.batch_reset(jax.random.key(7))
    assert obs["agent_0"].shape == (4, env10.obs_dim + 10) and obs["__all__"].shape == (4, 10 * env10.obs_dim)
    acts = {a: mgr.batch_sample(jax.random.fold_in(jax.random.key(8), i), a) for i, a in enumerate(jm.agents)}
    assert all(set(np.unique(np.asarray(v))) <= {0, 1} for v in acts.values())
    obs, state, rew, dones, _ = mgr.batch_step(jax.random.key(9), state, acts)
    np.testing.assert_allclose(np.asarray(rew["__all__"]), np.asarray(sum(rew[a] for a in jm.agents)), rtol=1e-6)
    assert dones["__all__"].shape == (4,)


def test_trained_ippo_policy_in_jaxmarl_ippo_rollout(jm, env10, trained_op):
    """The rollout of JaxMARL's IPPO baseline (LogWrapper, batchify the agents' observations into one
    (envs·agents, obs) batch, sample, unbatchify, auto-reset) with the policy trained here: its
    logged episode returns agree with this package's own evaluation of the same policy."""
    from consensusgame import evaluate
    from consensusgame.ippo import ActorCritic
    from jaxmarl.wrappers.baselines import LogWrapper

    net_params, _ = trained_op
    net = ActorCritic(env10.n_options, 16)
    env, n_envs, agents = LogWrapper(jm), 16, jm.agents

    def batchify(x):
        return jnp.stack([x[a] for a in agents]).reshape((len(agents) * n_envs, -1))

    def unbatchify(x):
        x = x.reshape((len(agents), n_envs))
        return {a: x[i] for i, a in enumerate(agents)}

    def env_step(carry, key):
        obs, state = carry
        k_act, k_env = jax.random.split(key)
        logits, _ = net.apply(net_params, batchify(obs))
        action = jax.random.categorical(k_act, logits)
        obs, state, _, _, info = jax.vmap(env.step)(jax.random.split(k_env, n_envs), state, unbatchify(action))
        return (obs, state), (info["returned_episode_returns"], info["returned_episode"])

    @jax.jit
    def run(key):
        obs, state = jax.vmap(env.reset)(jax.random.split(key, n_envs))
        return jax.lax.scan(env_step, (obs, state), jax.random.split(key, 4 * env10.rounds))[1]

    ret, ended = (np.asarray(x) for x in run(jax.random.key(10)))
    episodes = ret[ended]                                              # per-agent returns of finished episodes
    assert episodes.size == 4 * n_envs * 10
    own = evaluate(env10, net_params, key=jax.random.key(11), episodes=64)["return"]
    se = episodes.reshape(-1, 10).mean(1).std() / np.sqrt(4 * n_envs)
    assert abs(episodes.mean() - own) < 4 * se + 0.02
