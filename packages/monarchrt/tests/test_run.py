import pytest
from monarchrt.bench import bench_cpu
from monarchrt.run import run

from paperworks.hydra_glue import compose
from paperworks.testing import smoke_without_matplotlib

TINY_DIT = ["parts=[dit]", "dit.frames=4", "dit.size=8", "dit.dim=16", "dit.depth=1", "dit.heads=2",
            "dit.train_videos=8", "dit.test_videos=4", "dit.batch=4", "dit.steps=2", "dit.finetune_steps=1",
            "dit.sample_steps=1", "dit.capture_videos=1", "dit.capture_noise=[0.5]", "dit.checkpoint_every=1",
            "fidelity.budgets=[0.25]"]


def test_bench_cpu_interleaves_and_gives_a_speedup_interval():
    rows, results = bench_cpu([[2, 4, 4]], 8, 0.5, 3, warmup=0)
    (row,), (res,) = rows, results
    assert res.repeats == 3 and set(res.wall) == {"dense", "monarch"}
    assert row["speedup_lo"] <= row["speedup"] <= row["speedup_hi"] and row["dense_cpu_s"] >= 0


def test_tiny_dit_part_builds_paired_claims_and_checks(tmp_path):
    out = run(compose("monarchrt", ["experiment=smoke", *TINY_DIT]), out_dir=tmp_path)
    claims = {c.id: c for c in out["claims"]}
    assert {"dit_monarch_finetuned_matches_dense", "dit_beats_sparse_baselines",
            "dit_sparser_is_worse_training_free"} <= set(claims)
    assert all(c.rule["paired"] for c in claims.values())  # every variant is scored on the same held-out videos
    ft = claims["dit_monarch_finetuned_matches_dense"]
    assert ft.rule["scale"] == "log" and ft.rule["margin"] < 0  # non-inferiority within 10%
    assert ft.method.n == 4  # one value per held-out video
    # 2 training steps learn nothing: the rollout comparison needs the dense model to beat holding the last frame
    assert claims["dit_beats_sparse_baselines"].rule["requires"]
    assert [c.id for c in out["checks"]] == ["kv_cache_equals_recomputation"]
    assert out["checks"][0].verdict == "supported"


def test_smoke_in_process_without_matplotlib(tmp_path, monkeypatch):
    # the smoke without part C (the Triton interpreter is the slow half; test_cli runs it)
    doc = smoke_without_matplotlib("monarchrt", run, monkeypatch, tmp_path, overrides=("experiment=smoke", "parts=[fidelity]"))
    assert doc["experiment"] == "smoke"


@pytest.mark.parametrize("exp", ["smoke", "quick", "paper", "bench"])
def test_experiments_say_what_they_measure(exp):
    cfg = compose("monarchrt", [f"experiment={exp}"])
    assert cfg.experiment.description and cfg.experiment.expected_time
    assert int(cfg.bench.repeats) >= 3  # paperworks.bench.compare needs three rounds
