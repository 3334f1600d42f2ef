"""``run(cfg) -> dict``: the CPU miniature of MATT's claims (and the bench); verdicts by the paperworks rules."""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import numpy as np
import torch

from paperworks import Claim, censored_summary, seeds_of

log = logging.getLogger(__name__)


def _arms(cfg, n_layers: int) -> dict:
    """Arm name -> transfer() keywords. The MATT arm spends ``aim_fraction`` of the budget on AIM."""
    s = int(cfg.budget)
    a = int(round(float(cfg.aim_fraction) * s))
    k = math.ceil(n_layers / 3)
    arms = {
        "random+LM": dict(init="random", aim_steps=0, lm_steps=s),
        "FVT+LM": dict(init="fvt", aim_steps=0, lm_steps=s),
        # FOCUS+LM is the first `budget` steps of the 5x LM-only run (constant rate after warm-up)
        "LM-only-5x": dict(init="focus", aim_steps=0, lm_steps=int(cfg.reference_multiple) * s),
        "MATT": dict(init="focus", aim_steps=a, lm_steps=s - a, aim_layers=k),
    }
    for d in cfg.depths:
        if int(d) != k and 1 <= int(d) <= n_layers:
            arms[f"MATT-k{int(d)}"] = dict(init="focus", aim_steps=a, lm_steps=s - a, aim_layers=int(d))
    if cfg.frozen_overlap:
        arms["MATT-frozen"] = dict(init="focus", aim_steps=a, lm_steps=s - a, aim_layers=k, freeze_overlap=True)
    return arms


def _lr_arm(arm: str) -> str:
    """Whose tuned learning rate an arm uses: the MATT variants MATT's, the 5x reference FOCUS+LM's."""
    return "MATT" if arm.startswith("MATT") else arm


def _tune_lr(cfg, arms, w, common) -> dict:
    """Per arm, the learning rate (AIM and LM phases) of ``cfg.lr_grid`` with the lowest validation BPB.

    Tuned once per arm at the budget on a validation split disjoint from the held-out text, with a
    tuning seed outside the evaluation seeds; the same grid for every arm.
    """
    from matt.transfer import bits_per_byte, transfer

    grid = [float(x) for x in cfg.lr_grid]
    budget = int(cfg.budget)
    out, table = {}, {}
    for arm, kw in arms.items():
        name = _lr_arm(arm)
        if name in out or (arm != "LM-only-5x" and name != arm):
            continue
        kw = dict(kw, lm_steps=budget - kw.get("aim_steps", 0)) if arm == "LM-only-5x" else kw
        scores, points = {}, sorted(grid)
        for _ in range(3):  # a best value on the grid's edge extends the grid (at most twice)
            for lr in points:
                if lr not in scores:
                    m, _ = transfer(w["teacher_model"], w["tok_a"], w["tok_b"], w["transfer"],
                                    seed=int(cfg.tune_seed), lr=lr, **common, **kw)
                    scores[lr] = bits_per_byte(m, w["tok_b"], w["val"])
            best = min(scores, key=scores.get)
            pts = sorted(scores)
            if len(pts) < 2 or pts[0] < best < pts[-1]:
                break
            ratio = pts[1] / pts[0]
            points = [best / ratio] if best == pts[0] else [best * ratio]
            log.info("%s: best learning rate %g on the grid's edge; extending to %g", arm, best, points[0])
        out[name], table[name] = best, scores
        log.info("lr for %-10s %g (validation BPB %s)", name, best, {k: round(v, 4) for k, v in scores.items()})
    out = {("FOCUS+LM" if k == "LM-only-5x" else k): v for k, v in out.items()}
    out["LM-only-5x"] = out["FOCUS+LM"]
    return out, {k: {f"{lr:g}": v for lr, v in sc.items()} for k, sc in table.items()}


def _vals(rows, arm, key):
    sel = sorted((r for r in rows if r["arm"] == arm), key=lambda r: r["seed"])
    return [r[key] for r in sel]


