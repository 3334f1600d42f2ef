import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from consensusgame import ConsensusGame, EnvParams, evaluate, graphs, load_params, make_baseline, save_params
from consensusgame.ippo import (
    PPOConfig,
    action_probs,
    equivariance_error,
    permute_obs,
    random_permutations,
    symmetrized_probs,
    unpermute_actions,
)
from consensusgame.metrics import sample_observations


def test_permutations_are_per_agent():
    perm = np.asarray(random_permutations(jax.random.key(0), 50, 3))
    assert all(sorted(p) == [0, 1, 2] for p in perm.tolist())
    assert len({tuple(p) for p in perm.tolist()}) > 1              # not one global relabelling


def test_observation_and_action_use_the_same_relabelling(env10):
    """An agent that declares the signal it *sees* must send the game its true signal."""
    k = env10.n_options
    obs, state = env10.reset(jax.random.key(1))
    for seed in range(4):
        perm = random_permutations(jax.random.key(seed), env10.num_agents, k)
        seen = jnp.argmax(permute_obs(obs, perm, k)[:, :k], -1)
        np.testing.assert_array_equal(np.asarray(unpermute_actions(seen, perm)), np.asarray(state.signals))
        # the non-label features are untouched
        np.testing.assert_array_equal(np.asarray(permute_obs(obs, perm, k)[:, 3 * k:]), np.asarray(obs[:, 3 * k:]))


def test_symmetrized_policy_is_equivariant(trained_op, env10):
    """The K!-average is equivariant by construction (for any network): a check of the code only."""
    params, _ = trained_op
    obs = sample_observations(env10, jax.random.key(2), episodes=2)
    k = env10.n_options
    base = np.asarray(symmetrized_probs(params, obs))
    for p in itertools.permutations(range(k)):
        perm = jnp.broadcast_to(jnp.asarray(p), (obs.shape[0], k))
        moved = np.asarray(symmetrized_probs(params, permute_obs(obs, perm, k)))
        np.testing.assert_allclose(moved[:, list(p)], base, atol=1e-6)


# thresholds fixed from the game, not from a run: a policy that follows a label convention has
# equivariance error near 1/2 for K=2 (TV between a deterministic choice and its mirror), an
# equivariant one 0; a population mixed 50/50 with its relabelled copy loses about c·R/2 = 2.25 return
# at c=0.9 when it follows a convention, nothing when it does not.
EQ_SMALL, EQ_LARGE = 0.15, 0.3
GAP_SMALL, GAP_LARGE = 0.5, 1.0


def test_raw_trained_network_equivariance(trained_grid, env10):
    """Other-play trains a (nearly) equivariant *raw* network; self-play at high conformity does not."""
    obs = sample_observations(env10, jax.random.key(2), episodes=4)
    op = equivariance_error(trained_grid[(0, 0.9, True)][0], obs, jax.random.key(3))
    sp = equivariance_error(trained_grid[(0, 0.9, False)][0], obs, jax.random.key(3))
    assert op < EQ_SMALL, op
    assert sp > EQ_LARGE, sp


def test_crossplay_gap_with_relabelled_population(trained_grid, env10):
    """Mixing a population with its label-swapped copy costs self-play a convention's worth of
    return and other-play about nothing (the cross-play gap, deterministic: no lucky seed pairs)."""
    from consensusgame.ippo import mixed_policy, relabel_params

    game = EnvParams(jnp.float32(0.9), jnp.float32(0.65))
    gaps = {}
    for op in (True, False):
        params = trained_grid[(0, 0.9, op)][0]
        key = jax.random.key(5)
        within = evaluate(env10, params, key=key, episodes=128, params=game)["return"]
        cross = evaluate(env10, mixed_policy(params, relabel_params(params, [1, 0]), env10), key=key,
                         episodes=128, params=game)["return"]
        gaps[op] = within - cross
    assert gaps[False] > GAP_LARGE, gaps
    assert abs(gaps[True]) < GAP_SMALL, gaps


