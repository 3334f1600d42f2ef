"""Matrix functions GraphMuon needs: polar factors and the inverse square root of a covariance.

- :func:`newton_schulz` is the quintic Newton–Schulz iteration of Muon, written to match
  ``torch.optim.Muon`` operation for operation (same coefficients, bfloat16, transpose rule),
  so that GraphMuon with Σ = I reproduces Muon's update bit for bit.
- :func:`svd_polar` is the exact polar factor U Vᵀ (the reference the iteration approximates).
- :func:`inverse_sqrt` returns Σ^(-1/2) by ``torch.linalg.eigh`` for small matrices and by a
  coupled Newton (Denman–Beavers type) iteration for large ones.
"""

from __future__ import annotations

import torch
from torch import Tensor

# Keller Jordan's quintic coefficients, as in torch.optim.Muon
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
NS_STEPS = 5
NS_EPS = 1e-7


def _check_matrix(x, name: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {tuple(x.shape)}")


def newton_schulz(g: Tensor, steps: int = NS_STEPS, coefficients: tuple[float, float, float] = NS_COEFFICIENTS,
                  eps: float = NS_EPS, dtype: torch.dtype = torch.bfloat16) -> Tensor:
    r"""Approximate polar factor of ``g`` by the quintic Newton–Schulz iteration.

    .. math::  X_0 = G/\|G\|_F,\qquad X_{k+1} = aX_k + b(X_kX_k^\top)X_k + c(X_kX_k^\top)^2X_k

    With Muon's default coefficients the singular values land in roughly [0.7, 1.2] rather than
    exactly 1 (by design: faster, and harmless for training). With ``coefficients=(1.5, -0.5, 0.0)``
    this is the classical cubic iteration, which converges to the exact polar factor.

    Args:
        g: ``(m, n)`` matrix.
        steps: number of iterations (< 100).
        coefficients: ``(a, b, c)``.
        eps: floor of the Frobenius norm used to normalise ``g``.
        dtype: working precision (``torch.bfloat16`` as in ``torch.optim.Muon``).

    Returns:
        ``(m, n)`` matrix in ``dtype``.
    """
    _check_matrix(g, "g")
    if not 0 < int(steps) < 100:
        raise ValueError(f"steps must be in [1, 99], got {steps}")
    if len(coefficients) != 3:
        raise ValueError(f"coefficients must be three numbers (a, b, c), got {coefficients!r}")
    a, b, c = coefficients
    x = g.to(dtype)
    tall = g.size(0) > g.size(1)
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)  # out of place: never the caller's tensor (g.to may return g itself)
    for _ in range(int(steps)):
        gram = x @ x.T
        poly = torch.addmm(gram, gram, gram, beta=b, alpha=c)
        x = torch.addmm(x, poly, x, beta=a)
    if tall:
        x = x.T
    return x


def svd_polar(g: Tensor) -> Tensor:
    """Exact polar factor ``U Vᵀ`` of ``g = U S Vᵀ`` (thin SVD), in ``g``'s dtype."""
    _check_matrix(g, "g")
    u, _, vh = torch.linalg.svd(g, full_matrices=False)
    return u @ vh


def _check_spd(sigma: Tensor) -> None:
    _check_matrix(sigma, "sigma")
    if sigma.size(0) != sigma.size(1):
        raise ValueError(f"sigma must be square, got shape {tuple(sigma.shape)}")
    if not torch.isfinite(sigma).all():
        raise ValueError("sigma must be finite (found NaN or inf)")


def inverse_sqrt_eigh(sigma: Tensor, floor: float = 0.0) -> Tensor:
    """Σ^(-1/2) = V diag(λ^(-1/2)) Vᵀ from ``torch.linalg.eigh`` (eigenvalues clamped at ``floor``).

    The decomposition runs in ``sigma``'s dtype (float32 or float64; half precision is promoted to
    float32), falling back to float64 if the float32 solver fails to converge.
    """
    _check_spd(sigma)
    sym = 0.5 * (sigma + sigma.T)
    work = sym.to(torch.promote_types(sym.dtype, torch.float32))
    try:
        lam, vec = torch.linalg.eigh(work)
    except torch.linalg.LinAlgError:
        lam, vec = torch.linalg.eigh(work.double())
    tiny = torch.finfo(lam.dtype).tiny
    lam = lam.clamp(min=max(float(floor), tiny))
    return ((vec * lam.rsqrt()) @ vec.T).to(sigma.dtype)


def inverse_sqrt_newton(sigma: Tensor, iters: int = 40, tol: float = 1e-6) -> Tensor:
    r"""Σ^(-1/2) by the coupled Newton–Schulz iteration (matrix multiplies only).

    With :math:`c = \|\Sigma\|_F`, :math:`Y_0 = \Sigma/c`, :math:`Z_0 = I`:
    :math:`T = (3I - Z_kY_k)/2`, :math:`Y_{k+1} = Y_kT`, :math:`Z_{k+1} = TZ_k`; then
    :math:`Y_k \to (\Sigma/c)^{1/2}` and :math:`Z_k \to (\Sigma/c)^{-1/2}`, so Σ^(-1/2) = Z/√c.
    Converges for SPD Σ; a condition number κ needs about log(κ)/log(1.5) + 5 iterations.
    """
    _check_spd(sigma)
    if int(iters) < 1:
        raise ValueError(f"iters must be >= 1, got {iters}")
    s = 0.5 * (sigma + sigma.T)
    d = s.size(0)
    eye = torch.eye(d, dtype=s.dtype, device=s.device)
    c = torch.linalg.matrix_norm(s).clamp(min=torch.finfo(s.dtype).tiny)
    y, z = s / c, eye.clone()
    for _ in range(int(iters)):
        t = 0.5 * (3.0 * eye - z @ y)
        y, z = y @ t, t @ z
        if torch.linalg.matrix_norm(t - eye) <= tol * d**0.5:
            break
    return z / c.sqrt()


def inverse_sqrt(sigma: Tensor, method: str = "auto", eigh_max_dim: int = 512, newton_iters: int = 40) -> Tensor:
    """Σ^(-1/2) of a symmetric positive-definite ``(d, d)`` matrix.

    Args:
        sigma: SPD matrix (damp it first; see :class:`graphmuon.GraphMuon` ``eps``).
        method: ``"eigh"``, ``"newton"`` or ``"auto"`` (eigh for ``d <= eigh_max_dim``, else Newton).
        eigh_max_dim: the size up to which ``"auto"`` uses eigh.
        newton_iters: iteration cap of the Newton method.
    """
    if method not in ("auto", "eigh", "newton"):
        raise ValueError(f"method must be 'auto', 'eigh' or 'newton', got {method!r}")
    _check_spd(sigma)
    if method == "eigh" or (method == "auto" and sigma.size(0) <= eigh_max_dim):
        return inverse_sqrt_eigh(sigma)
    return inverse_sqrt_newton(sigma, iters=newton_iters)
