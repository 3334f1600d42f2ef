import math

from paperworks.testing import run_cli


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("shadowqng", tmp_path / "run")
    assert doc["package"] == "shadowqng"
    assert doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"qfim_is_covariance", "shadow_concentration", "k_lowers_bias", "k_raises_variance", "active_set_gd",
            "vqe_per_shot_tfim", "stationary_neighbourhood"} <= ids
    cov = next(c for c in doc["claims"] if c["id"] == "qfim_is_covariance")
    assert cov["verdict"] == "supported"  # an identity, exact to rounding
    vqe = next(c for c in doc["claims"] if c["id"] == "vqe_per_shot_tfim")
    assert set(vqe["baselines"]) == {"sgd", "adam", "bdqng", "rng"}
    assert all(math.isfinite(v["value"]) for v in vqe["baselines"].values())
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "energy_vs_shots.png").exists()
