import json

import numpy as np
import pytest
from gfmuc.run import run

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
    tiny = ("experiment=smoke", "model.pretrain_epochs=2", "model.prototype_epochs=1", "baselines.dmon_epochs=2",
            "data.sources=[{n: 60, k: 2, h: 0.9, width: 8, law: gaussian}]",
            "data.targets=[{name: shift_a, n: 60, k: 2, h: 0.8, width: 8, law: gaussian}]")
    doc = smoke_without_matplotlib("gfmuc", run, monkeypatch, tmp_path, overrides=tiny)
    assert doc["experiment"] == "smoke"
    assert not list(tmp_path.glob("*.png"))


def test_cluster_verb_on_a_users_edge_list(tmp_path, pretrained, target):
    import subprocess

    model = pretrained.save(tmp_path / "m.pt")
    edges = tmp_path / "g.edges"
    ei = target.edge_index.numpy()
    edges.write_text("".join(f"{u} {v}\n" for u, v in ei.T if u < v) + "bad row\n")
    feats = tmp_path / "x.csv"
    feats.write_text("".join(",".join(f"{v:.5f}" for v in row) + "\n" for row in target.x.numpy()))
    labels = tmp_path / "y.txt"
    labels.write_text("".join(f"{int(v)}\n" for v in target.y))
    out = tmp_path / "run"
    subprocess.run([console_script("gfmuc"), "cluster", f"checkpoint={model}", f"data.path={edges}",
                    f"data.features={feats}", f"data.labels={labels}", "n_clusters=3", "device=cpu",
                    f"hydra.run.dir={out}"], check=True, timeout=120, capture_output=True)
    doc = json.loads((out / "results.json").read_text())
    assert doc["extra"]["bad_edge_rows"] == 1 and doc["extra"]["nodes"] == 200
    got = np.loadtxt(out / "labels.csv", delimiter=",", skiprows=1, dtype=int)
    assert got.shape == (200, 2)
    assert doc["extra"]["nmi"] > 0.2
