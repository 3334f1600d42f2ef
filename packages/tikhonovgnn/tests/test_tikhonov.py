import pytest
import torch
from tikhonovgnn import (
    BernsteinPolynomial,
    QNetwork,
    TikhonovGNN,
    TikhonovLayer,
    propagation_matrix,
    recover_explanation,
    tikhonov_objective,
)
from tikhonovgnn.solve import dense_laplacian, normalized_laplacian, solve_cg, solve_dense
from tikhonovgnn.tikhonov import bernstein_reference
from torch_geometric.data import Batch, Data
from torch_geometric.nn import APPNP


def _layer(degree=3, solver="dense", seed=0, **kw):
    torch.manual_seed(seed)
    layer = TikhonovLayer(3, 3, degree=degree, solver=solver, cg_tol=1e-13, **kw).double()
    with torch.no_grad():
        layer.poly.raw.copy_(torch.randn(degree + 1, dtype=torch.float64))
    return layer


def test_objective_gradient_vanishes_at_layer_output(graph):
    x, ei = graph
    layer = _layer()
    q = layer.importance(x, ei)
    y = layer.propagate(x, ei, q).detach().requires_grad_(True)
    L = normalized_laplacian(ei, x.size(0), dtype=torch.float64)
    c = layer.poly.theta.detach()
    (g,) = torch.autograd.grad(tikhonov_objective(y, x, L, q.detach(), c), y)
    assert g.norm() < 1e-10 * (q[:, None] * x).norm()
    # and it is a minimum: any perturbation increases the objective
    d = torch.randn_like(y) * 1e-2
    assert tikhonov_objective(y + d, x, L, q.detach(), c) > tikhonov_objective(y, x, L, q.detach(), c)


def test_R_is_dense_for_connected_and_block_diagonal_for_disconnected(gen, connected):
    n = 12
    ei = connected(n, gen)
    L = dense_laplacian(ei, n, dtype=torch.float64)[0][0]
    q = torch.rand(n, generator=gen, dtype=torch.float64) + 0.1
    c = torch.tensor([0.1, 2.1], dtype=torch.float64)  # Bernstein coefficients of p(λ) = 0.1 + λ
    R = propagation_matrix(L, q, c)
    assert (R.abs() > 0).all()
    assert (R > -1e-12).all()  # for p(L) = c0 + c1 L, R is an M-matrix inverse times Q: entrywise >= 0
    # two components plus an isolated node: no mass crosses components
    ei2 = torch.cat([connected(5, gen), connected(5, gen) + 5], 1)
    L2 = dense_laplacian(ei2, 11, dtype=torch.float64)[0][0]
    R2 = propagation_matrix(L2, torch.ones(11, dtype=torch.float64), c)
    assert R2[:5, 5:].abs().max() < 1e-14 and R2[5:10, :5].abs().max() < 1e-14
    torch.testing.assert_close(R2[10, 10], torch.tensor(1 / (1.1 + 1.0), dtype=torch.float64))  # L_ii = 1


def test_bernstein_polynomial_is_nonnegative_and_matches_monomial_form():
    torch.manual_seed(0)
    lam = torch.linspace(0, 2, 401, dtype=torch.float64)
    for _ in range(20):
        p = BernsteinPolynomial(6).double()
        with torch.no_grad():
            p.raw.copy_(torch.randn(7, dtype=torch.float64) * 4)
        vals = p(lam)
        assert (vals >= 0).all()
        c = p.monomial(torch.float64)
        torch.testing.assert_close(sum(ck * lam**k for k, ck in enumerate(c)), vals, atol=1e-9, rtol=1e-9)
        torch.testing.assert_close(bernstein_reference(p.theta, lam), vals, atol=1e-12, rtol=1e-12)
        torch.testing.assert_close(vals[0], p.theta[0])
        torch.testing.assert_close(vals[-1], p.theta[-1])


def test_linear_init_is_classical_tikhonov():
    p = BernsteinPolynomial(4, init="linear", scale=2.0).double()
    lam = torch.linspace(0, 2, 11, dtype=torch.float64)
    torch.testing.assert_close(p(lam), 2.0 * lam, atol=1e-3, rtol=1e-3)


def test_system_is_positive_definite_with_bounded_condition(graph):
    x, ei = graph
    layer = _layer(degree=5)
    q = layer.importance(x, ei).detach()
    L = dense_laplacian(ei, x.size(0), dtype=torch.float64)[0][0]
    lam, U = torch.linalg.eigh(L)
    P = (U * layer.poly(lam).detach()) @ U.T
    ev = torch.linalg.eigvalsh(P + torch.diag(q))
    assert ev.min() >= q.min() - 1e-10  # p(L) >= 0, so lambda_min(A) >= min q > 0
    pmax = layer.poly(torch.linspace(0, 2, 2001, dtype=torch.float64)).max()
    assert ev.max() / ev.min() <= (pmax + q.max()) / q.min() + 1e-8


