import math

import pytest
import torch
from graphmuon import run as run_mod
from graphmuon.run import build_claims, run, time_claim, validate, window_claims
from graphmuon.train import time_steps, train

from paperworks.hydra_glue import compose
from paperworks.testing import smoke_without_matplotlib


def _res(gm, base, name="adamw", steps=(80, 90, 100)):
    def runs(times):
        return {s: {"time_to_target": t, "steps_to_target": None if t is None else steps[s]}
                for s, t in enumerate(times)}

    r = {"graphmuon": runs(gm), name: runs(base)}
    if name != "adamw":
        r["adamw"] = runs([1.0, 1.0, 1.0])
    return {"reg": {"runs": r, "target": 0.9, "reference": {"best_val": 0.92}, "cap": 300}}


def test_time_claim_pairs_seeds_on_the_log_scale():
    # per-seed ratios 2.9, 3.1, 3.0: clearly above 2x although the marginal times overlap widely
    c = time_claim("x", "2x sooner", _res([1.0, 2.0, 4.0], [2.9, 6.2, 12.0]), "reg", "adamw", margin=math.log(2),
                   min_steps=50)
    assert c.verdict == "supported" and c.rule["paired"] and c.rule["scale"] == "log"
    assert c.differences["adamw"].value == pytest.approx(1 / 3.0, rel=0.01)  # GraphMuon / AdamW
    assert "steps GraphMuon" in c.baselines  # steps-to-target shown beside seconds


def test_time_claim_never_imputes_a_miss():
    # AdamW missed on one seed: no ratio for that seed, so no verdict (never imputed as a multiple of the cap)
    c = time_claim("x", "2x sooner", _res([1.0, 1.1, 0.9], [5.0, None, 6.0]), "reg", "adamw", margin=math.log(2),
                   min_steps=50)
    assert c.verdict == "inconclusive" and "precondition" in c.reason
    assert c.baselines["adamw"].n_censored == 1 and c.method.n_censored == 0


def test_time_claim_refutes_a_slower_method():
    c = time_claim("x", "2x sooner", _res([3.0, 3.2, 2.8], [1.0, 1.1, 0.9]), "reg", "adamw", margin=math.log(2),
                   min_steps=50)
    assert c.verdict == "not supported"


def test_time_claim_needs_a_target_that_takes_adamw_many_steps():
    # the same clear 3x, but AdamW reached the target in a handful of steps: first-step latency, no verdict
    c = time_claim("x", "2x sooner", _res([1.0, 2.0, 4.0], [2.9, 6.2, 12.0], steps=(1, 2, 1)), "reg", "adamw",
                   margin=math.log(2), min_steps=50)
    assert c.verdict == "inconclusive" and "50 steps" in c.reason


def test_adamw_missing_every_seed_meets_the_many_steps_precondition():
    res = _res([1.0, 1.1, 0.9], [2.0, 2.2, 1.8], name="muon")
    res["reg"]["runs"]["adamw"] = {s: {"time_to_target": None, "steps_to_target": None} for s in range(3)}
    c = time_claim("x", "sooner than Muon", res, "reg", "muon", margin=0.0, min_steps=50)
    assert c.verdict == "supported"


def _window_res(gm_counts, muon_counts, muon_low=(5, 5, 5), best=0.9):
    grid = [0.001, 0.003, 0.01, 0.03, 0.1]

    def w(counts):
        return {s: grid[:c] for s, c in enumerate(counts)}

    def reg(gm, mu):
        return {"grid": grid, "classes": 10, "reference": {"best_val": best},
                "window": {"graphmuon": w(gm), "muon": w(mu), "adamw": w((3, 3, 3))}}

    return {"lo": reg((5, 5, 5), muon_low), "hi": reg(gm_counts, muon_counts)}


def _window_claims(res):
    return {c.id: c for c in window_claims(res, {"window": {"K_low": "lo", "K_high": "hi"}})}


def test_window_claims_follow_the_counts():
    c = _window_claims(_window_res((5, 4, 5), (2, 1, 2)))
    assert c["graphmuon_window_wider_hi"].verdict == "supported"
    assert c["muon_window_narrows_with_K"].verdict == "supported"
    same = _window_claims(_window_res((2, 1, 2), (2, 1, 2), muon_low=(2, 1, 2)))
    assert same["graphmuon_window_wider_hi"].verdict != "supported"
    assert same["muon_window_narrows_with_K"].verdict != "supported"


def test_window_claim_on_an_unlearnable_regime_is_inconclusive():
    c = _window_claims(_window_res((5, 4, 5), (2, 1, 2), best=0.15))  # chance is 0.1 with 10 classes
    assert c["graphmuon_window_wider_hi"].verdict == "inconclusive" and "chance" in c["graphmuon_window_wider_hi"].reason


@pytest.mark.parametrize("value,err", [(1.5, ValueError), (0.0, ValueError), (-0.1, ValueError), ("0.9", TypeError)])
def test_target_fraction_is_validated(value, err):
    cfg = compose("graphmuon", ["experiment=smoke"])
    cfg.target_fraction = value
    with pytest.raises(err, match="target_fraction"):
        validate(cfg)


def test_other_keys_are_validated_by_name():
    for key, value in (("step_cap", 0), ("patience", 2.5), ("data.kind", "csv")):
        cfg = compose("graphmuon", ["experiment=smoke"])
        node, leaf = (cfg.data, "kind") if key == "data.kind" else (cfg, key)
        node[leaf] = value
        with pytest.raises((ValueError, TypeError), match=key.split(".")[-1]):
            validate(cfg)
    cfg = compose("graphmuon", ["experiment=smoke", "data.kind=planetoid"])
    with pytest.raises(ValueError, match="data.root"):
        validate(cfg)


