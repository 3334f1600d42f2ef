"""Laplacians, Bernstein polynomials of ``L`` and the SPD solve ``(p(L) + Q) y = b`` with autograd.

Two solve paths share one operator ``A = p(L) + diag(q)``:

- dense: graphs are padded into ``[B, n_max, n_max]`` blocks and solved with ``torch.linalg.solve``
  (exact, autograd through LAPACK); for small graphs;
- CG: Jacobi-preconditioned conjugate gradient on the sparse block-diagonal operator, differentiated
  implicitly (the backward pass solves ``A g = dℓ/dy`` with CG again and never stores the iterations),
  so memory is O(nnz + N·C). Gradients reach ``b``, ``q``, the Bernstein coefficients and the
  Laplacian's entries (hence edge weights). A non-finite residual or a solve that misses ``tol``
  within ``maxiter`` iterations raises :class:`CGError` (or warns, ``on_fail="warn"``).

``p`` is carried in the Bernstein basis on ``[0, 2]``,
``p(λ) = Σ_k θ_k C(K, k) (λ/2)^k (1 - λ/2)^{K-k}``, and applied to vectors and matrices by de
Casteljau's recursion ``b_k ← b_k + (L/2)(b_{k+1} - b_k)`` (``K(K+1)/2`` products with ``L``): every
step is a convex combination when ``0 ≤ L ≤ 2``, so the operator applied is the ``p`` that is
reported, to float round-off, at any degree up to :data:`MAX_DEGREE` (a monomial/Horner form loses
all digits in float32 from degree ~15).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch
from torch import Tensor
from torch_geometric.utils import get_laplacian, is_undirected, to_dense_adj

__all__ = [
    "MAX_DEGREE",
    "CGError",
    "check_graph",
    "laplacian_entries",
    "normalized_laplacian",
    "dense_laplacian",
    "bernstein_apply",
    "bernstein_basis_apply",
    "bernstein_to_chebyshev",
    "chebyshev_apply",
    "apply_p",
    "bernstein_dense",
    "bernstein_values",
    "solve_dense",
    "solve_cg",
    "cg",
]

MAX_DEGREE = 64
"""Largest degree of ``p``: de Casteljau costs ``K(K+1)/2`` products with ``L`` per application."""

_ON_FAIL = ("raise", "warn")


class CGError(RuntimeError):
    """Conjugate gradient failed: a non-finite residual, or ``tol`` not reached within ``maxiter``."""


# input validation ------------------------------------------------------------------------

def check_graph(x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None, batch: Tensor | None = None, *,
                symmetric: bool = False) -> int:
    """Validate a (possibly batched) graph; return the number of nodes.

    Raises a ``TypeError``/``ValueError`` naming the argument for: non-tensor input, an empty graph,
    non-finite features, a malformed or out-of-range ``edge_index``, negative or non-finite edge
    weights, a ``batch`` vector of the wrong length or unsorted, edges joining two graphs of a batch,
    and (``symmetric=True``) a directed ``edge_index`` or asymmetric ``edge_weight``: the Tikhonov
    operator needs an undirected graph. Isolated nodes and disconnected graphs are fine.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"x must have shape [num_nodes, channels], got {tuple(x.shape)}")
    n = x.size(0)
    if n == 0:
        raise ValueError("x is an empty graph (0 nodes); the Tikhonov layer needs at least one node")
    if not torch.is_floating_point(x):
        raise TypeError(f"x must be a floating-point tensor, got {x.dtype}")
    if not torch.isfinite(x).all():
        raise ValueError("x holds non-finite features (NaN or inf)")
    if not isinstance(edge_index, Tensor):
        raise TypeError(f"edge_index must be a torch.Tensor, got {type(edge_index).__name__}")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must have shape [2, num_edges], got {tuple(edge_index.shape)}")
    if edge_index.dtype not in (torch.long, torch.int32, torch.int64):
        raise TypeError(f"edge_index must be an integer tensor, got {edge_index.dtype}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(f"edge_index holds node indices outside [0, {n}) (min {int(edge_index.min())}, "
                         f"max {int(edge_index.max())})")
    if edge_weight is not None:
        if not isinstance(edge_weight, Tensor) or edge_weight.shape != (edge_index.size(1),):
            raise ValueError(f"edge_weight must be a tensor of shape [{edge_index.size(1)}]")
        if not torch.is_floating_point(edge_weight):
            raise TypeError(f"edge_weight must be a floating-point tensor, got {edge_weight.dtype}")
        if not torch.isfinite(edge_weight).all() or (edge_weight < 0).any():
            raise ValueError("edge_weight must be finite and non-negative (the Laplacian needs A >= 0)")
    if batch is not None:
        if not isinstance(batch, Tensor) or batch.shape != (n,):
            raise ValueError(f"batch must be a tensor of shape [{n}], got "
                             f"{tuple(batch.shape) if isinstance(batch, Tensor) else type(batch).__name__}")
        if n > 1 and (batch[1:] < batch[:-1]).any():
            raise ValueError("batch must be sorted (PyG's block-diagonal batching)")
        if edge_index.numel() and (batch[edge_index[0]] != batch[edge_index[1]]).any():
            k = int((batch[edge_index[0]] != batch[edge_index[1]]).sum())
            raise ValueError(f"edge_index has {k} edge(s) joining two different graphs of the batch; "
                             "a PyG batch is block diagonal")
    if symmetric and edge_index.numel() and not is_undirected(edge_index, edge_weight, num_nodes=n):
        raise ValueError("edge_index (with edge_weight) is not symmetric: the Tikhonov layer needs an undirected "
                         "graph (list both directions with equal weights, or pass symmetrize=True)")
    return n


# Laplacians ------------------------------------------------------------------------------

def laplacian_entries(edge_index: Tensor, num_nodes: int, edge_weight: Tensor | None = None,
                      dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
    r"""Entries ``(index [2, nnz], values [nnz])`` of :math:`L = I - D^{-1/2} A D^{-1/2}`.

    Self-loops are dropped and repeated edges add up (a multigraph, as in PyG); isolated nodes get
    ``L_ii = 1``. ``values`` is differentiable in ``edge_weight``.
    """
    return get_laplacian(edge_index, edge_weight.to(dtype) if edge_weight is not None else None,
                         normalization="sym", dtype=dtype, num_nodes=num_nodes)


def _csr(index: Tensor, values: Tensor, n: int) -> Tensor:
    key = index[0] * n + index[1]
    key, perm = torch.sort(key)
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore", UserWarning)
        if key.numel() > 1 and bool((key[1:] == key[:-1]).any()):  # repeated entries: let torch add them up
            L = torch.sparse_coo_tensor(index, values, (n, n), check_invariants=False).coalesce()
            return L.to_sparse_csr()
        row = index[0][perm]
        crow = torch.zeros(n + 1, dtype=torch.long, device=index.device)
        crow[1:] = torch.cumsum(torch.bincount(row, minlength=n), 0)
        return torch.sparse_csr_tensor(crow, index[1][perm], values[perm], (n, n), check_invariants=False)


def normalized_laplacian(edge_index: Tensor, num_nodes: int, edge_weight: Tensor | None = None,
                         dtype: torch.dtype = torch.float32) -> Tensor:
    r"""Sparse CSR normalised Laplacian :math:`L = I - D^{-1/2} A D^{-1/2}` (spectrum in ``[0, 2]``)."""
    ei, w = laplacian_entries(edge_index, num_nodes, edge_weight, dtype)
    return _csr(ei, w.detach(), num_nodes)


def dense_laplacian(edge_index: Tensor, num_nodes: int, batch: Tensor | None = None,
                    edge_weight: Tensor | None = None, dtype: torch.dtype = torch.float32,
                    entries: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """Batched dense Laplacians ``[B, n_max, n_max]`` and the node mask ``[B, n_max]``.

    Padding rows get ``L = I`` (like isolated nodes), so ``p(L) + Q`` stays block diagonal and
    invertible; the caller puts zeros on the right-hand side there. ``entries`` reuses the output of
    :func:`laplacian_entries`.
    """
    if batch is None:
        batch = torch.zeros(num_nodes, dtype=torch.long, device=edge_index.device)
    ei, w = entries if entries is not None else laplacian_entries(edge_index, num_nodes, edge_weight, dtype)
    L = to_dense_adj(ei, batch, edge_attr=w)  # [B, n_max, n_max]
    counts = torch.bincount(batch)
    n_max = L.size(-1)
    mask = torch.arange(n_max, device=L.device)[None, :] < counts[:, None]
    L = L + torch.diag_embed((~mask).to(L.dtype))
    return L, mask


# Bernstein polynomials of L ------------------------------------------------------------------

def bernstein_apply(L: Tensor | Callable[[Tensor], Tensor], theta: Tensor, v: Tensor) -> Tensor:
    r"""``p(L) v`` for ``p`` in the Bernstein basis on ``[0, 2]``, by de Casteljau's recursion.

    ``b_k^{(0)} = θ_k v``; ``b_k^{(r)} = b_k^{(r-1)} + (L/2)(b_{k+1}^{(r-1)} - b_k^{(r-1)})``;
    ``p(L) v = b_0^{(K)}``. ``L``: a (batched) dense or sparse matrix, or a callable ``v ↦ L v``
    (with ``v ↦ λ ⊙ v`` it evaluates ``p`` pointwise). ``K(K+1)/2`` products with ``L``.
    """
    b = [t * v for t in theta.unbind(0)]
    K = len(b) - 1
    for r in range(1, K + 1):
        for k in range(K - r + 1):
            d = b[k + 1] - b[k]
            if callable(L):
                b[k] = b[k] + 0.5 * L(d)
            elif L.dim() == 3:
                b[k] = torch.baddbmm(b[k], L, d, alpha=0.5)
            else:
                b[k] = torch.addmm(b[k], L, d, alpha=0.5)
    return b[0]


def bernstein_basis_apply(L: Tensor, degree: int, v: Tensor) -> list[Tensor]:
    """``[B_0(L) v, ..., B_K(L) v]`` for the Bernstein basis on ``[0, 2]``: de Casteljau run in reverse.

    Every level splits each vector ``a`` into ``(I - L/2) a`` and ``(L/2) a`` (convex, so stable);
    ``K(K+1)/2`` products with ``L``. ``Σ_k θ_k B_k(L) v = p(L) v``.
    """
    a = [v]
    for _ in range(degree):
        t = [torch.addmm(torch.zeros_like(x), L, x, alpha=0.5) if L.dim() == 2 else 0.5 * torch.bmm(L, x) for x in a]
        nxt = [a[0] - t[0]]
        for j in range(1, len(a)):
            nxt.append(t[j - 1] + a[j] - t[j])
        nxt.append(t[-1])
        a = nxt
    return a


def bernstein_to_chebyshev(degree: int, *, dtype=torch.float64, device=None) -> Tensor:
    """``M [K+1, K+1]`` with ``θ @ M`` the coefficients of ``p`` in Chebyshev polynomials ``T_j(λ - 1)``.

    Computed in float64 by Chebyshev interpolation at ``K+1`` Chebyshev nodes, exact for degree ``K``.
    Well conditioned: each Bernstein basis function lies in ``[0, 1]`` on ``[0, 2]``, so its Chebyshev
    coefficients are at most 2 in absolute value.
    """
    K = int(degree)
    m = torch.arange(K + 1, dtype=torch.float64)
    ang = math.pi * (m + 0.5) / (K + 1)
    t = (torch.cos(ang) + 1) / 2  # λ/2 at the nodes
    basis = torch.stack([math.comb(K, k) * t**k * (1 - t) ** (K - k) for k in range(K + 1)])  # [k, node]
    cos = torch.cos(torch.outer(torch.arange(K + 1, dtype=torch.float64), ang))  # [j, node]
    M = basis @ cos.T * (2.0 / (K + 1))
    M[:, 0] /= 2
    return M.to(dtype=dtype, device=device)


def chebyshev_apply(L: Tensor | Callable[[Tensor], Tensor], c: Tensor, v: Tensor) -> Tensor:
    r"""``Σ_j c_j T_j(L - I) v`` by the three-term recurrence (``K`` products with ``L``).

    ``T_{j+1} = 2 (L - I) T_j - T_{j-1}``; stable since ``‖L - I‖ ≤ 1``.
    """
    K = c.numel() - 1
    out = c[0] * v
    if K == 0:
        return out

    def step(cur, base, alpha):  # base + alpha * L cur
        if callable(L):
            return base + alpha * L(cur)
        if L.dim() == 3:
            return torch.baddbmm(base, L, cur, alpha=alpha)
        return torch.addmm(base, L, cur, alpha=alpha)

    prev, cur = v, step(v, -v, 1.0)
    out = out + c[1] * cur
    for j in range(2, K + 1):
        prev, cur = cur, step(cur, -(2 * cur + prev), 2.0)
        out = out + c[j] * cur
    return out


def chebyshev_basis_apply(L: Tensor, degree: int, v: Tensor) -> list[Tensor]:
    """``[T_0(L - I) v, ..., T_K(L - I) v]``."""
    mv = (lambda u: torch.bmm(L, u)) if L.dim() == 3 else (lambda u: L @ u)
    out = [v]
    if degree >= 1:
        out.append(mv(v) - v)
    for _ in range(2, degree + 1):
        out.append(2 * (mv(out[-1]) - out[-1]) - out[-2])
    return out


def apply_p(L, theta: Tensor, v: Tensor, recursion: str = "bernstein") -> Tensor:
    """``p(L) v`` with ``p`` given by its Bernstein coefficients, by de Casteljau (``"bernstein"``,
    ``K(K+1)/2`` products) or through its exact Chebyshev expansion (``"chebyshev"``, ``K`` products)."""
    if recursion == "bernstein":
        return bernstein_apply(L, theta, v)
    M = bernstein_to_chebyshev(theta.numel() - 1, dtype=theta.dtype, device=theta.device)
    return chebyshev_apply(L, theta @ M, v)


def bernstein_values(theta: Tensor, lam: Tensor) -> Tensor:
    """``p(λ)`` pointwise, by the same recursion as :func:`bernstein_apply`."""
    return bernstein_apply(lambda v: lam * v, theta, torch.ones_like(lam))


def bernstein_dense(L: Tensor, theta: Tensor, recursion: str = "bernstein") -> Tensor:
    """Dense ``p(L)`` for a dense (batched) ``L``."""
    eye = torch.eye(L.size(-1), dtype=L.dtype, device=L.device).expand_as(L).contiguous()
    return apply_p(L, theta, eye, recursion)


def _check_degree(theta: Tensor) -> None:
    if theta.dim() != 1 or theta.numel() < 1:
        raise ValueError(f"theta must be a 1-D tensor of K+1 >= 1 Bernstein coefficients, got {tuple(theta.shape)}")
    if theta.numel() - 1 > MAX_DEGREE:
        raise ValueError(f"the degree of p is {theta.numel() - 1}; at most {MAX_DEGREE} is supported")


_RECURSIONS = ("bernstein", "chebyshev")


def _check_recursion(recursion) -> None:
    if recursion not in _RECURSIONS:
        raise ValueError(f"recursion must be one of {_RECURSIONS}, got {recursion!r}")


# dense path ------------------------------------------------------------------------------

def solve_dense(L: Tensor, mask: Tensor, theta: Tensor, q: Tensor, b: Tensor, *,
                recursion: str = "bernstein") -> Tensor:
    """Solve ``(p(L) + diag(q)) y = b`` for padded batches.

    Args:
        L: ``[B, n, n]`` dense Laplacians (from :func:`dense_laplacian`).
        mask: ``[B, n]`` real-node mask.
        theta: ``[K+1]`` Bernstein coefficients of ``p``.
        q: ``[B, n]`` positive scores (padding entries are ignored).
        b: ``[B, n, C]`` right-hand sides.
        recursion: how ``p(L)`` is formed (see :func:`apply_p`).
    """
    _check_degree(theta)
    _check_recursion(recursion)
    qq = torch.where(mask, q, torch.ones_like(q))
    A = bernstein_dense(L, theta, recursion) + torch.diag_embed(qq)
    return torch.linalg.solve(A, b * mask[..., None])


# CG path ---------------------------------------------------------------------------------

def cg(matvec, b: Tensor, *, tol: float = 1e-6, maxiter: int = 1000, precond: Tensor | None = None,
       x0: Tensor | None = None, on_fail: str = "raise", what: str = "CG") -> tuple[Tensor, int, float]:
    """(Preconditioned) conjugate gradient for an SPD operator, column-wise on ``b`` of shape ``[N, C]``.

    ``precond``: the inverse of a positive diagonal preconditioner, shape ``[N]`` (Jacobi: ``1/diag(A)``).
    Stops when every column has ``‖r‖ ≤ tol · ‖b‖``. Returns ``(y, iterations, max relative residual)``.
    A non-finite residual, or ``tol`` not reached within ``maxiter``, raises :class:`CGError`
    (``on_fail="warn"``: a ``RuntimeWarning`` and the current iterate).
    """
    if on_fail not in _ON_FAIL:
        raise ValueError(f"on_fail must be one of {_ON_FAIL}, got {on_fail!r}")
    x = torch.zeros_like(b) if x0 is None else x0.clone()
    r = b - matvec(x) if x0 is not None else b.clone()

    def M(v):
        return v if precond is None else v * precond[:, None]

    z = M(r)
    p = z.clone()
    rz = (r * z).sum(0)
    tiny = torch.finfo(b.dtype).tiny
    bnorm = b.norm(dim=0).clamp_min(tiny)
    it = 0
    rel = float((r.norm(dim=0) / bnorm).max()) if b.numel() else 0.0
    while math.isfinite(rel) and rel > tol and it < maxiter:
        Ap = matvec(p)
        alpha = _safe_div(rz, (p * Ap).sum(0))
        x.addcmul_(p, alpha)
        r.addcmul_(Ap, alpha, value=-1.0)
        z = M(r)
        rz_new = (r * z).sum(0)
        p = torch.addcmul(z, p, _safe_div(rz_new, rz))
        rz = rz_new
        it += 1
        rel = float((r.norm(dim=0) / bnorm).max())
    if not math.isfinite(rel) or not torch.isfinite(x).all():
        msg = (f"{what}: non-finite residual at iteration {it} (is p(L) + Q positive definite and finite? "
               "check q, p and the inputs)")
    elif rel > tol:
        msg = f"{what}: no convergence in {it} iterations (relative residual {rel:.2e} > tol {tol:.1e})"
    else:
        return x, it, rel
    if on_fail == "raise":
        raise CGError(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=3)
    return x, it, rel


def _safe_div(a: Tensor, b: Tensor) -> Tensor:
    # 0 where b == 0 (a column already solved exactly); NaN and inf pass through to the residual check
    nz = b != 0
    return torch.where(nz, a / torch.where(nz, b, torch.ones_like(b)), torch.zeros_like(a))


@torch.no_grad()
def _apply_p_fast(L: Tensor, coef: list[float], v: Tensor, recursion: str) -> Tensor:
    """:func:`apply_p` for a sparse/dense 2-D ``L`` without autograd, in place where it can (CG's inner loop).

    ``coef``: Bernstein coefficients (``"bernstein"``) or Chebyshev ones (``"chebyshev"``), as floats.
    """
    K = len(coef) - 1
    if recursion == "bernstein":
        b = [v * t for t in coef]
        for r in range(1, K + 1):
            for k in range(K - r + 1):
                b[k].addmm_(L, b[k + 1] - b[k], alpha=0.5)
        return b[0]
    out = v * coef[0]
    if K == 0:
        return out
    prev, cur = v, torch.addmm(v, L, v, beta=-1.0)  # (L - I) v
    out.add_(cur, alpha=coef[1])
    for j in range(2, K + 1):
        nxt = torch.addmm(prev, L, cur, beta=-1.0, alpha=2.0).add_(cur, alpha=-2.0)  # 2(L - I)cur - prev
        out.add_(nxt, alpha=coef[j])
        prev, cur = cur, nxt
    return out


def _coefficients(theta: Tensor, recursion: str) -> list[float]:
    if recursion == "bernstein":
        return theta.detach().double().tolist()
    return (theta.detach().double() @ bernstein_to_chebyshev(theta.numel() - 1)).tolist()


def _jacobi(theta: Tensor, q: Tensor) -> Tensor:
    """``1 / (q + p(1))``: the diagonal of ``p(L) + Q`` with ``diag p(L) ≈ p(diag L) = p(1)``.

    ``L_ii = 1`` for every node of a normalised Laplacian, so this is exact for isolated nodes and
    for ``p`` of degree ≤ 1; any positive diagonal keeps CG exact, only the iteration count depends on it.
    """
    one = torch.ones(1, dtype=theta.dtype, device=theta.device)
    return 1.0 / (q + bernstein_values(theta, one))


def _index_matvec(index: Tensor, values: Tensor, n: int):
    row, col = index

    def mv(v: Tensor) -> Tensor:
        return torch.zeros(n, v.size(1), dtype=v.dtype, device=v.device).index_add(0, row, values[:, None] * v[col])

    return mv


class _CGSolve(torch.autograd.Function):
    """``y = (p(L) + diag(q))^{-1} b`` with implicit differentiation.

    Backward: ``g = A^{-1} ∂ℓ/∂y`` (A is symmetric), then ``∂ℓ/∂b = g``, ``∂ℓ/∂q_i = -Σ_c g_ic y_ic``
    and ``∂ℓ/∂(θ, L) = -∂/∂(θ, L) Σ_c g_c^T p(L) y_c`` (autograd through one de Casteljau pass with
    ``g`` and ``y`` fixed).
    """

    @staticmethod
    def forward(ctx, b, q, theta, values, index, n, opts):
        L = _csr(index, values.detach(), n)
        pre = _jacobi(theta.detach(), q.detach()) if opts["precondition"] else None
        rec = opts["recursion"]
        coef, qc = _coefficients(theta, rec), q.detach()[:, None]

        def matvec(v):
            return _apply_p_fast(L, coef, v, rec).addcmul_(qc, v)

        y, it, _ = cg(matvec, b, tol=opts["tol"], maxiter=opts["maxiter"], precond=pre, on_fail=opts["on_fail"],
                      what="CG (forward)")
        ctx.save_for_backward(y, q, theta, values, index)
        ctx.L, ctx.n, ctx.opts, ctx.pre = L, n, opts, pre
        opts["iterations"].append(it)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        y, q, theta, values, index = ctx.saved_tensors
        L, opts = ctx.L, ctx.opts
        rec, K = opts["recursion"], theta.numel() - 1
        coef, qc = _coefficients(theta, rec), q.detach()[:, None]

        def matvec(v):
            return _apply_p_fast(L, coef, v, rec).addcmul_(qc, v)

        g, it, _ = cg(matvec, grad_y.contiguous(), tol=opts["tol"], maxiter=opts["maxiter"], precond=ctx.pre,
                      on_fail=opts["on_fail"], what="CG (backward)")
        opts["iterations"].append(it)
        grad_q = -(g * y).sum(1) if ctx.needs_input_grad[1] else None
        grad_theta = grad_values = None
        want_t, want_v = ctx.needs_input_grad[2], ctx.needs_input_grad[3]
        if want_t and not want_v and rec == "bernstein":  # ∂ℓ/∂θ_k = -y^T B_k(L) g
            grad_theta = -torch.stack([(y * u).sum() for u in bernstein_basis_apply(L, K, g)])
        elif want_t and not want_v:  # through c = θ M: ∂ℓ/∂θ = M ∂ℓ/∂c, ∂ℓ/∂c_j = -y^T T_j(L - I) g
            grad_c = -torch.stack([(y * u).sum() for u in chebyshev_basis_apply(L, K, g)])
            grad_theta = bernstein_to_chebyshev(K, dtype=theta.dtype, device=theta.device) @ grad_c
        elif want_t or want_v:
            with torch.enable_grad():
                t = theta.detach().requires_grad_(want_t)
                if want_v:
                    vals = values.detach().requires_grad_(True)
                    op = _index_matvec(index, vals, ctx.n)
                else:
                    op = L
                s = -(g * apply_p(op, t, y, rec)).sum()
                wrt = [z for z, w in ((t, want_t), (vals if want_v else None, want_v)) if w]
                grads = list(torch.autograd.grad(s, wrt))
            grad_theta = grads.pop(0) if want_t else None
            grad_values = grads.pop(0) if want_v else None
        return g, grad_q, grad_theta, grad_values, None, None, None


def solve_cg(L: Tensor | tuple[Tensor, Tensor], theta: Tensor, q: Tensor, b: Tensor, *, tol: float = 1e-6,
             maxiter: int = 1000, precondition: bool = True, on_fail: str = "raise",
             recursion: str = "bernstein", log: dict | None = None) -> Tensor:
    """Solve ``(p(L) + diag(q)) y = b`` with CG, differentiable in ``b``, ``q``, ``theta`` and ``L``'s entries.

    Args:
        L: a sparse ``[N, N]`` Laplacian, or its entries ``(index [2, nnz], values [nnz])`` (from
            :func:`laplacian_entries`; gradients then reach ``values``, hence edge weights).
        theta: ``[K+1]`` Bernstein coefficients of ``p`` (``p ≥ 0`` on ``[0, 2]`` when ``θ ≥ 0``).
        q: ``[N]`` positive scores. b: ``[N, C]`` right-hand sides.
        tol: relative residual per column. maxiter: iteration cap.
        precondition: Jacobi preconditioner ``1/(q + p(1))`` (on by default).
        on_fail: ``"raise"`` (:class:`CGError`) or ``"warn"`` on a non-finite residual or no convergence.
        recursion: how ``p(L) v`` is applied (see :func:`apply_p`): de Casteljau (default) or the
            exact Chebyshev expansion (``K`` instead of ``K(K+1)/2`` products with ``L`` per iteration).
        log: a dict that receives ``iterations`` (forward, then backward solves).
    """
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0 or not math.isfinite(tol):
        raise ValueError(f"tol must be a positive number, got {tol!r}")
    if isinstance(maxiter, bool) or not isinstance(maxiter, int) or maxiter < 1:
        raise ValueError(f"maxiter must be an integer >= 1, got {maxiter!r}")
    if on_fail not in _ON_FAIL:
        raise ValueError(f"on_fail must be one of {_ON_FAIL}, got {on_fail!r}")
    _check_degree(theta)
    _check_recursion(recursion)
    if isinstance(L, tuple):
        index, values = L
    else:
        Lc = L.to_sparse_coo().coalesce()
        index, values = Lc.indices(), Lc.values()
    opts = {"tol": float(tol), "maxiter": int(maxiter), "on_fail": on_fail, "precondition": bool(precondition),
            "recursion": recursion,
            "iterations": log.setdefault("iterations", []) if log is not None else []}
    return _CGSolve.apply(b, q, theta, values, index, b.size(0), opts)
