import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modellens import cold_start_split, load_records
from modellens.records import check_name_leakage, higher_is_better, normalise, validate_records


def test_metric_direction_table_is_case_insensitive():
    assert higher_is_better("Accuracy") and higher_is_better("F1") and higher_is_better("r2")
    assert not higher_is_better("RMSE") and not higher_is_better("log_loss") and not higher_is_better("mae")
    with pytest.raises(ValueError, match="no declared direction"):
        higher_is_better("bogomips")
    assert higher_is_better("bogomips", {"BogoMIPS": True})


def test_lowest_log_loss_ranks_first(tiny_records):
    df = normalise(tiny_records)
    ll = df[df["metric"] == "log_loss"]
    assert ll.loc[ll["z"].idxmax(), "model"] == "a-1"  # log-loss 0.2, the lowest
    acc = df[df["metric"] == "accuracy"]
    assert acc.loc[acc["z"].idxmax(), "model"] == "a-1"  # accuracy 0.9, the highest
    assert np.allclose(df.groupby(["dataset", "metric"])["z"].mean(), 0)


def test_missing_columns_and_duplicates(tiny_records):
    with pytest.raises(ValueError, match="missing column"):
        validate_records(tiny_records.drop(columns="task"))
    dup = pd.concat([tiny_records, tiny_records.iloc[[0]].assign(metric="LOG_LOSS")])
    with pytest.raises(ValueError, match="duplicate"):
        validate_records(dup)
    with pytest.raises(ValueError, match="no declared direction"):
        validate_records(tiny_records.assign(metric="speedup"))
    with pytest.raises(TypeError, match="DataFrame"):
        validate_records([1, 2])


def test_non_numeric_scores_are_skipped_and_counted(tmp_path, tiny_records):
    bad = tiny_records.astype({"score": object})
    bad.loc[1, "score"] = "n/a"
    bad.loc[4, "score"] = "inf"
    path = tmp_path / "r.csv"
    bad.to_csv(path, index=False)
    df, report = load_records(path, return_report=True)
    assert report["skipped"] == 2 and report["lines"] == [3, 6]
    assert len(df) == 4 and df["score"].dtype == float


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["new_model", "new_dataset", "new_pair", "completion"]), st.integers(0, 10_000),
       st.integers(5, 12), st.integers(5, 12), st.floats(0.1, 0.5))
def test_no_held_out_entity_crosses_a_split(mode, seed, n_models, n_datasets, frac):
    rng = np.random.default_rng(seed)
    recs = pd.DataFrame([(f"m{i}", f"set{j}", "classification", "accuracy", rng.random())
                         for i in range(n_models) for j in range(n_datasets) if rng.random() < 0.7],
                        columns=["model", "dataset", "task", "metric", "score"])
    sp = cold_start_split(recs, mode, frac=frac, random_state=seed)
    assert not sp.train["model"].isin(sp.models).any()
    assert not sp.train["dataset"].isin(sp.datasets).any()
    if mode == "new_model":
        assert set(sp.test["model"]) <= set(sp.models) and sp.models
    if mode in ("new_dataset", "new_pair"):
        assert set(sp.test["dataset"]) <= set(sp.datasets) and sp.datasets
    if mode == "completion":
        cells = set(zip(sp.train["model"], sp.train["dataset"]))
        assert not cells & set(zip(sp.test["model"], sp.test["dataset"]))
    assert len(sp.train) + len(sp.test) <= len(recs)
    train, test = sp                                          # unpacks like train_test_split
    assert train is sp.train and test is sp.test


def test_split_bad_arguments(tiny_records):
    with pytest.raises(ValueError, match="mode must be one of"):
        cold_start_split(tiny_records, "by_cell")
    with pytest.raises(ValueError, match="frac"):
        cold_start_split(tiny_records, "new_model", frac=1.5)


def test_name_leakage_is_an_error():
    check_name_leakage(["rf-n200-d8", "knn-k5"], ["wine", "clf01-n150-f8"])
    with pytest.raises(ValueError, match="name leakage"):
        check_name_leakage(["resnet-finetuned-wine", "knn-k5"], ["wine"])
    recs = pd.DataFrame({"model": ["bert-on-set1", "b", "c", "bert-on-set1", "b", "c"],
                         "dataset": ["set1"] * 3 + ["set2"] * 3, "task": "classification", "metric": "accuracy",
                         "score": [.1, .2, .3, .4, .5, .6]})
    with pytest.raises(ValueError, match="name leakage"):
        for seed in range(20):
            cold_start_split(recs, "new_dataset", frac=0.5, random_state=seed)
