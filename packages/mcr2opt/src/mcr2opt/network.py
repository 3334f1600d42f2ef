"""Exp B: an MLP feature map on the sphere, trained with MCR² or cross-entropy at equal budget.

The feature extractor is an interface: any ``nn.Module`` mapping inputs to (n, d) features works
with :class:`~mcr2opt.objective.MCR2Loss`; :class:`FeatureMLP` is the miniature's (64→128→32,
rows scaled to the unit sphere, as the original MCR²).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from mcr2opt.objective import MCR2Loss
from paperworks import atomic_torch_save
from paperworks.utils import check_float, check_int


class FeatureMLP(nn.Module):
    """in_dim → hidden → out_dim MLP (ReLU) whose outputs are scaled to unit norm.

    ``head`` (optional, ``n_classes`` given): a linear classifier on the features, used by the
    cross-entropy baseline. ``save(path)`` writes one file (weights and sizes);
    ``FeatureMLP.load(path)`` restores it with ``torch.load(weights_only=True)``.
    """

    def __init__(self, in_dim: int = 64, hidden: int = 128, out_dim: int = 32, n_classes: int | None = None):
        super().__init__()
        self.sizes = {"in_dim": check_int(in_dim, "in_dim"), "hidden": check_int(hidden, "hidden"),
                      "out_dim": check_int(out_dim, "out_dim"),
                      "n_classes": check_int(n_classes, "n_classes", optional=True)}
        self.body = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, out_dim))
        self.head = nn.Linear(out_dim, n_classes) if n_classes else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.body(x)
        return z / z.norm(dim=1, keepdim=True).clamp_min(1e-12)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        if self.head is None:
            raise ValueError("this FeatureMLP has no classifier head (n_classes=None)")
        return self.head(self(x))

    def save(self, path) -> Path:
        path = Path(path)
        atomic_torch_save({"sizes": dict(self.sizes), "state_dict": self.state_dict()}, path)
        return path

    @classmethod
    def load(cls, path) -> FeatureMLP:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no saved model at {path}")
        blob = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(blob, dict) or "sizes" not in blob or "state_dict" not in blob:
            raise ValueError(f"{path} is not a saved FeatureMLP")
        m = cls(**blob["sizes"])
        m.load_state_dict(blob["state_dict"])
        return m


def _acc(pred, y) -> float:
    return float(np.mean(np.asarray(pred) == np.asarray(y)))


def ncm_predict(ftr, ytr, fte) -> np.ndarray:
    """Nearest class mean by cosine (features on the sphere)."""
    classes = np.unique(ytr)
    mu = np.stack([ftr[ytr == c].mean(0) for c in classes])
    mu /= np.linalg.norm(mu, axis=1, keepdims=True)
    return classes[np.argmax(fte @ mu.T, axis=1)]


def train(splits: dict, *, loss: str, steps: int, lr: float, eps: float = 0.5, seed: int = 0,
          eval_every: int = 25, device: str = "cpu") -> tuple[FeatureMLP, dict]:
    """Full-batch Adam on the training split, keeping the state with the best validation accuracy.

    ``loss="mcr2"``: −ΔR (ε = ``eps``) of the features, validation by nearest class mean;
    ``loss="ce"``: cross-entropy through a linear head, validation by the head. Same network,
    optimiser, steps and learning rate for both (the equal budget).
    """
    if loss not in ("mcr2", "ce"):
        raise ValueError(f"loss must be 'mcr2' or 'ce', got {loss!r}")
    steps = check_int(steps, "steps")
    lr = check_float(lr, "lr", minimum=0.0, open_minimum=True)
    torch.manual_seed(seed)
    Xtr, ytr = splits["train"]
    Xva, yva = splits["val"]
    K = int(len(np.unique(ytr)))
    model = FeatureMLP(Xtr.shape[1], 128, 32, n_classes=K if loss == "ce" else None).to(device)
    xt, yt = torch.as_tensor(Xtr, device=device), torch.as_tensor(ytr, device=device)
    xv = torch.as_tensor(Xva, device=device)
    crit = MCR2Loss(eps=eps) if loss == "mcr2" else nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    best, best_state, best_step = -1.0, None, 0

    def val_acc():
        with torch.no_grad():
            if loss == "ce":
                return _acc(model.logits(xv).argmax(1).cpu().numpy(), yva)
            return _acc(ncm_predict(model(xt).cpu().numpy(), ytr, model(xv).cpu().numpy()), yva)

    for t in range(1, steps + 1):
        opt.zero_grad()
        out = crit(model(xt), yt) if loss == "mcr2" else crit(model.logits(xt), yt)
        if not torch.isfinite(out):
            raise FloatingPointError(f"{loss} training diverged at step {t} (lr {lr:g})")
        out.backward()
        opt.step()
        if t % eval_every == 0 or t == steps:
            a = val_acc()
            if a > best:
                best, best_step = a, t
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model.load_state_dict(best_state)
    return model.cpu().eval(), {"val_acc": best, "best_step": best_step}


def evaluate(model: FeatureMLP, splits: dict, *, eps: float = 0.5, k: int = 5, subspace_rank: int = 3) -> dict:
    """Test accuracies (NCM, kNN, linear probe, and the head if any) and the training features' geometry."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier

    from mcr2opt.geometry import subspace_geometry
    from mcr2opt.objective import mcr2

    Xtr, ytr = splits["train"]
    Xte, yte = splits["test"]
    with torch.no_grad():
        ftr, fte = model(torch.as_tensor(Xtr)), model(torch.as_tensor(Xte))
        head = _acc(model.logits(torch.as_tensor(Xte)).argmax(1).numpy(), yte) if model.head is not None else None
    a, b = ftr.numpy().astype(np.float64), fte.numpy().astype(np.float64)
    geo = subspace_geometry(ftr.double(), torch.as_tensor(ytr), rank=subspace_rank)
    geo90 = subspace_geometry(ftr.double(), torch.as_tensor(ytr))
    probe = LogisticRegression(max_iter=2000).fit(a, ytr)
    return {
        "ncm": _acc(ncm_predict(a, ytr, b), yte),
        "knn": _acc(KNeighborsClassifier(n_neighbors=k).fit(a, ytr).predict(b), yte),
        "probe": _acc(probe.predict(b), yte),
        "head": head,
        "delta_r": float(mcr2(ftr.double(), torch.as_tensor(ytr), eps=eps)),
        "effective_rank": float(np.mean(geo["effective_rank"])),
        "rank90": float(np.mean(geo90["rank"])),
        "mean_cosine": geo["mean_cosine"],
        "mean_max_cosine": geo["mean_max_cosine"],
        "cosines": geo["cosines"],
    }
