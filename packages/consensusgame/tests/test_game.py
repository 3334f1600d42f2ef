import jax
import jax.numpy as jnp
import numpy as np
import pytest
from consensusgame import ConsensusGame, EnvParams, graphs
from consensusgame.reference import adjacency, round_rewards


def test_shapes_under_jit_and_vmap(env10):
    keys = jax.random.split(jax.random.key(0), 3)
    obs, state = jax.jit(jax.vmap(env10.reset))(keys)
    assert obs.shape == (3, 10, env10.obs_dim) and env10.obs_dim == 3 * 2 + 2
    acts = jnp.zeros((3, 10), jnp.int32)
    obs2, state2, rew, done, info = jax.jit(jax.vmap(env10.step))(keys, state, acts)
    assert obs2.shape == obs.shape and rew.shape == (3, 10) and done.shape == (3, 10)
    assert info["agreement"].shape == (3, 10)
    assert np.all(np.asarray(state2.round) == 1) and not np.any(np.asarray(done))


def test_episode_ends_after_rounds_and_scans(env10):
    def episode(key):
        obs, state = env10.reset(key)

        def body(c, k):
            obs, state = c
            obs, state, r, d, _ = env10.step(k, state, state.signals)
            return (obs, state), d

        return jax.lax.scan(body, (obs, state), jax.random.split(key, env10.rounds))[1]

    dones = np.asarray(jax.jit(episode)(jax.random.key(1)))
    assert dones.shape == (5, 10) and dones[-1].all() and not dones[:-1].any()


def test_rewards_match_numpy_reference(ba10):
    env = ConsensusGame(ba10, n_options=3, conformity=0.3)
    obs, state = env.reset(jax.random.key(2))
    acts = jax.random.randint(jax.random.key(3), (10,), 0, 3)
    _, state2, rew, _, _ = env.step(jax.random.key(4), state, acts)
    ref, counts = round_rewards(adjacency(ba10), np.asarray(acts), int(state.truth), 0.3, 3)
    np.testing.assert_allclose(np.asarray(rew), ref, atol=1e-6)
    np.testing.assert_allclose(np.asarray(state2.counts), counts)
    # the observation's histogram is the normalised neighbour counts
    k = 3
    hist = np.asarray(env.step(jax.random.key(4), state, acts)[0])[:, 2 * k:3 * k]
    np.testing.assert_allclose(hist, counts / counts.sum(1, keepdims=True), atol=1e-6)


@pytest.mark.parametrize("q, expect", [(1.0, 1.0), (0.0, 0.0)])
def test_signal_accuracy_extremes(ba10, q, expect):
    env = ConsensusGame(ba10, signal_accuracy=q)
    _, state = jax.vmap(env.reset)(jax.random.split(jax.random.key(5), 20))
    assert np.mean(np.asarray(state.signals) == np.asarray(state.truth)[:, None]) == expect


def test_signal_accuracy_frequency(ba10):
    env = ConsensusGame(ba10, signal_accuracy=0.65)
    _, state = jax.vmap(env.reset)(jax.random.split(jax.random.key(6), 400))
    hit = np.mean(np.asarray(state.signals) == np.asarray(state.truth)[:, None])
    assert abs(hit - 0.65) < 0.03                                   # 4000 draws: sd ≈ 0.0075


def test_groups_are_redrawn_and_complete():
    env = ConsensusGame(graphs.dynamic_groups(20, 5), conformity=1.0)
    _, state = env.reset(jax.random.key(7))
    assert sorted(np.bincount(np.asarray(state.groups)).tolist()) == [5, 5, 5, 5]
    same = jnp.zeros(20, jnp.int32)                                  # everyone declares option 0
    _, state2, rew, _, info = env.step(jax.random.key(8), state, same)
    np.testing.assert_allclose(np.asarray(info["degree"]), 4.0)
    np.testing.assert_allclose(np.asarray(rew), 1.0)                # c = 1: full agreement pays 1
    assert not np.array_equal(np.asarray(state.groups), np.asarray(state2.groups))


def test_isolated_nodes_are_handled():
    g = graphs.from_edge_list([[0, 1]], n_nodes=3)                  # node 2 has no neighbours
    env = ConsensusGame(g, conformity=0.5)
    obs, state = env.reset(jax.random.key(9))
    obs, state, rew, _, info = env.step(jax.random.key(10), state, jnp.array([0, 0, 0]))
    assert np.all(np.isfinite(np.asarray(obs))) and np.all(np.isfinite(np.asarray(rew)))
    assert float(info["agreement"][2]) == 0.0 and float(info["agreement"][0]) == 1.0


def test_params_are_traceable(env10):
    def reward(c):
        _, s = env10.reset(jax.random.key(0), EnvParams(c, jnp.float32(0.65)))
        return env10.step(jax.random.key(1), s, s.signals, EnvParams(c, jnp.float32(0.65)))[2].mean()

    r = jax.vmap(reward)(jnp.array([0.0, 1.0]))
    assert r.shape == (2,) and float(r[0]) != float(r[1])


