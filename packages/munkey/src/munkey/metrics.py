"""Unlearning metrics: accuracies, loss-based membership inference, Avg-Gap to the oracle.

* MIA AUC: the AUROC of −loss separating the forget set (members, label 1) from the test set
  (non-members, label 0); 0.5 means the forget set looks like unseen data. Beside it, a trained
  attack: logistic regression on (loss, entropy, max-probability), 5-fold cross-validated AUROC on a
  class-balanced subsample (the NeurIPS-2023 unlearning challenge style).
* Avg-Gap (points): mean over {forget acc, retain acc, test acc, MIA AUC} of |model − oracle| × 100.
* Over-forgetting: forget accuracy below the reference (the oracle's forget accuracy, else the test
  accuracy) by more than ``over_forgetting_tol`` is flagged.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

GAP_KEYS = ("forget_acc", "retain_acc", "test_acc", "mia_auc")


def as_xy(data, name: str):
    """``(X, y)`` from a tuple/list of two tensors or a ``TensorDataset``."""
    from torch.utils.data import TensorDataset

    if isinstance(data, TensorDataset):
        if len(data.tensors) < 2:
            raise ValueError(f"{name}: a TensorDataset needs (images, labels) tensors")
        x, y = data.tensors[0], data.tensors[1]
    elif isinstance(data, (tuple, list)) and len(data) == 2:
        x, y = data
    else:
        raise TypeError(f"{name} must be an (images, labels) tuple or a TensorDataset, got {type(data).__name__}")
    x, y = torch.as_tensor(x), torch.as_tensor(y)
    if len(x) == 0:
        raise ValueError(f"{name} is empty")
    if len(x) != len(y):
        raise ValueError(f"{name}: {len(x)} images but {len(y)} labels")
    return x.float(), y.long()


@torch.no_grad()
def per_sample(model, x, y, batch_size: int = 512, **kw) -> dict:
    """Per-sample loss, correctness, entropy and max-probability of ``model`` on ``(x, y)``."""
    model.eval()
    logits = torch.cat([model(x[i:i + batch_size], **kw) for i in range(0, len(x), batch_size)])
    y = y.to(logits.device)
    logp = F.log_softmax(logits, -1)
    return {"loss": F.nll_loss(logp, y, reduction="none").cpu().numpy(),
            "correct": (logits.argmax(-1) == y).cpu().numpy(),
            "pred": logits.argmax(-1).cpu().numpy(),
            "entropy": (-(logp.exp() * logp).sum(-1)).cpu().numpy(),
            "maxprob": logp.exp().max(-1).values.cpu().numpy()}


def mia_auc(member_loss, nonmember_loss) -> float:
    """AUROC of −loss for members (1) vs non-members (0) (``sklearn.metrics.roc_auc_score``)."""
    from sklearn.metrics import roc_auc_score

    a, b = np.asarray(member_loss, float), np.asarray(nonmember_loss, float)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("mia_auc needs at least one member and one non-member")
    return float(roc_auc_score(np.r_[np.ones(len(a)), np.zeros(len(b))], -np.r_[a, b]))


def attack_auc(member: dict, nonmember: dict, seed: int = 0) -> float:
    """Cross-validated AUROC of a logistic-regression attack on (loss, entropy, max-prob)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(seed)
    n = min(len(member["loss"]), len(nonmember["loss"]))
    if n < 5:
        return float("nan")
    im, inn = rng.choice(len(member["loss"]), n, replace=False), rng.choice(len(nonmember["loss"]), n, replace=False)

    def feats(d, idx):
        return np.c_[np.log1p(d["loss"][idx]), d["entropy"][idx], d["maxprob"][idx]]

    X = np.r_[feats(member, im), feats(nonmember, inn)]
    y = np.r_[np.ones(n), np.zeros(n)]
    clf = make_pipeline(StandardScaler(), LogisticRegression())
    p = cross_val_predict(clf, X, y, cv=StratifiedKFold(5, shuffle=True, random_state=seed), method="predict_proba")
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p[:, 1]))


def unlearning_metrics(model, forget, retain, test, oracle=None, *, over_forgetting_tol: float = 0.1) -> dict:
    """Forget/retain/test accuracy and loss, MIA AUC (forget vs test), and Avg-Gap to an oracle.

    Args:
        model: any classifier ``model(images) -> logits``.
        forget, retain, test: ``(images, labels)`` tuples or ``TensorDataset`` s.
        oracle: the model retrained without the forget set, or a dict of its metrics (this
            function's output); adds ``oracle_*`` entries and ``avg_gap``.
        over_forgetting_tol: forget accuracy this far below the reference is flagged.

    Returns:
        dict with ``forget_acc, retain_acc, test_acc, forget_loss, retain_loss, test_loss, mia_auc,
        mia_attack_auc, over_forgetting`` (and ``oracle_*``, ``avg_gap`` with an oracle).
    """
    f, r, t = as_xy(forget, "forget"), as_xy(retain, "retain"), as_xy(test, "test")
    pf, pr, pt = per_sample(model, *f), per_sample(model, *r), per_sample(model, *t)
    out = {"forget_acc": float(pf["correct"].mean()), "retain_acc": float(pr["correct"].mean()),
           "test_acc": float(pt["correct"].mean()), "forget_loss": float(pf["loss"].mean()),
           "retain_loss": float(pr["loss"].mean()), "test_loss": float(pt["loss"].mean()),
           "mia_auc": mia_auc(pf["loss"], pt["loss"]), "mia_attack_auc": attack_auc(pf, pt)}
    if oracle is not None:
        o = oracle if isinstance(oracle, dict) else unlearning_metrics(oracle, forget, retain, test)
        for k in (*GAP_KEYS, "forget_loss"):
            out[f"oracle_{k}"] = float(o[k])
        out["avg_gap"] = avg_gap(out, o)
    ref = out.get("oracle_forget_acc", out["test_acc"])
    out["over_forgetting"] = bool(out["forget_acc"] < ref - over_forgetting_tol)
    return out


def avg_gap(m: dict, oracle: dict) -> float:
    """Mean absolute gap to the oracle over forget/retain/test accuracy and MIA AUC, in points."""
    return float(100 * np.mean([abs(m[k] - oracle[k]) for k in GAP_KEYS]))
