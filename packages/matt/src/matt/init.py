"""Embedding initialisers for a new tokenizer: FVT, FOCUS-lite and random.

Each writes the new input embeddings (and, for an untied head, the new output rows) into the model
in place and returns the new input-embedding matrix ``(len(new_tokenizer), d)``.

- **FVT** (Gee et al., 2022): a new token's embedding is the mean of the old embeddings of the old
  tokens its string splits into; a token that exists in both vocabularies is copied.
- **FOCUS-lite** (after Dobler & de Melo, 2023): overlapping tokens are copied; a new token is a
  sparse convex combination (sparsemax over cosine similarities / temperature) of overlapping
  tokens, the similarities taken between *auxiliary* embeddings of the new vocabulary fitted on the
  target texts. FOCUS fits fastText; here (inferred stand-in, offline, no extra dependency) the
  auxiliary embeddings are a truncated SVD of the positive PMI co-occurrence matrix (window ±2).
  Tokens unseen in the texts fall back to FVT.
- **random**: normal with the old embeddings' per-dimension mean and overall standard deviation.
"""

from __future__ import annotations

import numpy as np
import torch

from matt.align import check_fast


def _check_model(model) -> None:
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "get_input_embeddings"):
        raise TypeError(f"model must be a transformers PreTrainedModel, got {type(model).__name__}")
    if getattr(getattr(model, "config", None), "is_encoder_decoder", False):
        raise ValueError("model: encoder-decoder models are out of scope (MATT transfers decoder-only causal LMs)")


def token_strings(tokenizer) -> list[str]:
    """The text each token id stands for (special tokens as their own string)."""
    special = set(tokenizer.all_special_tokens)
    out = []
    for tok in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer)))):
        if tok is None:
            out.append("")
        elif tok in special:
            out.append(tok)
        else:
            out.append(tokenizer.convert_tokens_to_string([tok]))
    return out


def _special_map(tokenizer, new_tokenizer) -> dict[int, int]:
    """new special id -> old id, by role (bos/eos/pad/unk) or by identical string."""
    out = {}
    for role in ("bos_token", "eos_token", "pad_token", "unk_token"):
        nt, ot = getattr(new_tokenizer, role, None), getattr(tokenizer, role, None)
        if nt is not None and ot is not None:
            out[new_tokenizer.convert_tokens_to_ids(nt)] = tokenizer.convert_tokens_to_ids(ot)
    old_vocab = tokenizer.get_vocab()
    for t in new_tokenizer.all_special_tokens:
        i = new_tokenizer.convert_tokens_to_ids(t)
        if i not in out and t in old_vocab:
            out[i] = old_vocab[t]
    return out


def overlap(tokenizer, new_tokenizer) -> dict[int, int]:
    """new id -> old id for tokens standing for the same string in both (special tokens by role)."""
    old = {}
    for i, s in enumerate(token_strings(tokenizer)):
        if s:
            old.setdefault(s, i)
    out = {j: old[s] for j, s in enumerate(token_strings(new_tokenizer)) if s and s in old}
    out.update(_special_map(tokenizer, new_tokenizer))
    return out


def _fvt_rows(tokenizer, new_tokenizer) -> list[list[int]]:
    """For each new token, the old ids whose mean initialises it (empty: no decomposition)."""
    same = overlap(tokenizer, new_tokenizer)
    special = set(new_tokenizer.all_special_ids)
    rows = []
    for j, s in enumerate(token_strings(new_tokenizer)):
        if j in same:
            rows.append([same[j]])
        elif j in special or not s:
            rows.append([])
        else:
            rows.append(tokenizer(s, add_special_tokens=False)["input_ids"])
    return rows


def _combine(old: torch.Tensor, rows) -> torch.Tensor:
    """``new[j] = Σ w old[i]`` for ``rows[j] = (ids, weights)``; empty rows get the mean of ``old``."""
    mean = old.mean(0)
    out = torch.empty(len(rows), old.shape[1], dtype=old.dtype, device=old.device)
    for j, (ids, w) in enumerate(rows):
        if len(ids) == 0:
            out[j] = mean
        else:
            w = torch.as_tensor(w, dtype=old.dtype, device=old.device)
            out[j] = (w[:, None] * old[torch.as_tensor(ids, device=old.device)]).sum(0)
    return out


def set_embeddings(model, new_tokenizer, emb: torch.Tensor, head: torch.Tensor | None = None) -> torch.Tensor:
    """Resize the model to ``len(new_tokenizer)`` and write the new input (and untied output) rows."""
    n = len(new_tokenizer)
    model.resize_token_embeddings(n)
    with torch.no_grad():
        model.get_input_embeddings().weight.copy_(emb)
        out = model.get_output_embeddings()
        tied = out is None or out.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
        if not tied and head is not None:
            out.weight.copy_(head)
            if getattr(out, "bias", None) is not None:
                out.bias.zero_()
    cfg = model.config
    cfg.vocab_size = n
    for role in ("pad", "bos", "eos"):
        tid = getattr(new_tokenizer, f"{role}_token_id", None)
        if tid is not None:
            setattr(cfg, f"{role}_token_id", tid)
            if getattr(model, "generation_config", None) is not None:
                setattr(model.generation_config, f"{role}_token_id", tid)
    return model.get_input_embeddings().weight


