import warnings

import numpy as np
import pytest
from cmcboot import (
    ModelBootstrap,
    confidence_interval,
    count_transitions,
    estimate_kernel,
    riverswim,
    riverswim_behaviours,
    simulate_datasets,
)
from cmcboot.bootstrap import confidence_intervals, estimate_behaviour, simulate_counts, simulate_paths
from cmcboot.mdp import policy_evaluation
from scipy import stats
from sklearn.base import clone

PI = np.full((6, 2), 0.5)


# counts and estimators -------------------------------------------------------------------------------

def test_counts_match_a_plain_loop(river_chain):
    _, _, traj = river_chain
    data = count_transitions(traj, 6, 2)
    ref = np.zeros((6, 2, 6), int)
    for s, a, s2 in traj:
        ref[s, a, s2] += 1
    np.testing.assert_array_equal(data["counts"], ref)
    assert data["lengths"].tolist() == [len(traj)] and data["starts"].tolist() == [traj[0, 0]]


def test_kernel_and_behaviour_estimates():
    counts = np.zeros((3, 2, 3), int)
    counts[0, 0] = [2, 2, 0]
    counts[0, 1] = [0, 0, 4]
    counts[1, 0] = [1, 0, 0]
    P, empty = estimate_kernel(counts)
    np.testing.assert_allclose(P[0, 0], [0.5, 0.5, 0])
    np.testing.assert_allclose(P[1, 1], [1 / 3] * 3)        # unvisited: uniform convention
    assert empty.sum() == 3 and empty[1, 1] and not empty[0, 0]
    P_self, _ = estimate_kernel(counts, unvisited="self")
    np.testing.assert_allclose(P_self[2, 1], [0, 0, 1])
    np.testing.assert_allclose(estimate_behaviour(counts)[[0, 1, 2]], [[0.5, 0.5], [1, 0], [0.5, 0.5]])


# the simulator keeps the structure of the data ---------------------------------------------------------

def test_chain_replicates_are_paths_from_the_observed_start(river_chain):
    _, _, traj = river_chain
    mb = ModelBootstrap(n_boot=20, seed=1).fit(traj)
    paths = simulate_paths(mb.P_hat_[None], mb.behaviour_[None], np.array([[traj[0, 0]]]), np.array([len(traj)]),
                           20, np.random.default_rng(2))[0, :, 0]          # (B, T, 3)
    assert paths.shape == (20, len(traj), 3)
    assert np.all(paths[:, 0, 0] == traj[0, 0])
    assert np.all(paths[:, 1:, 0] == paths[:, :-1, 2])                     # a chain, not i.i.d. transitions
    s, a, s2 = paths.reshape(-1, 3).T
    assert np.all(mb.P_hat_[s, a, s2] > 0) and np.all(mb.behaviour_[s, a] > 0)


def test_episodic_replicates_keep_lengths_and_draw_observed_starts(rng):
    from cmcboot.envs import riverswim

    P, _ = riverswim(6)
    from cmcboot import riverswim_behaviours

    data = simulate_datasets(P, riverswim_behaviours(6)["history"], n_datasets=1, n_episodes=30, length=8,
                             initial=np.ones(6) / 6, rng=rng)[0]
    episodes = [data[k][: 4 + k % 5] for k in range(30)]                   # unequal lengths
    counts = count_transitions(episodes, 6, 2)
    P_hat, _ = estimate_kernel(counts["counts"])
    paths = simulate_paths(P_hat[None], estimate_behaviour(counts["counts"])[None], counts["starts"][None],
                           counts["lengths"], 15, rng, resample_starts=True)[0]   # (B, K, T, 3)
    for k, n in enumerate(counts["lengths"]):
        assert np.all(paths[:, k, :n] >= 0) and np.all(paths[:, k, n:] == -1)
        assert np.all(paths[:, k, 1:n, 0] == paths[:, k, : n - 1, 2])
    assert set(paths[:, :, 0, 0].ravel()) <= set(counts["starts"].tolist())


def test_counts_equal_the_counted_paths(rng):
    P = rng.dirichlet(np.ones(4), size=(2, 4, 3))
    pi = rng.dirichlet(np.ones(3), size=(2, 4))
    starts, lengths = np.array([[0, 1, 3], [2, 2, 0]]), np.array([5, 9, 2])
    c = simulate_counts(P, pi, starts, lengths, 7, np.random.default_rng(5), resample_starts=True, steps_per_draw=1)
    p = simulate_paths(P, pi, starts, lengths, 7, np.random.default_rng(5), resample_starts=True)
    ref = np.zeros_like(c)
    for d in range(2):
        for b in range(7):
            rows = p[d, b].reshape(-1, 3)
            rows = rows[rows[:, 0] >= 0]
            np.add.at(ref[d, b], tuple(rows.T), 1)
    np.testing.assert_array_equal(c, ref)


