"""paperworks.lm -- one model-access layer for the language-model packages (extra ``paperworks[lm]``).

Importing :mod:`paperworks` never imports this subpackage; importing it imports torch and, lazily,
transformers/tokenizers.

- :class:`ModelAccess`: named residual-stream sites (``emb``, ``attn{i}``, ``mlp{i}``, ``attn{i}.q/k/v/z``,
  heads ``attn{i}.z[h]``) of any Hugging Face causal LM, with cache/replace/add hooks, checked at
  construction against the model's own hidden states and logits (refused with
  :class:`UnsupportedModelError` otherwise).
- :func:`patch`, :func:`path_patch`, :func:`all_edges`: batched activation patching (modules, heads)
  and edge path patching on the logit difference.
- :func:`generate_with_states`: batched, left-padded, KV-cached generation with the hidden states of
  every generated token.
- :class:`OpenAIChat`, :class:`HFChat`, :class:`ScriptedChat`: ``complete(messages, **sampling) -> str``.
- :mod:`paperworks.lm.tiny`: tiny local models and word-level tokenizers with a chat template.
"""

from paperworks.lm.access import Block, ModelAccess, UnsupportedModelError, residual_after
from paperworks.lm.chat import ChatError, ChatModel, HFChat, OpenAIChat, ScriptedChat, check_messages
from paperworks.lm.generate import Generation, generate_with_states
from paperworks.lm.patching import all_edges, check_edges, logit_diff, patch, path_patch
from paperworks.lm.tiny import (
    ARCHITECTURES,
    CHAT_TEMPLATE,
    load_local,
    save_local,
    tiny_config,
    tiny_gpt2,
    tiny_llama,
    tiny_model,
    word_tokenizer,
)

__all__ = [
    "ARCHITECTURES",
    "CHAT_TEMPLATE",
    "Block",
    "ChatError",
    "ChatModel",
    "Generation",
    "HFChat",
    "ModelAccess",
    "OpenAIChat",
    "ScriptedChat",
    "UnsupportedModelError",
    "all_edges",
    "check_edges",
    "check_messages",
    "generate_with_states",
    "load_local",
    "logit_diff",
    "patch",
    "path_patch",
    "residual_after",
    "save_local",
    "tiny_config",
    "tiny_gpt2",
    "tiny_llama",
    "tiny_model",
    "word_tokenizer",
]
