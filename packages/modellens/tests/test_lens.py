import numpy as np
import pandas as pd
import pytest
import torch
from modellens import ModelLens, ranking_metrics
from modellens.baselines import Popularity, RandomRanker
from sklearn.base import clone


def _tau(ranker, sp):
    out = []
    for d in sp.datasets:
        t = sp.test[sp.test["dataset"] == d]
        out.append(ranking_metrics(t["score"].to_numpy(), ranker.predict(list(t["model"]), d, "accuracy"))["tau_w"])
    return float(np.mean(out))


def test_planted_factors_beat_popularity_and_random(planted, planted_fits):
    recs, mm, dm = planted
    lens = [_tau(lens, sp) for sp, lens in planted_fits]
    pop = [_tau(Popularity().fit(sp.train, mm, dm), sp) for sp, _ in planted_fits]
    rnd = [_tau(RandomRanker(s), sp) for s, (sp, _) in enumerate(planted_fits)]
    assert np.mean(lens) > np.mean(pop) + 0.1, (lens, pop)
    assert np.mean(lens) > np.mean(rnd) + 0.1, (lens, rnd)


def test_metric_direction_in_ranking():
    # model "good" has the lowest log-loss and the highest accuracy everywhere
    rows = []
    rng = np.random.default_rng(0)
    for j in range(6):
        for m, q in (("good-1", 0.9), ("mid-1", 0.6), ("bad-1", 0.3)):
            rows.append((m, f"s{j}", "classification", "accuracy", q + 0.01 * rng.random()))
            rows.append((m, f"s{j}", "classification", "log_loss", 1.5 - q + 0.01 * rng.random()))
    recs = pd.DataFrame(rows, columns=["model", "dataset", "task", "metric", "score"])
    lens = ModelLens(dim=8, epochs=120, early_stopping=False, random_state=0).fit(recs)
    assert lens.rank("s0", metric="log_loss")[0] == "good-1"
    assert lens.rank("s0", metric="LOG_LOSS")[-1] == "bad-1"
    assert lens.rank("s0", ["bad-1", "good-1"], "accuracy", k=1) == ["good-1"]


def test_rank_pool_and_export(planted_fits, tmp_path):
    sp, lens = planted_fits[0]
    d = sp.datasets[0]
    ranked = lens.rank(d)
    assert sorted(ranked) == sorted(lens.known_models_)
    s = lens.predict(ranked, d, "accuracy")
    assert np.all(np.diff(s) <= 1e-6)
    assert lens.top_k_pool(d, 3) == ranked[:3]
    pools = lens.export_pools(sp.datasets, 2, tmp_path / "pools.json")
    assert set(pools) == set(sp.datasets) and (tmp_path / "pools.json").exists()


def test_save_and_load_self_contained(planted_fits, tmp_path):
    sp, lens = planted_fits[1]
    path = lens.save(tmp_path / "lens.pt")
    blob = torch.load(path, weights_only=True)
    assert blob["format"] == "modellens-1"
    back = ModelLens.load(path)
    for d in sp.datasets:
        np.testing.assert_allclose(back.predict(lens.known_models_, d, "accuracy"),
                                   lens.predict(lens.known_models_, d, "accuracy"), rtol=1e-5, atol=1e-6)
    # new entities after loading are encoded with the saved encoders
    back.add_entities(pd.DataFrame({"model": ["pp-new"], "family": ["pp"]}),
                      pd.DataFrame({"dataset": ["fresh"], "task": ["classification"],
                                    "description": ["alpha-high beta-low"]}))
    assert len(back.rank("fresh", k=3)) == 3
    with pytest.raises(FileNotFoundError):
        ModelLens.load(tmp_path / "missing.pt")


