"""Batched activation patching (per module and per head) and edge path patching on any :class:`ModelAccess`.

A *pair* is a clean prompt and its corrupted (counterfactual) prompt of the same length, with the
clean answer token ``a`` and the foil ``b`` (usually the corrupted prompt's answer). The metric is the
last-position logit difference ``LD = logit[a] - logit[b]``; with ``LD_c`` (clean run), ``LD_x``
(corrupted run) and ``LD_p`` (patched run):

- denoising (clean value into the corrupted run): ``effect = sum(LD_p - LD_x) / sum(LD_c - LD_x)``;
- noising (corrupted value into the clean run): ``effect = sum(LD_c - LD_p) / sum(LD_c - LD_x)``.

Every site (or edge) goes in one batched forward pass per chunk of pairs: the base batch repeated
once per site, each copy patched on its own rows.

References: activation patching / causal tracing (Meng et al. 2022, ROME); path patching (Wang et al.
2022, IOI; Goldowsky-Dill et al. 2023).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from paperworks.lm.access import ModelAccess


def _access(model) -> ModelAccess:
    return model if isinstance(model, ModelAccess) else ModelAccess(model)


def logit_diff(logits: torch.Tensor, answers: torch.Tensor, foils: torch.Tensor) -> torch.Tensor:
    """``logits[i, answers[i]] - logits[i, foils[i]]`` for ``(B, V)`` logits."""
    return logits.gather(1, answers[:, None])[:, 0] - logits.gather(1, foils[:, None])[:, 0]


def _check_pairs(acc: ModelAccess, clean_ids, corrupt_ids, answers, foils):
    acc.check_input(clean_ids, name="clean_ids")
    acc.check_input(corrupt_ids, name="corrupt_ids")
    if clean_ids.shape != corrupt_ids.shape:
        raise ValueError(f"corrupt_ids must have the shape of clean_ids {tuple(clean_ids.shape)}, "
                         f"got {tuple(corrupt_ids.shape)}")
    out = []
    for name, t in (("answers", answers), ("foils", foils)):
        t = torch.as_tensor(t, dtype=torch.long).cpu()
        if t.shape != (len(clean_ids),):
            raise ValueError(f"{name} must have shape ({len(clean_ids)},), got {tuple(t.shape)}")
        if acc.vocab_size is not None and (int(t.min()) < 0 or int(t.max()) >= acc.vocab_size):
            raise ValueError(f"{name}: token ids must be in [0, {acc.vocab_size})")
        out.append(t)
    if (out[0] == out[1]).any():
        raise ValueError("foils: a pair has answer == foil (its logit difference is 0 by construction)")
    return out


def _ratio(num: float, den: float) -> float:
    if den == 0:
        raise ValueError("the clean and corrupted runs have the same total logit difference: the effect is undefined")
    return num / den


def patch(model, clean_ids: torch.Tensor, corrupt_ids: torch.Tensor, answers, foils, *,
          sites: Sequence[str] | None = None, mode: str = "denoise", chunk: int = 256) -> dict:
    """Activation patching of each site at all positions, all sites batched.

    Args:
        model: a Hugging Face causal LM or a :class:`ModelAccess`.
        clean_ids, corrupt_ids: ``(N, T)`` pairs of prompts.
        answers, foils: ``(N,)`` token ids (the metric is ``logit[answer] - logit[foil]``).
        sites: default every module; any site works, e.g. ``acc.heads(3)`` (every head of block 3)
            or ``"attn0.k[1]"`` (one key/value head under grouped-query attention).
        mode: ``"denoise"`` (clean into corrupted; recovery) or ``"noise"`` (corrupted into clean).

    Returns:
        ``{"effect": {site: float}, "clean_ld", "corrupt_ld", "n_pairs"}``.

    Example:
        >>> patch(model, clean, corrupt, a, b, sites=acc.heads(0))["effect"]["attn0.z[1]"]  # doctest: +SKIP
    """
    acc = _access(model)
    if mode not in ("denoise", "noise"):
        raise ValueError(f"mode must be 'denoise' or 'noise', got {mode!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    answers, foils = _check_pairs(acc, clean_ids, corrupt_ids, answers, foils)
    sites = list(acc.modules if sites is None else sites)
    if not sites:
        raise ValueError("sites: empty list (give at least one site, or None for every module)")
    sites = [acc.check_site(s) for s in sites]
    num, den, ldc, ldx = dict.fromkeys(sites, 0.0), 0.0, 0.0, 0.0
    for s in range(0, len(answers), chunk):
        c_ids, x_ids = clean_ids[s:s + chunk], corrupt_ids[s:s + chunk]
        a, b = answers[s:s + chunk], foils[s:s + chunk]
        n = len(a)
        lc, cache_c = acc.run(c_ids, cache=sites)
        lx, cache_x = acc.run(x_ids, cache=sites)
        ld_c, ld_x = logit_diff(lc, a, b), logit_diff(lx, a, b)
        base, source = (x_ids, cache_c) if mode == "denoise" else (c_ids, cache_x)
        rep = {m: (torch.arange(k * n, (k + 1) * n), source[m]) for k, m in enumerate(sites)}
        lp, _ = acc.run(base.repeat(len(sites), 1), replace=rep)
        ld_p = logit_diff(lp, a.repeat(len(sites)), b.repeat(len(sites))).view(len(sites), n)
        for k, m in enumerate(sites):
            num[m] += float((ld_p[k] - ld_x).sum() if mode == "denoise" else (ld_c - ld_p[k]).sum())
        den += float((ld_c - ld_x).sum())
        ldc += float(ld_c.sum())
        ldx += float(ld_x.sum())
    return {"effect": {m: _ratio(num[m], den) for m in sites}, "clean_ld": ldc / len(answers),
            "corrupt_ld": ldx / len(answers), "n_pairs": int(len(answers))}


def all_edges(model, *, heads: bool = False) -> list[tuple[str, str]]:
    """Every sender -> receiver pair that exists (``emb``/modules -> later modules/``logits``);
    with ``heads`` the attention senders are split into their heads ``attn{i}.z[h]``."""
    acc = _access(model)
    senders = acc.senders
    if heads:
        senders = [h for s in senders for h in (acc.heads(int(s[4:])) if s.startswith("attn") else [s])]
    return [(u, v) for u in senders for v in acc.receivers if acc.is_edge(u, v)]


def check_edges(acc: ModelAccess, edges) -> list[tuple[str, str]]:
    """Validate ``(sender, receiver)`` pairs: senders ``emb``/modules/heads ``attn{i}.z[h]``, receivers
    modules/``logits``, forward in the model and read through the residual stream."""
    if edges is None or isinstance(edges, (str, bytes)) or not hasattr(edges, "__iter__"):
        raise TypeError(f"edges must be a list of (sender, receiver) pairs, got {type(edges).__name__}")
    edges = list(edges)
    if not edges:
        raise ValueError("edges: empty list (give at least one (sender, receiver) pair, or None for all edges)")
    out = []
    for e in edges:
        if not (isinstance(e, (tuple, list)) and len(e) == 2):
            raise TypeError(f"edges: each edge must be a (sender, receiver) pair, got {e!r}")
        u, v = str(e[0]), str(e[1])
        if u == "logits" or v == "emb":
            raise ValueError(f"edges: {u!r} -> {v!r} does not go forward through the model")
        if u != "emb":
            acc.check_site(u)
            if "." in u and ".z[" not in u:
                raise ValueError(f"edges: sender {u!r} must be 'emb', a module or a head attn<i>.z[h]")
        if v != "logits":
            acc.check_site(v)
            if "." in v:
                raise ValueError(f"edges: receiver {v!r} must be a module or 'logits'")
        if acc.order(u) >= acc.order(v):
            raise ValueError(f"edges: {u!r} -> {v!r} does not go forward through the model")
        if not acc.is_edge(u, v):
            raise ValueError(f"edges: {v!r} does not read {u!r} (parallel-residual block)")
        if ".z[" in u and not acc.head_writes_additive:
            acc.head_write(0, torch.zeros(1), 0)  # raises the reason
        out.append((u, v))
    return out


def sender_value(acc: ModelAccess, cache: dict, sender: str) -> torch.Tensor:
    """What ``sender`` writes into the residual stream, from a cache of its site."""
    if ".z[" in sender:
        block, head = int(sender[4:sender.index(".")]), int(sender[sender.index("[") + 1:-1])
        return acc.head_write(block, cache[sender], head)
    return cache[sender]


def path_patch(model, clean_ids: torch.Tensor, corrupt_ids: torch.Tensor, answers, foils, *,
               edges=None, chunk: int = 128) -> dict:
    """Edge-level (two-pass) path patching: the clean value of sender ``u`` reaches receiver ``v`` only.

    Pass 1 caches every sender on the clean and the corrupted prompts; pass 2 runs the corrupted
    prompts with ``clean_u - corrupt_u`` added to the residual stream read by ``v`` (nothing else sees
    it; ``v``'s changed output propagates downstream). The effect is the denoising recovery. All edges
    go in one batched pass per chunk. A head sender ``attn{i}.z[h]`` writes ``W_O[:, h] z_h``
    (:meth:`ModelAccess.head_write`).

    Returns:
        ``{"effect": {(u, v): float}, "n_pairs"}``.
    """
    acc = _access(model)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    edges = check_edges(acc, all_edges(acc) if edges is None else edges)
    answers, foils = _check_pairs(acc, clean_ids, corrupt_ids, answers, foils)
    senders = sorted({u for u, _ in edges}, key=acc.order)
    num, den = dict.fromkeys(edges, 0.0), 0.0
    for s in range(0, len(answers), chunk):
        c_ids, x_ids = clean_ids[s:s + chunk], corrupt_ids[s:s + chunk]
        a, b = answers[s:s + chunk], foils[s:s + chunk]
        n = len(a)
        lc, cache_c = acc.run(c_ids, cache=senders)
        lx, cache_x = acc.run(x_ids, cache=senders)
        ld_c, ld_x = logit_diff(lc, a, b), logit_diff(lx, a, b)
        delta = {u: sender_value(acc, cache_c, u) - sender_value(acc, cache_x, u) for u in senders}
        add: dict[str, list] = {}
        for k, (u, v) in enumerate(edges):
            add.setdefault(v, []).append((torch.arange(k * n, (k + 1) * n), delta[u]))
        lp, _ = acc.run(x_ids.repeat(len(edges), 1), add=add)
        ld_p = logit_diff(lp, a.repeat(len(edges)), b.repeat(len(edges))).view(len(edges), n)
        for k, e in enumerate(edges):
            num[e] += float((ld_p[k] - ld_x).sum())
        den += float((ld_c - ld_x).sum())
    return {"effect": {e: _ratio(num[e], den) for e in edges}, "n_pairs": int(len(answers))}
