"""Probes, matched-counterfactual activation patching, edge path patching and causal scrubbing.

Every function takes any Hugging Face causal LM and a :class:`~factlocus.data.PromptSet` (equal-length
prompts, single-token answers) and reads the model only through :class:`~paperworks.lm.ModelAccess`.

Logit difference of a prompt ``i`` with matched counterfactual ``j``: ``LD = logit[a_i] - logit[a_j]``
at the last position. With ``LD_c`` (clean run), ``LD_x`` (counterfactual run) and ``LD_p`` (patched run):

- denoising (clean activation into the counterfactual run): ``recovery = sum(LD_p - LD_x) / sum(LD_c - LD_x)``;
- noising (counterfactual activation into the clean run):  ``effect = sum(LD_c - LD_p) / sum(LD_c - LD_x)``.

References: activation patching / causal tracing (Meng et al. 2022, ROME); path patching (Wang et al.
2022, IOI; Goldowsky-Dill et al. 2023); causal scrubbing (Chan et al. 2022, Redwood); probe control
tasks and selectivity (Hewitt & Liang 2019).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from factlocus.data import PromptSet, check_counterfactuals, matched_counterfactuals
from paperworks.lm import ModelAccess, check_edges, residual_after


def _check_data(data) -> PromptSet:
    if not isinstance(data, PromptSet):
        raise TypeError(f"data must be a factlocus.PromptSet, got {type(data).__name__}")
    return data


def _access(model) -> ModelAccess:
    return model if isinstance(model, ModelAccess) else ModelAccess(model)


def _pairs(data: PromptSet, counterfactual, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(clean, cf)`` of the matched pairs."""
    if counterfactual is None:
        if data.subjects is None or data.relations is None:
            raise ValueError("counterfactual: give the pairing, or data with subjects and relations to match on")
        counterfactual = matched_counterfactuals(data.subjects, data.relations, data.answer_ids.numpy(),
                                                 np.random.default_rng(seed))
        check_counterfactuals(counterfactual, data.subjects, data.relations, data.answer_ids.numpy())
    raw = np.asarray(counterfactual)
    if raw.dtype == bool or not np.issubdtype(raw.dtype, np.integer):
        raise TypeError(f"counterfactual must hold integer indices (-1: no pair), got dtype {raw.dtype}")
    cf = raw.astype(np.int64)
    if cf.shape != (len(data),):
        raise ValueError(f"counterfactual must have shape ({len(data)},), got {cf.shape}")
    if (cf >= len(data)).any() or (cf < -1).any():
        raise ValueError(f"counterfactual: indices must lie in [0, {len(data)}) or be -1 (no pair); "
                         f"got min {int(cf.min())}, max {int(cf.max())}")
    clean = np.flatnonzero(cf >= 0)
    if not len(clean):
        raise ValueError("counterfactual: no prompt has a matched counterfactual")
    if (data.answer_ids[clean] == data.answer_ids[cf[clean]]).any():
        raise ValueError("counterfactual: a pair has the same answer (the logit difference would be 0)")
    return clean, cf[clean]


