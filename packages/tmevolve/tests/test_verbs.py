import numpy as np
import torch
from tmevolve import TMEvolve
from tmevolve.verbs import run_predict


class _Cfg(dict):  # the attribute access of a Hydra config
    __getattr__ = dict.__getitem__


def test_predict_verb_scores_bags_with_a_saved_model_and_skips_bad_files(tmp_path, rng):
    bags = tmp_path / "bags"
    bags.mkdir()
    coords = np.stack(np.divmod(np.arange(16), 4), 1) * 256
    for i in range(3):
        np.savez(bags / f"s{i}.npz", features=rng.normal(size=(16, 8)).astype(np.float32), coords=coords)
    (bags / "broken.pt").write_bytes(b"garbage")
    torch.manual_seed(0)
    path = TMEvolve(8, 16, 1, num_regions=3, num_steps=2).save(tmp_path / "model.pt")
    cfg = _Cfg(model=str(path), data=_Cfg(path=str(bags), labels_csv=None))
    out = run_predict(cfg, tmp_path)
    lines = (tmp_path / "predictions.csv").read_text().strip().splitlines()
    assert len(lines) == 4 and lines[1].startswith("s0,")
    assert len(out["extra"]["skipped"]) == 1


def test_run_on_users_bags_through_data_path(tmp_path, rng):
    from tmevolve.run import run

    from paperworks.hydra_glue import compose, execute

    bags = tmp_path / "bags"
    bags.mkdir()
    coords = np.stack(np.divmod(np.arange(16), 4), 1) * 256
    rows = ["slide_id,label"]
    for i in range(10):
        np.savez(bags / f"s{i}.npz", features=rng.normal(size=(16, 8)).astype(np.float32), coords=coords)
        rows.append(f"s{i},{i % 2}")
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    cfg = compose("tmevolve", [f"data.path={bags}", f"data.labels_csv={tmp_path / 'labels.csv'}", "model.hidden=8",
                               "model.num_regions=2", "train.epochs=1", "methods=[meanpool]", "device=cpu"])
    (tmp_path / "out").mkdir()
    doc = execute("tmevolve", run, cfg, tmp_path / "out")
    assert doc["extra"]["n_bags"] == 10 and (tmp_path / "out" / "model.pt").exists()
    assert doc["claims"][0]["id"] == "bags_beats_baselines"
