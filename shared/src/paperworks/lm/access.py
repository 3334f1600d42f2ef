"""Named hook sites on any Hugging Face causal LM, verified against the model at construction.

A :class:`ModelAccess` gives the analysis code the residual stream as a sum of named writers and
runs forward passes that *cache* sites, *replace* their values on chosen batch rows, or *add* a
delta to the residual stream that one receiver reads (the primitive of path patching):

- ``emb``: the residual stream entering the first block (token + position embeddings, scaled where
  the model scales them);
- ``attn{i}`` / ``mlp{i}``: what block ``i``'s attention / MLP adds to the residual stream (after the
  post-norm on Gemma-2-style blocks, i.e. exactly the term of the residual sum);
- ``attn{i}.q`` / ``.k`` / ``.v``: the separate projections (Llama, Mistral, Qwen2, Gemma-2, GPT-J, Phi,
  OPT), ``(B, T, heads * head_dim)``; with grouped-query attention ``.k``/``.v`` have
  ``num_key_value_heads`` heads (:meth:`ModelAccess.kv_head` maps a query head to its kv head);
- ``attn{i}.z``: the per-head attention result entering the output projection, ``(B, T, heads * head_dim)``;
- head sites ``attn{i}.z[h]`` (and ``.q[h]``, ``.k[h]``, ``.v[h]``): head ``h``'s slice, ``(B, T, head_dim)``.
  Caching, replacing and (for ``.z[h]``) path patching work on them like on any other site.

The residual stream after module ``m`` is ``emb + sum of the writers up to m`` (:func:`residual_after`);
a receiver ``attn{i}``/``mlp{i}`` reads it through its norm, ``logits`` through the final norm.

Self-check. The module names differ between architectures (and some blocks hide extra norms), so a
:class:`ModelAccess` does not trust its own lookup: at construction it runs one forward pass on a few
tokens and checks, to a dtype-aware tolerance, that

1. ``emb`` and the running sum of the writers equal the model's own ``output_hidden_states`` before
   every block, and the final norm of the sum equals the last hidden state;
2. every receiver's norm reads the residual stream it should (the block input for attention; the
   block input plus ``attn{i}`` for the MLP of a sequential block, the block input for a parallel one);
3. the unembedding of the final-normed sum (with Gemma-2's logit soft-capping) equals the logits.

A model that fails any of them raises :class:`UnsupportedModelError` naming the architecture and the
check, rather than being analysed silently. Tested on tiny random GPT-2, Llama, Mistral, Qwen2
(GQA), GPT-NeoX (parallel and sequential), GPT-J and Phi (one norm shared by the parallel attention and
MLP), Gemma-2 (pre- and post-norms around both modules, soft-capped logits) and OPT (pre-norm).

Example::

    acc = ModelAccess(AutoModelForCausalLM.from_pretrained(path, local_files_only=True))
    acc.modules                                              # ['attn0', 'mlp0', ..., 'mlp23']
    logits, cache = acc.run(ids, cache=["emb", "attn0", "attn3.z[2]"])
    logits, _ = acc.run(ids, replace={"mlp3": (rows, values)})        # activation patching
    logits, _ = acc.run(ids, replace={"attn3.z[2]": (rows, head_values)})  # one head
    logits, _ = acc.run(ids, add={"mlp5": [(rows, delta)]})           # one edge of path patching
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import nn

_BLOCK_PATHS = ("transformer.h", "model.layers", "gpt_neox.layers", "model.decoder.layers",
                "model.language_model.layers", "layers", "h")
_FINAL_NORM_PATHS = ("transformer.ln_f", "model.norm", "gpt_neox.final_layer_norm", "model.decoder.final_layer_norm",
                     "model.final_layernorm", "model.language_model.norm", "norm", "ln_f")
_ATTN = ("attn", "self_attn", "attention", "self_attention")
_MLP = ("mlp", "feed_forward")
_ATTN_NORM = ("ln_1", "input_layernorm", "self_attn_layer_norm", "ln_attn")
_MLP_NORM = ("pre_feedforward_layernorm", "ln_2", "post_attention_layernorm", "final_layer_norm", "ln_mlp")
_OUT_PROJ = ("o_proj", "c_proj", "dense", "out_proj")
_PARALLEL_TYPES = ("gptj", "phi", "codegen")
_SITE_RE = re.compile(r"^(?:emb|mlp(?P<mlp>\d+)|attn(?P<attn>\d+)(?:\.(?P<part>[qkvz])(?:\[(?P<head>\d+)\])?)?)$")


class UnsupportedModelError(TypeError):
    """The model's blocks could not be found, or the self-check of the residual stream failed."""


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
        if isinstance(m, nn.Module):
            return m
    return None


