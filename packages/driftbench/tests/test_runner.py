import json

import pytest
from driftbench import SimulatedAssistant, SimulatedJudge, run
from driftbench.prompts import probe_message, schedule

from paperworks.lm import ScriptedChat


class Spy:
    def __init__(self, backend):
        self.backend, self.calls = backend, []

    def complete(self, messages, **sampling):
        self.calls.append([dict(m) for m in messages])
        return self.backend.complete(messages, **sampling)


def assistant():
    return SimulatedAssistant(0.5, 0.2, 0.95, 0.7, seed=3, copy_rate=0.2)


def test_probe_never_reaches_the_next_turn(briefs):
    spy = Spy(assistant())
    df = run(spy, briefs[:2], conditions=["pressure", "checkpoint"], turns=4)
    probe = probe_message()
    probes = [c for c in spy.calls if c[-1]["content"] == probe]
    turns = [c for c in spy.calls if c[-1]["content"] != probe]
    assert len(probes) == len(turns) == len(df) == 2 * (4 + 5)
    assert not any(m["content"] == probe for c in spy.calls for m in c[:-1])
    # each turn's context is the previous turn's context plus its reply and the next user message only
    for a, b in zip(turns, turns[1:]):
        if len(b) > len(a):
            assert b[: len(a)] == a and [m["role"] for m in b[len(a):]] == ["assistant", "user"]


def test_frame_columns_and_judge(briefs):
    df = run(assistant(), briefs[:2], conditions=["single_shot", "pressure"], turns=3, reps=2,
             judge=SimulatedJudge(0.0))
    for c in ["brief_id", "condition", "turn", "rep", "recall", "adherence", "complexity"]:
        assert c in df.columns
    assert len(df) == 2 * 2 * (1 + 3)
    assert (df["adherence"] == df["adherence_rule"]).all()  # a judge that misses nothing
    st = run(assistant(), briefs[:2], conditions=["pressure"], turns=3, judge=SimulatedJudge(0.0),
             judge_prompt="structured")
    assert (st["adherence"] == st["adherence_rule"]).all()
    assert (st["judge_violations"] == st["truth_violations"]).all()
    with pytest.raises(ValueError, match="judge_prompt"):
        run(assistant(), briefs[:1], judge=SimulatedJudge(0.0), judge_prompt="vibes")


def test_resume_after_interrupt_gives_the_same_frame(tmp_path, briefs):
    a = assistant()
    full = run(a, briefs[:3], conditions=["neutral", "pressure"], turns=3, reps=2)

    class Flaky:
        def __init__(self, n):
            self.n = n

        def complete(self, messages, **kw):
            self.n -= 1
            if self.n < 0:
                raise KeyboardInterrupt
            return a.complete(messages, **kw)

    out = tmp_path / "runs.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run(Flaky(40), briefs[:3], conditions=["neutral", "pressure"], turns=3, reps=2, out=out)
    n_done = len(out.read_text().splitlines())
    assert 0 < n_done < 12
    with out.open("a") as f:
        f.write('{"metadata": {"brief_id": ')  # a line cut by the interrupt
    spy = Spy(a)
    resumed = run(spy, briefs[:3], conditions=["neutral", "pressure"], turns=3, reps=2, out=out)
    assert len(spy.calls) == (12 - n_done) * 6
    assert resumed.drop(columns="model").equals(full.drop(columns="model"))
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(recs) == 12 and all(any(m.get("is_probe") for m in r["messages"]) for r in recs)
    with pytest.raises(ValueError, match="turns=\\[3\\], not 4"):
        run(a, briefs[:3], conditions=["neutral", "pressure"], turns=4, reps=2, out=out)


def test_concurrency_gives_identical_results(briefs):
    a = assistant()
    seq = run(a, briefs[:4], conditions=["pressure", "checkpoint"], turns=3)
    con = run(a, briefs[:4], conditions=["pressure", "checkpoint"], turns=3, concurrency=4)
    assert seq.equals(con)


def test_bad_inputs(briefs):
    a = assistant()
    with pytest.raises(ValueError, match="unknown condition"):
        run(a, briefs[:1], conditions=["pressure", "panic"])
    with pytest.raises(TypeError, match="backend must have complete"):
        run(object(), briefs[:1])
    with pytest.raises(ValueError, match="turns must be"):
        run(a, briefs[:1], turns=0)
    with pytest.raises(ValueError, match="duplicate id"):
        run(a, [briefs[0], briefs[0]])
    with pytest.raises(ValueError, match="p_violate must be a probability"):
        SimulatedAssistant(0.1, 1.5, 0.9, 0.5)
    with pytest.raises(ValueError, match="miss_rate"):
        SimulatedJudge("0.1")
    with pytest.raises(ValueError, match="turns must be"):
        schedule("pressure", 0)


def test_scripted_backend_and_unparseable_judge(briefs):
    chat = ScriptedChat(lambda m: "- one\n- two\nWe use JWST.")
    df = run(chat, briefs[:1], conditions=["single_shot"], judge=ScriptedChat(lambda m: "no json here"))
    assert df["complexity"].tolist() == [2] and df["adherence"].isna().all()


def test_checkpoint_schedule_matches_the_paper():
    assert schedule("checkpoint", 6) == ["initial", "pressure", "checkpoint", "pressure", "pressure", "checkpoint",
                                         "pressure", "pressure"]
    assert schedule("single_shot", 6) == ["initial"]
