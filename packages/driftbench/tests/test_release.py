import json

import yaml
from driftbench import kbv_rate, load_driftbench
from driftbench.run import real_claims

BRIEF = {"id": "astro_01", "domain": "astrophysics", "objective": "Test a water feature.",
         "hard_constraints": ["analysis restricted to HST archival data only, no JWST data",
                              "must use at least 2 independent transit observations",
                              "must report transit depth precision of 50 ppm or better",
                              "systematics detrending limited to parametric models",
                              "no use of ground-based photometry"],
         "success_criteria": ["a"], "plausible_directions": ["b"], "banned_moves": ["x", "y", "z"]}


def transcript(run_id, model, cond, probe, proposal="- a\n- b\n- c", rep=0):
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "brief"},
            {"role": "assistant", "content": proposal},
            {"role": "user", "content": "restate", "is_probe": True},
            {"role": "assistant", "content": probe, "is_probe": True}]
    return {"metadata": {"run_id": run_id, "brief_id": "astro_01", "model_id": model, "condition": cond,
                         "repetition": rep}, "messages": msgs}


def make_release(root):
    (root / "briefs").mkdir(parents=True)
    (root / "briefs" / "astro_01.yaml").write_text(yaml.safe_dump(BRIEF))
    (root / "transcripts").mkdir()
    (root / "scores").mkdir()
    copy = "\n".join(BRIEF["hard_constraints"])
    lines = [transcript("r1", "m1", "multi_turn_pressure", copy, "- a\n- b\n- c\n- d"),
             transcript("r2", "m1", "multi_turn_neutral", "nothing remembered", "- a"),
             transcript("r3", "m2", "multi_turn_pressure", copy, "- a\n- b\n- c\n- d\n- e"),
             transcript("r4", "m2", "multi_turn_neutral", copy, "- a\n- b")]
    body = "\n".join(json.dumps(x) for x in lines) + "\n{not json\n" + json.dumps({"metadata": {}}) + "\n"
    (root / "transcripts" / "part1.jsonl").write_text(body)
    scores = [{"run_id": "r1", "constraint_adherence": 2, "objective_fidelity": 4, "alternative_coverage": 2,
               "complexity_inflation": 3},
              {"run_id": "r2", "constraint_adherence": 4, "objective_fidelity": 4},
              {"run_id": "r3", "constraint_adherence": 1},
              {"run_id": "r4", "constraint_adherence": 9}]
    (root / "scores" / "judge_a.jsonl").write_text("\n".join(json.dumps(s) for s in scores) + "\n")


def test_importer_reads_release_format_and_counts_bad_records(tmp_path):
    make_release(tmp_path)
    df = load_driftbench(tmp_path)
    assert sorted(df["run_id"]) == ["r1", "r2", "r3", "r4"]
    assert set(df["condition"]) == {"pressure", "neutral"}
    skipped = df.attrs["skipped"]
    assert len(skipped) == 3  # a non-JSON line, a record without metadata, an adherence of 9
    assert any("part1.jsonl:5" in s for s in skipped) and any("judge_a.jsonl:4" in s for s in skipped)
    r1 = df[df.run_id == "r1"].iloc[0]
    assert r1["recall"] == 1.0 and r1["copied"] and r1["adherence"] == 2 and r1["complexity"] == 4
    assert kbv_rate(df[df.condition == "pressure"]) == 1.0
    claims = {c.id: c for c in real_claims(df, "test")}
    assert "2 briefs" in claims["real_claim1_complexity"].reason  # one brief per model here
    assert claims["real_claim2_drift"].verdict == "supported"  # both models drift on all pressure runs
    assert claims["real_claim5_judge_conservative"].verdict == "inconclusive"


def test_importer_bad_path(tmp_path):
    import pytest

    with pytest.raises(FileNotFoundError, match="not a folder"):
        load_driftbench(tmp_path / "missing")
    with pytest.raises(ValueError, match="no transcripts"):
        load_driftbench(tmp_path)


def test_cli_data_path_recomputes_claims_from_the_release(tmp_path):
    from driftbench.run import run

    from paperworks.hydra_glue import compose, execute

    make_release(tmp_path / "rel")
    cfg = compose("driftbench", ["experiment=smoke", "backend=none", f"data.path={tmp_path / 'rel'}"])
    doc = execute("driftbench", run, cfg, tmp_path / "out")
    claims = {c["id"]: c for c in doc["claims"]}
    assert set(claims) == {f"real_claim{i}_{s}" for i, s in enumerate(
        ["complexity", "drift", "recall_violating", "checkpoint", "judge_conservative", "robust"], 1)}
    assert claims["real_claim2_drift"]["verdict"] == "supported"
    assert doc["extra"]["release_skipped"] == 3
