import csv

import pytest
from loopedlm.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke") / "run"
    return out, run_cli("loopedlm", out)


def test_smoke_cli_writes_results(smoke):
    out, doc = smoke
    assert doc["package"] == "loopedlm" and doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"A_pre_injection_converges", "A_pre_no_injection_degenerate"} <= ids
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    assert (out / "metrics.csv").exists()


def test_smoke_a_properties(smoke):
    """Smoke of A (2 configurations, d=32, 32 iterations): the tail distance falls; pre + injection has
    distinct fixed points (min cosine < 0.99)."""
    _, doc = smoke
    curves = doc["extra"]["a_curves"]
    assert len(curves) == 2
    for key, curve in curves.items():
        assert curve[-1] < curve[0], key
    with open(smoke[0] / "metrics.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["norm"] == "pre"]
    pre_inj = [r for r in rows if str(r["injection"]) in ("True", "true")]
    assert pre_inj and float(pre_inj[0]["min_cosine"]) < 0.99


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("loopedlm", run, monkeypatch, tmp_path)
    assert doc["experiment"] == "smoke"
