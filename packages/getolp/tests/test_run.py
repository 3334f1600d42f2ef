import numpy as np
from getolp import fixed_support_barycenter
from getolp.run import run

from paperworks.hydra_glue import compose


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
    assert (out_dir / "barycenter.png").exists()


def test_a_full_lp_timeout_is_a_lower_bound_not_a_failure():
    from getolp.measure import Measured
    from getolp.run import _speed_memory_claims

    geto = Measured("ok", 2.0, 10.0)
    short = _speed_memory_claims({"geto": geto, "full": Measured("timeout", 15.0, 50.0)}, 32)
    assert [c.verdict for c in short] == ["inconclusive", "inconclusive"]  # 7.5x and 5x so far: unknown
    long = _speed_memory_claims({"geto": geto, "full": Measured("timeout", 40.0, 500.0)}, 32)
    assert [c.verdict for c in long] == ["supported", "supported"]  # already past 10x when killed
    done = _speed_memory_claims({"geto": geto, "full": Measured("ok", 15.0, 50.0)}, 32)
    assert [c.verdict for c in done] == ["not supported", "not supported"]