def test_bad_input(planted, planted_fits):
    recs, mm, dm = planted
    sp, lens = planted_fits[0]
    with pytest.raises(ValueError, match="unseen dataset"):
        lens.rank("never-described", k=2)
    with pytest.raises(ValueError, match="unseen model"):
        lens.predict(["ghost-model"], sp.datasets[0], "accuracy")
    with pytest.raises(ValueError, match="k must be >= 1"):
        lens.rank(sp.datasets[0], k=0)
    with pytest.raises(ValueError, match="no declared direction"):
        lens.predict(lens.known_models_, sp.datasets[0], "vibes")
    with pytest.raises(ValueError, match="name leakage"):
        ModelLens(epochs=1, early_stopping=False).fit(
            sp.train, pd.DataFrame({"model": [f"tuned-on-{sp.datasets[0]}"]}), dm)
    with pytest.raises(ValueError, match="missing column"):
        ModelLens(epochs=1).fit(recs.drop(columns="metric"))
    with pytest.raises(RuntimeError, match="not fitted"):
        ModelLens().rank("x")


@pytest.mark.parametrize("kw, err", [({"dim": 0}, ValueError), ({"dim": "8"}, TypeError),
                                     ({"id_dropout": 1.0}, ValueError), ({"losses": ("hinge",)}, ValueError),
                                     ({"losses": ()}, ValueError), ({"lr": float("nan")}, ValueError),
                                     ({"views": ("eyes",)}, ValueError), ({"text_encoder": 3}, TypeError),
                                     ({"device": "tpu"}, ValueError), ({"epochs": 2.5}, TypeError)])
def test_bad_hyperparameters_at_construction(kw, err):
    with pytest.raises(err):
        ModelLens(**kw)


def test_sklearn_idiom_and_skipped_rows(planted):
    recs, mm, dm = planted
    lens = ModelLens(dim=8, epochs=5, early_stopping=False, random_state=0)
    assert clone(lens).get_params() == lens.get_params()
    bad = recs.astype({"score": object})
    bad.loc[0, "score"] = "oops"
    lens.fit(bad, mm, dm)
    assert lens.skipped_ == 1
    assert len(lens.history_) == 5


def test_callable_text_encoder_and_early_stopping(planted):
    recs, mm, dm = planted

    def enc(texts):  # a stand-in for a local sentence-transformers model
        return np.array([[t.count("high"), t.count("low"), len(t)] for t in texts], dtype=float)

    lens = ModelLens(dim=8, epochs=50, text_encoder=enc, random_state=0).fit(recs, mm, dm)
    assert lens.best_epochs_ in (25, 50) and lens.inner_val_history_
    assert len(lens.rank("set0", k=2)) == 2


def test_fast_predict_equals_the_training_path(planted_fits):
    sp, lens = planted_fits[2]
    t = lens._device_tables("cpu")
    models = lens.known_models_
    mi = torch.tensor([lens.m_index_[m] for m in models])
    d = sp.datasets[0]
    with torch.no_grad():
        ref = lens._score_idx(t, mi, torch.full_like(mi, lens.d_index_[d]),
                              torch.full_like(mi, lens.metric_index_["accuracy"])).numpy()
    np.testing.assert_allclose(lens.predict(models, d, "accuracy"), ref, atol=1e-5)


def test_device_auto_resolves(planted):
    recs, mm, dm = planted
    lens = ModelLens(dim=8, epochs=3, early_stopping=False, device="auto", random_state=0).fit(recs, mm, dm)
    assert lens.device_ == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(planted, tmp_path):
    recs, mm, dm = planted
    kw = dict(dim=16, epochs=30, early_stopping=False, random_state=0)
    cpu = ModelLens(device="cpu", **kw).fit(recs, mm, dm)
    gpu = ModelLens(device="cuda", **kw).fit(recs, mm, dm)
    a, b = cpu.predict(cpu.known_models_, "set0", "accuracy"), gpu.predict(cpu.known_models_, "set0", "accuracy")
    np.testing.assert_allclose(a, b, atol=1e-3)
    back = ModelLens.load(gpu.save(tmp_path / "g.pt"), device="cuda")
    np.testing.assert_allclose(back.predict(cpu.known_models_, "set0", "accuracy"), b, atol=1e-5)
