import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture(scope="session")
def briefs():
    from driftbench import load_briefs

    return load_briefs()


@pytest.fixture(scope="session")
def tiny_hf():
    """A random tiny GPT-2 and a word tokenizer over the prompts' words (built once per session)."""
    from driftbench import load_briefs
    from driftbench.prompts import probe_message, system_message, user_message

    from paperworks.lm import tiny_gpt2, word_tokenizer

    words = set((system_message() + " " + probe_message()).split())
    for b in load_briefs()[:2]:
        for kind in ("initial", "pressure", "checkpoint"):
            words.update(user_message(kind, b, 2).split())
    tok = word_tokenizer(sorted(words), model_max_length=1024)
    return tiny_gpt2(len(tok), n_ctx=1024, width=32, layers=2, heads=2, seed=0), tok


class Plan:
    """A loopback server answering from a plan of (status, body, delay); the last entry repeats."""

    def __init__(self, plan):
        self.plan, self.requests = list(plan), []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append(body)
                status, reply, delay = stub.plan.pop(0) if len(stub.plan) > 1 else stub.plan[0]
                import time

                time.sleep(delay)
                try:
                    data = json.dumps(reply).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def plan_server():
    servers = []

    def start(plan):
        servers.append(Plan(plan))
        return servers[-1]

    yield start
    for s in servers:
        s.close()
