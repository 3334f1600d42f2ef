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
