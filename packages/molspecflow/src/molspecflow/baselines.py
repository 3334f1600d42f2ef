"""Baselines: a MIST-like fingerprint MLP with Tanimoto ranking, a NEIMS-like fingerprint → spectrum MLP,
the simulator-oracle library match (upper bound) and random ranking (lower bound).

The MolSpecFlow ablations (paired rows only, single-task models, no regulariser) are the same model
trained with other data or masks (see :mod:`molspecflow.train`).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from molspecflow.chem import ELEMENTS, N_BITS, fingerprint, mol_of
from molspecflow.data import N_BINS, bin_spectrum
from molspecflow.metrics import binned_cosine
from molspecflow.model import MolSpecFlow


class FingerprintMLP(nn.Module):
    """MIST-like: spectrum (binned) + precursor/energy → Morgan bit logits; candidates ranked by Tanimoto."""

    def __init__(self, hidden: int = 512):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_BINS + 16 + 1 + len(ELEMENTS) + 1, hidden), nn.GELU(),
                                 nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, N_BITS))

    def forward(self, spec, precursor, ce):
        return self.net(torch.cat([spec, MolSpecFlow.conditions(precursor, ce)], -1))

    def loss(self, batch):
        return F.binary_cross_entropy_with_logits(self(batch["spec"], batch["precursor"], batch["ce"]), batch["fp"])

    @torch.no_grad()
    def retrieve(self, arrays, candidates, k=5):
        dev = self.net[0].weight.device
        p = self(*(torch.as_tensor(np.asarray(arrays[x]), dtype=torch.float32, device=dev)
                   for x in ("spec", "precursor", "ce"))).sigmoid().cpu()
        return [_rank_by_bits(p[i], c, k) for i, c in enumerate(candidates)]


class SpectrumMLP(nn.Module):
    """NEIMS-like: Morgan bits + precursor/energy → binned spectrum (square-root intensities)."""

    def __init__(self, hidden: int = 512):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_BITS + 16 + 1 + len(ELEMENTS) + 1, hidden), nn.GELU(),
                                 nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, N_BINS))

    def forward(self, fp, precursor, ce):
        return self.net(torch.cat([fp, MolSpecFlow.conditions(precursor, ce)], -1))

    def loss(self, batch):
        return F.mse_loss(self(batch["fp"], batch["precursor"], batch["ce"]), batch["spec"])

    @torch.no_grad()
    def simulate(self, fp, precursor, ce):
        dev = self.net[0].weight.device

        def t(x):
            return torch.as_tensor(np.asarray(x), dtype=torch.float32, device=dev)

        return self(t(fp), t(precursor), t(ce)).clamp(0, 1).cpu().numpy()


def _rank_by_bits(p, cands, k):
    bits = [fingerprint(m) if (m := mol_of(c)) is not None else None for c in cands]
    sc = np.full(len(cands), -np.inf)
    for j, b in enumerate(bits):
        if b is not None:
            b = torch.as_tensor(b, dtype=torch.float32)
            inter = float(b @ p)
            sc[j] = inter / (float(b.sum() + p.sum()) - inter)
    order = np.argsort(-sc, kind="stable")
    return [cands[j] for j in order[:k] if np.isfinite(sc[j])]


def oracle_library_match(query_spec, candidates, profiles, ces, k=5):
    """Upper bound: simulate every candidate with the true (noise-free) simulator, rank by cosine."""
    from molspecflow.simulator import FragmentSimulator

    out = []
    for q, cands, prof, ce in zip(query_spec, candidates, profiles, ces):
        sim = FragmentSimulator(profile=prof, noise=False)
        lib = []
        for c in cands:
            try:
                sp = sim.simulate(c, collision_energy=float(ce))
                lib.append(bin_spectrum(sp.peaks.mz, sp.peaks.intensities))
            except ValueError:
                lib.append(np.zeros(N_BINS, np.float32))
        sc = binned_cosine(np.asarray(lib), np.asarray(q)[None])
        out.append([cands[j] for j in np.argsort(-sc, kind="stable")[:k]])
    return out


def neims_library_match(model: SpectrumMLP, query_arrays, candidates, k=5):
    """NEIMS-style retrieval: predict each candidate's spectrum, rank by cosine with the query."""
    out = []
    for i, cands in enumerate(candidates):
        fps = np.stack([fingerprint(mol_of(c)) for c in cands]).astype(np.float32)
        n = len(cands)
        pred = model.simulate(fps, np.full(n, query_arrays["precursor"][i]), np.full(n, query_arrays["ce"][i]))
        sc = binned_cosine(pred, np.asarray(query_arrays["spec"][i])[None])
        out.append([cands[j] for j in np.argsort(-sc, kind="stable")[:k]])
    return out


def random_ranking(candidates, k=5, seed=0):
    """Lower bound: candidates in random order."""
    rng = np.random.default_rng(seed)
    return [[c[j] for j in rng.permutation(len(c))[:k]] for c in candidates]
