import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from consensusgame import evaluate, load_params, make_baseline, save_params
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


def test_other_play_policy_is_equivariant(trained_op, env10):
    params, _ = trained_op
    obs = sample_observations(env10, jax.random.key(2), episodes=2)
    k = env10.n_options
    base = np.asarray(symmetrized_probs(params, obs))
    for p in itertools.permutations(range(k)):
        perm = jnp.broadcast_to(jnp.asarray(p), (obs.shape[0], k))
        moved = np.asarray(symmetrized_probs(params, permute_obs(obs, perm, k)))
        np.testing.assert_allclose(moved[:, list(p)], base, atol=1e-6)
    assert equivariance_error(params, obs, jax.random.key(3), symmetrize=True) < 1e-6


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


@pytest.mark.parametrize("kw", [{"num_updates": 0}, {"num_envs": -1}, {"lr": 0.0}, {"hidden": 1.5}])
def test_bad_ppo_config(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        PPOConfig(**kw)
