"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import networkx as nx

from paperworks.plotting import savefig, use_style


def plot_response_curves(lam, curves: dict, path):
    """The learned spectral response ``1/(1+p(λ))`` (mean over seeds) for each homophily level."""
    plt = use_style()
    fig, ax = plt.subplots()
    for h, r in sorted(curves.items()):
        ax.plot(lam, r, label=f"h = {h}")
    ax.set_xlabel("λ (normalised Laplacian eigenvalue)")
    ax.set_ylabel("response 1 / (1 + p(λ))")
    ax.set_title("Learned p on CSBMs")
    ax.legend()
    return savefig(fig, path)


def plot_q_graph(graph, q, path):
    """One motif graph, nodes coloured by q; ground-truth motif nodes outlined."""
    plt = use_style()
    G = nx.Graph()
    G.add_nodes_from(range(graph.num_nodes))
    G.add_edges_from(graph.edge_index.T.tolist())
    pos = nx.spring_layout(G, seed=0)
    fig, ax = plt.subplots()
    motif = graph.node_mask.bool().tolist()
    nodes = nx.draw_networkx_nodes(G, pos, node_color=q.tolist(), cmap="viridis", node_size=80, ax=ax,
                                   edgecolors=["red" if m else "none" for m in motif], linewidths=1.5)
    nx.draw_networkx_edges(G, pos, ax=ax, alpha=0.4)
    fig.colorbar(nodes, ax=ax, label="q (mean 1)")
    ax.set_title("q on a motif graph (red outline: motif)")
    ax.axis("off")
    return savefig(fig, path)


def plot_bench(rows, path):
    """Forward+backward time (median wall) and peak extra memory against the number of nodes."""
    plt = use_style()
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    for method in ("gcn", "cg", "cg_cheb", "dense"):
        rs = sorted((r for r in rows if r["method"] == method), key=lambda r: r["num_nodes"])
        if not rs:
            continue
        a.loglog([r["num_nodes"] for r in rs], [r["time_s"] for r in rs], "o-", label=method)
        mem = [r for r in rs if r.get("peak_extra_mib") is not None]  # memory is measured from bench.memory_min_nodes
        if mem:
            b.loglog([r["num_nodes"] for r in mem], [max(r["peak_extra_mib"], 1e-1) for r in mem], "o-", label=method)
    a.set_xlabel("nodes")
    a.set_ylabel("forward+backward (s)")
    b.set_xlabel("nodes")
    b.set_ylabel("peak extra memory (MiB)")
    a.legend()
    return savefig(fig, path)
