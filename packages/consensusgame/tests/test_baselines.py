import jax
import jax.numpy as jnp
import numpy as np
import pytest
from consensusgame import ConsensusGame, evaluate, graphs, make_baseline
from consensusgame.policy import stateless


def _path_env():
    # 0 - 1 - 2 - 3, K = 2
    return ConsensusGame(graphs.from_edge_list([[0, 1], [1, 2], [2, 3]], 4), n_options=2, conformity=0.5, rounds=3)


def _play(env, name, signals, rounds, key=0):
    pol = make_baseline(name, env)
    obs, state = env.reset(jax.random.key(key))
    state = state.replace(signals=jnp.asarray(signals, jnp.int32))
    carry = pol.init(pol.args, jax.random.key(1), obs, state)
    out = []
    for t in range(rounds):
        a, carry = pol.act(pol.args, jax.random.key(10 + t), obs, state, carry)
        out.append(np.asarray(a).tolist())
        obs, state, *_ = env.step(jax.random.key(20 + t), state, a)
    return out


def test_majority_by_hand():
    # round 1: signals. round 2 (self + neighbours, ties keep own):
    # 0: {0,1} tie -> 0; 1: {0,1,1} -> 1; 2: {1,1,0} -> 1; 3: {1,0} tie -> 0
    assert _play(_path_env(), "majority", [0, 1, 1, 0], 2) == [[0, 1, 1, 0], [0, 1, 1, 0]]
    assert _play(_path_env(), "majority", [0, 0, 1, 1], 2) == [[0, 0, 1, 1], [0, 0, 1, 1]]
    assert _play(_path_env(), "majority", [1, 0, 1, 0], 2)[1] == [1, 1, 0, 0]


def test_signal_then_majority_by_hand():
    # round 2: plurality of neighbours only, ties to own signal
    # signals 1,0,1,0: 0 sees {0} -> 0; 1 sees {1,1} -> 1; 2 sees {0,0} -> 0; 3 sees {1} -> 1
    assert _play(_path_env(), "signal_then_majority", [1, 0, 1, 0], 2)[1] == [0, 1, 0, 1]


def test_degroot_by_hand():
    # path 0-1-2, signals 0,1,1. round 2: b0 = (e0+e1)/2 tie -> own 0; b1 = (e1+e0+e1)/3 -> 1; b2 -> 1
    # round 3: b0 = ((.5,.5) + (1/3, 2/3)) / 2 = (5/12, 7/12) -> 1
    env = ConsensusGame(graphs.from_edge_list([[0, 1], [1, 2]], 3), n_options=2, rounds=3)
    assert _play(env, "degroot", [0, 1, 1], 3) == [[0, 1, 1], [0, 1, 1], [1, 1, 1]]


def test_voter_copies_a_neighbour():
    # star: centre 0 with leaves 1..4; leaves can only copy the centre's declaration
    env = ConsensusGame(graphs.from_edge_list([[0, i] for i in range(1, 5)], 5), n_options=3, rounds=2)
    for key in range(3):
        d = _play(env, "voter", [2, 0, 1, 1, 0], 2, key=key)
        assert d[1][1:] == [2, 2, 2, 2] and d[1][0] in (0, 1)


def test_dishonesty_is_measured_against_own_signal(env10):
    """Declaring the *truth* is dishonest whenever the signal was wrong: P = 1 − q ≈ 0.35."""
    truthful = stateless(lambda args, key, obs, state: jnp.full((env10.num_agents,), state.truth), "truth")
    m = evaluate(env10, truthful, key=jax.random.key(0), episodes=200)
    assert m["accuracy"] == 1.0
    assert abs(m["dishonesty_r1"] - 0.35) < 0.05
    honest = evaluate(env10, make_baseline("honest", env10), key=jax.random.key(0), episodes=200)
    assert honest["dishonesty"] == 0.0 and honest["dishonesty_disagree"] == 0.0
    assert abs(honest["accuracy"] - 0.65) < 0.05


def test_random_policy_rates(env10):
    m = evaluate(env10, make_baseline("random", env10), key=jax.random.key(1), episodes=200)
    assert abs(m["accuracy"] - 0.5) < 0.05 and abs(m["dishonesty"] - 0.5) < 0.05


def test_bad_baseline_name(env10):
    with pytest.raises(ValueError, match="baseline"):
        make_baseline("deffuant", env10)
    with pytest.raises(ValueError, match="episodes"):
        evaluate(env10, make_baseline("honest", env10), episodes=0)
