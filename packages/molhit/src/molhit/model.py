"""The graph-transformer denoiser and the ``MolHIT`` model (training and sampling).

The denoiser reads noisy node and edge states, the step t and an optional property bin, and
predicts ``p(x_0 | x_t)`` for every atom and every atom pair. Attention scores get a per-head
bias from the edge features, and edges are updated from the pre-softmax scores (a small
DiGress-style graph transformer; sizes are ours).

Sampling is the Project-and-Noise (PN) sampler as we read it from the abstract (inferred):
at each step *project* — draw a clean graph x̂_0 from the denoiser's prediction (with
temperature and top-p) — then *noise* it back to step t-1 with the exact posterior
``q(x_{t-1} | x_t, x̂_0)``. ``sampler="ancestral"`` uses ``sum_k q(x_{t-1}|x_t,k) p(k|x_t)``.
Classifier-free guidance mixes conditional and unconditional log-probabilities,
``(1+w) log p(x0|c) - w log p(x0|∅)``.
"""

from __future__ import annotations

import logging
import math
import time

import torch
from einops import rearrange
from torch import nn
from torch.nn import functional as F

from molhit.baselines import AbsorbingDiffusion, MarginalDiffusion
from molhit.diffusion import HierarchicalDiffusion, categorical
from molhit.encoding import AtomEncoding, decoupled_encoding

log = logging.getLogger(__name__)
PROCESSES = ("hierarchical", "absorbing", "marginal")


class GraphTransformerLayer(nn.Module):
    """Self-attention over atoms with edge-biased scores and an edge update.

    Shapes: h (B, n, d), e (B, n, n, de), node_mask (B, n) bool.
    """

    def __init__(self, d: int, de: int, heads: int):
        super().__init__()
        if d % heads:
            raise ValueError(f"d_model ({d}) must be divisible by n_heads ({heads})")
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.e_bias = nn.Linear(de, heads)
        self.out = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.e_ff = nn.Sequential(nn.Linear(de + heads, de), nn.GELU(), nn.Linear(de, de))
        self.ln1, self.ln2, self.ln_e = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(de)

    def forward(self, h, e, node_mask):
        q, k, v = rearrange(self.qkv(h), "b n (three h c) -> three b h n c", three=3, h=self.heads)
        scores = torch.einsum("bhic,bhjc->bijh", q, k) / math.sqrt(q.shape[-1]) + self.e_bias(e)
        att = scores.masked_fill(~node_mask[:, None, :, None], float("-inf")).softmax(dim=2)
        o = rearrange(torch.einsum("bijh,bhjc->bhic", att, v), "b h n c -> b n (h c)")
        h = self.ln1(h + self.out(o))
        h = self.ln2(h + self.ff(h))
        e = self.ln_e(e + self.e_ff(torch.cat([e, scores], -1)))
        return h, e


class GraphTransformer(nn.Module):
    """Denoiser: noisy states -> logits over clean atom and bond classes.

    Args:
        node_states, edge_states: sizes of the noisy state spaces (inputs).
        node_classes, edge_classes: K for atoms and bonds (outputs).
        n_layers, d_model, d_edge, n_heads: sizes.
        cond_bins: number of property bins for guidance (0: unconditional); bin ``cond_bins`` is "no condition".
    """

    def __init__(self, node_states, edge_states, node_classes, edge_classes, *, n_layers=4, d_model=64,
                 d_edge=16, n_heads=4, cond_bins=0):
        super().__init__()
        self.node_in = nn.Embedding(node_states, d_model)
        self.edge_in = nn.Embedding(edge_states, d_edge)
        self.time = nn.Sequential(nn.Linear(1, d_model), nn.GELU(), nn.Linear(d_model, d_model))
        self.cond = nn.Embedding(cond_bins + 1, d_model) if cond_bins else None
        self.layers = nn.ModuleList(GraphTransformerLayer(d_model, d_edge, n_heads) for _ in range(n_layers))
        self.edge_sum = nn.Linear(d_edge, d_model)
        self.node_out = nn.Linear(d_model, node_classes)
        self.edge_out = nn.Linear(d_edge, edge_classes)

    def forward(self, xt, et, t_frac, node_mask, cond=None):
        h = self.node_in(xt) + self.time(t_frac.view(-1, 1, 1).float())
        if self.cond is not None:
            if cond is None:  # the "no condition" bin
                cond = torch.full((h.shape[0],), self.cond.num_embeddings - 1, dtype=torch.long, device=h.device)
            h = h + self.cond(cond)[:, None, :]
        e = self.edge_in(et)
        # sum (not softmax) over incident edges: the node sees its noisy bond counts (valence)
        h = h + self.edge_sum((e * node_mask[:, None, :, None]).sum(2))
        for layer in self.layers:
            h, e = layer(h, e, node_mask)
        el = self.edge_out(e)
        return self.node_out(h), 0.5 * (el + el.transpose(1, 2))