def test_relabel_params_matches_brute_force(trained_grid, env10):
    from consensusgame.ippo import ActorCritic, relabel_params

    params = trained_grid[(0, 0.9, False)][0]
    obs = sample_observations(env10, jax.random.key(7), episodes=1)
    env3 = 3
    net3 = ActorCritic(env3, 8).init(jax.random.key(1), jnp.zeros((1, 3 * env3 + 2)))
    obs3 = jax.random.uniform(jax.random.key(2), (20, 3 * env3 + 2))
    for p, o, perm in ((params, obs, (1, 0)), (net3, obs3, (2, 0, 1))):
        k = len(perm)
        moved = permute_obs(o, jnp.broadcast_to(jnp.asarray(perm), (o.shape[0], k)), k)
        want = np.asarray(action_probs(p, moved))[:, list(perm)]       # π(σ(a) | σ·o)
        np.testing.assert_allclose(np.asarray(action_probs(relabel_params(p, perm), o)), want, atol=1e-6)
    with pytest.raises(ValueError, match="perm"):
        relabel_params(params, [0, 0])


def test_plain_network_is_not_equivariant_by_construction(env10):
    """The check above can fail: an untrained, un-symmetrised network breaks equivariance."""
    from consensusgame.ippo import ActorCritic

    net = ActorCritic(2, 16)
    params = net.init(jax.random.key(4), jnp.zeros((1, env10.obs_dim)))
    params = jax.tree.map(lambda x: x * 30.0, params)              # large weights: far from uniform
    obs = sample_observations(env10, jax.random.key(5), episodes=2)
    assert equivariance_error(params, obs, jax.random.key(6)) > 1e-3
    np.testing.assert_allclose(np.asarray(action_probs(params, obs)).sum(-1), 1.0, atol=1e-5)


def test_smoke_trained_policy_beats_random(trained_op, env10):
    params, curve = trained_op
    assert np.all(np.isfinite(curve)) and curve.shape == (150,)
    key = jax.random.key(11)
    learned = evaluate(env10, params, key=key, episodes=256)
    rand = evaluate(env10, make_baseline("random", env10), key=key, episodes=256)
    assert learned["accuracy"] > rand["accuracy"] + 0.05
    assert learned["return"] > rand["return"]


def test_checkpoint_roundtrip(trained_op, tmp_path):
    params, _ = trained_op
    path = save_params(tmp_path / "p.msgpack", params, meta={"updates": 150})
    back, meta = load_params(path)
    assert meta == {"updates": 150}
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(back)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    (tmp_path / "bad.msgpack").write_bytes(b"\x93\x01\x02\x03")
    with pytest.raises(ValueError, match="checkpoint"):
        load_params(tmp_path / "bad.msgpack")


@pytest.mark.parametrize("kw", [{"num_updates": 0}, {"num_envs": -1}, {"lr": 0.0}, {"hidden": 1.5},
                                {"gamma": -1.0}, {"gamma": 1.5}, {"clip": -0.2}, {"clip": 0.0}, {"lr": "0.1"},
                                {"gae_lambda": float("nan")}, {"ent_coef": -0.1}, {"max_grad_norm": 0},
                                {"epochs": True}, {"vf_coef": "1"}])
