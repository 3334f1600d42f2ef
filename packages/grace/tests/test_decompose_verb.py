"""The ``decompose`` verb on a user's .npz (in-process, via the verb's own Hydra config)."""

import csv

import numpy as np
import pytest
from grace import GRACE
from grace.verbs import run_decompose

from paperworks.hydra_glue import ConfigError, compose

FAST = ["grace.epochs=3", "grace.hidden=16", "device=cpu"]


def _files(tmp_path, n=40, d=8, C=5):
    rng = np.random.default_rng(0)
    T = rng.normal(size=(C, d))
    Z = rng.random((n, C)) @ T + 0.1 * rng.normal(size=(n, d))
    Z[3] = np.nan  # skipped and counted
    names = np.array([f"c{j}" for j in range(C)])
    np.savez(tmp_path / "emb.npz", image_embeddings=Z)
    np.savez(tmp_path / "concepts.npz", concept_embeddings=T, concepts=names)
    return tmp_path / "emb.npz", tmp_path / "concepts.npz", names


def test_decompose_fits_writes_and_reloads(tmp_path):
    emb, dic, names = _files(tmp_path)
    out = tmp_path / "run"
    out.mkdir()
    cfg = compose("grace", [f"data.path={emb}", f"dictionary.path={dic}", "l0=2", *FAST], config_name="decompose")
    res = run_decompose(cfg, out)
    m = res["metrics"][0]
    assert (m["rows"], m["kept_rows"], m["skipped_rows"], m["l0"], m["mean_l0"]) == (40, 39, 1, 2, 2.0)
    assert res["checks"][0].verdict == "supported"
    with np.load(out / "coefficients.npz") as f:
        C, rows = f["coefficients"], f["rows"]
        assert C.shape == (39, 5) and C.min() >= 0 and ((C > 0).sum(1) == 2).all()
        assert 3 not in rows and list(f["concepts"]) == list(names) and list(f["skipped_rows"]) == [3]
    with open(out / "top_concepts.csv", encoding="utf-8") as f:
        top = list(csv.DictReader(f))
    assert len(top) == 39 * 2 and {t["concept"] for t in top} <= set(names)
    assert float(top[0]["coefficient"]) >= float(top[1]["coefficient"])
    # the saved model decomposes again without fitting, to the same coefficients
    out2 = tmp_path / "run2"
    out2.mkdir()
    res2 = run_decompose(compose("grace", [f"data.path={emb}", f"model={out / 'grace.pt'}", "device=cpu"],
                                 config_name="decompose"), out2)
    assert res2["metrics"][0]["fitted"] is False
    with np.load(out2 / "coefficients.npz") as f:
        np.testing.assert_allclose(f["coefficients"], C, atol=1e-6)
    assert isinstance(GRACE.load(out2 / "grace.pt"), GRACE)


def test_decompose_bad_input_errors(tmp_path):
    emb, dic, _ = _files(tmp_path)

    def go(*ov):
        return run_decompose(compose("grace", [*ov, *FAST], config_name="decompose"), None)

    with pytest.raises(ConfigError, match="needs data.path"):
        go()
    with pytest.raises(ConfigError, match=r"lacks the arrays \['concept_embeddings', 'concepts'\]"):
        go(f"data.path={emb}")  # no dictionary in the file, none given
    with pytest.raises(ConfigError, match="l0"):
        go(f"data.path={emb}", f"dictionary.path={dic}", "l0=0")
    with pytest.raises(ConfigError, match="exceeds"):
        go(f"data.path={emb}", f"dictionary.path={dic}", "l0=6")
    np.savez(tmp_path / "wide.npz", concept_embeddings=np.ones((5, 9)), concepts=np.array(list("abcde")))
    with pytest.raises(ConfigError, match="width 8 .* width 9"):
        go(f"data.path={emb}", f"dictionary.path={tmp_path / 'wide.npz'}")
    np.savez(tmp_path / "nan.npz", image_embeddings=np.full((4, 8), np.nan))
    with pytest.raises(ConfigError, match="4 rows with NaN"):
        go(f"data.path={tmp_path / 'nan.npz'}", f"dictionary.path={dic}")
