"""MolSpecFlow: one Mol-Spec Transformer over tokens, bits and a spectrum, routed by masks.

The paper's text and code are not public; the backbone, the dynamics and the regulariser below are
INFERRED from its abstract:

- state: SELFIES tokens ``(L,)``, Morgan bits ``(1024,)`` in 16 patches of 64, a binned spectrum
  ``(400,)`` in 8 patches of 50, and one condition token (precursor m/z, collision energy, and the
  formula when it is given);
- availability masks (``avail``: which views exist) drop absent views from attention and loss;
  observation masks (given / generated per view) choose the task: de novo (spectrum → molecule),
  retrieval (spectrum → bits), simulation (molecule → spectrum), or joint generation;
- dynamics: an absorbing-state (masked) discrete flow for tokens and bits — a view at time ``t``
  keeps each position with probability ``t`` and masks the rest; a rectified flow for the
  spectrum — ``x_t = (1 - t) x_0 + t x_1``, the network predicting ``x_1 - x_0``;
- loss: cross-entropy on masked generated positions, velocity MSE on a generated spectrum, only
  on available generated views, plus ``mass_weight`` × the expected mass/element-count regulariser
  ``E[m] = Σ_pos Σ_v p(v)·m(v)`` (soft at masked positions, the given tokens elsewhere) against the
  molecule's skeleton mass and element counts.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from molspecflow.chem import (
    ELEMENTS,
    HEAVY,
    N_BITS,
    Tokenizer,
    atom_weights,
    element_counts,
    fingerprint,
    formula_of,
    mol_of,
)
from molspecflow.data import FP, MOL, N_BINS, SPEC, skeleton_targets, spectra_arrays, unbin_spectrum

TASKS = ("denovo", "retrieval", "simulation", "joint")
FP_PATCH, SPEC_PATCH = 64, 50
N_FP, N_SPEC = N_BITS // FP_PATCH, N_BINS // SPEC_PATCH
ABSENT, GIVEN, GENERATED = 0, 1, 2
MASS_SCALE = 100.0
# observation masks by (availability kind, task): kinds full / molecule-only / spectrum-only / other;
# tasks denovo, retrieval, simulation, joint, joint-alternative (molecule-only rows)
_G, _V, _A = 1, 2, 0
_STATES = torch.tensor([
    [[_V, _V, _G], [_A, _V, _G], [_G, _G, _V], [_V, _V, _V], [_V, _V, _V]],   # all views
    [[_V, _V, _A], [_A, _V, _A], [_A, _A, _A], [_V, _G, _A], [_G, _V, _A]],   # molecule only
    [[_A, _A, _A], [_A, _A, _A], [_A, _A, _V], [_A, _A, _V], [_A, _A, _V]],   # spectrum only
    [[_A, _A, _A]] * 5,
])


def _fourier(x: torch.Tensor, n: int = 8) -> torch.Tensor:
    freqs = torch.exp(torch.linspace(0, math.log(100.0), n, device=x.device))
    return torch.cat([torch.sin(x[..., None] * freqs), torch.cos(x[..., None] * freqs)], -1)


class MolSpecFlow(nn.Module):
    """The mask-conditioned heterogeneous flow (see the module docstring; inferred from the abstract).

    Args:
        dim: width of the Mol-Spec Transformer.
        depth: its layers.
        mass_weight: weight of the expected mass/formula regulariser (0 turns it off).
        heads: attention heads. max_len: SELFIES length. vocab: token list (default SELFIES robust alphabet).

    Example:
        >>> model = MolSpecFlow(dim=32, depth=1)
        >>> sum(p.numel() for p in model.parameters()) > 0
        True
    """

    def __init__(self, *, dim: int = 256, depth: int = 6, mass_weight: float = 0.1, heads: int = 4,
                 max_len: int = 48, vocab=None, dropout: float = 0.0):
        super().__init__()
        for name, v, lo in (("dim", dim, 8), ("depth", depth, 1), ("heads", heads, 1), ("max_len", max_len, 4)):
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        if isinstance(mass_weight, bool) or not isinstance(mass_weight, (int, float)) or not math.isfinite(
                mass_weight) or mass_weight < 0:
            raise ValueError(f"mass_weight must be a finite number >= 0, got {mass_weight!r}")
        self.tokenizer = Tokenizer(vocab, max_len=max_len)
        self.config = {"dim": dim, "depth": depth, "mass_weight": float(mass_weight), "heads": heads,
                       "max_len": max_len, "vocab": list(self.tokenizer.tokens), "dropout": dropout}
        V = len(self.tokenizer.tokens)
        self.mass_weight = float(mass_weight)
        self.tok_emb = nn.Embedding(V, dim)
        self.pos = nn.Parameter(torch.randn(max_len + N_FP + N_SPEC + 1, dim) * 0.02)
        self.fp_in = nn.Linear(2 * FP_PATCH, dim)
        self.spec_in = nn.Linear(SPEC_PATCH, dim)
        self.cond_in = nn.Linear(16 + 1 + len(ELEMENTS) + 1, dim)
        self.state_emb = nn.Embedding(3 * 3, dim)           # (view, state)
        self.time_in = nn.Linear(16, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout, batch_first=True, norm_first=True,
                                           activation="gelu")
        self.backbone = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.tok_out = nn.Linear(dim, V)
        self.fp_out = nn.Linear(dim, FP_PATCH)
        self.spec_out = nn.Linear(dim, SPEC_PATCH)
        from molspecflow.chem import token_table

        _, masses, counts = token_table(self.tokenizer.tokens)
        self.register_buffer("token_mass", torch.tensor(masses, dtype=torch.float32), persistent=False)
        self.register_buffer("token_counts", torch.tensor(counts, dtype=torch.float32), persistent=False)

    # the backbone ---------------------------------------------------------------------------------

    def forward(self, tokens, fp, spec, cond, state, times):
        """One pass.

        Args:
            tokens: ``(B, L)`` ids (``[MASK]`` where masked). fp: ``(B, 1024)`` bits, ``fp_mask`` folded in
                as -1 for masked bits. spec: ``(B, 400)`` the spectrum at its flow time.
            cond: ``(B, C)`` condition features. state: ``(B, 3)`` ABSENT/GIVEN/GENERATED per view.
            times: ``(B, 3)`` flow times per view (1 = clean).

        Returns:
            token logits ``(B, L, V)``, bit logits ``(B, 1024)``, spectrum velocity ``(B, 400)``.
        """
        B, L = tokens.shape
        h_tok = self.tok_emb(tokens)
        fpp = fp.view(B, N_FP, FP_PATCH)
        h_fp = self.fp_in(torch.cat([fpp.clamp(min=0), (fpp < 0).float()], -1))
        h_spec = self.spec_in(spec.view(B, N_SPEC, SPEC_PATCH))
        h_cond = self.cond_in(cond)[:, None]
        views = [h_tok, h_fp, h_spec]
        for v in range(3):
            extra = self.state_emb(state[:, v] + 3 * v) + self.time_in(_fourier(times[:, v]))
            views[v] = views[v] + extra[:, None]
        h = torch.cat([*views, h_cond], 1) + self.pos[None, : L + N_FP + N_SPEC + 1]
        absent = state == ABSENT
        pad = torch.cat([absent[:, :1].expand(B, L), absent[:, 1:2].expand(B, N_FP),
                         absent[:, 2:3].expand(B, N_SPEC), torch.zeros(B, 1, dtype=torch.bool, device=h.device)], 1)
        h = self.norm(self.backbone(h, src_key_padding_mask=pad))
        tok_logits = self.tok_out(h[:, :L])
        tok_logits[..., 1] = -1e9  # never predict [MASK]
        fp_logits = self.fp_out(h[:, L: L + N_FP]).reshape(B, N_BITS)
        vel = self.spec_out(h[:, L + N_FP: L + N_FP + N_SPEC]).reshape(B, N_BINS)
        return tok_logits, fp_logits, vel

    @staticmethod
    def conditions(precursor, ce, formula=None, given=None) -> torch.Tensor:
        """Condition features: Fourier(precursor/500), ce/100, formula counts/20 when ``given``, the flag."""
        B = precursor.shape[0]
        if formula is None:
            formula = torch.zeros(B, len(ELEMENTS), device=precursor.device)
        if given is None:
            given = torch.zeros(B, dtype=torch.bool, device=precursor.device)
        g = given.float()[:, None]
        return torch.cat([_fourier(precursor / 500.0), (ce / 100.0)[:, None], formula / 20.0 * g, g], -1)

    # training -----------------------------------------------------------------------------------

    def sample_states(self, avail: torch.Tensor, tasks=TASKS, generator=None) -> torch.Tensor:
        """Observation masks ``(B, 3)`` for rows with availability ``avail`` ``(B, 3)``.

        Rows holding a task's inputs and outputs draw one of ``tasks``; rows holding only some views
        generate what they hold (spectrum-only rows: the spectrum from its precursor; molecule-only
        rows: the molecule from its bits, the bits from the molecule, or both), as far as ``tasks`` allow.
        """
        B = avail.shape[0]
        dev = avail.device
        tasks = list(tasks)
        for t in tasks:
            if t not in TASKS:
                raise ValueError(f"unknown task {t!r}; known: {TASKS}")
        u = torch.rand(B, generator=generator)
        u2 = torch.rand(B, generator=generator)
        k = torch.as_tensor([TASKS.index(t) for t in tasks])[(u * len(tasks)).long().clamp(max=len(tasks) - 1)]
        kind = torch.full((B,), 3, dtype=torch.long)
        a = avail.cpu()
        kind[a.all(1)] = 0
        kind[a[:, MOL] & ~a[:, SPEC]] = 1
        kind[a[:, SPEC] & ~a[:, MOL]] = 2
        # joint on molecule-only rows: the molecule from its bits or the bits from the molecule
        k = torch.where((kind == 1) & (k == 3) & (u2 < 0.5), torch.full_like(k, 4), k)
        state = _STATES[kind, k]
        return state.to(dev)

    def loss(self, batch: dict, *, tasks=TASKS, formula_p: float = 0.5, generator=None, return_parts: bool = False):
        """Training loss of a batch (see the module docstring); only available, generated views count.

        ``batch``: ``tokens (B,L)``, ``fp (B,1024)``, ``spec (B,400)``, ``precursor (B,)``, ``ce (B,)``,
        ``formula (B,11)``, ``avail (B,3)`` (as from :meth:`MolSpecDataset.batch`), optionally ``state (B,3)``.
        """
        tokens, fp, spec = batch["tokens"], batch["fp"], batch["spec"]
        avail = batch["avail"].bool()
        B, dev = tokens.shape[0], tokens.device
        state = batch.get("state")
        if state is None:
            state = self.sample_states(avail, tasks, generator)
        state = torch.where(avail, state, torch.full_like(state, ABSENT))

        def rand(*shape):
            return torch.rand(*shape, generator=generator).to(dev)

        gen = state == GENERATED
        t = torch.where(gen, rand(B, 3), torch.ones(B, 3, device=dev))
        # masked discrete flow: keep each generated position with probability t
        tok_mask = gen[:, MOL:MOL + 1] & (rand(*tokens.shape) > t[:, MOL:MOL + 1])
        fp_mask = gen[:, FP:FP + 1] & (rand(*fp.shape) > t[:, FP:FP + 1])
        tok_in = torch.where(tok_mask, torch.ones_like(tokens), tokens)
        fp_in = torch.where(fp_mask, -torch.ones_like(fp), fp)
        # rectified flow for the spectrum
        x0 = torch.randn(spec.shape, generator=generator).to(dev)
        ts = t[:, SPEC:SPEC + 1]
        spec_in = torch.where(gen[:, SPEC:SPEC + 1], (1 - ts) * x0 + ts * spec, spec)
        # the formula is given (when the molecule exists) to a random share of rows
        f_given = avail[:, MOL] & (rand(B) < formula_p) & (state[:, MOL] != GIVEN)
        cond = self.conditions(batch["precursor"], batch["ce"], batch["formula"], f_given)
        tok_logits, fp_logits, vel = self(tok_in, fp_in, spec_in, cond, state, t)
        # losses, each averaged over rows that generate the view
        ce_tok = F.cross_entropy(tok_logits.transpose(1, 2), tokens, reduction="none")
        n_tok = tok_mask.sum(1).clamp(min=1)
        row_tok = (ce_tok * tok_mask).sum(1) / n_tok
        bce = F.binary_cross_entropy_with_logits(fp_logits, fp, reduction="none")
        row_fp = (bce * fp_mask).sum(1) / fp_mask.sum(1).clamp(min=1)
        row_spec = ((vel - (spec - x0)) ** 2).mean(1)
        has_tok, has_fp, has_spec = tok_mask.any(1), fp_mask.any(1), gen[:, SPEC]
        parts = {
            "tokens": row_tok[has_tok].mean() if has_tok.any() else tok_logits.sum() * 0,
            "bits": row_fp[has_fp].mean() if has_fp.any() else fp_logits.sum() * 0,
            "spectrum": row_spec[has_spec].mean() if has_spec.any() else vel.sum() * 0,
        }
        total = parts["tokens"] + parts["bits"] + parts["spectrum"]
        if self.mass_weight > 0 and has_tok.any():
            p = tok_logits.softmax(-1)
            onehot = F.one_hot(tokens, p.shape[-1]).float()
            soft = torch.where(tok_mask[..., None], p, onehot)[has_tok]
            w = atom_weights(soft, self.tokenizer.tokens)
            e_mass = ((soft @ self.token_mass) * w).sum(1)
            e_counts = ((soft @ self.token_counts) * w[..., None]).sum(1)
            m_true, c_true = skeleton_targets(tokens[has_tok], self.tokenizer.tokens)
            reg = ((e_mass - m_true) / MASS_SCALE) ** 2 + (((e_counts - c_true) / 10.0) ** 2).sum(1)
            parts["mass"] = reg.mean()
            total = total + self.mass_weight * parts["mass"]
        return (total, parts) if return_parts else total

    # inference ------------------------------------------------------------------------------------

    def _device(self):
        return self.tok_emb.weight.device

    def _spectra(self, spectra):
        """Binned spectra, precursors and energies from matchms spectra or a dict of arrays."""
        if isinstance(spectra, dict):
            arr = spectra
        else:
            spectra = list(spectra)
            if not spectra:
                raise ValueError("spectra is empty")
            arr = spectra_arrays(spectra)
        dev = self._device()
        return (torch.as_tensor(np.asarray(arr["spec"]), dtype=torch.float32, device=dev),
                torch.as_tensor(np.asarray(arr["precursor"]), dtype=torch.float32, device=dev),
                torch.as_tensor(np.asarray(arr["ce"]), dtype=torch.float32, device=dev))

    @torch.no_grad()
    def denovo(self, spectra, k: int = 10, formula=None, *, steps: int = 16, temperature: float = 1.0,
               seed: int = 0) -> list[list[str]]:
        """De novo annotation: ``k`` molecules sampled per spectrum, distinct and ranked.

        Tokens and bits are generated by the masked discrete flow from all-masked, unmasking each
        masked position with probability ``(t' - t)/(1 - t)`` per step. Ranking: formula matches
        first when a formula is given, then by how often a molecule was sampled.

        Args:
            spectra: ``matchms.Spectrum`` list (precursor m/z required) or a dict of arrays
                ``spec``, ``precursor``, ``ce``.
            formula: ``None`` (not given) or one formula string per spectrum (e.g. ``"C10H12N2O"``).

        Returns:
            one list of up to ``k`` canonical SMILES per spectrum.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        spec, prec, ce = self._spectra(spectra)
        N = spec.shape[0]
        if formula is not None:
            formula = list(formula)
            if len(formula) != N:
                raise ValueError(f"formula: one per spectrum ({N}), got {len(formula)}")
        fvec, fgiven = self._formula_tensor(formula, N)
        g = torch.Generator().manual_seed(seed)
        out = []
        chunk = max(1, 256 // k)
        for s0 in range(0, N, chunk):
            sl = slice(s0, min(N, s0 + chunk))
            n = sl.stop - sl.start

            def rep(x, sl=sl):
                return x[sl].repeat_interleave(k, 0)

            state = torch.tensor([GENERATED, GENERATED, GIVEN], device=spec.device).expand(n * k, 3)
            toks = self._sample_tokens(rep(spec), self.conditions(rep(prec), rep(ce), rep(fvec), rep(fgiven)),
                                       state, steps, temperature, g)
            for i in range(n):
                smis = [self.tokenizer.decode(r) for r in toks[i * k:(i + 1) * k].cpu().numpy()]
                out.append(_rank(smis, formula[s0 + i] if formula is not None else None, k))
        return out

    def _formula_tensor(self, formula, N):
        dev = self._device()
        fvec = torch.zeros(N, len(ELEMENTS), device=dev)
        given = torch.zeros(N, dtype=torch.bool, device=dev)
        if formula is None:
            return fvec, given
        for i, f in enumerate(formula):
            if f is None:
                continue
            fvec[i] = torch.as_tensor(parse_formula(f), dtype=torch.float32)
            given[i] = True
        return fvec, given

    def _sample_tokens(self, spec, cond, state, steps, temperature, g):
        B, L, dev = spec.shape[0], self.tokenizer.max_len, spec.device
        toks = torch.ones(B, L, dtype=torch.long, device=dev)
        fp = -torch.ones(B, N_BITS, device=dev)
        grid = torch.linspace(0, 1, steps + 1)
        for s in range(steps):
            t, t2 = float(grid[s]), float(grid[s + 1])
            times = torch.tensor([t, t, 1.0], device=dev).expand(B, 3)
            logits, fp_logits, _ = self(toks, fp, spec, cond, state, times)
            p_unmask = (t2 - t) / (1 - t) if s < steps - 1 else 1.0
            probs = (logits / temperature).softmax(-1)
            draw = torch.multinomial(probs.reshape(-1, probs.shape[-1]).cpu(), 1, generator=g).view(B, L).to(dev)
            m = (toks == 1) & (torch.rand(B, L, generator=g).to(dev) < p_unmask)
            toks = torch.where(m, draw, toks)
            bits = (torch.rand(B, N_BITS, generator=g).to(dev) < fp_logits.sigmoid()).float()
            mf = (fp < 0) & (torch.rand(B, N_BITS, generator=g).to(dev) < p_unmask)
            fp = torch.where(mf, bits, fp)
        return toks

    @torch.no_grad()
    def predict_bits(self, spectra) -> torch.Tensor:
        """Bit probabilities ``(N, 1024)`` from spectra in one pass (the retrieval embedding)."""
        spec, prec, ce = self._spectra(spectra)
        N, dev = spec.shape[0], spec.device
        state = torch.tensor([ABSENT, GENERATED, GIVEN], device=dev).expand(N, 3)
        times = torch.tensor([1.0, 0.0, 1.0], device=dev).expand(N, 3)
        toks = torch.zeros(N, self.tokenizer.max_len, dtype=torch.long, device=dev)
        _, fp_logits, _ = self(toks, -torch.ones(N, N_BITS, device=dev), spec, self.conditions(prec, ce), state, times)
        return fp_logits.sigmoid()

    @torch.no_grad()
    def retrieve(self, spectra, candidates, k: int = 5, score: str = "embedding", *, levels: int = 8,
                 seed: int = 0, return_scores: bool = False):
        """Rank candidate molecules for each spectrum.

        ``score="embedding"``: one pass predicts bit probabilities ``p`` from the spectrum; a
        candidate with bits ``b`` scores the continuous Tanimoto ``p·b / (|p| + |b| - p·b)``
        (candidate bits are cached encodings). ``score="likelihood"``: the ELBO of the candidate's
        tokens and bits given the spectrum over ``levels`` masking levels (``len × levels`` passes).

        Args:
            spectra: as for :meth:`denovo`. candidates: one list of SMILES per spectrum.

        Returns:
            per spectrum, the top-``k`` candidate SMILES (with the scores of all candidates when
            ``return_scores``). Candidates that cannot be encoded are skipped (scored -inf).
        """
        if score not in ("embedding", "likelihood"):
            raise ValueError(f"score must be 'embedding' or 'likelihood', got {score!r}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        spec, prec, ce = self._spectra(spectra)
        candidates = [list(c) for c in candidates]
        if len(candidates) != spec.shape[0]:
            raise ValueError(f"candidates: one list per spectrum ({spec.shape[0]}), got {len(candidates)}")
        if score == "embedding":
            p = self.predict_bits({"spec": spec, "precursor": prec, "ce": ce})
        ranked, all_scores = [], []
        for i, cands in enumerate(candidates):
            enc = [self._encode_candidate(c) for c in cands]
            ok = [j for j, e in enumerate(enc) if e is not None]
            sc = np.full(len(cands), -np.inf)
            if ok:
                if score == "embedding":
                    bits = torch.as_tensor(np.stack([enc[j][1] for j in ok]), dtype=torch.float32, device=p.device)
                    inter = bits @ p[i]
                    sc[ok] = (inter / (bits.sum(1) + p[i].sum() - inter)).cpu().numpy()
                else:
                    sc[ok] = self._elbo(spec[i], prec[i], ce[i], [enc[j] for j in ok], levels, seed)
            order = np.argsort(-sc, kind="stable")
            ranked.append([cands[j] for j in order[:k] if np.isfinite(sc[j])])
            all_scores.append(sc)
        return (ranked, all_scores) if return_scores else ranked

    def _encode_candidate(self, smiles):
        cache = self.__dict__.setdefault("_cand_cache", {})
        if smiles not in cache:
            mol = mol_of(smiles)
            ids = self.tokenizer.encode(smiles) if mol is not None else None
            cache[smiles] = None if ids is None else (ids, fingerprint(mol))
            if len(cache) > 500_000:
                cache.clear()
        return cache[smiles]

    def _elbo(self, spec, prec, ce, enc, levels, seed):
        n, dev = len(enc), spec.device
        g = torch.Generator().manual_seed(seed)
        toks = torch.as_tensor(np.stack([e[0] for e in enc]), device=dev).repeat(levels, 1)
        bits = torch.as_tensor(np.stack([e[1] for e in enc]), dtype=torch.float32, device=dev).repeat(levels, 1)
        t = ((torch.arange(levels, dtype=torch.float32) + 0.5) / levels).repeat_interleave(n).to(dev)
        B = toks.shape[0]
        tm = torch.rand(toks.shape, generator=g).to(dev) > t[:, None]
        fm = torch.rand(bits.shape, generator=g).to(dev) > t[:, None]
        state = torch.tensor([GENERATED, GENERATED, GIVEN], device=dev).expand(B, 3)
        times = torch.stack([t, t, torch.ones_like(t)], 1)
        cond = self.conditions(prec.expand(B), ce.expand(B))
        logits, fl, _ = self(torch.where(tm, torch.ones_like(toks), toks), torch.where(fm, -torch.ones_like(bits), bits),
                             spec.expand(B, -1), cond, state, times)
        nll_t = (F.cross_entropy(logits.transpose(1, 2), toks, reduction="none") * tm).sum(1)
        nll_f = (F.binary_cross_entropy_with_logits(fl, bits, reduction="none") * fm).sum(1)
        w = 1.0 / (1.0 - t)  # the masked-diffusion ELBO weight of level t
        nll = ((nll_t + nll_f) * w).view(levels, n).mean(0)
        return (-nll).cpu().numpy()

    @torch.no_grad()
    def simulate(self, smiles, *, collision_energy: float = 30.0, steps: int = 16, seed: int = 0,
                 binned: bool = False):
        """Spectra of molecules: the rectified flow integrated (Euler, ``steps``) from noise.

        Args:
            smiles: a SMILES or a list. collision_energy: one value or one per molecule. Returns: ``matchms.Spectrum`` list (peaks at 1-Da bin
            positions), or ``(N, 400)`` binned vectors when ``binned``.

        Raises:
            ValueError: a molecule that cannot be encoded (invalid or out of vocabulary).
        """
        if isinstance(smiles, str):
            smiles = [smiles]
        enc = []
        for s in smiles:
            e = self._encode_candidate(s)
            if e is None:
                raise ValueError(f"cannot encode {s!r} (invalid SMILES or out of vocabulary)")
            enc.append(e)
        from molspecflow.simulator import precursor_mz

        dev = self._device()
        N = len(enc)
        toks = torch.as_tensor(np.stack([e[0] for e in enc]), device=dev)
        bits = torch.as_tensor(np.stack([e[1] for e in enc]), dtype=torch.float32, device=dev)
        prec = torch.tensor([precursor_mz(s) for s in smiles], dtype=torch.float32, device=dev)
        ce = torch.as_tensor(np.broadcast_to(np.asarray(collision_energy, dtype=np.float32), (N,)).copy(), device=dev)
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(N, N_BINS, generator=g).to(dev)
        state = torch.tensor([GIVEN, GIVEN, GENERATED], device=dev).expand(N, 3)
        cond = self.conditions(prec, ce)
        for s in range(steps):
            t = s / steps
            times = torch.tensor([1.0, 1.0, t], device=dev).expand(N, 3)
            _, _, vel = self(toks, bits, x, cond, state, times)
            x = x + vel / steps
        x = x.clamp(0, 1)
        if binned:
            return x.cpu().numpy()
        return [unbin_spectrum(x[i].cpu().numpy(), float(prec[i]), metadata={"simulated_by": "MolSpecFlow"})
                for i in range(N)]

    # saving -------------------------------------------------------------------------------------

    def save(self, path, **extra) -> None:
        """One self-contained file: the constructor's arguments (vocabulary included) and the weights."""
        from paperworks import atomic_torch_save

        atomic_torch_save({"config": self.config, "state_dict": self.state_dict(), "extra": extra}, path)

    @classmethod
    def load(cls, path, map_location="cpu") -> MolSpecFlow:
        """Load a model saved by :meth:`save` (``weights_only=True``)."""
        from pathlib import Path

        if not Path(path).is_file():
            raise FileNotFoundError(f"no MolSpecFlow checkpoint at {path}")
        blob = torch.load(path, map_location=map_location, weights_only=True)
        model = cls(**blob["config"])
        model.load_state_dict(blob["state_dict"])
        return model.eval()


def parse_formula(formula: str) -> np.ndarray:
    """Element counts (over :data:`ELEMENTS`) of a formula string like ``C10H12N2O``."""
    import re

    if not isinstance(formula, str) or not re.fullmatch(r"([A-Z][a-z]?\d*)+", formula):
        raise ValueError(f"formula must look like 'C10H12N2O', got {formula!r}")
    out = np.zeros(len(ELEMENTS))
    for el, n in re.findall(r"([A-Z][a-z]?)(\d*)", formula):
        if el not in ELEMENTS:
            raise ValueError(f"formula {formula!r}: element {el!r} is not modelled ({ELEMENTS})")
        out[ELEMENTS.index(el)] += int(n) if n else 1
    return out


def _rank(smis, formula, k):
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, s in enumerate(smis):
        if s is None:
            continue
        counts[s] = counts.get(s, 0) + 1
        first.setdefault(s, i)
    match = {s: (formula is not None and formula_of(s) == formula) for s in counts}
    order = sorted(counts, key=lambda s: (not match[s], -counts[s], first[s]))
    return order[:k]


__all__ = ["HEAVY", "MolSpecFlow", "TASKS", "element_counts", "parse_formula"]
