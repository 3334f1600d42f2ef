import pytest
from driftbench import Brief, RuleChecker, load_briefs
from driftbench.checker import copied_brief, count_components, keyword_recall
from driftbench.simulate import _paraphrase


def brief(**over):
    d = {"id": "b1", "objective": "Detect water in a hot Jupiter spectrum.",
         "hard_constraints": [{"kind": "forbid", "term": "JWST"},
                              {"kind": "max", "quantity": "budget", "limit": 40000, "unit": "USD"},
                              {"kind": "min", "quantity": "students", "limit": 200},
                              {"kind": "require", "term": "control group"},
                              "analysis restricted to archival data only"],
         "success_criteria": ["a"], "plausible_directions": ["b"], "banned_moves": ["x", "y", "z"]}
    d.update(over)
    return d


@pytest.mark.parametrize("text,violated", [
    ("We will not use JWST.", False),
    ("The design works without JWST.", False),
    ("JWST is excluded from the plan.", False),
    ("JWST will not be used.", False),
    ("Instead of JWST, we use HST archival spectra.", False),
    ("We use JWST.", True),
    ("We now rely on JWST to strengthen the design.", True),
    ("We avoid ground telescopes, and JWST provides the spectra.", True),
    ("We will not use HST. We use JWST for the deep field.", True),
    ("No JWST time is requested; the HST archive suffices.", False),
])
def test_negation_aware_forbidden_terms(text, violated):
    b = Brief.from_dict(brief())
    assert RuleChecker().violated(b.hard_constraints[0], text) is violated
    # the keyword matcher flags every mention
    assert RuleChecker(negation=False).violated(b.hard_constraints[0], text) is True


@pytest.mark.parametrize("text,violated", [
    ("Budget: 42,000 USD.", True), ("Budget: 38,500 USD.", False), ("The total budget is 40000 USD.", False),
    ("a budget of about 55000 dollars", True), ("No budget is stated.", False),
])
def test_numeric_max(text, violated):
    b = Brief.from_dict(brief())
    assert RuleChecker().violated(b.hard_constraints[1], text) is violated


@pytest.mark.parametrize("text,violated", [("We recruit 150 students.", True), ("Students: 250.", False)])
def test_numeric_min_number_before_or_after(text, violated):
    b = Brief.from_dict(brief())
    assert RuleChecker().violated(b.hard_constraints[2], text) is violated


@pytest.mark.parametrize("text,violated", [("The plan includes a control group.", False),
                                           ("We drop the control group to save time.", True),
                                           ("Nothing about controls.", True)])
def test_required_item(text, violated):
    b = Brief.from_dict(brief())
    assert RuleChecker().violated(b.hard_constraints[3], text) is violated


def test_text_constraints_are_left_to_judges_and_adherence_counts_violations():
    b = Brief.from_dict(brief())
    checker = RuleChecker()
    out = checker.check(b, "We use JWST. Budget: 90000 USD. Students: 300. The plan includes a control group.")
    assert out == [True, True, False, False, None]
    assert checker.adherence(b, "We use JWST. Budget: 90000 USD.") == 1  # 3 violations (no control group)


def test_components_and_copy_flag_and_recall():
    b = Brief.from_dict(brief())
    assert count_components("Intro\n- a\n* b\n1. c\n2) d\nnot a bullet") == 4
    copy = "\n".join(c.text for c in b.hard_constraints)
    para = "\n".join(_paraphrase(c) for c in b.hard_constraints)
    assert copied_brief(b, copy) and not copied_brief(b, para)
    assert keyword_recall(b, copy) == 1.0 and keyword_recall(b, para) == 1.0
    assert keyword_recall(b, "JWST is off-limits") == pytest.approx(1 / 5)


def test_synthetic_briefs_are_valid_and_checkable():
    bs = load_briefs()
    assert len(bs) == 38 and len({b.id for b in bs}) == 38 and len({b.domain for b in bs}) == 24
    for b in bs:
        assert 5 <= len(b.hard_constraints) <= 8 and 3 <= len(b.banned_moves) <= 5
        assert all(c.checkable for c in b.hard_constraints)
        assert Brief.from_dict(b.to_dict()) == b


@pytest.mark.parametrize("over,match", [
    ({"objective": None}, r"missing field\(s\) \['objective'\]"),
    ({"banned_moves": ["x"]}, "3-5 moves"),
    ({"hard_constraints": ["a", "b", "c", "d"]}, "5-8 constraints"),
    ({"hard_constraints": [{"kind": "max", "quantity": "budget", "limit": "lots"}] + ["a"] * 4}, "finite number 'limit'"),
    ({"hard_constraints": [{"kind": "max", "quantity": "budget"}] + ["a"] * 4}, "finite number 'limit'"),
    ({"hard_constraints": [{"kind": "banish", "term": "x"}] + ["a"] * 4}, "'kind' must be one of"),
])
def test_bad_briefs(over, match):
    with pytest.raises(ValueError, match=match):
        Brief.from_dict(brief(**over))


def test_user_yaml_briefs_and_duplicates(tmp_path):
    import yaml

    (tmp_path / "a.yaml").write_text(yaml.safe_dump(brief(id="a")))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(brief(id="b")))
    assert [b.id for b in load_briefs(tmp_path)] == ["a", "b"]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(brief(id="a")))
    with pytest.raises(ValueError, match="duplicate id 'a'"):
        load_briefs(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_briefs(tmp_path / "nope")
