"""A loopback OpenAI-compatible ``/v1/chat/completions`` server around any chat backend (standard library).

Used by the tests, the plumbing check and the benchmark; it also serves a simulated assistant to an
external harness that speaks the OpenAI protocol.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
