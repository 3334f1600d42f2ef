"""The CG path is safe (errors, symmetry, batches) and differentiable in every input (edge weights too)."""

import time
import warnings

import pytest
import torch
from tikhonovgnn import TikhonovGNN, TikhonovLayer
from tikhonovgnn.solve import (
    CGError,
    cg,
    dense_laplacian,
    laplacian_entries,
    normalized_laplacian,
    solve_cg,
    solve_dense,
)
from torch_geometric.data import Batch, Data
from torch_geometric.utils import coalesce, to_undirected


def _spread_q(n, gen):
    # q spread over five orders of magnitude, as a trained Q-network gives
    return torch.exp(torch.empty(n, dtype=torch.float64).uniform_(-8, 3, generator=gen))


def test_cg_raises_on_nonfinite_residual_and_on_no_convergence(gen, connected):
    n = 12
    L = normalized_laplacian(connected(n, gen), n, dtype=torch.float64)
    theta = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64)
    b = torch.randn(n, 2, generator=gen, dtype=torch.float64)
    q = torch.ones(n, dtype=torch.float64)
    q_nan = q.clone()
    q_nan[3] = float("nan")
    with pytest.raises(CGError, match="non-finite"):
        solve_cg(L, theta, q_nan, b)
    with pytest.raises(CGError, match="non-finite"):
        solve_cg(L, theta, q, torch.full_like(b, 1e308) * 10)  # inf right-hand side: overflow, never zeros
    with pytest.raises(CGError, match="no convergence in 2 iterations"):
        solve_cg(L, theta, _spread_q(n, gen), b, tol=1e-12, maxiter=2)
    with pytest.warns(RuntimeWarning, match="no convergence"):
        y = solve_cg(L, theta, _spread_q(n, gen), b, tol=1e-12, maxiter=2, on_fail="warn")
    assert torch.isfinite(y).all()
    # the backward solve obeys the same rule
    bq = b.clone().requires_grad_(True)
    layer_like = solve_cg(L, theta, q, bq, tol=1e-12, maxiter=100)
    with pytest.raises(CGError, match="backward"):
        (layer_like * float("nan")).sum().backward()


def test_layer_cg_failure_is_configurable(gen, connected):
    x = torch.randn(30, 3, generator=gen, dtype=torch.float64)
    ei = connected(30, gen)
    strict = TikhonovLayer(3, 3, solver="cg", cg_maxiter=1, cg_tol=1e-12).double()
    with pytest.raises(CGError):
        strict(x, ei)
    lenient = TikhonovLayer(3, 3, solver="cg", cg_maxiter=1, cg_tol=1e-12, cg_on_fail="warn").double()
    with pytest.warns(RuntimeWarning, match="CG"):
        lenient(x, ei)
    with pytest.raises(ValueError, match="cg_on_fail"):
        TikhonovLayer(3, 3, cg_on_fail="ignore")


def test_jacobi_preconditioner_cuts_iterations_and_keeps_the_solution(gen, connected):
    n = 200
    L = normalized_laplacian(connected(n, gen, chords=400), n, dtype=torch.float64)
    theta = torch.tensor([0.0, 1.0, 3.0, 4.0], dtype=torch.float64)
    q = _spread_q(n, gen)
    b = torch.randn(n, 3, generator=gen, dtype=torch.float64)
    matvec = lambda v: solve_cg.__globals__["bernstein_apply"](L, theta, v) + q[:, None] * v  # noqa: E731
    y0, it0, _ = cg(matvec, b, tol=1e-10, maxiter=5000)
    log = {}
    y1 = solve_cg(L, theta, q, b, tol=1e-10, log=log)
    assert log["iterations"][0] < it0 / 2
    torch.testing.assert_close(y1, y0, atol=1e-7, rtol=1e-7)


def test_directed_and_cross_graph_edges_are_rejected_or_symmetrised(gen, connected):
    n = 10
    ring = torch.stack([torch.arange(n), torch.roll(torch.arange(n), -1)])  # one-way ring
    x = torch.randn(n, 3, generator=gen, dtype=torch.float64)
    for solver in ("dense", "cg"):
        with pytest.raises(ValueError, match="not symmetric"):
            TikhonovLayer(3, 3, solver=solver).double()(x, ring)
    w = torch.rand(2 * n, generator=gen, dtype=torch.float64)
    both = torch.cat([ring, ring.flip(0)], 1)
    with pytest.raises(ValueError, match="not symmetric"):  # both directions, different weights
        TikhonovLayer(3, 3).double()(x, both, edge_weight=w)
    outs = []
    for solver in ("dense", "cg"):
        torch.manual_seed(0)
        sym = TikhonovLayer(3, 3, solver=solver, symmetrize=True, cg_tol=1e-12).double()
        outs.append(sym(x, ring))
        torch.manual_seed(0)
        ref = TikhonovLayer(3, 3, solver=solver, cg_tol=1e-12).double()(x, to_undirected(ring))
        torch.testing.assert_close(outs[-1], ref)
    torch.testing.assert_close(outs[0], outs[1], atol=1e-9, rtol=1e-9)
    b = torch.tensor([0] * 5 + [1] * 5)
    cross = torch.tensor([[4, 5], [5, 4]])
    with pytest.raises(ValueError, match="joining two different graphs"):
        TikhonovLayer(3, 3).double()(x, torch.cat([connected(5, gen), cross], 1), b)


