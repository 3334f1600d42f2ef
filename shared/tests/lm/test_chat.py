"""Chat backends. OpenAIChat only ever talks to a stub server this test starts on 127.0.0.1."""

import json
import time

import pytest

pytest.importorskip("transformers")
from paperworks.lm.chat import ChatError, ChatModel, OpenAIChat, ScriptedChat, check_messages  # noqa: E402
from paperworks.lm.testing import LoopbackChatServer, chat_reply  # noqa: E402

MSGS = [{"role": "user", "content": "weather paris"}]


def ok(text):
    return chat_reply(text)


@pytest.fixture
def stub():
    servers = []

    def start(plan):
        servers.append(LoopbackChatServer(plan))
        return servers[-1]
    yield start
    for s in servers:
        s.close()


def test_loopback_server_plan_and_callable():
    with LoopbackChatServer(lambda body: ok(body["messages"][-1]["content"][::-1])) as server:
        chat = OpenAIChat("stub", base_url=server.url, api_key_env=None)
        assert chat.complete(MSGS) == "sirap rehtaew"
        assert server.bodies == [{"model": "stub", "messages": MSGS}]
    with pytest.raises(ValueError, match="plan"):
        LoopbackChatServer([])
    with pytest.raises(ValueError, match="plan"):
        LoopbackChatServer([(200, ok("x"))])


def test_openai_chat_sends_key_and_sampling_and_retries(stub, monkeypatch):
    monkeypatch.setenv("PW_TEST_KEY", "sekrit")
    s = stub([(500, {"error": "busy"}, 0), (429, {"error": "slow down"}, 0), (200, ok("sunny"), 0)])
    chat = OpenAIChat("tiny", base_url=s.url, api_key_env="PW_TEST_KEY", backoff=0.01, max_retries=3, timeout=5)
    assert isinstance(chat, ChatModel) and "sekrit" not in repr(chat)
    assert chat.complete(MSGS, temperature=0.0, max_tokens=5) == "sunny"
    assert len(s.requests) == 3
    path, headers, body = s.requests[-1]
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer sekrit"
    assert body == {"model": "tiny", "messages": MSGS, "temperature": 0.0, "max_tokens": 5}


def test_openai_chat_fails_fast_on_client_errors_and_gives_up_after_retries(stub):
    s = stub([(400, {"error": "bad model"}, 0)])
    chat = OpenAIChat("tiny", base_url=s.url, api_key_env=None, backoff=0.01, max_retries=3, timeout=5)
    with pytest.raises(ChatError, match="HTTP 400"):
        chat.complete(MSGS)
    assert len(s.requests) == 1
    s2 = stub([(503, {"error": "down"}, 0)])
    chat = OpenAIChat("tiny", base_url=s2.url, api_key_env=None, backoff=0.01, max_retries=2, timeout=5)
    with pytest.raises(ChatError, match="3 tries.*503"):
        chat.complete(MSGS)
    assert len(s2.requests) == 3


def test_openai_chat_times_out(stub):
    s = stub([(200, ok("late"), 1.5)])
    chat = OpenAIChat("tiny", base_url=s.url, api_key_env=None, timeout=0.2, max_retries=1, backoff=0.01)
    t = time.perf_counter()
    with pytest.raises(ChatError, match="2 tries"):
        chat.complete(MSGS)
    assert time.perf_counter() - t < 1.4 and len(s.requests) == 2


def test_openai_chat_concurrency_and_order(stub):
    s = stub([(200, lambda body: ok(body["messages"][0]["content"].upper()), 0.2)])
    chat = OpenAIChat("tiny", base_url=s.url, api_key_env=None, concurrency=3, timeout=5)
    convs = [[{"role": "user", "content": f"q{i}"}] for i in range(6)]
    assert chat.complete_many(convs) == [f"Q{i}" for i in range(6)]
    assert 2 <= s.max_inflight <= 3


def test_openai_chat_tool_calls_and_bad_arguments(stub, monkeypatch):
    calls = [{"id": "1", "type": "function", "function": {"name": "search", "arguments": "{\"query\": \"paris\"}"}}]
    s = stub([(200, {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": calls}}]}, 0)])
    chat = OpenAIChat("tiny", base_url=s.url, api_key_env=None)
    assert json.loads(chat.complete(MSGS, tools=[{"type": "function"}])) == calls
    monkeypatch.delenv("PW_MISSING_KEY", raising=False)
    with pytest.raises(ValueError, match="api_key_env.*PW_MISSING_KEY"):
        OpenAIChat("tiny", base_url=s.url, api_key_env="PW_MISSING_KEY")
    for kw, match in ((dict(base_url="ftp://x"), "base_url"), (dict(timeout=0), "timeout"),
                      (dict(concurrency=0), "concurrency"), (dict(max_retries=-1), "max_retries")):
        with pytest.raises(ValueError, match=match):
            OpenAIChat("tiny", api_key_env=None, **kw)
    with pytest.raises(ValueError, match="role"):
        chat.complete([{"role": "robot", "content": "hi"}])
    assert len(s.requests) == 1


def test_scripted_chat():
    chat = ScriptedChat(["a", "b"])
    assert [chat.complete(MSGS), chat.complete(MSGS, temperature=1)] == ["a", "b"]
    assert chat.calls[1][1] == {"temperature": 1}
    with pytest.raises(ChatError, match="ran out"):
        chat.complete(MSGS)
    echo = ScriptedChat(lambda m: m[-1]["content"])
    assert echo.complete(MSGS) == "weather paris"
    with pytest.raises(ValueError, match="messages"):
        check_messages("hello")
    with pytest.raises(ValueError, match=r"messages\[0\]: content"):
        check_messages([{"role": "user", "content": 3}])


def test_hf_chat_renders_the_template_and_generates(torch, tok, tiny):
    from paperworks.lm import HFChat, generate_with_states, word_tokenizer

    model = tiny("llama")
    chat = HFChat(model, tok, max_new_tokens=4)
    answer = chat.complete(MSGS)
    prompt = chat.render(MSGS)
    assert prompt.endswith("<|assistant|>")
    ref = generate_with_states(model, tok, [prompt], max_new_tokens=4, layers=[])
    assert answer == ref.texts[0].strip() and isinstance(answer, str)
    assert chat.complete_many([MSGS, MSGS]) == [answer, answer]
    with pytest.raises(ValueError, match="tokenizer: has no chat_template"):
        HFChat(model, word_tokenizer(["a"], chat_template=None))
