"""Hydra glue: typed common keys, results before plots, --help, threads, worker logging."""

import json
import logging
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from paperworks import Claim
from paperworks.hydra_glue import ConfigError, check_common_keys, execute, help_text


def _claim():
    return Claim.threshold("c", "s", "m", [2.0, 2.1, 1.9], threshold=1.0, better="higher")


@pytest.mark.parametrize("cfg,key", [
    ({"seed": "abc"}, "seed"), ({"seed": -1}, "seed"), ({"seeds": 0}, "seeds"), ({"seeds": "x"}, "seeds"),
    ({"threads": 0}, "threads"), ({"threads": "many"}, "threads"), ({"seed": 1.5}, "seed"),
])
def test_mistyped_common_keys_name_the_key(cfg, key):
    with pytest.raises(ConfigError, match=key):
        check_common_keys(OmegaConf.create(cfg))


def test_good_common_keys_pass():
    check_common_keys(OmegaConf.create({"seed": 3, "seeds": [1, 2], "device": "cpu", "threads": "auto", "other": 1}))


def test_results_are_written_before_plots_and_plots_are_optional(tmp_path, caplog):
    order = []

    def plots(out_dir):
        order.append((out_dir / "results.json").exists())
        raise ModuleNotFoundError("No module named 'matplotlib'")

    def run(cfg, out_dir=None):
        return {"claims": [_claim()], "plots": plots}

    cfg = OmegaConf.create({"seed": 0, "device": "cpu", "experiment": {"name": "smoke"}})
    with caplog.at_level(logging.WARNING, logger="paperworks"):
        doc = execute("paperworks", run, cfg, tmp_path)
    assert order == [True], "plots ran after results.json was written"
    assert doc["claims"][0]["id"] == "c" and "no plots" in caplog.text

    def broken(out_dir):
        raise ImportError("No module named 'somethingelse'")

    with pytest.raises(ImportError, match="somethingelse"):  # only a missing matplotlib is forgiven
        execute("paperworks", lambda cfg, out_dir=None: {"claims": [_claim()], "plots": broken}, cfg, tmp_path)


def test_threads_key_pins_torch_and_blas(tmp_path):
    code = ("import torch; from omegaconf import OmegaConf; from paperworks import Claim;"
            "from paperworks.hydra_glue import execute; from threadpoolctl import threadpool_info;"
            "run = lambda cfg, out_dir=None: {'claims': [Claim.threshold('c','s','m',1.0,threshold=0,better='higher',"
            "exact=True)]};"
            "execute('paperworks', run, OmegaConf.create({'seed': 0, 'device': 'cpu', 'threads': 1}), None);"
            "print(torch.get_num_threads(), max(p['num_threads'] for p in threadpool_info()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "1"]


def test_help_lists_the_experiments(monkeypatch, tmp_path):
    import types

    conf = tmp_path / "fakepkg" / "conf"
    (conf / "experiment").mkdir(parents=True)
    (tmp_path / "fakepkg" / "__init__.py").write_text('"""A fake paper package."""\n')
    (conf / "__init__.py").write_text("")
    (conf / "experiment" / "smoke.yaml").write_text(
        "# @package _global_\nexperiment:\n  name: smoke\n  description: tiny\n  expected_time: seconds\n")
    (conf / "experiment" / "paper.yaml").write_text("# @package _global_\n# the CPU miniature\nexperiment:\n  name: paper\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    text = help_text("fakepkg")
    assert "A fake paper package." in text
    assert "smoke    (seconds) tiny" in text and "paper    the CPU miniature" in text
    assert text.index("smoke    (") < text.index("paper    the")
    del types


def test_worker_processes_keep_logging(tmp_path):
    code = r'''
import logging, sys
from paperworks.logs import process_pool
import worker_mod
logging.basicConfig(filename=sys.argv[1], level=logging.INFO, format="%(processName)s %(message)s")
with process_pool(2) as ex:
    print(sum(ex.map(worker_mod.work, range(4))))
'''
    (tmp_path / "worker_mod.py").write_text(
        "import logging\ndef work(i):\n    logging.getLogger('w').info('cell %d done', i)\n    return i\n")
    log = tmp_path / "run.log"
    proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "6"
    lines = log.read_text().splitlines()
    assert sorted(ln.split(" ", 1)[1] for ln in lines if "cell" in ln) == [f"cell {i} done" for i in range(4)]
    assert all(not ln.startswith("MainProcess") for ln in lines if "cell" in ln)
    json.dumps(lines)


def test_threads_reach_xla_when_jax_is_imported_but_not_started():
    pytest.importorskip("jax")
    code = ("import os; os.environ.pop('XLA_FLAGS', None); import jax; from paperworks.threads import set_threads;"
            "set_threads(1); print(os.environ['XLA_FLAGS'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "--xla_cpu_multi_thread_eigen=false" in out
    # XLA ignores every flag after a token that is not a --flag: only real flags may be added
    assert all(tok.startswith("--") for tok in out.split())


def test_verbs_dispatch_to_their_own_config(monkeypatch, tmp_path):
    """``hydra_cli(verbs=...)``: ``pkg VERB key=value`` runs the verb's function with ``conf/VERB.yaml``;
    anything else runs the experiments; ``--help`` lists the verbs."""
    import json

    from paperworks.hydra_glue import hydra_cli

    conf = tmp_path / "verbpkg" / "conf"
    (conf / "experiment").mkdir(parents=True)
    (tmp_path / "verbpkg" / "__init__.py").write_text('"""A fake package with a verb."""\n')
    (conf / "__init__.py").write_text("")
    common = "seed: 0\ndevice: cpu\nthreads: 1\n"
    (conf / "config.yaml").write_text("defaults:\n  - _self_\n  - experiment: smoke\n" + common)
    (conf / "experiment" / "smoke.yaml").write_text("# @package _global_\nexperiment:\n  name: smoke\n")
    (conf / "sample.yaml").write_text(common + "n: 3\nexperiment:\n  name: sample\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = []

    from paperworks import Claim

    def check():
        return [Claim.check("ok", "s", "m", 0.0, threshold=0.0, better="lower")]

    def run(cfg, out_dir=None):
        calls.append(("run", cfg.experiment.name))
        return {"claims": [], "checks": check(), "metrics": []}

    def sample(cfg, out_dir=None):
        calls.append(("sample", int(cfg.n)))
        return {"claims": [], "checks": check(), "metrics": [], "extra": {"n": int(cfg.n)}}

    main = hydra_cli("verbpkg", run, verbs={"sample": sample})
    monkeypatch.setattr(sys, "argv", ["verbpkg", "sample", "n=5", f"hydra.run.dir={tmp_path / 's'}"])
    main()
    monkeypatch.setattr(sys, "argv", ["verbpkg", f"hydra.run.dir={tmp_path / 'e'}"])
    main()
    assert calls == [("sample", 5), ("run", "smoke")]
    assert json.loads((tmp_path / "s" / "results.json").read_text())["extra"] == {"n": 5}
    assert "verbpkg sample key=value" in help_text("verbpkg", ["sample"])
