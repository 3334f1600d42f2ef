"""Chat backends behind one protocol: ``complete(messages, **sampling) -> str``.

- :class:`OpenAIChat`: any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, llama.cpp,
  TGI ...), standard library only; the key is read from a named environment variable, requests retry
  with exponential back-off on 429/5xx/network errors, every request has a time-out, and
  :meth:`~OpenAIChat.complete_many` runs up to ``concurrency`` requests at once.
- :class:`HFChat`: a local model and a tokenizer with a chat template (tools rendered by the template).
- :class:`ScriptedChat`: planted answers, for tests of agent loops.

Messages are ``[{"role": "system"|"user"|"assistant"|"tool", "content": str, ...}]``; an assistant turn
may carry ``tool_calls`` instead of content.
"""

from __future__ import annotations

import json
import os
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, runtime_checkable

ROLES = ("system", "user", "assistant", "tool")


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers a conversation with a string."""

    def complete(self, messages: Sequence[Mapping], **sampling) -> str: ...


class ChatError(RuntimeError):
    """A chat request failed for good (after the retries, or with a status that retrying cannot fix)."""


def check_messages(messages) -> list[dict]:
    """Validate a conversation; returns it as a list of plain dicts."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence) or not len(messages):
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise ValueError(f"messages[{i}] must be a dict with 'role' and 'content', got {type(m).__name__}")
        if m.get("role") not in ROLES:
            raise ValueError(f"messages[{i}]: role must be one of {ROLES}, got {m.get('role')!r}")
        content = m.get("content")
        if not (isinstance(content, str) or (content is None and m.get("tool_calls"))):
            raise ValueError(f"messages[{i}]: content must be a string (or None with tool_calls), got {content!r}")
        out.append(dict(m))
    return out


class ScriptedChat:
    """Planted answers, in order (or from a function of the messages); records every call in ``calls``.

    Args:
        answers: a list of strings returned one per call, or ``f(messages) -> str``.
    """

    def __init__(self, answers: Sequence[str] | Callable[[list[dict]], str]):
        if not callable(answers):
            answers = list(answers)
            if not all(isinstance(a, str) for a in answers):
                raise ValueError("answers must be strings (or one function of the messages)")
        self.answers = answers
        self.calls: list[tuple[list[dict], dict]] = []

    def complete(self, messages, **sampling) -> str:
        messages = check_messages(messages)
        self.calls.append((messages, sampling))
        if callable(self.answers):
            out = self.answers(messages)
            if not isinstance(out, str):
                raise TypeError(f"ScriptedChat: the answer function returned {type(out).__name__}, not str")
            return out
        if len(self.calls) > len(self.answers):
            raise ChatError(f"ScriptedChat: ran out of planted answers after {len(self.answers)} calls")
        return self.answers[len(self.calls) - 1]


class HFChat:
    """A local Hugging Face model behind the chat protocol (greedy unless ``temperature > 0``).

    Args:
        model, tokenizer: a causal LM and a tokenizer whose ``chat_template`` renders the conversation.
        max_new_tokens: the default answer length (``max_tokens=`` per call overrides it).
    """

    def __init__(self, model, tokenizer, *, max_new_tokens: int = 32):
        if tokenizer is None or not getattr(tokenizer, "chat_template", None):
            raise ValueError("tokenizer: has no chat_template, so it cannot render a conversation "
                             "(set tokenizer.chat_template, e.g. paperworks.lm.tiny.CHAT_TEMPLATE)")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
        self.model, self.tokenizer, self.max_new_tokens = model, tokenizer, max_new_tokens

    def render(self, messages, *, tools=None) -> str:
        return self.tokenizer.apply_chat_template(check_messages(messages), tools=tools, add_generation_prompt=True,
                                                  tokenize=False)

    def complete_many(self, conversations, *, temperature: float = 0.0, max_tokens: int | None = None,
                      tools=None, top_k: int | None = None, seed: int = 0) -> list[str]:
        from paperworks.lm.generate import generate_with_states

        prompts = [self.render(m, tools=tools) for m in conversations]
        gen = generate_with_states(self.model, self.tokenizer, prompts, max_new_tokens=max_tokens or self.max_new_tokens,
                                   layers=[], do_sample=temperature > 0, temperature=temperature or 1.0,
                                   top_k=top_k, seed=seed)
        return [t.strip() for t in gen.texts]

    def complete(self, messages, **sampling) -> str:
        return self.complete_many([messages], **sampling)[0]


