import numpy as np
import pytest
from robustpredict import (
    CustomProblem,
    FollowThePrediction,
    HouseFlipping,
    PostedPricing,
    RobustPolicy,
    SkiRental,
    conformal_epsilon,
    epsilon_for,
    estimate_eta,
    excess_loss,
    robust_gap,
    theoretical_bound,
)
from scipy import optimize
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression


@pytest.mark.parametrize("eta", [1e-4, 1e-2, 0.3, 3.0, 30.0])
@pytest.mark.parametrize("jump", [0.0, 0.5, 9.0])
def test_epsilon_for_minimises_the_bound(eta, jump):
    eps = epsilon_for(eta, jump=jump)
    r = optimize.minimize_scalar(lambda e: theoretical_bound(eta, e, jump=jump), bounds=(1e-9, 1e3),
                                 method="bounded", options={"xatol": 1e-12})
    assert theoretical_bound(eta, eps, jump=jump) <= r.fun * (1 + 1e-9)
    np.testing.assert_allclose(eps, r.x, rtol=1e-4)


def test_bound_rate_is_two_thirds():
    etas = np.geomspace(1e-6, 1e-4, 5)
    b = [theoretical_bound(e, epsilon_for(e, jump=2.0), jump=2.0) for e in etas]
    slope = np.polyfit(np.log(etas), np.log(b), 1)[0]
    assert abs(slope - 2 / 3) < 0.01
    # and the leading constant 3·J^{1/3}
    np.testing.assert_allclose(b[0] / etas[0] ** (2 / 3), 3 * 2.0 ** (1 / 3), rtol=1e-2)


def test_estimate_eta(rng):
    r = rng.normal(0, 0.2, 20001)
    np.testing.assert_allclose(estimate_eta(r), 0.2, rtol=0.03)
    q = estimate_eta(r, "conformal", alpha=0.1)
    np.testing.assert_allclose(q, 0.2 * 1.6449, rtol=0.05)  # |N(0, σ)| 90% quantile
    # the conformal radius covers at least 1 - α of fresh residuals
    assert np.mean(np.abs(rng.normal(0, 0.2, 20000)) <= q) >= 0.89
    with pytest.raises(ValueError, match="method"):
        estimate_eta(r, "mad")
    with pytest.raises(ValueError, match="residuals"):
        estimate_eta([np.nan, 1.0])


@pytest.mark.parametrize("problem", [PostedPricing(), SkiRental(5.0), HouseFlipping(5.0, 0.5)],
                         ids=["pricing", "ski", "house"])
@pytest.mark.parametrize("noise", ["gaussian", "two_point", "student"])
def test_measured_loss_is_under_the_bound(problem, noise, rng):
    n = 20000
    X = rng.normal(size=(n, 3))
    f = 5 + X[:, 0]
    for eta in (0.003, 0.05, 0.5):
        e = {"gaussian": rng.normal(0, eta, n), "two_point": eta * rng.choice([-1.0, 1.0], n),
             "student": eta * rng.standard_t(3, n) / np.sqrt(3)}[noise]
        y = np.maximum(f + e, 0)
        for eps in (epsilon_for(eta, jump=problem.jump(y)), 0.5 * eta, 3 * eta):
            pol = RobustPolicy(problem, lambda X: 5 + X[:, 0], epsilon=eps)
            a = pol.act(X)
            measured = excess_loss(pol, X, y)
            jump = a.max() if isinstance(problem, PostedPricing) else problem.jump()
            eta_emp = np.sqrt(np.mean((y - f) ** 2))
            assert measured <= theoretical_bound(eta_emp, eps, jump=jump) + 1e-12