def _ld(logits: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return logits.gather(1, a[:, None])[:, 0] - logits.gather(1, b[:, None])[:, 0]


# probes -------------------------------------------------------------------------------------

def probe_modules(model, data: PromptSet, *, modules: Sequence[str] | None = None, train_frac: float = 0.7,
                  control: bool = True, seed: int = 0, max_iter: int = 300, C: float = 1.0, labels=None,
                  split: str = "prompt", position: int = -1) -> dict:
    """Linear probes on the residual stream after each module, scored on held-out facts.

    The facts (prompts) are split into disjoint train/test sets; a logistic-regression probe is fitted
    on the train facts' last-position residuals and scored only on the test facts. With ``control``
    a Hewitt-Liang control task is probed too: a fixed random label per *subject* (seen subjects
    recur across the split, so the control is learnable by decoding the subject); ``selectivity =
    accuracy - control accuracy``.

    Args:
        labels: ``(N,)`` what to decode (default: the answer tokens), e.g. ``data.bridges`` for the
            bridge entity of two-hop prompts.
        split: ``"prompt"`` (a random split of prompts) or ``"subject"`` (test prompts have subjects
            the probe never saw -- needed when the label is a function of the subject, as a bridge
            entity is; the control task is then not learnable and is skipped).
        position: the token position whose residual is probed (default: the last).

    Returns ``{"accuracy": {m: .}, "train_accuracy": {m: .}, "control": {m: .}, "selectivity": {m: .},
    "train_index", "test_index"}``.
    """
    data, acc = _check_data(data), _access(model)
    if not 0 < train_frac < 1:
        raise ValueError(f"train_frac must be in (0, 1), got {train_frac}")
    modules = list(modules or acc.modules)
    for m in modules:
        if "." in acc.check_site(m) or m == "emb":
            raise ValueError(f"modules: {m!r} is not a module (attn<i>/mlp<i>)")
    if split not in ("prompt", "subject"):
        raise ValueError(f"split must be 'prompt' or 'subject', got {split!r}")
    y = data.answer_ids.numpy() if labels is None else np.asarray(labels)
    if y.shape != (len(data),):
        raise ValueError(f"labels must have shape ({len(data)},), got {y.shape}")
    rng = np.random.default_rng(seed)
    groups = data.subjects if data.subjects is not None else data.input_ids[:, 0].numpy()
    if split == "subject":
        uniq = rng.permutation(np.unique(groups))
        train_groups = uniq[:int(round(train_frac * len(uniq)))]
        is_tr = np.isin(groups, train_groups)
        tr, te = np.flatnonzero(is_tr), np.flatnonzero(~is_tr)
        control = False
    else:
        perm = rng.permutation(len(data))
        n_tr = int(round(train_frac * len(data)))
        tr, te = np.sort(perm[:n_tr]), np.sort(perm[n_tr:])
    if not len(tr) or not len(te):
        raise ValueError(f"data: {len(data)} prompts are too few to split into train and test facts")
    _, cache = acc.run(data.input_ids, cache=["emb", *acc.modules])
    ctrl_map = {g: int(rng.integers(0, max(2, len(np.unique(y))))) for g in np.unique(groups)}
    y_ctrl = np.array([ctrl_map[g] for g in groups])
    out = {"accuracy": {}, "train_accuracy": {}, "control": {}, "selectivity": {},
           "train_index": tr, "test_index": te}

    def fit_score(X, labels):
        if len(np.unique(labels[tr])) < 2:
            return float(np.mean(labels[te] == labels[tr][0])), 1.0
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter, C=C))
        clf.fit(X[tr], labels[tr])
        return float(clf.score(X[te], labels[te])), float(clf.score(X[tr], labels[tr]))

    for m in modules:
        X = residual_after(cache, acc, m)[:, position].float().cpu().numpy()
        out["accuracy"][m], out["train_accuracy"][m] = fit_score(X, y)
        if control:
            out["control"][m] = fit_score(X, y_ctrl)[0]
            out["selectivity"][m] = out["accuracy"][m] - out["control"][m]
    return out


# activation patching ------------------------------------------------------------------------

