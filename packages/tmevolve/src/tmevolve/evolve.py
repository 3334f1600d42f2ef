"""TMEvolve: soft tissue regions evolved by intra-region diffusion, concept-gated boundary flux and reaction.

The paper's text and code are not public; this module is built from its abstract. Inferred (not from
the paper): the edge weights ``a_ij = 1/max(deg_i, deg_j)``, the bilinear concept gate
``g = σ(c_iᵀ M c_j + b)``, spectral-normalised flux and reaction maps, the regulariser's exact form
(cut + orthogonality, as in MinCutPool) and the gated attention over region means.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import spectral_norm
from torch_geometric.utils import degree, scatter

from tmevolve._sparse import graph_laplacian_apply

TASKS = ("classification", "survival", "regression")
DT_MAX = 1.0


def _check_int(name, v, lo):
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    return v


def _check_dt(dt):
    if isinstance(dt, bool) or not isinstance(dt, (int, float)) or not (0 < float(dt) <= DT_MAX):
        raise ValueError(f"dt must be a number in (0, {DT_MAX}] (the explicit-Euler stability bound), got {dt!r}")
    return float(dt)


def _check_concepts(concepts, width: int, what: str) -> torch.Tensor:
    c = torch.as_tensor(concepts, dtype=torch.float32)
    if c.ndim != 2 or c.shape[0] < 1:
        raise ValueError(f"concepts must be a (K, {width}) matrix, got shape {tuple(c.shape)}")
    if c.shape[1] != width:
        raise ValueError(f"concepts have width {c.shape[1]} but {what} is {width}")
    if not torch.isfinite(c).all():
        raise ValueError("concepts must be finite (found NaN or inf)")
    return c


def concept_scores(x: torch.Tensor, concepts: torch.Tensor, tau: float = 0.1) -> torch.Tensor:
    """``c_i = softmax_k(cos(x_i, concept_k) / τ)``: (N, K) similarities to fixed, label-agnostic concepts."""
    return torch.softmax(F.normalize(x, dim=-1) @ F.normalize(concepts, dim=-1).T / tau, dim=-1)


def edge_weights(edge_index: torch.Tensor, num_nodes: int, dtype=torch.float32) -> torch.Tensor:
    """``a_ij = 1 / max(deg_i, deg_j)``: symmetric and local, with ``Σ_j a_ij ≤ 1`` at every node."""
    deg = degree(edge_index[1], num_nodes, dtype=dtype)
    return 1.0 / torch.maximum(deg[edge_index[0]], deg[edge_index[1]]).clamp(min=1.0)


class TMEvolveConv(nn.Module):
    r"""One explicit-Euler step of the graph reaction-diffusion update of TMEvolve.

    .. math::
        h_i' = h_i + Δt\Big[\sum_j a_{ij} s_{ij}(h_j - h_i)
               + W \sum_j a_{ij}(1 - s_{ij})\, g(c_i, c_j)(h_j - h_i) + f(h_i)\Big],
        \quad s_{ij} = ⟨S_i, S_j⟩

    with ``a_ij = 1/max(deg_i, deg_j)``, the concept gate ``g = σ(10·(c_iᵀ M c_j + b))`` (1 without
    concepts), ``W`` and the reaction ``f(h) = W_2 tanh(W_1 h)`` spectral-normalised. Then the linear
    part has Gershgorin radius ``ρ ≤ 2`` and Δt ≤ 2/ρ = 1 is the explicit-Euler bound (checked at
    construction); with diffusion alone and Δt ≤ 1 the step is a convex combination (maximum
    principle) and conserves Σh. Every term is a sparse product with per-edge scalar weights.

    Args:
        channels: width d of ``x``.
        concepts: ``None`` (no gate), a (K, d) tensor (``c`` computed from ``x``), or an int K
            (``c`` (N, K) passed to ``forward``).
        dt: Euler step Δt in (0, 1].
        diffusion, flux, reaction: switch the three terms (ablations).

    Shapes: ``x`` (N, d), ``edge_index`` (2, E), ``S`` (N, R) row-stochastic → ``(x', flux)`` with
    ``flux`` (E,) the boundary-flux conductance ``a_ij (1 − s_ij) g_ij`` of each edge.
    """

    GATE_SCALE = 10.0  # inferred: the gate's logit scale, so a few hundred Adam steps can open or close it

    def __init__(self, channels: int, *, concepts=None, dt: float = 0.2, diffusion: bool = True,
                 flux: bool = True, reaction: bool = True):
        super().__init__()
        self.channels = _check_int("channels", channels, 1)
        self.dt = _check_dt(dt)
        self.diffusion, self.flux, self.reaction = bool(diffusion), bool(flux), bool(reaction)
        if concepts is None:
            self.num_concepts = 0
            self.register_buffer("concepts", None)
        elif isinstance(concepts, int) and not isinstance(concepts, bool):
            self.num_concepts = _check_int("concepts", concepts, 1)
            self.register_buffer("concepts", None)
        else:
            c = _check_concepts(concepts, channels, "channels")
            self.num_concepts = c.shape[0]
            self.register_buffer("concepts", c)
        k = max(self.num_concepts, 1)
        self.gate = nn.Parameter(torch.zeros(k, k))
        self.gate_bias = nn.Parameter(torch.zeros(()))
        self.lin_flux = spectral_norm(nn.Linear(channels, channels, bias=False))
        self.react1 = spectral_norm(nn.Linear(channels, channels))
        self.react2 = spectral_norm(nn.Linear(channels, channels))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.zeros_(self.gate)
        nn.init.zeros_(self.gate_bias)
        for lin in (self.lin_flux, self.react1, self.react2):
            lin.parametrizations.weight.original.data.copy_(nn.init.orthogonal_(torch.empty(self.channels, self.channels)))
        nn.init.zeros_(self.react1.bias)
        nn.init.zeros_(self.react2.bias)

    def edge_gate(self, c: torch.Tensor | None, edge_index: torch.Tensor) -> torch.Tensor | None:
        if self.num_concepts == 0:
            return None
        src, dst = edge_index
        return torch.sigmoid(self.GATE_SCALE * (((c[dst] @ self.gate) * c[src]).sum(-1) + self.gate_bias))

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, S: torch.Tensor, c: torch.Tensor | None = None):
        if x.ndim != 2 or x.shape[1] != self.channels:
            raise ValueError(f"x must have shape (N, {self.channels}), got {tuple(x.shape)}")
        if S.ndim != 2 or S.shape[0] != x.shape[0]:
            raise ValueError(f"S must have shape (N={x.shape[0]}, R), got {tuple(S.shape)}")
        if self.num_concepts:
            if c is None:
                if self.concepts is None:
                    raise ValueError("this layer was built with concepts=K: pass c (N, K) to forward")
                c = concept_scores(x, self.concepts)
            if c.shape != (x.shape[0], self.num_concepts):
                raise ValueError(f"c must have shape (N, {self.num_concepts}), got {tuple(c.shape)}")
        src, dst = edge_index
        a = edge_weights(edge_index, x.shape[0], x.dtype)
        s = (S[src] * S[dst]).sum(-1).clamp(0.0, 1.0)
        g = self.edge_gate(c, edge_index)
        w_flux = a * (1.0 - s) * (g if g is not None else 1.0)
        update = torch.zeros_like(x)
        if self.diffusion and self.flux:  # both Laplacians from one sparse product
            lap = graph_laplacian_apply(edge_index, torch.stack([a * s, w_flux], 1), x)
            update = update + lap[0] + self.lin_flux(lap[1])
        elif self.diffusion:
            update = update + graph_laplacian_apply(edge_index, a * s, x)
        elif self.flux:
            update = update + self.lin_flux(graph_laplacian_apply(edge_index, w_flux, x))
        if self.reaction:
            update = update + self.react2(torch.tanh(self.react1(x)))
        return x + self.dt * update, w_flux


class TMEvolve(nn.Module):
    r"""TMEvolve for MIL on WSI patch graphs: soft regions, T evolution steps, region attention pooling.

    ``S = softmax((MLP(x, c) + c P) / 0.2)`` (N, R) soft regions (``P`` (K, R) starts as concept k →
    region k) with the regulariser
    ``Tr(SᵀL_aS)/N + ‖SᵀS/‖SᵀS‖_F − I/√R‖_F`` (smoothness/cut and orthogonality, per slide);
    ``h⁰ = GELU(W_in x)``; T :class:`TMEvolveConv` steps gated by the concept scores ``c`` of the
    input (similarities to K fixed concept vectors); region means ``z_r = Σ_i S_ir [h_i, e_i] / Σ_i S_ir``
    of the evolved state and each patch's boundary exchange ``e_i = Σ_j (1 − s_ij) g_ij`` (inferred), pooled
    by gated attention; a head for classification (logits), survival (a Cox risk, or
    ``out_channels`` discrete-time hazard logits) or regression.

    Args:
        in_channels, hidden_channels, out_channels: widths.
        num_regions: R (1 = one region: diffusion everywhere, no boundaries).
        num_steps: T evolution steps.
        dt: Euler step in (0, 1].
        concepts: (K, in_channels) concept vectors (type prototypes; text embeddings from a file), or None.
        task: "classification", "survival" or "regression" (chooses the loss in :func:`tmevolve.loss_fn`).
        diffusion, flux, concept_gate: ablation switches (``concept_gate=False``: g = 1, the concepts
            still guide the regions).

    ``forward(x, edge_index, batch=None)`` → ``(out (B, out_channels), aux)`` with ``aux["S"]`` (N, R),
    ``aux["flux"]`` (E,) (mean conductance over steps), ``aux["reg_loss"]`` (scalar), ``aux["c"]``.

    Example:
        >>> from tmevolve import TMEvolve, SyntheticSlides
        >>> data = SyntheticSlides(2, grid=8, seed=0)[0]
        >>> out, aux = TMEvolve(64, 32, 1)(data.x, data.edge_index)
        >>> out.shape, aux["S"].shape
        (torch.Size([1, 1]), torch.Size([64, 8]))
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, *, num_regions: int = 8,
                 num_steps: int = 4, dt: float = 0.2, concepts=None, task: str = "classification",
                 diffusion: bool = True, flux: bool = True, concept_gate: bool = True, smooth_weight: float = 1.0,
                 ortho_weight: float = 1.0):
        super().__init__()
        self.in_channels = _check_int("in_channels", in_channels, 1)
        self.hidden_channels = _check_int("hidden_channels", hidden_channels, 1)
        self.out_channels = _check_int("out_channels", out_channels, 1)
        self.num_regions = _check_int("num_regions", num_regions, 1)
        self.num_steps = _check_int("num_steps", num_steps, 0)
        self.dt = _check_dt(dt)
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        self.task = task
        for name, v in (("smooth_weight", smooth_weight), ("ortho_weight", ortho_weight)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v >= 0) or v == float("inf"):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        self.smooth_weight, self.ortho_weight = float(smooth_weight), float(ortho_weight)
        self.diffusion, self.flux, self.concept_gate = bool(diffusion), bool(flux), bool(concept_gate)
        self.region_tau = 0.2  # inferred: sharp initial regions, so boundaries exist from the first step
        if concepts is not None:
            concepts = _check_concepts(concepts, in_channels, "in_channels")
        self.register_buffer("concepts", concepts)
        self.register_buffer("region_centroids", None)
        k = 0 if concepts is None else concepts.shape[0]
        h = hidden_channels
        self.lin_in = nn.Linear(in_channels, h)
        self.region_mlp = nn.Sequential(nn.Linear(in_channels + k, h), nn.GELU(), nn.Linear(h, num_regions))
        # concept-guided region formation (inferred): concept k starts as region k (mod R), then is learned
        self.region_concept = nn.Parameter(torch.zeros(k, num_regions)) if k else None
        self.convs = nn.ModuleList(
            TMEvolveConv(h, concepts=(k if concept_gate else None) or None, dt=dt, diffusion=diffusion, flux=flux) for _ in range(num_steps))
        self.att_v, self.att_u, self.att_w = nn.Linear(h + 1, h), nn.Linear(h + 1, h), nn.Linear(h, 1)
        self.head = nn.Sequential(nn.Linear(h + 1 + num_regions, h), nn.GELU(), nn.Linear(h, out_channels))
        self.reset_parameters()

    def config(self) -> dict:
        return {"in_channels": self.in_channels, "hidden_channels": self.hidden_channels,
                "out_channels": self.out_channels, "num_regions": self.num_regions, "num_steps": self.num_steps,
                "dt": self.dt, "task": self.task, "diffusion": self.diffusion, "flux": self.flux,
                "concept_gate": self.concept_gate,
                "smooth_weight": self.smooth_weight, "ortho_weight": self.ortho_weight}

    def reset_parameters(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Linear) and not hasattr(m, "parametrizations"):
                m.reset_parameters()
        for conv in self.convs:
            conv.reset_parameters()
        if self.region_concept is not None:
            with torch.no_grad():
                self.region_concept.zero_()
                k = self.region_concept.shape[0]
                self.region_concept[torch.arange(k), torch.arange(k) % self.num_regions] = 1.0

    def freeze_regions(self, centroids) -> TMEvolve:
        """Use frozen hard regions: each patch goes to its nearest centroid (k-means on features), (R, in)."""
        c = torch.as_tensor(centroids, dtype=torch.float32)
        if c.shape != (self.num_regions, self.in_channels):
            raise ValueError(f"centroids must have shape ({self.num_regions}, {self.in_channels}), got {tuple(c.shape)}")
        self.region_centroids = c
        return self

    def regions(self, x: torch.Tensor) -> torch.Tensor:
        if self.region_centroids is not None:
            return F.one_hot(torch.cdist(x, self.region_centroids.to(x)).argmin(-1), self.num_regions).to(x.dtype)
        if self.concepts is None:
            return torch.softmax(self.region_mlp(x) / self.region_tau, dim=-1)
        c = concept_scores(x, self.concepts)
        logits = self.region_mlp(torch.cat([x, c], -1)) + c @ self.region_concept
        return torch.softmax(logits / self.region_tau, dim=-1)

    def region_loss(self, S, edge_index, batch, num_graphs) -> torch.Tensor:
        n, r = S.shape
        src, dst = edge_index
        a = edge_weights(edge_index, n, S.dtype)
        cut = (a * (S[src] - S[dst]).pow(2).sum(-1)).sum() / (2 * n)
        if r == 1 or self.ortho_weight == 0:
            return self.smooth_weight * cut
        sts = scatter(S.unsqueeze(-1) * S.unsqueeze(-2), batch, dim=0, dim_size=num_graphs, reduce="sum")
        sts = sts / sts.flatten(1).norm(dim=-1).clamp(min=1e-12)[:, None, None]
        eye = torch.eye(r, dtype=S.dtype, device=S.device) / r**0.5
        ortho = (sts - eye).flatten(1).norm(dim=-1).mean()
        return self.smooth_weight * cut + self.ortho_weight * ortho

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor | None = None):
        if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[1] != self.in_channels:
            raise ValueError(f"x must be a (N, {self.in_channels}) tensor, got {getattr(x, 'shape', type(x))}")
        if x.shape[0] < 2:
            raise ValueError(f"a bag needs at least 2 patches, got {x.shape[0]}")
        if not torch.isfinite(x).all():
            raise ValueError("x must be finite (found NaN or inf in the features)")
        if edge_index.ndim != 2 or edge_index.shape[0] != 2:
            raise ValueError(f"edge_index must have shape (2, E), got {tuple(edge_index.shape)}")
        n = x.shape[0]
        if batch is None:
            batch = torch.zeros(n, dtype=torch.long, device=x.device)
        num_graphs = int(batch.max()) + 1
        S = self.regions(x)
        c = concept_scores(x, self.concepts) if self.concepts is not None else None
        h = F.gelu(self.lin_in(x))
        flux = torch.zeros(edge_index.shape[1], dtype=x.dtype, device=x.device)
        for conv in self.convs:
            h, w = conv(h, edge_index, S, c)
            flux = flux + w / len(self.convs)
        # region attention pooling
        # each patch's boundary exchange: its total flux conductance (zero without the flux term)
        # (Σ_j (1 − s_ij) g_ij: the number of open boundary edges, 0..deg)
        exchange = torch.zeros(n, dtype=x.dtype, device=x.device)
        if self.flux:
            exchange = exchange.index_add(0, edge_index[1], flux / edge_weights(edge_index, n, x.dtype))
        hx = torch.cat([h, exchange.unsqueeze(-1)], dim=-1)
        mass = scatter(S, batch, dim=0, dim_size=num_graphs, reduce="sum")  # (B, R)
        z = torch.stack([scatter(S[:, r:r + 1] * hx, batch, dim=0, dim_size=num_graphs, reduce="sum")
                         for r in range(self.num_regions)], dim=1) / mass.clamp(min=1e-6).unsqueeze(-1)
        logit = self.att_w(torch.tanh(self.att_v(z)) * torch.sigmoid(self.att_u(z))).squeeze(-1)
        logit = logit.masked_fill(mass < 1e-3, float("-inf"))
        att = torch.softmax(logit, dim=-1)
        # the slide: attention-pooled regions and each region's mean boundary exchange (region ids are shared)
        out = self.head(torch.cat([(att.unsqueeze(-1) * z).sum(1), z[..., -1]], -1))
        aux = {"S": S, "flux": flux, "c": c, "attention": att,
               "reg_loss": self.region_loss(S, edge_index, batch, num_graphs) if self.region_centroids is None
               else x.new_zeros(())}
        return out, aux

    # save / load ------------------------------------------------------------------------------
    def save(self, path) -> Path:
        """One self-contained file: config, concepts, frozen centroids and weights (``torch.save``)."""
        path = Path(path)
        torch.save({"format": "tmevolve/1", "config": self.config(), "state_dict": self.state_dict(),
                    "concepts": self.concepts, "region_centroids": self.region_centroids}, path)
        return path

    @classmethod
    def load(cls, path, map_location="cpu") -> TMEvolve:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no TMEvolve checkpoint at {path}")
        blob = torch.load(path, map_location=map_location, weights_only=True)
        if not isinstance(blob, dict) or blob.get("format") != "tmevolve/1":
            raise ValueError(f"{path} is not a TMEvolve checkpoint")
        model = cls(**blob["config"], concepts=blob["concepts"])
        if blob["region_centroids"] is not None:
            model.freeze_regions(blob["region_centroids"])
        model.load_state_dict(blob["state_dict"])
        return model.eval()
