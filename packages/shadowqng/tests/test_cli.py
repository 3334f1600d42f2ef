import math

from paperworks.testing import run_cli


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("shadowqng", tmp_path / "run")
    assert doc["package"] == "shadowqng"
    assert doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"shadow_concentration", "k_lowers_bias", "k_raises_variance", "vqe_per_shot_tfim_k1",
            "vqe_per_shot_tfim_k2", "fewer_shots_tfim_k2", "truncation_pays_tfim", "stationary_neighbourhood"} <= ids
    # claims 1 and 4 are identities of the construction: checks, exact to rounding
    checks = {c["id"]: c for c in doc["checks"]}
    assert set(checks) == {"qfim_is_covariance", "active_set_gd"}
    assert all(c["verdict"] == "supported" for c in checks.values())
    vqe = next(c for c in doc["claims"] if c["id"] == "vqe_per_shot_tfim_k2")
    assert set(vqe["baselines"]) == {"sgd", "adam", "bdqng", "rng"}
    assert vqe["rule"]["kind"] == "compare_all" and vqe["rule"]["paired"]
    assert all(math.isfinite(v["value"]) for v in vqe["baselines"].values())
    fewer = next(c for c in doc["claims"] if c["id"] == "fewer_shots_tfim_k2")
    assert fewer["rule"]["kind"] == "compare_all" and fewer["method"]["method"] == "censored-median"
    assert "requires" in fewer["rule"]
    # the record rows: one per arm and seed, every arm at its tuned setting, pilot seeds apart
    assert (tmp_path / "run" / "metrics.csv").exists()
    study = doc["extra"]["study"]
    assert not set(study["pilot_seeds"]) & set(study["record_seeds"])
    assert (tmp_path / "run" / "energy_vs_shots.png").exists()
