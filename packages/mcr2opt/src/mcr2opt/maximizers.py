"""Closed-form local maximizers of the regularised MCR² objective and the distance to their set.

Wang et al. (ICML 2024) show that the local maximizers of F (λ > 0) put each class on its own
subspace, the subspaces mutually orthogonal, with all nonzero singular values of a class equal.
Derivation used here (ours, consistent with theirs): on orthogonal class subspaces F splits over
the squared singular values x of each class, f_k(x) = ½log(1+αx) − (n_k/2n)log(1+α_k x) − λx/2,
and since n_kα_k/n = α, f_k'(x) = 0 is the quadratic

    λαα_k x² + (λ(α + α_k) − α(α_k − α)) x + λ = 0 .

For 0 < λ < λ*_k = α(α_k − α)/(√α + √α_k)² it has two positive roots; the larger, x_k⁺, is a
local maximum of f_k (the smaller a strict saddle). So, in row form, the set 𝒳* of local
maximizers with class ranks r = (r_k) is

    Z_k = √x_k⁺ · V_k U_kᵀ,  V_k ∈ St(n_k, r_k),  U = [U_1 … U_K] ∈ St(d, Σr_k),

a smooth orbit of O(d) × Π_k O(n_k) (F is constant on it). At λ = λ*_k the roots merge:
the critical set is degenerate (f_k' ≤ 0 with a double zero), which is the negative control.

Distance. dist(Z, 𝒳*) = min over (U, V) of (Σ_k ‖Z_k − s_k V_k U_kᵀ‖²)^½ with s_k = √x_k⁺.
It is computed by block-coordinate orthogonal Procrustes: V_k = polar(Z_k U_k) per class,
then U = polar([s_1 Z_1ᵀV_1, …, s_K Z_KᵀV_K]) jointly, started from the classes' top singular
subspaces. Every iterate is a point of 𝒳*, so the value is an **upper bound** on the distance;
each step cannot increase it, and within the reach of 𝒳* (where the nearest point is unique)
the iteration converges to that nearest point, so the bound is exact there up to the stopping
tolerance. The residual is formed explicitly (never ‖Z‖² − 2⟨·⟩ + …), so distances down to
~1e-15 ‖Z‖ are resolved in float64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from mcr2opt.objective import _check_Z, class_index
from paperworks.utils import check_float, check_int


def critical_lam(n_k: int, n: int, d: int, *, eps: float) -> float:
    """λ*_k = α(α_k − α)/(√α + √α_k)²: above it class k has no nonzero maximizer."""
    a, ak = d / (n * eps**2), d / (n_k * eps**2)
    return a * (ak - a) / (math.sqrt(a) + math.sqrt(ak)) ** 2


def maximizer_singular_values(class_sizes: Sequence[int], d: int, *, eps: float, lam: float) -> list[float]:
    """s_k = √x_k⁺, the common nonzero singular value of class k at a local maximizer."""
    sizes = _check_sizes(class_sizes)
    d = check_int(d, "d")
    eps = check_float(eps, "eps", minimum=0.0, open_minimum=True)
    lam = check_float(lam, "lam", minimum=0.0)
    if lam == 0:
        raise ValueError("lam must be > 0: without regularisation F has no finite maximizer (singular values grow)")
    n = sum(sizes)
    a = d / (n * eps**2)
    out = []
    for k, nk in enumerate(sizes):
        ak = d / (nk * eps**2)
        A, B, C = lam * a * ak, lam * (a + ak) - a * (ak - a), lam
        disc = B * B - 4 * A * C
        if disc < 0 and disc > -1e-10 * B * B:   # the double root at λ = λ*_k, up to rounding
            disc = 0.0
        if disc < 0 or B >= 0:
            raise ValueError(f"lam={lam:g} is too large: class {k} (n_k={nk}) has no nonzero maximizer; "
                             f"need lam <= {critical_lam(nk, n, d, eps=eps):.6g}")
        out.append(math.sqrt((-B + math.sqrt(disc)) / (2 * A)))
    return out


def _check_sizes(class_sizes) -> list[int]:
    if isinstance(class_sizes, (str, bytes)) or not isinstance(class_sizes, Sequence):
        raise TypeError(f"class_sizes must be a sequence of ints, got {type(class_sizes).__name__}")
    if len(class_sizes) < 2:
        raise ValueError(f"class_sizes needs at least 2 classes, got {len(class_sizes)}")
    return [check_int(v, f"class_sizes[{i}]") for i, v in enumerate(class_sizes)]


def default_ranks(class_sizes: Sequence[int], d: int) -> list[int]:
    """d split as evenly as possible over the classes, capped by n_k (the global-max allocation for equal classes)."""
    K = len(class_sizes)
    r = [min(nk, d // K + (k < d % K)) for k, nk in enumerate(class_sizes)]
    return r


def _check_ranks(ranks, sizes, d) -> list[int]:
    if isinstance(ranks, (str, bytes)) or not isinstance(ranks, Sequence) or len(ranks) != len(sizes):
        raise ValueError(f"ranks must be a sequence of {len(sizes)} ints, got {ranks!r}")
    r = [check_int(v, f"ranks[{i}]", minimum=0, maximum=min(sizes[i], d)) for i, v in enumerate(ranks)]
    if sum(r) > d:
        raise ValueError(f"ranks must sum to at most d={d}, got {sum(r)}")
    return r


def _stiefel(rows: int, cols: int, gen: torch.Generator) -> Tensor:
    q, r = torch.linalg.qr(torch.randn(rows, max(cols, 1), generator=gen, dtype=torch.float64))
    return (q * torch.sign(torch.diagonal(r)))[:, :cols]


def closed_form_maximizer(class_sizes: Sequence[int], d: int, *, eps: float, lam: float,
                          ranks: Sequence[int] | None = None,
                          generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """A random point of the closed-form local-maximizer set 𝒳* (float64).

    Args:
        class_sizes: n_k per class (≥ 2 classes).
        d: feature dimension.
        eps, lam: the objective's ε > 0 and λ (0 < λ ≤ λ*_k for every class).
        ranks: r_k per class (Σ r_k ≤ d, r_k ≤ n_k); default :func:`default_ranks`.
        generator: a ``torch.Generator`` for the random orthogonal frames.

    Returns:
        ``(Z, y)``: Z of shape ``(Σn_k, d)`` with class blocks in order, y the labels 0..K−1.

    Example:
        >>> Z, y = closed_form_maximizer([25, 25, 25, 25], 16, eps=0.5, lam=0.1)
        >>> Z.shape
        torch.Size([100, 16])
    """
    sizes = _check_sizes(class_sizes)
    s = maximizer_singular_values(sizes, d, eps=eps, lam=lam)
    r = default_ranks(sizes, d) if ranks is None else _check_ranks(ranks, sizes, d)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    U = _stiefel(d, d, gen)
    blocks, start = [], 0
    for nk, rk, sk in zip(sizes, r, s):
        Uk = U[:, start:start + rk]
        start += rk
        blocks.append(sk * _stiefel(nk, rk, gen) @ Uk.T)
    y = torch.cat([torch.full((nk,), k, dtype=torch.long) for k, nk in enumerate(sizes)])
    return torch.cat(blocks), y


def _polar(M: Tensor) -> Tensor:
    P, _, Qh = torch.linalg.svd(M, full_matrices=False)
    return P @ Qh


def _ranks_from_svals(svals, s, d) -> list[int]:
    cand = [(float(sv[i]) / s[k], k) for k, sv in enumerate(svals) for i in range(len(sv)) if sv[i] > s[k] / 2]
    cand.sort(reverse=True)
    r = [0] * len(svals)
    for _, k in cand[:d]:
        r[k] += 1
    return r


def infer_ranks(Z: Tensor, y, *, eps: float, lam: float) -> list[int]:
    """Class ranks of the component of 𝒳* nearest Z: singular values above s_k/2, at most d in all."""
    Z = _check_Z(Z)
    idx = class_index(y, Z.shape[0], Z.device)
    s = maximizer_singular_values([len(ix) for ix in idx], Z.shape[1], eps=eps, lam=lam)
    return _ranks_from_svals([torch.linalg.svdvals(Z[ix].double()) for ix in idx], s, Z.shape[1])


def distance_to_maximizers(Z: Tensor, y, *, eps: float, lam: float, ranks: Sequence[int] | None = None,
                           n_iter: int = 500, tol: float = 1e-15, return_point: bool = False):
    """dist(Z, 𝒳*) modulo the orthogonal freedom, by block-coordinate Procrustes (float64).

    An upper bound (the distance to a point of 𝒳*), exact within the reach of the set at
    convergence (see the module doc). ``ranks=None`` infers the class ranks from Z
    (:func:`infer_ranks`: singular values above half the maximizer's), the component of 𝒳*
    nearest Z. ``return_point=True`` also returns the nearest point found.
    """
    Z = _check_Z(Z).detach().double()
    n_iter = check_int(n_iter, "n_iter")
    idx = class_index(y, Z.shape[0], Z.device)
    sizes = [len(ix) for ix in idx]
    d = Z.shape[1]
    s = maximizer_singular_values(sizes, d, eps=eps, lam=lam)
    Zs = [Z[ix] for ix in idx]
    svds = [torch.linalg.svd(Zk, full_matrices=False) for Zk in Zs]
    r = _ranks_from_svals([sv[1] for sv in svds], s, d) if ranks is None else _check_ranks(ranks, sizes, d)
    live = [k for k in range(len(idx)) if r[k] > 0]

    def residual(U_blocks, V):
        tot = sum(float((Zs[k] ** 2).sum()) for k in range(len(idx)) if r[k] == 0)
        for k in live:
            tot += float(((Zs[k] - s[k] * V[k] @ U_blocks[k].T) ** 2).sum())
        return tot

    # start: each class's top-r_k right singular vectors, made jointly orthonormal
    U0 = [svds[k][2][: r[k]].T for k in live]
    U = _polar(torch.cat(U0, 1)) if live else torch.zeros(d, 0, dtype=Z.dtype)
    best, point = math.inf, None
    for _ in range(n_iter):
        blocks, start = {}, 0
        for k in live:
            blocks[k] = U[:, start:start + r[k]]
            start += r[k]
        V = {k: _polar(Zs[k] @ blocks[k]) for k in live}
        val = residual(blocks, V)
        if val < best:
            improved = best - val
            best, point = val, (blocks, V)
            if improved <= tol * max(val, 1e-300) + 1e-300:
                break
        else:
            break
        if not live:
            break
        U = _polar(torch.cat([s[k] * Zs[k].T @ V[k] for k in live], 1))
    dist = math.sqrt(max(best, 0.0))
    if not return_point:
        return dist
    Zstar = torch.zeros_like(Z)
    blocks, V = point if point is not None else ({}, {})
    for k in live:
        Zstar[idx[k]] = s[k] * V[k] @ blocks[k].T
    return dist, Zstar


def manifold_dimension(class_sizes: Sequence[int], d: int, ranks: Sequence[int]) -> int:
    """dim 𝒳* for ranks r: dim St(d, R) + Σ_k dim St(n_k, r_k) − Σ_k dim O(r_k), R = Σ r_k.

    (Z_k = s_k V_k U_kᵀ is unchanged by V_k → V_kO, U_k → U_kO for O ∈ O(r_k); dim St(m, p) = mp − p(p+1)/2.)
    """
    sizes = _check_sizes(class_sizes)
    r = _check_ranks(ranks, sizes, check_int(d, "d"))
    R = sum(r)

    def st(m, p):
        return m * p - p * (p + 1) // 2

    return st(d, R) + sum(st(nk, rk) - rk * (rk - 1) // 2 for nk, rk in zip(sizes, r))


def hessian_spectrum(Z: Tensor, y, *, eps: float, lam: float, h: float = 1e-5) -> Tensor:
    """Eigenvalues (ascending) of the Hessian of F at Z, by central differences of the analytic gradient.

    O(nd) gradient calls and an (nd) × (nd) eigen-solve: meant for the miniature (nd ≲ 2,000). At a
    point of 𝒳* the Hessian is negative semi-definite with nullity dim 𝒳* when the set is
    non-degenerate (Morse–Bott), which is the first-order form of the error bound, κ = 1/λ_min⁺(−H).
    """
    from mcr2opt.objective import value_and_grad

    Z = _check_Z(Z).detach().double()
    h = check_float(h, "h", minimum=0.0, open_minimum=True)
    N = Z.numel()
    H = torch.empty(N, N, dtype=torch.float64)
    E = torch.zeros(N, dtype=torch.float64)
    for i in range(N):
        E[i] = h
        D = E.view_as(Z)
        H[i] = ((value_and_grad(Z + D, y, eps=eps, lam=lam)[1] - value_and_grad(Z - D, y, eps=eps, lam=lam)[1])
                / (2 * h)).flatten()
        E[i] = 0.0
    return torch.linalg.eigvalsh((H + H.T) / 2)
