import json
import subprocess

import numpy as np
import pytest
from gfmuc.run import run
from gfmuc.verbs import run_cluster

from paperworks.hydra_glue import compose, execute
from paperworks.testing import console_script, run_cli, smoke_without_matplotlib


@pytest.fixture(scope="session")
def smoke_doc(tmp_path_factory):
    return run_cli("gfmuc", tmp_path_factory.mktemp("smoke") / "run")


def test_smoke_cli_writes_results(smoke_doc):
    ids = {c["id"] for c in smoke_doc["claims"]}
    assert smoke_doc["package"] == "gfmuc" and smoke_doc["experiment"] == "smoke"
    assert {"transfer_beats_target_only_shift_a", "alignment_sharpens_boundaries",
            "beats_sota_on_five_real_datasets"} <= ids
    by_id = {c["id"]: c for c in smoke_doc["claims"]}
    assert by_id["beats_sota_on_five_real_datasets"]["verdict"] == "inconclusive"
    assert {c["id"] for c in smoke_doc["checks"]} == {"scores_one_on_permuted_labels", "csbm_planted_homophily"}


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    tiny = ("experiment=smoke", "model.pretrain_epochs=2", "model.prototype_epochs=1",
            "data.sources=[{n: 60, k: 2, h: 0.9, width: 8, law: gaussian}]",
            "data.targets=[{name: shift_a, n: 60, k: 2, h: 0.8, width: 8, law: gaussian}]")
    doc = smoke_without_matplotlib("gfmuc", run, monkeypatch, tmp_path, overrides=tiny)
    assert doc["experiment"] == "smoke"
    assert not list(tmp_path.glob("*.png"))


def _users_files(tmp_path, pretrained, target):
    model = pretrained.save(tmp_path / "m.pt")
    edges = tmp_path / "g.edges"
    ei = target.edge_index.numpy()
    edges.write_text("".join(f"{u} {v}\n" for u, v in ei.T if u < v) + "bad row\n")
    feats = tmp_path / "x.csv"
    feats.write_text("".join(",".join(f"{v:.5f}" for v in row) + "\n" for row in target.x.numpy()))
    labels = tmp_path / "y.txt"
    labels.write_text("".join(f"{int(v)}\n" for v in target.y))
    return [f"checkpoint={model}", f"data.path={edges}", f"data.features={feats}", f"data.labels={labels}",
            "n_clusters=3", "device=cpu"]


def _check_cluster_run(out):
    doc = json.loads((out / "results.json").read_text())
    assert doc["extra"]["bad_edge_rows"] == 1 and doc["extra"]["nodes"] == 200
    got = np.loadtxt(out / "labels.csv", delimiter=",", skiprows=1, dtype=int)
    assert got.shape == (200, 2) and set(got[:, 1]) <= {0, 1, 2}
    assert doc["extra"]["nmi"] > 0.2


def test_cluster_verb_in_process(tmp_path, pretrained, target):
    args = _users_files(tmp_path, pretrained, target)
    execute("gfmuc", run_cluster, compose("gfmuc", args, config_name="cluster"), tmp_path / "run")
    _check_cluster_run(tmp_path / "run")


def test_cluster_verb_needs_a_path():
    with pytest.raises(ValueError, match="needs data.path"):
        run_cluster(compose("gfmuc", ["n_clusters=3"], config_name="cluster"))


@pytest.mark.slow
def test_cluster_verb_console_script(tmp_path, pretrained, target):
    args = _users_files(tmp_path, pretrained, target)
    subprocess.run([console_script("gfmuc"), "cluster", *args, f"hydra.run.dir={tmp_path / 'run'}"], check=True,
                   timeout=300, capture_output=True)
    _check_cluster_run(tmp_path / "run")
