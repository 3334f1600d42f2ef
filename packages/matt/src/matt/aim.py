"""Attention Influence Modeling (AIM): match segment-level attention outputs of the teacher.

For layer ``l < k`` and head ``h`` the attention output at a query position ``q`` is
``z_{l,h}(q) = Σ_t A_{l,h}(q, t) V_{l,h}(t)`` (the per-head result entering the output
projection). Pooled to segments, the attention from the query segment ``i`` to key segment ``j`` is
``Ā(i, j) = Σ_{t∈j} A(q_i, t)`` and segment ``j``'s value is the attention-weighted mean of its
tokens' values, ``V̄(j) = Σ_{t∈j} A(q_i, t) V(t) / Ā(i, j)``; the segment's attention output
``Σ_j Ā(i, j) V̄(j)`` then equals ``z(q_i)``, with the query ``q_i`` the *last* token of segment
``i``: the one position where teacher and student have read exactly the same characters.
(The official README leaves the pooling open: the choice of the last token as the query and of the
attention-weighted value mean is **inferred**.)

The loss is the mean over the first ``k`` layers (default ``⌈L/3⌉``), heads and segments of the
squared error between the student's (teacher body, new embeddings, new tokenizer) and the teacher's
segment-level attention outputs. Teacher targets are computed once per text and cached; both the
teacher (for its targets) and the student run only the first ``k`` blocks (no LM head). The shapes
of the batches each call ran are kept in ``last_shapes`` for compute accounting (:mod:`matt.compute`).
"""

from __future__ import annotations

import logging
import math

import torch
from torch import nn

from matt.align import AlignmentError, align_segments, check_fast, segment_ends, token_spans

log = logging.getLogger(__name__)


class _Stop(Exception):
    pass


def check_causal_lm(model, name: str = "model") -> None:
    if not isinstance(model, nn.Module) or not hasattr(model, "get_input_embeddings"):
        raise TypeError(f"{name} must be a transformers causal LM, got {type(model).__name__}")
    cfg = getattr(model, "config", None)
    if getattr(cfg, "is_encoder_decoder", False):
        raise ValueError(f"{name}: encoder-decoder models are out of scope (MATT transfers decoder-only causal LMs)")


def check_eager(model, name: str = "model") -> None:
    """AIM needs attention weights: SDPA/flash attention return none."""
    impl = getattr(getattr(model, "config", None), "_attn_implementation", None)
    if impl != "eager":
        raise ValueError(f"{name}: AIM needs the attention weights, which {impl!r} attention does not return; "
                         "load the model with attn_implementation=\"eager\" "
                         "(AutoModelForCausalLM.from_pretrained(..., attn_implementation=\"eager\"))")


def n_layers(model) -> int:
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    return int(getattr(cfg, "num_hidden_layers", None) or cfg.n_layer)


def resolve_layers(model, layers) -> list[int]:
    """``None`` → the first ``⌈L/3⌉`` layers; an int ``k`` → the first ``k``; a list → those indices."""
    n = n_layers(model)
    if layers is None:
        return list(range(math.ceil(n / 3)))
    if isinstance(layers, bool) or isinstance(layers, float) or isinstance(layers, str):
        raise TypeError(f"aim_layers must be None, an int or a list of ints, got {layers!r}")
    if isinstance(layers, int):
        if not 1 <= layers <= n:
            raise ValueError(f"aim_layers={layers} is outside the model: it has {n} layers (need 1..{n})")
        return list(range(layers))
    out = sorted({int(i) for i in layers})
    if not out or out[0] < 0 or out[-1] >= n:
        raise ValueError(f"aim_layers={list(layers)} is outside the model: layer indices must be in 0..{n - 1}")
    return out


def _out_projs(model) -> list[nn.Module]:
    from paperworks.lm import ModelAccess

    acc = ModelAccess(model, check=False)
    projs = [b.out_proj for b in acc.blocks]
    if any(p is None for p in projs):
        raise TypeError(f"model: {acc.architecture} has no attention output projection to read z from")
    return projs


def attention_outputs(model, input_ids, attention_mask, layers, *, stop: bool = True,
                      need_weights: bool = False) -> list[torch.Tensor]:
    """Per-head attention outputs ``z`` (``(B, T, heads·head_dim)``) of ``layers``, read at the input of
    each block's output projection; with ``stop`` the forward pass ends after the last of them."""
    projs = _out_projs(model)
    got: dict[int, torch.Tensor] = {}
    last = max(layers)
    hooks = []

    def make(i):
        def hook(mod, args):
            got[i] = args[0]
            if stop and i == last:
                raise _Stop
        return hook

    for i in layers:
        hooks.append(projs[i].register_forward_pre_hook(make(i)))
    try:
        out = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=need_weights,
                    use_cache=False)
        if need_weights:
            att = getattr(out, "attentions", None)
            if att is None or any(att[i] is None for i in layers):
                raise ValueError("model returned no attention weights; load it with attn_implementation=\"eager\"")
    except _Stop:
        pass
    finally:
        for h in hooks:
            h.remove()
    return [got[i] for i in layers]


def _check_weights(model, bos: int) -> None:
    """One one-token forward pass: the model must return attention weights (AIM is built on them)."""
    dev = next(model.parameters()).device
    ids = torch.tensor([[bos]], device=dev)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True, use_cache=False)
    att = getattr(out, "attentions", None)
    if att is None or not len(att) or any(a is None for a in att):
        raise ValueError("model returned no attention weights; load it with attn_implementation=\"eager\"")


