"""Behaviour on an OpenAI-compatible endpoint: a loopback stub server, tools sent as the request's `tools`."""

import json

import pytest
from toolgap import TOOLS, Question, actions, necessity

from paperworks.lm import OpenAIChat
from paperworks.lm.testing import LoopbackChatServer, chat_reply


def _reply(body):
    q = body["messages"][-1]["content"]
    if body.get("tools") and "*" in q:
        calls = [{"id": "c1", "type": "function", "function": {"name": "calc", "arguments": json.dumps({"expression": q})}}]
        return chat_reply(None, tool_calls=calls)
    return chat_reply("4" if "2 + 2" in q else "12")


@pytest.fixture(scope="module")
def endpoint():
    with LoopbackChatServer(_reply) as server:
        yield server


def test_necessity_and_actions_on_an_openai_endpoint(endpoint):
    chat = OpenAIChat("stub", base_url=endpoint.url, api_key_env=None, max_retries=0)
    qs = [Question("a", "2 + 2", "4"), Question("b", "17 * 23", "391")]
    nec = necessity(chat, None, qs, k=2, temperature=0.7)
    assert nec["necessary"].tolist() == [False, True]
    act = actions(chat, None, qs)
    assert act["called"].tolist() == [False, True] and act["tool"].tolist()[1] == "calc"
    sent = [b for b in endpoint.bodies if "tools" in b]
    assert sent and sent[0]["tools"] == TOOLS and sent[0]["temperature"] == 0.0
