import numpy as np
import pytest
from munkey.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("munkey", tmp_path / "run")
    assert doc["package"] == "munkey" and doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"delete_mia_matches_oracle.digits.random", "beats_posthoc_avg_gap.digits.random",
            "test_acc_vs_vit.digits"} <= ids
    checks = {c["id"]: c["verdict"] for c in doc["checks"]}
    for k in ("forget_changes_no_weight", "deleted_never_retrieved", "rows_removed", "untouched_bit_identical",
              "saved_model_has_no_deleted_rows"):
        assert checks[k] == "supported", k
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "mia_loss_hist.png").exists()
    # the saved model is self-contained: the forget verb deletes rows from it without any data
    from munkey import MUNKEY
    from munkey.verbs import run_forget

    from paperworks.hydra_glue import ConfigError, compose, execute

    model = tmp_path / "run" / "munkey.pt"
    n = len(MUNKEY.load(model))
    cfg = compose("munkey", [f"model={model}", "ids=[0,5,9]", f"out={tmp_path / 'after.pt'}"], config_name="forget")
    out = execute("munkey", run_forget, cfg, tmp_path / "forget")
    assert out["checks"][0]["verdict"] == "supported"
    after = MUNKEY.load(tmp_path / "after.pt")
    assert len(after) == n - 3 and after.audit_log[-1].ids == (0, 5, 9)
    cfg = compose("munkey", [f"model={tmp_path / 'after.pt'}", "ids=[5]"], config_name="forget")
    with pytest.raises(ConfigError, match="already deleted: \\[5\\]"):
        execute("munkey", run_forget, cfg, tmp_path / "forget2")


def test_user_npz_without_matplotlib(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 150)
    imgs = (rng.random((150, 8, 8)) * 60 + y[:, None, None] * 60).astype(np.uint8)
    p = tmp_path / "user.npz"
    np.savez(p, train_images=imgs, train_labels=y[:, None])
    doc = smoke_without_matplotlib("munkey", run, monkeypatch, tmp_path / "out",
                                   overrides=("experiment=smoke", f"data.path={p}"))
    assert doc["experiment"] == "smoke"
    assert any(c["id"] == "delete_mia_matches_oracle.user.random" for c in doc["claims"])