def test_edge_weight_gradients_on_cg_path_match_dense_and_finite_differences(gen, connected):
    n = 9
    ei = connected(n, gen)
    ei = ei[:, ei[0] < ei[1]]
    ei = torch.cat([ei, ei.flip(0)], 1)
    m = ei.size(1) // 2
    theta = torch.tensor([0.3, 1.2, 0.4], dtype=torch.float64, requires_grad=True)
    q = (torch.rand(n, generator=gen, dtype=torch.float64) + 0.3).requires_grad_(True)
    b = torch.randn(n, 2, generator=gen, dtype=torch.float64)
    w_half = (torch.rand(m, generator=gen, dtype=torch.float64) + 0.2).requires_grad_(True)

    def cg_path(w_half, q, theta):
        ent = laplacian_entries(ei, n, torch.cat([w_half, w_half]), dtype=torch.float64)
        return solve_cg(ent, theta, q, b, tol=1e-14)

    def dense_path(w_half, q, theta):
        L, mask = dense_laplacian(ei, n, edge_weight=torch.cat([w_half, w_half]), dtype=torch.float64)
        return solve_dense(L, mask, theta, q[None], b[None])[0]

    assert torch.autograd.gradcheck(cg_path, (w_half, q, theta), eps=1e-6, atol=1e-6)
    v = torch.randn(n, 2, generator=gen, dtype=torch.float64)
    g_cg = torch.autograd.grad((cg_path(w_half, q, theta) * v).sum(), (w_half, q, theta))
    g_dense = torch.autograd.grad((dense_path(w_half, q, theta) * v).sum(), (w_half, q, theta))
    for a, d in zip(g_cg, g_dense):
        torch.testing.assert_close(a, d, atol=1e-9, rtol=1e-8)


def test_tikhonov_gnn_passes_edge_weight(gen, connected):
    ei = coalesce(connected(8, gen))  # no repeated edges, so each edge has one reverse
    x = torch.randn(8, 3, generator=gen, dtype=torch.float64)
    for task in ("graph", "node"):
        for solver in ("dense", "cg"):
            torch.manual_seed(0)
            m = TikhonovGNN(3, 4, 2, task=task, solver=solver).double()
            w = torch.full((ei.size(1),), 1.0, dtype=torch.float64, requires_grad=True)
            base = m(x, ei)
            torch.testing.assert_close(m(x, ei, edge_weight=w), base)  # unit weights = no weights
            torch.testing.assert_close(m(x, ei, edge_weight=3.0 * w), base)  # uniform scaling leaves the normalised Laplacian unchanged
            ww = torch.linspace(0.1, 2.0, ei.size(1), dtype=torch.float64)
            ww = (ww + ww[_reverse_index(ei)]) / 2  # symmetric, non-uniform
            ww.requires_grad_(True)
            out = m(x, ei, edge_weight=ww)
            assert (out - base).abs().max() > 1e-6
            (g,) = torch.autograd.grad(out.sum(), ww)
            assert torch.isfinite(g).all() and g.abs().max() > 0
    with pytest.raises(TypeError):
        TikhonovGNN(3, 4, 2)(x.float(), ei, edge_attr=torch.ones(ei.size(1)))


def _reverse_index(ei):
    key = {(int(a), int(b)): i for i, (a, b) in enumerate(ei.T)}
    return torch.tensor([key[(int(b), int(a))] for a, b in ei.T])


def test_auto_solves_buckets_and_matches_dense(gen, connected):
    sizes = [5, 6, 9, 12, 30]
    graphs = [Data(x=torch.randn(k, 3, generator=gen, dtype=torch.float64), edge_index=connected(k, gen))
              for k in sizes]
    b = Batch.from_data_list(graphs)
    torch.manual_seed(0)
    auto = TikhonovLayer(3, 3, solver="auto", dense_max_nodes=16, cg_tol=1e-13).double()
    plan = auto.plan(b.batch, b.num_nodes)
    assert [(how, g.tolist()) for how, g in plan] == [("dense", [0, 1]), ("dense", [2, 3]), ("cg", [4])]
    dense = TikhonovLayer(3, 3, solver="dense").double()
    dense.load_state_dict(auto.state_dict())
    torch.testing.assert_close(auto(b.x, b.edge_index, b.batch), dense(b.x, b.edge_index, b.batch))
    # gradients flow through the reassembly
    xg = b.x.clone().requires_grad_(True)
    (ga,) = torch.autograd.grad(auto(xg, b.edge_index, b.batch).square().sum(), xg)
    (gd,) = torch.autograd.grad(dense(xg, b.edge_index, b.batch).square().sum(), xg)
    torch.testing.assert_close(ga, gd)


def test_auto_keeps_a_skewed_batch_off_the_padded_dense_path(gen, connected):
    graphs = [Data(x=torch.randn(40, 4, generator=gen), edge_index=connected(40, gen)) for _ in range(31)]
    graphs.append(Data(x=torch.randn(1500, 4, generator=gen), edge_index=connected(1500, gen, chords=3000)))
    b = Batch.from_data_list(graphs)
    layer = TikhonovLayer(4, 4)
    plan = layer.plan(b.batch, b.num_nodes)
    assert [how for how, _ in plan] == ["dense", "cg"] and plan[1][1].tolist() == [31]
    t0 = time.perf_counter()
    layer(b.x, b.edge_index, b.batch).sum().backward()
    assert time.perf_counter() - t0 < 10  # padded to 1500 x 1500 x 32 it took ~20 s; here well under a second


def test_warn_mode_is_silent_when_cg_converges(gen, connected):
    x = torch.randn(20, 3, generator=gen, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TikhonovLayer(3, 3, solver="cg", cg_on_fail="warn").double()(x, connected(20, gen))
