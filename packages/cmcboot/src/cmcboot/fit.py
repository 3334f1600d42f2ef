"""``cmcboot fit data.path=...``: the model-based bootstrap on a user's trajectories.

Reads the file (:func:`cmcboot.data.load_trajectories`), fits :class:`cmcboot.ModelBootstrap`
and writes, for the configured policy and rewards, the interval of every requested target entry
(``intervals.csv``, also ``metrics.csv``) with the visit counts behind it, and in ``results.json``
what the data held: rows read and skipped (with line numbers), trajectories, pairs never visited,
states never reached.
"""

from __future__ import annotations

import csv
import io
import logging
import warnings
from pathlib import Path

import numpy as np

from cmcboot.bootstrap import ModelBootstrap
from cmcboot.data import load_trajectories
from paperworks import Claim
from paperworks.hydra_glue import ConfigError
from paperworks.results import atomic_write_text

log = logging.getLogger(__name__)


def _table(value, name):
    from omegaconf import OmegaConf

    if OmegaConf.is_config(value):
        value = OmegaConf.to_container(value, resolve=True)
    if isinstance(value, str):
        raise ConfigError(f"config key {name!r}: expected {'uniform' if name == 'policy' else 'data'} "
                          f"or a table (list of lists), got {value!r}")
    return np.asarray(value)


def run_fit(cfg, out_dir: Path | None = None) -> dict:
    if not cfg.data.get("path"):
        raise ConfigError("config key 'data.path': give your trajectory file, e.g. cmcboot fit data.path=traj.csv")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            traj, report = load_trajectories(cfg.data.path, columns=dict(cfg.data.columns),
                                             n_states=cfg.n_states, n_actions=cfg.n_actions)
            mb = ModelBootstrap(regime=str(cfg.regime), n_boot=cfg.n_boot, seed=cfg.seed, unvisited=str(cfg.unvisited),
                                n_states=cfg.n_states, n_actions=cfg.n_actions).fit(traj)
        for w in caught:
            log.warning("%s", w.message)
        S, A = mb.n_states_, mb.n_actions_
        policy = np.full((S, A), 1.0 / A) if str(cfg.policy) == "uniform" else _table(cfg.policy, "policy")
        if str(cfg.rewards) == "data":
            if mb.rewards_ is None:
                raise ConfigError("config key 'rewards': the data have no reward column; give rewards as an "
                                  f"({S}, {A}) table or name the column with data.columns.reward=")
            rewards = mb.rewards_
        else:
            rewards = _table(cfg.rewards, "rewards")
        rows, ties = [], {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # the unvisited pairs are reported in results.json
            for target in cfg.targets:
                target = str(target)
                lo, hi, info = mb.interval(target, policy=None if target == "Qstar" else policy, rewards=rewards,
                                           gamma=cfg.gamma, level=cfg.level, method=str(cfg.method), log=True)
                est = info["estimate"]
                if target == "Qstar":
                    ties = {"states_with_tied_optimal_actions": np.flatnonzero(info["ties"]).tolist()}
                for idx in np.ndindex(est.shape):
                    s = idx[0]
                    a = idx[1] if len(idx) == 2 else None
                    rows.append({"target": target, "state": s, "action": "" if a is None else a,
                                 "estimate": float(est[idx]), "lower": float(lo[idx]), "upper": float(hi[idx]),
                                 "level": float(cfg.level), "method": str(cfg.method),
                                 "visits_state": int(mb.visits_[s].sum()),
                                 "visits_pair": "" if a is None else int(mb.visits_[s, a]),
                                 "pair_unvisited": "" if a is None else bool(mb.unvisited_[s, a]),
                                 "state_reached": s not in set(mb.unreached_states_.tolist())})
    except (ValueError, TypeError, FileNotFoundError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(str(e)) from None
    if out_dir is not None:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_text(Path(out_dir) / "intervals.csv", buf.getvalue())
    log.info("%d trajectories, %d rows (%d skipped); %d of %d states never reached, %d unvisited pairs; "
             "%d intervals", report["trajectories"], report["rows"], len(report["skipped"]), mb.n_unreached_, S,
             mb.n_unvisited_, len(rows))
    extra = {"data": {"path": str(cfg.data.path), "rows": report["rows"], "n_skipped": len(report["skipped"]),
                      "skipped": [{"line": ln, "reason": why} for ln, why in report["skipped"][:100]],
                      "trajectories": report["trajectories"]},
             "n_states": S, "n_actions": A, "n_states_inferred": cfg.n_states is None,
             "n_actions_inferred": cfg.n_actions is None, "n_unvisited_pairs": mb.n_unvisited_,
             "unreached_states": mb.unreached_states_.tolist(), "replicate_support": int(mb.support_.size), **ties}
    n_rows = sum(len(t) for t in traj)
    checks = [
        Claim.check("intervals_ordered", "Every interval has lower <= upper.", "intervals with lower > upper",
                    float(sum(r["lower"] > r["upper"] for r in rows)), threshold=0.0, better="lower"),
        Claim.check("counts_are_the_data", "The counts N(s, a, s') add up to the transitions read.",
                    "|sum of counts - transitions read|", float(abs(int(mb.counts_.sum()) - n_rows)),
                    threshold=0.0, better="lower"),
        Claim.check("replicates_keep_length", "Every replicate holds as many transitions as the data.",
                    "max |replicate transitions - transitions read|",
                    float(np.abs(mb.boot_counts_.sum((1, 2, 3)) - n_rows).max()), threshold=0.0, better="lower")]
    return {"claims": [], "checks": checks, "metrics": rows, "extra": extra, "seeds": [int(cfg.seed)]}