def _identity_checks(w, cfg) -> list:
    from matt.aim import AIMLoss
    from matt.align import AlignmentError, align_segments, token_spans
    from matt.transfer import transfer

    teacher, ta, tb = w["teacher_model"], w["tok_a"], w["tok_b"]
    ev = w["eval"][: int(cfg.check_lines)]
    # segments: a partition, whole tokens on both sides, minimal (no shared boundary inside)
    bad = 0
    for t in ev:
        try:
            segs = align_segments(t, ta, tb)
        except AlignmentError:
            continue
        ba = {e for _, e in token_spans(t, ta)} | {s for s, _ in token_spans(t, ta)}
        bb = {e for _, e in token_spans(t, tb)} | {s for s, _ in token_spans(t, tb)}
        tiles = segs[0][0] == 0 and segs[-1][1] == len(t) and all(x[1] == y[0] for x, y in zip(segs, segs[1:]))
        ends = all(s in ba and s in bb and e in ba and e in bb for s, e in segs)
        minimal = all(not (p in ba and p in bb) for s, e in segs for p in range(s + 1, e))
        bad += not (tiles and ends and minimal)
    aim = AIMLoss(teacher, ta)
    with torch.no_grad():
        ident = float(aim(teacher, ta, ev[:16]))
    student, _ = transfer(teacher, ta, tb, w["transfer"][:64], init="fvt", aim_steps=0, lm_steps=3,
                          batch_size=8, warmup=1)
    body = {n: p for n, p in teacher.named_parameters() if "wte" not in n and "lm_head" not in n
            and "embed_tokens" not in n}
    changed = sum(not torch.equal(p, dict(student.named_parameters())[n]) for n, p in body.items())
    leak = len(set(w["eval"]) & set(w["teacher"])) + len(set(w["transfer"]) & set(w["teacher"]))
    return [
        Claim.check("segments_partition_minimal", f"On {len(ev)} held-out lines, align_segments tiles the text with "
                    "spans whose ends are token boundaries of both tokenizers and that contain no shared "
                    "boundary inside.", "lines violating it", bad, threshold=0, better="lower"),
        Claim.check("aim_zero_for_identity", "AIM loss of the teacher against itself with its own tokenizer is 0.",
                    "AIM loss", ident, threshold=1e-10, better="lower"),
        Claim.check("embeddings_training_keeps_body", "With train='embeddings' every non-embedding weight stays "
                    "bit-identical.", "changed body tensors", changed, threshold=0, better="lower"),
        Claim.check("heldout_disjoint", "Held-out and transfer B lines never occur in the teacher's data.",
                    "shared lines", leak, threshold=0, better="lower"),
    ]