def _bos(tokenizer) -> int:
    for role in ("bos_token_id", "eos_token_id"):
        tid = getattr(tokenizer, role, None)
        if tid is not None:
            return int(tid)
    raise ValueError("tokenizer has neither a bos nor an eos token to start a sequence with")


def _pad(seqs, pad: int):
    t = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), t), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), t), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, :len(s)] = torch.as_tensor(s)
        mask[r, :len(s)] = 1
    return ids, mask


def _max_len(model) -> int:
    cfg = model.config
    for key in ("n_positions", "max_position_embeddings"):
        if getattr(cfg, key, None):
            return int(getattr(cfg, key))
    return 1024


class AIMLoss(nn.Module):
    """Attention Influence Modeling loss against a frozen teacher (arXiv 2510.21954).

    Args:
        teacher: the source ``AutoModelForCausalLM``, loaded with ``attn_implementation="eager"``.
        tokenizer: its fast tokenizer.
        layers: ``None`` (first ``⌈L/3⌉`` layers), an int ``k`` (first ``k``) or a list of layer indices.

    ``forward(student, new_tokenizer, texts)`` returns the scalar loss (differentiable in the
    student); lines that fail alignment are skipped and counted in ``self.skipped``.

    Example:
        >>> aim = AIMLoss(teacher, tok_a)                          # doctest: +SKIP
        >>> aim(student, tok_b, ["kyrkuwyla textix"]).backward()   # doctest: +SKIP
    """

    def __init__(self, teacher, tokenizer, *, layers=None):
        super().__init__()
        check_causal_lm(teacher, "teacher")
        check_eager(teacher, "teacher")
        check_fast(tokenizer, "tokenizer")
        from paperworks.lm import ModelAccess

        ModelAccess(teacher)  # the architecture self-check (blocks, norms, writers) before hooking it
        self.layers = resolve_layers(teacher, layers)
        _check_weights(teacher, _bos(tokenizer))
        self.tokenizer = tokenizer
        self._teacher = [teacher]  # not a submodule: its weights are not the student's parameters
        self._cache: dict = {}
        self.skipped = 0
        self.max_len = _max_len(teacher)
        self.last_shapes: dict = {"student": None, "teacher": []}

    @property
    def teacher(self):
        return self._teacher[0]

    def _prepare(self, new_tokenizer, texts):
        """Per text: (student token ids, student query positions, teacher targets per layer)."""
        key0 = id(new_tokenizer)
        todo = [t for t in dict.fromkeys(texts) if (key0, t) not in self._cache]
        rows = []
        for t in todo:
            try:
                segs = align_segments(t, self.tokenizer, new_tokenizer)
            except AlignmentError as e:
                self.skipped += 1
                log.debug("skipped a line: %s", e)
                self._cache[(key0, t)] = None
                continue
            sa, sb = token_spans(t, self.tokenizer), token_spans(t, new_tokenizer, "new_tokenizer")
            qa, qb = segment_ends(sa, segs), segment_ends(sb, segs)
            ida = self.tokenizer(t, add_special_tokens=False)["input_ids"]
            idb = new_tokenizer(t, add_special_tokens=False)["input_ids"]
            keep = [(a + 1, b + 1) for a, b in zip(qa, qb)  # +1: the bos token comes first
                    if a is not None and b is not None and a + 1 < self.max_len and b + 1 < self.max_len]
            if not keep:
                self.skipped += 1
                self._cache[(key0, t)] = None
                continue
            rows.append((t, [_bos(self.tokenizer)] + ida[:self.max_len - 1], [_bos(new_tokenizer)] +
                         idb[:self.max_len - 1], keep))
        teacher = self.teacher
        dev = next(teacher.parameters()).device
        for i in range(0, len(rows), 32):
            chunk = rows[i:i + 32]
            ids, mask = _pad([r[1] for r in chunk], _bos(self.tokenizer))
            self.last_shapes["teacher"].append(tuple(ids.shape))
            with torch.no_grad():  # the first k blocks only (weights were checked once, in __init__)
                zs = attention_outputs(teacher, ids.to(dev), mask.to(dev), self.layers, stop=True)
            for r, (t, _, idb, keep) in enumerate(chunk):
                pa = torch.as_tensor([a for a, _ in keep], device=dev)
                self._cache[(key0, t)] = (idb, [b for _, b in keep], [z[r, pa].detach() for z in zs])
        return [self._cache[(key0, t)] for t in texts if self._cache[(key0, t)] is not None]

    def forward(self, student, new_tokenizer, texts) -> torch.Tensor:
        check_causal_lm(student, "student")
        check_eager(student, "student")
        check_fast(new_tokenizer, "new_tokenizer")
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be a list of strings")
        self.last_shapes = {"student": None, "teacher": []}
        items = self._prepare(new_tokenizer, list(texts))
        if not items:
            raise ValueError("AIM: no line of the batch could be aligned (all were skipped)")
        dev = next(student.parameters()).device
        ids, mask = _pad([it[0] for it in items], _bos(new_tokenizer))
        self.last_shapes["student"] = tuple(ids.shape)
        zs = attention_outputs(student, ids.to(dev), mask.to(dev), self.layers, stop=True)
        rows = torch.cat([torch.full((len(it[1]),), r, dtype=torch.long) for r, it in enumerate(items)]).to(dev)
        pos = torch.as_tensor([p for it in items for p in it[1]], dtype=torch.long, device=dev)
        loss = 0.0
        for li, z in enumerate(zs):
            target = torch.cat([it[2][li] for it in items]).to(z)
            loss = loss + ((z[rows, pos] - target) ** 2).mean()  # mean over segments, heads and head dims
        return loss / len(zs)