def patch_modules(model, data: PromptSet, *, counterfactual=None, modules: Sequence[str] | None = None,
                  mode: str = "denoise", seed: int = 0, chunk: int = 256) -> dict:
    """Matched-counterfactual activation patching of each module's output (all positions).

    All modules are patched in one batched forward pass per chunk of pairs (the counterfactual batch
    repeated once per module, with per-row replacement hooks).

    Args:
        counterfactual: ``(N,)`` index of each prompt's counterfactual in ``data`` (``-1`` = none);
            default: :func:`~factlocus.data.matched_counterfactuals` on ``data``'s labels.
        mode: ``"denoise"`` (clean into counterfactual; recovery) or ``"noise"`` (counterfactual into clean).

    Returns ``{"effect": {module: float}, "clean_ld", "cf_ld", "n_pairs", "coverage"}``: ``coverage`` is the
    fraction of ``data``'s prompts that have a counterfactual (the effect is measured on those only).
    """
    data, acc = _check_data(data), _access(model)
    if mode not in ("denoise", "noise"):
        raise ValueError(f"mode must be 'denoise' or 'noise', got {mode!r}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    modules = [acc.check_site(m) for m in (modules or acc.modules)]
    ci, xi = _pairs(data, counterfactual, seed)
    num = {m: 0.0 for m in modules}
    den, ld_c_sum, ld_x_sum = 0.0, 0.0, 0.0
    for s in range(0, len(ci), chunk):
        c_ids, x_ids = data.input_ids[ci[s:s + chunk]], data.input_ids[xi[s:s + chunk]]
        a, b = data.answer_ids[ci[s:s + chunk]], data.answer_ids[xi[s:s + chunk]]
        n = len(a)
        lc, cache_c = acc.run(c_ids, cache=modules)
        lx, cache_x = acc.run(x_ids, cache=modules)
        ld_c, ld_x = _ld(lc, a, b), _ld(lx, a, b)
        base, source = (x_ids, cache_c) if mode == "denoise" else (c_ids, cache_x)
        rep = {m: (torch.arange(k * n, (k + 1) * n), source[m]) for k, m in enumerate(modules)}
        lp, _ = acc.run(base.repeat(len(modules), 1), replace=rep)
        ld_p = _ld(lp, a.repeat(len(modules)), b.repeat(len(modules))).view(len(modules), n)
        for k, m in enumerate(modules):
            num[m] += float((ld_p[k] - ld_x).sum() if mode == "denoise" else (ld_c - ld_p[k]).sum())
        den += float((ld_c - ld_x).sum())
        ld_c_sum += float(ld_c.sum())
        ld_x_sum += float(ld_x.sum())
    return {"effect": {m: num[m] / den for m in modules}, "clean_ld": ld_c_sum / len(ci),
            "cf_ld": ld_x_sum / len(ci), "n_pairs": int(len(ci)), "coverage": len(ci) / len(data)}


def patch_heads(model, data: PromptSet, *, part: str = "z", blocks: Sequence[int] | None = None, **kw) -> dict:
    """Per-head matched-counterfactual patching (:func:`patch_modules` on head sites, one batched pass).

    ``part="z"``: each query head's output (its slice of the input to the attention output projection).
    ``part="k"``/``"v"``: each key/value head's slice of the key/value projection; with grouped-query
    attention one such head serves several query heads, listed under ``heads`` (``acc.query_heads``);
    models with a fused QKV projection (GPT-2) have only ``z`` heads. ``**kw`` go to :func:`patch_modules`.

    Returns its dict plus ``heads``: ``{site: {"block", "head", "kv_head"}}`` for ``z`` (the key/value
    head each query head attends with) or ``{site: {"block", "head", "query_heads"}}`` for ``k``/``v``.
    """
    acc = _access(model)
    if part not in ("z", "k", "v"):
        raise ValueError(f"part must be 'z', 'k' or 'v', got {part!r}")
    n_blocks = len(acc.blocks)
    blocks = list(range(n_blocks)) if blocks is None else [int(b) for b in blocks]
    if any(not 0 <= b < n_blocks for b in blocks):
        raise ValueError(f"blocks must lie in [0, {n_blocks}), got {blocks}")
    sites = [s for b in blocks for s in acc.heads(b, part)]
    res = patch_modules(model, data, modules=sites, **kw)   # fused QKV: paperworks.lm's clear error, first pass
    info = {}
    for b in blocks:
        for h, s in enumerate(acc.heads(b, part)):
            info[s] = ({"block": b, "head": h, "kv_head": acc.kv_head(h)} if part == "z"
                       else {"block": b, "head": h, "query_heads": acc.query_heads(h)})
    res["heads"] = info
    return res


def patch_modules_per_module(model, data: PromptSet, *, counterfactual=None, modules=None, seed: int = 0,
                             chunk: int = 256) -> dict:
    """The usual way to patch: one batched forward pass per module (clean and counterfactual caches computed
    once per chunk, then each module patched over the whole chunk in its own pass), as a TransformerLens user
    writes it with ``run_with_cache`` and one ``run_with_hooks`` per layer.

    Same numbers as :func:`patch_modules` (``mode="denoise"``); the benchmark's strong baseline.
    """
    data, acc = _check_data(data), _access(model)
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    modules = [acc.check_site(m) for m in (modules or acc.modules)]
    ci, xi = _pairs(data, counterfactual, seed)
    num = {m: 0.0 for m in modules}
    den = 0.0
    for s in range(0, len(ci), chunk):
        c_ids, x_ids = data.input_ids[ci[s:s + chunk]], data.input_ids[xi[s:s + chunk]]
        a, b = data.answer_ids[ci[s:s + chunk]], data.answer_ids[xi[s:s + chunk]]
        lc, cache_c = acc.run(c_ids, cache=modules)
        lx, _ = acc.run(x_ids)
        ld_c, ld_x = _ld(lc, a, b), _ld(lx, a, b)
        rows = torch.arange(len(a))
        for m in modules:
            lp, _ = acc.run(x_ids, replace={m: (rows, cache_c[m])})
            num[m] += float((_ld(lp, a, b) - ld_x).sum())
        den += float((ld_c - ld_x).sum())
    return {"effect": {m: num[m] / den for m in modules}, "n_pairs": int(len(ci)), "coverage": len(ci) / len(data)}


def patch_modules_naive(model, data: PromptSet, *, counterfactual=None, modules=None, seed: int = 0) -> dict:
    """Reference loop: one forward pass per (pair, module), clean cache recomputed per patch.

    Same numbers as :func:`patch_modules` (``mode="denoise"``); used by the benchmark and the tests.
    """
    data, acc = _check_data(data), _access(model)
    modules = [acc.check_site(m) for m in (modules or acc.modules)]
    ci, xi = _pairs(data, counterfactual, seed)
    num = {m: 0.0 for m in modules}
    den = 0.0
    for i, j in zip(ci, xi):
        c_ids, x_ids = data.input_ids[i:i + 1], data.input_ids[j:j + 1]
        a, b = data.answer_ids[i:i + 1], data.answer_ids[j:j + 1]
        lx, _ = acc.run(x_ids)
        ld_x = _ld(lx, a, b)
        for m in modules:
            lc, cache_c = acc.run(c_ids, cache=[m])
            lp, _ = acc.run(x_ids, replace={m: (torch.arange(1), cache_c[m])})
            num[m] += float((_ld(lp, a, b) - ld_x).sum())
        den += float((_ld(lc, a, b) - ld_x).sum())
    return {"effect": {m: num[m] / den for m in modules}, "n_pairs": int(len(ci)), "coverage": len(ci) / len(data)}


# path patching ------------------------------------------------------------------------------

def all_edges(model) -> list[tuple[str, str]]:
    """Every sender -> receiver pair that exists (``emb``/modules -> later modules/``logits``)."""
    acc = _access(model)
    return [(u, v) for u in acc.senders for v in acc.receivers if acc.is_edge(u, v)]


def _check_edges(acc: ModelAccess, edges) -> list[tuple[str, str]]:
    """``paperworks.lm.check_edges`` (forward, read through the residual stream, not empty), module senders only."""
    out = check_edges(acc, edges)
    for u, _ in out:
        if ".z[" in u:
            raise ValueError(f"edges: factlocus path-patches modules; for the head sender {u!r} use "
                             "paperworks.lm.path_patch")
    return out


def path_patch(model, data: PromptSet, *, edges=None, counterfactual=None, seed: int = 0, chunk: int = 128) -> dict:
    """Edge-level (two-pass) path patching: the clean value of sender ``u`` reaches receiver ``v`` only.

    Pass 1 caches every sender on the clean and the counterfactual prompts; pass 2 runs the
    counterfactual prompts with ``clean_u - cf_u`` added to the residual stream read by ``v``
    (nothing else sees it; ``v``'s changed output propagates downstream). The effect is the
    denoising logit-difference recovery. All edges go in one batched pass per chunk.

    Returns ``{"effect": {(u, v): float}, "n_pairs", "coverage"}`` (as :func:`patch_modules`).
    """
    data, acc = _check_data(data), _access(model)
    edges = _check_edges(acc, edges if edges is not None else all_edges(acc))
    senders = sorted({u for u, _ in edges}, key=acc.order)
    ci, xi = _pairs(data, counterfactual, seed)
    num = {e: 0.0 for e in edges}
    den = 0.0
    for s in range(0, len(ci), chunk):
        c_ids, x_ids = data.input_ids[ci[s:s + chunk]], data.input_ids[xi[s:s + chunk]]
        a, b = data.answer_ids[ci[s:s + chunk]], data.answer_ids[xi[s:s + chunk]]
        n = len(a)
        lc, cache_c = acc.run(c_ids, cache=senders)
        lx, cache_x = acc.run(x_ids, cache=senders)
        ld_c, ld_x = _ld(lc, a, b), _ld(lx, a, b)
        add: dict[str, list] = {}
        for k, (u, v) in enumerate(edges):
            add.setdefault(v, []).append((torch.arange(k * n, (k + 1) * n), cache_c[u] - cache_x[u]))
        lp, _ = acc.run(x_ids.repeat(len(edges), 1), add=add)
        ld_p = _ld(lp, a.repeat(len(edges)), b.repeat(len(edges))).view(len(edges), n)
        for k, e in enumerate(edges):
            num[e] += float((ld_p[k] - ld_x).sum())
        den += float((ld_c - ld_x).sum())
    return {"effect": {e: num[e] / den for e in edges}, "n_pairs": int(len(ci)), "coverage": len(ci) / len(data)}


# causal scrubbing ---------------------------------------------------------------------------

def chain_hypothesis(model) -> list[tuple[str, str]]:
    """The chain ``emb -> attn0 -> mlp0 -> mlp1 -> ... -> logits`` (the paper's Attn -> MLP1 -> MLP2)."""
    acc = _access(model)
    path = ["emb", "attn0", *[f"mlp{i}" for i in range(len(acc.blocks))], "logits"]
    edges = list(zip(path[:-1], path[1:]))
    if acc.parallel_residual and len(acc.blocks) > 1:  # mlp0 does not read attn0: the chain goes attn0 -> mlp1
        edges = [("emb", "attn0"), ("emb", "mlp0"), ("attn0", "mlp1"), *edges[2:]]
    return edges


def two_step_hypothesis(model, *, first: int = 0, second: int | None = None) -> list[tuple[str, str]]:
    """The two-step chain of two-hop recall: hop 1 in block ``first`` (``attn`` gathers subject and
    bridge relation, ``mlp`` looks up the bridge entity), hop 2 in block ``second`` (default: the last;
    ``attn`` moves the bridge to the final position, ``mlp`` looks up its attribute):
    ``emb -> attn{first} -> mlp{first} -> attn{second} -> mlp{second} -> logits``."""
    acc = _access(model)
    second = len(acc.blocks) - 1 if second is None else second
    if not 0 <= first < second < len(acc.blocks):
        raise ValueError(f"need 0 <= first < second < {len(acc.blocks)} blocks, got first={first}, second={second}")
    path = ["emb", f"attn{first}", f"mlp{first}", f"attn{second}", f"mlp{second}", "logits"]
    return list(zip(path[:-1], path[1:]))


def _resample_index(data: PromptSet, within: str, rng: np.random.Generator) -> np.ndarray:
    n = len(data)
    if within == "all":
        keys = np.zeros(n, dtype=np.int64)
    elif within == "relation":
        if data.relations is None:
            raise ValueError("within='relation' needs data with relations")
        keys = np.asarray(data.relations)
    else:
        raise ValueError(f"within must be 'relation' or 'all', got {within!r}")
    subj = data.subjects if data.subjects is not None else data.input_ids[:, 0].numpy()
    out = np.arange(n)
    for k in np.unique(keys):
        idx = np.flatnonzero(keys == k)
        for i in idx:
            cand = idx[subj[idx] != subj[i]]
            out[i] = rng.choice(cand) if len(cand) else i
    return out


def causal_scrub(model, data: PromptSet, *, hypothesis=None, within: str = "relation", seed: int = 0,
                 chunk: int = 512) -> dict:
    """Causal scrubbing of an edge hypothesis by resampling ablation.

    The hypothesis names the edges that matter; every other edge ``u -> v`` is *scrubbed*: ``v`` reads
    ``u``'s value from a resampled prompt of the same equivalence class (same relation, different
    subject, by default) instead of the prompt's own (one resampling level, as in resampling ablation).
    ``loss_recovered = (L_all_scrubbed - L_hypothesis) / (L_all_scrubbed - L_clean)``, with ``L`` the
    answer cross-entropy: 1 means the hypothesis explains the model's recall, 0 that it explains none.

    Returns ``{"loss_clean", "loss_scrubbed", "loss_random", "loss_recovered"}``.
    """
    data, acc = _check_data(data), _access(model)
    hyp = set(_check_edges(acc, hypothesis if hypothesis is not None else chain_hypothesis(acc)))
    everything = all_edges(acc)
    rs = _resample_index(data, within, np.random.default_rng(seed))
    loss = {"clean": 0.0, "scrubbed": 0.0, "random": 0.0}
    for s in range(0, len(data), chunk):
        ids, a = data.input_ids[s:s + chunk], data.answer_ids[s:s + chunk]
        _, res = acc.run(data.input_ids[rs[s:s + chunk]], cache=acc.senders)
        rows = torch.arange(len(a))
        for key, keep in (("clean", set(everything)), ("scrubbed", hyp), ("random", set())):
            add: dict[str, list] = {}
            for u, v in everything:
                if (u, v) not in keep:
                    add.setdefault(v, []).append((rows, lambda live, u=u, res=res: res[u] - live[u]))
            logits, _ = acc.run(ids, cache=acc.senders, add=add)
            loss[key] += float(torch.nn.functional.cross_entropy(logits, a, reduction="sum"))
    L = {k: v / len(data) for k, v in loss.items()}
    gap = L["random"] - L["clean"]
    return {"loss_clean": L["clean"], "loss_scrubbed": L["scrubbed"], "loss_random": L["random"],
            "loss_recovered": (L["random"] - L["scrubbed"]) / gap if gap > 0 else float("nan")}
