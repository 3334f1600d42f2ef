import pytest
from grace.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    d = tmp_path_factory.mktemp("smoke") / "run"
    return run_cli("grace", d), d


def test_smoke_cli_writes_results(smoke):
    doc, d = smoke
    assert doc["package"] == "grace" and doc["experiment"] == "smoke"
    assert {"geometry_term_preserves_geometry", "concept_auroc_beats_instance_heldout",
            "keeps_most_zero_shot", "human_perception"} <= {c["id"] for c in doc["claims"]}
    checks = {c["id"]: c["verdict"] for c in doc["checks"]}
    # 500 pairs, 50 steps: the learned tiny CLIP already beats chance on held-out combinations
    assert checks["tinyclip_beats_chance_heldout"] == "supported"
    assert checks["coefficients_nonnegative"] == "supported" and checks["l0_matched"] == "supported"
    assert (d / "metrics.csv").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("grace", run, monkeypatch, tmp_path)
    assert doc["experiment"] == "smoke"
