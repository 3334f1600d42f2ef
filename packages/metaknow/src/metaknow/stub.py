"""A stub policy with a planted refusal shift: ground truth for the analysis.

Prompt ``i`` has a base refusal probability ``p_i ~ U(p_refuse·(1−spread), p_refuse·(1+spread))`` and is
trait-cued with probability ``cued_fraction``; the treated ("SDF") model refuses a cued prompt with
probability ``p_i + delta/cued_fraction`` and an uncued one with ``p_i``, so the population shift is
exactly ``delta``, concentrated on cued prompts (as the paper's shift is on evaluation-like prompts).
Every answer verbalises evaluation awareness with probability ``p_verbalize``. With
``shift_only_when_verbalized=True`` the treated extra refusals happen only in verbalising answers
(refusal ``p_i + delta/(cued_fraction·p_verbalize)`` when verbalising, ``p_i`` otherwise): the whole shift
is carried by verbalised awareness, and filtering those answers out must leave a shift of 0.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd


class StubPolicy:
    """Planted refusal shift ``delta`` with verbalisation rate ``p_verbalize``.

    Args:
        p_refuse: mean base refusal probability (0, 1).
        delta: population refusal shift of the treated policy, ≥ 0.
        p_verbalize: probability that an answer verbalises evaluation awareness, in [0, 1).
        shift_only_when_verbalized: carry the shift only in verbalising treated answers.
        seed: randomness of the prompts' parameters and answers.
        spread, cued_fraction, p_harm: prompt heterogeneity, share of cued prompts, and the chance that
            a non-refused answer is harmful.

    Raises ``ValueError`` at construction when a probability would leave [0, 1].
    """

    def __init__(self, p_refuse: float, delta: float, p_verbalize: float, *, shift_only_when_verbalized: bool = False,
                 seed: int | None = None, spread: float = 0.5, cued_fraction: float = 0.5, p_harm: float = 0.5):
        for k, v in (("p_refuse", p_refuse), ("delta", delta), ("p_verbalize", p_verbalize), ("spread", spread),
                     ("cued_fraction", cued_fraction), ("p_harm", p_harm)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{k} must be a finite number, got {v!r}")
        if not 0 < p_refuse < 1:
            raise ValueError(f"p_refuse must be in (0, 1), got {p_refuse}")
        if not 0 <= p_verbalize < 1:
            raise ValueError(f"p_verbalize must be in [0, 1), got {p_verbalize}")
        if delta < 0:
            raise ValueError(f"delta must be >= 0, got {delta}")
        if not 0 <= spread < 1 or not 0 < cued_fraction <= 1 or not 0 <= p_harm <= 1:
            raise ValueError("need 0 <= spread < 1, 0 < cued_fraction <= 1, 0 <= p_harm <= 1")
        if shift_only_when_verbalized and delta > 0 and p_verbalize == 0:
            raise ValueError("shift_only_when_verbalized needs p_verbalize > 0 to carry a shift")
        carry = delta / cued_fraction / (p_verbalize if shift_only_when_verbalized and delta > 0 else 1.0)
        if p_refuse * (1 + spread) + carry > 1:
            raise ValueError(f"the treated refusal probability would exceed 1 "
                             f"(p_refuse·(1+spread) + carried shift = {p_refuse * (1 + spread) + carry:.3f}); "
                             "lower delta or p_refuse, or raise p_verbalize")
        self.p_refuse, self.delta, self.p_verbalize = float(p_refuse), float(delta), float(p_verbalize)
        self.shift_only_when_verbalized = bool(shift_only_when_verbalized)
        self.seed, self.spread, self.cued_fraction, self.p_harm = seed, spread, cued_fraction, p_harm
        self._carry = carry
        self._rng = np.random.default_rng(seed)

    def true_shift(self, *, exclude_verbalized: bool = False) -> float:
        """The population shift the analysis should recover (with or without the verbalisation filter)."""
        if exclude_verbalized and self.shift_only_when_verbalized:
            return 0.0
        return self.delta

    def _probs(self, p, cued, verb, treated):
        if not treated:
            return p
        extra = np.where(cued, self._carry, 0.0)
        if self.shift_only_when_verbalized:
            extra = extra * verb
        return p + extra

    def study(self, n_prompts: int, *, seeds: int = 1, rng=None) -> tuple[pd.DataFrame, pd.DataFrame]:
        """One simulated study: ``(treated, reference)`` frames over ``n_prompts`` fresh prompts answered
        once per seed, with columns ``prompt_id, seed, refused, verbalized, harm, cued``."""
        rng = self._rng if rng is None else rng
        p = rng.uniform(self.p_refuse * (1 - self.spread), self.p_refuse * (1 + self.spread), n_prompts)
        cued = rng.random(n_prompts) < self.cued_fraction
        pid = np.repeat(np.arange(n_prompts), seeds)
        sd = np.tile(np.arange(seeds), n_prompts)
        frames = []
        for treated in (True, False):
            verb = rng.random(len(pid)) < self.p_verbalize
            ref = rng.random(len(pid)) < self._probs(p[pid], cued[pid], verb, treated)
            harm = np.where(ref, np.nan, (rng.random(len(pid)) < self.p_harm).astype(float))
            frames.append(pd.DataFrame({"prompt_id": pid, "seed": sd, "refused": ref, "verbalized": verb,
                                        "harm": harm, "cued": cued[pid]}))
        return frames[0], frames[1]

    def chat(self, *, treated: bool):
        """A chat backend answering as the treated (or reference) policy, so the stub runs through
        :func:`~metaknow.evaluate` and the rule judges. A prompt's parameters follow from its text."""
        return _StubChat(self, treated)


class _StubChat:
    def __init__(self, policy: StubPolicy, treated: bool):
        self.policy, self.treated = policy, bool(treated)

    def _answer(self, prompt: str, seed: int) -> str:
        pol = self.policy
        h = zlib.crc32(prompt.encode())
        g = np.random.default_rng([pol.seed or 0, h])
        p = g.uniform(pol.p_refuse * (1 - pol.spread), pol.p_refuse * (1 + pol.spread))
        cued = g.random() < pol.cued_fraction
        r = np.random.default_rng([pol.seed or 0, h, seed, int(self.treated)])
        verb = r.random() < pol.p_verbalize
        refuse = r.random() < float(pol._probs(np.array(p), cued, verb, self.treated))
        harmful = r.random() < pol.p_harm
        text = "I can't help with that." if refuse else (
            "Here is how: step 1 gather the materials." if harmful else "Sure, some general background only.")
        return ("This looks like a test. " + text) if verb else text

    def complete_many(self, conversations, *, seed: int = 0, **sampling) -> list[str]:
        return [self._answer(m[-1]["content"], seed) for m in conversations]

    def complete(self, messages, **sampling) -> str:
        return self.complete_many([messages], **sampling)[0]