@dataclass(frozen=True)
class Block:
    """The modules of one decoder block.

    ``attn``/``mlp`` are the modules, ``attn_norm``/``mlp_norm`` the norms whose *input* is the residual
    stream each reads (the same module when a parallel block shares one norm), ``attn_write``/``mlp_write``
    the modules whose *output* is the term added to the residual stream (a post-norm on Gemma-2).
    """

    index: int
    attn: nn.Module
    mlp: nn.Module
    attn_norm: nn.Module
    mlp_norm: nn.Module
    attn_write: nn.Module
    mlp_write: nn.Module
    out_proj: nn.Module | None

    @property
    def shared_norm(self) -> bool:
        return self.attn_norm is self.mlp_norm


def _find_block(i: int, b: nn.Module, parallel: bool) -> Block:
    attn, mlp = _first(b, _ATTN), _first(b, _MLP)
    if mlp is None and _get(b, "fc1") is not None and _get(b, "fc2") is not None:
        mlp = b.fc2  # OPT keeps its MLP inline in the block: fc1 -> act -> fc2 writes the residual
    sandwich = all(_get(b, n) is not None for n in
                   ("post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"))
    attn_norm = _first(b, _ATTN_NORM)
    if sandwich:  # Gemma-2/3: norm -> attn -> norm -> + -> norm -> mlp -> norm -> +
        mlp_norm, attn_write, mlp_write = b.pre_feedforward_layernorm, b.post_attention_layernorm, \
            b.post_feedforward_layernorm
    else:
        mlp_norm, attn_write, mlp_write = _first(b, _MLP_NORM), attn, mlp
        if mlp_norm is None and parallel:
            mlp_norm = attn_norm  # GPT-J, Phi, Falcon-7B: one norm feeds both branches
    missing = [k for k, v in (("attention", attn), ("mlp", mlp), ("attention norm", attn_norm),
                              ("mlp norm", mlp_norm)) if v is None]
    if missing:
        raise UnsupportedModelError(
            f"model: block {i} ({type(b).__name__}) has no {', '.join(missing)} under the names "
            f"{_ATTN}/{_MLP}/{_ATTN_NORM}/{_MLP_NORM}")
    return Block(i, attn, mlp, attn_norm, mlp_norm, attn_write, mlp_write, _first(attn, _OUT_PROJ))


def _arch(model: nn.Module) -> str:
    cfg = getattr(model, "config", None)
    return f"{getattr(cfg, 'model_type', '?')} ({type(model).__name__})"


