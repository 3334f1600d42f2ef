import json
import subprocess

import numpy as np
import pytest
from groupfdr import simulate_var_groups
from groupfdr.run import run

from paperworks.testing import console_script, run_cli, smoke_without_matplotlib

CLAIMS = {"fdr_controlled_rho0", "fdr_controlled_rho0.8", "power_beats_knockoffs_high_rho", "power_beats_all_high_rho",
          "coordinate_gm_inflates_group_fdr", "null_statistics_symmetric", "whitened_power_beats_euclidean_high_rho",
          "fwer_global_null", "neural_fdr_controlled", "neural_power_beats_permutation_importance",
          "neural_null_symmetric"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("groupfdr", tmp_path / "run")
    assert doc["package"] == "groupfdr" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert all(c["verdict"] == "supported" for c in doc["checks"]), [c["id"] for c in doc["checks"]]
    assert (tmp_path / "run" / "metrics.csv").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("groupfdr", run, monkeypatch, tmp_path,
                                   overrides=["seeds=6", "knockoff_reps=1", "neural.reps=0", "global_null.reps=5"])
    assert doc["experiment"] == "smoke"


def test_select_verb_on_a_users_csv(tmp_path):
    X, y, groups, active = simulate_var_groups(300, 6, 2, 2, 0.3, random_state=0, signal=0.6)
    cols = [f"s{g}_lag{k + 1}" for g in range(6) for k in range(2)]
    rows = [",".join(cols + ["target"])] + [",".join(f"{v:.6f}" for v in [*x, t]) for x, t in zip(X, y)]
    rows.insert(5, ",".join(["oops"] * 13))
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "sel"
    subprocess.run([console_script("groupfdr"), "select", f"data.path={tmp_path / 'd.csv'}", "data.target=target",
                    "data.groups=prefix", "q=0.3", f"hydra.run.dir={out}"], check=True, capture_output=True, timeout=120)
    doc = json.loads((out / "results.json").read_text())
    assert doc["extra"]["skipped_rows"] == [6] and doc["extra"]["p"] == 12
    assert (out / "selection.csv").read_text().count("\n") == 7
    from groupfdr import BlockGaussianMirror

    sel = BlockGaussianMirror.load(out / "selector.json")
    assert sel.selected_groups_ == doc["extra"]["selected_groups"]
    assert sel.transform(np.asarray(X)).shape[1] == 2 * len(sel.selected_groups_)


def test_select_without_data_path_fails_clearly():
    from groupfdr.select import run_select

    from paperworks.hydra_glue import compose

    with pytest.raises(ValueError, match="data.path"):
        run_select(compose("groupfdr", config_name="select"))