def test_robust_beats_ftp_and_falls_with_eta(rng):
    """The smoke assertion of the brief: posted pricing, 10^4 samples, 3 η values."""
    n, prob = 10000, PostedPricing()
    X = rng.normal(size=(n, 10))
    f = 5 + X[:, 0]
    losses = []
    for eta in (0.3, 0.03, 0.003):
        y = f + eta * rng.choice([-1.0, 1.0], n)
        ftp = excess_loss(FollowThePrediction(prob, lambda X: 5 + X[:, 0]), X, y)
        rob = excess_loss(RobustPolicy(prob, lambda X: 5 + X[:, 0], eta=eta).fit(X[:2000], y[:2000]), X, y)
        assert rob < ftp
        losses.append(rob)
    assert losses[0] > losses[1] > losses[2]


def test_auto_epsilon_from_heldout(rng):
    n = 5000
    X = rng.normal(size=(n, 2))
    y = 5 + X[:, 0] + rng.normal(0, 0.1, n)
    pol = RobustPolicy(SkiRental(5.0), lambda X: 5 + X[:, 0]).fit(X, y)
    np.testing.assert_allclose(pol.eta_, 0.1, rtol=0.05)
    np.testing.assert_allclose(pol.epsilon_, epsilon_for(pol.eta_, jump=5.0))
    oracle = RobustPolicy(SkiRental(5.0), lambda X: 5 + X[:, 0], eta=0.1)
    np.testing.assert_allclose(oracle.act(X[:5]), SkiRental(5.0).robust_action(5 + X[:5, 0], epsilon_for(0.1, jump=5.0)))
    with pytest.raises(NotFittedError, match="fit"):
        RobustPolicy(SkiRental(5.0), lambda X: X[:, 0]).act(X)


def test_sklearn_predictor_plumbing(rng):
    X = rng.normal(size=(500, 4))
    y = 5 + X @ np.array([1.0, -0.5, 0.2, 0.0]) + rng.normal(0, 0.05, 500)
    model = LinearRegression().fit(X[:300], y[:300])
    pol = RobustPolicy(PostedPricing(), model).fit(X[300:400], y[300:400])
    a = pol.act(X[400:])
    np.testing.assert_allclose(a, np.maximum(model.predict(X[400:]) - pol.epsilon_, 0))
    assert a.shape == (100,)
    # a column-vector predictor is accepted
    pol2 = RobustPolicy(PostedPricing(), lambda X: model.predict(X)[:, None], epsilon=pol.epsilon_)
    np.testing.assert_allclose(pol2.act(X[400:]), a)


def test_robust_gap_calculator():
    y_hat = np.linspace(0, 10, 501)
    for prob in (PostedPricing(), SkiRental(5.0), HouseFlipping(5.0, 0.5)):
        np.testing.assert_allclose(robust_gap(prob, 0.25, y_hat), 0.5, atol=1e-9)


def test_bad_inputs(rng):
    X = rng.normal(size=(10, 2))
    with pytest.raises(ValueError, match="shape"):
        FollowThePrediction(PostedPricing(), lambda X: np.ones(3)).act(X)
    with pytest.raises(ValueError, match="NaN"):
        FollowThePrediction(PostedPricing(), lambda X: np.full(len(X), np.nan)).act(X)
    with pytest.raises(ValueError, match="epsilon"):
        RobustPolicy(PostedPricing(), lambda X: X[:, 0], epsilon=-0.1)
    with pytest.raises(ValueError, match="epsilon"):
        RobustPolicy(PostedPricing(), lambda X: X[:, 0], epsilon="big")
    with pytest.raises(TypeError, match="predictor"):
        RobustPolicy(PostedPricing(), 3.0)
    with pytest.raises(TypeError, match="problem"):
        RobustPolicy("pricing", lambda X: X[:, 0])
    with pytest.raises(ValueError, match="eta"):
        theoretical_bound(-1.0, 0.1, jump=1.0)
    with pytest.raises(ValueError, match="y must be >= 0"):
        excess_loss(FollowThePrediction(PostedPricing(), lambda X: X[:, 0]), X, -np.ones(10))
    with pytest.raises(ValueError, match="y must be >= 0"):
        RobustPolicy(SkiRental(5.0), lambda X: X[:, 0]).fit(X, -np.ones(10))
    with pytest.raises(ValueError, match="y has"):
        excess_loss(FollowThePrediction(PostedPricing(), lambda X: X[:, 0]), X, np.ones(3))


