"""The counting path: alias tables, multi-step draws, the reduction to reachable states."""

import itertools

import numpy as np
import pytest
from cmcboot import riverswim, riverswim_behaviours, simulate_datasets
from cmcboot.bootstrap import (
    _alias_tables,
    _block_tables,
    embed_counts,
    estimate_behaviour,
    estimate_kernel,
    reachable_states,
    reduced_bootstrap_counts,
    reduced_policy_values,
    simulate_counts,
)
from cmcboot.mdp import policy_evaluation


def _implied(accept, alias):
    """The law an alias table samples: column j kept w.p. accept[j], else alias[j] (each column 1/k)."""
    k = accept.size
    p = np.zeros(k)
    np.add.at(p, np.arange(k), accept / k)
    np.add.at(p, alias, (1 - accept) / k)
    return p


@pytest.mark.parametrize("m, k", [(1, 1), (1, 7), (3, 3), (3, 12), (5, 64), (40, 41)])
def test_alias_tables_sample_the_given_law_exactly(rng, m, k):
    rows = np.zeros((4, k))
    rows[0, :m] = rng.dirichlet(np.ones(m))
    rows[1, :m] = 1.0 / m                                       # uniform support, padded
    rows[2, :m] = rng.integers(1, 5, size=m) / 7.0              # masses that are multiples of 1/k often
    rows[3, :m] = rng.dirichlet(np.full(m, 0.1))                # very uneven
    accept, alias, sizes = _alias_tables(rows)
    assert sizes.tolist() == [m] * 4
    for r in range(4):
        np.testing.assert_allclose(_implied(accept[r], alias[r]), rows[r] / rows[r].sum(), atol=1e-12)
        assert np.all(accept[r, m:] == 0)                      # padding columns always resolve to the support


@pytest.mark.parametrize("h", [1, 2, 3])
def test_block_tables_hold_the_exact_h_step_path_law(rng, h):
    S, A = 3, 2
    P = rng.dirichlet(np.ones(S), size=(1, S, A)) * (rng.random((1, S, A, S)) < 0.7)
    P[..., 0] += 1e-3                                           # keep every row non-empty
    P /= P.sum(-1, keepdims=True)
    pi = rng.dirichlet(np.ones(A), size=(1, S))
    accept, alias, codes, next_base, k = _block_tables(P, pi, h)
    for s in range(S):
        # brute force: every path of h steps from s and its probability
        law = {}
        for path in itertools.product(range(A * S), repeat=h):
            prob, cur, key = 1.0, s, []
            for j in path:
                a, s2 = divmod(j, S)
                prob *= pi[0, cur, a] * P[0, cur, a, s2]
                key.append((cur * A + a) * S + s2)
                cur = s2
            if prob > 0:
                law[tuple(key)] = law.get(tuple(key), 0.0) + prob
        cols = slice(s * k, (s + 1) * k)
        implied = _implied(accept[cols], alias[cols] - s * k)
        got = {}
        for j in range(k):
            if implied[j] > 0:
                got[tuple(int(c[s * k + j]) for c in codes)] = got.get(tuple(int(c[s * k + j]) for c in codes), 0.0) + implied[j]
                assert next_base[s * k + j] // k == int(codes[-1][s * k + j]) % S   # the row after the last step
        assert set(got) == set(law)
        # acceptances are float32 (the walk compares float32 uniforms): exact to their resolution
        np.testing.assert_allclose([got[p] for p in law], list(law.values()), rtol=1e-6, atol=1e-7)


def test_multi_step_draws_count_the_same_law_as_single_steps(rng):
    P = rng.dirichlet(np.ones(4), size=(2, 4, 2))
    pi = rng.dirichlet(np.ones(2), size=(2, 4))
    starts, lengths = np.array([[0], [3]]), np.array([403])        # 403 = 100 draws of 4 + 3 single steps
    one = simulate_counts(P, pi, starts, lengths, 400, np.random.default_rng(1), steps_per_draw=1)
    four = simulate_counts(P, pi, starts, lengths, 400, np.random.default_rng(2), steps_per_draw=4)
    assert np.all(one.sum((2, 3, 4)) == 403) and np.all(four.sum((2, 3, 4)) == 403)
    assert np.all((four > 0) <= (pi[:, None, :, :, None] * P[:, None] > 0))
    m1, m4 = one.mean(1), four.mean(1)
    se = np.sqrt((one.var(1) + four.var(1)) / 400) + 1e-9
    assert np.all(np.abs(m1 - m4) < 5 * se)
    # every replicate is a path: in-flow equals out-flow except at the start and the end
    net = four.sum((2, 3)) - four.sum((3, 4))                    # visits as next state - as state
    assert np.all(np.abs(net).sum(-1) <= 2)


