import json

from probetraj import HFActivationSource, PooledProbe, ReasoningWorld, template_dataset
from probetraj.run import run
from probetraj.verbs import run_score

from paperworks.hydra_glue import compose, execute
from paperworks.lm.tiny import save_local
from paperworks.testing import run_cli, smoke_without_matplotlib


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("probetraj", tmp_path / "run")
    assert doc["package"] == "probetraj" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == {"planted_trajectory_beats_t0", "planted_trajectory_auroc"}
    assert {c["id"] for c in doc["checks"]} == {"planted_t0_near_chance"}
    assert (tmp_path / "run" / "metrics.csv").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("probetraj", run, monkeypatch, tmp_path, overrides=("experiment=smoke", "seeds=1"))
    assert doc["experiment"] == "smoke"


def test_score_verb_on_a_users_rollouts(tmp_path, tok, gpt2):
    save_local(tmp_path / "model", gpt2, tok)
    src = HFActivationSource(gpt2, tok, layer=1)
    texts, y = template_dataset("refusal", 40, seed=0)
    PooledProbe(pooling="max", max_iter=20).fit(src.hidden_states(texts), y).save(tmp_path / "probe.pt")
    world = ReasoningWorld("safety", seed=0)
    rows = [
        {"prompt": t.prompt, "completion": f"{t.cot} </think> {t.answer}", "label": t.label, "group": t.group}
        for t in world.sample(6, seed=0)
    ]
    lines = [json.dumps(r) for r in rows] + ["{broken", json.dumps({"prompt": "x", "completion": "no end"})]
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    overrides = [
        f"model={tmp_path / 'model'}",
        f"probe_file={tmp_path / 'probe.pt'}",
        f"data.path={tmp_path / 'r.jsonl'}",
        "layer=1",
    ]
    doc = execute("probetraj", run_score, compose("probetraj", overrides, config_name="score"), tmp_path / "out")
    assert doc["extra"]["n_rollouts"] == 6
    assert doc["extra"]["skipped"] == {"bad_json": [7], "no_end_think": [8]}
    assert doc["checks"][0]["verdict"] == "supported"