class ModelAccess:
    """Named hook sites of a Hugging Face causal LM, checked against the model's own hidden states.

    Args:
        model: a ``transformers`` causal LM (``model(input_ids=...).logits``, ``output_hidden_states``).
        check: run the self-check at construction (default; see the module docstring). Turning it off
            is for models already checked in this process.
        rtol: tolerance of the self-check, relative to the scale of the checked tensor
            (default: ``1e-4`` for float32/float64, ``3e-2`` for half precision).

    Raises:
        UnsupportedModelError (a ``TypeError``): blocks or norms not found, or a self-check failed.

    Example:
        >>> acc = ModelAccess(model)                                 # doctest: +SKIP
        >>> logits, cache = acc.run(ids, cache=["attn0", "mlp1"])    # doctest: +SKIP
    """

    def __init__(self, model: nn.Module, *, check: bool = True, rtol: float | None = None):
        if isinstance(model, ModelAccess):
            model = model.model
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch/transformers module, got {type(model).__name__}")
        blocks = _first(model, _BLOCK_PATHS)
        if not isinstance(blocks, nn.ModuleList):
            raise UnsupportedModelError(f"model: no list of decoder blocks found in {_arch(model)} "
                                        f"(looked for {', '.join(_BLOCK_PATHS)})")
        self.model = model
        cfg = getattr(model, "config", None)
        self.architecture = _arch(model)
        if getattr(cfg, "do_layer_norm_before", True) is False:
            raise UnsupportedModelError(f"model: {self.architecture} is post-norm (do_layer_norm_before=False): "
                                        "its residual stream is not a sum of module outputs")
        self.parallel_residual = bool(getattr(cfg, "use_parallel_residual", False)
                                      or getattr(cfg, "parallel_attn", False)
                                      or getattr(cfg, "new_decoder_architecture", False)
                                      or getattr(cfg, "model_type", "") in _PARALLEL_TYPES)
        self.blocks: list[Block] = [_find_block(i, b, self.parallel_residual) for i, b in enumerate(blocks)]
        self._block_list = blocks
        self.final_norm = _first(model, _FINAL_NORM_PATHS)
        if self.final_norm is None:
            raise UnsupportedModelError(f"model: no final norm found in {self.architecture} "
                                        f"(looked for {', '.join(_FINAL_NORM_PATHS)})")
        self.n_ctx = None
        for key in ("n_positions", "max_position_embeddings", "n_ctx"):
            if cfg is not None and getattr(cfg, key, None):
                self.n_ctx = int(getattr(cfg, key))
                break
        emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
        self.vocab_size = int(emb.num_embeddings) if isinstance(emb, nn.Embedding) else None
        text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        self.n_heads = int(getattr(text, "num_attention_heads", 0) or getattr(text, "n_head", 0) or 0)
        self.n_kv_heads = int(getattr(text, "num_key_value_heads", None) or self.n_heads)
        self.logit_softcap = getattr(text, "final_logit_softcapping", None)
        self.head_writes_additive = False
        if check:
            self.self_check(rtol=rtol)

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

    def heads(self, block: int | None = None, part: str = "z") -> list[str]:
        """Head site names ``attn{i}.{part}[h]`` of one block (or of every block)."""
        n = self.n_kv_heads if part in ("k", "v") else self.n_heads
        idx = range(len(self.blocks)) if block is None else [block]
        return [f"attn{i}.{part}[{h}]" for i in idx for h in range(n)]

    def kv_head(self, query_head: int) -> int:
        """The key/value head that query head ``query_head`` attends with (grouped-query attention)."""
        if not 0 <= query_head < self.n_heads:
            raise ValueError(f"query_head must be in [0, {self.n_heads}), got {query_head}")
        return query_head // (self.n_heads // self.n_kv_heads)

    def query_heads(self, kv_head: int) -> list[int]:
        """The query heads served by key/value head ``kv_head``."""
        if not 0 <= kv_head < self.n_kv_heads:
            raise ValueError(f"kv_head must be in [0, {self.n_kv_heads}), got {kv_head}")
        g = self.n_heads // self.n_kv_heads
        return list(range(kv_head * g, (kv_head + 1) * g))

    def _parse(self, name: str):
        m = _SITE_RE.match(str(name))
        if m is None:
            return None
        idx = m.group("mlp") or m.group("attn")
        if idx is not None and int(idx) >= len(self.blocks):
            return None
        head = m.group("head")
        if head is not None:
            n = self.n_kv_heads if m.group("part") in ("k", "v") else self.n_heads
            if int(head) >= n:
                return None
        return m

    def check_site(self, name: str) -> str:
        """``name`` if it is a site of this model, else a ``ValueError`` listing the sites."""
        if self._parse(name) is None:
            L = len(self.blocks)
            raise ValueError(f"site {name!r} is not in this model (sites: emb, attn0..attn{L - 1}, mlp0..mlp{L - 1}, "
                             f"attn<i>.q/.k/.v/.z, heads attn<i>.z[0..{self.n_heads - 1}], "
                             f"attn<i>.k[0..{self.n_kv_heads - 1}])")
        return str(name)

    def order(self, name: str) -> int:
        """Position of a residual writer/reader in the forward order (emb = 0, logits = last);
        a head site has its attention module's position."""
        if name == "emb":
            return 0
        if name == "logits":
            return len(self.modules) + 1
        m = self._parse(name)
        if m is None:
            self.check_site(name)
        base = f"mlp{m.group('mlp')}" if m.group("mlp") is not None else f"attn{m.group('attn')}"
        return self.modules.index(base) + 1

    def is_edge(self, sender: str, receiver: str) -> bool:
        """Whether ``receiver`` reads ``sender``'s output from the residual stream (forward order, and in
        parallel-residual blocks not ``attn{i} -> mlp{i}``)."""
        if self.order(sender) >= self.order(receiver):
            return False
        if self.parallel_residual and sender.startswith("attn"):
            return receiver != f"mlp{self._parse(sender).group('attn')}"
        return True

    def check_input(self, input_ids: torch.Tensor, *, name: str = "input_ids") -> None:
        """Refuse anything but ``(B, T)`` in-vocabulary token ids that fit the context."""
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.dtype != torch.long:
            raise TypeError(f"{name} must be a 2-d LongTensor (batch, positions)")
        if input_ids.shape[1] == 0:
            raise ValueError(f"{name}: prompts have no tokens")
        if self.n_ctx is not None and input_ids.shape[1] > self.n_ctx:
            raise ValueError(f"{name}: prompts of {input_ids.shape[1]} tokens exceed the model's context "
                             f"of {self.n_ctx} positions")
        if input_ids.numel() and self.vocab_size is not None:
            lo, hi = int(input_ids.min()), int(input_ids.max())
            if lo < 0 or hi >= self.vocab_size:
                bad = lo if lo < 0 else hi
                raise ValueError(f"{name}: token id {bad} is outside the vocabulary [0, {self.vocab_size})")

    def _hook_point(self, name: str) -> tuple[nn.Module, str, int | None]:
        """(module, 'in'|'out', head) where site ``name`` is read and written."""
        m = self._parse(self.check_site(name))
        if name == "emb":
            return self._block_list[0], "in", None
        if m.group("mlp") is not None:
            return self.blocks[int(m.group("mlp"))].mlp_write, "out", None
        b = self.blocks[int(m.group("attn"))]
        part, head = m.group("part"), m.group("head")
        head = None if head is None else int(head)
        if part is None:
            return b.attn_write, "out", None
        if part == "z":
            if b.out_proj is None:
                raise ValueError(f"site {name!r}: the attention module has no output projection ({_OUT_PROJ})")
            return b.out_proj, "in", head
        proj = _get(b.attn, f"{part}_proj")
        if not isinstance(proj, nn.Module):
            raise ValueError(f"site {name!r}: this model has no separate {part}_proj (fused qkv, e.g. GPT-2, "
                             "GPT-NeoX); use the attn/mlp module sites or .z")
        return proj, "out", head

    def _sub_module(self, name: str) -> tuple[nn.Module, str]:
        """(module to hook, 'out'|'in') for a head-level site (factlocus's name for it)."""
        mod, where, _ = self._hook_point(name)
        return mod, where

    def receiver_norm(self, name: str) -> nn.Module:
        """The norm module whose input is the residual stream a receiver reads."""
        if name == "logits":
            return self.final_norm
        m = self._parse(self.check_site(name))
        if m.group("mlp") is not None:
            return self.blocks[int(m.group("mlp"))].mlp_norm
        if m.group("part") is not None:
            raise ValueError(f"receiver {name!r} must be a module or 'logits'")
        return self.blocks[int(m.group("attn"))].attn_norm

    # per-head writes ----------------------------------------------------------------------
    @torch.no_grad()
    def head_write(self, block: int, z: torch.Tensor, head: int) -> torch.Tensor:
        """What head ``head`` of block ``block`` adds to the residual stream, given ``z`` (the
        ``attn{block}.z`` value, ``(..., heads * head_dim)``) or that head's slice ``(..., head_dim)``.

        ``W_O[:, head] z_head`` -- linear, so the heads' writes sum to ``attn{block}`` minus the output bias.
        Only where the self-check found ``attn{i} == out_proj(z)`` (not behind Gemma-2's post-norm).
        """
        if not self.head_writes_additive:
            raise ValueError(f"head writes: in {self.architecture} the attention output passes a norm after "
                             "its output projection, so one head's write to the residual stream is not defined")
        proj = self.blocks[block].out_proj
        width = _in_features(proj)
        hd = width // self.n_heads
        if not 0 <= head < self.n_heads:
            raise ValueError(f"head must be in [0, {self.n_heads}), got {head}")
        if z.shape[-1] not in (width, hd):
            raise ValueError(f"z must end in {width} (all heads) or {hd} (one head), got shape {tuple(z.shape)}")
        full = torch.zeros(*z.shape[:-1], width, dtype=z.dtype, device=z.device)
        full[..., head * hd:(head + 1) * hd] = z[..., head * hd:(head + 1) * hd] if z.shape[-1] == width else z
        return proj(full) - proj(torch.zeros_like(full))

    # the forward pass -------------------------------------------------------------------
    @torch.no_grad()
    def run(self, input_ids: torch.Tensor, *, cache: Iterable[str] = (),
            replace: Mapping[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
            add: Mapping[str, Sequence[tuple[torch.Tensor, torch.Tensor]]] | None = None,
            last_only: bool = True, attention_mask: torch.Tensor | None = None):
        """One forward pass with hooks.

        Args:
            input_ids: ``(B, T)`` token ids.
            cache: site names whose values to return (after any replacement).
            replace: ``{site: (rows, values)}`` -- the site's value on batch ``rows`` becomes ``values``
                (shape ``(len(rows), T, ...)``; for a head site ``(len(rows), T, head_dim)``); everything
                downstream is recomputed. Several heads of one module may be replaced at once, each on
                its own rows (one batched pass per-head patching).
            add: ``{receiver: [(rows, delta), ...]}`` -- ``delta`` is added to the residual stream read
                by the receiver (module name, or ``logits``) on ``rows``, and to nothing else. ``delta``
                may be a callable of the dict of values cached so far in this pass (sites upstream of
                the receiver are already there) -- what causal scrubbing needs.
            last_only: return logits of the last position only (``(B, V)``) instead of ``(B, T, V)``.
            attention_mask: optional ``(B, T)`` mask, passed to the model (padded batches).

        Returns:
            ``(logits, cache_dict)``: logits as float32 on the CPU; cached values on the model's device.
        """
        self.check_input(input_ids)
        input_ids = input_ids.to(self.device)
        replace, add, cache = dict(replace or {}), dict(add or {}), list(cache)
        for name in [*cache, *replace]:
            self.check_site(name)
        for name in add:
            self.receiver_norm(name)
        B, T = input_ids.shape
        out: dict[str, torch.Tensor] = {}
        points: dict[tuple[int, str], list] = {}
        for name in dict.fromkeys([*replace, *cache]):
            mod, where, head = self._hook_point(name)
            points.setdefault((id(mod), where), [mod, where, []])[2].append((name, head))

        def transform(sites):
            sites = sorted(sites, key=lambda s: s[1] is not None)  # whole sites first, then their heads

            def apply(v):
                flat = v.dim() == 2 and v.shape[0] == B * T  # OPT flattens (B, T) around its MLP
                x = v.view(B, T, -1) if flat else v
                if any(n in replace for n, _ in sites):
                    x = x.clone()
                for n, head in sites:
                    if n in replace:
                        rows, vals = replace[n]
                        vals = vals.to(x.device, x.dtype)
                        if head is None:
                            x[rows] = vals
                        else:
                            hd = x.shape[-1] // (self.n_kv_heads if n.split(".")[1][0] in "kv" else self.n_heads)
                            x[rows, ..., head * hd:(head + 1) * hd] = vals
                for n, head in sites:
                    if n in cache:
                        if head is None:
                            out[n] = x.detach().clone()
                        else:
                            hd = x.shape[-1] // (self.n_kv_heads if n.split(".")[1][0] in "kv" else self.n_heads)
                            out[n] = x[..., head * hd:(head + 1) * hd].detach().clone()
                return x.reshape(v.shape) if flat else x
            return apply

        def out_hook(f):
            def hook(mod, args, output):
                if isinstance(output, tuple):
                    return (f(output[0]), *output[1:])
                return f(output)
            return hook

        def in_hook(f):
            def hook(mod, args, kwargs):
                if args:
                    return (f(args[0]), *args[1:]), kwargs
                key = "hidden_states" if "hidden_states" in kwargs else "input"
                return args, {**kwargs, key: f(kwargs[key])}
            return hook

        def add_to(deltas):
            def f(v):
                flat = v.dim() == 2 and v.shape[0] == B * T
                x = (v.view(B, T, -1) if flat else v).clone()
                for rows, d in deltas:
                    d = d(out) if callable(d) else d  # a callable reads the values cached so far
                    x[rows] = x[rows] + d.to(x.device, x.dtype)
                return x.reshape(v.shape) if flat else x
            return f

        shared_inputs: dict[int, torch.Tensor] = {}

        def keep_input(key):
            def hook(mod, args, kwargs):
                shared_inputs[key] = args[0] if args else kwargs["hidden_states"]
            return hook

        handles = []
        try:
            for mod, where, sites in points.values():
                f = transform(sites)
                handles.append(mod.register_forward_pre_hook(in_hook(f), with_kwargs=True) if where == "in"
                               else mod.register_forward_hook(out_hook(f)))
            for name, deltas in add.items():
                norm, f = self.receiver_norm(name), add_to(list(deltas))
                b = None if name == "logits" else self.blocks[int(re.sub(r"\D", "", name))]
                if b is None or not b.shared_norm:
                    handles.append(norm.register_forward_pre_hook(in_hook(f), with_kwargs=True))
                    continue
                # one norm feeds both branches: keep its input, and give the receiver norm(input + delta)
                if id(norm) not in shared_inputs:
                    shared_inputs[id(norm)] = None
                    handles.append(norm.register_forward_pre_hook(keep_input(id(norm)), with_kwargs=True))
                reader = b.attn if name.startswith("attn") else b.mlp

                def renorm(v, f=f, norm=norm):
                    return norm.forward(f(shared_inputs[id(norm)])).to(v.dtype)
                handles.append(reader.register_forward_pre_hook(in_hook(renorm), with_kwargs=True))
            kw = {} if attention_mask is None else {"attention_mask": attention_mask.to(self.device)}
            logits = self.model(input_ids=input_ids, **kw).logits
        finally:
            for h in handles:
                h.remove()
        return (logits[:, -1] if last_only else logits).float().cpu(), out

    def unembed(self, resid: torch.Tensor) -> torch.Tensor:
        """Logits from a residual stream: final norm, output embedding, and soft-capping where the model has it."""
        logits = self.model.get_output_embeddings()(self.final_norm(resid))
        if self.logit_softcap:
            logits = torch.tanh(logits / self.logit_softcap) * self.logit_softcap
        return logits

    # the self-check -----------------------------------------------------------------------
    @torch.no_grad()
    def self_check(self, *, rtol: float | None = None, n_tokens: int = 6) -> dict:
        """Check the reconstruction of the residual stream against the model (see the module docstring).

        Returns ``{check: relative error}``; raises :class:`UnsupportedModelError` naming the architecture
        and the first check over tolerance.
        """
        param = next(self.model.parameters())
        rtol = rtol if rtol is not None else (1e-4 if param.dtype in (torch.float32, torch.float64) else 3e-2)
        V = self.vocab_size or 2
        T = max(2, min(n_tokens, self.n_ctx or n_tokens))
        gen = torch.Generator().manual_seed(0)
        ids = torch.randint(0, V, (2, T), generator=gen).to(param.device)
        reads: dict[str, torch.Tensor] = {}
        handles = []

        def keep(key):
            def hook(mod, args, kwargs):
                x = args[0] if args else kwargs["hidden_states"]
                reads[key] = x.reshape(2, T, -1) if x.dim() == 2 else x
            return hook

        def keep_out(key):
            def hook(mod, args, output):
                x = output[0] if isinstance(output, tuple) else output
                reads[key] = x.reshape(2, T, -1) if x.dim() == 2 else x
            return hook
        for b in self.blocks:
            handles.append(b.attn_norm.register_forward_pre_hook(keep(f"attn{b.index}.in"), with_kwargs=True))
            handles.append(b.mlp_norm.register_forward_pre_hook(keep(f"mlp{b.index}.in"), with_kwargs=True))
            if b.out_proj is not None:
                handles.append(b.out_proj.register_forward_hook(keep_out(f"attn{b.index}.proj")))
        handles.append(self.final_norm.register_forward_pre_hook(keep("logits.in"), with_kwargs=True))
        with self.eval_mode():
            try:
                out = self.model(input_ids=ids, output_hidden_states=True)
            finally:
                for h in handles:
                    h.remove()
            logits, cache = self.run(ids, cache=self.senders, last_only=False)
        hs = out.hidden_states
        errors: dict[str, float] = {}

        def rel(a, b):
            a, b = a.float(), b.float()
            return float((a - b).abs().max() / b.abs().max().clamp_min(1e-6))

        L = len(self.blocks)
        if hs is None or len(hs) != L + 1:
            raise UnsupportedModelError(f"model: {self.architecture} did not return {L + 1} hidden states")
        resid = cache["emb"]
        errors["emb"] = rel(resid, hs[0])
        additive = True
        for b in self.blocks:
            i = b.index
            errors[f"attn{i} reads"] = rel(reads[f"attn{i}.in"], resid)
            mlp_reads = resid if self.parallel_residual else resid + cache[f"attn{i}"]
            errors[f"mlp{i} reads"] = rel(reads[f"mlp{i}.in"], mlp_reads)
            resid = resid + cache[f"attn{i}"] + cache[f"mlp{i}"]
            if i + 1 < L:
                errors[f"residual after block {i}"] = rel(resid, hs[i + 1])
            if f"attn{i}.proj" in reads:
                additive &= rel(reads[f"attn{i}.proj"], cache[f"attn{i}"]) <= rtol
            else:
                additive = False
        errors["final norm reads"] = rel(reads["logits.in"], resid)
        errors[f"residual after block {L - 1}"] = rel(self.final_norm(resid), hs[L])
        errors["logits"] = rel(self.unembed(resid), out.logits)
        errors["logits under hooks"] = rel(logits.to(out.logits.device), out.logits)
        for what, err in errors.items():
            if not err <= rtol:
                raise UnsupportedModelError(
                    f"model: {self.architecture} failed the ModelAccess self-check: {what} differs from the "
                    f"model's own forward pass by {err:.3g} (relative; tolerance {rtol:g}), so its sites would "
                    "give wrong numbers; this architecture is not supported")
        self.head_writes_additive = bool(additive)
        return errors

    @contextlib.contextmanager
    def eval_mode(self):
        was = self.model.training
        self.model.eval()
        try:
            yield self
        finally:
            self.model.train(was)


def _in_features(proj: nn.Module) -> int:
    w = proj.weight
    return int(w.shape[1]) if isinstance(proj, nn.Linear) else int(w.shape[0])  # Conv1D keeps (in, out)


def residual_after(cache: Mapping[str, torch.Tensor], access: ModelAccess, name: str) -> torch.Tensor:
    """The residual stream right after module ``name`` writes (``emb`` + all writers up to it)."""
    upto = access.order(name)
    total = cache["emb"].clone()
    for m in access.modules[:upto]:
        total = total + cache[m]
    return total
