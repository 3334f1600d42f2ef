"""A ``diffusers`` attention processor that runs self-attention as Monarch attention.

::

    from monarchrt.integrations.diffusers import MonarchAttnProcessor, set_monarch_processor
    attn.set_processor(MonarchAttnProcessor(layout=(F, H, W), block=(1, H, W)))   # one Attention module
    set_monarch_processor(transformer, layout=(F, H, W))        # every self-attention module of a model

The processor follows ``diffusers``' ``AttnProcessor2_0`` step by step (projections, optional
q/k norms, output projection, residual, rescale) and replaces only the softmax attention over the
video tokens: the hidden states' sequence is read as ``(frames, height, width)`` in row-major order,
the order of the patchified latents in diffusers' video transformers. Cross-attention (text
tokens) stays dense SDPA — the Monarch structure is a property of the video tokens. A full tile
``block=layout`` is exactly dense attention (one key block, one query per class), which the tests
use to check the adapter against ``AttnProcessor2_0``.

This module never imports ``diffusers``: a processor is any callable with the processor
signature, so ``import monarchrt`` stays free of it (install with ``pip install
'paperworks-monarchrt[diffusers]'`` to use the adapter on diffusers models).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from monarchrt.monarch import make_plan, monarch_attention


class MonarchAttnProcessor:
    """Self-attention of a ``diffusers`` ``Attention`` module through :func:`monarch_attention`.

    Args:
        layout: ``(F, H, W)`` token layout of the sequence (``F·H·W`` = sequence length).
        num_iters, causal_frames, block, h_reduce, w_reduce, f_tied, chunk_frames, backend: as in
            :func:`monarchrt.monarch_attention`.
    """

    def __init__(self, layout, *, num_iters: int = 1, causal_frames: bool = False, backend: str = "auto",
                 **knobs):
        self.plan = make_plan(layout, causal_frames=causal_frames, **knobs)  # validates the knobs now
        self.layout, self.num_iters, self.causal_frames = tuple(layout), num_iters, causal_frames
        self.backend, self.knobs = backend, knobs

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None, temb=None,
                 *args, **kwargs):
        residual = hidden_states
        if attn.spatial_norm is not None:
            hidden_states = attn.spatial_norm(hidden_states, temb)
        input_ndim = hidden_states.ndim
        if input_ndim == 4:
            batch, channel, height, width = hidden_states.shape
            hidden_states = hidden_states.view(batch, channel, height * width).transpose(1, 2)
        batch = hidden_states.shape[0]
        cross = encoder_hidden_states is not None
        if attention_mask is not None and not cross:
            raise ValueError("MonarchAttnProcessor does not take an attention_mask for self-attention; "
                             "use causal_frames/chunk_frames for block-causal video attention")
        if attention_mask is not None:
            src_len = encoder_hidden_states.shape[1]
            attention_mask = attn.prepare_attention_mask(attention_mask, src_len, batch)
            attention_mask = attention_mask.view(batch, attn.heads, -1, attention_mask.shape[-1])
        if attn.group_norm is not None:
            hidden_states = attn.group_norm(hidden_states.transpose(1, 2)).transpose(1, 2)
        query = attn.to_q(hidden_states)
        if not cross:
            encoder_hidden_states = hidden_states
        elif attn.norm_cross:
            encoder_hidden_states = attn.norm_encoder_hidden_states(encoder_hidden_states)
        key, value = attn.to_k(encoder_hidden_states), attn.to_v(encoder_hidden_states)
        head_dim = key.shape[-1] // attn.heads
        query, key, value = (x.view(batch, -1, attn.heads, head_dim).transpose(1, 2) for x in (query, key, value))
        if attn.norm_q is not None:
            query = attn.norm_q(query)
        if attn.norm_k is not None:
            key = attn.norm_k(key)
        if cross:
            out = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask)
        else:
            if query.shape[-2] != self.plan.N:
                raise ValueError(f"sequence length {query.shape[-2]} does not match layout {self.layout} "
                                 f"(frames*height*width={self.plan.N})")
            out = monarch_attention(query, key, value, self.layout, self.num_iters, self.causal_frames,
                                    backend=self.backend, scale=head_dim ** -0.5, **self.knobs)
        hidden_states = out.transpose(1, 2).reshape(batch, -1, attn.heads * head_dim).to(query.dtype)
        hidden_states = attn.to_out[1](attn.to_out[0](hidden_states))
        if input_ndim == 4:
            hidden_states = hidden_states.transpose(-1, -2).reshape(batch, channel, height, width)
        if attn.residual_connection:
            hidden_states = hidden_states + residual
        return hidden_states / attn.rescale_output_factor


def set_monarch_processor(model: torch.nn.Module, layout, **kwargs) -> int:
    """Give every self-attention module of ``model`` (those with ``set_processor`` and not
    ``is_cross_attention``) a :class:`MonarchAttnProcessor`; returns how many were set."""
    proc = MonarchAttnProcessor(layout, **kwargs)
    n = 0
    for mod in model.modules():
        if hasattr(mod, "set_processor") and not getattr(mod, "is_cross_attention", False):
            mod.set_processor(proc)
            n += 1
    return n
