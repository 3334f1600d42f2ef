import numpy as np
import pytest
from getolp import fixed_support_barycenter
from getolp.run import _speed_memory_claims, run

from paperworks.bench import BenchResult
from paperworks.hydra_glue import compose
from paperworks.testing import smoke_without_matplotlib


def test_user_inputs_from_npy_files(tmp_path, rng):
    paths = []
    for i in range(3):
        a = rng.random((4, 5))
        np.save(tmp_path / f"h{i}.npy", a)
        paths.append(str(tmp_path / f"h{i}.npy"))
    cfg = compose("getolp", ["experiment=smoke", f"inputs.paths=[{','.join(paths)}]", "inputs.grid=[4,5]"])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = run(cfg, out_dir=out_dir)
    assert [c.id for c in out["claims"]] == ["exact_plans"] and out["claims"][0].verdict == "supported"
    nu = np.load(out_dir / "barycenter.npy")
    h = np.stack([np.load(p) for p in paths])
    np.testing.assert_allclose(nu, fixed_support_barycenter(h / h.sum((1, 2), keepdims=True), (4, 5)), atol=1e-9)
    out["plots"](out_dir)
    assert (out_dir / "barycenter.png").exists()


def _rec(geto_s, full_s, geto_mb, full_mb, full_status="ok"):
    from getolp.measure import Measured

    bench = BenchResult(wall={"geto": list(geto_s), "full_lp": list(full_s)},
                        cpu={"geto": list(geto_s), "full_lp": list(full_s)}, threads=1, repeats=len(geto_s), warmup=0)
    g = Measured("ok", float(np.median(geto_s)), peak_mb_samples=list(geto_mb))
    f = Measured(full_status, float(np.median(full_s)), peak_mb_samples=list(full_mb))
    return {"geto": g, "full": f, "bench": bench}


def test_speed_and_memory_claims_need_repeated_measurements():
    fast = _rec([1.0, 1.1, 0.9], [20.0, 21.0, 19.0], [10.0, 10.5, 9.8], [300.0, 305.0, 298.0])
    assert [c.verdict for c in _speed_memory_claims(fast, 24)] == ["supported", "supported"]
    slow = _rec([1.0, 1.1, 0.9], [5.0, 5.5, 4.8], [10.0, 10.5, 9.8], [40.0, 41.0, 39.0])
    assert [c.verdict for c in _speed_memory_claims(slow, 24)] == ["not supported", "not supported"]
    # a full LP that did not finish gives no ratio: inconclusive, never a guess
    killed = _rec([1.0, 1.1, 0.9], [20.0, 21.0, 19.0], [10.0, 10.5, 9.8], [], full_status="timeout")
    assert [c.verdict for c in _speed_memory_claims(killed, 24)] == ["inconclusive", "inconclusive"]
    assert [c.verdict for c in _speed_memory_claims(None, 24)] == ["inconclusive", "inconclusive"]


def test_smoke_in_process_without_matplotlib(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("getolp", run, monkeypatch, tmp_path)
    assert doc["experiment"] == "smoke"


@pytest.mark.parametrize("exp", ["smoke", "quick", "paper", "bench"])
def test_experiments_say_what_they_measure(exp):
    cfg = compose("getolp", [f"experiment={exp}"])
    assert cfg.experiment.description and cfg.experiment.expected_time
    assert int(cfg.scaling.claim_grid) in [int(n) for n in cfg.scaling.grids]
