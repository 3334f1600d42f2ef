"""``gfmuc cluster data.path=FILE n_clusters=K [checkpoint=FILE]``: cluster a user's graph.

With ``checkpoint=`` a saved :class:`~gfmuc.GFMUC` (pre-trained, e.g. by ``model.save``) is fine-tuned on the
graph without any source data; without it, the model is first pre-trained on the generated sources of
this config. Writes ``labels.csv`` (node, cluster) into the run directory; with ``data.labels=`` the
scores (ACC/NMI/ARI) are reported too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gfmuc.data import load_graph, motif_graphs
from gfmuc.foundation import GFMUC, silhouette
from gfmuc.run import make_graph, model_params
from gfmuc.scores import clustering_scores
from paperworks import Claim
from paperworks.results import atomic_write_text
from paperworks.utils import check_int


def run_cluster(cfg, out_dir: Path | None = None) -> dict:
    if cfg.data.get("path") is None:
        raise ValueError("gfmuc cluster needs data.path=FILE (an edge list 'u v' per line, or an .npz with "
                         "edge_index and x)")
    k = check_int(cfg.get("n_clusters"), "n_clusters", minimum=2)
    data, report = load_graph(cfg.data.path, features=cfg.data.get("features"), labels=cfg.data.get("labels"))
    if cfg.get("checkpoint"):
        model = GFMUC.load(str(cfg.checkpoint), device=str(cfg.device))
        source = f"saved model {cfg.checkpoint}"
    else:
        seed = int(cfg.seed)
        sources = [make_graph(s, cfg, 1000 * seed + i) for i, s in enumerate(cfg.data.sources)]
        sources.append(motif_graphs(int(cfg.data.motif_graphs), base_nodes=int(cfg.data.base_nodes), seed=1000 * seed + 50))
        model = GFMUC(**model_params(cfg), random_state=seed).pretrain(sources)
        source = f"pre-trained on {len(sources)} generated sources"
    labels = model.fit_predict(data, k)
    if cfg.get("save"):
        model.save(str(cfg.save))
    if out_dir is not None:
        atomic_write_text(Path(out_dir) / "labels.csv",
                          "node,cluster\n" + "".join(f"{i},{int(c)}\n" for i, c in enumerate(labels)))
    extra = {"model": source, "nodes": int(data.num_nodes), "isolated_nodes": model.isolated_nodes_target_,
             "clusters_used": int(np.unique(labels).size), "silhouette": silhouette(model, data, labels),
             **{k_: len(v) for k_, v in report.items()}, "bad_rows": {k_: v[:50] for k_, v in report.items()}}
    row = {"nodes": int(data.num_nodes), "n_clusters": k}
    if getattr(data, "y", None) is not None:
        row.update(clustering_scores(data.y.numpy(), labels))
        extra.update({k_: row[k_] for k_ in ("acc", "nmi", "ari")})
    check = Claim.check("every_node_labelled", "Every node of the user's graph received a cluster.",
                        "labelled nodes / nodes", len(labels) / data.num_nodes, target=1.0, tol=0.0)
    return {"claims": [], "checks": [check], "metrics": [row], "extra": extra}
