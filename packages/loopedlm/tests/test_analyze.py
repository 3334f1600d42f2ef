import csv
import json

import pytest
from loopedlm.verbs import run_analyze

from paperworks.hydra_glue import ConfigError, compose


@pytest.fixture
def saved(small_model, tmp_path):
    d = tmp_path / "model"
    small_model.save_pretrained(d)  # vocab_size 16 = len(loopedlm.data.CHARS)
    return d


def _cfg(*overrides):
    return compose("loopedlm", ["device=cpu", "num_recurrences=6", *overrides], config_name="analyze")


def test_analyze_verb_on_a_saved_model(saved, tmp_path):
    """The ``analyze`` verb's config and run (in-process; the console script wiring is the same hydra_cli)."""
    p = tmp_path / "prompts.txt"
    p.write_text("12+7=19\n\n3*4=12 x\nab\n")  # a blank line, one unknown char, one all-unknown prompt
    out_dir = tmp_path / "run"
    out = run_analyze(_cfg(f"model={saved}", f"text.path={p}"), out_dir)
    s = out["extra"]
    assert (s["prompts"], s["analysed"], s["too_short"], s["skipped_chars"]) == (3, 2, 1, 3)
    assert s["skipped_by_char"] == {"x": 1, "a": 1, "b": 1}
    assert s["tokens"] == 14 and sum(s["limit_counts"].values()) == 14
    assert sum(s["limit_rates"].values()) == pytest.approx(1.0)
    assert len(s["colsum_per_recurrence_layer"]) == 6 and len(s["colsum_per_recurrence_layer"][0]) == 3
    fps = json.loads((out_dir / "fixed_point_metrics.json").read_text())
    assert len(fps) == 2 and len(fps[0]["successive"]) == 5 and len(fps[0]["successive"][0]) == 3
    with open(out_dir / "colsum.csv") as f:
        assert len(list(csv.DictReader(f))) == 2 * 6 * 3
    with open(out_dir / "limits.csv") as f:
        labels = [r["limit"] for r in csv.DictReader(f)]
    assert len(labels) == 14 and set(labels) <= {"fixed_point", "orbit", "slider", "unresolved"}
    inline = run_analyze(_cfg(f"model={saved}", 'text.lines=["12+7=19"]'), None)
    assert inline["metrics"][0]["tail"] == pytest.approx(out["metrics"][0]["tail"])


def test_analyze_verb_bad_inputs(saved, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    with pytest.raises(ConfigError, match="no such directory"):
        run_analyze(_cfg(f"model={tmp_path / 'missing'}", f"text.path={empty}"))
    with pytest.raises(ConfigError, match="no prompts"):
        run_analyze(_cfg(f"model={saved}", f"text.path={empty}"))
    with pytest.raises(ConfigError, match="num_recurrences"):
        run_analyze(_cfg(f"model={saved}", 'text.lines=["1+1=2"]', "num_recurrences=0"))
    with pytest.raises(ConfigError, match="no prompt has >= 2"):
        run_analyze(_cfg(f"model={saved}", 'text.lines=["abc"]'))
    with pytest.raises(ConfigError, match="exactly one"):
        run_analyze(_cfg(f"model={saved}"))
