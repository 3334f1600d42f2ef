"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_vs_n(rows, cfg, path):
    plt = use_style()
    envs = list(cfg.envs)
    fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 3.6), squeeze=False)
    for ax, env_id in zip(axes[0], envs):
        for name in ("gtp", "mppi", "cem", "rs"):
            pts = {}
            for r in rows:
                if r["env"] == env_id and r["planner"] == name and r["N"] > 0:
                    pts.setdefault(r["N"], []).append(r["metric"])
            if pts:
                ns = sorted(pts)
                m = [np.mean(pts[n]) for n in ns]
                s = [np.std(pts[n]) for n in ns]
                ax.errorbar(ns, m, yerr=s, marker="o", capsize=3, label=name.upper())
        for name, ls in (("prior", "--"), ("td3bc", ":"), ("random", "-.")):
            v = [r["metric"] for r in rows if r["env"] == env_id and r["planner"] == name]
            if v:
                ax.axhline(np.mean(v), ls=ls, color="grey", label=name)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("N (samples per round)")
        ax.set_ylabel("success rate" if "Maze" in env_id else "return")
        ax.set_title(env_id)
        ax.legend(fontsize=7)
    return savefig(fig, path)


def plot_maze_paths(paths, path):
    from gtp.envs import GOAL, GOAL_RADIUS, START, WALL_HALF

    plt = use_style()
    fig, axes = plt.subplots(1, len(paths), figsize=(4 * len(paths), 4), squeeze=False)
    for ax, (name, ps) in zip(axes[0], paths.items()):
        ax.add_patch(plt.Rectangle(-WALL_HALF, *(2 * WALL_HALF), color="0.3"))
        ax.add_patch(plt.Circle(GOAL, GOAL_RADIUS, color="tab:green", alpha=0.4))
        for p in ps:
            p = np.asarray(p)
            ax.plot(p[:, 0], p[:, 1], lw=1)
        ax.plot(*START, "k^")
        ax.set_xlim(-1, 1)
        ax.set_ylim(-1, 1)
        ax.set_aspect("equal")
        ax.set_title(f"{name.upper()} (maze, first seed)")
    return savefig(fig, path)
