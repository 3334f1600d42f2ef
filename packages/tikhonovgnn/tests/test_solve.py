import math

import pytest
import torch
from tikhonovgnn.solve import (
    bernstein_apply,
    bernstein_basis_apply,
    bernstein_dense,
    cg,
    check_graph,
    dense_laplacian,
    normalized_laplacian,
    solve_cg,
    solve_dense,
)
from tikhonovgnn.tikhonov import bernstein_reference


def _dense_reference_laplacian(ei, n):
    A = torch.zeros(n, n, dtype=torch.float64)  # repeated edges add up (a multigraph), as in PyG
    A.index_put_((ei[0], ei[1]), torch.ones(ei.size(1), dtype=torch.float64), accumulate=True)
    A.fill_diagonal_(0.0)
    d = A.sum(1)
    dinv = torch.where(d > 0, d.rsqrt(), torch.zeros_like(d))
    return torch.eye(n, dtype=torch.float64) - dinv[:, None] * A * dinv[None, :]


def test_laplacian_matches_dense_reference_and_spectrum(gen, connected):
    n = 12
    ei = connected(n, gen)
    ref = _dense_reference_laplacian(ei, n)
    L = normalized_laplacian(ei, n, dtype=torch.float64).to_dense()
    torch.testing.assert_close(L, ref)
    Ld, mask = dense_laplacian(ei, n, dtype=torch.float64)
    torch.testing.assert_close(Ld[0], ref)
    assert mask.all()
    lam = torch.linalg.eigvalsh(ref)
    assert lam.min() > -1e-10 and lam.max() < 2 + 1e-10


def test_isolated_node_gets_unit_diagonal():
    ei = torch.tensor([[0, 1], [1, 0]])
    L = normalized_laplacian(ei, 3, dtype=torch.float64).to_dense()
    assert L[2, 2] == 1.0 and L[2, :2].abs().sum() == 0


def test_bernstein_apply_matches_spectral_reference(gen, connected):
    n = 10
    L = _dense_reference_laplacian(connected(n, gen), n)
    theta = torch.rand(5, generator=gen, dtype=torch.float64) * 3
    v = torch.randn(n, 2, generator=gen, dtype=torch.float64)
    lam, U = torch.linalg.eigh(L)
    ref = (U * bernstein_reference(theta, lam)) @ U.T  # explicit Bernstein sum on the eigenvalues
    torch.testing.assert_close(bernstein_apply(L, theta, v), ref @ v)
    torch.testing.assert_close(bernstein_apply(L.to_sparse_csr(), theta, v), ref @ v)
    torch.testing.assert_close(bernstein_dense(L[None], theta)[0], ref)
    basis = bernstein_basis_apply(L, 4, v)
    torch.testing.assert_close(sum(t * b for t, b in zip(theta, basis)), ref @ v)


def test_cg_solves_spd_system(gen):
    M = torch.randn(20, 20, generator=gen, dtype=torch.float64)
    A = M @ M.T + 20 * torch.eye(20, dtype=torch.float64)
    b = torch.randn(20, 3, generator=gen, dtype=torch.float64)
    y, it, rel = cg(lambda v: A @ v, b, tol=1e-12)
    assert rel <= 1e-12 and it <= 200
    torch.testing.assert_close(y, torch.linalg.solve(A, b))


