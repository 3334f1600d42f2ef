"""The bench: training-step time per objective and rollout time per frame, hierarchical vs flat (paperworks.bench)."""

from __future__ import annotations

import torch

from paperworks import Claim


def _models(frame_shape, coarse_shape, dim, width):
    from hierwm import FlatWorldModel, HierarchicalWorldModel

    torch.manual_seed(0)
    kw = {"frame_shape": frame_shape, "coarse_shape": coarse_shape, "dim": dim}
    return HierarchicalWorldModel(**kw, width=width), FlatWorldModel(**kw, match_width=width)


def _step(model, opt, frames, actions, objective, seed):
    loss = model.loss(frames, actions, objective=objective, generator=torch.Generator().manual_seed(seed), positions=6)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def run_bench(cfg) -> tuple[list, list, list]:
    from hierwm import count_parameters
    from paperworks.bench import compare

    b = cfg.bench
    rows, claims = [], []
    g = torch.Generator().manual_seed(0)
    # training steps: DF against TF (per-token noise is only an index)
    hier, flat = _models((3, 16, 16), (3, 8, 8), int(b.dim), int(b.width))
    frames = torch.randn(int(b.train_batch), 28, 3, 16, 16, generator=g)
    actions = torch.randn(int(b.train_batch), 28, 2, generator=g)
    opts = {id(m): torch.optim.AdamW(m.parameters(), lr=1e-4) for m in (hier, flat)}
    res = compare({obj: (lambda o=obj: _step(hier, opts[id(hier)], frames, actions, o, 1)) for obj in ("tf", "df")},
                  repeats=int(b.repeats), warmup=2, threads=1)
    for r in res.rows():
        rows.append({"exp": "bench", "what": "train_step", "model": "hier", "batch": int(b.train_batch), **r})
    ratio = res.speedup("tf", over="df")  # median of time(df) / time(tf)
    rows.append({"exp": "bench", "what": "df_over_tf_step", "ratio": ratio.value, "lower": ratio.lower,
                 "upper": ratio.upper})
    claims.append(Claim.threshold(
        "bench_df_step_within_1.1x_tf", "Performance: a DF training step costs at most 1.1× a TF step "
        f"(hierarchical model, batch {int(b.train_batch)} × 28 frames of 3×16×16, paired interleaved repeats; "
        "per-token noise is only an index).", "time(DF step) / time(TF step)", ratio, threshold=1.1, better="lower",
        notes="1 thread; ratio of paired medians with a bootstrap interval"))
    # rollouts: hierarchical against flat at equal parameters and sampler steps
    n, hz, k = int(b.rollout_batch), int(b.horizon), int(b.sampler_steps)
    ctx = torch.randn(n, 4, 3, 16, 16, generator=g)
    acts = torch.randn(n, hz, 2, generator=g)
    res = compare({"hier": lambda: hier.rollout(ctx, acts, horizon=hz, steps=k),
                   "flat": lambda: flat.rollout(ctx, acts, horizon=hz, steps=k)},
                  repeats=int(b.rollout_repeats), warmup=1, threads=1)
    for r in res.rows():
        name = r["candidate"]
        params = count_parameters(hier if name == "hier" else flat)
        rows.append({"exp": "bench", "what": "rollout", "size": "toy 3x16x16", "batch": n, "frames": hz,
                     "sampler_steps": k, "params": params, "per_frame_s": r["wall_median_s"] / hz, **r})
    rr = res.speedup("flat", over="hier")  # median of time(hier) / time(flat)
    rows.append({"exp": "bench", "what": "hier_over_flat_rollout", "ratio": rr.value, "lower": rr.lower,
                 "upper": rr.upper})
    claims.append(Claim.threshold(
        "bench_hier_rollout_within_1.3x_flat", f"Performance: a {hz}-frame hierarchical rollout (batch {n}, "
        f"{k} DDIM steps per frame and per coarse token) takes at most 1.3× the flat model's at equal parameters: "
        f"the high level runs {hz // 4} times on 8×8 inputs against {hz} low-level frames.",
        "time(hier rollout) / time(flat rollout)", rr, threshold=1.3, better="lower",
        notes=f"params hier {count_parameters(hier)}, flat {count_parameters(flat)}; 1 thread"))
    # the same at real-latent shape: 4×32×32 latents (e.g. an AutoencoderKL's), coarse 4×16×16
    hier, flat = _models((4, 32, 32), (4, 16, 16), int(b.dim), int(b.width))
    nl, hl = int(b.latent_batch), int(b.latent_horizon)
    ctx = torch.randn(nl, 4, 4, 32, 32, generator=g)
    acts = torch.randn(nl, hl, 2, generator=g)
    res = compare({"hier": lambda: hier.rollout(ctx, acts, horizon=hl, steps=k),
                   "flat": lambda: flat.rollout(ctx, acts, horizon=hl, steps=k)},
                  repeats=int(b.latent_repeats), warmup=1, threads=1)
    for r in res.rows():
        name = r["candidate"]
        rows.append({"exp": "bench", "what": "rollout", "size": "latent 4x32x32", "batch": nl, "frames": hl,
                     "sampler_steps": k, "params": count_parameters(hier if name == "hier" else flat),
                     "per_frame_s": r["wall_median_s"] / hl, **r})
    lr = res.speedup("flat", over="hier")
    rows.append({"exp": "bench", "what": "hier_over_flat_rollout_latent", "ratio": lr.value, "lower": lr.lower,
                 "upper": lr.upper})
    return claims, [], rows


__all__ = ["run_bench"]
