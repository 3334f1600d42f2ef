import pytest
from mathinterest import templated_problems, validate_problem
from mathinterest.generate import safe_expr

from paperworks.lm import ScriptedChat


def test_injected_wrong_answers_rejected():
    probs = templated_problems(80, seed=1, wrong_fraction=0.25)
    assert sum(p["planted_wrong"] for p in probs) == 20
    for p in probs:
        ok, reason = validate_problem(p)
        assert ok == (not p["planted_wrong"]), (p, reason)


def test_unchecked_problems_go_to_another_model():
    p = {"text": "What is 6 times 7?", "answer": "42", "generator": "gen-model"}
    assert validate_problem(p) == (False, "not checkable by sympy and no checker model given")
    assert validate_problem(p, checker=ScriptedChat(["The answer is 42"]), checker_name="other")[0]
    assert not validate_problem(p, checker=ScriptedChat(["41"]), checker_name="other")[0]
    with pytest.raises(ValueError, match="never let the generating model"):
        validate_problem(p, checker=ScriptedChat(["42"]), checker_name="gen-model")


def test_safe_expr_refuses_code():
    assert safe_expr("2**10 - 24") == 1000
    for bad in ("__import__('os')", "x.y", "[1]"):
        with pytest.raises(ValueError):
            safe_expr(bad)
    with pytest.raises(TypeError):
        validate_problem("not a dict")
