import pytest
from modellens.rank_cli import run_rank
from modellens.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("modellens", tmp_path / "run")
    assert doc["package"] == "modellens" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == {"new_pair_beats_metadata", "new_pair_ndcg_at_5", "new_pair_hit_at_5",
                                                 "new_pair_recall_at_5"}
    assert all(c["verdict"] == "supported" for c in doc["checks"]), doc["checks"]
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "tau_w.png").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("modellens", run, monkeypatch, tmp_path,
                                   overrides=("experiment=smoke", "seeds=1", "lens.epochs=5"))
    assert doc["experiment"] == "smoke"


def test_user_records_and_rank_verb(tmp_path, planted):
    import json

    recs, mm, dm = planted
    recs.to_csv(tmp_path / "r.csv", index=False)
    mm.to_csv(tmp_path / "mm.csv", index=False)
    dm.to_csv(tmp_path / "dm.csv", index=False)
    from paperworks.hydra_glue import compose, execute

    # the CLI's config with data.path= (in-process: the console script itself is run by the smoke test)
    cfg = compose("modellens", ["experiment=smoke", "seeds=1", "lens.epochs=20", f"data.path={tmp_path / 'r.csv'}",
                                f"data.model_meta={tmp_path / 'mm.csv'}", f"data.dataset_meta={tmp_path / 'dm.csv'}",
                                "frac=0.25", f"save_model={tmp_path / 'lens.pt'}"])
    doc = execute("modellens", run, cfg, tmp_path / "fit")
    assert doc["claims"][0]["id"] == "new_pair_beats_metadata"
    assert doc["extra"]["saved_model"].endswith("lens.pt")
    # the rank verb's config and run, in-process (the console script's dispatch is two lines in cli.main)
    out = tmp_path / "rank"
    doc = execute("modellens", run_rank, compose("modellens", [f"model={tmp_path / 'lens.pt'}", "dataset=set3", "k=3"],
                                                  config_name="rank"), out)
    pool = json.loads((out / "pool.json").read_text())["pool"]
    assert len(pool) == 3 and set(pool) <= set(mm["model"])
    assert doc["checks"][0]["verdict"] == "supported"


def test_rank_verb_needs_model_and_dataset():
    from paperworks.hydra_glue import compose

    with pytest.raises(ValueError, match="needs model"):
        run_rank(compose("modellens", ["dataset=iris"], config_name="rank"))
