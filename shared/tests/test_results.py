import json
import sys

import numpy as np
import pytest
from omegaconf import OmegaConf

from paperworks import Claim, Estimate, load_results, validate_results, write_results
from paperworks.hydra_glue import execute


def _doc(tmp_path, claims):
    return write_results(tmp_path, package="paperworks", experiment="smoke", config={"a": np.int64(3)},
                         claims=claims, seeds=[0, 1], timings={"total_s": 1.5},
                         metrics=[{"seed": 0, "x": np.float64(0.5)}, {"seed": 1, "y": 2}])


def test_write_results_roundtrip_and_validation(tmp_path):
    c = Claim.threshold("acc", "accuracy above 0.5", "accuracy", Estimate(0.7, 0.6, 0.8, 2),
                        threshold=0.5, better="higher", baselines={"chance": 0.5})
    doc = _doc(tmp_path, [c])
    assert doc["claims"][0]["verdict"] == "supported"
    assert load_results(tmp_path) == doc
    assert doc["config"] == {"a": 3} and doc["machine"]["cores"] >= 1
    assert (tmp_path / "metrics.csv").read_text().splitlines()[0] == "seed,x,y"
    assert not list(tmp_path.glob(".*tmp")), "temporary files must be replaced atomically"

    tampered = json.loads((tmp_path / "results.json").read_text())
    tampered["claims"][0]["verdict"] = "not supported"
    with pytest.raises(ValueError, match="numbers give"):
        validate_results(tampered)
    del tampered["git_commit"]
    with pytest.raises(ValueError, match="lacks"):
        validate_results(tampered)


def test_nan_is_stored_as_null_and_is_inconclusive(tmp_path):
    c = Claim.threshold("x", "s", "m", float("nan"), threshold=1.0, better="higher", exact=True)
    doc = _doc(tmp_path, [c])
    assert doc["claims"][0]["method"]["value"] is None
    assert doc["claims"][0]["verdict"] == "inconclusive"
    json.loads((tmp_path / "results.json").read_text())  # standard JSON, no NaN literal


def test_nan_baseline_round_trips_as_inconclusive(tmp_path):
    c = Claim.compare("x", "s", "m", Estimate(1.0, 0.9, 1.1, 3), baseline="b",
                      baselines={"b": float("nan")}, better="higher")
    doc = _doc(tmp_path, [c])
    assert doc["claims"][0]["baselines"]["b"]["value"] is None
    assert doc["claims"][0]["verdict"] == "inconclusive"
    assert load_results(tmp_path)["claims"][0]["verdict"] == "inconclusive"


def test_results_need_claims(tmp_path):
    with pytest.raises(ValueError, match="at least one claim or check"):
        _doc(tmp_path, [])


def test_execute_seeds_times_and_writes(tmp_path):
    seen = {}

    def run(cfg, out_dir=None):
        seen["first"] = np.random.rand()
        seen["out_dir"] = out_dir
        return {"claims": [Claim.threshold("c", "s", "m", 2.0, threshold=1.0, better="higher", exact=True)],
                "metrics": [{"k": 1}], "timings": {"fit_s": 0.1}}

    cfg = OmegaConf.create({"seed": 4, "seeds": 2, "device": "cpu", "experiment": {"name": "quick"}})
    doc = execute("paperworks", run, cfg, tmp_path)
    first = seen["first"]
    execute("paperworks", run, cfg, tmp_path)
    assert seen["first"] == first and seen["out_dir"] == tmp_path
    assert doc["seeds"] == [8, 9] and doc["experiment"] == "quick"  # seed 4 = the fifth block of 2 seeds
    assert set(doc["timings"]) == {"total_s", "fit_s"}
    with pytest.raises(TypeError, match="must return a dict"):
        execute("paperworks", lambda cfg, out_dir=None: None, cfg, tmp_path)


def test_execute_records_the_commit_the_run_started_from(tmp_path, monkeypatch):
    # a commit made while a long run goes on must not be credited to the run
    import paperworks.hydra_glue as glue

    heads = iter(["aaaa", "bbbb"])
    monkeypatch.setattr(glue, "git_commit", lambda source=None: next(heads))
    monkeypatch.setattr("paperworks.results.git_commit", lambda source=None: "bbbb")

    def run(cfg, out_dir=None):
        return {"claims": [Claim.threshold("c", "s", "m", 2.0, threshold=1.0, better="higher", exact=True)]}

    cfg = OmegaConf.create({"seed": 0, "device": "cpu", "experiment": {"name": "quick"}})
    assert execute("paperworks", run, cfg, tmp_path)["git_commit"] == "aaaa"
    assert json.loads((tmp_path / "results.json").read_text())["git_commit"] == "aaaa"


