"""The recurrence tracer: every residual of prelude, block layer × recurrence and coda, plus attention
maps, in one forward pass; and :class:`HFLoopAdapter`, which loops a layer range of any Hugging Face
decoder (retrofitted recurrence)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch
from torch import nn

from loopedlm.model import LoopedLM, check_recurrences


@dataclass
class RecurrenceTrace:
    """One traced forward.

    Attributes:
        residuals: ``(recurrence, layer, batch, T, d)``, the output of block layer ℓ at recurrence t.
        attentions: ``(recurrence, layer, batch, heads, T, T)`` or ``None`` when not captured.
        prelude: ``(p + 1, batch, T, d)``: the embeddings, then each prelude layer's output.
        coda: ``(c, batch, T, d)``; prelude_attentions / coda_attentions likewise per layer.
        logits: ``(batch, T, vocab)`` or ``None``.
    """

    residuals: torch.Tensor
    attentions: torch.Tensor | None = None
    prelude: torch.Tensor | None = None
    coda: torch.Tensor | None = None
    prelude_attentions: torch.Tensor | None = None
    coda_attentions: torch.Tensor | None = None
    logits: torch.Tensor | None = None

    @property
    def num_recurrences(self) -> int:
        return self.residuals.shape[0]

    @property
    def block_size(self) -> int:
        return self.residuals.shape[1]

    def depth_attentions(self) -> torch.Tensor:
        """All attention maps in depth order (prelude, block × recurrence, coda): ``(L, B, H, T, T)``."""
        if self.attentions is None:
            raise ValueError("trace has no attention weights: trace it with attentions=True "
                             "(for a Hugging Face model load it with attn_implementation='eager')")
        parts = [p for p in (self.prelude_attentions,) if p is not None and len(p)]
        parts.append(self.attentions.flatten(0, 1))
        parts += [p for p in (self.coda_attentions,) if p is not None and len(p)]
        return torch.cat(parts)


def _stack(xs):
    return torch.stack(xs) if xs else None


@runtime_checkable
class LoopedModelAdapter(Protocol):
    """What the analysis needs from a looped model: ``trace(input_ids, num_recurrences)``."""

    def trace(self, input_ids: torch.Tensor, num_recurrences: int | None = None, *,
              attentions: bool = True) -> RecurrenceTrace: ...


@torch.no_grad()
def trace(model, input_ids, num_recurrences: int | None = None, *, attentions: bool = True,
          generator: torch.Generator | None = None) -> RecurrenceTrace:
    """Run ``model`` once and keep every residual and attention map.

    Args:
        model: a :class:`LoopedLM` or any :class:`LoopedModelAdapter` (e.g. :class:`HFLoopAdapter`).
        input_ids: ``(batch, T)`` token ids.
        num_recurrences: passes through the block (default: the model's ``recurrences``).
        attentions: keep the attention maps.
        generator: the ``torch.Generator`` of Z₀ (default torch's global RNG).

    Returns:
        A :class:`RecurrenceTrace` with ``residuals`` of shape ``(recurrence, layer, batch, T, d)``.
    """
    if num_recurrences is not None:
        check_recurrences(num_recurrences)
    if isinstance(model, LoopedLM):
        logits, rec = model._loop(input_ids, num_recurrences, generator, capture=True)
        return RecurrenceTrace(
            residuals=torch.stack([torch.stack(s) for s in rec["block"]]),
            attentions=torch.stack([torch.stack(a) for a in rec["block_attn"]]) if attentions else None,
            prelude=torch.stack(rec["prelude"]), coda=_stack(rec["coda"]),
            prelude_attentions=_stack(rec["prelude_attn"]) if attentions else None,
            coda_attentions=_stack(rec["coda_attn"]) if attentions else None, logits=logits)
    if isinstance(model, LoopedModelAdapter):
        return model.trace(input_ids, num_recurrences, attentions=attentions)
    raise TypeError(f"model must be a LoopedLM or a LoopedModelAdapter (e.g. HFLoopAdapter), "
                    f"got {type(model).__name__}")


_LAYER_PATHS = ("model.layers", "transformer.h", "gpt_neox.layers", "model.decoder.layers", "layers", "h")
_COUNT_KEYS = ("num_hidden_layers", "n_layer")


def _layers_of(model: nn.Module) -> tuple[nn.Module, str]:
    for path in _LAYER_PATHS:
        obj = model
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if isinstance(obj, nn.ModuleList):
            *parent, name = path.split(".")
            owner = model
            for part in parent:
                owner = getattr(owner, part)
            return owner, name
    raise TypeError(f"model: found no decoder layers under {_LAYER_PATHS} ({type(model).__name__})")


class HFLoopAdapter:
    """Loop the layers ``block = (start, stop)`` (half-open) of a Hugging Face decoder.

    The forward runs layers ``[0, start)``, then ``[start, stop)`` ``num_recurrences`` times, then
    ``[stop, L)`` (retrofitted recurrence, McLeish et al. 2025, without input injection); at one
    recurrence it is the model's own forward. The looped layers' outputs are captured by forward hooks;
    attention maps need ``attn_implementation="eager"`` at load time.

    Example:
        >>> from paperworks.lm.tiny import tiny_llama
        >>> ad = HFLoopAdapter(tiny_llama(16, layers=4, attn_implementation="eager"), block=(1, 3))
        >>> ad.trace(torch.randint(4, 16, (1, 5)), 3).residuals.shape
        torch.Size([3, 2, 1, 5, 32])
    """

    def __init__(self, model: nn.Module, block: tuple[int, int], *, recurrences: int = 1):
        self.model = model
        self._owner, self._name = _layers_of(model)
        layers = getattr(self._owner, self._name)
        n = len(layers)
        if (not isinstance(block, (tuple, list)) or len(block) != 2
                or not all(isinstance(b, int) and not isinstance(b, bool) for b in block)):
            raise TypeError(f"block must be a pair of ints (start, stop), got {block!r}")
        start, stop = block
        if not 0 <= start < stop <= n:
            raise ValueError(f"block=({start}, {stop}) must satisfy 0 <= start < stop <= {n} "
                             f"(the model has {n} layers; the range is half-open)")
        self.block = (start, stop)
        self.recurrences = check_recurrences(recurrences)
        self._layers = list(layers)

    def _looped(self, r: int) -> nn.ModuleList:
        s, e = self.block
        return nn.ModuleList(self._layers[:s] + self._layers[s:e] * r + self._layers[e:])

    @torch.no_grad()
    def forward(self, input_ids, num_recurrences: int | None = None, **kwargs):
        """The looped model's output (``transformers`` output object)."""
        r = self.recurrences if num_recurrences is None else check_recurrences(num_recurrences)
        return self._run(input_ids, r, **kwargs)

    __call__ = forward

    def _run(self, input_ids, r, **kwargs):
        cfg = self.model.config
        saved = {k: getattr(cfg, k) for k in _COUNT_KEYS if hasattr(cfg, k)}
        total = len(self._layers) + (self.block[1] - self.block[0]) * (r - 1)
        original = getattr(self._owner, self._name)
        try:
            setattr(self._owner, self._name, self._looped(r))
            for k in saved:
                setattr(cfg, k, total)
            if hasattr(cfg, "layer_types") and isinstance(cfg.layer_types, list):
                saved["layer_types"] = cfg.layer_types
                s, e = self.block
                cfg.layer_types = cfg.layer_types[:s] + cfg.layer_types[s:e] * r + cfg.layer_types[e:]
            return self.model(input_ids, use_cache=False, **kwargs)
        finally:
            setattr(self._owner, self._name, original)
            for k, v in saved.items():
                setattr(cfg, k, v)

    @torch.no_grad()
    def trace(self, input_ids, num_recurrences: int | None = None, *, attentions: bool = True) -> RecurrenceTrace:
        r = self.recurrences if num_recurrences is None else check_recurrences(num_recurrences)
        if not isinstance(input_ids, torch.Tensor) or input_ids.ndim != 2:
            raise ValueError("input_ids must be a (batch, T) integer tensor")
        s, e = self.block
        outs: list[torch.Tensor] = []

        def hook(_m, _args, out):
            outs.append((out[0] if isinstance(out, tuple) else out).detach())

        handles = [layer.register_forward_hook(hook) for layer in self._layers]
        try:
            res = self._run(input_ids, r, output_attentions=attentions)
        finally:
            for h in handles:
                h.remove()
        k = e - s
        looped = outs[s:s + k * r]
        maps = None
        if attentions:
            att = getattr(res, "attentions", None)
            if not att or any(a is None for a in att):
                raise ValueError("the model returned no attention weights: load it with "
                                 "attn_implementation='eager' (or trace with attentions=False)")
            att = list(att)
            maps = torch.stack([torch.stack(att[s + t * k:s + (t + 1) * k]) for t in range(r)])
        return RecurrenceTrace(
            residuals=torch.stack([torch.stack(looped[t * k:(t + 1) * k]) for t in range(r)]),
            attentions=maps, prelude=torch.stack(outs[:s]) if s else None,
            coda=torch.stack(outs[s + k * r:]) if outs[s + k * r:] else None, logits=res.logits)
