import numpy as np
import pytest
from sklearn.base import clone
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks
from tcgap import NCM, SLDA, FeCAM, RanPAC, TaskHeadCE, TheoryScheduleCE

PROTOTYPES = [NCM(), SLDA(), FeCAM(), RanPAC(n_components=200)]
ALL = [*PROTOTYPES, TaskHeadCE(n_steps=50)]


def _incremental(est, tasks):
    m = clone(est)
    for X, y in tasks:
        m.partial_fit(X, y)
    return m


@pytest.mark.parametrize("est", PROTOTYPES, ids=lambda e: type(e).__name__)
def test_prototype_class_il_equals_joint(est, gauss):
    inc = _incremental(est, gauss["train"])
    joint = clone(est).fit(*gauss["train_xy"])
    X = gauss["test_xy"][0]
    np.testing.assert_array_equal(inc.predict(X), joint.predict(X))
    np.testing.assert_allclose(inc.class_scores(X), joint.class_scores(X), rtol=1e-8, atol=1e-8)


def test_ce_heads_class_il_differs_from_joint(gauss):
    inc = _incremental(TaskHeadCE(), gauss["train"])
    joint = TaskHeadCE().fit(*gauss["train_xy"])
    X, y = gauss["test_xy"]
    assert np.mean(inc.predict(X) != joint.predict(X)) > 0.05


def test_slda_joint_matches_sklearn_lda(gauss):
    X, y = gauss["train_xy"]
    ours = SLDA(shrinkage=0.2).fit(X, y)
    ref = LinearDiscriminantAnalysis(solver="lsqr", shrinkage=0.2, priors=np.full(10, 0.1)).fit(X, y)
    Xt = gauss["test_xy"][0]
    np.testing.assert_array_equal(ours.predict(Xt), ref.predict(Xt))


def test_ncm_is_euclidean_nearest_mean(gauss):
    X, y = gauss["train_xy"]
    m = NCM().fit(X, y)
    means = np.stack([X[y == c].mean(0) for c in range(10)])
    Xt = gauss["test_xy"][0]
    np.testing.assert_array_equal(m.predict(Xt), np.argmin(((Xt[:, None] - means) ** 2).sum(-1), 1))


def test_earlier_heads_frozen_and_task_il(gauss):
    m = TaskHeadCE(n_steps=50)
    m.partial_fit(*gauss["train"][0])
    w0 = m.coef_.copy()
    m.partial_fit(*gauss["train"][1])
    np.testing.assert_array_equal(m.coef_[:2], w0)
    Xt, yt = gauss["test"][1]
    pred = m.predict_task_il(Xt, np.ones(len(yt), int))
    assert set(np.unique(pred)) <= {2, 3}


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_save_load_roundtrip(est, gauss, tmp_path):
    m = _incremental(est, gauss["train"][:3])
    m.save(tmp_path / "m.pt")
    back = type(est).load(tmp_path / "m.pt")
    Xt = gauss["test_xy"][0]
    np.testing.assert_allclose(back.class_scores(Xt), m.class_scores(Xt))
    assert [t.tolist() for t in back.tasks_] == [t.tolist() for t in m.tasks_]
    back.partial_fit(*gauss["train"][3])  # keeps learning from the loaded state
    np.testing.assert_array_equal(back.predict(Xt), _incremental(est, gauss["train"][:4]).predict(Xt))
    with pytest.raises(ValueError, match="holds a"):
        (NCM if type(est) is not NCM else SLDA).load(tmp_path / "m.pt")


def test_bad_input(gauss):
    X, y = gauss["train"][0]
    m = SLDA().partial_fit(X, y)
    with pytest.raises(ValueError, match="one task only"):
        m.partial_fit(X, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        NCM().fit(np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X), y)
    for est, match in ((SLDA(shrinkage="oas"), "shrinkage"), (FeCAM(shrinkage=-1.0), "shrinkage"),
                       (RanPAC(ridge=0.0), "ridge"), (TaskHeadCE(solver="adam"), "solver"),
                       (TaskHeadCE(C=float("nan")), "C"), (TaskHeadCE(n_steps=2.5), "n_steps"),
                       (SLDA(shrinkage=None), "more samples than dimensions")):
        with pytest.raises(ValueError, match=match):
            est.fit(X[:8], y[:8])
    with pytest.raises(ValueError, match="task indices"):
        m.predict_task_il(X, np.full(len(X), 3))


def test_works_with_sklearn_model_selection(gauss):
    X, y = gauss["train_xy"]
    assert cross_val_score(SLDA(), X, y, cv=3).mean() > 0.5
    gs = GridSearchCV(FeCAM(), {"shrinkage": [0.1, "ledoit_wolf"]}, cv=3).fit(X, y)
    assert gs.best_params_["shrinkage"] in (0.1, "ledoit_wolf")


def test_theory_schedule_records_its_choices(gauss):
    m = TheoryScheduleCE(gamma=8.0, k_max=60)
    for X, y in gauss["train"][:2]:
        m.partial_fit(X, y)
    assert len(m.schedule_) == 2
    for s in m.schedule_:
        assert 1 <= s["steps"] <= 60 and s["lr"] == pytest.approx(1 / s["L_hat"]) and s["L_hat"] > 0
    with pytest.raises(ValueError, match="gamma"):
        TheoryScheduleCE(gamma=-1.0).fit(*gauss["train"][0])


# scikit-learn's estimator checks; the ones that re-learn classes with partial_fit contradict class-IL's
# disjoint tasks (a class in two tasks is refused by design)
_EXPECTED = {"check_classifiers_partial_fit": "a class may appear in one task only",
             "check_fit_score_takes_y": "calls partial_fit twice on the same classes: a class may appear in one task only"}


@parametrize_with_checks([NCM(), SLDA(), FeCAM(), RanPAC(n_components=50), TaskHeadCE(n_steps=20)],
                         expected_failed_checks=lambda est: _EXPECTED)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_softmax_head_matches_sklearn_logistic_regression(rng):
    from sklearn.linear_model import LogisticRegression
    from tcgap.learners import train_softmax

    X, y = rng.normal(size=(80, 4)), rng.integers(0, 3, 80)
    W, b = train_softmax(X, y, 3, C=0.5, n_steps=500)
    ref = LogisticRegression(C=0.5, tol=1e-10, max_iter=2000).fit(X, y)
    np.testing.assert_allclose(W - W.mean(0), ref.coef_ - ref.coef_.mean(0), atol=1e-4)
