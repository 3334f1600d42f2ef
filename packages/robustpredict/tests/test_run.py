import sys

import pytest
from robustpredict.run import run

from paperworks import Claim
from paperworks.hydra_glue import compose, execute

# smaller test sets than smoke's: these in-process runs check the plumbing, the CLI test runs smoke itself
FAST = ["controlled.n_test=2000", "learned.n_test=2000"]


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    for name in list(sys.modules):
        if name == "robustpredict.plot" or name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    doc = execute("robustpredict", run, compose("robustpredict", ["experiment=smoke", "seeds=2", *FAST]), tmp_path)
    assert (tmp_path / "results.json").exists()
    assert not list(tmp_path.glob("*.png"))
    assert {c["id"] for c in doc["claims"]} == {"robust_rate_pricing", "robust_beats_ric_h"}


def test_robust_beats_ric_h_is_paired_over_seeds():
    out = run(compose("robustpredict", ["experiment=smoke", *FAST]))
    (c,) = [c for c in out["claims"] if c.id == "robust_beats_ric_h"]
    assert c.rule["paired"] and c.rule["baseline"] == "ric_h"
    d = c.differences["ric_h"]
    assert d.n == 3 and d.has_ci
    # the difference is per seed: robust minus RIC-h on the same data
    assert d.value == pytest.approx(c.method.value - c.baselines["ric_h"].value)
    # the by-construction properties are checks, not claims
    assert {k.id for k in out["checks"]} == {"ftp_constant_loss_pricing", "loss_under_bound"}
    assert all(isinstance(k, Claim) and k.kind == "check" for k in out["checks"])


def test_bench_tiny():
    cfg = compose("robustpredict", ["experiment=bench", "threads=1", "problems=[pricing]",
                                    "bench.n_contexts=20000", "bench.n_generic=200", "bench.repeats=3",
                                    "bench.warmup=0"])
    out = run(cfg)
    (c,) = out["claims"]
    assert c.id == "closed_form_1e6_under_1s"
    assert c.method.has_ci  # an interval over the repeats, not a bare time
    assert "CPU time" in c.metric and "predict (linear, 10^6 contexts)" in c.baselines
    (k,) = out["checks"]
    assert k.id == "closed_form_matches_generic_pricing" and k.verdict == "supported"
    mem = [r for r in out["metrics"] if "closed_form_peak_mib" in r]
    assert mem and mem[0]["closed_form_peak_mib"] >= 0 and mem[0]["memory_method"]
    assert all("cpu_median_s" in r for r in out["metrics"] if "decisions_per_s" in r)