def test_simulated_transitions_follow_the_joint_law(rng):
    P = rng.dirichlet(np.ones(3), size=(1, 3, 2))
    pi = rng.dirichlet(np.ones(2), size=(1, 3))
    c = simulate_counts(P, pi, np.array([[0]]), np.array([4000]), 50, rng).sum(1)[0]   # (S, A, S)
    n_s = c.sum((1, 2))
    freq = c / n_s[:, None, None]
    expected = pi[0][..., None] * P[0]
    se = np.sqrt(expected * (1 - expected) / n_s[:, None, None])
    assert np.all(np.abs(freq - expected) < 5 * se + 1e-9)


# intervals --------------------------------------------------------------------------------------------

def test_interval_formulas_against_numpy_and_scipy(rng):
    reps = rng.normal(3.0, 2.0, size=(4000, 5))
    point = np.full(5, 3.1)
    lo, hi = confidence_interval(point, reps, 0.9, "percentile")
    np.testing.assert_allclose(lo, np.quantile(reps, 0.05, axis=0))
    blo, bhi = confidence_interval(point, reps, 0.9, "basic")
    np.testing.assert_allclose([blo, bhi], [2 * point - hi, 2 * point - lo])
    nlo, nhi = confidence_interval(point, reps, 0.9, "normal")
    np.testing.assert_allclose(nhi - point, stats.norm.ppf(0.95) * reps.std(0, ddof=1))
    many = confidence_intervals(point, reps, [0.5, 0.9], axis=0)
    np.testing.assert_allclose(many[("basic", 0.9)][0], blo)
    np.testing.assert_allclose(many[("normal", 0.9)][1], nhi)


@pytest.mark.parametrize("target", ["V", "Q", "Qstar"])
def test_intervals_are_ordered_and_contain_the_replicate_median(river_chain, target):
    P, R, traj = river_chain
    mb = ModelBootstrap(n_boot=100, seed=0).fit(traj)
    for method in ("percentile", "basic", "normal"):
        lo, hi = mb.interval(target, policy=PI, rewards=R, gamma=0.9, level=0.9, method=method)
        assert lo.shape == ((6,) if target == "V" else (6, 2)) and np.all(lo <= hi) and np.any(lo < hi)
    lo50, hi50 = mb.interval(target, policy=PI, rewards=R, gamma=0.9, level=0.5)
    med = np.median(mb.replicates(target, PI, R, 0.9)[1], axis=0)
    assert np.all(lo50 <= med) and np.all(med <= hi50) and np.all(lo <= lo50) and np.all(hi50 <= hi)


def test_percentile_coverage_in_a_binomial_band(small_mdp, rng):
    """Coverage of the 90% percentile CI for V^π(0) over M data sets lies in a binomial band around 0.9."""
    from cmcboot.data import StationaryBehaviour

    P, R = small_mdp
    pi = np.array([[0.5, 0.5], [0.2, 0.8], [0.7, 0.3]])
    truth = policy_evaluation(P, R, pi, 0.8)[0][0]
    M = 80
    data = simulate_datasets(P, StationaryBehaviour(np.full((3, 2), 0.5)), n_datasets=M, n_episodes=1, length=1500,
                             initial=np.eye(3)[0], rng=rng)
    hits = 0
    for d in range(M):
        lo, hi = ModelBootstrap(n_boot=200, seed=d).fit(data[d]).interval("V", policy=pi, rewards=R, gamma=0.8,
                                                                           level=0.9)
        hits += lo[0] <= truth <= hi[0]
    lower, upper = stats.binom.ppf(0.0005, M, 0.86), stats.binom.ppf(0.9995, M, 0.94)
    assert lower <= hits <= upper, f"{hits}/{M} covered"


def test_deterministic_under_a_seed(river_chain):
    _, R, traj = river_chain
    a = ModelBootstrap(n_boot=50, seed=7).fit(traj).interval("Q", policy=PI, rewards=R)
    b = ModelBootstrap(n_boot=50, seed=7).fit(traj).interval("Q", policy=PI, rewards=R)
    c = ModelBootstrap(n_boot=50, seed=8).fit(traj).interval("Q", policy=PI, rewards=R)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_rewards_from_the_data_and_sklearn_params(river_chain):
    _, R, traj = river_chain
    with_r = np.column_stack([traj, R[traj[:, 0], traj[:, 1]]]).astype(float)
    mb = ModelBootstrap(n_boot=30, seed=0).fit(with_r)
    visited = ~mb.unvisited_
    np.testing.assert_allclose(mb.rewards_[visited], R[visited])
    lo, hi = mb.interval("V", policy=PI)
    lo2, hi2 = ModelBootstrap(n_boot=30, seed=0).fit(traj).interval("V", policy=PI, rewards=mb.rewards_)
    np.testing.assert_allclose(lo, lo2)
    assert clone(mb).get_params() == {"n_actions": None, "n_boot": 30, "n_states": None, "regime": "chain",
                                      "seed": 0, "unvisited": "uniform"}


