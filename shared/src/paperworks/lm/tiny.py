"""Tiny local language models and word-level tokenizers: built here, saved and loaded offline.

Nothing is downloaded: a model is a random (or locally trained) ``transformers`` model from a small
config, a tokenizer is a ``tokenizers`` word-level model over the words you give, with a chat template
(system/user/assistant/tool turns and tool calls). Both go through ``save_pretrained`` and
``from_pretrained(path, local_files_only=True)`` like any checkpoint, so the code under test takes
the same path it takes with a real model on disk.

Example::

    tok = word_tokenizer("the cat sat on a mat".split())
    model = tiny_model("llama", len(tok), kv_heads=2)
    save_local(tmp / "m", model, tok)
    model, tok = load_local(tmp / "m")
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch

SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<|end|>")
CHAT_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<tool_call>", "</tool_call>")
PUNCTUATION = tuple('{}[]():;,."\'!?-_=+*/<>@#$%&')

# Turns are "<|role|> content <|end|>"; tools are listed in a system turn as JSON; an assistant's tool
# calls are "<tool_call> {"name": ..., "arguments": {...}} </tool_call>"; tool results are "<|tool|>" turns.
CHAT_TEMPLATE = (
    "{%- if tools %}<|system|> tools : {{ tools | tojson }} <|end|>\n{% endif -%}"
    "{%- for m in messages -%}"
    "<|{{ m['role'] }}|>{% if m['content'] %} {{ m['content'] }}{% endif %}"
    "{%- if m['tool_calls'] %}{% for c in m['tool_calls'] %} <tool_call> "
    "{{ (c['function'] if c['function'] is defined else c) | tojson }} </tool_call>{% endfor %}{% endif %} <|end|>\n"
    "{%- endfor -%}"
    "{%- if add_generation_prompt %}<|assistant|>{% endif -%}"
)

_CONFIGS = {
    "gpt2": ("GPT2Config", lambda w, L, h, kv, ctx: dict(n_embd=w, n_layer=L, n_head=h, n_positions=ctx)),
    "llama": ("LlamaConfig", lambda w, L, h, kv, ctx: dict(hidden_size=w, intermediate_size=2 * w, num_hidden_layers=L,
                                                          num_attention_heads=h, num_key_value_heads=kv,
                                                          max_position_embeddings=ctx)),
    "mistral": ("MistralConfig", lambda w, L, h, kv, ctx: dict(hidden_size=w, intermediate_size=2 * w,
                                                              num_hidden_layers=L, num_attention_heads=h,
                                                              num_key_value_heads=kv, max_position_embeddings=ctx)),
    "qwen2": ("Qwen2Config", lambda w, L, h, kv, ctx: dict(hidden_size=w, intermediate_size=2 * w, num_hidden_layers=L,
                                                          num_attention_heads=h, num_key_value_heads=kv,
                                                          max_position_embeddings=ctx)),
    "gpt_neox": ("GPTNeoXConfig", lambda w, L, h, kv, ctx: dict(hidden_size=w, intermediate_size=2 * w,
                                                               num_hidden_layers=L, num_attention_heads=h,
                                                               max_position_embeddings=ctx)),
    "gptj": ("GPTJConfig", lambda w, L, h, kv, ctx: dict(n_embd=w, n_layer=L, n_head=h, n_positions=ctx,
                                                        rotary_dim=w // h // 2)),
    "phi": ("PhiConfig", lambda w, L, h, kv, ctx: dict(hidden_size=w, intermediate_size=2 * w, num_hidden_layers=L,
                                                      num_attention_heads=h, max_position_embeddings=ctx)),
    "gemma2": ("Gemma2Config", lambda w, L, h, kv, ctx: dict(hidden_size=w, intermediate_size=2 * w,
                                                            num_hidden_layers=L, num_attention_heads=h,
                                                            num_key_value_heads=kv, head_dim=w // h,
                                                            max_position_embeddings=ctx)),
    "opt": ("OPTConfig", lambda w, L, h, kv, ctx: dict(hidden_size=w, ffn_dim=2 * w, num_hidden_layers=L,
                                                      num_attention_heads=h, max_position_embeddings=ctx,
                                                      word_embed_proj_dim=w)),
}
ARCHITECTURES = tuple(_CONFIGS)


def word_tokenizer(words: Iterable[str], *, chat_template: str | None = CHAT_TEMPLATE, punctuation: bool = True,
                   model_max_length: int = 64):
    """A word-level fast tokenizer: one id per distinct word, ``<unk>`` for the rest.

    Args:
        words: the vocabulary (duplicates dropped, order kept) after the special tokens
            ``<pad> <unk> <bos> <|end|>`` (ids 0-3; ``<|end|>`` is the eos token and ends chat turns)
            and the chat tokens.
        chat_template: a Jinja chat template (default :data:`CHAT_TEMPLATE`, with tool calls), or
            ``None`` for a tokenizer without one.
        punctuation: add single punctuation characters (what JSON tool calls tokenise into).

    Returns:
        ``transformers.PreTrainedTokenizerFast`` (left padding, so batched generation works).
    """
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {}
    extra = PUNCTUATION if punctuation else ()
    for w in (*SPECIAL_TOKENS, *CHAT_TOKENS, *extra, *words):
        if not isinstance(w, str) or not w or any(c.isspace() for c in w):
            raise ValueError(f"words: every word must be a non-empty string without spaces, got {w!r}")
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                pre_tokenizers.Punctuation(behavior="isolated")])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>",
                                  eos_token="<|end|>", additional_special_tokens=list(CHAT_TOKENS),
                                  model_max_length=model_max_length, padding_side="left")
    if chat_template is not None:
        tok.chat_template = chat_template
    return tok


def tiny_config(arch: str, vocab_size: int, *, width: int = 32, layers: int = 2, heads: int = 4,
                kv_heads: int | None = None, n_ctx: int = 64, **overrides):
    """A small ``transformers`` config of architecture ``arch`` (one of :data:`ARCHITECTURES`).

    ``kv_heads`` (grouped-query attention) applies to llama/mistral/qwen2/gemma2; ``overrides`` go to
    the config (e.g. ``use_parallel_residual=False`` for gpt_neox). Special-token ids are 0 (pad),
    2 (bos) and 3 (eos), as in :func:`word_tokenizer`.
    """
    import transformers

    if arch not in _CONFIGS:
        raise ValueError(f"arch must be one of {ARCHITECTURES}, got {arch!r}")
    for k, v in (("vocab_size", vocab_size), ("width", width), ("layers", layers), ("heads", heads), ("n_ctx", n_ctx)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{k} must be a positive integer, got {v!r}")
    if vocab_size < 4:
        raise ValueError(f"vocab_size must be >= 4 (the special tokens), got {vocab_size}")
    kv = heads if kv_heads is None else kv_heads
    if width % heads or heads % kv:
        raise ValueError(f"need width % heads == 0 and heads % kv_heads == 0, got {width}, {heads}, {kv}")
    cls_name, fields = _CONFIGS[arch]
    return getattr(transformers, cls_name)(vocab_size=vocab_size, pad_token_id=0, bos_token_id=2, eos_token_id=3,
                                           **{**fields(width, layers, heads, kv, n_ctx), **overrides})


def tiny_model(arch: str, vocab_size: int, *, seed: int = 0, **config):
    """A random causal LM of :func:`tiny_config` (eval mode, float32, on the CPU)."""
    from transformers import AutoModelForCausalLM

    cfg = tiny_config(arch, vocab_size, **config)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(cfg)
    return model.eval()


def tiny_gpt2(vocab_size: int, **kw):
    """:func:`tiny_model` for GPT-2 (fused qkv, learned positions, tied unembedding)."""
    return tiny_model("gpt2", vocab_size, **kw)


def tiny_llama(vocab_size: int, *, kv_heads: int = 2, **kw):
    """:func:`tiny_model` for Llama with grouped-query attention (``kv_heads`` key/value heads)."""
    return tiny_model("llama", vocab_size, kv_heads=kv_heads, **kw)


def save_local(path, model, tokenizer=None) -> Path:
    """``save_pretrained`` the model (and tokenizer) into the folder ``path``; returns it."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    if tokenizer is not None:
        tokenizer.save_pretrained(path)
    return path


def load_local(path, *, tokenizer: bool = True):
    """Load ``(model, tokenizer)`` from a local folder, never touching the network
    (``local_files_only=True``); ``tokenizer=None`` in the pair when the folder has none or
    ``tokenizer=False``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"path: {path} has no config.json (not a saved model folder)")
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
    tok = None
    if tokenizer and (path / "tokenizer.json").is_file():
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return model, tok