def test_dense_and_cg_agree_in_value_and_gradient(gen, connected):
    n = 16
    ei = connected(n, gen)
    theta = torch.tensor([0.2, 0.5, 0.05, 0.3], dtype=torch.float64, requires_grad=True)
    q = (torch.rand(n, generator=gen, dtype=torch.float64) + 0.5).requires_grad_(True)
    b = torch.randn(n, 2, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(n, 2, generator=gen, dtype=torch.float64)
    Ld, mask = dense_laplacian(ei, n, dtype=torch.float64)
    yd = solve_dense(Ld, mask, theta, q[None], b[None])[0]
    gd = torch.autograd.grad((yd * w).sum(), (b, q, theta))
    yc = solve_cg(normalized_laplacian(ei, n, dtype=torch.float64), theta, q, b, tol=1e-13)
    gc = torch.autograd.grad((yc * w).sum(), (b, q, theta))
    torch.testing.assert_close(yc, yd, atol=1e-10, rtol=1e-9)
    for a, d in zip(gc, gd):
        torch.testing.assert_close(a, d, atol=1e-9, rtol=1e-8)


def test_cg_gradcheck_double(gen, connected):
    n = 8
    L = normalized_laplacian(connected(n, gen), n, dtype=torch.float64)
    theta = torch.tensor([0.3, 0.4, 0.2], dtype=torch.float64, requires_grad=True)
    q = (torch.rand(n, generator=gen, dtype=torch.float64) + 0.5).requires_grad_(True)
    b = torch.randn(n, 2, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda b, q, t: solve_cg(L, t, q, b, tol=1e-14), (b, q, theta), eps=1e-6,
                                    atol=1e-6)


def test_dense_padding_keeps_graphs_independent(gen, connected):
    # two graphs in one padded batch give the same answer as solved alone
    e1, e2 = connected(5, gen), connected(9, gen)
    ei = torch.cat([e1, e2 + 5], 1)
    batch = torch.tensor([0] * 5 + [1] * 9)
    c = torch.tensor([0.1, 2.1], dtype=torch.float64)  # p(λ) = 0.1 + λ in the Bernstein basis
    q = torch.rand(14, generator=gen, dtype=torch.float64) + 0.5
    b = torch.randn(14, 1, generator=gen, dtype=torch.float64)
    L, mask = dense_laplacian(ei, 14, batch, dtype=torch.float64)
    assert L.shape == (2, 9, 9) and mask.sum() == 14
    qd = torch.ones(2, 9, dtype=torch.float64)
    bd = torch.zeros(2, 9, 1, dtype=torch.float64)
    qd[mask], bd[mask] = q, b
    y = solve_dense(L, mask, c, qd, bd)[mask]
    L2, m2 = dense_laplacian(e2, 9, dtype=torch.float64)
    y2 = solve_dense(L2, m2, c, q[None, 5:], b[None, 5:])[0]
    torch.testing.assert_close(y[5:], y2)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"x": torch.zeros(0, 2)}, ValueError, "empty graph"),
        ({"x": torch.tensor([[math.nan, 0.0], [0.0, 0.0]])}, ValueError, "non-finite"),
        ({"edge_index": torch.tensor([[0, 5], [5, 0]])}, ValueError, "edge_index holds node indices outside"),
        ({"edge_index": torch.tensor([[0, -1], [-1, 0]])}, ValueError, "edge_index"),
        ({"edge_index": torch.tensor([0, 1])}, ValueError, "edge_index must have shape"),
        ({"edge_weight": torch.tensor([1.0, -2.0])}, ValueError, "edge_weight must be finite and non-negative"),
        ({"x": [[0.0]]}, TypeError, "x must be a torch.Tensor"),
        ({"x": torch.zeros(2, 2, dtype=torch.long)}, TypeError, "floating-point"),
        ({"batch": torch.tensor([1, 0])}, ValueError, "batch must be sorted"),
        ({"batch": torch.tensor([0])}, ValueError, "batch must be a tensor of shape"),
    ],
)
def test_bad_graphs_raise_clear_errors(kwargs, exc, match):
    args = {"x": torch.zeros(2, 2), "edge_index": torch.tensor([[0, 1], [1, 0]]), "edge_weight": None, "batch": None}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        check_graph(args["x"], args["edge_index"], args["edge_weight"], args["batch"])


def test_solve_cg_rejects_bad_tol(gen, connected):
    L = normalized_laplacian(connected(4, gen), 4)
    with pytest.raises(ValueError, match="tol"):
        solve_cg(L, torch.ones(2), torch.ones(4), torch.ones(4, 1), tol=0.0)
