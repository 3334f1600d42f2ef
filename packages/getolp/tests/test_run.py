import logging

import numpy as np
import pytest
from getolp import fixed_support_barycenter
from getolp.run import run, solver_kwargs, speed_memory_claims
from PIL import Image

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


def test_large_images_are_downsampled_to_max_variables_and_say_so(tmp_path, rng, caplog):
    paths = []
    for i in range(2):
        Image.fromarray((rng.random((30, 40)) * 255).astype(np.uint8)).save(tmp_path / f"im{i}.png")
        paths.append(str(tmp_path / f"im{i}.png"))
    # native 30x40 with M=2: 2 * 1200 * 70 + 1200 = 169,200 variables
    cfg = compose("getolp", ["experiment=smoke", f"inputs.paths=[{','.join(paths)}]", "inputs.max_variables=20000"])
    with caplog.at_level(logging.WARNING, logger="getolp.run"):
        out = run(cfg)
    assert "downsampling the 2 inputs" in caplog.text and "30x40" in caplog.text
    shape = out["extra"]["inputs_downsampled"]["to"]
    assert shape[0] < 30 and shape[1] < 40 and 2 * shape[0] * shape[1] * sum(shape) + shape[0] * shape[1] <= 20000
    assert abs(shape[0] / shape[1] - 0.75) < 0.15  # the aspect ratio is kept
    assert out["claims"][0].verdict == "supported"
    bad = compose("getolp", ["experiment=smoke", f"inputs.paths=[{','.join(paths)}]", "inputs.max_variables=abc"])
    with pytest.raises(ValueError, match="inputs.max_variables"):
        run(bad)


def test_solver_block_is_validated():
    kw = solver_kwargs(compose("getolp", ["solver.method=highs-ipm", "solver.time_limit=30",
                                          "+solver.options.presolve=false"]))
    assert kw == {"solver": "highs-ipm", "time_limit": 30.0, "highs_options": {"presolve": False}}
    for override, err in (("solver.time_limit=-1", ValueError), ("solver.time_limit=abc", TypeError),
                          ("+solver.options.no_such_option=1", ValueError)):
        with pytest.raises(err):
            solver_kwargs(compose("getolp", [override]))


def _ratio(geto_s, full_s, geto_mb, full_mb, ok=True, slower=None):
    wall = {"geto": list(geto_s), "full_lp:highs": list(full_s)}
    peak = {"geto": list(geto_mb), "full_lp:highs": list(full_mb)}
    oks = {"geto": True, "full_lp:highs": ok}
    if slower is not None:  # a second, slower and heavier HiGHS method for the full LP
        wall["full_lp:highs-ipm"] = [slower * t for t in full_s]
        peak["full_lp:highs-ipm"] = [slower * m for m in full_mb]
        oks["full_lp:highs-ipm"] = True
    done = [k for k in wall if oks[k]]
    bench = BenchResult(wall={k: wall[k] for k in done}, cpu={k: wall[k] for k in done}, threads=1,
                        repeats=len(geto_s), warmup=0)
    runs = {"ok": oks, "errors": {} if ok else {"full_lp:highs": "round 0: timeout"}, "bench": bench,
            "peak_mb": peak, "wall": wall}
    return {"n": 32, "runs": runs, "h": np.zeros((4, 1)), "geto_solver": "highs", "fulls": [k for k in wall if k != "geto"]}


def test_speed_and_memory_claims_need_repeated_measurements():
    fast = _ratio([1.0, 1.1, 0.9], [30.0, 31.0, 29.0], [10.0, 10.5, 9.8], [300.0, 305.0, 298.0])
    assert [c.verdict for c in speed_memory_claims(fast, 20, 10)] == ["supported", "supported"]
    slow = _ratio([1.0, 1.1, 0.9], [5.0, 5.5, 4.8], [10.0, 10.5, 9.8], [40.0, 41.0, 39.0])
    assert [c.verdict for c in speed_memory_claims(slow, 20, 10)] == ["not supported", "not supported"]
    # one round: the values are reported, but without an interval there is no verdict
    once = _ratio([1.0], [60.0], [10.0], [400.0])
    claims = speed_memory_claims(once, 20, 10)
    assert [c.verdict for c in claims] == ["inconclusive", "inconclusive"]
    assert claims[0].method.value == pytest.approx(60.0) and claims[1].method.value == pytest.approx(40.0)
    # a full LP that did not finish gives no ratio: inconclusive, never a guess
    killed = _ratio([1.0, 1.1, 0.9], [20.0, 21.0, 19.0], [10.0, 10.5, 9.8], [], ok=False)
    assert [c.verdict for c in speed_memory_claims(killed, 20, 10)] == ["inconclusive", "inconclusive"]
    # two HiGHS methods for the full LP: the claims are read against the faster and the leaner one
    two = _ratio([1.0, 1.1, 0.9], [15.0, 16.0, 14.0], [10.0, 10.5, 9.8], [80.0, 81.0, 79.0], slower=3.0)
    t, m = speed_memory_claims(two, 20, 10)
    assert t.method.value == pytest.approx(15.0, rel=0.1) and t.verdict == "not supported"
    assert m.method.value == pytest.approx(8.0, rel=0.05) and m.verdict == "not supported"
    assert "full_lp:highs-ipm wall s" in t.baselines


def test_smoke_in_process_without_matplotlib(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("getolp", run, monkeypatch, tmp_path)
    assert doc["experiment"] == "smoke"


@pytest.mark.parametrize("exp", ["smoke", "quick", "paper", "bench"])
def test_experiments_say_what_they_measure(exp):
    cfg = compose("getolp", [f"experiment={exp}"])
    assert cfg.experiment.description and cfg.experiment.expected_time
    assert int(cfg.scaling.entropic_grid) in [int(n) for n in cfg.scaling.grids]
