"""Chat backends behind ``complete(messages, **sampling) -> str`` (thin layers over :mod:`paperworks.lm`).

- :class:`OpenAIChat`: any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, llama.cpp,
  TGI, ...); the key comes from a named environment variable; HTTP 429/5xx and time-outs are retried
  with back-off, then reported as :class:`paperworks.lm.ChatError`.
- :class:`HFChat`: a local ``transformers`` causal LM with a chat-template tokenizer.
- :func:`serve`: a loopback OpenAI-compatible server around any backend (tests, the benchmark, and
  serving a simulated assistant to an external harness).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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


@contextlib.contextmanager
def serve(backend, *, latency: float = 0.0, host: str = "127.0.0.1", fail: int = 0):
    """Serve ``backend`` as an OpenAI-compatible ``/v1/chat/completions`` endpoint on loopback.

    The request's ``seed`` and ``temperature`` reach ``backend.complete``; each reply waits ``latency``
    seconds (an API's response time); the first ``fail`` requests answer HTTP 503 (to exercise retries).
    Yields ``(base_url, server)``; ``server.stats`` counts requests and the most in flight at once.
    """
    lock = threading.Lock()
    stats = {"requests": 0, "inflight": 0, "max_inflight": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status, obj):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                stats["requests"] += 1
                n = stats["requests"]
                stats["inflight"] += 1
                stats["max_inflight"] = max(stats["max_inflight"], stats["inflight"])
            try:
                time.sleep(latency)
                if n <= fail:
                    self._send(503, {"error": "busy"})
                    return
                sampling = {k: body[k] for k in ("seed", "temperature") if k in body}
                text = backend.complete(body["messages"], **sampling)
                self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]})
            except (BrokenPipeError, ConnectionResetError):
                pass
            except Exception as e:  # noqa: BLE001 - report to the client, as a server would
                self._send(500, {"error": str(e)})
            finally:
                with lock:
                    stats["inflight"] -= 1

    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    server.stats = stats
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/v1", server
    finally:
        server.shutdown()
        server.server_close()
