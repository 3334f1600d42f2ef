import pytest
from driftbench import HFChat, OpenAIChat, SimulatedAssistant, run, serve

from paperworks.lm import ChatError, load_local, save_local


def ok(text):
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


def test_openai_chat_against_loopback_stub_retries_and_matches_direct(briefs, monkeypatch):
    monkeypatch.setenv("DRIFTBENCH_TEST_KEY", "sekrit")
    a = SimulatedAssistant(0.5, 0.2, 0.95, 0.7, seed=1)
    direct = run(a, briefs[:2], conditions=["pressure"], turns=3)
    with serve(a, fail=2) as (url, server):  # the first two requests answer 503: retried
        chat = OpenAIChat("sim", base_url=url, api_key_env="DRIFTBENCH_TEST_KEY", backoff=0.01, timeout=10)
        assert "sekrit" not in repr(chat)
        via = run(chat, briefs[:2], conditions=["pressure"], turns=3, concurrency=2)
        assert server.stats["requests"] == 2 + 2 * 3 * 2
    assert via.drop(columns="model").equals(direct.drop(columns="model"))


def test_missing_api_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("DRIFTBENCH_NO_SUCH_KEY", raising=False)
    with pytest.raises(ValueError, match="DRIFTBENCH_NO_SUCH_KEY"):
        OpenAIChat("gpt", api_key_env="DRIFTBENCH_NO_SUCH_KEY")


def test_http_errors_and_timeouts_are_retried_then_reported(plan_server, briefs):
    s = plan_server([(400, {"error": "bad request"}, 0)])
    chat = OpenAIChat("m", base_url=s.url, api_key_env=None, backoff=0.01)
    with pytest.raises(ChatError, match=r"brief '.*', condition 'pressure', rep 0, turn 1: .*HTTP 400"):
        run(chat, briefs[:1], conditions=["pressure"], turns=2)
    assert len(s.requests) == 1  # a 400 is not retried
    slow = plan_server([(200, ok("late"), 1.0)])
    chat = OpenAIChat("m", base_url=slow.url, api_key_env=None, timeout=0.2, max_retries=1, backoff=0.01)
    with pytest.raises(ChatError, match="failed after 2 tries"):
        run(chat, briefs[:1], conditions=["single_shot"])


@pytest.mark.slow  # transformers' import alone is ~8 s on a loaded machine; the paper run checks the same plumbing
def test_hfchat_tiny_gpt2_runs_offline_and_reloads(tiny_hf, briefs, tmp_path):
    model, tok = tiny_hf
    hf = HFChat(model, tok, max_new_tokens=6)
    df = run(hf, briefs[:1], conditions=["pressure"], turns=2)
    assert len(df) == 2 and df["recall"].between(0, 1).all()
    m2, t2 = load_local(save_local(tmp_path / "m", model, tok))
    conv = [{"role": "user", "content": "Here is a research brief."}]
    assert HFChat(m2, t2, max_new_tokens=6).complete(conv) == hf.complete(conv)
    with pytest.raises(ValueError, match="context"):
        HFChat(model, tok, max_new_tokens=5000).complete(conv)
