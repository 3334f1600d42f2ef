r"""The weighted interacting particle sampler (mean-field FK steering) and its baselines as modes.

Reverse VP SDE, Euler–Maruyama from t = 1 to ``t_min`` (reverse time step δ > 0, g² = β(t)):

    x' = x + [½β x + β s(x, t) + γ β κ_t ∇Ψ(x, μ)] δ + √(βδ) ξ,     ξ ~ N(0, I),

with ``guidance`` γ and the annealed intermediate potential Φ_t(x, μ) = κ_t Ψ(x, μ), κ_t = α_t² (Ψ is
evaluated on the noisy particles; κ → 1 as t → 0, κ = 0 before the first step — inferred, the paper's
intermediate potential is not confirmed). Log-weights (log-sum-exp normalised) follow the FK telescoping

    A_i' = A_i + log P(x_i'|x_i)/M(x_i'|x_i) + κ_{t'} Ψ(x_i', μ') − κ_t Ψ(x_i, μ),

where M is the steered and P the unsteered Euler–Maruyama kernel (the steering's Girsanov term; its
continuous-time limit is (b·∇Φ − ½β|∇Φ|² + ½βΔΦ + Φ̇)δt, the abstract's A += (b·∇Ψ + Ψ̇)δt for a flow). The
product telescopes: the final weights are ∝ (p/proposal path ratio) · exp Ψ(x_i, μ_final), i.e. a weighted
measure with μ ∝ p·exp Ψ(·, μ), the mean-field target. μ' = Σ_j w'_j δ_{x'_j} depends on the new weights,
so the new term is implicit: write κ'Ψ(x', μ') = κ'Ψ(x', μ(w, x')) + D with

    D = F(D) = κ' [Ψ(x', μ(softmax(A + a + D), x')) − Ψ(x', μ(w, x'))]     (Ψ̇ δt, its weight part)

solved by damped Picard, D ← (1−η)D + η F(D), ``k_fp`` times from D = 0 (η = 2/(2 + ρ̂), ρ̂ the spectral
radius of ∂F/∂D by one warm-started power iteration per step, unless ``damping`` is given), or exactly
for the linearisation by an N×N solve (I − J) D = F(0), J = κ' ∂Ψ/∂w (diag w̃ − w̃w̃ᵀ) (O(N³), N ≤
``linear_max_n``). The kernel matrices of Ψ(x', ·) are computed once per step and reused by every
iteration. ``k_fp = 0`` (the ablation) drops Ψ̇ entirely: A' uses Ψ(x', μ(w, x)), a stale potential.

Weights multiply across steps (A accumulates) and are reset to zero only when ESS < ``ess_threshold``·N
triggers a systematic or residual resampling (Fk-Diffusion-Steering #12).

Modes: ``"meanfield"`` (above); ``"gradient"`` (same steered drift, no weights: Particle-Guidance-style);
``"pointwise"`` (FK with Ψ frozen at a fixed measure ν, by default an unsteered pilot sample of the prior
with the same N — for the MMD reward Ψ(·, ν) is *not* zero then, it is −λ(k*p − k*ν_target)); and
``reward=None`` (unsteered).
"""

from __future__ import annotations

import math
import time

import torch

from meanfieldsteer.diffusion import GaussianMixture, VPSchedule
from meanfieldsteer.particles import WeightedParticles, as_particles
from meanfieldsteer.rewards import MeasureReward, jvp_w
from paperworks import check_float, check_int, resolve_device

MODES = ("meanfield", "gradient", "pointwise")
PSI_DOT = ("picard", "linear")
RESAMPLE = ("systematic", "residual", None)


def systematic_resample(w: torch.Tensor, generator=None) -> torch.Tensor:
    """Indices (N,) of systematic resampling of normalised weights ``w``."""
    n = w.shape[0]
    u = (torch.rand(1, generator=generator, dtype=torch.float64).to(w.device) + torch.arange(n, device=w.device)) / n
    c = torch.cumsum(w.double(), 0)
    c[-1] = 1.0
    return torch.searchsorted(c, u.to(c)).clamp_max(n - 1)