def _apply(model, new_tokenizer, rows) -> torch.Tensor:
    old_in = model.get_input_embeddings().weight.detach().clone()
    out = model.get_output_embeddings()
    untied = out is not None and out.weight.data_ptr() != model.get_input_embeddings().weight.data_ptr()
    head = _combine(out.weight.detach().clone(), rows) if untied else None
    return set_embeddings(model, new_tokenizer, _combine(old_in, rows), head)


def _check(model, tokenizer, new_tokenizer):
    _check_model(model)
    check_fast(tokenizer, "tokenizer")
    check_fast(new_tokenizer, "new_tokenizer")
    n = model.get_input_embeddings().weight.shape[0]
    if n < len(tokenizer):
        raise ValueError(f"tokenizer has {len(tokenizer)} tokens but the model only {n} embeddings: "
                         "is it the model's own tokenizer?")


def fvt_init(model, tokenizer, new_tokenizer) -> torch.Tensor:
    """FVT: mean of the old sub-token embeddings (in place; returns the new input embeddings)."""
    _check(model, tokenizer, new_tokenizer)
    rows = [(ids, [1.0 / len(ids)] * len(ids)) if ids else ([], []) for ids in _fvt_rows(tokenizer, new_tokenizer)]
    return _apply(model, new_tokenizer, rows)


def random_init(model, tokenizer, new_tokenizer, *, seed: int = 0) -> torch.Tensor:
    """Random: N(old per-dimension mean, old overall std); special tokens copied by role."""
    _check(model, tokenizer, new_tokenizer)
    g = torch.Generator().manual_seed(int(seed))
    spec = _special_map(tokenizer, new_tokenizer)

    def draw(old):
        new = old.mean(0) + old.std() * torch.randn(len(new_tokenizer), old.shape[1], generator=g).to(old)
        for j, i in spec.items():
            new[j] = old[i]
        return new

    old_in = model.get_input_embeddings().weight.detach().clone()
    out = model.get_output_embeddings()
    untied = out is not None and out.weight.data_ptr() != model.get_input_embeddings().weight.data_ptr()
    head = draw(out.weight.detach().clone()) if untied else None
    return set_embeddings(model, new_tokenizer, draw(old_in), head)


def ppmi_svd(texts, tokenizer, *, dim: int = 32, window: int = 2) -> np.ndarray:
    """Auxiliary token embeddings ``(len(tokenizer), dim)``: truncated SVD of the PPMI matrix.

    Co-occurrences are counted within ``window`` tokens; ``U_k sqrt(S_k)`` rows, zero for unseen tokens.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import svds

    v = len(tokenizer)
    rows, cols = [], []
    for t in texts:
        ids = tokenizer(t, add_special_tokens=False)["input_ids"]
        for o in range(1, window + 1):
            rows += ids[:-o] + ids[o:]
            cols += ids[o:] + ids[:-o]
    if not rows:
        return np.zeros((v, dim))
    c = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(v, v)).tocsr()
    c.sum_duplicates()
    total = c.sum()
    rs = np.asarray(c.sum(1)).ravel()
    cs = np.asarray(c.sum(0)).ravel()
    c = c.tocoo()
    pmi = np.log(c.data * total / (rs[c.row] * cs[c.col]))
    keep = pmi > 0
    m = coo_matrix((pmi[keep], (c.row[keep], c.col[keep])), shape=(v, v)).tocsr()
    k = max(1, min(dim, v - 2, m.nnz - 1))
    u, s, _ = svds(m, k=k, random_state=0)
    out = np.zeros((v, dim))
    out[:, :k] = u * np.sqrt(s)
    return out


def sparsemax(z: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``z`` onto the simplex (Martins & Astudillo, 2016)."""
    zs = np.sort(z)[::-1]
    cs = np.cumsum(zs)
    k = np.arange(1, len(z) + 1)
    support = 1 + k * zs > cs
    kz = k[support][-1]
    tau = (cs[support][-1] - 1) / kz
    return np.maximum(z - tau, 0.0)


def focus_init(model, tokenizer, new_tokenizer, texts, *, dim: int = 32, temperature: float = 0.1) -> torch.Tensor:
    """FOCUS-lite: copy the overlap, new tokens as sparsemax mixtures of overlapping ones.

    ``w_j = sparsemax(cos(a_new, a_overlap) / temperature)`` with auxiliary PPMI-SVD embeddings ``a``
    fitted on ``texts`` tokenised by ``new_tokenizer``; ``e_new = Σ_j w_j e_old[overlap_j]``.
    """
    _check(model, tokenizer, new_tokenizer)
    texts = list(texts)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError("texts must be a non-empty list of strings (the target-language corpus)")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    aux = ppmi_svd(texts, new_tokenizer, dim=dim)
    norm = np.linalg.norm(aux, axis=1)
    same = overlap(tokenizer, new_tokenizer)
    fvt = _fvt_rows(tokenizer, new_tokenizer)
    special = set(new_tokenizer.all_special_ids)
    anchors = np.array([j for j in same if norm[j] > 0 and j not in special], dtype=int)
    unit = aux / np.maximum(norm, 1e-12)[:, None]
    rows = []
    for j in range(len(new_tokenizer)):
        if j in same:
            rows.append(([same[j]], [1.0]))
        elif norm[j] > 0 and len(anchors):
            w = sparsemax(unit[anchors] @ unit[j] / temperature)
            nz = np.nonzero(w)[0]
            rows.append(([same[int(anchors[i])] for i in nz], w[nz].tolist()))
        else:
            ids = fvt[j]
            rows.append((ids, [1.0 / len(ids)] * len(ids)) if ids else ([], []))
    return _apply(model, new_tokenizer, rows)
