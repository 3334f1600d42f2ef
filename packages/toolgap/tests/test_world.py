import json

import pytest
from toolgap import ToolWorld, load_questions
from toolgap.world import RELATIONS


def test_annotator_rule_and_answers(world):
    qs = world.questions("arithmetic", 300, seed=3)
    for q in qs:
        a, op, b = q.tool_input.replace(" ", "").partition("+") if "+" in q.tool_input else (
            q.tool_input.replace(" ", "").partition("-") if "-" in q.tool_input else q.tool_input.replace(" ", "").partition("*"))
        val = eval(f"{a}{op}{b}")
        assert q.answer.replace(" ", "") == str(val)
        assert q.annotator == (max(len(a), len(b)) >= 3 or (op == "*" and max(len(a), len(b)) >= 2))
    kb = world.questions("kb", 48, seed=3)
    assert len({q.id for q in kb}) == 48  # distinct facts
    for q in kb:
        rel = q.question.split()[0]
        assert q.answer in RELATIONS[rel][0] and q.annotator == (rel in ("animal", "year"))


def test_training_never_shows_an_unmemorisable_answer(world):
    import numpy as np

    g = np.random.default_rng(0)
    for tools in (False, True):
        for _ in range(300):
            q = world.training_question(g, "kb", tools=tools)
            key = tuple(q.id.split(":")[1:])
            gen, _ = world.target(q, tools=tools)
            if "<call>" not in gen:
                assert key in world.memorisable


def test_world_bad_input():
    with pytest.raises(ValueError, match="ops"):
        ToolWorld(0, ops=("/",))
    with pytest.raises(ValueError, match="domain"):
        ToolWorld(0, n_entities=2).questions("chess", 3)
    with pytest.raises(ValueError, match="digit_weights"):
        ToolWorld(0, max_digits=3, digit_weights=(1.0, -1.0, 1.0))
    assert len(ToolWorld(0, n_entities=2).questions("kb", 9)) == 9  # repeats once all 8 facts are used


def test_load_questions_skips_bad_rows(tmp_path):
    p = tmp_path / "q.jsonl"
    rows = [json.dumps({"question": "2+2?", "answer": 4}), "not json", json.dumps({"question": "x"}),
            "", json.dumps({"question": "capital of France?", "answer": "Paris", "annotator": False, "domain": "kb"}),
            json.dumps({"question": "y", "answer": "z", "annotator": "yes"}), json.dumps([1, 2])]
    p.write_text("\n".join(rows) + "\n")
    qs = load_questions(p)
    assert [q.answer for q in qs] == ["4", "Paris"] and qs[1].domain == "kb"
    assert qs.skipped == 4 and qs.bad_lines == [2, 3, 6, 7]
    with pytest.raises(FileNotFoundError, match="data.path"):
        load_questions(tmp_path / "none.jsonl")
