"""A simulated rating study with known truth (every output of it is *simulated*, never a finding).

Problems carry latent elegance ``e``, difficulty ``d`` and surprise ``s`` (standard normal). Each
population's mean latent interest is a fixed function of them (crowd: likes moderate difficulty;
IMO: likes elegance, dislikes routine problems), each rater adds a bias ``b ~ N(0, σ_b²)`` and noise
``ε ~ N(0, σ_ε²)``, and an ordinal probit maps the latent onto 1..7::

    crowd: μ = 0.5 e + 0.6 s + 0.4 d − 0.6 d² + 0.6
    imo:   μ = 1.0 e + 0.4 s + 0.6 d
    rating = k  iff  c_{k−1} < μ + b + ε ≤ c_k,   c = (−2.5, −1.5, …, 2.5)

Rationales (one pick per rater and problem) follow a multinomial logit in the latents with a
population intercept. Judges with known pathologies: ``J1`` a point mass at the rating nearest the
true mean; ``J2`` the true mean, over-dispersed (latent s.d. × 2.5, relocated so the mean is kept);
``J3`` a persona ensemble (rater biases sampled from the population: the multi-LLM remedy); ``J4``
the true rating distribution with random rationales. Reference judges: ``constant`` (the population's
histogram over all problems), ``length`` (ranks problems by text length), ``blind`` (J3 drawn from
the pooled population, the same for both: it cannot see population differences). The functional
forms and constants are ours (the paper's human data are unpublished).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.stats import norm

from mathinterest.data import PROB_COLUMNS, RATIONALES, SCALE, rating_frame
from mathinterest.generate import templated_problems
from paperworks import check_int

CUTS = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])
POPULATIONS = ("crowd", "imo")
JUDGES = ("J1", "J2", "J3", "J4", "constant", "length", "blind")
# rationale logits: rows = RATIONALES, columns = (elegance, difficulty, surprise)
_BETA = np.array([[1.5, 0.0, 0.0], [0.0, 0.0, 1.5], [0.0, 1.5, 0.0], [-0.5, -1.5, 0.0], [0.7, 0.3, 0.3],
                  [0.3, -0.5, 0.8]])
_ALPHA = {"crowd": np.array([0.0, 0.0, 0.0, 0.3, 0.0, 0.5]), "imo": np.array([0.5, 0.0, 0.3, 0.0, 0.0, 0.0])}


def ordinal_probs(mu, sd) -> np.ndarray:
    """``P(rating = k)`` for latent ``N(mu, sd²)`` through the cut-points, shape ``mu.shape + (7,)``."""
    mu = np.asarray(mu, float)[..., None]
    edges = np.concatenate([[-np.inf], CUTS, [np.inf]])
    cdf = norm.cdf((edges - mu) / sd)
    return np.diff(cdf, axis=-1)


def _softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


class SimulatedStudy:
    """Simulated problems, crowd and IMO raters, and judges with known pathologies.

    Args:
        n_problems, n_crowd, n_imo: sizes (the paper: 63 crowd and 48 IMO raters).
        seed: the study's random seed (problems, raters, judges' randomness).
        bias_sd, noise_sd: rater bias and per-rating noise on the latent scale.
        personas: the persona-ensemble judge's size.

    Example::

        study = SimulatedStudy(n_problems=40, seed=0)
        humans = study.ratings()
        rating_agreement(study.judge("J1"), humans, population="imo")["rho"]
    """

    def __init__(self, n_problems: int = 40, n_crowd: int = 60, n_imo: int = 48, seed: int | None = None, *,
                 bias_sd: float = 0.5, noise_sd: float = 0.9, personas: int = 16):
        self.n_problems = check_int(n_problems, "n_problems", minimum=3)
        self.n_raters = {"crowd": check_int(n_crowd, "n_crowd", minimum=4), "imo": check_int(n_imo, "n_imo", minimum=4)}
        self.personas = check_int(personas, "personas", minimum=1)
        for k, v in (("bias_sd", bias_sd), ("noise_sd", noise_sd)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise ValueError(f"{k} must be a positive finite number, got {v!r}")
        self.bias_sd, self.noise_sd, self.seed = float(bias_sd), float(noise_sd), seed
        rng = np.random.default_rng(seed)
        n = self.n_problems
        self.latents = rng.standard_normal((n, 3))  # elegance, difficulty, surprise
        e, d, s = self.latents.T
        self.mu = {"crowd": 0.5 * e + 0.6 * s + 0.4 * d - 0.6 * d ** 2 + 0.6, "imo": 1.0 * e + 0.4 * s + 0.6 * d}
        self.problem_ids = [f"s{i:03d}" for i in range(n)]
        base = templated_problems(n, seed=rng.integers(2**31))
        filler = np.clip(np.round(2 + 1.5 * d + 0.5 * rng.standard_normal(n)), 0, 6).astype(int)
        self.texts = [p["text"] + " Justify every step carefully." * k for p, k in zip(base, filler)]
        self._rng_ratings = np.random.default_rng(rng.integers(2**31))
        self._judge_seed = int(rng.integers(2**31))
        self._ratings = None

    # truth ------------------------------------------------------------------------------------

    def problems(self) -> pd.DataFrame:
        """problem_id, text, elegance, difficulty, surprise."""
        return pd.DataFrame({"problem_id": self.problem_ids, "text": self.texts, "elegance": self.latents[:, 0],
                             "difficulty": self.latents[:, 1], "surprise": self.latents[:, 2]})

    def true_probs(self, population: str) -> np.ndarray:
        """The population's rating distribution per problem (marginal over raters), ``(n, 7)``."""
        self._check_population(population)
        return ordinal_probs(self.mu[population], np.hypot(self.bias_sd, self.noise_sd))

    def rationale_probs(self, population: str) -> np.ndarray:
        """The population's rationale-choice probabilities per problem, ``(n, len(RATIONALES))``."""
        self._check_population(population)
        return _softmax(self.latents @ _BETA.T + _ALPHA[population])

    def _check_population(self, population):
        if population not in POPULATIONS:
            raise ValueError(f"unknown population {population!r}; expected one of {POPULATIONS}")

    # people -----------------------------------------------------------------------------------

    def ratings(self) -> pd.DataFrame:
        """Every rater's rating and rationale for every problem (the :func:`load_ratings` schema)."""
        if self._ratings is not None:
            return self._ratings.copy()
        rng = self._rng_ratings
        frames = []
        for pop in POPULATIONS:
            m = self.n_raters[pop]
            b = rng.normal(0, self.bias_sd, m)
            u = self.mu[pop][:, None] + b[None, :] + rng.normal(0, self.noise_sd, (self.n_problems, m))
            r = 1 + np.searchsorted(CUTS, u)
            logits = np.log(self.rationale_probs(pop))[:, None, :] + rng.gumbel(size=(self.n_problems, m, len(RATIONALES)))
            pick = logits.argmax(-1)
            ids = [f"{pop}_{j:03d}" for j in range(m)]
            frames.append(pd.DataFrame({
                "problem_id": np.repeat(self.problem_ids, m), "population": pop,
                "rater_id": np.tile(ids, self.n_problems), "rating": r.ravel().astype(int),
                "rationale": np.asarray(RATIONALES, dtype=object)[pick.ravel()]}))
        self._ratings = pd.concat(frames, ignore_index=True)
        return self._ratings.copy()

    # judges -----------------------------------------------------------------------------------

    def judge(self, kind: str) -> pd.DataFrame:
        """A simulated judge's ratings (p1..p7, expected) and rationale probabilities, per population."""
        if kind not in JUDGES:
            raise ValueError(f"unknown judge {kind!r}; expected one of {JUDGES}")
        rng = np.random.default_rng([self._judge_seed, JUDGES.index(kind)])
        frames = []
        sd = np.hypot(self.bias_sd, self.noise_sd)
        personas = rng.normal(0, self.bias_sd, self.personas)  # the same personas rate for both populations
        for pop in POPULATIONS:
            truth = self.true_probs(pop)
            rat = self.rationale_probs(pop)
            mean = truth @ np.asarray(SCALE, float)
            if kind == "J1":
                p = np.eye(7)[np.clip(np.rint(mean).astype(int), 1, 7) - 1]
            elif kind == "J2":
                p = np.stack([self._overdispersed(m, 2.5 * sd) for m in mean])
            elif kind in ("J3", "blind"):
                mu = self.mu[pop] if kind == "J3" else (self.mu["crowd"] + self.mu["imo"]) / 2
                p = ordinal_probs(mu[:, None] + personas[None, :], self.noise_sd).mean(1)
                if kind == "blind":
                    rat = (self.rationale_probs("crowd") + self.rationale_probs("imo")) / 2
            elif kind == "J4":
                p = truth
                rat = rng.dirichlet(np.ones(len(RATIONALES)), self.n_problems)
            elif kind == "constant":
                p = np.repeat(truth.mean(0, keepdims=True), self.n_problems, 0)
                rat = np.repeat(rat.mean(0, keepdims=True), self.n_problems, 0)
            else:  # length
                L = np.array([len(t) for t in self.texts], float)
                rank = np.argsort(np.argsort(L + 1e-6 * rng.random(len(L))))
                p = np.eye(7)[np.rint(6 * rank / max(len(L) - 1, 1)).astype(int)]
                rat = np.full_like(rat, 1 / len(RATIONALES))
            df = rating_frame(self.problem_ids, p, extra=dict(zip(RATIONALES, rat.T)))
            df.insert(1, "population", pop)
            frames.append(df)
        return pd.concat(frames, ignore_index=True)

    def _overdispersed(self, mean: float, sd: float) -> np.ndarray:
        def gap(loc):
            return float(ordinal_probs(np.array([loc]), sd)[0] @ np.asarray(SCALE, float)) - mean

        lo, hi = -30.0, 30.0
        loc = optimize.brentq(gap, lo, hi, xtol=1e-10)
        return ordinal_probs(np.array([loc]), sd)[0]


__all__ = ["JUDGES", "POPULATIONS", "PROB_COLUMNS", "SimulatedStudy", "ordinal_probs"]