def _conformal_objective(r, eps, jump, lipschitz, gap_slope):
    a = np.abs(r)
    return gap_slope * eps + lipschitz * np.mean(np.maximum(a - eps, 0)) + jump * (np.sum(a > eps) + 1) / (a.size + 1)


@pytest.mark.parametrize("jump, lipschitz, gap_slope", [(5.0, 1.0, 2.0), (0.5, 1.0, 2.0), (0.0, 3.0, 1.5), (8.0, 0.0, 2.0)])
def test_conformal_epsilon_is_the_exact_minimiser(rng, jump, lipschitz, gap_slope):
    for r in (rng.normal(0, 0.3, 301), rng.standard_t(3, 200) * 0.1, np.repeat([0.1, -0.2, 0.4], 20)):
        eps, log = conformal_epsilon(r, jump=jump, lipschitz=lipschitz, gap_slope=gap_slope, log=True)
        # brute force: a fine grid plus the order statistics (the objective's breakpoints)
        cand = np.concatenate([np.linspace(0, 1.5 * np.abs(r).max(), 3001), np.abs(r)])
        a = np.abs(r)[None, :]
        objs = (gap_slope * cand + lipschitz * np.maximum(a - cand[:, None], 0).mean(1)
                + jump * ((a > cand[:, None]).sum(1) + 1) / (a.size + 1))
        assert log["objective"] == pytest.approx(_conformal_objective(r, eps, jump, lipschitz, gap_slope), abs=1e-12)
        assert log["objective"] <= min(objs) + 1e-12
        assert log["alpha"] == pytest.approx((np.sum(np.abs(r) > eps) + 1) / (r.size + 1))


@pytest.mark.parametrize("jump", [0.5, 2.0, 8.0])
def test_conformal_epsilon_is_consistent_for_the_population_minimiser(rng, jump):
    """With many Gaussian residuals ε̂ approaches the minimiser of the population objective
    g·ε + L·E(|e| - ε)_+ + J·P(|e| > ε) (closed form for |N(0, σ)|, minimised by scipy)."""
    from scipy import stats

    s = 0.1

    def pop(e):
        z = e / s
        return 2 * e + 2 * (s * stats.norm.pdf(z) - e * stats.norm.sf(z)) + jump * 2 * stats.norm.sf(z)

    best = optimize.minimize_scalar(pop, bounds=(0, 10 * s), method="bounded", options={"xatol": 1e-10})
    eps = conformal_epsilon(rng.normal(0, s, 50000), jump=jump)
    assert pop(eps) <= best.fun * 1.01
    np.testing.assert_allclose(eps, best.x, rtol=0.05)
    # a larger jump asks for a wider ball
    r = rng.normal(0, s, 2000)
    assert conformal_epsilon(r, jump=10.0) >= conformal_epsilon(r, jump=1.0) >= conformal_epsilon(r, jump=0.1)


@pytest.mark.parametrize("noise", ["gaussian", "student"])
def test_conformal_epsilon_beats_the_markov_rule_on_light_tails(rng, noise):
    """Not a law, but what the rule is for: with errors far from Markov's worst case, the plug-in tail
    gives a smaller ε and a smaller test regret than ε = epsilon_for(η)."""
    n, prob = 4000, PostedPricing()
    X = rng.normal(size=(3 * n, 2))
    e = rng.normal(0, 0.1, 3 * n) if noise == "gaussian" else 0.1 * rng.standard_t(3, 3 * n) / np.sqrt(3)
    y = np.maximum(5 + X[:, 0] + e, 0)
    auto = RobustPolicy(prob, lambda X: 5 + X[:, 0], "auto").fit(X[:n], y[:n])
    conf = RobustPolicy(prob, lambda X: 5 + X[:, 0], "conformal").fit(X[:n], y[:n])
    assert conf.epsilon_ < auto.epsilon_
    assert excess_loss(conf, X[n:], y[n:]) < excess_loss(auto, X[n:], y[n:])


