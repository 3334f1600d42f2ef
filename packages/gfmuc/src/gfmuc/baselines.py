"""Target-only baselines: k-means on features, spectral clustering, DGI + k-means and DMoN.

Every baseline sees the same SVD-cut features (``feature_dim`` columns), the same ``K``, k-means with
``n_init`` restarts, fixed epochs and the seed; none reads labels.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.cluster import KMeans, SpectralClustering
from torch_geometric.nn import DMoNPooling, global_mean_pool
from torch_geometric.utils import to_dense_adj

from gfmuc.data import as_domain, svd_features
from gfmuc.encoder import SubgraphEncoder
from gfmuc.foundation import GFMUC


def _features(target, feature_dim: int):
    data, level = as_domain(target, "target")
    x = svd_features(data.x, feature_dim)
    return data, level, x


def kmeans_features(target, n_clusters: int, *, feature_dim: int = 32, n_init: int = 10, seed: int = 0) -> np.ndarray:
    """k-means on the SVD-cut node features (graph-level: on each graph's mean feature vector)."""
    data, level, x = _features(target, feature_dim)
    if level == "graph":
        x = global_mean_pool(x, data.batch)
    return KMeans(n_clusters, n_init=n_init, random_state=seed).fit_predict(x.double().numpy())


def spectral(target, n_clusters: int, *, n_init: int = 10, seed: int = 0) -> np.ndarray:
    """Spectral clustering (scikit-learn) on the precomputed symmetric adjacency (node level only)."""
    data, level = as_domain(target, "target")
    if level != "node":
        raise ValueError("spectral clustering here is node-level: target must be one Data")
    n = data.num_nodes
    ei = data.edge_index.numpy()
    a = sp.coo_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(float)
    sc = SpectralClustering(n_clusters, affinity="precomputed", n_init=n_init, random_state=seed,
                            assign_labels="kmeans")
    return sc.fit_predict(a)


def dgi_kmeans(target, n_clusters: int, *, seed: int = 0, **params) -> np.ndarray:
    """DGI trained on the target alone, then k-means on its subgraph embeddings.

    The GFM-UC pipeline with the target as its only source and neither prototypes nor alignment nor
    head: the same encoder, readout, epochs and k-means restarts.
    """
    params = {**params, "num_prototypes": 0, "align": None, "random_state": seed}
    m = GFMUC(**params).pretrain([target])
    dom = m._prepare(target, "target")
    with torch.no_grad():
        z = m._embed(m.encoder_, dom)
    return m._kmeans(z, n_clusters, seed).labels_


def from_scratch(target, n_clusters: int, *, seed: int = 0, **params) -> np.ndarray:
    """The whole GFM-UC pipeline trained on the target itself (DGI, prototypes, head; no sources)."""
    m = GFMUC(**{**params, "random_state": seed}).pretrain([target])
    return m.fit_predict(target, n_clusters)


def dmon(target, n_clusters: int, *, feature_dim: int = 32, hidden_channels: int = 64, epochs: int = 200,
         lr: float = 1e-3, seed: int = 0) -> np.ndarray:
    """DMoN (Tsitsulin et al., 2023) on the target: a 2-layer GCN, then ``DMoNPooling`` trained on its
    spectral (modularity), orthogonality and collapse losses; labels = argmax of the soft assignment."""
    data, level, x = _features(target, feature_dim)
    if level != "node":
        raise ValueError("DMoN here is node-level: target must be one Data")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        enc = SubgraphEncoder(feature_dim, hidden_channels)
        pool = DMoNPooling([hidden_channels], n_clusters)
        adj = to_dense_adj(data.edge_index, max_num_nodes=data.num_nodes)
        opt = torch.optim.Adam([*enc.parameters(), *pool.parameters()], lr=lr)
        for _ in range(epochs):
            opt.zero_grad()
            s, _, _, spectral_loss, ortho_loss, cluster_loss = pool(enc(x, data.edge_index).unsqueeze(0), adj)
            (spectral_loss + ortho_loss + cluster_loss).backward()
            opt.step()
        with torch.no_grad():
            s, *_ = pool(enc(x, data.edge_index).unsqueeze(0), adj)
    return s[0].argmax(1).numpy()
