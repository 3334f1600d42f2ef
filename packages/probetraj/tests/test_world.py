import json

import numpy as np
import pytest
from probetraj import ReasoningWorld, load_rollouts, template_dataset
from probetraj.world import MATH, SAFETY


@pytest.mark.parametrize("concept,pools", [("refusal", SAFETY), ("error", MATH)])
def test_templates_are_length_matched_with_one_concept_phrase(concept, pools):
    texts, y = template_dataset(concept, 60, seed=3)
    assert {len(t.split()) for t in texts} == {24}
    assert y.sum() == 30
    for t, lab in zip(texts, y):
        own = sum(p in t for p in pools["stance"][lab])
        other = sum(p in t for p in pools["stance"][1 - lab])
        assert (own, other) == (1, 0)


@pytest.mark.parametrize("domain", ["safety", "math"])
def test_generator_traces_and_labels(domain):
    world = ReasoningWorld(domain, seed=0)
    traces = world.sample(400, seed=1)
    for t in traces:
        assert world.label(t.prompt, f"{t.cot} </think> {t.answer} <|end|>") == t.label
    assert 0.2 < np.mean([t.label for t in traces]) < 0.8
    assert 0.04 < np.mean([t.misleading for t in traces]) < 0.14
    assert world.label(traces[0].prompt, "no end of thought") is None


def test_bad_world_arguments():
    with pytest.raises(ValueError, match="domain"):
        ReasoningWorld("chemistry")
    with pytest.raises(ValueError, match="switch"):
        ReasoningWorld(switch=1.5)
    with pytest.raises(TypeError, match="seed"):
        ReasoningWorld(seed="1")
    with pytest.raises(ValueError, match="concept"):
        template_dataset("honesty")


def test_rollout_file_with_bad_rows_is_read_and_counted(tmp_path):
    good = {"prompt": "p", "completion": "a b </think> sure", "label": 1, "group": 7}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"prompt": "p"}),
        json.dumps({**good, "completion": "no end"}),
        json.dumps({**good, "completion": " </think> sure"}),
        json.dumps({**good, "label": 3}),
        json.dumps({"prompt": "q", "completion": "<think> c </think> x"}),
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    r = load_rollouts(path)
    assert r.cots == ["a b", "c"] and r.labels == [1, None] and r.groups == [7, "q"]
    assert r.skipped == {"bad_json": [2], "missing_field": [3], "no_end_think": [4], "empty_cot": [5], "bad_label": [6]}
    with pytest.raises(FileNotFoundError, match="data.path"):
        load_rollouts(tmp_path / "none.jsonl")
