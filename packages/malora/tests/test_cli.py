import json
import warnings

import numpy as np
import pytest
import torch
from malora.merge_cli import run_merge
from malora.run import run

from paperworks.hydra_glue import compose, execute
from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS_A = {"svm_alignment_in_band", "alignment_peaks_at_intermediate_lambda", "pt_margin_closed_form",
            "ft_margin_closed_form"}
CLAIMS_B = {"union_margin_vs_uniform_1.2x", "union_margin_not_below_task_arithmetic", "union_margin_best",
            "min_task_accuracy_best_theory", "merged_margin_positive_low_overlap", "gap_grows_with_overlap"}


def test_smoke_cli_writes_results(tmp_path):
    # the installed script on Exp A of smoke (Exp B runs in-process below: one import of torch/peft)
    doc = run_cli("malora", tmp_path / "run", "experiment=smoke", "seeds=1", "expB.enabled=false")
    assert doc["package"] == "malora" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS_A
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "margins_vs_lambda.png").exists()


def test_smoke_malora_margin_at_least_uniform():
    # the brief's smoke: merged margins > 0 and MaLoRA's min-margin ≥ uniform's
    out = run(compose("malora", ["experiment=smoke", "seeds=1", "expA.enabled=false",
                                 "expB.baselines=[uniform,task_arithmetic]"]))
    assert {c.id for c in out["claims"]} == CLAIMS_B
    rows = out["metrics"]
    for rho in (0.0, 0.1):
        m = [r for r in rows if r["rho"] == rho and r["method"] == "malora"][0]
        u = [r for r in rows if r["rho"] == rho and r["method"] == "uniform"][0]
        assert m["val_min_margin"] >= u["val_min_margin"] and m["test_min_margin"] > 0


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("malora", run, monkeypatch, tmp_path,
                                   overrides=("experiment=smoke", "seeds=1", "expB.enabled=false"))
    assert doc["experiment"] == "smoke"


KEY = "bert.encoder.layer.0.attention.self.query"


@pytest.fixture
def saved(tmp_path):
    """A tiny random BERT saved with save_pretrained, two saved LoRA adapters and a calibration .npz."""
    from malora.bench import adapters_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pm, names, cal = adapters_model(2, seed=3, rank=2, n_calib=10)
    dirs = []
    for n in names:
        pm.save_pretrained(tmp_path / "ad", selected_adapters=[n])
        dirs.append(tmp_path / "ad" / n)
    with torch.no_grad():
        deltas = [dict(pm.named_modules())[f"base_model.model.{KEY}"].get_delta_weight(n).clone() for n in names]
    pm.unload().save_pretrained(tmp_path / "model")  # the base weights, without adapters
    arrays = {}
    for t, n in enumerate(names):
        arrays[f"X_{t}"], arrays[f"y_{t}"] = cal[n][0].numpy(), cal[n][1].numpy()
    np.savez(tmp_path / "cal.npz", **arrays)
    return tmp_path, dirs, deltas


def test_merge_verb_on_saved_adapter_directories(saved):
    tmp, dirs, deltas = saved
    adapters = "[" + ",".join(str(d) for d in dirs) + "]"
    doc = execute("malora", run_merge, compose("malora", [f"model={tmp / 'model'}", f"adapters={adapters}",
                                                          f"calibration={tmp / 'cal.npz'}", f"out={tmp / 'out'}"],
                                               config_name="merge"), tmp / "run")
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    alpha = json.loads((tmp / "out" / "alpha.json").read_text())["alpha"]
    assert len(alpha) == 2 and min(alpha) >= 0
    # the saved merge reloads and equals Σ α_t B_tA_t of the original adapters
    from peft import PeftModel
    from transformers import BertForSequenceClassification

    model = BertForSequenceClassification.from_pretrained(tmp / "model", local_files_only=True)
    merged = PeftModel.from_pretrained(model, tmp / "out" / "malora", adapter_name="malora")
    with torch.no_grad():
        got = dict(merged.named_modules())[f"base_model.model.{KEY}"].get_delta_weight("malora")
    ref = sum(a * D for a, D in zip(alpha, deltas))
    assert torch.allclose(got, ref, atol=1e-5)


def test_merge_verb_bad_input(saved, tmp_path):
    tmp, dirs, *_ = saved
    with pytest.raises(FileNotFoundError, match="adapter_config"):
        run_merge(compose("malora", [f"model={tmp / 'model'}", f"adapters=[{dirs[0]},{tmp}]",
                                     f"calibration={tmp / 'cal.npz'}", f"out={tmp / 'o'}"], config_name="merge"))
    np.savez(tmp / "bad.npz", X_0=np.zeros((2, 3), dtype=int), y_0=np.zeros(2, dtype=int))
    with pytest.raises(ValueError, match="lacks"):
        run_merge(compose("malora", [f"model={tmp / 'model'}", f"adapters=[{dirs[0]},{dirs[1]}]",
                                     f"calibration={tmp / 'bad.npz'}", f"out={tmp / 'o'}"], config_name="merge"))
    with pytest.raises(ValueError, match="needs"):
        run_merge(compose("malora", [], config_name="merge"))


def test_bench_runs_in_miniature():
    out = run(compose("malora", ["experiment=bench", "bench.adapters=[2]", "bench.repeats=3", "bench.memory=false",
                                 "bench.max_iter=2"]))
    assert [c.id for c in out["claims"]] == ["alpha_and_merge_T2_under_2s", "alpha_linear_T2_under_2s"]
    assert {c.id for c in out["checks"]} == {"peft_cat_is_exact", "peft_linear_is_not"}
    assert all(c.verdict == "supported" for c in out["checks"])
    assert any(r.get("candidate") == "ratio_malora_over_cat" for r in out["metrics"])