def test_reachable_states_brute_force(rng):
    for _ in range(20):
        step = rng.random((6, 2, 6)) < 0.2
        P = step / np.maximum(step.sum(-1, keepdims=True), 1)
        P[step.sum(-1) == 0] = np.eye(6)[np.nonzero(step.sum(-1) == 0)[0]]
        pi = rng.dirichlet(np.ones(2), size=6) * (rng.random((6, 2)) < 0.8)
        pi[pi.sum(-1) == 0] = 0.5
        pi /= pi.sum(-1, keepdims=True)
        adj = np.einsum("sa,sat->st", pi, P) > 0
        reach = np.eye(6, dtype=bool)[2]
        for _ in range(6):                                        # closure by repeated squaring
            reach = reach | (reach @ adj > 0)
        np.testing.assert_array_equal(reachable_states(P, pi, [2]), reach)


@pytest.mark.parametrize("unvisited", ["uniform", "self"])
def test_reduced_solve_equals_the_full_solve(rng, unvisited):
    S = 30                                       # a short chain on a long river reaches few states
    P, R = riverswim(S)
    d = simulate_datasets(P, riverswim_behaviours(S, 0.6)["mostly_right"], n_datasets=1, n_episodes=1,
                          length=400, initial=np.eye(S)[0], rng=rng)[0, 0]
    counts = np.zeros((S, 2, S), int)
    np.add.at(counts, tuple(d.T), 1)
    P_hat, _ = estimate_kernel(counts, unvisited)
    pi_b = estimate_behaviour(counts)
    boot, support = reduced_bootstrap_counts(P_hat, pi_b, [d[0, 0]], [len(d)], 25, rng)
    assert support.size < S and boot.shape == (25, support.size, 2, support.size)
    assert np.all(boot.sum((1, 2, 3)) == len(d))
    pi = rng.dirichlet(np.ones(2), size=S)
    V, Q = reduced_policy_values(boot, support, R, pi, 0.9, unvisited)
    V_full, Q_full = policy_evaluation(estimate_kernel(embed_counts(boot, support, S), unvisited)[0], R, pi, 0.9)
    np.testing.assert_allclose(V, V_full, rtol=1e-9, atol=1e-9 * np.abs(V_full).max())
    np.testing.assert_allclose(Q, Q_full, rtol=1e-9, atol=1e-9 * np.abs(Q_full).max())


def test_reduced_counts_have_the_law_of_the_full_simulator(rng):
    S = 20
    P, _ = riverswim(S)
    d = simulate_datasets(P, riverswim_behaviours(S, 0.6)["mostly_right"], n_datasets=1, n_episodes=1,
                          length=300, initial=np.eye(S)[0], rng=rng)[0, 0]
    counts = np.zeros((S, 2, S), int)
    np.add.at(counts, tuple(d.T), 1)
    P_hat, pi_b = estimate_kernel(counts)[0], estimate_behaviour(counts)
    full = simulate_counts(P_hat[None], pi_b[None], np.array([[d[0, 0]]]), np.array([300]), 600,
                           np.random.default_rng(5))[0]
    red, support = reduced_bootstrap_counts(P_hat, pi_b, [d[0, 0]], [300], 600, np.random.default_rng(6))
    red = embed_counts(red, support, S)
    outside = ~reachable_states(P_hat, pi_b, [d[0, 0]])
    assert full[:, outside].sum() == 0                            # the full walk never leaves the reachable set
    se = np.sqrt((full.var(0) + red.var(0)) / 600) + 1e-9
    assert np.all(np.abs(full.mean(0) - red.mean(0)) < 5 * se)


@pytest.mark.parametrize("unvisited", ["uniform", "self"])
def test_reduced_policy_iteration_equals_value_iteration_on_full_kernels(rng, unvisited):
    from cmcboot.bootstrap import reduced_qstar
    from cmcboot.mdp import value_iteration

    S = 25
    P, R = riverswim(S, variant="psrl")
    R = R + rng.normal(scale=0.01, size=R.shape)                 # no ties among actions
    d = simulate_datasets(P, riverswim_behaviours(S, 0.6)["mostly_right"], n_datasets=1, n_episodes=1,
                          length=500, initial=np.eye(S)[0], rng=rng)[0, 0]
    counts = np.zeros((S, 2, S), int)
    np.add.at(counts, tuple(d.T), 1)
    P_hat, _ = estimate_kernel(counts, unvisited)
    boot, support = reduced_bootstrap_counts(P_hat, estimate_behaviour(counts), [d[0, 0]], [len(d)], 20, rng)
    q = reduced_qstar(boot, support, R, 0.9, unvisited)
    ref = value_iteration(estimate_kernel(embed_counts(boot, support, S), unvisited)[0], R, 0.9)
    np.testing.assert_allclose(q, ref, rtol=1e-8, atol=1e-8 * np.abs(ref).max())
