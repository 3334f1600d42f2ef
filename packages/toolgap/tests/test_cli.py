import json

import pytest
from toolgap.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    d = tmp_path_factory.mktemp("smoke") / "run"
    return run_cli("toolgap", d), d


def test_smoke_cli_runs_labels_and_probes_end_to_end(smoke):
    """200 steps of 1-2 digit addition; necessity, actions, probes and transitions run; AUROC finite."""
    doc, d = smoke
    assert doc["package"] == "toolgap" and doc["experiment"] == "smoke"
    rows = doc["extra"]["per_domain"]
    assert rows and all(0 <= r["mismatch"] <= 1 for r in rows)
    probed = [r for r in rows if "auroc_necessity_last" in r]
    assert probed, "the smoke model's labels were one-class: nothing was probed"
    for r in probed:
        assert 0 <= r["auroc_necessity_last"] <= 1 and 0 <= r["auroc_action_last"] <= 1
    ids = {c["id"] for c in doc["checks"]}
    assert {"transitions_sum_to_mismatch", "no_question_in_two_folds", "batched_states_equal_alone"} <= ids
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    assert (d / "metrics.csv").exists()


def test_saved_model_reloads_self_contained(tmp_path):
    from toolgap import ToolWorld, load_tool_model, necessity, save_tool_model, train_tool_model

    world = ToolWorld(0, n_entities=4, max_digits=1)
    model, tok = train_tool_model(world, "weak", steps=3, batch=4)
    save_tool_model(tmp_path / "m", model, tok)
    m2, t2 = load_tool_model(tmp_path / "m")
    qs = world.questions("arithmetic", 4)
    a = necessity(model, tok, qs, k=1, temperature=0.0)
    b = necessity(m2, t2, qs, k=1, temperature=0.0)
    assert a["samples"].tolist() == b["samples"].tolist() and t2.chat_template == tok.chat_template
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_tool_model(tmp_path / "none")


def test_smoke_without_matplotlib_and_user_questions(tmp_path, monkeypatch):
    p = tmp_path / "q.jsonl"
    rows = [{"question": f"{i} + {j}", "answer": str(i + j), "domain": "arithmetic", "annotator": i + j > 9}
            for i in range(1, 9) for j in range(1, 4)]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n")
    doc = smoke_without_matplotlib("toolgap", run, monkeypatch, tmp_path,
                                   overrides=("experiment=smoke", "train.weak_steps=5", f"data.path={p}",
                                              "sweep.enabled=false"))
    assert doc["experiment"] == "smoke" and doc["extra"]["per_domain"][0]["n"] == len(rows)
