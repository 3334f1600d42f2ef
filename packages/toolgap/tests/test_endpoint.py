"""Behaviour on an OpenAI-compatible endpoint: a loopback stub server, tools sent as the request's `tools`."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from toolgap import TOOLS, Question, actions, necessity

from paperworks.lm import OpenAIChat


class _Stub(BaseHTTPRequestHandler):
    bodies = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Stub.bodies.append(body)
        q = body["messages"][-1]["content"]
        if body.get("tools") and "*" in q:
            msg = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": json.dumps({"expression": q})}}]}
        else:
            msg = {"role": "assistant", "content": "4" if "2 + 2" in q else "12"}
        out = json.dumps({"choices": [{"message": msg}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def endpoint():
    srv = HTTPServer(("127.0.0.1", 0), _Stub)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


def test_necessity_and_actions_on_an_openai_endpoint(endpoint):
    chat = OpenAIChat("stub", base_url=endpoint, api_key_env=None, max_retries=0)
    qs = [Question("a", "2 + 2", "4"), Question("b", "17 * 23", "391")]
    nec = necessity(chat, None, qs, k=2, temperature=0.7)
    assert nec["necessary"].tolist() == [False, True]
    act = actions(chat, None, qs)
    assert act["called"].tolist() == [False, True] and act["tool"].tolist()[1] == "calc"
    sent = [b for b in _Stub.bodies if "tools" in b]
    assert sent and sent[0]["tools"] == TOOLS and sent[0]["temperature"] == 0.0
