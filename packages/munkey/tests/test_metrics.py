import numpy as np
import pytest
import torch
import torch.nn.functional as F
from munkey import unlearning_metrics
from munkey.metrics import avg_gap, mia_auc
from sklearn.metrics import roc_auc_score
from torch.utils.data import TensorDataset


def _mann_whitney(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(((a[:, None] > b[None]).sum() + 0.5 * (a[:, None] == b[None]).sum()) / (len(a) * len(b)))


def test_mia_auc_is_sklearn_auroc_of_minus_loss(trained, split):
    mk, _ = trained
    f, t = (split.x_train[:60], split.y_train[:60]), (split.x_test, split.y_test)
    out = unlearning_metrics(mk, f, (split.x_train[60:], split.y_train[60:]), TensorDataset(*t))
    with torch.no_grad():
        lf = F.cross_entropy(mk(f[0]), f[1], reduction="none").numpy()
        lt = F.cross_entropy(mk(t[0]), t[1], reduction="none").numpy()
    want = roc_auc_score(np.r_[np.ones(len(lf)), np.zeros(len(lt))], -np.r_[lf, lt])
    assert out["mia_auc"] == pytest.approx(want, abs=1e-9)
    assert out["mia_auc"] == pytest.approx(_mann_whitney(-lf, -lt), abs=1e-9)
    assert out["forget_acc"] == pytest.approx(float((mk(f[0]).argmax(1) == f[1]).float().mean()))


def test_mia_is_half_for_two_held_out_samples(trained, split):
    mk, _ = trained
    x, y = split.x_test, split.y_test
    h = len(x) // 2
    out = unlearning_metrics(mk, (x[:h], y[:h]), (split.x_train, split.y_train), (x[h:], y[h:]))
    assert abs(out["mia_auc"] - 0.5) < 0.1
    rng = np.random.default_rng(0)
    assert abs(mia_auc(rng.exponential(size=2000), rng.exponential(size=2000)) - 0.5) < 0.03


class _Const(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.one_hot(torch.zeros(len(x), dtype=torch.long), 10).float() * 5


def test_over_forgetting_is_flagged(split):
    x, y = split.x_test, split.y_test
    zero, one = (x[y == 0], y[y == 0]), (x[y == 1], y[y == 1])
    out = unlearning_metrics(_Const(), one, zero, zero)  # forget acc 0, test acc 1
    assert out["over_forgetting"] and out["forget_acc"] == 0 and out["test_acc"] == 1
    same = unlearning_metrics(_Const(), zero, zero, zero)
    assert not same["over_forgetting"]
    # with an oracle that also fails the forget set, a low forget accuracy is no over-forgetting
    o = unlearning_metrics(_Const(), one, zero, zero, oracle=_Const())
    assert not o["over_forgetting"] and o["avg_gap"] == 0


def test_avg_gap_formula():
    a = {"forget_acc": 0.9, "retain_acc": 1.0, "test_acc": 0.8, "mia_auc": 0.6}
    b = {"forget_acc": 0.8, "retain_acc": 1.0, "test_acc": 0.8, "mia_auc": 0.5}
    assert avg_gap(a, b) == pytest.approx(100 * (0.1 + 0 + 0 + 0.1) / 4)


def test_bad_metric_inputs(trained, split):
    mk, _ = trained
    good = (split.x_test, split.y_test)
    with pytest.raises(TypeError, match="forget must be"):
        unlearning_metrics(mk, split.x_test, good, good)
    with pytest.raises(ValueError, match="forget is empty"):
        unlearning_metrics(mk, (split.x_test[:0], split.y_test[:0]), good, good)
    with pytest.raises(ValueError, match="labels"):
        unlearning_metrics(mk, (split.x_test, split.y_test[:3]), good, good)
