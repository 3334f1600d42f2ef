import json

from loopedlm.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("loopedlm", tmp_path / "run")
    assert doc["package"] == "loopedlm" and doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"A_pre_injection_converges", "A_pre_no_injection_degenerate"} <= ids
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    rows = [json.loads(json.dumps(r)) for r in doc.get("metrics", [])] or None
    assert (tmp_path / "run" / "metrics.csv").exists() and rows is None or rows


def test_smoke_a_properties(tmp_path):
    from loopedlm.run import run_a
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(__import__("loopedlm").__path__[0] + "/conf/config.yaml")
    cfg.a.d_model, cfg.a.blocks, cfg.a.recurrences, cfg.a.norms = 32, [4], 32, ["pre"]
    cfg.a.injection, cfg.a.attn_recurrences = [True, False], 8
    rows, _, curves = run_a(cfg, [0])
    for key, curve in curves.items():
        assert curve[-1] < curve[0], key  # tail distance falls
    pre = [r for r in rows if r["norm"] == "pre" and r["injection"]][0]
    assert pre["min_cosine"] < 0.99


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("loopedlm", run, monkeypatch, tmp_path)
    assert doc["experiment"] == "smoke"