def test_custom_problem_constants_drive_auto_epsilon(rng):
    """A 1:3 newsvendor: G(ε) = 1.5ε, L = 3, J = 0. With the constants stated, 'auto' solves the right
    cubic; without them it warns, estimates g by robust_gap and falls back to L = 1."""
    def loss(a, y):
        return np.maximum(3 * (y - a), a - y)

    X = rng.normal(size=(1000, 1))
    y = 5 + X[:, 0] + rng.normal(0, 0.2, 1000)
    told = CustomProblem(loss, action_bounds=(0, 20), jump=0.0, lipschitz=3.0, gap_slope=1.5)
    y_hat = 5 + X[:, 0]
    assert robust_gap(told, 0.3, y_hat[:50]) == pytest.approx(1.5 * 0.3, rel=1e-3)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pol = RobustPolicy(told, lambda X: 5 + X[:, 0], "auto").fit(X, y)
    np.testing.assert_allclose(pol.epsilon_, epsilon_for(pol.eta_, jump=0.0, lipschitz=3.0, gap_slope=1.5))
    np.testing.assert_allclose(pol.epsilon_, pol.eta_ * np.sqrt(3.0 / (4 * 1.5)), rtol=1e-9)  # J = 0: ε = η·sqrt(L/4g)
    silent = CustomProblem(loss, action_bounds=(0, 20), jump=0.0)
    with pytest.warns(UserWarning, match="gap_slope.*lipschitz"):
        guess = RobustPolicy(silent, lambda X: 5 + X[:, 0], "auto").fit(X, y)
    assert guess.gap_slope_ == pytest.approx(1.5, rel=0.02)
    assert guess.lipschitz_ == 1.0
    np.testing.assert_allclose(guess.epsilon_, epsilon_for(guess.eta_, jump=0.0, lipschitz=1.0,
                                                           gap_slope=guess.gap_slope_))
    # a number needs no constants: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RobustPolicy(silent, lambda X: 5 + X[:, 0], 0.1).fit(X, y)


def test_epsilon_rules_bad_input(rng):
    X = rng.normal(size=(50, 2))
    for kw, exc, match in [(dict(epsilon="oracle"), ValueError, "epsilon"), (dict(epsilon=[0.1]), TypeError, "epsilon"),
                           (dict(epsilon=True), TypeError, "epsilon"), (dict(epsilon=float("nan")), ValueError, "epsilon"),
                           (dict(cv=1), ValueError, "cv"), (dict(grid=[-1.0]), ValueError, "grid"),
                           (dict(alpha=1.5), ValueError, "alpha"), (dict(eta=-1.0), ValueError, "eta"),
                           (dict(eta="0.1"), TypeError, "eta")]:
        with pytest.raises(exc, match=match):
            RobustPolicy(PostedPricing(), lambda X: X[:, 0], **kw)
    # an infinite jump has no finite bound: 'auto' and 'conformal' refuse, 'cv' works
    p = CustomProblem(lambda a, y: (a - y) ** 2, action_bounds=(-10, 10), lipschitz=2.0, gap_slope=1.0)
    y = X[:, 0] + 0.1
    for rule in ("auto", "conformal"):
        with pytest.raises(ValueError, match="finite jump"):
            RobustPolicy(p, lambda X: X[:, 0], rule).fit(X, y)
    assert RobustPolicy(p, lambda X: X[:, 0], "cv", grid=[0.0, 0.1]).fit(X, y).epsilon_ in (0.0, 0.1)
    with pytest.raises(ValueError, match="lipschitz"):
        epsilon_for(0.1, jump=1.0, lipschitz=-1.0)
    with pytest.raises(TypeError, match="jump"):
        theoretical_bound(0.1, 0.1, jump="1")