def residual_resample(w: torch.Tensor, generator=None) -> torch.Tensor:
    """Indices (N,) of residual resampling: ⌊N w_i⌋ copies, the rest multinomial on the residuals."""
    n = w.shape[0]
    nw = n * w.double()
    counts = torch.floor(nw).long()
    rest = n - int(counts.sum())
    if rest > 0:
        res = (nw - counts).clamp_min(0.0)
        extra = torch.multinomial(res.cpu() / res.sum().cpu(), rest, replacement=True, generator=generator)
        counts += torch.bincount(extra, minlength=n).to(counts.device)
    return torch.repeat_interleave(torch.arange(n, device=w.device), counts)


class MeanFieldSampler:
    """Mean-field weighted particle sampler for distributional reward steering (see the module docstring).

    Args:
        score_fn: ``score_fn(x, t)`` → (N, d), the pretrained score ∇log p_t; a ``GaussianMixture`` brings
            its own schedule.
        reward: a ``MeasureReward`` (or None: unsteered sampling).
        n_steps: Euler–Maruyama steps (default 200).
        mode: "meanfield" | "gradient" | "pointwise".
        k_fp: Picard iterations for Ψ̇ (0: Ψ̇ dropped, the ablation).
        psi_dot: "picard" | "linear" (N×N solve, N ≤ ``linear_max_n``).
        resample: "systematic" | "residual" | None; triggered when ESS < ``ess_threshold``·N.
        ess_threshold: in (0, 1].
        schedule: VP schedule name or object (default: the score's, else "linear").
        guidance: γ ≥ 0, scale of the ∇Ψ drift (0: weights only).
        damping: "auto" or η in (0, 1].
        t_min: last time (default 1e-3).
        frozen: the measure Ψ is frozen at in "pointwise" mode (default: an unsteered pilot sample).
        device: "auto" | "cpu" | "cuda".
    """

    def __init__(self, score_fn, reward: MeasureReward | None, *, n_steps: int = 200, mode: str = "meanfield",
                 k_fp: int = 3, psi_dot: str = "picard", resample: str | None = "systematic",
                 ess_threshold: float = 0.5, schedule=None, guidance: float = 1.0, damping="auto",
                 t_min: float = 1e-3, linear_max_n: int = 1024, frozen=None, device: str = "cpu"):
        self.score_fn = score_fn.score if isinstance(score_fn, GaussianMixture) else score_fn
        if not callable(self.score_fn):
            raise TypeError(f"score_fn must be callable score_fn(x, t), got {type(score_fn).__name__}")
        if reward is not None and not isinstance(reward, MeasureReward):
            raise TypeError(f"reward must be a MeasureReward or None, got {type(reward).__name__}")
        if schedule is None:
            schedule = score_fn.schedule if isinstance(score_fn, GaussianMixture) else "linear"
        self.schedule = schedule if isinstance(schedule, VPSchedule) else VPSchedule(schedule)
        self.reward = reward
        self.n_steps = check_int(n_steps, "n_steps", minimum=1)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if psi_dot not in PSI_DOT:
            raise ValueError(f"psi_dot must be one of {PSI_DOT}, got {psi_dot!r}")
        if resample not in RESAMPLE:
            raise ValueError(f"resample must be one of {RESAMPLE}, got {resample!r}")
        self.mode, self.psi_dot, self.resample = mode, psi_dot, resample
        self.k_fp = check_int(k_fp, "k_fp", minimum=0)
        self.ess_threshold = check_float(ess_threshold, "ess_threshold", minimum=0.0, maximum=1.0, open_minimum=True)
        self.guidance = check_float(guidance, "guidance", minimum=0.0)
        if damping != "auto":
            damping = check_float(damping, "damping", minimum=0.0, maximum=1.0, open_minimum=True)
        self.damping = damping
        self.t_min = check_float(t_min, "t_min", minimum=0.0, maximum=1.0, open_minimum=True, open_maximum=True)
        self.linear_max_n = check_int(linear_max_n, "linear_max_n", minimum=2)
        self.frozen = None if frozen is None else as_particles(frozen, "frozen")
        self.device = resolve_device(device)
        self.trace: list[dict] = []
        self.timings: dict[str, float] = {}

    # --- pieces -------------------------------------------------------------------------------------
    def _kappa(self, t: float) -> float:
        return self.schedule.alpha(t) ** 2

    def _score(self, x, t, k):
        s = self.score_fn(x, t)
        if not isinstance(s, torch.Tensor) or s.shape != x.shape:
            raise ValueError(f"score_fn must return a tensor of shape {tuple(x.shape)}, got "
                             f"{tuple(s.shape) if hasattr(s, 'shape') else type(s).__name__} at step {k}")
        if not bool(torch.isfinite(s).all()):
            raise FloatingPointError(f"score_fn returned non-finite values at step {k} (t={t:.4g})")
        return s.to(x)

    def _psi(self, y, part_x, w, k):
        """Ψ(y, μ(w, part_x)) and its prepared function, with y requiring grad (kernel graph kept)."""
        prep = self.reward.prepare(y, part_x)
        psi = prep(w)
        if not isinstance(psi, torch.Tensor) or psi.shape != (y.shape[0],):
            raise ValueError(f"the first variation must have shape ({y.shape[0]},), got "
                             f"{tuple(psi.shape) if hasattr(psi, 'shape') else type(psi).__name__} at step {k}")
        return psi, prep

    @staticmethod
    def _grad(psi, y):
        (g,) = torch.autograd.grad(psi.sum(), y)
        return g

    def _solve_dot(self, prep, base, w_old_psi, kappa, k):
        """D, the implicit (weight) part of κ'Ψ̇δt (module docstring)."""
        def F(D):
            return kappa * (prep(torch.softmax(base + D, 0)) - w_old_psi)

        if self.psi_dot == "linear":
            wt = torch.softmax(base, 0)
            jw = torch.func.jacrev(prep)(wt)  # ∂Ψ_i/∂w_j
            J = kappa * (jw * wt[None, :] - (jw @ wt)[:, None] * wt[None, :])
            eye = torch.eye(base.shape[0], dtype=base.dtype, device=base.device)
            return torch.linalg.solve(eye - J, F(torch.zeros_like(base)))
        if self.damping == "auto":
            wt = torch.softmax(base, 0)
            u = self._pvec
            fresh = u is None or u.shape != base.shape
            if fresh:  # first step or just resampled: a new start vector and a few more iterations
                u = torch.randn(base.shape, dtype=base.dtype, device=base.device, generator=None)
            rho = 0.0
            for _ in range(4 if fresh else 1):
                u = u / u.norm()
                v = wt * u
                jv = kappa * jvp_w(prep, wt, v - wt * v.sum())
                rho = max(rho, float(jv.norm()))
                u = jv if float(jv.norm()) > 0 else u
            self._pvec = u
            eta = 2.0 / (2.0 + 1.1 * rho)
        else:
            eta = self.damping
        D = torch.zeros_like(base)
        for _ in range(self.k_fp):
            D = (1.0 - eta) * D + eta * F(D)
        return D

    def _resample_idx(self, w, generator):
        return (systematic_resample if self.resample == "systematic" else residual_resample)(w, generator)

    # --- the run ------------------------------------------------------------------------------------
    @torch.no_grad()
    def sample(self, n_particles: int, dim: int, *, generator: torch.Generator | None = None,
               dtype: torch.dtype = torch.float64, record: bool = False) -> WeightedParticles:
        """Run the sampler; returns the final ``WeightedParticles`` (x (N, d), log_weights (N,)).

        ``generator``: a CPU ``torch.Generator`` for the initial noise, the Euler–Maruyama noise and the
        resampling. ``record``: keep each step's log-weight increment in ``self.trace``.
        """
        n = check_int(n_particles, "n_particles", minimum=2)
        d = check_int(dim, "dim", minimum=1)
        if self.mode == "meanfield" and self.psi_dot == "linear" and self.reward is not None and self.k_fp > 0 \
                and n > self.linear_max_n:
            raise ValueError(f"psi_dot='linear' solves an N×N system: n_particles={n} exceeds linear_max_n="
                             f"{self.linear_max_n} (use psi_dot='picard')")
        dev = self.device
        self.trace, self._pvec = [], None
        self.timings = {"psi_dot": 0.0, "total": 0.0}
        t_start = time.perf_counter()
        steer = self.reward is not None
        frozen = None
        if steer and self.mode == "pointwise":
            frozen = self.frozen
            if frozen is None:
                pilot = MeanFieldSampler(self.score_fn, None, n_steps=self.n_steps, schedule=self.schedule,
                                         t_min=self.t_min, device=dev)
                frozen = pilot.sample(n, d, generator=generator, dtype=dtype)
            fx, fw = frozen.x.to(dev, dtype), frozen.weights.to(dev, dtype)
        weighted = steer and self.mode in ("meanfield", "pointwise")
        ts = torch.linspace(1.0, self.t_min, self.n_steps + 1, dtype=torch.float64).tolist()
        x = torch.randn(n, d, generator=generator, dtype=dtype).to(dev)
        A = torch.zeros(n, dtype=dtype, device=dev)
        psi = torch.zeros(n, dtype=dtype, device=dev)  # κ·Ψ at the current particles (κ = 0 before step 1)
        grad = torch.zeros_like(x)
        kappa_old = 0.0
        for k in range(self.n_steps):
            t, t1 = ts[k], ts[k + 1]
            delta, beta = t - t1, self.schedule.beta(t)
            s = self._score(x, t, k)
            drift = 0.5 * beta * x + beta * s
            st = self.guidance * beta * kappa_old * grad if steer else torch.zeros_like(x)
            xi = math.sqrt(beta * delta) * torch.randn(n, d, generator=generator, dtype=dtype).to(dev)
            x1 = x + (drift + st) * delta + xi
            if not bool(torch.isfinite(x1).all()):
                raise FloatingPointError(f"non-finite particles at step {k} (t={t1:.4g})")
            if not steer:
                x = x1
                self.trace.append({"step": k, "ess": float(n), "resampled": False})
                continue
            kap = self._kappa(t1)
            w = torch.softmax(A, 0)
            y = x1.detach().requires_grad_(True)
            inc = None
            with torch.enable_grad():
                if self.mode == "gradient":
                    p1, _ = self._psi(y, x1, torch.full_like(A, 1.0 / n), k)
                elif self.mode == "pointwise":
                    p1, _ = self._psi(y, fx, fw, k)
                    inc = kap * p1.detach() - psi
                elif self.k_fp == 0:  # ablation: Ψ̇ dropped (stale measure μ(w, x))
                    stale, _ = self._psi(x1, x, w, k)
                    inc = kap * stale - psi
                    A_new = A + (inc + self._girsanov(st, xi, beta, delta))
                    p1, _ = self._psi(y, x1, torch.softmax(A_new, 0), k)
                else:
                    p_pos, prep = self._psi(y, x1, w, k)
                    p_pos = p_pos.detach()
                    base = A + self._girsanov(st, xi, beta, delta) + kap * p_pos - psi
                    t0 = time.perf_counter()
                    with torch.no_grad():
                        D = self._solve_dot(prep, base, p_pos, kap, k)
                    self.timings["psi_dot"] += time.perf_counter() - t0
                    inc = base - A + D
                    p1 = prep(torch.softmax(base + D, 0))
                g1 = self._grad(p1, y)
            if inc is not None and self.mode == "pointwise":
                inc = inc + self._girsanov(st, xi, beta, delta)
            if self.mode == "meanfield" and self.k_fp == 0:
                inc = A_new - A
            if weighted:
                A = A + inc
                if not bool(torch.isfinite(A).all()):
                    raise FloatingPointError(f"NaN or inf log-weights at step {k} (t={t1:.4g})")
                A = A - torch.logsumexp(A, 0)
            x, psi, grad, kappa_old = x1, kap * p1.detach(), g1.detach(), kap
            if not bool(torch.isfinite(grad).all()):
                raise FloatingPointError(f"non-finite ∇Ψ at step {k} (t={t1:.4g})")
            ess = float(1.0 / (torch.softmax(A, 0) ** 2).sum())
            did = False
            if weighted and self.resample is not None and ess < self.ess_threshold * n:
                idx = self._resample_idx(torch.softmax(A, 0), generator)
                x, psi, grad = x[idx], psi[idx], grad[idx]
                A = torch.zeros_like(A)
                self._pvec = None  # the power iteration's vector belongs to the old particles
                did = True
            rec = {"step": k, "t": t1, "ess": ess, "resampled": did}
            if record and inc is not None:
                rec["increment"] = inc.detach().cpu().clone()
            self.trace.append(rec)
        self.timings["total"] = time.perf_counter() - t_start
        return WeightedParticles(x, A)

    @staticmethod
    def _girsanov(st, xi, beta, delta):
        """log P(x'|x) − log M(x'|x) for the steering drift ``st`` and the noise ``xi`` actually drawn."""
        return -(st * xi).sum(1) / beta - (st * st).sum(1) * delta / (2.0 * beta)


__all__ = ["MODES", "MeanFieldSampler", "residual_resample", "systematic_resample"]