def test_gauge_scaling_gives_same_operator_and_layer_fixes_it(graph, gen, connected):
    x, ei = graph
    n = x.size(0)
    L = dense_laplacian(ei, n, dtype=torch.float64)[0][0]
    q = torch.rand(n, generator=gen, dtype=torch.float64) + 0.2
    c = torch.tensor([0.3, 0.7, 0.2], dtype=torch.float64)
    R = propagation_matrix(L, q, c)
    torch.testing.assert_close(propagation_matrix(L, 5.0 * q, 5.0 * c), R)
    # the layer normalises q to mean 1 per graph: scaling the Q-network output changes nothing
    layer = _layer()
    b = Batch.from_data_list([Data(x=x[:6], edge_index=connected(6, gen)),
                              Data(x=x, edge_index=ei)])
    out = layer(b.x, b.edge_index, b.batch)
    q_b = layer.importance(b.x, b.edge_index, b.batch)
    torch.testing.assert_close(q_b[:6].mean(), torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(q_b[6:].mean(), torch.tensor(1.0, dtype=torch.float64))
    inner = layer.q_net.forward
    layer.q_net.forward = lambda *a: 7.0 * inner(*a)
    torch.testing.assert_close(layer(b.x, b.edge_index, b.batch), out)
    torch.testing.assert_close(layer.explain(b.x, b.edge_index, b.batch)["q"], q_b.detach())


def test_special_case_equals_appnp_closed_form(gen, connected):
    # p(L) = c L and Q = q I give alpha (I - (1 - alpha) A_hat)^-1 with alpha = q / (q + c)
    n = 15
    ei = connected(n, gen)
    x = torch.randn(n, 4, generator=gen, dtype=torch.float64)
    cval, qval = 1.5, 0.5
    alpha = qval / (qval + cval)
    ref = APPNP(K=300, alpha=alpha, add_self_loops=False, normalize=True).double()(x, ei)
    c = torch.tensor([0.0, 2 * cval], dtype=torch.float64)  # p(λ) = c λ in the Bernstein basis of degree 1
    q = torch.full((n,), qval, dtype=torch.float64)
    L, mask = dense_laplacian(ei, n, dtype=torch.float64)
    y_dense = solve_dense(L, mask, c, q[None], (q[:, None] * x)[None])[0]
    y_cg = solve_cg(normalized_laplacian(ei, n, dtype=torch.float64), c, q, q[:, None] * x, tol=1e-13)
    torch.testing.assert_close(y_dense, ref, atol=1e-9, rtol=1e-9)
    torch.testing.assert_close(y_cg, ref, atol=1e-9, rtol=1e-9)


def test_explanation_recovered_from_operator_and_distinct_explanations_differ(graph, gen):
    x, ei = graph
    n = x.size(0)
    L = dense_laplacian(ei, n, dtype=torch.float64)[0][0]
    q = torch.rand(n, generator=gen, dtype=torch.float64) + 0.2
    q = q / q.mean()
    c = torch.tensor([0.3, 0.7, 0.2], dtype=torch.float64)  # monomial coefficients here

    def p(lam):
        return c[0] + c[1] * lam + c[2] * lam**2

    qh, ch, gap = recover_explanation(propagation_matrix(L, q, p), L, 2)
    torch.testing.assert_close(qh, q, atol=1e-8, rtol=1e-8)
    torch.testing.assert_close(ch, c, atol=1e-8, rtol=1e-8)
    assert gap < 1e-6
    q2 = q.clone()
    q2[0] += 0.1
    q2 = q2 / q2.mean()
    assert (propagation_matrix(L, q2, p) - propagation_matrix(L, q, p)).abs().max() > 1e-4


def test_layer_dense_and_cg_agree_in_value_and_parameter_gradients(graph):
    x, ei = graph
    outs, grads = [], []
    for solver in ("dense", "cg"):
        layer = _layer(solver=solver)
        y = layer(x, ei)
        w = torch.linspace(-1, 1, y.numel(), dtype=torch.float64).view_as(y)
        (y * w).sum().backward()
        outs.append(y.detach())
        grads.append({k: p.grad.clone() for k, p in layer.named_parameters()})
    torch.testing.assert_close(outs[0], outs[1], atol=1e-10, rtol=1e-9)
    for k in grads[0]:
        torch.testing.assert_close(grads[0][k], grads[1][k], atol=1e-9, rtol=1e-8)


def test_layer_gradcheck_double(gen, connected):
    n = 7
    ei = connected(n, gen)
    layer = _layer(degree=2)
    x = torch.randn(n, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: layer(x, ei), (x,), eps=1e-6, atol=1e-6)


def test_batch_equals_graphs_one_by_one_and_handles_isolated_nodes(gen, connected):
    layer = _layer()
    g1 = Data(x=torch.randn(6, 3, generator=gen, dtype=torch.float64), edge_index=connected(6, gen))
    g2 = Data(x=torch.randn(4, 3, generator=gen, dtype=torch.float64), edge_index=torch.empty(2, 0, dtype=torch.long))
    b = Batch.from_data_list([g1, g2])
    out = layer(b.x, b.edge_index, b.batch)
    torch.testing.assert_close(out[:6], layer(g1.x, g1.edge_index))
    torch.testing.assert_close(out[6:], layer(g2.x, g2.edge_index))
    assert torch.isfinite(out).all()


def test_auto_solver_switches_to_cg_for_large_graphs(gen, monkeypatch, connected):
    layer = _layer(solver="auto", dense_max_nodes=5)
    x = torch.randn(8, 3, generator=gen, dtype=torch.float64)
    ei = connected(8, gen)
    called = []
    import tikhonovgnn.tikhonov as mod

    real = mod.solve_cg
    monkeypatch.setattr(mod, "solve_cg", lambda *a, **k: called.append(1) or real(*a, **k))
    layer(x, ei)
    assert called
    layer.dense_max_nodes = 100
    called.clear()
    layer(x, ei)
    assert not called


def test_explain_returns_q_and_p(graph):
    x, ei = graph
    layer = _layer()
    e = layer.explain(x, ei)
    assert set(e) >= {"q", "p", "lambda", "p_values", "response"}
    assert e["q"].shape == (x.size(0),) and (e["q"] > 0).all()
    torch.testing.assert_close(e["q"].mean(), torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(e["p"](e["lambda"]), e["p_values"])
    assert (e["p_values"] >= 0).all()
    torch.testing.assert_close(layer.explain(x, ei)["q"], e["q"])  # deterministic


def test_reset_parameters_restores_initial_state(graph):
    x, ei = graph
    torch.manual_seed(3)
    layer = TikhonovLayer(3, 2).double()
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(1.0)
    layer.reset_parameters()
    torch.testing.assert_close(layer.poly(torch.tensor([0.0, 2.0], dtype=torch.float64)),
                               torch.tensor([1e-4, 2.0], dtype=torch.float64), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("task,shape", [("graph", (2, 3)), ("node", (10, 3))])
def test_tikhonov_gnn_shapes(task, shape, gen, connected):
    m = TikhonovGNN(4, 8, 3, task=task, q_kind="gin")
    b = Batch.from_data_list([Data(x=torch.randn(6, 4, generator=gen), edge_index=connected(6, gen)),
                              Data(x=torch.randn(4, 4, generator=gen), edge_index=connected(4, gen))])
    out = m(b.x, b.edge_index, b.batch)
    assert out.shape == shape
    assert m.explain(b.x, b.edge_index, b.batch)["q"].shape == (10,)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: TikhonovLayer(3, 3, solver="lu"), "solver"),
        (lambda: TikhonovLayer(0, 3), "in_channels"),
        (lambda: TikhonovLayer(3, 3, degree=-1), "degree"),
        (lambda: BernsteinPolynomial(3, init="cubic"), "init"),
        (lambda: QNetwork(3, kind="transformer"), "kind"),
        (lambda: TikhonovGNN(3, 4, 2, task="edge"), "task"),
        (lambda: TikhonovGNN(3, 4, 2, pool="median"), "pool"),
    ],
)
def test_bad_arguments_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_layer_rejects_bad_graphs():
    layer = TikhonovLayer(2, 2)
    with pytest.raises(ValueError, match="edge_index"):
        layer(torch.zeros(3, 2), torch.tensor([[0, 3], [3, 0]]))
    with pytest.raises(ValueError, match="non-finite"):
        layer(torch.full((3, 2), float("inf")), torch.tensor([[0, 1], [1, 0]]))
    with pytest.raises(ValueError, match="edge_weight"):
        layer(torch.zeros(3, 2), torch.tensor([[0, 1], [1, 0]]), edge_weight=torch.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="empty graph"):
        layer(torch.zeros(0, 2), torch.empty(2, 0, dtype=torch.long))
