"""A loopback OpenAI-compatible endpoint with planted answers (for tests, the plumbing check and the bench).

It listens on 127.0.0.1 only. Each prompt gets a planted rating distribution (a deterministic function
of the prompt text), returned as ``top_logprobs`` (with 10 % of the mass on a non-rating token) or as
``n`` sampled replies. ``fail_first`` answers HTTP 500 to the first requests (retries), ``logprobs=False``
omits the logprobs, ``delay`` adds latency (concurrency).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def planted(prompt: str, k: int = 7) -> np.ndarray:
    """The stub's distribution over the ``k`` labels for ``prompt``."""
    seed = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).dirichlet(np.ones(k))


class StubEndpoint:
    """``with StubEndpoint() as s: OpenAIRater("stub", base_url=s.url, api_key_env=None)``."""

    def __init__(self, *, fail_first: int = 0, logprobs: bool = True, delay: float = 0.0, k: int = 7):
        self.fail_first, self.logprobs, self.delay, self.k = fail_first, logprobs, delay, k
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self._rng = np.random.default_rng(0)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub.lock:
                    stub.requests.append({"path": self.path, "body": body,
                                          "auth": self.headers.get("Authorization")})
                    fail = len(stub.requests) <= stub.fail_first
                if stub.delay:
                    time.sleep(stub.delay)
                status, reply = (500, {"error": "busy"}) if fail else (200, stub.reply(body))
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def reply(self, body: dict) -> dict:
        prompt = body["messages"][-1]["content"]
        p = planted(prompt, self.k)
        if body.get("logprobs"):
            alts = [{"token": str(i + 1), "logprob": math.log(0.9 * p[i])} for i in range(self.k)]
            alts.append({"token": "The", "logprob": math.log(0.1)})
            alts = sorted(alts, key=lambda a: -a["logprob"])[: body.get("top_logprobs", 20)]
            msg = {"role": "assistant", "content": alts[0]["token"]}
            choice = {"index": 0, "message": msg}
            if self.logprobs:
                choice["logprobs"] = {"content": [{"token": alts[0]["token"], "logprob": alts[0]["logprob"],
                                                   "top_logprobs": alts}]}
            return {"choices": [choice]}
        n = int(body.get("n", 1))
        with self.lock:
            draws = self._rng.choice(self.k, size=n, p=p)
        return {"choices": [{"index": i, "message": {"role": "assistant", "content": str(d + 1)}}
                            for i, d in enumerate(draws)]}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