class OpenAIChat:
    """An OpenAI-compatible chat endpoint (``POST {base_url}/chat/completions``).

    Args:
        model: the model name the endpoint serves.
        base_url: e.g. ``"https://api.openai.com/v1"`` or ``"http://127.0.0.1:8000/v1"`` (vLLM).
        api_key_env: the environment variable holding the key (read once, never logged); ``None`` for
            endpoints without authentication.
        timeout: seconds per request.
        max_retries: retries after the first try, on HTTP 429/5xx, time-outs and connection errors.
        backoff: first back-off in seconds, doubled per retry (with jitter; ``Retry-After`` is honoured
            up to ``max_backoff``).
        concurrency: requests in flight at once in :meth:`complete_many`.
        defaults: sampling parameters sent with every request (``temperature``, ``max_tokens``, ...).
    """

    def __init__(self, model: str, *, base_url: str = "https://api.openai.com/v1", api_key_env: str | None = "OPENAI_API_KEY",
                 timeout: float = 60.0, max_retries: int = 4, backoff: float = 1.0, max_backoff: float = 30.0,
                 concurrency: int = 4, **defaults):
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        for k, v, lo in (("timeout", timeout, 0), ("backoff", backoff, -1), ("max_backoff", max_backoff, -1)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > lo:
                raise ValueError(f"{k} must be a number > {max(lo, 0)}, got {v!r}")
        for k, v, lo in (("max_retries", max_retries, 0), ("concurrency", concurrency, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{k} must be an integer >= {lo}, got {v!r}")
        self._key = None
        if api_key_env is not None:
            self._key = os.environ.get(api_key_env)
            if not self._key:
                raise ValueError(f"api_key_env: the environment variable {api_key_env!r} is not set "
                                 "(or pass api_key_env=None for an endpoint without a key)")
        self.model, self.base_url = model, base_url.rstrip("/")
        self.timeout, self.max_retries, self.backoff, self.max_backoff = float(timeout), max_retries, backoff, max_backoff
        self.concurrency, self.defaults = concurrency, defaults

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIChat(model={self.model!r}, base_url={self.base_url!r})"

    def _post(self, body: dict) -> dict:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        last = None
        for attempt in range(self.max_retries + 1):
            wait = min(self.max_backoff, self.backoff * 2 ** attempt) * (0.5 + random.random() / 2)
            req = urllib.request.Request(f"{self.base_url}/chat/completions", data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as r:
                    return json.loads(r.read().decode())
            except urllib.error.HTTPError as e:
                detail = e.read(500).decode(errors="replace")
                if e.code != 429 and e.code < 500:
                    raise ChatError(f"{self.base_url}: HTTP {e.code} {detail}") from None
                last = f"HTTP {e.code} {detail}"
                retry_after = e.headers.get("Retry-After") if e.headers else None
                if retry_after and retry_after.replace(".", "", 1).isdigit():
                    wait = min(self.max_backoff, float(retry_after))
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
                last = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
            except json.JSONDecodeError as e:
                raise ChatError(f"{self.base_url}: the response is not JSON ({e})") from None
            if attempt < self.max_retries:
                time.sleep(wait)
        raise ChatError(f"{self.base_url}: failed after {self.max_retries + 1} tries; last error: {last}")

    def complete_message(self, messages, **sampling) -> dict:
        """The endpoint's whole reply message (``content``, ``tool_calls``, ...)."""
        body = {"model": self.model, "messages": check_messages(messages), **self.defaults, **sampling}
        reply = self._post(body)
        try:
            return reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise ChatError(f"{self.base_url}: unexpected reply {str(reply)[:200]}") from None

    def complete(self, messages, **sampling) -> str:
        """The reply's content; a reply made only of tool calls comes back as their JSON."""
        msg = self.complete_message(messages, **sampling)
        if msg.get("content") is None and msg.get("tool_calls"):
            return json.dumps(msg["tool_calls"])
        return msg.get("content") or ""

    def complete_many(self, conversations, **sampling) -> list[str]:
        """:meth:`complete` on each conversation, ``concurrency`` at a time, answers in order."""
        conversations = list(conversations)
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(lambda m: self.complete(m, **sampling), conversations))