def run(cfg, out_dir: Path | None = None) -> dict:
    if cfg.get("bench"):
        from matt.bench import run_bench

        return run_bench(cfg)
    from matt.aim import n_layers
    from matt.align import identical_share
    from matt.setup import build
    from matt.transfer import bits_per_byte, transfer

    seeds = seeds_of(cfg)
    t0 = time.perf_counter()
    w = build(cfg)
    t_setup = time.perf_counter() - t0
    teacher, ta, tb, texts, ev = w["teacher_model"], w["tok_a"], w["tok_b"], w["transfer"], w["eval"]
    L = n_layers(teacher)
    bpb_teacher = bits_per_byte(teacher, ta, ev)
    share = identical_share(ev, ta, tb)
    frag = sum(len(ta(t)["input_ids"]) for t in ev) / sum(len(tb(t)["input_ids"]) for t in ev)
    log.info("teacher BPB on held-out B %.4f, T_A/T_B token ratio %.2f, identical segments %.2f", bpb_teacher,
             frag, share)
    arms = _arms(cfg, L)
    budget, every = int(cfg.budget), int(cfg.eval_every)
    if budget % every:
        raise ValueError(f"budget ({budget}) must be a multiple of eval_every ({every})")
    common = dict(batch_size=int(cfg.batch_size), warmup=int(cfg.warmup))
    lrs, lr_scores = _tune_lr(cfg, arms, w, common)
    rows, curves = [], []
    for seed in seeds:
        rand0, _ = transfer(teacher, ta, tb, texts, init="random", aim_steps=0, lm_steps=0, seed=seed)
        bpb_untrained = bits_per_byte(rand0, tb, ev)
        del rand0
        mine = []
        for arm, kw in arms.items():
            aim_losses = []

            def cb(info, arm=arm, aim_losses=aim_losses, mine=mine, seed=seed):
                if info["phase"] == "aim":
                    aim_losses.append(info["loss"])
                if info["step"] % every == 0:
                    mine.append({"arm": arm, "seed": seed, "step": info["step"], "train_s": info["train_s"],
                                 "bpb": bits_per_byte(info["model"], tb, ev)})

            t1 = time.perf_counter()
            transfer(teacher, ta, tb, texts, seed=seed, callback=cb, lr=lrs[_lr_arm(arm)], **common, **kw)
            wall = time.perf_counter() - t1
            for name in ([arm] if arm != "LM-only-5x" else ["LM-only-5x", "FOCUS+LM"]):
                rows.append({"arm": name, "seed": seed, "wall_s": wall, "bpb_untrained_random": bpb_untrained,
                             "bpb_teacher": bpb_teacher, "end": budget if name != "LM-only-5x" else None,
                             "aim_loss_first": float(np.mean(aim_losses[:5])) if aim_losses else None,
                             "aim_loss_last": float(np.mean(aim_losses[-5:])) if aim_losses else None})
            log.info("seed %d %-12s BPB %.4f (%.1fs)", seed, arm, mine[-1]["bpb"], wall)
        # recovery against this seed's random-init + LM arm at the end of the budget
        bpb_rand = next(c["bpb"] for c in mine if c["arm"] == "random+LM" and c["step"] == budget)
        for c in mine:
            c["recovery"] = (bpb_rand - c["bpb"]) / (bpb_rand - bpb_teacher)
            c["recovery_from_untrained"] = (bpb_untrained - c["bpb"]) / (bpb_untrained - bpb_teacher)
        curves += mine
        for r in rows:
            if r["seed"] != seed:
                continue
            src = "LM-only-5x" if r["arm"] == "FOCUS+LM" else r["arm"]
            own = [c for c in mine if c["arm"] == src]
            end = r.pop("end") or own[-1]["step"]
            at = next(c for c in own if c["step"] == end)
            hit = next((c for c in own if c["recovery"] >= 0.5 and c["step"] <= end), None)
            target = next(c["bpb"] for c in mine if c["arm"] == "LM-only-5x" and c["step"] == budget)
            reach = next((c for c in own if c["bpb"] <= target and c["step"] <= end), None)
            r["steps_to_lm_quality"] = reach["step"] if reach else None
            r.update(bpb=at["bpb"], recovery=at["recovery"], recovery_from_untrained=at["recovery_from_untrained"],
                     train_s=at["train_s"], bpb_random=bpb_rand, steps_to_half=hit["step"] if hit else None,
                     train_s_to_half=hit["train_s"] if hit else None)
    claims = _claims(rows, cfg, L)
    checks = _identity_checks(w, cfg)
    aim_rows = [r for r in rows if r["arm"] == "MATT"]
    checks.append(Claim.check("aim_loss_decreases", "The AIM loss falls during the warm-up (mean of the last 5 "
                              "steps over the first 5, every seed).", "max ratio last/first",
                              max(r["aim_loss_last"] / r["aim_loss_first"] for r in aim_rows), threshold=1.0,
                              better="lower"))
    extra = {"bpb_teacher": bpb_teacher, "identical_segment_share": share, "fragmentation_ta_over_tb": frag,
             "teacher": w["teacher_info"], "n_lines": {k: len(w[k]) for k in ("teacher", "transfer", "eval")},
             "data_report": w["data_report"], "curves": curves, "setup_s": t_setup, "lr": lrs,
             "lr_validation_bpb": lr_scores}

    def plots(out_dir):
        from matt.plot import plot_curves, plot_depth

        plot_curves(curves, Path(out_dir) / "bpb_vs_steps.png", bpb_teacher=bpb_teacher)
        plot_depth(rows, L, Path(out_dir) / "recovery_vs_depth.png")

    return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds, "extra": extra, "plots": plots,
            "timings": {"setup_s": t_setup}}


