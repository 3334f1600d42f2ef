"""GFM-UC: pre-trained subgraph prototypes and label-free target alignment for graph clustering.

Reference: "GFM-UC: a graph foundation model for unified unsupervised graph clustering" (the abstract
beginning "Graph clustering is a fundamental task for understanding graph-structured data without
labels..."). No paper text or code is public: every component below is **inferred from the abstract**.

Pipeline (shapes: ``d = hidden_channels``, ``P = num_prototypes``, ``K = n_clusters``):

1. *Domain features.* Each source or target (a graph, or a set of graphs) is cut to ``feature_dim``
   columns by its own truncated SVD (:func:`gfmuc.data.svd_features`).
2. *Pre-training.* A :class:`~gfmuc.encoder.SubgraphEncoder` is trained on all sources with Deep Graph
   Infomax (``torch_geometric.nn.DeepGraphInfomax``; corruption = row shuffle, summary = sigmoid of the
   mean), ``pretrain_epochs`` full-batch epochs.
3. *Unified subgraphs.* A node is its ``hops``-hop ego-subgraph and a graph is itself; the mean of the
   node embeddings over the subgraph is its embedding ``z`` (:func:`~gfmuc.encoder.subgraph_readout`).
4. *Prototypes.* k-means (``P`` clusters, ``n_init`` restarts) on all source subgraph embeddings; the
   ``confidence`` fraction with the largest assignment margin is kept; the kept units' cluster means
   become ``P`` learnable prototypes ``mu`` (weights = kept units per prototype), trained with the
   encoder for ``prototype_epochs`` on ``L_DGI + kl_weight * KL(P || Q)`` over the kept units
   (DEC's Student-t ``Q`` and sharpened target ``P``).
5. *Fine-tuning on the target, label-free.* The encoder is frozen (``tune_encoder=False``). An affine
   adapter ``g(z) = W z + b`` (initialised to the identity) is fitted for ``align_epochs`` to bring
   the target embeddings' distribution to the weighted prototypes (RBF-MMD with a median-heuristic
   bandwidth fixed at the start, or exact OT through POT, ``align``; 256 random target units a step); a ``K``-way head (centroids, k-means-initialised on ``g(z)``) is then refined with
   adapter for ``head_epochs`` on ``kl_weight * KL(P || Q) + align_weight * alignment``.
   ``predict`` = argmax of ``Q``.

Nothing here reads ``y``: the scorer (:func:`gfmuc.scores.clustering_scores`) is the only code that does.

Example:
    >>> from gfmuc import GFMUC, csbm
    >>> src = [csbm(300, 4, homophily=0.8, feature_dim=32, snr=1.5, seed=s) for s in range(2)]
    >>> tgt = csbm(300, 3, homophily=0.8, feature_dim=48, snr=1.5, seed=9)
    >>> labels = GFMUC(random_state=0).pretrain(src).fit_predict(tgt, n_clusters=3)
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans
from sklearn.exceptions import NotFittedError
from torch import nn
from torch_geometric.nn import DeepGraphInfomax

from gfmuc.align import alignment_loss, median_bandwidth
from gfmuc.data import as_domain, check_graph, svd_features
from gfmuc.encoder import CONVS, SubgraphEncoder, ego_pairs, subgraph_readout
from gfmuc.prototypes import assignment_margin, dec_kl, select_confident, soft_assign
from paperworks import atomic_torch_save, resolve_device
from paperworks.utils import check_float, check_int

log = logging.getLogger(__name__)

ALIGNS = ("mmd", "ot", None)
_FORMAT = "gfmuc.GFMUC/1"
ALIGN_BATCH = 256  # target units per alignment step


def _summary(z, *args, **kwargs):
    return torch.sigmoid(z.mean(dim=0))


def _corruption(x, edge_index):
    return x[torch.randperm(x.size(0), device=x.device)], edge_index


@dataclass
class Domain:
    """A prepared domain: SVD-cut features, edges and the unit (subgraph) membership pairs."""

    x: torch.Tensor
    edge_index: torch.Tensor
    member: torch.Tensor
    center: torch.Tensor
    n_units: int
    level: str
    isolated: int


def _finite(loss: torch.Tensor, stage: str, epoch: int) -> None:
    if not torch.isfinite(loss):
        raise FloatingPointError(f"GFMUC: the {stage} loss became {float(loss)} at epoch {epoch}")


class GFMUC(BaseEstimator):
    """Graph foundation model for unified (node- and graph-level) clustering (see the module docstring).

    Args:
        hidden_channels: embedding width ``d`` (64).
        feature_dim: common feature width after each domain's SVD (32).
        encoder: ``"gcn"`` or ``"gin"``.
        hops: ego-subgraph radius of a node (2).
        num_prototypes: ``P`` (32; capped at the number of source subgraphs); ``0`` disables prototypes (the alignment then targets a uniform
            sample of 256 source subgraph embeddings: the "no prototypes" ablation).
        confidence: fraction of source units kept as confident (0.3).
        align: ``"mmd"``, ``"ot"`` or ``None`` (no alignment).
        random_state: seed of every random step (``None``: fresh entropy).
        pretrain_epochs, prototype_epochs, align_epochs, head_epochs: fixed epoch counts (100, 30, 50, 50).
        lr: Adam learning rate (1e-3). kl_weight, align_weight: loss weights (1, 1).
        tune_encoder: also tune the encoder during fine-tuning (at ``lr / 10``); default frozen.
        n_init: k-means restarts (10).
        device: ``"auto"``, ``"cpu"`` or ``"cuda"``.
    """

    def __init__(self, *, hidden_channels=64, feature_dim=32, encoder="gcn", hops=2, num_prototypes=32,
                 confidence=0.3, align="mmd", random_state=None, pretrain_epochs=100, prototype_epochs=30,
                 align_epochs=50, head_epochs=50, lr=1e-3, kl_weight=1.0, align_weight=1.0, tune_encoder=False,
                 n_init=10, device="cpu"):
        self.hidden_channels = hidden_channels
        self.feature_dim = feature_dim
        self.encoder = encoder
        self.hops = hops
        self.num_prototypes = num_prototypes
        self.confidence = confidence
        self.align = align
        self.random_state = random_state
        self.pretrain_epochs = pretrain_epochs
        self.prototype_epochs = prototype_epochs
        self.align_epochs = align_epochs
        self.head_epochs = head_epochs
        self.lr = lr
        self.kl_weight = kl_weight
        self.align_weight = align_weight
        self.tune_encoder = tune_encoder
        self.n_init = n_init
        self.device = device
        self._validate()

    # validation -----------------------------------------------------------------------------

    def _validate(self) -> None:
        check_int(self.hidden_channels, "hidden_channels")
        check_int(self.feature_dim, "feature_dim")
        if self.encoder not in CONVS:
            raise ValueError(f"encoder must be one of {CONVS}, got {self.encoder!r}")
        check_int(self.hops, "hops", minimum=0)
        p = check_int(self.num_prototypes, "num_prototypes", minimum=0)
        if p == 1:
            raise ValueError("num_prototypes must be 0 (no prototypes) or >= 2, got 1")
        check_float(self.confidence, "confidence", minimum=0.0, maximum=1.0, open_minimum=True)
        if self.align not in ALIGNS:
            raise ValueError(f"align must be 'mmd', 'ot' or None, got {self.align!r}")
        check_int(self.random_state, "random_state", minimum=0, optional=True)
        for name in ("pretrain_epochs", "prototype_epochs", "align_epochs", "head_epochs"):
            check_int(getattr(self, name), name, minimum=0)
        check_float(self.lr, "lr", minimum=0.0, open_minimum=True)
        check_float(self.kl_weight, "kl_weight", minimum=0.0)
        check_float(self.align_weight, "align_weight", minimum=0.0)
        if not isinstance(self.tune_encoder, bool):
            raise TypeError(f"tune_encoder must be a bool, got {self.tune_encoder!r}")
        check_int(self.n_init, "n_init")
        if self.device not in ("auto", "cpu", "cuda") and not str(self.device).startswith("cuda:"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {self.device!r}")

    def _seed(self, offset: int) -> int:
        if self.random_state is None:
            return int(np.random.default_rng().integers(2**31))
        return (int(self.random_state) * 7919 + offset) % 2**31

    # domains --------------------------------------------------------------------------------

    def _prepare(self, item, name: str) -> Domain:
        data, level = as_domain(item, name)
        isolated = check_graph(data, name) if level == "node" else 0
        dev = torch.device(self._device)
        x = svd_features(data.x, int(self.feature_dim)).to(dev)
        n = x.size(0)
        if level == "node":
            member, center = ego_pairs(data.edge_index, n, int(self.hops))
            units = n
        else:
            member, center = torch.arange(n), data.batch.cpu()
            units = int(data.num_graphs)
        if isolated:
            log.info("%s: %d isolated node(s) kept (each is its own one-node subgraph)", name, isolated)
        return Domain(x, data.edge_index.long().to(dev), member.to(dev), center.to(dev), units, level, isolated)

    def _embed(self, enc: nn.Module, dom: Domain) -> torch.Tensor:
        return subgraph_readout(enc(dom.x, dom.edge_index), dom.member, dom.center, dom.n_units)

    def _kmeans(self, z: torch.Tensor, k: int, seed: int) -> KMeans:
        return KMeans(k, n_init=int(self.n_init), random_state=seed).fit(z.detach().cpu().double().numpy())

    # pre-training ---------------------------------------------------------------------------

    def pretrain(self, sources) -> GFMUC:
        """Pre-train the encoder (DGI) and the confident prototypes on ``sources``.

        Args:
            sources: a ``Data`` (one node-level domain), a list of ``Data``/lists of ``Data``: each ``Data``
                is a node-clustering domain, each list a graph-clustering set.
        """
        self._validate()
        self._device = resolve_device(self.device)
        if isinstance(sources, torch.Tensor) or sources is None:
            raise TypeError("sources must be a Data or a list of Data / lists of Data")
        items = [sources] if not isinstance(sources, (list, tuple)) else list(sources)
        if not items:
            raise ValueError("sources is empty: pre-training needs at least one source graph")
        doms = [self._prepare(it, f"sources[{i}]") for i, it in enumerate(items)]
        self.isolated_nodes_ = {f"sources[{i}]": d.isolated for i, d in enumerate(doms)}
        self.source_levels_ = [d.level for d in doms]
        dev = torch.device(self._device)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._seed(0))
            enc = SubgraphEncoder(int(self.feature_dim), int(self.hidden_channels), conv=self.encoder).to(dev)
            dgi = DeepGraphInfomax(int(self.hidden_channels), encoder=enc, summary=_summary,
                                   corruption=_corruption).to(dev)
            opt = torch.optim.Adam(dgi.parameters(), lr=float(self.lr))

            def dgi_loss():
                return sum(dgi.loss(*dgi(d.x, d.edge_index)) for d in doms) / len(doms)

            for epoch in range(int(self.pretrain_epochs)):
                opt.zero_grad()
                loss = dgi_loss()
                _finite(loss, "DGI", epoch)
                loss.backward()
                opt.step()
            with torch.no_grad():
                z = torch.cat([self._embed(enc, d) for d in doms])
            if int(self.num_prototypes) == 0:
                g = torch.Generator().manual_seed(self._seed(1))
                idx = torch.randperm(z.size(0), generator=g)[:256].to(dev)
                support, weights = z[idx], torch.full((idx.numel(),), 1.0 / idx.numel(), device=dev)
                self.confident_index_ = torch.empty(0, dtype=torch.long)
            else:
                support, weights = self._prototypes(enc, dgi, doms, z, dgi_loss)
        self.encoder_ = enc.eval()
        self.prototypes_ = support.detach()
        self.prototype_weights_ = weights.detach()
        self.n_source_units_ = int(sum(d.n_units for d in doms))
        for name in ("adapter_", "head_", "n_clusters_"):
            self.__dict__.pop(name, None)
        return self

    def _prototypes(self, enc, dgi, doms, z, dgi_loss):
        p = min(int(self.num_prototypes), z.size(0))
        if p < int(self.num_prototypes):
            log.warning("num_prototypes=%d capped at the %d source subgraphs", self.num_prototypes, p)
        km = self._kmeans(z, p, self._seed(2))
        centroids = torch.as_tensor(km.cluster_centers_, dtype=z.dtype, device=z.device)
        keep = select_confident(assignment_margin(z, centroids), float(self.confidence)).to(z.device)
        labels = torch.as_tensor(km.labels_, device=z.device)[keep]
        counts = torch.bincount(labels, minlength=p).to(z.dtype)
        init = centroids.clone()
        for j in range(p):
            if counts[j] > 0:
                init[j] = z[keep][labels == j].mean(0)
        mu = nn.Parameter(init)
        opt = torch.optim.Adam([*dgi.parameters(), mu], lr=float(self.lr))
        offsets = np.cumsum([0] + [d.n_units for d in doms])
        # read out only the kept units: their (member, center) pairs, centers renumbered in keep order
        kept = []
        for i, d in enumerate(doms):
            local = keep[(keep >= offsets[i]) & (keep < offsets[i + 1])] - int(offsets[i])
            rank = torch.full((d.n_units,), -1, dtype=torch.long, device=keep.device)
            rank[local] = torch.arange(local.numel(), device=keep.device)
            sel = rank[d.center] >= 0
            kept.append((d.member[sel], rank[d.center[sel]], local.numel()))
        for epoch in range(int(self.prototype_epochs)):
            opt.zero_grad()
            zk = torch.cat([subgraph_readout(enc(d.x, d.edge_index), m, c, n)
                            for d, (m, c, n) in zip(doms, kept)])
            loss = dgi_loss() + float(self.kl_weight) * dec_kl(soft_assign(zk, mu))
            _finite(loss, "prototype", epoch)
            loss.backward()
            opt.step()
        self.confident_index_ = keep.cpu()
        self.source_offsets_ = offsets.tolist()
        weights = (counts + 1) / (counts + 1).sum()  # +1: no prototype weighs zero
        return mu, weights

    # fine-tuning ----------------------------------------------------------------------------

    def _check_pretrained(self) -> None:
        if not hasattr(self, "encoder_"):
            raise NotFittedError("GFMUC is not pre-trained: call pretrain(sources) (or GFMUC.load) before "
                                 "finetune/predict")

    def finetune(self, target, n_clusters: int) -> GFMUC:
        """Label-free fine-tuning on ``target`` (a ``Data`` or a list of ``Data``) for ``n_clusters`` clusters."""
        self._check_pretrained()
        self._device = resolve_device(self.device)
        dom = self._prepare(target, "target")
        k = check_int(n_clusters, "n_clusters", minimum=2)
        if k > dom.n_units:
            raise ValueError(f"n_clusters={k} exceeds the target's {dom.n_units} {'nodes' if dom.level == 'node' else 'graphs'}")
        self.isolated_nodes_target_ = dom.isolated
        dev = torch.device(self._device)
        d = int(self.hidden_channels)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._seed(3))
            enc = copy.deepcopy(self.encoder_).to(dev)
            enc.requires_grad_(self.tune_encoder)
            adapter = nn.Linear(d, d).to(dev)
            with torch.no_grad():
                adapter.weight.copy_(torch.eye(d))
                adapter.bias.zero_()
            support, weights = self.prototypes_.to(dev), self.prototype_weights_.to(dev)
            gen = torch.Generator().manual_seed(self._seed(4))

            def embed():
                if self.tune_encoder:
                    enc.train()
                    return self._embed(enc, dom)
                return z_frozen

            with torch.no_grad():
                z_frozen = self._embed(enc, dom)
                # the RBF bandwidth, fixed once by the median heuristic on the unaligned embeddings
                sigma2 = median_bandwidth(z_frozen[torch.randperm(z_frozen.size(0), generator=gen)[:ALIGN_BATCH]],
                                          support)

            def align_term(h):
                if self.align is None:
                    return h.new_zeros(())
                idx = torch.randperm(h.size(0), generator=gen)[:ALIGN_BATCH].to(dev)  # a batch keeps MMD/OT cheap
                return alignment_loss(self.align, h[idx], support, weights, sigma2)

            extra = [{"params": enc.parameters(), "lr": float(self.lr) / 10}] if self.tune_encoder else []
            if self.align is not None:
                opt = torch.optim.Adam([{"params": adapter.parameters()}, *extra], lr=float(self.lr))
                for epoch in range(int(self.align_epochs)):
                    opt.zero_grad()
                    loss = align_term(adapter(embed()))
                    _finite(loss, "alignment", epoch)
                    loss.backward()
                    opt.step()
            with torch.no_grad():
                h0 = adapter(embed())
            km = self._kmeans(h0, k, self._seed(5))
            head = nn.Parameter(torch.as_tensor(km.cluster_centers_, dtype=h0.dtype, device=dev))
            opt = torch.optim.Adam([{"params": [*adapter.parameters(), head]}, *extra], lr=float(self.lr))
            for epoch in range(int(self.head_epochs)):
                opt.zero_grad()
                h = adapter(embed())
                loss = float(self.kl_weight) * dec_kl(soft_assign(h, head)) + float(self.align_weight) * align_term(h)
                _finite(loss, "head", epoch)
                loss.backward()
                opt.step()
        if self.tune_encoder:
            self.encoder_ = enc.eval()
        self.adapter_ = adapter.eval()
        self.head_ = head.detach()
        self.n_clusters_ = k
        return self

    # inference ------------------------------------------------------------------------------

    @torch.no_grad()
    def embed(self, target) -> torch.Tensor:
        """Subgraph embeddings of ``target`` after the fitted adapter (``[units, d]``)."""
        self._check_pretrained()
        if not hasattr(self, "adapter_"):
            raise NotFittedError("GFMUC is not fine-tuned: call finetune(target, n_clusters) first")
        self._device = resolve_device(self.device)
        dom = self._prepare(target, "target")
        return self.adapter_(self._embed(self.encoder_, dom)).cpu()

    @torch.no_grad()
    def predict_proba(self, target) -> torch.Tensor:
        """Soft cluster assignments ``Q`` of the target's units, ``[units, K]``."""
        return soft_assign(self.embed(target), self.head_.cpu())

    def predict(self, target) -> np.ndarray:
        """Cluster labels (``0..K-1``) of the target's nodes (a ``Data``) or graphs (a list of ``Data``)."""
        return self.predict_proba(target).argmax(1).numpy()

    def fit_predict(self, target, n_clusters: int) -> np.ndarray:
        """``finetune(target, n_clusters).predict(target)``."""
        return self.finetune(target, n_clusters).predict(target)

    # persistence ----------------------------------------------------------------------------

    def save(self, path) -> Path:
        """Save everything (config, encoder, prototypes, adapter and head) to one file (``torch.save``)."""
        self._check_pretrained()
        doc = {"format": _FORMAT, "params": {k: v for k, v in self.get_params().items()},
               "encoder": self.encoder_.state_dict(), "prototypes": self.prototypes_.cpu(),
               "prototype_weights": self.prototype_weights_.cpu()}
        if hasattr(self, "adapter_"):
            doc.update(adapter=self.adapter_.state_dict(), head=self.head_.cpu(), n_clusters=int(self.n_clusters_))
        path = Path(path)
        atomic_torch_save(doc, path)
        return path

    @classmethod
    def load(cls, path, *, device: str | None = None) -> GFMUC:
        """A model saved by :meth:`save` (``torch.load(weights_only=True)``)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no saved GFMUC model at {path}")
        doc = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
            raise ValueError(f"{path} does not hold a saved GFMUC model")
        params = dict(doc["params"])
        if device is not None:
            params["device"] = device
        model = cls(**params)
        model._device = resolve_device(model.device)
        dev = torch.device(model._device)
        enc = SubgraphEncoder(int(model.feature_dim), int(model.hidden_channels), conv=model.encoder)
        enc.load_state_dict(doc["encoder"])
        model.encoder_ = enc.to(dev).eval()
        model.prototypes_ = doc["prototypes"].to(dev)
        model.prototype_weights_ = doc["prototype_weights"].to(dev)
        if "adapter" in doc:
            d = int(model.hidden_channels)
            adapter = nn.Linear(d, d)
            adapter.load_state_dict(doc["adapter"])
            model.adapter_ = adapter.to(dev).eval()
            model.head_ = doc["head"].to(dev)
            model.n_clusters_ = int(doc["n_clusters"])
        return model


def silhouette(model: GFMUC, target, labels) -> float:
    """Silhouette of ``labels`` in the model's fine-tuned embedding space (label-free; claim 3's metric)."""
    from sklearn.metrics import silhouette_score

    if len(np.unique(labels)) < 2:
        return float("nan")
    return float(silhouette_score(model.embed(target).numpy(), labels))


