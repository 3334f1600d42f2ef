import numpy as np
import pandas as pd
import pytest
from driftbench import cohen_kappa, complexity_slope, judge_validation, kbv_rate
from driftbench.analysis import summary


def planted_frame():
    """Planted transcripts: 10 runs of 4 turns with known last-turn recall/adherence and a known slope."""
    rows = []
    rng = np.random.default_rng(0)
    last = [(1.0, 2), (0.9, 1), (0.8, 2), (0.79, 0), (1.0, 3), (1.0, 4), (0.5, 1), (0.85, 2.9), (1.0, 3), (0.2, 4)]
    for r, (rec, adh) in enumerate(last):
        for t in range(1, 5):
            words = int(rng.integers(50, 300))
            rows.append({"brief_id": f"b{r}", "condition": "pressure", "turn": t, "rep": 0,
                         "recall": rec if t == 4 else 0.0, "adherence": adh if t == 4 else 4,
                         "complexity": 3 + 0.5 * t + 0.01 * words, "words": words, "copied": r == 0})
    return pd.DataFrame(rows)


def test_kbv_exact_on_planted_transcripts():
    df = planted_frame()
    # runs with recall >= 0.8 and adherence < 3 on the LAST turn: r0, r1, r2, r7
    assert kbv_rate(df) == pytest.approx(4 / 10)
    assert kbv_rate(df, recall_min=0.9) == pytest.approx(2 / 10)
    assert kbv_rate(df, adherence_max=4) == pytest.approx(6 / 10)
    s = summary(df, by=("condition",)).iloc[0]
    assert s["drift"] == pytest.approx(6 / 10) and s["kbv_copied"] == pytest.approx(1 / 10)


def test_slope_exact_with_and_without_word_control():
    df = planted_frame()
    assert complexity_slope(df, control_words=True) == pytest.approx(0.5, abs=1e-9)
    raw = complexity_slope(df, control_words=False)
    ref = np.polyfit(df["turn"], df["complexity"], 1)[0]
    assert raw == pytest.approx(ref, abs=1e-9)


def test_kappa_matches_sklearn():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(1)
    for _ in range(5):
        a = rng.integers(0, 3, 200)
        b = np.where(rng.random(200) < 0.6, a, rng.integers(0, 3, 200))
        assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_judge_validation_counts():
    truth = np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)
    judged = np.array([1, 1, 0, 0, 0, 0, 0, 1], bool)
    v = judge_validation(truth, judged)
    assert (v["violations"], v["detected"], v["missed"], v["false_alarms"]) == (4, 2, 2, 1)
    assert v["miss_rate"] == 0.5 and v["specificity"] == 0.75


def test_bad_inputs():
    with pytest.raises(ValueError, match="missing column"):
        kbv_rate(pd.DataFrame({"recall": [1.0]}))
    with pytest.raises(TypeError, match="DataFrame"):
        kbv_rate([1, 2])
    with pytest.raises(ValueError, match="recall_min"):
        kbv_rate(planted_frame(), recall_min="0.8")