def test_bad_ppo_config(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        PPOConfig(**kw)


def test_minibatches_larger_than_batch_refused(env10):
    from consensusgame.ippo import make_train

    batch = 1 * env10.rounds * env10.num_agents                       # 50 samples
    make_train(env10, PPOConfig(num_envs=1, minibatches=batch))     # one sample per minibatch: fine
    with pytest.raises(ValueError, match="minibatches"):
        make_train(env10, PPOConfig(num_envs=1, minibatches=batch + 1))


def test_nan_parameters_are_detected(trained_op, env10):
    from consensusgame import make_policy, mixed_policy

    params, _ = trained_op
    bad = jax.tree.map(lambda x: x.at[(0,) * x.ndim].set(jnp.nan), params)
    with pytest.raises(FloatingPointError, match="non-finite"):
        make_policy(bad, env10)
    with pytest.raises(FloatingPointError, match="non-finite"):
        evaluate(env10, bad, key=jax.random.key(0), episodes=2)
    with pytest.raises(FloatingPointError, match="non-finite"):
        mixed_policy(params, bad, env10)


def test_checkpoint_resume_is_exact(env10, tmp_path):
    """Checkpoints every 3 updates hold the optimiser state: stopping after 3 and resuming to 6 gives
    bit-identical parameters to 6 updates in one go; a reset optimiser would not."""
    from consensusgame import train_ippo
    from consensusgame.ippo import load_checkpoint, make_train

    kw = dict(num_envs=2, epochs=1, minibatches=2, hidden=8, lr=0.01)
    key = jax.random.key(4)
    a, ca = train_ippo(env10, key=key, checkpoint=tmp_path / "a.msgpack", checkpoint_every=3, num_updates=3, **kw)
    b, cb = train_ippo(env10, key=key, checkpoint=tmp_path / "a.msgpack", checkpoint_every=3, resume=True,
                       num_updates=6, **kw)
    c, cc = train_ippo(env10, key=key, checkpoint=tmp_path / "c.msgpack", checkpoint_every=3, num_updates=6, **kw)
    np.testing.assert_array_equal(cb, cc)
    np.testing.assert_array_equal(cb[:3], ca)
    for x, y in zip(jax.tree.leaves(b), jax.tree.leaves(c)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    p0, o0 = make_train(env10, PPOConfig(num_updates=6, **kw)).init(key)
    state, meta = load_checkpoint(tmp_path / "c.msgpack", p0, o0)
    assert meta["update"] == 6 and len(meta["curve"]) == 6
    assert int(jax.tree.leaves(state["opt_state"])[0]) == 6 * kw["epochs"] * kw["minibatches"]   # adam's count
    # resuming with another configuration is refused
    with pytest.raises(ValueError, match="config"):
        train_ippo(env10, key=key, checkpoint=tmp_path / "a.msgpack", checkpoint_every=3, resume=True,
                   num_updates=6, **{**kw, "lr": 0.02})
    # a plain parameter file is not a training checkpoint
    save_params(tmp_path / "p.msgpack", p0)
    with pytest.raises(ValueError, match="optimiser"):
        load_checkpoint(tmp_path / "p.msgpack", p0, o0)


def test_declaration_deviation(trained_grid, env10):
    from consensusgame.ippo import relabel_params
    from consensusgame.metrics import declaration_deviation

    hi = trained_grid[(0, 0.9, False)][0]
    lo = relabel_params(hi, [1, 0])                                   # the mirrored convention: must deviate
    same = declaration_deviation(env10, hi, hi, hi, key=jax.random.key(0), episodes=8)
    assert same == {"fit_in": 0.0, "deviation": 0.0, "noise_fit_in": 0.0, "noise_deviation": 0.0}
    d = declaration_deviation(env10, hi, lo, hi, key=jax.random.key(0), episodes=8)
    assert d["fit_in"] == d["noise_fit_in"] and d["deviation"] == d["noise_deviation"]
    assert 0.0 <= d["fit_in"] <= d["deviation"] <= 1.0 and d["deviation"] > 0.0
    with pytest.raises(ValueError, match="episodes"):
        declaration_deviation(env10, hi, lo, hi, episodes=0)


def test_new_game_of_the_same_size_does_not_recompile_training():
    """Two games on different graphs of one size share one compiled training (the graph and the
    conformity are traced parameters), and the shared program really trains on the second graph:
    its curve equals a training jitted for that game alone."""
    from consensusgame.ippo import _compiled, make_train, train_ippo

    cfg = dict(num_updates=3, num_envs=2, epochs=1, minibatches=1, hidden=8)
    ea = ConsensusGame(graphs.barabasi_albert(10, 3, seed=11), conformity=0.8)
    eb = ConsensusGame(graphs.barabasi_albert(10, 3, seed=12), conformity=0.8)
    _, curve_a = train_ippo(ea, key=jax.random.key(1), **cfg)
    fn = _compiled(ea, PPOConfig(**cfg))
    n_compiled = fn._cache_size()
    _, curve_b = train_ippo(eb, key=jax.random.key(1), **cfg)
    assert _compiled(eb, PPOConfig(**cfg)) is fn and fn._cache_size() == n_compiled
    # same key and conformity: only the graph differs, and the shared program used B's
    assert not np.allclose(curve_b, curve_a)
    _, ref = jax.jit(make_train(eb, PPOConfig(**cfg)))(jax.random.key(1), eb.default_params, jnp.bool_(True))
    np.testing.assert_allclose(curve_b, np.asarray(ref), rtol=1e-5, atol=1e-6)