def test_unvisited_pairs_are_counted_and_warned():
    traj = np.array([[0, 0, 1], [1, 0, 0], [0, 0, 1], [1, 0, 2], [2, 0, 0]] * 20)[:-1]
    traj = traj[np.r_[True, traj[1:, 0] == traj[:-1, 2]]]
    mb = ModelBootstrap(n_boot=20, seed=0, n_actions=2).fit(traj)
    assert mb.n_unvisited_ == 3 and mb.unvisited_[:, 1].all()
    with pytest.warns(UserWarning, match="unvisited"):
        _, _, info = mb.interval("V", policy=np.tile([1.0, 0.0], (3, 1)), rewards=np.ones((3, 2)), log=True)
    assert info["n_unvisited"] == 3


def test_qstar_ties_are_flagged():
    traj = np.array([[0, 0, 1], [1, 1, 0]] * 100)
    mb = ModelBootstrap(n_boot=30, seed=0).fit(traj)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, _, info = mb.interval("Qstar", rewards=np.zeros((2, 2)), log=True)
    assert info["ties"].all()


# bad input ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, err, match", [
    ([], ValueError, "non-empty"),
    (np.zeros((0, 3), int), ValueError, "non-empty"),
    (np.array([[0, 0, 1], [1, 0, 0]]) + 0.5, TypeError, "integer"),
    (np.array([[0.0, 0.0, 1.0]]), TypeError, "integer"),
    (np.array([[0, 0, 1], [1, 0, 7]]), ValueError, "states must be in"),
    (np.array([[0, -1, 1]]), ValueError, "non-negative"),
    (np.array([[0, 0, 1], [0, 0, 1]]), ValueError, "not a path"),
    (np.array([[0, 0], [1, 0]]), ValueError, "3 or 4"),
])
def test_bad_trajectories(bad, err, match):
    with pytest.raises(err, match=match):
        ModelBootstrap(n_boot=10, n_states=3).fit(bad)


def test_actions_out_of_range():
    with pytest.raises(ValueError, match="actions must be in"):
        ModelBootstrap(n_boot=10, n_actions=1).fit(np.array([[0, 1, 0]]))


def test_bad_interval_arguments(river_chain):
    _, R, traj = river_chain
    mb = ModelBootstrap(n_boot=20, seed=0).fit(traj)
    with pytest.raises(ValueError, match="gamma"):
        mb.interval("V", policy=PI, rewards=R, gamma=1.0)
    with pytest.raises(ValueError, match="policy"):
        mb.interval("V", policy=np.full((6, 2), 0.6), rewards=R)
    with pytest.raises(ValueError, match="rewards is required"):
        mb.interval("V", policy=PI)
    with pytest.raises(ValueError, match="level"):
        mb.interval("V", policy=PI, rewards=R, level=95)
    with pytest.raises(ValueError, match="method"):
        mb.interval("V", policy=PI, rewards=R, method="bca")
    with pytest.raises(ValueError, match="target"):
        mb.interval("W", policy=PI, rewards=R)
    with pytest.raises(ValueError, match="regime"):
        ModelBootstrap(regime="iid").fit(traj)
    with pytest.raises(ValueError, match="n_boot"):
        ModelBootstrap(n_boot=1).fit(traj)
    with pytest.raises(RuntimeError, match="not fitted"):
        ModelBootstrap().interval("V", policy=PI, rewards=R)


def test_episodic_regime_regenerates_k_episodes(rng):
    from cmcboot import riverswim, riverswim_behaviours

    P, R = riverswim(6)
    data = simulate_datasets(P, riverswim_behaviours(6)["history"], n_datasets=1, n_episodes=25, length=12,
                             initial=np.ones(6) / 6, rng=rng)[0]
    mb = ModelBootstrap(regime="episodic", n_boot=40, seed=0, n_states=6, n_actions=2).fit(list(data))
    assert mb.kernels_.shape == (40, 6, 2, 6)
    np.testing.assert_allclose(mb.kernels_.sum(-1), 1.0)
    lo, hi = mb.interval("Q", policy=PI, rewards=R, level=0.9)
    assert np.all(lo <= hi)


# sizes, unreached states, the 0.2 validation ------------------------------------------------------------------

