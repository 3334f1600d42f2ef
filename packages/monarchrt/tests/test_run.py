import pytest
import torch
from monarchrt.bench import bench_cpu
from monarchrt.run import run

from paperworks.device import resolve_device
from paperworks.hydra_glue import compose
from paperworks.testing import smoke_without_matplotlib

TINY_DIT = ["parts=[dit]", "dit.frames=4", "dit.size=8", "dit.dim=16", "dit.depth=1", "dit.heads=2",
            "dit.train_videos=8", "dit.test_videos=4", "dit.batch=4", "dit.steps=2", "dit.finetune_steps=1",
            "dit.sample_steps=1", "dit.capture_videos=1", "dit.capture_noise=[0.5]", "dit.checkpoint_every=1",
            "fidelity.budgets=[0.25]", "dit.seeds=2"]


def test_bench_cpu_interleaves_and_gives_a_speedup_interval():
    rows, results = bench_cpu([[2, 4, 4]], 8, 0.5, 3, warmup=0)
    (row,), (res,) = rows, results
    assert res.repeats == 3 and set(res.wall) == {"dense", "monarch"}
    assert row["speedup_lo"] <= row["speedup"] <= row["speedup_hi"] and row["dense_cpu_s"] >= 0


def test_tiny_dit_part_builds_paired_claims_and_checks(tmp_path):
    out = run(compose("monarchrt", ["experiment=smoke", *TINY_DIT]), out_dir=tmp_path)
    claims = {c.id: c for c in out["claims"]}
    downstream = {"dit_monarch_finetuned_matches_dense", "dit_uniform_control_is_worse", "dit_beats_sparse_baselines",
                  "dit_sparser_is_worse_training_free"}
    assert downstream | {"dit_learns_motion"} <= set(claims)
    assert all(c.rule["paired"] for c in claims.values())  # every variant is scored on the same held-out videos
    ex = out["extra"]["dit"]
    assert ex["train_seeds"] == out["seeds"][:2] and ex["device"] == resolve_device("auto")  # device=auto honoured
    assert {r["seed"] for r in out["metrics"] if r.get("part") == "dit" and "seed" in r} == set(out["seeds"][:2])
    ft = claims["dit_monarch_finetuned_matches_dense"]
    assert ft.rule["scale"] == "log" and ft.rule["margin"] < 0  # non-inferiority within 10%
    assert ft.method.n == 4  # one value per held-out video (the mean over the two training seeds)
    assert "uniform fine-tuned (control)" in ft.baselines and len(ft.rule["requires"]) == 2
    learns = claims["dit_learns_motion"]
    assert set(learns.rule["baselines"]) == {"frame centre", "hold last context frame"}
    # 2 training steps learn nothing: every downstream claim is then inconclusive, never supported
    assert learns.verdict != "supported"
    assert all(claims[c].verdict == "inconclusive" for c in downstream)
    assert [c.id for c in out["checks"]] == ["kv_cache_equals_recomputation"]
    assert out["checks"][0].verdict == "supported"
    assert ex["flop_ratios"]["uniform"] == 0 and ex["flop_ratios"]["monarch@0.1"] > 0


def test_dit_part_refuses_more_training_seeds_than_the_run_has_and_a_missing_device():
    with pytest.raises(ValueError, match="dit.seeds"):
        run(compose("monarchrt", ["experiment=smoke", *TINY_DIT, "dit.seeds=3"]))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="cuda"):
            run(compose("monarchrt", ["experiment=smoke", *TINY_DIT, "device=cuda"]))


def test_smoke_in_process_without_matplotlib(tmp_path, monkeypatch):
    # the smoke without part C (the Triton interpreter is the slow half; test_cli runs it)
    doc = smoke_without_matplotlib("monarchrt", run, monkeypatch, tmp_path, overrides=("experiment=smoke", "parts=[fidelity]"))
    assert doc["experiment"] == "smoke"


@pytest.mark.parametrize("exp", ["smoke", "quick", "paper", "bench"])
def test_experiments_say_what_they_measure(exp):
    cfg = compose("monarchrt", [f"experiment={exp}"])
    assert cfg.experiment.description and cfg.experiment.expected_time
    assert int(cfg.bench.repeats) >= 3  # paperworks.bench.compare needs three rounds