@pytest.mark.parametrize("kw, match", [
    ({"n_options": 1}, "n_options"), ({"signal_accuracy": 1.2}, "signal_accuracy"),
    ({"signal_accuracy": -0.1}, "signal_accuracy"), ({"conformity": 1.5}, "conformity"),
    ({"conformity": float("nan")}, "conformity"), ({"rounds": 0}, "rounds"),
    ({"signal_accuracy": np.full(3, 0.6)}, "signal_accuracy"),
])
def test_bad_input(ba10, kw, match):
    with pytest.raises(ValueError, match=match):
        ConsensusGame(ba10, **kw)


def test_bad_types(ba10):
    with pytest.raises(TypeError, match="graph"):
        ConsensusGame("ba10")
    with pytest.raises(TypeError, match="n_options"):
        ConsensusGame(ba10, n_options=2.5)


def test_accepts_networkx_and_edge_arrays(ba10):
    import networkx as nx

    g = nx.karate_club_graph()
    env = ConsensusGame(g)
    assert env.num_agents == 34 and env.graph.n_edges == g.number_of_edges()
    np.testing.assert_array_equal(env.graph.degree(), [d for _, d in g.degree()])
    edges = np.stack([ba10.senders, ba10.receivers], 1)
    for e in (edges, jnp.asarray(edges), edges.tolist()):
        env2 = ConsensusGame(e)
        assert env2.num_agents == 10
        np.testing.assert_array_equal(env2.graph.degree(), ba10.degree())
    with pytest.raises(ValueError, match="shape"):
        ConsensusGame(np.zeros((4, 3), int))


@pytest.mark.parametrize("kw, match", [({"conformity": "0.5"}, "conformity"), ({"conformity": True}, "conformity"),
                                       ({"signal_accuracy": "0.6"}, "signal_accuracy"),
                                       ({"conformity": [0.5, "a"]}, "conformity")])
def test_parameters_must_be_numbers(ba10, kw, match):
    with pytest.raises(TypeError, match=match):
        ConsensusGame(ba10, **kw)


def test_invalid_actions_refused_eagerly_and_flagged_under_jit(env10):
    obs, state = env10.reset(jax.random.key(0))
    for bad in (jnp.full(10, 2), jnp.full(10, -1), jnp.zeros(9, jnp.int32), np.full(10, 0.5)):
        with pytest.raises(ValueError, match="actions"):
            env10.step(jax.random.key(1), state, bad)
    acts = jnp.zeros(10, jnp.int32).at[3].set(2).at[7].set(-1)
    _, _, rew, _, info = jax.jit(env10.step)(jax.random.key(1), state, acts)
    flagged = np.asarray(info["invalid_action"])
    assert flagged.tolist() == [i in (3, 7) for i in range(10)]
    r = np.asarray(rew)
    assert np.all(np.isnan(r[flagged])) and np.all(np.isfinite(r[~flagged]))


def test_graph_as_traced_params_matches_own_graph(ba10):
    """Another graph passed as parameters (padded to a larger capacity) plays exactly like a game
    built on that graph, under one jitted step that never sees either graph as a constant."""
    other = graphs.barabasi_albert(10, 2, seed=5)                    # fewer edges: padded
    big = ConsensusGame(ba10, conformity=0.5, edge_capacity=ba10.senders.shape[0] + 6)
    own = ConsensusGame(other, conformity=0.5)
    p = big.make_params(graph=other)
    assert p.senders.shape == (big.edge_capacity,) and int(p.receivers.max()) == 10   # padding: receiver N

    @jax.jit
    def play(params, key):
        obs, s = big.reset(key, params)
        obs2, s2, r, _, info = big.step(jax.random.fold_in(key, 1), s, s.signals, params)
        return obs, obs2, r, info["degree"]

    for seed in range(3):
        key = jax.random.key(seed)
        obs, s = own.reset(key)
        obs2, _, r, _, info = own.step(jax.random.fold_in(key, 1), s, s.signals)
        for a, b in zip(play(p, key), (obs, obs2, r, info["degree"])):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-6)
    # the same compiled step with the game's own graph gives the other answers
    assert not np.allclose(np.asarray(play(big.default_params, jax.random.key(0))[3]), np.asarray(info["degree"]))
    assert play._cache_size() == 1


def test_make_params_refuses_other_structures(ba10):
    env = ConsensusGame(ba10)
    with pytest.raises(ValueError, match="10 nodes"):
        env.make_params(graph=graphs.barabasi_albert(12, 3, seed=0))
    with pytest.raises(ValueError, match="edge_capacity"):
        env.make_params(graph=graphs.barabasi_albert(10, 5, seed=0))
    with pytest.raises(ValueError, match="kind"):
        env.make_params(graph=graphs.dynamic_groups(10, 5))
    with pytest.raises(ValueError, match="edge_capacity"):
        ConsensusGame(ba10, edge_capacity=4)
    with pytest.raises(ValueError, match="conformity"):
        env.make_params(conformity=2.0)
    assert ConsensusGame(ba10, conformity=0.1).structure == ConsensusGame(graphs.barabasi_albert(10, 3, seed=9)).structure
