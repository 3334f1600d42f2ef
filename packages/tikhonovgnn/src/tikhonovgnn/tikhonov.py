r"""The Tikhonov layer (Tremblay, Ricaud, Bianchi, NeurIPS 2026; arXiv 2605.28578).

.. math::

    R = (p(L) + Q)^{-1} Q, \qquad
    Rx = \arg\min_y\; (y - x)^\top Q (y - x) + y^\top p(L)\, y,

with :math:`L` the normalised Laplacian, :math:`Q = \mathrm{diag}(q)` positive node-importance
scores produced by a Q-network, and :math:`p` a polynomial that is non-negative on the spectrum
``[0, 2]`` (Bernstein basis with non-negative coefficients), so :math:`p(L) + Q` is positive definite.

Gauge. :math:`(c\,p, c\,Q)` gives the same :math:`R` for every :math:`c > 0`. The layer fixes the
gauge by normalising ``q`` to mean 1 on every graph *before* the solve; ``p`` is a model parameter
shared by all graphs. The explanation of a graph is then the pair ``(q, p)`` with ``mean(q) = 1``,
comparable across graphs, and distinct pairs give distinct operators (see
:func:`recover_explanation`).

Inferred from the abstract (the paper's code is not public): the Bernstein parameterisation, the
mean-``q`` gauge, the softplus Q-network, ``q`` computed from the layer's input features, and the
read-outs of :class:`TikhonovGNN`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import MLP, global_add_pool, global_max_pool, global_mean_pool
from torch_geometric.nn.models import GIN
from torch_geometric.utils import scatter, to_undirected

from tikhonovgnn.solve import (
    MAX_DEGREE,
    bernstein_apply,
    bernstein_values,
    check_graph,
    dense_laplacian,
    laplacian_entries,
    solve_cg,
    solve_dense,
)

__all__ = [
    "BernsteinPolynomial",
    "QNetwork",
    "TikhonovLayer",
    "TikhonovGNN",
    "tikhonov_objective",
    "propagation_matrix",
    "recover_explanation",
    "bernstein_reference",
]

_SOLVERS = ("auto", "dense", "cg")

_POOLS = {"sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}


def _positive_int(name: str, v, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {v!r}")
    return v


# the positive polynomial ---------------------------------------------------------------

def bernstein_reference(theta: Tensor, lam: Tensor) -> Tensor:
    """``p(λ)`` from the explicit Bernstein sum in float64 (a reference independent of de Casteljau)."""
    theta, lam = theta.detach().to(torch.float64), torch.as_tensor(lam, dtype=torch.float64)
    K = theta.numel() - 1
    t = lam / 2
    return sum(float(theta[k]) * math.comb(K, k) * t**k * (1 - t) ** (K - k) for k in range(K + 1))


class BernsteinPolynomial(nn.Module):
    r"""A polynomial of degree ``K`` that is non-negative on ``[0, 2]`` by construction.

    :math:`p(\lambda) = \sum_{k=0}^K \theta_k \binom{K}{k} (\lambda/2)^k (1-\lambda/2)^{K-k}` with
    :math:`\theta_k = \mathrm{softplus}(w_k) \ge 0`; every Bernstein basis function is ``≥ 0`` on
    ``[0, 2]``, so is ``p``. ``p(0) = θ_0`` and ``p(2) = θ_K``. Evaluated, and applied to ``L`` by both
    solvers, with de Casteljau's recursion (:func:`~tikhonovgnn.solve.bernstein_apply`), so the ``p``
    that :meth:`TikhonovLayer.explain` reports is the ``p`` the layer applies, at any degree up to
    :data:`~tikhonovgnn.solve.MAX_DEGREE` (64) in float32 and float64.

    Args:
        degree: ``0 ≤ K ≤ 64`` (the cost of one application is ``K(K+1)/2`` products with ``L``).
        init: ``"linear"`` starts at the classical graph Tikhonov regulariser ``p(λ) = scale · λ``
            (``θ_k = scale · 2k/K``); ``"flat"`` at ``p ≡ scale`` (then ``R`` is diagonal: no propagation).
        scale: the initial scale.
    """

    def __init__(self, degree: int = 4, *, init: str = "linear", scale: float = 1.0):
        super().__init__()
        self.degree = _positive_int("degree", degree, 0)
        if degree > MAX_DEGREE:
            raise ValueError(f"degree must be <= {MAX_DEGREE}, got {degree} (one application of p(L) costs "
                             f"K(K+1)/2 = {degree * (degree + 1) // 2} sparse products with L)")
        if init not in ("linear", "flat"):
            raise ValueError(f"init must be 'linear' or 'flat', got {init!r}")
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (0 < scale < math.inf):
            raise ValueError(f"scale must be a positive finite number, got {scale!r}")
        self.init, self.scale = init, float(scale)
        self.raw = nn.Parameter(torch.empty(degree + 1))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        K = max(self.degree, 1)
        if self.init == "linear":
            theta = torch.tensor([self.scale * 2 * k / K for k in range(self.degree + 1)], dtype=torch.float64)
        else:
            theta = torch.full((self.degree + 1,), self.scale, dtype=torch.float64)
        theta = theta.clamp_min(1e-4)  # softplus^-1 needs θ > 0
        with torch.no_grad():
            self.raw.copy_(torch.log(torch.expm1(theta)).to(self.raw.dtype))

    @property
    def theta(self) -> Tensor:
        """The non-negative Bernstein coefficients ``[K+1]``."""
        return F.softplus(self.raw)

    def monomial(self, dtype: torch.dtype | None = None) -> Tensor:
        """Coefficients ``c`` with ``p(λ) = Σ_k c_k λ^k`` (float64 conversion).

        For diagnostics such as :func:`recover_explanation` only: the monomial form is ill-conditioned
        (float32 loses every digit from degree ~15), so the layer never applies it.
        """
        K = self.degree
        M = torch.zeros(K + 1, K + 1, dtype=torch.float64, device=self.raw.device)
        for k in range(K + 1):
            for i in range(K - k + 1):
                M[k, k + i] = math.comb(K, k) * math.comb(K - k, i) * (-1.0) ** i * 2.0 ** (-(k + i))
        return (self.theta.to(torch.float64) @ M).to(dtype or self.raw.dtype)

    def forward(self, lam: Tensor) -> Tensor:
        """``p(λ)`` elementwise (de Casteljau, the recursion the solvers apply to ``L``)."""
        lam = torch.as_tensor(lam, dtype=self.raw.dtype, device=self.raw.device)
        return bernstein_values(self.theta, lam)

    def extra_repr(self) -> str:
        return f"degree={self.degree}"


# the Q-network ---------------------------------------------------------------------------

class QNetwork(nn.Module):
    """Node-importance scores ``q_i = softplus(f(x)_i) + eps > 0`` from a network of any depth.

    Args:
        in_channels: input feature size.
        hidden_channels: width of the hidden layers.
        num_layers: depth (``>= 1``).
        kind: ``"mlp"`` (PyG ``MLP``, node-wise) or ``"gin"`` (PyG ``GIN``, sees the topology).
        eps: floor added after the softplus, keeps ``Q`` well conditioned.
    """

    def __init__(self, in_channels: int, hidden_channels: int = 32, num_layers: int = 2, *, kind: str = "mlp",
                 eps: float = 1e-3):
        super().__init__()
        _positive_int("in_channels", in_channels)
        _positive_int("hidden_channels", hidden_channels)
        _positive_int("num_layers", num_layers)
        if kind not in ("mlp", "gin"):
            raise ValueError(f"kind must be 'mlp' or 'gin', got {kind!r}")
        self.kind, self.eps = kind, float(eps)
        if kind == "gin":
            self.body = GIN(in_channels, hidden_channels, num_layers)
            width = hidden_channels
        elif num_layers > 1:
            self.body = MLP([in_channels] + [hidden_channels] * (num_layers - 1), norm=None, plain_last=False)
            width = hidden_channels
        else:
            self.body, width = None, in_channels
        self.out = nn.Linear(width, 1)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.body is not None:
            self.body.reset_parameters()
        # start near q ≡ 1 with small variations, away from the flat tail of the softplus
        nn.init.normal_(self.out.weight, std=0.1 / math.sqrt(self.out.in_features))
        nn.init.constant_(self.out.bias, math.log(math.expm1(1.0)))

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        if self.body is None:
            h = x
        elif self.kind == "mlp":
            h = self.body(x)
        else:
            h = self.body(x, edge_index).relu()
        return F.softplus(self.out(h).squeeze(-1)) + self.eps


# the layer -------------------------------------------------------------------------------

def _work_dtype(dtype: torch.dtype) -> torch.dtype:
    # half/bfloat16 have no LAPACK solve nor sparse CPU kernels: solve in float32, cast back
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


class TikhonovLayer(nn.Module):
    r"""The Tikhonov layer :math:`X' = (p(L) + Q)^{-1} Q\, X W + b`.

    ``q`` comes from a :class:`QNetwork` on the layer's input and is normalised to mean 1 per graph
    (the gauge); ``p`` is a :class:`BernsteinPolynomial`, applied in the Bernstein basis by both solvers.

    Args:
        in_channels, out_channels: feature sizes.
        degree: degree ``K`` of ``p`` (``≤ 64``).
        q_hidden, q_layers, q_kind: the Q-network (see :class:`QNetwork`).
        solver: ``"dense"`` (``torch.linalg.solve`` on the padded batch), ``"cg"`` (Jacobi-preconditioned
            conjugate gradient with implicit differentiation) or ``"auto"``: graphs are grouped in size
            buckets ``(2^{j-1}, 2^j]`` padded only within their bucket; buckets up to
            ``dense_max_nodes`` nodes are solved dense, all larger graphs together by CG.
        cg_tol: relative residual of CG; ``None``: ``1e-5`` in float32, ``1e-10`` in float64.
        cg_maxiter: CG iteration cap.
        cg_on_fail: ``"raise"`` (:class:`~tikhonovgnn.solve.CGError`) or ``"warn"`` when CG meets a
            non-finite residual or does not converge.
        cg_precondition: the Jacobi preconditioner ``1/(q + p(1))``.
        dense_max_nodes: the largest bucket solved dense under ``solver="auto"``.
        symmetrize: ``False`` (default) rejects a directed ``edge_index`` (or asymmetric ``edge_weight``)
            with a ``ValueError``; ``True`` symmetrises it first (PyG ``to_undirected``, weights of the
            two directions averaged).
        p_recursion: how both solvers apply ``p(L)``: ``"bernstein"`` (default), de Casteljau's
            recursion on the Bernstein coefficients, ``K(K+1)/2`` products with ``L``; ``"chebyshev"``,
            the same ``p`` through its exact Chebyshev expansion (coefficients from a well-conditioned
            float64 map), ``K`` products: the fast choice for CG on large graphs. Both apply the reported
            ``p`` to float round-off up to degree 64.
        bias: add a learnable bias.
        p_init, p_scale: initial ``p`` (see :class:`BernsteinPolynomial`): ``"linear"`` is the classical
            ``p(L) = L`` (low-pass), ``"flat"`` has no spectral preference.

    Shapes: ``x [N, in]``, ``edge_index [2, E]``, ``batch [N]`` (PyG block-diagonal batches; edges may
    not join two graphs), ``edge_weight [E]`` (non-negative, differentiable on both solve paths) →
    ``[N, out]``. Works in float64, float32 and (solving in float32) float16/bfloat16.

    Example:
        >>> layer = TikhonovLayer(8, 4, degree=3)
        >>> out = layer(torch.randn(10, 8), torch.tensor([[0, 1], [1, 0]]))
        >>> out.shape
        torch.Size([10, 4])
    """

    def __init__(self, in_channels: int, out_channels: int, *, degree: int = 4, q_hidden: int = 32,
                 q_layers: int = 2, q_kind: str = "mlp", solver: str = "auto", cg_tol: float | None = None,
                 cg_maxiter: int = 1000, cg_on_fail: str = "raise", cg_precondition: bool = True,
                 dense_max_nodes: int = 64, symmetrize: bool = False, p_recursion: str = "bernstein",
                 bias: bool = True, p_init: str = "linear", p_scale: float = 1.0):
        super().__init__()
        _positive_int("in_channels", in_channels)
        _positive_int("out_channels", out_channels)
        if solver not in _SOLVERS:
            raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}")
        if cg_tol is not None and (isinstance(cg_tol, bool) or not isinstance(cg_tol, (int, float))
                                   or not 0 < cg_tol < 1):
            raise ValueError(f"cg_tol must be None or a number in (0, 1), got {cg_tol!r}")
        if p_recursion not in ("bernstein", "chebyshev"):
            raise ValueError(f"p_recursion must be 'bernstein' or 'chebyshev', got {p_recursion!r}")
        if cg_on_fail not in ("raise", "warn"):
            raise ValueError(f"cg_on_fail must be 'raise' or 'warn', got {cg_on_fail!r}")
        for name, v in (("cg_precondition", cg_precondition), ("symmetrize", symmetrize), ("bias", bias)):
            if not isinstance(v, bool):
                raise TypeError(f"{name} must be a bool, got {type(v).__name__}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.solver, self.cg_tol = solver, None if cg_tol is None else float(cg_tol)
        self.cg_maxiter = _positive_int("cg_maxiter", cg_maxiter)
        self.cg_on_fail, self.cg_precondition, self.symmetrize = cg_on_fail, cg_precondition, symmetrize
        self.p_recursion = p_recursion
        self.dense_max_nodes = _positive_int("dense_max_nodes", dense_max_nodes)
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        self.q_net = QNetwork(in_channels, q_hidden, q_layers, kind=q_kind)
        self.poly = BernsteinPolynomial(degree, init=p_init, scale=p_scale)
        self.last_cg_iterations: list[int] = []  # forward and backward CG iterations of the last solve
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.lin.reset_parameters()
        if self.bias is not None:
            nn.init.zeros_(self.bias)
        self.q_net.reset_parameters()
        self.poly.reset_parameters()

    def _graph(self, x, edge_index, batch, edge_weight):
        if self.symmetrize:
            check_graph(x, edge_index, edge_weight, batch)
            edge_index, edge_weight = to_undirected(edge_index, edge_weight, num_nodes=x.size(0), reduce="mean")
        else:
            check_graph(x, edge_index, edge_weight, batch, symmetric=True)
        return edge_index, edge_weight

    # gauge-fixed importance scores
    def importance(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None) -> Tensor:
        """``q`` normalised to mean 1 on every graph of the batch, shape ``[N]``."""
        q = self.q_net(x, edge_index)
        if batch is None:
            return q / q.mean()
        mean = scatter(q, batch, dim=0, reduce="mean")
        return q / mean[batch]

    def plan(self, batch: Tensor | None, n: int, solver: str | None = None) -> list[tuple[str, Tensor | None]]:
        """How a batch is solved: ``[(solver, graph ids or None for all), ...]``.

        ``"auto"`` groups graphs in buckets ``(2^{j-1}, 2^j]`` of node count, padded only within the
        bucket (so padding wastes at most 8x a graph's dense cost); buckets up to ``dense_max_nodes``
        nodes go dense, every larger graph goes to one block-diagonal CG solve.
        """
        solver = solver or self.solver
        if solver != "auto":
            return [(solver, None)]
        counts = torch.tensor([n]) if batch is None else torch.bincount(batch).cpu()
        if int(counts.max()) <= self.dense_max_nodes and int(counts.max()) <= 2 * max(int(counts.min()), 1):
            return [("dense", None)]
        big = counts > self.dense_max_nodes
        if bool(big.all()):
            return [("cg", None)]
        bucket = torch.ceil(torch.log2(counts.clamp_min(1).double())).long()
        out = [("dense", torch.nonzero((bucket == j) & ~big).flatten()) for j in torch.unique(bucket[~big]).tolist()]
        if bool(big.any()):
            out.append(("cg", torch.nonzero(big).flatten()))
        return out

    def _solve(self, solver, h, q, entries, batch):
        n = h.size(0)
        theta = self.poly.theta.to(h.dtype)
        b = q[:, None] * h
        if solver == "dense":
            from torch_geometric.utils import to_dense_batch

            L, mask = dense_laplacian(entries[0], n, batch, dtype=h.dtype, entries=entries)
            bd, _ = to_dense_batch(b, batch, max_num_nodes=L.size(-1))
            qd, _ = to_dense_batch(q[:, None], batch, max_num_nodes=L.size(-1))
            return solve_dense(L, mask, theta, qd.squeeze(-1), bd, recursion=self.p_recursion)[mask]
        tol = self.cg_tol if self.cg_tol is not None else (1e-10 if h.dtype == torch.float64 else 1e-5)
        log = {}
        y = solve_cg(entries, theta, q, b, tol=tol, maxiter=self.cg_maxiter, precondition=self.cg_precondition,
                     on_fail=self.cg_on_fail, recursion=self.p_recursion, log=log)
        self.last_cg_iterations = log["iterations"]  # the backward solve appends to this list
        return y

    def propagate(self, h: Tensor, edge_index: Tensor, q: Tensor, batch: Tensor | None = None,
                  edge_weight: Tensor | None = None, solver: str | None = None) -> Tensor:
        """``(p(L) + diag(q))^{-1} diag(q) h`` for given ``q`` (no gauge fixing, no input checks here)."""
        n, out_dtype = h.size(0), h.dtype
        work = _work_dtype(h.dtype)
        h, q = h.to(work), q.to(work)
        entries = laplacian_entries(edge_index, n, edge_weight, dtype=work)
        plan = self.plan(batch, n, solver)
        if len(plan) == 1:
            return self._solve(plan[0][0], h, q, entries, batch).to(out_dtype)
        # solve each bucket on its own sub-batch, then put the rows back in place
        ei, w = entries
        ys, idx = [], []
        for how, graphs in plan:
            sel = torch.zeros(int(batch.max()) + 1, dtype=torch.bool, device=h.device)
            sel[graphs.to(h.device)] = True
            node_sel = sel[batch]
            nodes = torch.nonzero(node_sel).flatten()
            relabel = torch.full((n,), -1, dtype=torch.long, device=h.device)
            relabel[nodes] = torch.arange(nodes.numel(), device=h.device)
            keep = node_sel[ei[0]]
            sub = (relabel[ei[:, keep]], w[keep])
            sub_batch = torch.unique_consecutive(batch[nodes], return_inverse=True)[1]
            ys.append(self._solve(how, h[nodes], q[nodes], sub, sub_batch))
            idx.append(nodes)
        order = torch.argsort(torch.cat(idx))
        return torch.cat(ys)[order].to(out_dtype)

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None,
                edge_weight: Tensor | None = None) -> Tensor:
        edge_index, edge_weight = self._graph(x, edge_index, batch, edge_weight)
        q = self.importance(x, edge_index, batch)
        # apply W on the side with fewer columns: R(XW) = (RX)W
        if self.out_channels <= self.in_channels:
            out = self.propagate(self.lin(x), edge_index, q, batch, edge_weight)
        else:
            out = self.lin(self.propagate(x, edge_index, q, batch, edge_weight))
        return out + self.bias if self.bias is not None else out

    @torch.no_grad()
    def explain(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None, *,
                grid: int = 101) -> dict:
        """The built-in explanation: gauge-fixed ``q`` and the curve ``p(λ)`` on ``[0, 2]``.

        Returns ``{"q": [N], "p": callable, "lambda": [grid], "p_values": [grid],
        "response": [grid], "theta": [K+1]}``; ``response = 1 / (1 + p(λ))`` is the spectral response of
        ``R`` when ``q ≡ 1`` (low-pass if it decreases with λ, high-pass if it increases). ``p`` is
        evaluated by the recursion the solvers apply to ``L``.
        """
        edge_index, _ = self._graph(x, edge_index, batch, None)
        q = self.importance(x, edge_index, batch)
        lam = torch.linspace(0, 2, grid, dtype=self.poly.raw.dtype, device=self.poly.raw.device)
        pv = self.poly(lam)
        poly = self.poly

        def p(lmbda) -> Tensor:
            with torch.no_grad():
                return poly(lmbda)

        return {"q": q, "p": p, "lambda": lam, "p_values": pv, "response": 1.0 / (1.0 + pv),
                "theta": self.poly.theta.detach().clone()}

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, solver={self.solver!r}"


# a model ---------------------------------------------------------------------------------

class TikhonovGNN(nn.Module):
    """A one-Tikhonov-layer model for graph or node classification.

    ``task="graph"``: ``h = [x ‖ TikhonovLayer(x)]`` → node-wise MLP → ``pool`` → linear.
    ``task="node"``: ``h = MLP(x)`` → ``TikhonovLayer(h)`` (predict, then propagate, as APPNP).

    Args:
        in_channels, hidden_channels, out_channels: feature sizes.
        task: ``"graph"`` or ``"node"``.
        pool: ``"sum"``, ``"mean"`` or ``"max"`` (graph task).
        dropout: dropout in the MLPs.
        **layer_kwargs: passed to :class:`TikhonovLayer` (``degree``, ``q_kind``, ``solver``, ...).
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, *, task: str = "graph",
                 pool: str = "sum", dropout: float = 0.0, **layer_kwargs):
        super().__init__()
        if task not in ("graph", "node"):
            raise ValueError(f"task must be 'graph' or 'node', got {task!r}")
        if pool not in _POOLS:
            raise ValueError(f"pool must be one of {sorted(_POOLS)}, got {pool!r}")
        self.task, self.pool = task, pool
        if task == "graph":
            self.tikhonov = TikhonovLayer(in_channels, hidden_channels, **layer_kwargs)
            self.node_mlp = MLP([in_channels + hidden_channels, hidden_channels, hidden_channels], dropout=dropout,
                                norm=None)
            self.head = nn.Linear(hidden_channels, out_channels)
        else:
            self.encoder = MLP([in_channels, hidden_channels, hidden_channels], dropout=dropout, norm=None)
            self.tikhonov = TikhonovLayer(hidden_channels, out_channels, **layer_kwargs)

    def reset_parameters(self) -> None:
        for m in self.children():
            m.reset_parameters()

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None,
                edge_weight: Tensor | None = None) -> Tensor:
        """Logits ``[num_graphs, out]`` (graph task) or ``[N, out]`` (node task); ``edge_weight`` reaches
        the Laplacian of the Tikhonov layer (the Q-network ignores it)."""
        if self.task == "node":
            return self.tikhonov(self.encoder(x), edge_index, batch, edge_weight)
        h = torch.cat([x, self.tikhonov(x, edge_index, batch, edge_weight)], -1)
        h = self.node_mlp(h)
        if batch is None:
            batch = torch.zeros(x.size(0), dtype=torch.long, device=x.device)
        pooled = _POOLS[self.pool](h, batch)
        return self.head(pooled)

    @torch.no_grad()
    def explain(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None, **kw) -> dict:
        """The Tikhonov layer's ``(q, p)`` explanation for this input."""
        inp = self.encoder(x) if self.task == "node" else x
        return self.tikhonov.explain(inp, edge_index, batch, **kw)


