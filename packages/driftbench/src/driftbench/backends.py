"""Chat backends behind ``complete(messages, **sampling) -> str`` (thin layers over :mod:`paperworks.lm`).

- :class:`OpenAIChat`: any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, llama.cpp,
  TGI, ...); the key comes from a named environment variable; HTTP 429/5xx and time-outs are retried
  with back-off, then reported as :class:`paperworks.lm.ChatError`.
- :class:`HFChat`: a local ``transformers`` causal LM with a chat-template tokenizer.

A loopback OpenAI-compatible server around any backend is :func:`driftbench.serve.serve`.
"""

from __future__ import annotations

from paperworks.lm import HFChat as _HFChat
from paperworks.lm import OpenAIChat as _OpenAIChat

OPENAI_URL = "https://api.openai.com/v1"


class OpenAIChat(_OpenAIChat):
    """An OpenAI-compatible endpoint.

    Args:
        model: the served model's name.
        base_url: the endpoint (default OpenAI's); e.g. ``"http://127.0.0.1:8000/v1"`` for vLLM.
        api_key_env: the environment variable holding the key (a missing one is an error that names
            it); ``None`` for endpoints without a key.
        kw: ``timeout``, ``max_retries``, ``backoff``, ``concurrency`` and default sampling arguments.
    """

    def __init__(self, model: str, base_url: str | None = None, *, api_key_env: str | None = "OPENAI_API_KEY", **kw):
        super().__init__(model, base_url=base_url or OPENAI_URL, api_key_env=api_key_env, **kw)
        self.name = model


class HFChat(_HFChat):
    """A local Hugging Face chat model: ``model`` (causal LM) and ``tokenizer`` (with a chat template).

    A conversation longer than the model's context is refused with a clear error (no silent truncation).
    """

    def __init__(self, model, tokenizer, *, max_new_tokens: int = 64, name: str | None = None):
        super().__init__(model, tokenizer, max_new_tokens=max_new_tokens)
        self.name = name or getattr(getattr(model, "config", None), "model_type", "hf")
        cfg = getattr(model, "config", None)
        self.n_ctx = getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", None)

    def complete(self, messages, *, seed: int = 0, temperature: float = 0.0, max_tokens: int | None = None,
                 **sampling) -> str:
        prompt = self.render(messages)
        n = len(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        new = max_tokens or self.max_new_tokens
        if self.n_ctx is not None and n + new > self.n_ctx:
            raise ValueError(f"HFChat: the conversation is {n} tokens + {new} new > the model's context "
                             f"{self.n_ctx}; use fewer turns or a longer-context model")
        return self.complete_many([messages], temperature=temperature, max_tokens=max_tokens,
                                  seed=int(seed) % (2**31), **sampling)[0]
