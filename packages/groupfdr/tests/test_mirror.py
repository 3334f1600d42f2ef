import numpy as np
import pytest
from groupfdr import BlockGaussianMirror, mirror_threshold, simulate_var_groups
from groupfdr.baselines import coordinate_gm
from groupfdr.mirror import as_groups, mirror_matrix, ols_statistics, ols_statistics_brute
from scipy import stats


@pytest.mark.parametrize("norm", ["euclidean", "whitened"])
def test_fast_path_equals_brute_force_refits(small, norm):
    X, y, _, _, idx, Z = small
    fast, Cf = ols_statistics(X, y, idx, Z, norm=norm)
    brute, Cb = ols_statistics_brute(X, y, idx, Z, norm=norm)
    np.testing.assert_allclose(fast, brute, rtol=1e-6, atol=1e-12)
    for a, b in zip(Cf, Cb):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-10)


def test_residualised_copies_are_uncorrelated(small):
    X, y, _, _, idx, Z = small
    Xc = X - X.mean(0)
    _, Cs = ols_statistics(X, y, idx, Z)
    for g, z, C in zip(idx, Z, Cs):
        rest = np.setdiff1d(np.arange(X.shape[1]), g)
        Q, _ = np.linalg.qr(np.column_stack([np.ones(len(y)), Xc[:, rest]]))  # independent residual-maker
        A, B = Xc[:, g] - Q @ (Q.T @ Xc[:, g]), z - Q @ (Q.T @ z)
        cross = (A + B @ C).T @ (A - B @ C)
        assert np.max(np.abs(cross)) <= 1e-10 * np.sum(A * A)


def test_mirror_matrix_solves_both_conditions(rng):
    A, B = rng.standard_normal((50, 4)), rng.standard_normal((50, 4))
    C = mirror_matrix(A, B)
    np.testing.assert_allclose(C.T @ B.T @ B @ C, A.T @ A, atol=1e-9)
    K = C.T @ B.T @ A
    np.testing.assert_allclose(K, K.T, atol=1e-9)


def test_block_size_one_equals_independent_gaussian_mirror(small):
    X, y, _, _, _, _ = small
    z = np.random.default_rng(5).standard_normal(X.shape)
    single = [np.array([j]) for j in range(X.shape[1])]
    M_block, _ = ols_statistics(X, y, single, [z[:, [j]] for j in range(X.shape[1])])
    M_gm, sel = coordinate_gm(X, y, z, q=0.2)
    np.testing.assert_allclose(M_block, M_gm, rtol=1e-8)
    block = BlockGaussianMirror(np.arange(X.shape[1]), q=0.2)
    labels, idx = as_groups(block.groups, X.shape[1])
    assert len(idx) == X.shape[1]
    np.testing.assert_array_equal(M_block >= mirror_threshold(M_block, 0.2), sel)


def _brute_threshold(M, q, offset):
    best = np.inf
    for t in np.unique(np.concatenate([np.abs(M), np.abs(M) + 1e-9, np.linspace(1e-6, np.abs(M).max() + 1, 2000)])):
        if t <= 0:
            continue
        if (offset + np.sum(M <= -t)) / max(np.sum(M >= t), 1) <= q:
            best = min(best, t)
    # the selected set at the continuum minimiser is the one at the smallest |M_g| ≥ it
    return best


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("offset", [0, 1])
def test_threshold_against_brute_force_scan(seed, offset):
    r = np.random.default_rng(seed)
    M = np.round(r.standard_normal(int(r.integers(5, 60))) + r.uniform(0, 2), 2)  # ties included
    q = float(r.uniform(0.05, 0.5))
    tau, brute = mirror_threshold(M, q, offset=offset), _brute_threshold(M, q, offset)
    if np.isinf(brute):
        assert np.isinf(tau)
    else:  # same selection
        np.testing.assert_array_equal(M >= tau, M >= brute - 1e-12)


def test_threshold_examples_and_inf():
    assert mirror_threshold([5.0, 4.0, 3.0, -0.5, 2.0], q=0.5) == 0.5
    assert mirror_threshold([5.0, 4.0, 3.0, -0.5, 2.0], q=0.4) == 2.0  # (1 + 0) / 4
    assert np.isinf(mirror_threshold([1.0, -1.0, 0.5], q=0.1))
    assert np.isinf(mirror_threshold([0.0, 0.0], q=0.1))
    assert mirror_threshold(np.r_[np.arange(1, 11.0)], q=0.1, offset=1) == 1.0  # 1/10 ≤ 0.1


def test_null_statistics_are_sign_symmetric():
    """Binomial sign-flip test over many repetitions under the global null (correlated lags)."""
    pos = tot = 0
    for seed in range(40):
        X, y, groups, _ = simulate_var_groups(90, 6, 3, 0, 0.7, random_state=seed)
        _, idx = as_groups(groups, X.shape[1])
        r = np.random.default_rng(seed + 100)
        M, _ = ols_statistics(X, y, idx, [r.standard_normal((90, 3)) for _ in idx])
        pos += int(np.sum(M > 0))
        tot += len(M)
    assert stats.binomtest(pos, tot, 0.5).pvalue > 1e-3, (pos, tot)


def test_fdr_below_q_within_two_se_on_a_small_case():
    fdp = []
    for seed in range(40):
        X, y, groups, active = simulate_var_groups(160, 20, 2, 8, 0.5, random_state=seed, signal=0.35)
        sel = BlockGaussianMirror(groups, q=0.2, random_state=seed).fit(X, y)
        s = np.isin(np.arange(20), sel.selected_groups_)
        fdp.append(np.sum(s & ~np.isin(np.arange(20), active)) / max(s.sum(), 1))
    fdp = np.asarray(fdp)
    assert fdp.mean() <= 0.2 + 2 * fdp.std(ddof=1) / np.sqrt(len(fdp))


def test_strong_signal_is_found():
    X, y, groups, active = simulate_var_groups(400, 20, 3, 10, 0.3, random_state=1, signal=0.6)
    sel = BlockGaussianMirror(groups, q=0.1, norm="whitened", random_state=0).fit(X, y)
    assert set(active) <= set(sel.selected_groups_)


def test_lasso_estimator_runs_high_dimensional():
    X, y, groups, active = simulate_var_groups(60, 30, 3, 3, 0.5, random_state=2, signal=0.8)
    sel = BlockGaussianMirror(groups, q=0.2, estimator="lasso", alpha=0.05, random_state=0).fit(X, y)
    assert sel.mirror_statistics_.shape == (30,) and np.all(np.isfinite(sel.mirror_statistics_))


def test_groups_need_not_be_contiguous_and_follow_sorted_labels(small):
    X, y, groups, _, _, _ = small
    perm = np.random.default_rng(0).permutation(X.shape[1])
    labels = np.array([f"s{g}" for g in groups])
    a = BlockGaussianMirror(labels, random_state=1).fit(X, y)
    b = BlockGaussianMirror(labels[perm], random_state=1).fit(X[:, perm], y)
    assert a.groups_ == sorted(set(labels)) == b.groups_
    np.testing.assert_allclose(a.mirror_statistics_, b.mirror_statistics_, rtol=1e-8)
    lists = BlockGaussianMirror([np.flatnonzero(groups == g) for g in range(8)], random_state=1).fit(X, y)
    assert lists.groups_ == list(range(8))
