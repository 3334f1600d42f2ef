"""A loopback OpenAI-compatible ``/chat/completions`` server for tests (stdlib only, 127.0.0.1).

:class:`LoopbackChatServer` answers each POST from a plan of ``(status, reply, delay)`` entries, the
last one repeating; ``reply`` is a JSON body, or a function of the request body returning one. It
records every request and the peak number of requests in flight, so tests of clients (retries,
timeouts, concurrency, the API key, tools) need no network and no ``openai`` package::

    from paperworks.lm import OpenAIChat
    from paperworks.lm.testing import LoopbackChatServer, chat_reply

    with LoopbackChatServer(lambda body: chat_reply("hi")) as server:
        chat = OpenAIChat("stub", base_url=server.url, api_key_env=None)
        assert chat.complete([{"role": "user", "content": "hello"}]) == "hi"
        assert server.bodies[0]["model"] == "stub"
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def chat_reply(content: str | None, *, tool_calls: list | None = None, role: str = "assistant") -> dict:
    """A ``/chat/completions`` response body with one choice holding ``content`` (and ``tool_calls``)."""
    message = {"role": role, "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}]}


class LoopbackChatServer:
    """A threaded HTTP server on ``127.0.0.1`` (a free port) speaking the OpenAI chat protocol.

    Args:
        plan: a list of ``(status, reply, delay_seconds)``, served in order with the last entry
            repeating; or a single callable ``reply(body) -> dict`` (status 200, no delay).
            ``reply`` may be a dict or a callable of the parsed request body.

    Attributes:
        url: the base URL to give a client (``http://127.0.0.1:<port>/v1``).
        requests: ``(path, headers, body)`` per request received, in arrival order.
        max_inflight: the most requests that were being answered at the same time.
    """

    def __init__(self, plan):
        if callable(plan):
            plan = [(200, plan, 0.0)]
        plan = list(plan)
        if not plan or any(len(p) != 3 for p in plan):
            raise ValueError("plan must be a callable or a non-empty list of (status, reply, delay) tuples")
        self.plan, self.requests, self.inflight, self.max_inflight = plan, [], 0, 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"null")
                with server._lock:
                    server.requests.append((self.path, dict(self.headers), body))
                    status, reply, delay = server.plan.pop(0) if len(server.plan) > 1 else server.plan[0]
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                try:
                    time.sleep(delay)
                    data = json.dumps(reply(body) if callable(reply) else reply).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)
                finally:
                    with server._lock:
                        server.inflight -= 1

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def bodies(self) -> list:
        """The JSON bodies of the requests received, in arrival order."""
        return [body for _, _, body in self.requests]

    def close(self) -> None:
        """Stop serving and free the port (idempotent)."""
        if self._thread.is_alive():
            self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> LoopbackChatServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["LoopbackChatServer", "chat_reply"]