# references and diagnostics -------------------------------------------------------------

def propagation_matrix(L: Tensor, q: Tensor, p: Callable[[Tensor], Tensor] | Tensor) -> Tensor:
    """Dense ``R = (p(L) + Q)^{-1} Q`` from a dense Laplacian, via its eigendecomposition.

    ``p``: a callable on eigenvalues, or Bernstein coefficients ``θ`` (evaluated by the explicit sum of
    :func:`bernstein_reference`). Independent of the solvers' de Casteljau path (a reference in tests
    and diagnostics).
    """
    lam, U = torch.linalg.eigh(L)
    pv = p(lam) if callable(p) else bernstein_reference(p, lam).to(L.dtype)
    P = (U * pv) @ U.T
    return torch.linalg.solve(P + torch.diag(q), torch.diag(q))


def tikhonov_objective(y: Tensor, x: Tensor, L: Tensor, q: Tensor, theta: Tensor) -> Tensor:
    """``(y - x)^T Q (y - x) + y^T p(L) y`` summed over channels (``L`` sparse or dense, ``θ`` Bernstein)."""
    d = y - x
    return (q[:, None] * d * d).sum() + (y * bernstein_apply(L, theta, y)).sum()


def recover_explanation(R: Tensor, L: Tensor, degree: int) -> tuple[Tensor, Tensor, float]:
    r"""Recover the gauge-fixed explanation ``(q, c)`` from an operator ``R`` alone.

    From :math:`R^{-1} = I + Q^{-1} p(L)` we get :math:`Q (R^{-1} - I) = p(L) = \sum_k c_k L^k`, a
    homogeneous linear system in ``(q, c)``. Its null space is one-dimensional when the support of
    ``p(L)`` is connected (the gauge); fixing ``mean(q) = 1`` picks the unique solution, so distinct
    gauge-fixed explanations give distinct operators.

    Returns ``(q, c, gap)``; ``gap`` = ratio of the two smallest singular values of the system
    (≪ 1 means the null space is one-dimensional, i.e. identifiable).
    """
    R, L = R.detach(), L.detach()
    n = R.size(0)
    M = torch.linalg.inv(R) - torch.eye(n, dtype=R.dtype)
    powers = [torch.eye(n, dtype=R.dtype)]
    for _ in range(degree):
        powers.append(powers[-1] @ L)
    # unknowns: q (n) and c (degree + 1); equations: every entry of Q M - Σ c_k L^k = 0
    cols = [(torch.eye(n, dtype=R.dtype)[:, :, None] * M[None, :, :]).reshape(n, -1).T]
    cols.append(-torch.stack([P.reshape(-1) for P in powers], 1))
    A = torch.cat(cols, 1)
    _, S, Vh = torch.linalg.svd(A, full_matrices=False)
    v = Vh[-1]
    q, c = v[:n], v[n:]
    scale = q.mean()
    gap = float(S[-1] / S[-2]) if S.numel() > 1 else 0.0
    return q / scale, c / scale, gap
