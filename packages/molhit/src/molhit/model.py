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
import warnings
from pathlib import Path

import torch
from einops import rearrange
from torch import nn
from torch.nn import functional as F

from molhit.baselines import AbsorbingDiffusion, MarginalDiffusion
from molhit.diffusion import HierarchicalDiffusion, categorical
from molhit.encoding import AtomEncoding, decoupled_encoding
from paperworks import atomic_torch_save, check_float, check_int

log = logging.getLogger(__name__)
PROCESSES = ("hierarchical", "absorbing", "marginal")
MODEL_FORMAT = "molhit-model/1"


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
        cond_bins: bins per guided property (an int for one property, a sequence for several, 0/() for
            none); for property p, bin ``cond_bins[p]`` is "no condition".
    """

    def __init__(self, node_states, edge_states, node_classes, edge_classes, *, n_layers=4, d_model=64,
                 d_edge=16, n_heads=4, cond_bins=0):
        super().__init__()
        self.node_in = nn.Embedding(node_states, d_model)
        self.edge_in = nn.Embedding(edge_states, d_edge)
        self.time = nn.Sequential(nn.Linear(1, d_model), nn.GELU(), nn.Linear(d_model, d_model))
        self.cond_bins = _as_bins(cond_bins)
        self.cond = nn.ModuleList(nn.Embedding(b + 1, d_model) for b in self.cond_bins) if self.cond_bins else None
        self.layers = nn.ModuleList(GraphTransformerLayer(d_model, d_edge, n_heads) for _ in range(n_layers))
        self.edge_sum = nn.Linear(d_edge, d_model)
        self.node_out = nn.Linear(d_model, node_classes)
        self.edge_out = nn.Linear(d_edge, edge_classes)

    def forward(self, xt, et, t_frac, node_mask, cond=None):
        """xt (B, n), et (B, n, n), t_frac (B,), node_mask (B, n), cond (B, P) bins or None (no condition)."""
        h = self.node_in(xt) + self.time(t_frac.view(-1, 1, 1).float())
        if self.cond is not None:
            if cond is None:  # the "no condition" bins
                cond = torch.tensor(self.cond_bins, device=h.device).expand(h.shape[0], -1)
            cond = cond.view(h.shape[0], -1)
            h = h + sum(emb(cond[:, p]) for p, emb in enumerate(self.cond))[:, None, :]
        e = self.edge_in(et)
        # sum (not softmax) over incident edges: the node sees its noisy bond counts (valence)
        h = h + self.edge_sum((e * node_mask[:, None, :, None]).sum(2))
        for layer in self.layers:
            h, e = layer(h, e, node_mask)
        el = self.edge_out(e)
        return self.node_out(h), 0.5 * (el + el.transpose(1, 2))


def _as_bins(cond_bins) -> tuple[int, ...]:
    if isinstance(cond_bins, int):
        return (cond_bins,) if cond_bins > 0 else ()
    bins = tuple(int(b) for b in cond_bins)
    if any(b < 1 for b in bins):
        raise ValueError(f"cond_bins must be positive bin counts, got {list(cond_bins)}")
    return bins


def _top_p(logp: torch.Tensor, top_p: float) -> torch.Tensor:
    if top_p >= 1.0:
        return logp
    p, idx = logp.exp().sort(-1, descending=True)
    drop = (p.cumsum(-1) - p) >= top_p
    drop_orig = torch.zeros_like(drop).scatter(-1, idx, drop)
    return logp.masked_fill(drop_orig, float("-inf"))


def _bond_temperature(logp: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """Temperature and top-p on the bond *type* only, the bond/no-bond decision kept as the denoiser gives it.

    ``logp`` (..., B) are log-probabilities with class 0 = no bond. Dividing all B logits by T < 1 sharpens
    every pair towards its most likely class, which for almost every pair is "no bond": molecules lose
    bonds as T falls (0.1 did this: 0.84 bonds per atom at T = 0.6, 1.5 % valid). Here
    p(no bond) is unchanged and p(type k | bond) ∝ p_k^{1/T} (then top-p), so the expected number of
    bonds does not depend on T. Returns log-probabilities.
    """
    if temperature == 1.0 and top_p >= 1.0:
        return logp
    none, types = logp[..., :1], logp[..., 1:]
    log_bond = torch.log1p(-none.exp().clamp(max=1.0 - 1e-12))          # log(1 - p(no bond))
    types = _top_p((types / temperature).log_softmax(-1), top_p).log_softmax(-1)
    return torch.cat([none, log_bond + types], -1)


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
        cond_bins: property bins for classifier-free guidance: an int (one property), a sequence
            (one count per property, e.g. ``(2, 3)`` for a QED bin and an MW bin), or 0 (none).
        device: torch device.

    Example:
        >>> m = MolHIT(process="hierarchical", T=20, n_layers=1, d_model=32)
        >>> m.fit(["CCO", "c1ccccc1", "CC(=O)O"], steps=5)          # doctest: +SKIP
        >>> m.sample(4, temperature=1.0, top_p=0.9)                 # doctest: +SKIP
        >>> m.sample(4, scaffold="c1ccccc1")                        # doctest: +SKIP
    """

    def __init__(self, encoding: AtomEncoding | None = None, *, process: str = "hierarchical", T: int = 100,
                 n_layers: int = 4, d_model: int = 64, d_edge: int = 16, n_heads: int = 4, cond_bins=0,
                 edge_weight: float = 5.0, device: str = "cpu"):
        if process not in PROCESSES:
            raise ValueError(f"process must be one of {PROCESSES}, got {process!r}")
        self.encoding = encoding or decoupled_encoding()
        self.process_name, self.T, self.device = process, int(T), torch.device(device)
        self.cond_bins = _as_bins(cond_bins)
        self.sizes = dict(n_layers=n_layers, d_model=d_model, d_edge=d_edge, n_heads=n_heads,
                          cond_bins=self.cond_bins)
        self.edge_weight = edge_weight
        self.net = None

    # set-up ------------------------------------------------------------------------------
    def _build(self, data: dict) -> None:
        enc = self.encoding
        K, B = enc.num_atom_types, enc.num_bond_types
        valid = torch.arange(data["X"].shape[1])[None] < data["n_atoms"][:, None]
        node_m = torch.bincount(data["X"][valid], minlength=K).double() + 1e-3
        pair = valid[:, :, None] & valid[:, None, :] & ~torch.eye(valid.shape[1], dtype=torch.bool)[None]
        edge_m = torch.bincount(data["E"][pair], minlength=B).double() + 1e-3
        self._build_from(node_m, edge_m, torch.bincount(data["n_atoms"], minlength=data["X"].shape[1] + 1).float(),
                         int(data["X"].shape[1]))

    def _build_from(self, node_m, edge_m, n_atoms_dist, max_atoms: int) -> None:
        """Processes and a fresh denoiser from the statistics of the training data (what :meth:`save` stores)."""
        enc = self.encoding
        K, B = enc.num_atom_types, enc.num_bond_types
        self._node_marginal, self._edge_marginal = node_m.double().cpu(), edge_m.double().cpu()
        self.node_process = make_process(self.process_name, K, self.T, enc.phi,
                                         self._node_marginal.numpy()).to(self.device)
        self.edge_process = make_process(self.process_name, B, self.T, [0] + [1] * (B - 1),
                                         self._edge_marginal.numpy()).to(self.device)
        self.n_atoms_dist = n_atoms_dist.float().cpu()
        self.max_atoms = int(max_atoms)
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

    def _cond_tensor(self, cond, n: int) -> torch.Tensor:
        """Training conditions -> (n, P) long tensor, checked against ``cond_bins``."""
        if not self.cond_bins:
            raise ValueError("cond needs a model built with cond_bins > 0")
        c = torch.as_tensor(cond, dtype=torch.long)
        c = c.view(-1, 1) if c.dim() == 1 else c
        if c.shape != (n, len(self.cond_bins)):
            raise ValueError(f"cond must hold one bin per molecule and property, shape ({n}, {len(self.cond_bins)}), "
                             f"got {tuple(c.shape)}")
        if torch.any(c < 0) or torch.any(c >= torch.tensor(self.cond_bins)):
            raise ValueError(f"cond bins must lie in 0..cond_bins-1 per property (cond_bins={self.cond_bins})")
        return c

    # training ----------------------------------------------------------------------------
    def loss(self, X, E, n_atoms, cond=None, gen=None, net=None):
        """x_0 cross-entropy on atoms + ``edge_weight`` × on atom pairs (DiGress's objective).

        Classifier-free guidance training: with probability 0.1 all conditions are dropped to the
        "no condition" bins, and each property is dropped on its own with probability 0.1 (so one
        property can be guided while the other is left free).
        """
        net = net or self.net
        b, n = X.shape
        t = torch.randint(1, self.T + 1, (b,), generator=gen, device=X.device)
        xt, et = self._noisy(X, E, t, gen)
        mask = torch.arange(n, device=X.device)[None] < n_atoms[:, None]
        if cond is not None:
            drop_all = torch.rand(b, 1, generator=gen, device=X.device) < 0.1
            drop_one = torch.rand(cond.shape, generator=gen, device=X.device) < 0.1
            null = torch.tensor(self.cond_bins, device=X.device).expand_as(cond)
            cond = torch.where(drop_all | drop_one, null, cond)
        nl, el = net(xt, et, t / self.T, mask, cond)
        pair = mask[:, :, None] & mask[:, None, :] & torch.triu(torch.ones(n, n, dtype=torch.bool, device=X.device), 1)
        return F.cross_entropy(nl[mask], X[mask]) + self.edge_weight * F.cross_entropy(el[pair], E[pair])

    def fit(self, data, *, steps: int = 1000, batch_size: int = 64, lr: float = 1e-3, seed: int = 0,
            cond=None, time_limit: float | None = None, log_every: int = 100, checkpoint=None,
            checkpoint_every: int = 0, resume: bool = False, lr_schedule: str = "constant") -> list[float]:
        """Train on ``data`` (SMILES list or the dict of :func:`molhit.data.graphs_from_smiles`).

        ``steps`` is the total number of optimiser steps: with ``resume=True`` and an existing
        ``checkpoint`` training continues from the saved step, and the result (weights, optimiser,
        losses) equals that of one uninterrupted run. Under ``torchrun`` (an initialised
        ``torch.distributed`` group with world size > 1) the denoiser is wrapped in DDP, each rank
        draws ``batch_size / world_size`` molecules per step from its own generator, and rank 0
        writes the checkpoint (with every rank's generator state).

        Args:
            cond: optional property bins per molecule for guidance, shape (N,) or (N, P).
            time_limit: stop after this many seconds (steps done are logged; a checkpoint is written).
            checkpoint: path of the training checkpoint (model + optimiser + step + RNG states).
            checkpoint_every: write it every this many steps (0: only at the end).
            resume: continue from ``checkpoint`` if it exists.
            lr_schedule: ``"constant"`` or ``"cosine"`` (``lr`` decays to 0 at ``steps`` by half a cosine;
                a function of the step, so a resumed run follows the same schedule).

        Returns:
            The (all-rank mean) loss of every step, including the steps done before a resume.
            SMILES that could not be used (unparsable, atoms outside the encoding, too large) are
            counted in ``self.skipped_`` (a warning names the counts when ``data`` was a list).

        Raises:
            RuntimeError: the loss became NaN/inf (names the step).
        """
        from molhit.data import graphs_from_smiles

        steps = check_int(steps, "steps", minimum=1)
        batch_size = check_int(batch_size, "batch_size", minimum=1)
        lr = check_float(lr, "lr", minimum=0.0, open_minimum=True)
        if lr_schedule not in ("constant", "cosine"):
            raise ValueError(f"lr_schedule must be 'constant' or 'cosine', got {lr_schedule!r}")
        from_smiles = isinstance(data, (list, tuple))
        if from_smiles:
            data = graphs_from_smiles(data, self.encoding)
        self.skipped_ = dict(data.get("skipped", {}))
        if from_smiles and any(self.skipped_.values()):   # a dict from graphs_from_smiles carries its own counts
            warnings.warn(f"fit: SMILES skipped (not used for training): {self.skipped_} "
                          f"(vocabulary: atoms outside this encoding, e.g. P, Si, I); counts in model.skipped_",
                          stacklevel=2)
        C = None if cond is None else self._cond_tensor(cond, len(data["X"])).to(self.device)
        rank, world = _dist_info()
        if batch_size % world:
            raise ValueError(f"batch_size ({batch_size}) must be divisible by the world size ({world})")
        if self.net is None:
            with torch.random.fork_rng(devices=[]):  # the initial weights depend on ``seed`` only
                torch.manual_seed(seed)
                self._build(data)
        gen = torch.Generator(device=self.device).manual_seed(seed + 7919 * rank)
        opt = torch.optim.AdamW(self.net.parameters(), lr=lr, weight_decay=1e-4)
        losses, start = [], 0
        if resume and checkpoint is not None and Path(checkpoint).exists():
            start, losses = self._load_checkpoint(checkpoint, opt, gen, rank, world)
            log.info("%s: resumed from %s at step %d", self.process_name, checkpoint, start)
        train_net = self.net
        if world > 1:
            from torch.nn.parallel import DistributedDataParallel

            train_net = DistributedDataParallel(self.net)
        X, E, N = (data["X"].to(self.device), data["E"].to(self.device), data["n_atoms"].to(self.device))
        self.net.train()
        t0, step = time.perf_counter(), start
        for step in range(start, steps):
            idx = torch.randint(0, len(X), (batch_size // world,), generator=gen, device=self.device)
            nmax = int(N[idx].max())
            loss = self.loss(X[idx, :nmax], E[idx, :nmax, :nmax], N[idx], None if C is None else C[idx], gen,
                             net=train_net)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if lr_schedule == "cosine":
                for group in opt.param_groups:
                    group["lr"] = 0.5 * lr * (1.0 + math.cos(math.pi * step / steps))
            value = _mean_over_ranks(loss.detach(), world)
            if not math.isfinite(value):
                raise RuntimeError(f"training diverged: loss {value} at step {step}")
            torch.nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
            opt.step()
            losses.append(value)
            if log_every and step % log_every == 0 and rank == 0:
                log.info("%s step %d loss %.4f", self.process_name, step, value)
            if checkpoint is not None and checkpoint_every and (step + 1) % checkpoint_every == 0:
                self._save_checkpoint(checkpoint, opt, gen, step + 1, losses, rank, world)
            if time_limit is not None and _stop_all(time.perf_counter() - t0 > time_limit, world):
                log.info("%s: time limit reached after %d steps", self.process_name, step + 1)
                break
        if checkpoint is not None and steps > start:
            self._save_checkpoint(checkpoint, opt, gen, step + 1, losses, rank, world)
        self.net.eval()
        return losses

    # checkpoints -------------------------------------------------------------------------
    def _save_checkpoint(self, path, opt, gen, step, losses, rank, world) -> None:
        states = [gen.get_state()]
        if world > 1:
            import torch.distributed as dist

            states = [None] * world
            dist.all_gather_object(states, gen.get_state())
        if rank == 0:
            atomic_torch_save({**self._spec(), "net": self.net.state_dict(), "opt": opt.state_dict(), "step": step,
                          "losses": list(losses), "rng": states, "world_size": world}, path)
        if world > 1:
            import torch.distributed as dist

            dist.barrier()

    def _load_checkpoint(self, path, opt, gen, rank, world):
        state = torch.load(path, weights_only=True, map_location=self.device)
        if state["process"] != self.process_name or state["T"] != self.T:
            raise ValueError(f"checkpoint {path} is for process={state['process']}, T={state['T']}; "
                             f"this model has process={self.process_name}, T={self.T}")
        if state["world_size"] != world:
            raise ValueError(f"checkpoint {path} was written with world size {state['world_size']}, "
                             f"resuming with {world}: same-result resumption needs the same world size")
        self.net.load_state_dict(state["net"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["rng"][rank])
        return int(state["step"]), [float(v) for v in state["losses"]]

    def _spec(self) -> dict:
        """Everything but the weights that a fitted model needs to sample (plain types and tensors)."""
        if self.net is None:
            raise RuntimeError("the model is not fitted: call fit() before saving it")
        return {"format": MODEL_FORMAT, "encoding": self.encoding.to_dict(), "process": self.process_name,
                "T": self.T, "sizes": {k: (list(v) if k == "cond_bins" else int(v)) for k, v in self.sizes.items()},
                "edge_weight": float(self.edge_weight), "node_marginal": self._node_marginal,
                "edge_marginal": self._edge_marginal, "n_atoms_dist": self.n_atoms_dist, "max_atoms": self.max_atoms}

    def save(self, path) -> None:
        """Save the fitted model in one file: weights, atom encoding, process and its marginals, the
        training size distribution, denoiser sizes and ``cond_bins``; :meth:`load` needs nothing else
        (no training data). Written atomically; loadable with ``torch.load(weights_only=True)``."""
        atomic_torch_save({**self._spec(), "net": self.net.state_dict()}, path)

    @classmethod
    def load(cls, path, *, device: str = "cpu") -> MolHIT:
        """A fitted model from a file of :meth:`save` or a training checkpoint (``fit(checkpoint=...)``,
        the run directory's ``checkpoints/*.pt``), ready to :meth:`sample`.

        Raises:
            FileNotFoundError: no such file. ValueError: the file is not a molhit model (e.g. a bare
            state dict of molhit 0.1, which did not store what sampling needs).
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no such model file: {path}")
        state = torch.load(path, weights_only=True, map_location=device)
        if not isinstance(state, dict) or state.get("format") != MODEL_FORMAT:
            raise ValueError(f"{path} is not a molhit model file ({MODEL_FORMAT}, written by MolHIT.save or by "
                             "fit(checkpoint=...) of molhit >= 0.2)")
        sizes = state["sizes"]
        m = cls(AtomEncoding.from_dict(state["encoding"]), process=state["process"], T=int(state["T"]),
                n_layers=sizes["n_layers"], d_model=sizes["d_model"], d_edge=sizes["d_edge"], n_heads=sizes["n_heads"],
                cond_bins=tuple(sizes["cond_bins"]), edge_weight=float(state["edge_weight"]), device=device)
        m._build_from(state["node_marginal"], state["edge_marginal"], state["n_atoms_dist"], int(state["max_atoms"]))
        m.net.load_state_dict(state["net"])
        m.net.eval()
        return m

    def load_weights(self, path) -> None:
        """Load only the denoiser weights of a model file or checkpoint into this fitted model."""
        if self.net is None:
            raise RuntimeError("load_weights needs a fitted model; use MolHIT.load(path) for a saved one")
        state = torch.load(path, weights_only=True, map_location=self.device)
        self.net.load_state_dict(state["net"] if isinstance(state, dict) and "net" in state else state)

    # sampling ----------------------------------------------------------------------------
    def _cond_bins_for(self, cond) -> tuple[int, ...] | None:
        """Sampling condition -> one bin per property (the null bin where ``None``), or None."""
        if cond is None:
            return None
        if not self.cond_bins:
            raise ValueError("cond needs a model built with cond_bins > 0")
        c = [cond] if isinstance(cond, int) else list(cond)
        if len(c) != len(self.cond_bins):
            raise ValueError(f"cond must give one bin (or None) per property: {len(self.cond_bins)} properties "
                             f"(cond_bins={self.cond_bins}), got {cond!r}")
        for b, k in zip(c, self.cond_bins):
            if b is not None and not (isinstance(b, int) and 0 <= b < k):
                raise ValueError(f"cond must be a bin in 0..{k - 1} (or None), got {b!r}")
        return tuple(k if b is None else b for b, k in zip(c, self.cond_bins))

    def _scaffold_graph(self, scaffold):
        if scaffold is None:
            return None
        try:
            atoms, bonds = self.encoding.encode(scaffold)
        except (ValueError, TypeError) as err:
            raise ValueError(f"scaffold: {err}") from None
        k = len(atoms)
        if not torch.any(self.n_atoms_dist[k + 1:] > 0):
            raise ValueError(f"scaffold has {k} atoms; the training molecules have at most {self.max_atoms}, "
                             "so there is no room to extend it")
        return torch.from_numpy(atoms).to(self.device), torch.from_numpy(bonds).to(self.device)

    @torch.no_grad()
    def generate(self, n: int, *, temperature: float = 1.0, top_p: float = 1.0, guidance: float = 0.0,
                 cond=None, sampler: str = "pn", seed: int = 0, batch_size: int = 256, scaffold=None,
                 resample: int = 1):
        """Sample ``n`` graphs; returns a list of ``(atoms, bonds)`` numpy arrays (see :meth:`sample`)."""
        if self.net is None:
            raise RuntimeError("fit the model before sampling")
        n = check_int(n, "n", minimum=1)
        batch_size = check_int(batch_size, "batch_size", minimum=1)
        temperature = check_float(temperature, "temperature", minimum=0.0, open_minimum=True)
        top_p = check_float(top_p, "top_p", minimum=0.0, maximum=1.0, open_minimum=True)
        guidance = check_float(guidance, "guidance", minimum=0.0)
        if guidance > 0 and cond is None:
            raise ValueError(f"guidance={guidance} needs cond= (the bin to steer towards); without it nothing is guided")
        if sampler not in ("pn", "ancestral"):
            raise ValueError(f"sampler must be 'pn' or 'ancestral', got {sampler!r}")
        if not isinstance(resample, int) or resample < 1:
            raise ValueError(f"resample must be an int >= 1, got {resample!r}")
        bins = self._cond_bins_for(cond)
        fixed = self._scaffold_graph(scaffold)
        gen = torch.Generator(device=self.device).manual_seed(seed)
        out = []
        for start in range(0, n, batch_size):
            out.extend(self._generate_batch(min(batch_size, n - start), temperature, top_p, guidance, bins,
                                            sampler, gen, fixed, resample))
        return out

    def _log_p0(self, xt, et, t, mask, bins, guidance, temperature, top_p):
        b = xt.shape[0]
        tf = torch.full((b,), t / self.T, device=self.device)
        if bins is None:
            nl, el = self.net(xt, et, tf, mask, None)
            nl, el = nl.log_softmax(-1), el.log_softmax(-1)
        else:
            nc, ec = self.net(xt, et, tf, mask, torch.tensor(bins, device=self.device).expand(b, -1))
            nu, eu = self.net(xt, et, tf, mask, None)
            nl = (1 + guidance) * nc.log_softmax(-1) - guidance * nu.log_softmax(-1)
            el = (1 + guidance) * ec.log_softmax(-1) - guidance * eu.log_softmax(-1)
        nl = _top_p((nl / temperature).log_softmax(-1), top_p)
        return nl.softmax(-1), _bond_temperature(el.log_softmax(-1), temperature, top_p).exp()

    def _known(self, fixed, b, n, t, gen):
        """RePaint's known part: the scaffold's atoms/bonds noised to step t, ``q(x_t | x_0)``.

        Returns node states (b, n), edge states (b, n, n) and the masks of the fixed entries
        (the first k atoms, and the pairs among them, "no bond" included).
        """
        atoms, bonds = fixed
        k = len(atoms)
        X0 = torch.zeros(b, n, dtype=torch.long, device=self.device)
        E0 = torch.zeros(b, n, n, dtype=torch.long, device=self.device)
        X0[:, :k], E0[:, :k, :k] = atoms, bonds
        tt = torch.full((b,), t, device=self.device)
        xk, ek = self._noisy(X0, E0, tt, gen)
        node_known = torch.arange(n, device=self.device) < k
        return xk, ek, node_known, node_known[:, None] & node_known[None, :]

    def _reverse_step(self, xt, et, t, mask, bins, guidance, temperature, top_p, sampler, gen, iu):
        p0n, p0e = self._log_p0(xt, et, t, mask, bins, guidance, temperature, top_p)
        if sampler == "pn":
            x0, e0 = categorical(p0n, gen), categorical(p0e, gen)
            pn = self.node_process.posterior_x0(xt, x0, t)
            pe = self.edge_process.posterior_x0(et, e0, t)
        else:
            pn = self.node_process.posterior(xt, p0n, t)
            pe = self.edge_process.posterior(et, p0e, t)
        et = categorical(pe, gen) * iu
        return categorical(pn, gen), et + et.transpose(1, 2)

    def _generate_batch(self, b, temperature, top_p, guidance, bins, sampler, gen, fixed=None, resample=1):
        dist = self.n_atoms_dist
        if fixed is not None:  # room for at least one new atom
            dist = dist.clone()
            dist[: len(fixed[0]) + 1] = 0
        n_atoms = torch.multinomial(dist, b, replacement=True, generator=gen).to(self.device)
        n = int(n_atoms.max())
        mask = torch.arange(n, device=self.device)[None] < n_atoms[:, None]
        xt = self.node_process.prior_sample((b, n), gen)
        et = torch.triu(self.edge_process.prior_sample((b, n, n), gen), 1)
        et = et + et.transpose(1, 2)
        if fixed is not None:
            xk, ek, kn, ke = self._known(fixed, b, n, self.T, gen)
            xt, et = torch.where(kn, xk, xt), torch.where(ke, ek, et)
        iu = torch.triu(torch.ones(n, n, dtype=torch.bool, device=self.device), 1)
        for t in range(self.T, 0, -1):
            for u in range(resample if fixed is not None else 1):
                if u:  # RePaint's resampling: back to step t with the one-step kernel Q_t, then denoise again
                    xt = categorical(self.node_process.Q[t][xt], gen)
                    et = categorical(self.edge_process.Q[t][et], gen) * iu
                    et = et + et.transpose(1, 2)
                xt, et = self._reverse_step(xt, et, t, mask, bins, guidance, temperature, top_p, sampler, gen, iu)
                if fixed is not None:  # inpainting: the known part is a fresh draw of q(x_{t-1} | scaffold)
                    xk, ek, kn, ke = self._known(fixed, b, n, t - 1, gen)
                    xt, et = torch.where(kn, xk, xt), torch.where(ke, ek, et)
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
               cond=None, sampler: str = "pn", seed: int = 0, lenient: bool = False,
               scaffold=None, resample: int = 1) -> list[str | None]:
        """Sample ``n`` molecules as canonical SMILES (``None`` for a strictly invalid graph).

        Args:
            temperature: divides the denoiser's log-probabilities (< 1 sharper): of the atoms, and of the
                bond *type* given a bond; whether a pair is bonded keeps the denoiser's probability (dividing
                the no-bond logit too would strip bonds at T < 1).
            top_p: nucleus sampling over each atom's predicted classes and each bonded pair's bond types.
            guidance: classifier-free guidance weight w:
                ``(1+w) log p(x0 | c) - w log p(x0 | ∅)`` (used with ``cond``).
            cond: the bin to steer towards: an int (one property) or one bin per property,
                ``None`` leaving that property free (needs ``cond_bins``).
            lenient: keep the largest valid fragment instead of rejecting the graph.
            scaffold: SMILES (or RDKit Mol) to extend by inpainting (RePaint, Lugmayr et al. 2022):
                its atoms are the first k nodes, and at every reverse step its atoms and the bonds
                among them are replaced by a fresh draw of the forward marginal ``q(x_{t-1} | scaffold)``
                while the rest of the graph is denoised; at t = 0 they are exactly the scaffold's.
                Molecule sizes are drawn from the training sizes larger than the scaffold.
            resample: with a scaffold, RePaint's resampling: each reverse step is done ``resample``
                times, going back to step t with the one-step kernel ``Q_t`` in between, so the new
                part can harmonise with the fixed one (cost × ``resample``).
        """
        graphs = self.generate(n, temperature=temperature, top_p=top_p, guidance=guidance, cond=cond,
                               sampler=sampler, seed=seed, scaffold=scaffold, resample=resample)
        return self.decode(graphs, lenient=lenient)


# distributed helpers (one process: world size 1) -------------------------------------------
def _dist_info() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _mean_over_ranks(x: torch.Tensor, world: int) -> float:
    if world > 1:
        import torch.distributed as dist

        x = x.clone()
        dist.all_reduce(x)
        x /= world
    return float(x)


def _stop_all(flag: bool, world: int) -> bool:
    """Every rank stops together if any rank asks to (time limits differ slightly per rank)."""
    if world == 1:
        return flag
    import torch.distributed as dist

    f = torch.tensor([float(flag)])
    dist.all_reduce(f, op=dist.ReduceOp.MAX)
    return bool(f.item())