def _tiny():
    from graphmuon.baselines import make_optimizers
    from graphmuon.data import csbm, with_sparse_adjacency
    from graphmuon.models import build_model

    data = with_sparse_adjacency(csbm(0, n=120, classes=3, features=8, homophily=0.8, degree=5, signal=2.0))
    torch.manual_seed(0)
    return build_model("gcn", 8, 8, 3, layers=2), data, lambda m: make_optimizers("adamw", m, 0.03)


def test_train_stops_at_the_target_or_the_cap():
    model, data, make = _tiny()
    hit = train(model, data, make, steps=200, target=0.0)  # reached after the first step
    assert hit["steps_to_target"] == 1 and hit["steps"] == 1 and hit["time_to_target"] == hit["clock"][0]
    model, data, make = _tiny()
    miss = train(model, data, make, steps=7, target=1.01)  # unreachable: censored at the cap
    assert miss["steps_to_target"] is None and miss["time_to_target"] is None and miss["steps"] == 7
    model, data, make = _tiny()
    early = train(model, data, make, steps=400, target=0.0, patience=3)  # keeps going after the target
    vals = early["val"]
    best = max(vals)
    assert early["steps_to_target"] == 1 and early["best_val"] == best
    assert early["steps"] - 1 - vals.index(best) == 3 or early["steps"] == 400  # stopped 3 steps after the best
    assert early["test_at_best"] == early["test"][vals.index(best)]
    with pytest.raises(ValueError, match="steps"):
        train(model, data, make, steps=0)


def test_runs_are_interleaved_and_targets_come_from_the_reference(monkeypatch):
    calls, names = [], []

    def fake_train(model, data, make_optimizers, *, steps, target=None, patience=None, diag_every=0):
        make_optimizers(model)  # records the optimizer through the patched factory
        calls.append((steps, target, patience))
        n = 3
        return {"val": [0.5] * n, "test": [0.5] * n, "clock": [0.1, 0.2, 0.3], "step_time": [0.1] * n, "loss": [1.0] * n,
                "amp": {}, "diverged": False, "steps": n, "cap": steps, "steps_to_target": 2 if target else None,
                "time_to_target": 0.2 if target else None, "best_val": 0.8, "test_at_best": 0.7}

    monkeypatch.setattr(run_mod, "train", fake_train)
    monkeypatch.setattr(run_mod, "make_optimizers", lambda name, model, lr, **kw: names.append(name) or [])
    cfg = compose("graphmuon", ["experiment=smoke", "tune_seeds=2"])

    class _Progress:
        def update(self, n):
            pass

    out = run_mod.run_regime({"name": "r", "data": "csbm", "model": "sgc", "K": 1}, cfg, [0, 1], [1000, 1001], "cpu",
                             _Progress())
    assert out["target"] == pytest.approx(float(cfg.target_fraction) * 0.8)  # from the reference run's best
    assert names[0] == "adamw" and calls[0] == (int(cfg.reference.steps), None, int(cfg.reference.patience))
    n_sweep = 2 * len(cfg.lr_grid) * 3
    assert all(c == (int(cfg.step_cap), out["target"], None) for c in calls[1:1 + n_sweep])
    assert all(c == (int(cfg.step_cap), out["target"], int(cfg.patience)) for c in calls[1 + n_sweep:])
    assert len(calls) == 1 + n_sweep + 2 * 3
    blocks = [names[1 + 3 * i:4 + 3 * i] for i in range((len(names) - 1) // 3)]
    assert all(sorted(b) == ["adamw", "graphmuon", "muon"] for b in blocks)  # every optimizer once per block
    assert len({b[0] for b in blocks}) == 3  # and the one that goes first rotates


@pytest.mark.parametrize("exp", ["smoke", "quick", "paper", "bench"])
def test_every_experiment_composes(exp):
    cfg = compose("graphmuon", [f"experiment={exp}"])
    validate(cfg)
    assert cfg.experiment.name == exp and cfg.experiment.description and cfg.experiment.expected_time
    assert len(cfg.lr_grid) >= 2 and "adamw" in cfg.optimizers
    names = {r["name"] for r in cfg.regimes}
    c = cfg.claims
    used = set(c.get("speedup", []) or []) | set((c.get("window") or {}).values()) | set(
        (c.get("amplification") or {}).values()) | ({c.null_regime} if c.get("null_regime") else set())
    assert used <= names


def test_run_needs_adamw_and_graphmuon():
    cfg = compose("graphmuon", ["experiment=smoke", "optimizers=[muon,graphmuon]"])
    with pytest.raises(ValueError, match="optimizers must include 'adamw'"):
        run(cfg)


def test_time_steps_interleaves_optimizers():
    from graphmuon.baselines import make_optimizers
    from graphmuon.data import csbm, with_sparse_adjacency
    from graphmuon.models import build_model

    data = with_sparse_adjacency(csbm(0, n=120, classes=3, features=8, homophily=0.8, degree=5, signal=1.0))

    def make(opt):
        torch.manual_seed(0)
        model = build_model("gcn", 8, 8, 3, layers=2)
        return model, make_optimizers(opt, model, 0.01)

    res = time_steps({o: (lambda o=o: make(o)) for o in ("adamw", "muon", "graphmuon")}, data, repeats=3, warmup=1)
    assert res.repeats == 3 and {r["candidate"] for r in res.rows()} == {"adamw", "muon", "graphmuon"}
    r = res.speedup("muon", over="graphmuon")
    assert r.lower <= r.value <= r.upper and r.value > 0


def test_smoke_in_process_without_matplotlib(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("graphmuon", run, monkeypatch, tmp_path)
    assert doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["checks"]} == {"muon_amplification", "graphmuon_mitigates", "recovers_muon"}
    assert build_claims  # the claims builder is importable on its own (used by notebooks)
