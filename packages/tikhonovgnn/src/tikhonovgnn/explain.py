"""Explanations through ``torch_geometric.explain``: the q-ranking as a PyG explainer, and its faithfulness.

:class:`QExplainer` is an ``ExplainerAlgorithm`` whose node mask is the Tikhonov layer's gauge-fixed
``q``: no optimisation, so it is deterministic. Faithfulness is measured by masking, not read off the
parameters (a deep Q-network could hide the prediction inside ``q``): PyG's ``fidelity`` with the
top-k ``q`` nodes against k random nodes and against the ground-truth motif, and the AUROC of the
``q`` ranking against the motif mask, with GNNExplainer on GIN as the reference explainer.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor
from torch_geometric.explain import Explainer, Explanation
from torch_geometric.explain.algorithm import ExplainerAlgorithm, GNNExplainer
from torch_geometric.explain.metric import fidelity

from paperworks.metrics import auroc, spearman

__all__ = ["QExplainer", "make_explainer", "motif_faithfulness", "rerun_agreement", "rank_agreement"]

_MODEL_CONFIG = {"mode": "multiclass_classification", "task_level": "graph", "return_type": "raw"}


class QExplainer(ExplainerAlgorithm):
    """Node mask = the Tikhonov layer's ``q`` (``model.explain(x, edge_index)["q"]``)."""

    def forward(self, model, x: Tensor, edge_index: Tensor, *, target: Tensor, index=None, **kwargs) -> Explanation:
        q = model.explain(x, edge_index, kwargs.get("batch"))["q"]
        return Explanation(node_mask=q.detach()[:, None])

    def supports(self) -> bool:
        return self.explainer_config.node_mask_type is not None


def make_explainer(model, algorithm: str = "q", *, top_k: int | None = None, epochs: int = 100) -> Explainer:
    """A PyG ``Explainer`` for a graph classifier: ``q`` (Tikhonov), ``gnnexplainer`` or a hard top-k mask."""
    if algorithm == "q":
        algo = QExplainer()
    elif algorithm == "gnnexplainer":
        algo = GNNExplainer(epochs=epochs)
    else:
        raise ValueError(f"algorithm must be 'q' or 'gnnexplainer', got {algorithm!r}")
    thr = {"threshold_type": "topk", "value": int(top_k)} if top_k else None
    return Explainer(model, algo, explanation_type="model", node_mask_type="object", edge_mask_type=None,
                     model_config=_MODEL_CONFIG, threshold_config=thr)


def _with_mask(expl: Explanation, mask: Tensor) -> Explanation:
    out = expl.clone()
    out.node_mask = mask.to(expl.node_mask.dtype).view(-1, 1)
    return out


def motif_faithfulness(model, gin, graphs, *, top_k: int = 5, gnnexplainer_epochs: int = 100, seed: int = 0,
                       masks: dict | None = None) -> dict:
    """Per-graph faithfulness of the ``q`` explanation on motif graphs (with ``node_mask``).

    Returns mean over ``graphs`` of: ``auroc_q`` (q ranking vs motif), ``auroc_gnnexplainer`` (GNNExplainer
    on ``gin`` vs motif), and PyG fidelity+ / fidelity- of the Tikhonov model when masking the top-k
    ``q`` nodes, k random nodes, or the motif nodes. ``masks`` (a dict) receives the per-graph node
    masks, ``masks["q"]`` and ``masks["gnnexplainer"]`` (lists of numpy arrays).
    """
    gen = torch.Generator().manual_seed(seed)
    soft_q = make_explainer(model, "q")
    hard_q = make_explainer(model, "q", top_k=top_k)
    gnnx = make_explainer(gin, "gnnexplainer", epochs=gnnexplainer_epochs)
    rows = []
    for g in graphs:
        truth = g.node_mask.bool()
        q = soft_q(g.x, g.edge_index).node_mask.view(-1)
        torch.manual_seed(int(torch.randint(2**31, (1,), generator=gen)))
        gm = gnnx(g.x, g.edge_index).node_mask.view(-1)
        hard = hard_q(g.x, g.edge_index)
        rand = torch.zeros(g.num_nodes)
        rand[torch.randperm(g.num_nodes, generator=gen)[:top_k]] = 1.0
        if masks is not None:
            masks.setdefault("q", []).append(q.numpy().copy())
            masks.setdefault("gnnexplainer", []).append(gm.detach().numpy().copy())
        row = {"auroc_q": auroc(truth.numpy(), q.numpy()), "auroc_gnnexplainer": auroc(truth.numpy(), gm.numpy())}
        for name, e in (("q", hard), ("random", _with_mask(hard, rand)), ("motif", _with_mask(hard, truth.float()))):
            row[f"fid_plus_{name}"], row[f"fid_minus_{name}"] = fidelity(hard_q, e)
        rows.append(row)
    return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}


def rerun_agreement(model, gin, graphs, *, gnnexplainer_epochs: int = 100, seed: int = 0) -> dict:
    """Spearman correlation of node masks between two reruns of each explainer on the same model."""
    q_expl = make_explainer(model, "q")
    gnnx = make_explainer(gin, "gnnexplainer", epochs=gnnexplainer_epochs)
    out = {"q": [], "gnnexplainer": []}
    for i, g in enumerate(graphs):
        a = q_expl(g.x, g.edge_index).node_mask.view(-1).numpy()
        b = q_expl(g.x, g.edge_index).node_mask.view(-1).numpy()
        out["q"].append(1.0 if np.array_equal(a, b) else spearman(a, b))
        torch.manual_seed(seed + 2 * i)
        a = gnnx(g.x, g.edge_index).node_mask.view(-1).numpy()
        torch.manual_seed(seed + 2 * i + 1)
        b = gnnx(g.x, g.edge_index).node_mask.view(-1).numpy()
        out["gnnexplainer"].append(spearman(a, b))
    return {k: float(np.mean(v)) for k, v in out.items()}


def rank_agreement(a, b) -> float:
    """Spearman correlation of two node masks; a constant mask agrees only with another constant one."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 1.0 if np.ptp(a) == np.ptp(b) == 0 else 0.0
    return spearman(a, b)
