"""GRACE: one global map from an embedding to non-negative concept coefficients, with a geometry term.

No code or paper text is public; the decomposer and its loss are inferred from the abstract
("learns the concept-based structure at the feature-space level", "a training objective that
preserves the geometric relations of different samples in the concept space"):

    c = topk(softplus(MLP(y)))  (ReLU when no target_l0 is set),    y = z − μ_image,    ẑ = normalise(Dᵀc + μ_image)
    L = mean_i (1 − cos(ẑ_i, z_i)) + λ₁ mean_i ‖c_i‖₁ + λ_g mean_{i≠j} (cos(y_i, y_j) − cos(c_i, c_j))²

(the geometry target uses the centred embeddings ``y``: raw CLIP cosines are all close to 1).
Fitted once on unlabelled embeddings; decomposing is one forward pass.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from grace._base import Decomposer, check_number, topk_mask


def geometry_loss(y: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """``mean_{i≠j} (cos(y_i, y_j) − cos(c_i, c_j))²`` over the rows of a batch (0 when all cosines are kept)."""
    a = F.normalize(y, dim=-1, eps=1e-8)
    b = F.normalize(c, dim=-1, eps=1e-8)
    d = (a @ a.T - b @ b.T) ** 2
    n = y.shape[0]
    return (d.sum() - d.diagonal().sum()) / max(n * (n - 1), 1)


class GRACE(Decomposer):
    """Global concept decomposer (sklearn idiom): ``fit(Z)``, ``transform(Z)``, ``inverse_transform(C)``.

    Args:
        dictionary: a :class:`grace.ConceptDictionary`.
        hidden: MLP width.
        l1: λ₁, weight of the coefficients' L1 norm.
        geometry_weight: λ_g (0 gives the ablation without the geometry term).
        target_l0: keep the top ``target_l0`` coefficients per embedding (matched sparsity); ``None``: ReLU only.
        epochs, batch_size, lr: training budget (Adam).
        random_state: seed of the initialisation and the batches.

    Example:
        >>> g = GRACE(dictionary, target_l0=4, random_state=0).fit(Z)   # doctest: +SKIP
        >>> C = g.transform(Z); Zhat = g.inverse_transform(C)            # doctest: +SKIP
    """

    def __init__(self, dictionary, *, hidden: int = 256, l1: float = 1e-3, geometry_weight: float = 1.0,
                 target_l0=None, epochs: int = 60, batch_size: int = 256, lr: float = 1e-3,
                 random_state=None):
        super().__init__(dictionary, target_l0)
        if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 1:
            raise ValueError(f"hidden must be a positive int, got {hidden!r}")
        for name, v in (("epochs", epochs), ("batch_size", batch_size)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if batch_size < 2:
            raise ValueError("batch_size must be >= 2 (the geometry term needs pairs)")
        self.hidden, self.epochs, self.batch_size = hidden, epochs, batch_size
        self.l1 = check_number(l1, "l1")
        self.geometry_weight = check_number(geometry_weight, "geometry_weight")
        self.lr = check_number(lr, "lr", minimum=1e-12)
        self.random_state = random_state
        self.net_ = None
        self.history_ = {"reconstruction": [], "geometry": [], "l1": []}

    def get_params(self) -> dict:
        return {"hidden": self.hidden, "l1": self.l1, "geometry_weight": self.geometry_weight,
                "target_l0": self.target_l0, "epochs": self.epochs, "batch_size": self.batch_size,
                "lr": self.lr, "random_state": self.random_state}

    def _build(self):
        d, C = self.dictionary.dim, len(self.dictionary)
        return nn.Sequential(nn.Linear(d, self.hidden), nn.ReLU(), nn.Linear(self.hidden, self.hidden), nn.ReLU(),
                             nn.Linear(self.hidden, C))

    def _coefficients(self, y: torch.Tensor) -> torch.Tensor:
        # softplus keeps the top-k coefficients strictly positive, so the L0 is exactly target_l0
        out = self.net_(y)
        return topk_mask(F.softplus(out) if self.target_l0 is not None else F.relu(out), self.target_l0)

    def fit(self, Z, y=None):
        """Train the global map on unlabelled embeddings ``Z`` (n, d); ``y`` is ignored (sklearn idiom)."""
        z, yc = self._prepare(Z, fitting=True)
        if len(z) < 2:
            raise ValueError("fit needs at least 2 embeddings")
        gen = torch.Generator().manual_seed(0 if self.random_state is None else int(self.random_state))
        torch.manual_seed(0 if self.random_state is None else int(self.random_state))
        self.net_ = self._build()
        atoms = torch.as_tensor(self.dictionary.atoms, dtype=torch.float32)
        mu = torch.as_tensor(self.image_mean_, dtype=torch.float32)
        zt = torch.as_tensor(z, dtype=torch.float32)
        yt = torch.as_tensor(yc, dtype=torch.float32)
        opt = torch.optim.Adam(self.net_.parameters(), lr=self.lr)
        n = len(zt)
        self.history_ = {"reconstruction": [], "geometry": [], "l1": []}
        for epoch in range(self.epochs):
            perm = torch.randperm(n, generator=gen)
            sums = np.zeros(3)
            for i in range(0, n, self.batch_size):
                b = perm[i:i + self.batch_size]
                if len(b) < 2:
                    continue
                c = self._coefficients(yt[b])
                zhat = F.normalize(c @ atoms + mu, dim=-1)
                rec = (1 - (zhat * zt[b]).sum(-1)).mean()
                geo = geometry_loss(yt[b], c)
                l1 = c.sum(-1).mean()
                loss = rec + self.l1 * l1 + self.geometry_weight * geo
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"GRACE training diverged at epoch {epoch}")
                opt.zero_grad()
                loss.backward()
                opt.step()
                sums += len(b) * np.array([rec.item(), geo.item(), l1.item()])
            for k, v in zip(("reconstruction", "geometry", "l1"), sums / n, strict=True):
                self.history_[k].append(float(v))
        self.net_.eval()
        return self

    def transform(self, Z) -> np.ndarray:
        """Concept coefficients ``(n, C) >= 0``: one forward pass."""
        if self.net_ is None:
            raise RuntimeError("GRACE is not fitted: call fit(Z) first")
        _, y = self._prepare(Z)
        with torch.no_grad():
            return self._coefficients(torch.as_tensor(y, dtype=torch.float32)).numpy()

    def _extra_state(self) -> dict:
        return {"net": self.net_.state_dict(), "history": {k: torch.tensor(v) for k, v in self.history_.items()}}

    def _load_extra(self, s: dict) -> None:
        self.net_ = self._build()
        self.net_.load_state_dict(s["net"])
        self.net_.eval()
        self.history_ = {k: v.tolist() for k, v in s["history"].items()}
