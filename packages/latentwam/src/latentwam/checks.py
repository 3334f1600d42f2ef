"""Identities and sanity properties that hold by construction (stored as ``checks``, never claims)."""

from __future__ import annotations

import torch

from latentwam.wam import LatentWAM, anti_collapse
from paperworks import Claim


def _batch(B=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"frames": torch.rand(B, 2, 3, 24, 24, generator=g), "proprio": torch.rand(B, 2, generator=g),
            "actions": torch.rand(B, 8, 2, generator=g) * 2 - 1, "future": torch.rand(B, 2, 3, 24, 24, generator=g)}


def prior_future_gap(model: LatentWAM, train_mode: bool) -> float:
    """Max |Δ| of the prior's actions and latents between future=None, a future and a perturbed future."""
    b = _batch()
    model.train(train_mode)
    with torch.no_grad():
        outs = [model(b["frames"], b["proprio"], future=f) for f in
                (None, b["future"], torch.rand_like(b["future"]), torch.zeros_like(b["future"]))]
    gap = 0.0
    for o in outs[1:]:
        for k in ("actions", "latents_prior"):
            gap = max(gap, float((o[k] - outs[0][k]).abs().max()))
    return gap


def future_grad_into_prior(model: LatentWAM) -> float:
    """|∂(prior outputs)/∂future|: the prior's gradient with respect to the future frames (zero)."""
    b = _batch()
    fut = b["future"].clone().requires_grad_(True)
    out = model(b["frames"], b["proprio"], future=fut)
    (out["actions"].sum() + out["latents_prior"].sum()).backward()
    return 0.0 if fut.grad is None else float(fut.grad.abs().max())


def alignment_grad_on_posterior(model: LatentWAM) -> float:
    """Gradient norm of the alignment term alone on the posterior-only parameters (slot pooling)."""
    b = _batch()
    model.zero_grad(set_to_none=True)
    _, _, lat_q, _ = model._run(b["frames"], b["proprio"], b["future"])
    lat_p = model._run(b["frames"], b["proprio"], None)[0]
    target = lat_q.detach() if model.stop_grad else lat_q
    (lat_p - target).pow(2).sum(-1).mean().backward()
    g = [p.grad for p in model.slot_pool.parameters() if p.grad is not None]
    return float(sum(x.norm() ** 2 for x in g) ** 0.5) if g else 0.0


def spread_latents(B=128, M=4, d=64, gamma=1.0) -> torch.Tensor:
    """Latents whose per-slot dimensions are exactly uncorrelated with std ≥ γ (Hadamard columns)."""
    H = torch.ones(1, 1, dtype=torch.float64)
    while H.shape[0] < B:  # Sylvester's construction (B a power of two, B > d)
        H = torch.cat([torch.cat([H, H], 1), torch.cat([H, -H], 1)], 0)
    H = H[:, 1:d + 1]  # zero-mean, orthogonal columns
    return (2.0 * gamma * H)[:, None, :].expand(B, M, d).clone()


def identity_checks(cfg=None) -> list:
    torch.manual_seed(0)
    m = LatentWAM(action_dim=2, proprio_dim=2)
    m_nsg = LatentWAM(action_dim=2, proprio_dim=2, stop_grad=False)
    spread = spread_latents()
    collapsed = torch.ones(64, 4, 64)
    return [
        Claim.check("prior_blind_to_future_train", "The prior's actions and latents are bit-identical with no future, "
                    "the true future, a random and a zero future (train mode).", "max |Δ|",
                    prior_future_gap(m, True), threshold=0.0, better="lower"),
        Claim.check("prior_blind_to_future_eval", "The same in eval mode.", "max |Δ|",
                    prior_future_gap(m, False), threshold=0.0, better="lower"),
        Claim.check("no_gradient_from_future_into_prior", "The prior's outputs have zero gradient with respect to the "
                    "future frames.", "max |∂prior/∂future|", future_grad_into_prior(m), threshold=0.0, better="lower"),
        Claim.check("stopgrad_blocks_alignment_into_posterior", "With stop-grad the alignment term sends no gradient "
                    "to the posterior-only parameters.", "‖∇ align‖ on the slot pooling",
                    alignment_grad_on_posterior(m), threshold=0.0, better="lower"),
        Claim.check("no_stopgrad_lets_alignment_into_posterior", "Without stop-grad it does (the switch works).",
                    "‖∇ align‖ on the slot pooling", alignment_grad_on_posterior(m_nsg), threshold=1e-8,
                    better="higher"),
        Claim.check("anti_collapse_zero_on_spread", "The variance/covariance term is zero on uncorrelated latents with "
                    "std ≥ γ.", "R(spread)", float(anti_collapse(spread)), threshold=1e-12, better="lower"),
        Claim.check("anti_collapse_positive_on_collapsed", "… and about γ on collapsed (constant) latents.",
                    "R(collapsed)", float(anti_collapse(collapsed)), threshold=0.9, better="higher"),
    ]


def env_checks(refs: dict) -> list:
    return [
        Claim.check("expert_intercepts", "The scripted expert (true state) intercepts in ≥ 95 % of the episodes.",
                    "expert success", refs["expert"], threshold=0.95, better="higher"),
        Claim.check("random_under_half_expert", "Random play succeeds in under half as many episodes as the expert.",
                    "random success / expert success", refs["random"] / max(refs["expert"], 1e-9), threshold=0.5,
                    better="lower"),
        Claim.check("anticipation_needed", "Heading for the ball's current position (the chase heuristic) loses at "
                    "least 0.15 of success to the anticipating expert: the task needs anticipation.",
                    "expert − chase success", refs["expert"] - refs["chase"], threshold=0.15, better="higher"),
    ]


__all__ = ["identity_checks", "env_checks", "prior_future_gap", "alignment_grad_on_posterior", "spread_latents",
           "future_grad_into_prior"]