def _claims(rows, cfg, L) -> list:
    budget = int(cfg.budget)
    k = math.ceil(L / 3)
    matt_rec = _vals(rows, "MATT", "recovery")
    heur = {b: _vals(rows, b, "bpb") for b in ("FOCUS+LM", "FVT+LM", "random+LM")}
    wall_m, wall_f = np.mean(_vals(rows, "MATT", "train_s")), np.mean(_vals(rows, "FOCUS+LM", "train_s"))
    # identical work (the FOCUS+LM prefix) varies by about ±20% between runs on this shared machine
    equal = bool(wall_m <= float(cfg.wall_tolerance) * wall_f)
    teacher_better = bool(all(r["bpb_random"] > r["bpb_teacher"] for r in rows))
    claims = [
        Claim.threshold(
            "recovery_large", f"MATT (FOCUS-lite + AIM on the first {k} layers + LM) recovers at least half of the "
            f"teacher's held-out-B bits per byte within the budget ({budget} steps).",
            "recovery = (BPB_rand − BPB)/(BPB_rand − BPB_teacher)", matt_rec, threshold=0.5, better="higher",
            baselines={b: _summ(_vals(rows, b, "recovery")) for b in ("random+LM", "FVT+LM", "FOCUS+LM", "LM-only-5x")},
            requires={"the teacher is better than random init + LM on held-out B (a gap to recover)":
                      teacher_better},
            notes="Recovery is measured from the random-init + LM arm at the same budget (0 by construction) "
                  "to the teacher; 0.5 is our reading of 'a large fraction'."),
        Claim.compare_all(
            "aim_beats_heuristics", "At equal compute MATT ends with lower held-out-B bits per byte than FOCUS-lite, "
            "FVT and random initialisation followed by LM training.", "BPB on held-out B at the end of the budget",
            _vals(rows, "MATT", "bpb"), baselines=heur, better="lower", paired=True,
            requires={f"MATT's training wall time is at most {float(cfg.wall_tolerance):g}x FOCUS+LM's (equal compute; "
                      "AIM's teacher-target computation is counted)": equal},
            notes=f"MATT train {wall_m:.1f}s vs FOCUS+LM {wall_f:.1f}s (mean over seeds)."),
    ]
    m5 = [r["steps_to_half"] for r in rows if r["arm"] == "MATT"]
    r5 = [r["steps_to_half"] for r in rows if r["arm"] == "LM-only-5x"]
    mw = [r["train_s_to_half"] for r in rows if r["arm"] == "MATT"]
    rw = [r["train_s_to_half"] for r in rows if r["arm"] == "LM-only-5x"]
    claims.append(Claim.compare(
        "aim_fewer_steps_to_half", "MATT (AIM steps counted) reaches 50% recovery in fewer steps than LM training "
        "alone (FOCUS-lite init, run up to 5x the budget).", "steps to 50% recovery (median, censored)",
        censored_summary(m5, budget=budget), baseline="LM-only-5x",
        baselines={"LM-only-5x": censored_summary(r5, budget=int(cfg.reference_multiple) * budget)},
        better="lower", requires={"the teacher is better than random init + LM (50% recovery is defined)":
                                  teacher_better},
        notes="Runs that never reach 50% are censored, never imputed."))
    claims.append(Claim.compare(
        "aim_less_time_to_half", "MATT reaches 50% recovery in less training wall time than LM training alone.",
        "training seconds to 50% recovery (median, censored)", censored_summary(mw),
        baseline="LM-only-5x", baselines={"LM-only-5x": censored_summary(rw)}, better="lower",
        requires={"the teacher is better than random init + LM (50% recovery is defined)": teacher_better}))
    mq = [r["steps_to_lm_quality"] for r in rows if r["arm"] == "MATT"]
    rq = [r["steps_to_lm_quality"] for r in rows if r["arm"] == "LM-only-5x"]
    claims.append(Claim.compare(
        "aim_fewer_steps_to_lm_quality", "MATT (AIM steps counted) reaches the held-out BPB that LM training alone "
        f"(FOCUS-lite init) has after the full budget of {budget} steps in fewer steps (teacher-free efficiency).",
        "steps to reach FOCUS+LM's end-of-budget BPB (median, censored)", censored_summary(mq, budget=budget),
        baseline="LM-only-5x", baselines={"LM-only-5x": censored_summary(rq, budget=budget)}, better="lower",
        notes="LM alone reaches it at the budget by construction (at most the budget); MATT is censored at it."))
    deep = f"MATT-k{L}"
    if deep in {r["arm"] for r in rows}:
        helps = Claim.compare("_", "_", "_", _vals(rows, "MATT", "bpb"), baseline="FOCUS+LM",
                              baselines={"FOCUS+LM": heur["FOCUS+LM"]}, better="lower", paired=True).verdict
        claims.append(Claim.compare(
            "aim_depth_saturates", f"AIM on the first {k} of {L} layers recovers no less than AIM on all {L} "
            "(within 0.05 recovery).", "recovery at the end of the budget", matt_rec, baseline=deep,
            baselines={deep: _vals(rows, deep, "recovery"), **{a: _summ(_vals(rows, a, "recovery")) for a in
                       sorted({r["arm"] for r in rows if r["arm"].startswith("MATT-")} - {deep})}},
            better="higher", margin=-0.05, paired=True,
            requires={f"AIM at depth {k} helps at all (beats FOCUS+LM, paired)": helps == "supported",
                      "the teacher is better than random init + LM (recovery is defined)": teacher_better}))
    return claims


def _summ(v):
    from paperworks import estimate

    return estimate(v) if len(v) > 1 else float(v[0])
