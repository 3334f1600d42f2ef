import numpy as np
import pytest
import torch
from tmevolve import cox_loss, discrete_survival_nll, evaluate
from tmevolve.train import concordance_index


def test_cox_optimum_matches_lifelines(rng):
    import pandas as pd
    from lifelines import CoxPHFitter

    n = 300
    z = rng.normal(size=(n, 2))
    t = rng.exponential(1 / np.exp(z @ np.array([0.8, -0.5])))
    c = rng.exponential(2.0, size=n)
    time, event = np.minimum(t, c), (t <= c).astype(float)
    cph = CoxPHFitter().fit(pd.DataFrame({"z0": z[:, 0], "z1": z[:, 1], "T": time, "E": event}), "T", "E")
    beta = torch.zeros(2, dtype=torch.double, requires_grad=True)
    opt = torch.optim.LBFGS([beta], max_iter=200, tolerance_grad=1e-10, line_search_fn="strong_wolfe")
    Z, T, E = (torch.as_tensor(v, dtype=torch.double) for v in (z, time, event))

    def closure():
        opt.zero_grad()
        loss = cox_loss(Z @ beta, T, E)
        loss.backward()
        return loss

    opt.step(closure)
    np.testing.assert_allclose(beta.detach().numpy(), cph.params_.values, atol=2e-3)


def test_discrete_survival_nll_matches_brute_force(rng):
    logits = torch.as_tensor(rng.normal(size=(6, 4)))
    bins = torch.tensor([0, 1, 3, 2, 0, 3])
    event = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0], dtype=torch.double)
    h = torch.sigmoid(logits).numpy()
    ref = []
    for i in range(6):
        t = int(bins[i])
        surv = np.prod(1 - h[i, :t])
        ref.append(-np.log(h[i, t] * surv) if event[i] else -np.log(surv * (1 - h[i, t])))
    torch.testing.assert_close(discrete_survival_nll(logits, bins, event), torch.tensor(np.mean(ref)))


def test_concordance_matches_brute_force(rng):
    t, r, e = rng.exponential(size=40), rng.normal(size=40), (rng.random(40) < 0.6).astype(float)
    num = den = 0.0
    for i in range(40):
        for j in range(40):
            if t[i] < t[j] and e[i] == 1:
                den += 1
                num += 1.0 if r[i] > r[j] else 0.5 if r[i] == r[j] else 0.0
    assert concordance_index(t, r, e) == pytest.approx(num / den)


@pytest.mark.parametrize("time,event,match", [
    ([1.0, -1.0], [1.0, 0.0], "> 0"), ([1.0, float("nan")], [1.0, 0.0], "> 0"), ([1.0, 2.0], [1.0, 2.0], "0 .censored"),
])
def test_invalid_survival_targets(time, event, match):
    with pytest.raises(ValueError, match=match):
        cox_loss(torch.zeros(2), torch.tensor(time), torch.tensor(event))


def test_smoke_training_learns_infiltration_above_chance(trained, smoke_data):
    model, info = trained
    res = evaluate(model, smoke_data["test"])
    assert res["metric"] == "auroc" and res["value"] > 0.6, res


def test_proportion_only_classifier_chance_on_infiltration_strong_on_control():
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from tmevolve import SyntheticSlides, prototypes

    from paperworks import bootstrap_ci

    def auroc(label):
        tr = SyntheticSlides(200, grid=12, label=label, seed=1)
        te = SyntheticSlides(200, grid=12, label=label, seed=2)
        P = prototypes()
        f = lambda ds: np.stack([np.bincount((d.x @ P.T).argmax(-1).numpy(), minlength=5) / d.num_nodes  # noqa: E731
                                 for d in ds])
        y = lambda ds: np.array([float(d.y) for d in ds])  # noqa: E731
        s = LogisticRegression(max_iter=1000).fit(f(tr), y(tr)).decision_function(f(te))
        return y(te), s

    yt, s = auroc("infiltration")
    rng = np.random.default_rng(0)
    boots = [roc_auc_score(yt[i], s[i]) for i in (rng.integers(0, len(yt), len(yt)) for _ in range(300))]
    lo, hi = np.quantile(boots, [0.025, 0.975])
    assert lo <= 0.5 <= hi, (lo, hi)
    yc, sc = auroc("control")
    assert roc_auc_score(yc, sc) > 0.9
    assert bootstrap_ci  # the paperworks helper exists for the run's CIs
