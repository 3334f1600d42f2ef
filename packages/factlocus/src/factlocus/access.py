"""Model access: named hook sites on any Hugging Face causal LM (GPT-2, Llama with GQA, GPT-NeoX, ...).

The analysis code never touches a model's internals directly; it asks a :class:`ModelAccess` for

- ``emb``: the residual stream entering the first block (token + position embeddings);
- ``attn{i}`` / ``mlp{i}``: the output each module adds to the residual stream of block ``i``;
- ``attn{i}.q`` / ``attn{i}.k`` / ``attn{i}.v``: the projections of models with separate q/k/v
  projections (Llama, Mistral, Qwen...), shape ``(B, T, heads * head_dim)`` -- with grouped-query
  attention the k/v sites have ``num_key_value_heads`` heads, fewer than the query heads;
- ``attn{i}.z``: the per-query-head attention result entering the output projection.

and runs forward passes that *cache* sites, *replace* their values on chosen batch rows, or
*add* a delta to the residual stream read by a receiver (the input of a module's norm, or of the
final norm for the receiver ``logits``) -- the primitive of path patching. Only module
boundaries the HF implementations already have are used, so the same code runs on any
sequential-residual decoder (pre-norm blocks ``norm -> attn -> + -> norm -> mlp -> +``).

Parallel-residual blocks (GPT-NeoX/Pythia with ``use_parallel_residual``, GPT-J, Phi: ``x + attn(ln1 x) +
mlp(ln2 x)``) are detected (:attr:`ModelAccess.parallel_residual`): there ``mlp{i}`` does not read
``attn{i}``, so :meth:`ModelAccess.is_edge` leaves that edge out of path patching and scrubbing.

Module candidates are looked up by attribute name; models that keep the blocks elsewhere raise a
``TypeError`` naming what was looked for.

Example (any HF causal LM; here Pythia from weights already on disk -- nothing is downloaded)::

    model = AutoModelForCausalLM.from_pretrained("/path/to/pythia-1.4b", local_files_only=True)
    acc = ModelAccess(model)
    acc.modules                    # ['attn0', 'mlp0', ..., 'attn23', 'mlp23']
    logits, cache = acc.run(ids, cache=["emb", "attn0", "mlp3"])           # cache module outputs
    logits, _ = acc.run(ids, replace={"mlp3": (rows, values)})             # activation patching
    logits, _ = acc.run(ids, add={"mlp5": [(rows, delta)]})                # one edge of path patching
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import nn

_BLOCK_PATHS = ("transformer.h", "model.layers", "gpt_neox.layers", "model.decoder.layers", "layers", "h")
_FINAL_NORM_PATHS = ("transformer.ln_f", "model.norm", "gpt_neox.final_layer_norm",
                     "model.decoder.final_layer_norm", "norm", "ln_f")
_ATTN = ("attn", "self_attn", "attention")
_MLP = ("mlp", "feed_forward")
_ATTN_NORM = ("ln_1", "input_layernorm")
_MLP_NORM = ("ln_2", "post_attention_layernorm")
_OUT_PROJ = ("o_proj", "c_proj", "dense", "out_proj")
_PARALLEL_TYPES = ("gptj", "phi", "codegen")
_SITE_RE = re.compile(r"^(emb|(attn|mlp)(\d+)(\.(q|k|v|z))?)$")


def _get(root: nn.Module, path: str):
    obj = root
    for part in path.split("."):
        if not hasattr(obj, part):
            return None
        obj = getattr(obj, part)
    return obj


def _first(root: nn.Module, names: Sequence[str]):
    for n in names:
        m = _get(root, n)
        if m is not None:
            return m
    return None


@dataclass(frozen=True)
class Block:
    """The modules of one decoder block."""

    index: int
    attn: nn.Module
    mlp: nn.Module
    attn_norm: nn.Module
    mlp_norm: nn.Module


class ModelAccess:
    """Named hook sites of a Hugging Face causal LM.

    Args:
        model: a ``transformers`` causal LM (``AutoModelForCausalLM``-like: ``model(input_ids).logits``).

    Example:
        >>> acc = ModelAccess(model)                       # doctest: +SKIP
        >>> logits, cache = acc.run(ids, cache=["attn0", "mlp1"])  # doctest: +SKIP
    """

    def __init__(self, model: nn.Module):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch/transformers module, got {type(model).__name__}")
        blocks = _first(model, _BLOCK_PATHS)
        if not isinstance(blocks, nn.ModuleList):
            raise TypeError(f"model: no list of decoder blocks found (looked for {', '.join(_BLOCK_PATHS)})")
        self.model = model
        self.blocks: list[Block] = []
        for i, b in enumerate(blocks):
            parts = [_first(b, _ATTN), _first(b, _MLP), _first(b, _ATTN_NORM), _first(b, _MLP_NORM)]
            if any(p is None for p in parts):
                raise TypeError(f"model: block {i} ({type(b).__name__}) lacks attn/mlp/norm modules under "
                                f"the names {_ATTN}/{_MLP}/{_ATTN_NORM}/{_MLP_NORM}")
            self.blocks.append(Block(i, *parts))
        self._block_list = blocks
        self.final_norm = _first(model, _FINAL_NORM_PATHS)
        if self.final_norm is None:
            raise TypeError("model: no final norm found (looked for " + ", ".join(_FINAL_NORM_PATHS) + ")")
        cfg = getattr(model, "config", None)
        self.parallel_residual = bool(getattr(cfg, "use_parallel_residual", False)
                                      or getattr(cfg, "parallel_attn", False)
                                      or getattr(cfg, "model_type", "") in _PARALLEL_TYPES)
        self.n_ctx = None
        for key in ("n_positions", "max_position_embeddings"):
            if cfg is not None and getattr(cfg, key, None):
                self.n_ctx = int(getattr(cfg, key))
                break

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    # names ------------------------------------------------------------------------------
    @property
    def modules(self) -> list[str]:
        """Module names in forward order: ``attn0, mlp0, attn1, mlp1, ...``."""
        return [f"{k}{b.index}" for b in self.blocks for k in ("attn", "mlp")]

    @property
    def senders(self) -> list[str]:
        return ["emb", *self.modules]

    @property
    def receivers(self) -> list[str]:
        return [*self.modules, "logits"]

    def order(self, name: str) -> int:
        """Position of a residual writer/reader in the forward order (emb = 0, logits = last)."""
        if name == "emb":
            return 0
        if name == "logits":
            return len(self.modules) + 1
        return self.modules.index(self.check_site(name)) + 1

    def is_edge(self, sender: str, receiver: str) -> bool:
        """Whether ``receiver`` reads ``sender``'s output from the residual stream (forward order, and in
        parallel-residual blocks not ``attn{i} -> mlp{i}``)."""
        if self.order(sender) >= self.order(receiver):
            return False
        return not (self.parallel_residual and sender.startswith("attn") and receiver == f"mlp{sender[4:]}")

    def check_site(self, name: str) -> str:
        m = _SITE_RE.match(str(name))
        if m is None or (m.group(3) is not None and int(m.group(3)) >= len(self.blocks)):
            raise ValueError(f"site {name!r} is not in this model (sites: emb, attn0..attn{len(self.blocks) - 1}, "
                             f"mlp0..mlp{len(self.blocks) - 1}, with .q/.k/.v/.z on attention)")
        return str(name)

    def check_input(self, input_ids: torch.Tensor) -> None:
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.dtype != torch.long:
            raise TypeError("input_ids must be a 2-d LongTensor (batch, positions)")
        if self.n_ctx is not None and input_ids.shape[1] > self.n_ctx:
            raise ValueError(f"input_ids: prompts of {input_ids.shape[1]} tokens exceed the model's context "
                             f"of {self.n_ctx} positions")

    def _sub_module(self, name: str) -> tuple[nn.Module, str]:
        """(module to hook, 'out'|'in') for a head-level site."""
        base, part = name.split(".")
        attn = self.blocks[int(base[4:])].attn
        if part == "z":
            proj = _first(attn, _OUT_PROJ)
            if proj is None:
                raise TypeError(f"site {name!r}: attention module has no output projection ({_OUT_PROJ})")
            return proj, "in"
        proj = _get(attn, f"{part}_proj") or _get(attn, f"{part}_proj_layer")
        if proj is None:
            raise ValueError(f"site {name!r}: this model has no separate {part}_proj (fused qkv, e.g. GPT-2); "
                             "use attn/mlp module sites or .z")
        return proj, "out"

    # the forward pass -------------------------------------------------------------------
    @torch.no_grad()
    def run(self, input_ids: torch.Tensor, *, cache: Iterable[str] = (),
            replace: Mapping[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
            add: Mapping[str, Sequence[tuple[torch.Tensor, torch.Tensor]]] | None = None,
            last_only: bool = True):
        """One forward pass with hooks.

        Args:
            input_ids: ``(B, T)`` token ids.
            cache: site names whose values to return (after any replacement).
            replace: ``{site: (rows, values)}`` -- the site's value on batch ``rows`` becomes ``values``
                (shape ``(len(rows), T, ...)``); everything downstream is recomputed.
            add: ``{receiver: [(rows, delta), ...]}`` -- ``delta`` is added to the residual stream read
                by the receiver (module name, or ``logits``) on ``rows``, and to nothing else. ``delta``
                may be a callable of the dict of values cached so far in this pass (sites upstream of
                the receiver are already there) -- what causal scrubbing needs.
            last_only: return logits of the last position only (``(B, V)``) instead of ``(B, T, V)``.

        Returns:
            ``(logits, cache_dict)``.
        """
        self.check_input(input_ids)
        input_ids = input_ids.to(self.device)
        replace, add, cache = dict(replace or {}), dict(add or {}), list(cache)
        for name in [*cache, *replace]:
            self.check_site(name)
        for name in add:
            if name != "logits":
                self.check_site(name)
                if "." in name:
                    raise ValueError(f"add: receiver {name!r} must be a module or 'logits'")
        out: dict[str, torch.Tensor] = {}
        handles = []

        def value_hook(name):
            def apply(v):
                if name in replace:
                    rows, vals = replace[name]
                    v = v.clone()
                    v[rows] = vals.to(v.device, v.dtype)
                if name in cache:
                    out[name] = v.detach().clone()
                return v
            return apply

        def module_out_hook(name):
            f = value_hook(name)

            def hook(mod, args, output):
                if isinstance(output, tuple):
                    return (f(output[0]), *output[1:])
                return f(output)
            return hook

        def module_in_hook(name):
            f = value_hook(name)

            def hook(mod, args, kwargs):
                if args:
                    return (f(args[0]), *args[1:]), kwargs
                key = "hidden_states" if "hidden_states" in kwargs else "input"
                return args, {**kwargs, key: f(kwargs[key])}
            return hook

        def add_hook(deltas):
            def hook(mod, args, kwargs):
                x = args[0] if args else kwargs["hidden_states"]
                x = x.clone()
                for rows, d in deltas:
                    d = d(out) if callable(d) else d  # a callable reads the values cached so far
                    x[rows] = x[rows] + d.to(x.device, x.dtype)
                if args:
                    return (x, *args[1:]), kwargs
                return args, {**kwargs, "hidden_states": x}
            return hook

        try:
            wanted = set(cache) | set(replace)
            for name in wanted:
                if name == "emb":
                    handles.append(self._block_list[0].register_forward_pre_hook(module_in_hook(name),
                                                                                 with_kwargs=True))
                elif "." in name:
                    mod, where = self._sub_module(name)
                    if where == "in":
                        handles.append(mod.register_forward_pre_hook(module_in_hook(name), with_kwargs=True))
                    else:
                        handles.append(mod.register_forward_hook(module_out_hook(name)))
                else:
                    b = self.blocks[int(name[4:] if name.startswith("attn") else name[3:])]
                    mod = b.attn if name.startswith("attn") else b.mlp
                    handles.append(mod.register_forward_hook(module_out_hook(name)))
            for name, deltas in add.items():
                handles.append(self.receiver_norm(name).register_forward_pre_hook(add_hook(list(deltas)),
                                                                                  with_kwargs=True))
            logits = self.model(input_ids=input_ids).logits
        finally:
            for h in handles:
                h.remove()
        # logits come back on the CPU (the answers live there); cached values stay on the model's device
        return (logits[:, -1] if last_only else logits).float().cpu(), out

    def receiver_norm(self, name: str) -> nn.Module:
        """The norm module whose input is the residual stream a receiver reads."""
        if name == "logits":
            return self.final_norm
        b = self.blocks[int(name[4:] if name.startswith("attn") else name[3:])]
        return b.attn_norm if name.startswith("attn") else b.mlp_norm

    @contextlib.contextmanager
    def eval_mode(self):
        was = self.model.training
        self.model.eval()
        try:
            yield self
        finally:
            self.model.train(was)


def residual_after(cache: Mapping[str, torch.Tensor], access: ModelAccess, name: str) -> torch.Tensor:
    """The residual stream right after module ``name`` writes (``emb`` + all writers up to it)."""
    upto = access.order(name)
    total = cache["emb"].clone()
    for m in access.modules[:upto]:
        total = total + cache[m]
    return total
