import json

import numpy as np
import pytest
from lvqmark.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("smoke") / "run"
    return run_cli("lvqmark", d), d


def test_smoke_cli_writes_results(smoke_run):
    doc, d = smoke_run
    assert doc["package"] == "lvqmark" and doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"global_null_drift_bidirectional", "local_null_stable", "local_worst_attacked_fpr_le_2pct"} <= ids
    assert all(c["verdict"] == "supported" for c in doc["checks"]), [c["id"] for c in doc["checks"]
                                                                      if c["verdict"] != "supported"]
    assert (d / "metrics.csv").exists() and (d / "lvqmark_model.pt").exists()


def test_detect_verb_on_a_users_csv(smoke_run, tmp_path):
    """``lvqmark detect model=FILE data.path=CSV`` (run in-process through the same glue as the console script)."""
    from lvqmark.verbs import run_detect

    from paperworks.hydra_glue import compose, execute

    _, d = smoke_run
    rng = np.random.default_rng(0)
    rows = ["t," + ",".join(f"c{i}" for i in range(5))]
    rows += [f"{t}," + ",".join(f"{v:.4f}" for v in rng.normal(size=5)) for t in range(40)]
    rows[3] = "2,nan,1,1,1,1"
    (tmp_path / "u.csv").write_text("\n".join(rows) + "\n")
    cfg = compose("lvqmark", [f"model={d / 'lvqmark_model.pt'}", f"data.path={tmp_path / 'u.csv'}",
                              "data.columns=[c0,c1,c2,c3,c4]"], config_name="detect")
    execute("lvqmark", run_detect, cfg, tmp_path / "det")
    doc = json.loads((tmp_path / "det" / "results.json").read_text())
    assert doc["extra"]["n_windows"] == 39 - 32 + 1 and doc["extra"]["n_skipped_rows"] == 1
    assert doc["extra"]["skipped_lines"] == [4]
    bad = compose("lvqmark", [f"model={d / 'lvqmark_model.pt'}", f"data.path={tmp_path / 'u.csv'}",
                              "data.columns=[c0,c1,c2]"], config_name="detect")
    with pytest.raises(ValueError, match="channels"):
        execute("lvqmark", run_detect, bad, tmp_path / "bad")


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("lvqmark", run, monkeypatch, tmp_path,
                                   ("experiment=smoke", "seeds=1", "tokenizers=[local]"))
    assert doc["experiment"] == "smoke"