def _top_p(logp: torch.Tensor, top_p: float) -> torch.Tensor:
    if top_p >= 1.0:
        return logp
    p, idx = logp.exp().sort(-1, descending=True)
    drop = (p.cumsum(-1) - p) >= top_p
    drop_orig = torch.zeros_like(drop).scatter(-1, idx, drop)
    return logp.masked_fill(drop_orig, float("-inf"))


def make_process(name: str, K: int, T: int, phi=None, marginal=None):
    """The noise process ``name`` (hierarchical | absorbing | marginal) on K classes."""
    if name == "hierarchical":
        return HierarchicalDiffusion(phi, T)
    if name == "absorbing":
        return AbsorbingDiffusion(K, T)
    if name == "marginal":
        return MarginalDiffusion(K, T, marginal)
    raise ValueError(f"process must be one of {PROCESSES}, got {name!r}")


class MolHIT:
    """Discrete graph diffusion for molecules: a noise process, an atom encoding and a denoiser.

    Args:
        encoding: the atom encoding (default: decoupled, DAE).
        process: ``"hierarchical"`` (HDDM, MolHIT), ``"absorbing"`` or ``"marginal"`` (baselines).
        T: diffusion steps. n_layers, d_model, d_edge, n_heads: denoiser sizes.
        cond_bins: property bins for classifier-free guidance (0: none).
        device: torch device.

    Example:
        >>> m = MolHIT(process="hierarchical", T=20, n_layers=1, d_model=32)
        >>> m.fit(["CCO", "c1ccccc1", "CC(=O)O"], steps=5)          # doctest: +SKIP
        >>> m.sample(4, temperature=1.0, top_p=0.9)                 # doctest: +SKIP
    """

    def __init__(self, encoding: AtomEncoding | None = None, *, process: str = "hierarchical", T: int = 100,
                 n_layers: int = 4, d_model: int = 64, d_edge: int = 16, n_heads: int = 4, cond_bins: int = 0,
                 edge_weight: float = 5.0, device: str = "cpu"):
        if process not in PROCESSES:
            raise ValueError(f"process must be one of {PROCESSES}, got {process!r}")
        self.encoding = encoding or decoupled_encoding()
        self.process_name, self.T, self.device = process, int(T), torch.device(device)
        self.sizes = dict(n_layers=n_layers, d_model=d_model, d_edge=d_edge, n_heads=n_heads, cond_bins=cond_bins)
        self.cond_bins, self.edge_weight = cond_bins, edge_weight
        self.net = None

    # set-up ------------------------------------------------------------------------------
    def _build(self, data: dict) -> None:
        enc = self.encoding
        K, B = enc.num_atom_types, enc.num_bond_types
        valid = torch.arange(data["X"].shape[1])[None] < data["n_atoms"][:, None]
        node_m = torch.bincount(data["X"][valid], minlength=K).double().numpy() + 1e-3
        pair = valid[:, :, None] & valid[:, None, :] & ~torch.eye(valid.shape[1], dtype=torch.bool)[None]
        edge_m = torch.bincount(data["E"][pair], minlength=B).double().numpy() + 1e-3
        self.node_process = make_process(self.process_name, K, self.T, enc.phi, node_m).to(self.device)
        self.edge_process = make_process(self.process_name, B, self.T, [0] + [1] * (B - 1), edge_m).to(self.device)
        self.n_atoms_dist = torch.bincount(data["n_atoms"], minlength=data["X"].shape[1] + 1).float()
        self.max_atoms = data["X"].shape[1]
        self.net = GraphTransformer(self.node_process.num_states, self.edge_process.num_states, K, B,
                                    **self.sizes).to(self.device)

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.net.parameters()) if self.net is not None else 0

    def _noisy(self, X, E, t, gen=None):
        xt = self.node_process.q_sample(X, t, gen)
        et = self.edge_process.q_sample(E, t, gen)
        et = torch.triu(et, 1)
        return xt, et + et.transpose(1, 2)

    # training ----------------------------------------------------------------------------
    def loss(self, X, E, n_atoms, cond=None, gen=None):
        """x_0 cross-entropy on atoms + ``edge_weight`` × on atom pairs (DiGress's objective)."""
        b, n = X.shape
        t = torch.randint(1, self.T + 1, (b,), generator=gen, device=X.device)
        xt, et = self._noisy(X, E, t, gen)
        mask = torch.arange(n, device=X.device)[None] < n_atoms[:, None]
        if cond is not None:
            drop = torch.rand(b, generator=gen, device=X.device) < 0.1
            cond = torch.where(drop, torch.full_like(cond, self.cond_bins), cond)
        nl, el = self.net(xt, et, t / self.T, mask, cond)
        pair = mask[:, :, None] & mask[:, None, :] & torch.triu(torch.ones(n, n, dtype=torch.bool, device=X.device), 1)
        return F.cross_entropy(nl[mask], X[mask]) + self.edge_weight * F.cross_entropy(el[pair], E[pair])

    def fit(self, data, *, steps: int = 1000, batch_size: int = 64, lr: float = 1e-3, seed: int = 0,
            cond=None, time_limit: float | None = None, log_every: int = 100) -> list[float]:
        """Train on ``data`` (SMILES list or the dict of :func:`molhit.data.graphs_from_smiles`).

        Args:
            cond: optional property bin per molecule (int tensor in 0..cond_bins-1) for guidance.
            time_limit: stop after this many seconds (steps done are logged).

        Returns:
            The loss of every step.

        Raises:
            RuntimeError: the loss became NaN/inf (names the step).
        """
        from molhit.data import graphs_from_smiles

        if isinstance(data, (list, tuple)):
            data = graphs_from_smiles(data, self.encoding)
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        if cond is not None and (self.cond_bins == 0 or len(cond) != len(data["X"])):
            raise ValueError("cond needs cond_bins > 0 and one bin per molecule")
        if self.net is None:
            self._build(data)
        gen = torch.Generator(device=self.device).manual_seed(seed)
        opt = torch.optim.AdamW(self.net.parameters(), lr=lr, weight_decay=1e-4)
        X, E, N = (data["X"].to(self.device), data["E"].to(self.device), data["n_atoms"].to(self.device))
        C = cond.to(self.device) if cond is not None else None
        self.net.train()
        losses, t0 = [], time.perf_counter()
        for step in range(steps):
            idx = torch.randint(0, len(X), (batch_size,), generator=gen, device=self.device)
            nmax = int(N[idx].max())
            loss = self.loss(X[idx, :nmax], E[idx, :nmax, :nmax], N[idx], None if C is None else C[idx], gen)
            if not torch.isfinite(loss):
                raise RuntimeError(f"training diverged: loss {loss.item()} at step {step}")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
            if log_every and step % log_every == 0:
                log.info("%s step %d loss %.4f", self.process_name, step, losses[-1])
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                log.info("%s: time limit reached after %d steps", self.process_name, step + 1)
                break
        self.net.eval()
        return losses

    def save(self, path) -> None:
        """Save the denoiser weights (``torch.save`` of the state dict)."""
        torch.save(self.net.state_dict(), path)

    def load(self, path) -> None:
        """Load weights saved by :meth:`save` into a model built by :meth:`fit` on the same data."""
        self.net.load_state_dict(torch.load(path, weights_only=True, map_location=self.device))

    # sampling ----------------------------------------------------------------------------
    @torch.no_grad()
    def generate(self, n: int, *, temperature: float = 1.0, top_p: float = 1.0, guidance: float = 0.0,
                 cond: int | None = None, sampler: str = "pn", seed: int = 0, batch_size: int = 256):
        """Sample ``n`` graphs; returns ``(X, E, n_atoms)`` lists of numpy arrays."""
        if self.net is None:
            raise RuntimeError("fit the model before sampling")
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        if sampler not in ("pn", "ancestral"):
            raise ValueError(f"sampler must be 'pn' or 'ancestral', got {sampler!r}")
        if cond is not None and not 0 <= cond < self.cond_bins:
            raise ValueError(f"cond must be a bin in 0..{self.cond_bins - 1}, got {cond}")
        gen = torch.Generator(device=self.device).manual_seed(seed)
        out = []
        for start in range(0, n, batch_size):
            out.extend(self._generate_batch(min(batch_size, n - start), temperature, top_p, guidance, cond,
                                            sampler, gen))
        return out

    def _log_p0(self, xt, et, t, mask, cond, guidance, temperature, top_p):
        b = xt.shape[0]
        tf = torch.full((b,), t / self.T, device=self.device)
        if cond is None:
            nl, el = self.net(xt, et, tf, mask, None)
            nl, el = nl.log_softmax(-1), el.log_softmax(-1)
        else:
            c = torch.full((b,), cond, device=self.device)
            u = torch.full((b,), self.cond_bins, device=self.device)
            nc, ec = self.net(xt, et, tf, mask, c)
            nu, eu = self.net(xt, et, tf, mask, u)
            nl = (1 + guidance) * nc.log_softmax(-1) - guidance * nu.log_softmax(-1)
            el = (1 + guidance) * ec.log_softmax(-1) - guidance * eu.log_softmax(-1)
        nl = _top_p((nl / temperature).log_softmax(-1), top_p)
        el = _top_p((el / temperature).log_softmax(-1), top_p)
        return nl.softmax(-1), el.softmax(-1)

    def _generate_batch(self, b, temperature, top_p, guidance, cond, sampler, gen):
        n_atoms = torch.multinomial(self.n_atoms_dist, b, replacement=True, generator=gen).to(self.device)
        n = int(n_atoms.max())
        mask = torch.arange(n, device=self.device)[None] < n_atoms[:, None]
        xt = self.node_process.prior_sample((b, n), gen)
        et = torch.triu(self.edge_process.prior_sample((b, n, n), gen), 1)
        et = et + et.transpose(1, 2)
        iu = torch.triu(torch.ones(n, n, dtype=torch.bool, device=self.device), 1)
        for t in range(self.T, 0, -1):
            p0n, p0e = self._log_p0(xt, et, t, mask, cond, guidance, temperature, top_p)
            if sampler == "pn":
                x0, e0 = categorical(p0n, gen), categorical(p0e, gen)
                pn = self.node_process.posterior_x0(xt, x0, t)
                pe = self.edge_process.posterior_x0(et, e0, t)
            else:
                pn = self.node_process.posterior(xt, p0n, t)
                pe = self.edge_process.posterior(et, p0e, t)
            xt = categorical(pn, gen)
            et = categorical(pe, gen) * iu
            et = et + et.transpose(1, 2)
        X, E = xt.cpu().numpy(), et.cpu().numpy()
        out = []
        for i, k in enumerate(n_atoms.tolist()):
            out.append((X[i, :k], E[i, :k, :k]))
        return out

    def decode(self, graphs, *, lenient: bool = False) -> list[str | None]:
        """Graphs -> canonical SMILES (``None`` where invalid)."""
        from rdkit import Chem

        res = []
        for a, b in graphs:
            if a.max(initial=0) >= self.encoding.num_atom_types:  # a leftover noise state: invalid
                res.append(None)
                continue
            mol = self.encoding.decode(a, b, lenient=lenient)
            res.append(None if mol is None else Chem.MolToSmiles(mol))
        return res

    def sample(self, n: int, *, temperature: float = 1.0, top_p: float = 1.0, guidance: float = 0.0,
               cond: int | None = None, sampler: str = "pn", seed: int = 0, lenient: bool = False) -> list[str | None]:
        """Sample ``n`` molecules as canonical SMILES (``None`` for a strictly invalid graph).

        Args:
            temperature: divides the denoiser's log-probabilities (< 1 sharper).
            top_p: nucleus sampling over each atom's/pair's predicted classes.
            guidance: classifier-free guidance weight w (used with ``cond``).
            cond: the property bin to steer towards (needs ``cond_bins > 0``).
            lenient: keep the largest valid fragment instead of rejecting the graph.
        """
        graphs = self.generate(n, temperature=temperature, top_p=top_p, guidance=guidance, cond=cond,
                               sampler=sampler, seed=seed)
        return self.decode(graphs, lenient=lenient)
