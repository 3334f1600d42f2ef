"""Batched, left-padded, KV-cached generation that keeps the hidden states of every generated token.

``generate_with_states`` runs the model itself (prefill, then one cached step per token) so that the
states it returns are exactly those the model computed: ``states[layer][i, k]`` is the hidden state,
at HF's ``output_hidden_states`` index ``layer`` (0 = embeddings, ``L`` = after the final norm), of the
position whose logits chose generated token ``k`` of prompt ``i`` -- the last prompt token for ``k = 0``,
generated token ``k - 1`` after it. Re-running the whole sequence without padding gives the same
states (tested to 1e-5): what probe trajectories and tool-necessity probes read.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch


@dataclass
class Generation:
    """What :func:`generate_with_states` returns.

    Attributes:
        tokens: ``(B, n)`` generated ids (``pad`` after a prompt stopped).
        mask: ``(B, n)`` bool, the tokens generated before and including the stop token.
        states: ``{layer: (B, n, d)}`` hidden states of the positions that chose each token.
        texts: the decoded generated tokens (stop token and padding dropped).
        prompt_ids, prompt_mask: ``(B, P)`` the left-padded prompts and their attention mask.
    """

    tokens: torch.Tensor
    mask: torch.Tensor
    states: dict[int, torch.Tensor] = field(repr=False)
    texts: list[str]
    prompt_ids: torch.Tensor = field(repr=False)
    prompt_mask: torch.Tensor = field(repr=False)

    @property
    def lengths(self) -> torch.Tensor:
        return self.mask.sum(1)


def _context(model) -> int | None:
    cfg = getattr(model, "config", None)
    for key in ("n_positions", "max_position_embeddings", "n_ctx"):
        if getattr(cfg, key, None):
            return int(getattr(cfg, key))
    return None


def encode_prompts(tokenizer, prompts) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded ``(input_ids, attention_mask)`` of strings or lists of token ids."""
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence) or not len(prompts):
        raise ValueError("prompts must be a non-empty list of strings or of token-id lists")
    pad = tokenizer.pad_token_id if tokenizer is not None and tokenizer.pad_token_id is not None else (
        getattr(tokenizer, "eos_token_id", None) or 0)
    if all(isinstance(p, str) for p in prompts):
        if tokenizer is None:
            raise ValueError("tokenizer: needed to encode string prompts")
        seqs = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    elif all(isinstance(p, (list, tuple)) or (isinstance(p, torch.Tensor) and p.dim() == 1) for p in prompts):
        seqs = [[int(t) for t in p] for p in prompts]
    else:
        raise ValueError("prompts must be all strings or all token-id lists")
    for i, s in enumerate(seqs):
        if not s:
            raise ValueError(f"prompts: prompt {i} has no tokens")
    P = max(map(len, seqs))
    ids = torch.full((len(seqs), P), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), P), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, P - len(s):] = torch.tensor(s)
        mask[i, P - len(s):] = 1
    return ids, mask


@torch.no_grad()
def generate_with_states(model, tokenizer, prompts, *, max_new_tokens: int = 16, layers: Sequence[int] | None = None,
                         do_sample: bool = False, temperature: float = 1.0, top_k: int | None = None,
                         stop_ids: Sequence[int] | None = None, seed: int = 0) -> Generation:
    """Generate from a batch of prompts and keep the hidden states of every generated token.

    Args:
        model: a Hugging Face causal LM.
        tokenizer: its tokenizer (``None`` if ``prompts`` are token-id lists and no texts are wanted).
        prompts: strings, or lists of token ids; left-padded into one batch.
        max_new_tokens: tokens to generate at most (prompt + new tokens must fit the context).
        layers: ``output_hidden_states`` indices to keep (negative ones count from the end); default all.
        do_sample, temperature, top_k: greedy by default; sampling draws from a generator seeded by ``seed``.
        stop_ids: tokens that end a prompt's generation (default: the tokenizer's eos).

    Returns:
        :class:`Generation`.
    """
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
    ids, att = encode_prompts(tokenizer, prompts)
    vocab = model.get_input_embeddings().num_embeddings
    if int(ids.max()) >= vocab or int(ids.min()) < 0:
        raise ValueError(f"prompts: token ids must be in [0, {vocab})")
    n_ctx = _context(model)
    if n_ctx is not None and ids.shape[1] + max_new_tokens > n_ctx:
        raise ValueError(f"prompts: {ids.shape[1]} prompt tokens + max_new_tokens={max_new_tokens} exceed the "
                         f"model's context of {n_ctx} positions")
    n_states = model.config.get_text_config().num_hidden_layers + 1 if hasattr(model.config, "get_text_config") \
        else model.config.num_hidden_layers + 1
    layers = list(range(n_states)) if layers is None else [int(x) for x in layers]
    for x in layers:
        if not -n_states <= x < n_states:
            raise ValueError(f"layers: {x} is not a hidden-state index of this model (0..{n_states - 1})")
    layers = [x % n_states for x in layers]
    if stop_ids is None:
        eos = getattr(tokenizer, "eos_token_id", None) if tokenizer is not None else None
        stop_ids = [] if eos is None else [eos]
    stop = torch.tensor(list(stop_ids), dtype=torch.long)
    pad = int(ids[0, 0]) if (att[:, 0] == 0).any() else (getattr(tokenizer, "pad_token_id", None) or 0)
    gen = torch.Generator().manual_seed(seed)
    dev = next(model.parameters()).device
    # transformers >= 5.2x names the KV cache argument `cache` (`past_key_values` before)
    cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    was = model.training
    model.eval()
    try:
        ids_d, att_d = ids.to(dev), att.to(dev)
        pos = (att_d.cumsum(-1) - 1).clamp_min(0)
        out = model(input_ids=ids_d, attention_mask=att_d, position_ids=pos, use_cache=True, output_hidden_states=True)
        B = ids.shape[0]
        done = torch.zeros(B, dtype=torch.bool)
        tokens, mask, states = [], [], {x: [] for x in layers}
        for _ in range(max_new_tokens):
            for x in layers:
                states[x].append(out.hidden_states[x][:, -1].float().cpu())
            logits = out.logits[:, -1].float().cpu()
            if do_sample:
                logits = logits / temperature
                if top_k is not None:
                    kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                nxt = torch.multinomial(logits.softmax(-1), 1, generator=gen)[:, 0]
            else:
                nxt = logits.argmax(-1)
            mask.append(~done)
            nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
            tokens.append(nxt)
            done = done | torch.isin(nxt, stop)
            if bool(done.all()) or len(tokens) == max_new_tokens:
                break
            att_d = torch.cat([att_d, torch.ones(B, 1, dtype=att_d.dtype, device=dev)], dim=1)
            pos = pos[:, -1:] + 1
            past = out.get("cache", None) if "cache" in out else out.past_key_values
            out = model(input_ids=nxt[:, None].to(dev), attention_mask=att_d, position_ids=pos,
                        use_cache=True, output_hidden_states=True, **{cache_arg: past})
    finally:
        model.train(was)
    tokens_t, mask_t = torch.stack(tokens, 1), torch.stack(mask, 1)
    texts = []
    if tokenizer is not None:
        for row, m in zip(tokens_t, mask_t):
            keep = [int(t) for t in row[m] if int(t) not in set(stop.tolist())]
            texts.append(tokenizer.decode(keep, skip_special_tokens=False))
    return Generation(tokens_t, mask_t, {x: torch.stack(v, 1) for x, v in states.items()}, texts, ids, att)
