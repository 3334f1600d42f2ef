"""Reference judges that use no model: what a rater must beat before its agreement means anything.

- :func:`length_judge`: ranks problems by text length (longer = more interesting), a point mass on the
  scale; the strongest trivial cue when the problems' texts are the only input.
- :func:`constant_judge`: every problem gets the population's overall rating histogram (the best
  problem-blind distribution; it cannot rank).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mathinterest.data import SCALE, check_humans, problems_frame, rating_frame


def length_judge(problems) -> pd.DataFrame:
    """Point mass at ``1 + round(6 · rank(len(text)) / (n − 1))`` per problem (ties broken by order)."""
    df = problems_frame(problems)
    L = df["text"].str.len().to_numpy(float)
    rank = np.argsort(np.argsort(L, kind="stable"), kind="stable")
    k = np.rint(6 * rank / max(len(L) - 1, 1)).astype(int)
    return rating_frame(df["problem_id"], np.eye(len(SCALE))[k])


def constant_judge(humans, problem_ids=None) -> pd.DataFrame:
    """Each population's pooled rating histogram for every problem (with a ``population`` column)."""
    humans = check_humans(humans)
    frames = []
    for pop, sub in humans.groupby("population"):
        ids = sorted(map(str, sub["problem_id"].unique())) if problem_ids is None else [str(i) for i in problem_ids]
        h = np.bincount(sub["rating"].astype(int), minlength=8)[1:].astype(float)
        df = rating_frame(ids, np.repeat((h / h.sum())[None], len(ids), 0))
        df.insert(1, "population", str(pop))
        frames.append(df)
    return pd.concat(frames, ignore_index=True)
