"""p is applied in the Bernstein basis: the operator equals the reported p at any degree and dtype."""

import pytest
import torch
from tikhonovgnn import BernsteinPolynomial, TikhonovGNN, TikhonovLayer, propagation_matrix
from tikhonovgnn.solve import MAX_DEGREE, dense_laplacian
from tikhonovgnn.tikhonov import bernstein_reference


@pytest.mark.parametrize("dtype,degree,tol", [(torch.float32, 32, 1e-4), (torch.float32, 16, 1e-4),
                                              (torch.float64, 64, 1e-9), (torch.float64, 30, 1e-9)])
@pytest.mark.parametrize("solver,recursion", [("dense", "bernstein"), ("cg", "bernstein"), ("dense", "chebyshev"),
                                              ("cg", "chebyshev")])
def test_operator_equals_reported_p(dtype, degree, tol, solver, recursion, gen, connected):
    n = 24
    ei = connected(n, gen)
    torch.manual_seed(degree)
    layer = TikhonovLayer(3, 3, degree=degree, solver=solver, p_recursion=recursion, bias=False).to(dtype)
    with torch.no_grad():  # a wiggly p with coefficients over two orders of magnitude
        layer.poly.raw.copy_(torch.randn(degree + 1, dtype=dtype) * 3)
    x = torch.randn(n, 3, dtype=dtype)
    y = layer(x, ei).detach()
    e = layer.explain(x, ei)
    # the reported p (its Bernstein coefficients, evaluated by the explicit sum in float64) ...
    torch.testing.assert_close(e["p_values"].double(), bernstein_reference(e["theta"], e["lambda"]),
                               atol=tol * float(e["theta"].max()), rtol=0)
    # ... is the operator applied: R from the eigendecomposition with that p, in float64
    L = dense_laplacian(ei, n, dtype=torch.float64)[0][0]
    R = propagation_matrix(L, e["q"].double(), e["theta"].double())
    ref = R @ (x.double() @ layer.lin.weight.detach().double().T)
    assert float((y.double() - ref).norm() / ref.norm()) < tol


def test_degree_cap_has_a_clear_error():
    assert MAX_DEGREE == 64
    BernsteinPolynomial(MAX_DEGREE)
    with pytest.raises(ValueError, match="degree must be <= 64"):
        BernsteinPolynomial(MAX_DEGREE + 1)
    with pytest.raises(ValueError, match="degree must be <= 64"):
        TikhonovLayer(3, 3, degree=200)


CASTS = {
    "float()": (lambda m: m.float(), torch.float32),
    "double()": (lambda m: m.double(), torch.float64),
    "half()": (lambda m: m.half(), torch.float16),
    "to(float32)": (lambda m: m.double().to(torch.float32), torch.float32),
    "to(float64)": (lambda m: m.to(torch.float64), torch.float64),
    "to(bfloat16)": (lambda m: m.to(torch.bfloat16), torch.bfloat16),
}


@pytest.mark.parametrize("cast", list(CASTS))
@pytest.mark.parametrize("solver", ["dense", "cg"])
def test_every_tensor_follows_dtype_casts(cast, solver, gen, connected):
    fn, dtype = CASTS[cast]
    ei = connected(9, gen)
    x = torch.randn(9, 4, generator=gen)
    for model in (TikhonovLayer(4, 3, degree=5, solver=solver), TikhonovGNN(4, 6, 2, solver=solver, degree=5)):
        ref = model.double()(x.double(), ei).detach()
        model = fn(model)
        assert all(t.dtype == dtype for t in [*model.parameters(), *model.buffers()])
        out = model(x.to(dtype), ei)
        assert out.dtype == dtype and torch.isfinite(out).all()
        tol = {torch.float64: 1e-9, torch.float32: 1e-4}.get(dtype, 5e-2)
        torch.testing.assert_close(out.double(), ref, atol=tol * (1 + float(ref.abs().max())), rtol=0)
        out.float().sum().backward()  # and trains in that dtype
        assert all(p.grad is not None and p.grad.dtype == dtype for p in model.parameters() if p.requires_grad)
