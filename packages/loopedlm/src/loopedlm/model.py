"""The (p, k⊗l, c)_I looped transformer: a ``transformers`` ``PreTrainedModel`` with its own config.

Blayney et al., *A Mechanistic Analysis of Looped Reasoning Language Models* (arXiv 2604.11791).
A prelude of ``p`` layers embeds the tokens into ``e``; a block of ``k`` layers is applied ``l`` times
(``num_recurrences``); a coda of ``c`` layers and an unembedding read the last state.

- ``injection=True``: the state starts at Z₀ ~ N(0, σ²) and each recurrence begins with
  ``s ← W_I [s; e]`` (concatenation with the prelude output, as in Huginn).
  ``injection=False``: the state starts at ``e`` and the block is simply iterated (inferred: without
  injection the input must enter somewhere, so it enters once, as the initial state).
- ``norm="pre"``: ``x ← x + f(N(x))`` for f ∈ {attention, MLP}.
  ``norm="sandwich"`` (Huginn): the residual itself is normalised, ``x ← N(x + f(N(x)))``.
  ``norm="ouro"``: sub-layer outputs are normalised, ``x ← x + N(f(N(x)))``, and the residual is
  normalised once at the end of each pass through the block.

Positions enter through learned absolute embeddings (inferred; the miniature needs no RoPE).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput

NORMS = ("pre", "sandwich", "ouro")


def _pos_int(name, v, *, minimum=1):
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {v!r}")
    return v


def check_recurrences(num_recurrences) -> int:
    return _pos_int("num_recurrences", num_recurrences)


class LoopedConfig(PretrainedConfig):
    """Configuration of :class:`LoopedLM` ((prelude, block⊗recurrences, coda)_I).

    Args:
        vocab_size: token ids are in ``[0, vocab_size)``.
        d_model, n_heads: width and attention heads (``d_model % n_heads == 0``).
        prelude, block, coda: layer counts p, k, c (p, c ≥ 0; k ≥ 1).
        recurrences: default number of passes l through the block.
        norm: ``"pre"``, ``"sandwich"`` (Huginn) or ``"ouro"``.
        injection: concatenate the prelude output with the state and project by W_I at every recurrence.
        init_std: σ of the initial state Z₀ ~ N(0, σ²) (used with injection).
        d_ff: MLP width (default ``4 * d_model``); max_len: positions; weight_std: init std of weights.
    """

    model_type = "looped_lm"

    def __init__(self, vocab_size: int = 32, d_model: int = 64, n_heads: int = 4, prelude: int = 2, block: int = 4,
                 coda: int = 2, recurrences: int = 4, norm: str = "pre", injection: bool = True,
                 init_std: float = 1.0, d_ff: int | None = None, max_len: int = 256, weight_std: float = 0.02,
                 **kwargs):
        _pos_int("vocab_size", vocab_size)
        _pos_int("d_model", d_model)
        _pos_int("n_heads", n_heads)
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        _pos_int("prelude", prelude, minimum=0)
        _pos_int("block", block)
        _pos_int("coda", coda, minimum=0)
        _pos_int("recurrences", recurrences)
        _pos_int("max_len", max_len)
        if norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
        if not isinstance(injection, bool):
            raise TypeError(f"injection must be a bool, got {type(injection).__name__}")
        for name, v in (("init_std", init_std), ("weight_std", weight_std)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be a positive finite number, got {v!r}")
        self.vocab_size, self.d_model, self.n_heads = vocab_size, d_model, n_heads
        self.prelude, self.block, self.coda, self.recurrences = prelude, block, coda, recurrences
        self.norm, self.injection, self.init_std = norm, injection, float(init_std)
        self.d_ff = 4 * d_model if d_ff is None else _pos_int("d_ff", d_ff)
        self.max_len, self.weight_std = max_len, float(weight_std)
        super().__init__(**kwargs)


class Attention(nn.Module):
    """Causal multi-head self-attention that returns its attention probabilities ``(B, H, T, T)``."""

    def __init__(self, d: int, h: int):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.h)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        a = scores.masked_fill(mask, float("-inf")).softmax(-1)
        return self.out((a @ v).transpose(1, 2).reshape(b, t, d)), a


class LoopedLayer(nn.Module):
    """One transformer layer with the ``norm`` placement of :class:`LoopedConfig`."""

    def __init__(self, cfg: LoopedConfig):
        super().__init__()
        d = cfg.d_model
        self.norm = cfg.norm
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        if cfg.norm != "pre":
            self.ln3, self.ln4 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, cfg.n_heads)
        self.mlp = nn.Sequential(nn.Linear(d, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, d))

    def forward(self, x):
        a, probs = self.attn(self.ln1(x))
        if self.norm == "pre":
            x = x + a
            return x + self.mlp(self.ln2(x)), probs
        if self.norm == "sandwich":
            x = self.ln3(x + a)
            return self.ln4(x + self.mlp(self.ln2(x))), probs
        x = x + self.ln3(a)  # ouro
        return x + self.ln4(self.mlp(self.ln2(x))), probs


class LoopedLM(PreTrainedModel):
    """The looped language model. ``forward(input_ids, num_recurrences=None, labels=None)``.

    Example:
        >>> cfg = LoopedConfig(vocab_size=20, d_model=32, n_heads=4, prelude=1, block=2, coda=1)
        >>> model = LoopedLM(cfg).eval()
        >>> model(torch.randint(0, 20, (1, 8)), num_recurrences=6).logits.shape
        torch.Size([1, 8, 20])
    """

    config_class = LoopedConfig
    base_model_prefix = "looped"
    _no_split_modules = ["LoopedLayer"]

    def __init__(self, config: LoopedConfig):
        super().__init__(config)
        d = config.d_model
        self.embed = nn.Embedding(config.vocab_size, d)
        self.pos = nn.Embedding(config.max_len, d)
        self.prelude = nn.ModuleList(LoopedLayer(config) for _ in range(config.prelude))
        self.block = nn.ModuleList(LoopedLayer(config) for _ in range(config.block))
        self.coda = nn.ModuleList(LoopedLayer(config) for _ in range(config.coda))
        self.inject = nn.Linear(2 * d, d, bias=False) if config.injection else None
        self.block_norm = nn.LayerNorm(d) if config.norm == "ouro" else None
        self.final_norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, config.vocab_size, bias=False)
        self.post_init()

    def _init_weights(self, module):
        std = self.config.weight_std
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0.0, std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, 0.0, std)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    # the loop -----------------------------------------------------------------------------

    def check_input(self, input_ids):
        if not isinstance(input_ids, torch.Tensor) or input_ids.dtype not in (torch.long, torch.int32, torch.int64):
            raise TypeError("input_ids must be an integer torch.Tensor of shape (batch, T)")
        if input_ids.ndim != 2 or input_ids.shape[1] < 1:
            raise ValueError(f"input_ids must have shape (batch, T) with T >= 1, got {tuple(input_ids.shape)}")
        if input_ids.shape[1] > self.config.max_len:
            raise ValueError(f"input_ids: T={input_ids.shape[1]} exceeds max_len={self.config.max_len}")
        if input_ids.numel() and (int(input_ids.min()) < 0 or int(input_ids.max()) >= self.config.vocab_size):
            raise ValueError(f"input_ids must lie in [0, vocab_size={self.config.vocab_size})")

    def initial_state(self, e, generator: torch.Generator | None = None):
        """Z₀ ~ N(0, σ²) shaped like ``e`` (drawn from ``generator``, default torch's global RNG)."""
        z = torch.randn(e.shape, generator=generator, device="cpu" if generator is None or
                        generator.device.type == "cpu" else generator.device, dtype=e.dtype)
        return z.to(e.device) * self.config.init_std

    def _loop(self, input_ids, num_recurrences, generator, capture: bool):
        self.check_input(input_ids)
        r = self.config.recurrences if num_recurrences is None else check_recurrences(num_recurrences)
        t = input_ids.shape[1]
        x = self.embed(input_ids) + self.pos(torch.arange(t, device=input_ids.device))
        rec = {"prelude": [x], "prelude_attn": [], "block": [], "block_attn": [], "coda": [], "coda_attn": []}
        for layer in self.prelude:
            x, a = layer(x)
            if capture:
                rec["prelude"].append(x)
                rec["prelude_attn"].append(a)
        e = x
        s = self.initial_state(e, generator) if self.inject is not None else e
        for _ in range(r):
            if self.inject is not None:
                s = self.inject(torch.cat([s, e], dim=-1))
            states, maps = [], []
            for i, layer in enumerate(self.block):
                s, a = layer(s)
                if self.block_norm is not None and i == len(self.block) - 1:
                    s = self.block_norm(s)
                if capture:
                    states.append(s)
                    maps.append(a)
            if capture:
                rec["block"].append(states)
                rec["block_attn"].append(maps)
        x = s
        for layer in self.coda:
            x, a = layer(x)
            if capture:
                rec["coda"].append(x)
                rec["coda_attn"].append(a)
        logits = self.lm_head(self.final_norm(x))
        return logits, rec

    def forward(self, input_ids, num_recurrences: int | None = None, labels=None,
                generator: torch.Generator | None = None, **kwargs):
        """Logits ``(B, T, vocab)``; with ``labels`` also the next-token cross-entropy (labels shifted
        inside, ``-100`` ignored)."""
        logits, _ = self._loop(input_ids, num_recurrences, generator, capture=False)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                                   ignore_index=-100)
        return CausalLMOutput(loss=loss, logits=logits)
