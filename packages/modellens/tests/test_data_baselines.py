import numpy as np
import pandas as pd
import pytest
from modellens import load_mini_leaderboard
from modellens.baselines import MatrixFactorisation, NeighbourRanker, Popularity, run_each_candidate
from modellens.data import MODEL_NAMES, generate_leaderboard, make_estimator, model_meta, model_size
from scipy.stats import spearmanr


def test_shipped_leaderboard_shape():
    full = load_mini_leaderboard(observed_only=False)
    obs = load_mini_leaderboard()
    assert full["model"].nunique() == 40 and full["dataset"].nunique() == 60
    cells = full.groupby(["model", "dataset"])["observed"].max().mean()
    assert 0.25 < cells < 0.35
    assert set(obs.columns) == {"model", "dataset", "task", "metric", "score"}
    assert {"iris", "wine", "breast_cancer", "digits", "diabetes"} <= set(full["dataset"])
    assert set(full["metric"]) == {"accuracy", "f1_macro", "log_loss", "r2", "rmse"}


def test_a_slice_of_the_shipped_csv_regenerates():
    models = ["linear-a1", "knn-k5", "tree-d4", "rf-n10-d4", "prior-mean"]
    datasets = ["iris", "clf01-n150-f8", "reg03-n300-f4"]
    new = generate_leaderboard(models, datasets, progress=False)
    old = load_mini_leaderboard(observed_only=False)
    m = new.merge(old, on=["model", "dataset", "task", "metric"], suffixes=("_new", "_old"))
    assert len(m) == len(new) == 5 * (2 * 3 + 2)
    np.testing.assert_allclose(m["score_new"], m["score_old"], rtol=1e-4, atol=1e-5)
    assert (m["observed_new"] == m["observed_old"]).all()


def test_model_names_parse():
    mm = model_meta()
    assert len(mm) == len(MODEL_NAMES) == 40
    assert model_size("rf-n200-d8") > model_size("rf-n10-d4")
    with pytest.raises(ValueError, match="unknown model name"):
        make_estimator("xgb-n100", "classification")


def test_matrix_factorisation_recovers_low_rank(rng):
    u, v = rng.normal(size=(10, 2)), rng.normal(size=(12, 2))
    S = u @ v.T
    rows = [(f"m{i}", f"d{j}", "regression", "r2", S[i, j]) for i in range(10) for j in range(12)
            if (i + j) % 4]
    recs = pd.DataFrame(rows, columns=["model", "dataset", "task", "metric", "score"])
    mf = MatrixFactorisation(rank=2, reg=1.0, iters=60).fit(recs)
    # within each dataset the predicted order of all 10 models follows the planted scores
    rho = [spearmanr(mf.predict([f"m{i}" for i in range(10)], f"d{j}"), S[:, j]).statistic for j in range(12)]
    assert np.mean(rho) > 0.9
    shuffled = MatrixFactorisation(rank=2, reg=1.0).fit(recs.assign(score=rng.permutation(recs["score"].to_numpy())))
    rho0 = [spearmanr(shuffled.predict([f"m{i}" for i in range(10)], f"d{j}"), S[:, j]).statistic for j in range(12)]
    assert np.mean(rho0) < 0.5


def test_popularity_and_knn(planted):
    recs, mm, dm = planted
    pop = Popularity().fit(recs, mm, dm)
    means = recs.assign(z=0).groupby("model").size()
    assert len(pop.predict(list(means.index))) == len(means)
    assert pop.predict(["pp-unseen"])[0] == pytest.approx(pop.family_mean_["pp"])
    knn = NeighbourRanker("text", k_datasets=3).fit(recs, mm, dm)
    s = knn.predict(list(mm["model"]), "set0", "accuracy")
    assert np.all(np.isfinite(s))
    with pytest.raises(ValueError, match="features"):
        NeighbourRanker("names")


def test_run_each_candidate_on_iris():
    res = run_each_candidate("iris", ["linear-a1", "prior-mean", "knn-k5"], frac=0.3)
    acc = res["scores"]["accuracy"]
    assert acc[0] > acc[1] and acc[2] > acc[1]
    assert np.all(np.isfinite(res["logme"])) and np.all(np.isfinite(res["leep"]))
    assert res["leep"][0] > res["leep"][1] and res["seconds"] > 0
