import numpy as np
import pytest
from mathinterest import HFRater, JudgePanel, OpenAIRater
from mathinterest.data import PROB_COLUMNS
from mathinterest.raters import render
from mathinterest.stub import StubEndpoint, planted

from paperworks.lm import ChatError

P = list(PROB_COLUMNS)


def test_logprob_rows_sum_to_one_and_forms(tiny, study):
    model, tok = tiny
    r = HFRater(model, tok)
    probs = study.problems().head(6)
    out = r.rate(probs)
    assert np.allclose(out[P].sum(axis=1), 1, atol=1e-6) and (out["mass"] > 0).all() and (out["mass"] <= 1).all()
    assert np.allclose(out["expected"], out[P].to_numpy() @ np.arange(1, 8))
    again = r.rate([{"problem_id": i, "text": t} for i, t in zip(probs.problem_id, probs.text)])
    assert np.allclose(again[P], out[P])
    # batching does not change the numbers (left padding, position ids)
    one = HFRater(model, tok, batch_size=1).rate(probs)
    assert np.allclose(one[P], out[P], atol=1e-5)


def test_constrained_samples_converge_to_logprob(tiny):
    model, tok = tiny
    texts = ["Compute 3 * 4 - 5."]
    lp = HFRater(model, tok).rate(texts)[P].to_numpy()
    sm = HFRater(model, tok, mode="sample", n_samples=1000, seed=1).rate(texts)
    assert sm["n_valid"].iloc[0] == 1000
    assert np.abs(sm[P].to_numpy() - lp).max() < 0.06


def test_persona_panel_and_rationales(tiny):
    model, tok = tiny
    a, b = HFRater(model, tok), HFRater(model, tok, persona="an IMO competitor")
    assert "IMO competitor" in render("rate", "v1", persona="an IMO competitor", problem="p")
    texts = ["Compute 3 * 4 - 5.", "What is 2 ^ 10 ?"]
    pooled = JudgePanel([a, b]).rate(texts)
    assert np.allclose(pooled[P], (a.rate(texts)[P] + b.rate(texts)[P]) / 2)
    rat = a.choose_rationales(texts, ["elegant solution", "routine", "challenging"])
    assert np.allclose(rat[["elegant solution", "routine", "challenging"]].sum(axis=1), 1, atol=1e-6)


def test_hf_bad_inputs(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="tokens for this tokenizer"):
        HFRater(model, tok, labels=["1 2", "2", "3", "4", "5", "6", "7"])
    with pytest.raises(ValueError, match="mode"):
        HFRater(model, tok, mode="greedy")
    with pytest.raises(ValueError, match="temperature"):
        HFRater(model, tok, mode="sample", temperature=0.0)
    with pytest.raises(TypeError):
        HFRater(model, tok, n_samples=2.5)


def test_openai_stub_logprob_sample_retries():
    texts = ["an elegant problem", "a routine one"]
    with StubEndpoint(fail_first=2) as s:
        r = OpenAIRater("stub", base_url=s.url, api_key_env=None, backoff=0.01, concurrency=2)
        out = r.rate(texts)
        want = np.stack([planted(render("rate", "v1", persona=None, problem=t)) for t in texts])
        assert np.allclose(out[P].to_numpy(), want) and np.allclose(out["mass"], 0.9)
        assert len(s.requests) == 4 and s.requests[-1]["body"]["top_logprobs"] == 20
        r.rate(texts)  # cached: no new request
        assert len(s.requests) == 4
        sm = OpenAIRater("stub", base_url=s.url, api_key_env=None, mode="sample", n_samples=400).rate(texts[:1])
        assert sm["n_valid"].iloc[0] == 400 and np.abs(sm[P].to_numpy() - want[:1]).max() < 0.1


def test_openai_bad_inputs(monkeypatch):
    monkeypatch.delenv("MI_TEST_KEY", raising=False)
    with pytest.raises(ValueError, match="MI_TEST_KEY"):
        OpenAIRater("m", api_key_env="MI_TEST_KEY")
    with StubEndpoint(logprobs=False) as s:
        with pytest.raises(ChatError, match="no logprobs"):
            OpenAIRater("stub", base_url=s.url, api_key_env=None).rate(["x"])
    monkeypatch.setenv("MI_TEST_KEY", "sekrit")
    with StubEndpoint() as s:
        OpenAIRater("stub", base_url=s.url, api_key_env="MI_TEST_KEY").rate(["x"])
        assert s.requests[0]["auth"] == "Bearer sekrit"


def test_openai_disk_cache_survives_a_new_rater(tmp_path):
    path = tmp_path / "cache.jsonl"
    with StubEndpoint() as s:
        first = OpenAIRater("stub", base_url=s.url, api_key_env=None, cache=path).rate(["p one", "p two"])
        n = len(s.requests)
        second = OpenAIRater("stub", base_url=s.url, api_key_env=None, cache=path).rate(["p one", "p two"])
        assert len(s.requests) == n == 2 and np.allclose(first[P], second[P])
        OpenAIRater("stub", base_url=s.url, api_key_env=None, cache=path, persona="a judge").rate(["p one"])
        assert len(s.requests) == 3  # another persona is another prompt and key
