from hebbrnn.run import run

from paperworks.hydra_glue import compose
from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"generalise_novel", "generalise_longer", "generalise_pattern", "orthogonal_scaffold", "abstract_local_rank",
          "hebbian_binding", "transfer_steps", "transfer_accuracy", "predictive_local_rank"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("hebbrnn", tmp_path / "run")
    assert doc["package"] == "hebbrnn" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert {c["id"] for c in doc["checks"]} == {"factored_equals_materialised", "parameters_matched"}
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    assert (tmp_path / "run" / "metrics.csv").exists()
    for png in ("accuracy.png", "pca_delay_states.png", "angles.png"):
        assert (tmp_path / "run" / png).exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("hebbrnn", run, monkeypatch, tmp_path,
                                   overrides=("experiment=smoke", "seeds=2", "transfer.enabled=false",
                                              "predictive.enabled=false", "models=[hebb,hebb_off,gru]"))
    assert doc["experiment"] == "smoke"
    assert "transfer_steps" not in {c["id"] for c in doc["claims"]}


def test_bench_runs_in_miniature():
    cfg = compose("hebbrnn", ["experiment=bench", "bench.hidden=[32]", "bench.claim_hidden=32", "bench.repeats=3",
                              "bench.memory=false", "bench.batch_size=4"])
    out = run(cfg)
    assert [c.id for c in out["claims"]] == ["factored_speedup", "factored_vs_gru"]
    row = out["metrics"][0]
    assert row["factored_wall_s"] > 0 and row["materialised_wall_s"] > 0 and row["gru_params"] > 0