def test_inferred_sizes_warn_and_unreached_states_are_counted(rng):
    """A short chain on a 100-state river: with n_states given, the states it never reached stay in the
    model and are counted; inferred, the model silently shrinks (and says so)."""
    P, R = riverswim(100)
    traj = simulate_datasets(P, riverswim_behaviours(100, 0.7)["mostly_right"], n_datasets=1, n_episodes=1,
                             length=3000, initial=np.eye(100)[0], rng=rng)[0, 0]
    seen = np.unique(traj[:, [0, 2]])
    with pytest.warns(UserWarning, match="n_states inferred"):
        small = ModelBootstrap(n_boot=10, seed=0, n_actions=2).fit(traj)
    assert small.n_states_ == seen.max() + 1 < 100
    with pytest.warns(UserWarning, match="never appear in the data"):
        mb = ModelBootstrap(n_boot=10, seed=0, n_states=100, n_actions=2).fit(traj)
    assert mb.n_states_ == 100 and mb.n_unreached_ == 100 - seen.size
    np.testing.assert_array_equal(mb.unreached_states_, np.setdiff1d(np.arange(100), seen))
    assert mb.support_.size <= seen.size and mb.kernels_.shape == (10, 100, 2, 100)
    with pytest.warns(UserWarning, match="unvisited"):
        lo, hi, info = mb.interval("V", policy=np.full((100, 2), 0.5), rewards=R, log=True)
    np.testing.assert_array_equal(info["unreached_states"], mb.unreached_states_)
    assert info["visits"].shape == (100, 2) and info["visits"].sum() == len(traj)
    # the reduced solve agrees with the full one on the materialised kernels
    V_full = policy_evaluation(mb.kernels_, R, np.full((100, 2), 0.5), 0.9)[0]
    np.testing.assert_allclose(mb.replicates("V", np.full((100, 2), 0.5), R, 0.9)[1], V_full, rtol=1e-9)


@pytest.mark.parametrize("kwargs, err, match", [
    ({"n_states": "6"}, TypeError, "n_states"), ({"n_states": 6.5}, TypeError, "n_states"),
    ({"n_states": True}, TypeError, "n_states"), ({"n_states": 0}, ValueError, "n_states"),
    ({"n_actions": 2.0}, TypeError, "n_actions"), ({"seed": "a"}, TypeError, "seed"),
    ({"seed": -1}, ValueError, "seed"), ({"seed": 1.5}, TypeError, "seed"),
    ({"n_boot": "100"}, ValueError, "n_boot"), ({"unvisited": "zero"}, ValueError, "unvisited"),
    ({"regime": "iid"}, ValueError, "regime"),
])
def test_bad_parameters_fail_at_construction_naming_the_argument(kwargs, err, match):
    with pytest.raises(err, match=match):
        ModelBootstrap(**kwargs)


def test_bad_parameters_set_later_fail_at_fit(river_chain):
    _, _, traj = river_chain
    mb = ModelBootstrap(n_boot=10, n_states=6, n_actions=2).set_params(n_states="6")
    with pytest.raises(TypeError, match="n_states"):
        mb.fit(traj)


def test_episodic_regime_needs_two_episodes(river_chain):
    _, _, traj = river_chain
    with pytest.raises(ValueError, match="regime='episodic' needs at least 2 episodes"):
        ModelBootstrap(regime="episodic", n_boot=10, n_states=6, n_actions=2).fit(traj)


def test_seed_accepts_a_generator(river_chain):
    _, R, traj = river_chain
    a = ModelBootstrap(n_boot=30, seed=np.random.default_rng(3), n_states=6, n_actions=2).fit(traj)
    b = ModelBootstrap(n_boot=30, seed=3, n_states=6, n_actions=2).fit(traj)
    np.testing.assert_array_equal(a.boot_counts_, b.boot_counts_)


@pytest.mark.parametrize("initial, match", [(np.ones(5) / 5, "initial"), (np.full(6, 0.2), "initial"),
                                            (np.array([1.5, -0.5, 0, 0, 0, 0]), "initial"),
                                            (np.array(["a"] * 6), "initial")])
def test_simulate_datasets_names_a_bad_initial(initial, match):
    from cmcboot import riverswim, riverswim_behaviours

    P, _ = riverswim(6)
    with pytest.raises(ValueError, match=match):
        simulate_datasets(P, riverswim_behaviours(6)["history"], n_datasets=1, n_episodes=1, length=5,
                          initial=initial, rng=np.random.default_rng(0))


def test_simulate_datasets_names_bad_sizes_and_rng():
    from cmcboot import riverswim, riverswim_behaviours

    P, _ = riverswim(6)
    beh = riverswim_behaviours(6)["history"]
    with pytest.raises(TypeError, match="n_datasets"):
        simulate_datasets(P, beh, n_datasets=2.0, n_episodes=1, length=5, initial=np.eye(6)[0],
                          rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        simulate_datasets(P, beh, n_datasets=1, n_episodes=1, length=5, initial=np.eye(6)[0], rng=0)