def test_git_commit_scopes_dirtiness_to_the_package(tmp_path, monkeypatch):
    import subprocess

    from paperworks.results import git_commit

    monkeypatch.delenv("PAPERWORKS_GIT_COMMIT", raising=False)
    # a run that did not import paperworks.lm (other tests of this session may have imported it)
    monkeypatch.delitem(sys.modules, "paperworks.lm", raising=False)
    run = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    for d in ("packages/a", "packages/b", "shared/src/paperworks/lm", "shared/tests"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "x.py").write_text("1\n")
    run("add", "-A")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    sha = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert git_commit(tmp_path / "packages" / "a") == sha
    (tmp_path / "packages" / "b" / "new.py").write_text("2\n")  # another package's work does not count
    assert git_commit(tmp_path / "packages" / "a") == sha
    (tmp_path / "packages" / "a" / "new.py").write_text("2\n")
    assert git_commit(tmp_path / "packages" / "a") == sha + "+dirty"
    (tmp_path / "packages" / "a" / "new.py").unlink()
    (tmp_path / "shared" / "tests" / "x.py").write_text("3\n")  # shared's tests do not change a run
    (tmp_path / "shared" / "src" / "paperworks" / "lm" / "x.py").write_text("3\n")  # nor paperworks.lm, unimported
    assert git_commit(tmp_path / "packages" / "a") == sha
    (tmp_path / "shared" / "src" / "paperworks" / "y.py").write_text("3\n")
    assert git_commit(tmp_path / "packages" / "a") == sha + "+dirty"
    outside = tmp_path.parent / f"{tmp_path.name}-norepo"
    outside.mkdir()
    assert git_commit(outside) == "unknown"
    monkeypatch.setenv("PAPERWORKS_GIT_COMMIT", "abc")
    assert git_commit(tmp_path) == "abc"


def _valid(tmp_path):
    c = Claim.compare("p", "s", "m", [1.0, 1.2, 1.1], baseline="b", baselines={"b": [0.5, 0.6, 0.55]},
                      better="higher", paired=True)
    k = Claim.check("k", "an identity", "residual", 0.0, threshold=1e-9, better="lower")
    return _doc(tmp_path, [c, k])


def test_checks_are_stored_apart(tmp_path):
    doc = _valid(tmp_path)
    assert [c["id"] for c in doc["claims"]] == ["p"] and [c["id"] for c in doc["checks"]] == ["k"]
    assert doc["claims"][0]["differences"]["b"]["method"] == "paired-t"
    assert load_results(tmp_path) == doc


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d.update(schema_version=1), "schema_version"),
    (lambda d: d.update(schema_version="2"), "schema_version"),
    (lambda d: d["claims"][0]["method"].update(lower=5.0), "lower|outside"),
    (lambda d: d["claims"][0]["method"].update(value="high"), "number"),
    (lambda d: d["claims"][0].update(verdict="maybe"), "verdict|schema"),
    (lambda d: d["checks"][0].update(id="p"), "unique"),
    (lambda d: d["claims"][0]["rule"].update(kind="vibes"), "schema"),
    (lambda d: d.update(seeds=["a"]), "schema"),
    (lambda d: d["claims"][0].pop("reason"), "schema"),
    (lambda d: d.update(experiment="../etc"), "schema"),
])
def test_validate_enforces_the_schema(tmp_path, mutate, match):
    doc = json.loads(json.dumps(_valid(tmp_path)))
    mutate(doc)
    with pytest.raises(ValueError, match=match):
        validate_results(doc)


def test_user_named_experiments(tmp_path):
    c = Claim.threshold("c", "s", "m", 2.0, threshold=1.0, better="higher", exact=True)
    doc = write_results(tmp_path, package="paperworks", experiment="mydata", config={}, claims=[c], seeds=[0],
                        timings={"total_s": 0.1})
    assert doc["experiment"] == "mydata"
    with pytest.raises(ValueError, match="experiment name"):
        write_results(tmp_path, package="paperworks", experiment="my data", config={}, claims=[c], seeds=[0],
                      timings={})


def test_schema_is_published():
    from jsonschema import Draft202012Validator

    from paperworks.results import SCHEMA

    Draft202012Validator.check_schema(SCHEMA)
