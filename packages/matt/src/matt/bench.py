"""Bench: one AIM step against one LM step (equal batch) on a 12-layer d = 256 GPT-2, k = 4; alignment throughput."""

from __future__ import annotations

import logging

import torch

from paperworks import Claim
from paperworks.bench import compare, peak_memory

log = logging.getLogger(__name__)


def _world(layers: int, width: int, heads: int, k: int, batch: int, vocab: int, seed: int = 0):
    from matt.aim import AIMLoss
    from matt.data import SyntheticLanguages, train_bpe
    from matt.init import fvt_init
    from matt.teacher import gpt2
    from matt.transfer import _bos, _embedding_params, _encode, _pad

    langs = SyntheticLanguages(seed=seed)
    mix = langs.sample("A", 900, seed=1) + langs.sample("B", 100, seed=2)
    b = langs.sample("B", 400, seed=3)
    ta, tb = train_bpe(mix, vocab), train_bpe(b, vocab)
    teacher = gpt2(len(ta), layers=layers, width=width, heads=heads, n_ctx=64, seed=seed).eval()
    student = gpt2(len(ta), layers=layers, width=width, heads=heads, n_ctx=64, seed=seed)
    student.load_state_dict(teacher.state_dict())
    fvt_init(student, ta, tb)
    texts = b[:batch]
    aim = AIMLoss(teacher, ta, layers=k)
    with torch.no_grad():
        aim(student, tb, texts)  # fills the teacher-target cache, as during training
    for p in student.parameters():
        p.requires_grad_(False)
    params = _embedding_params(student)
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.0)
    ids, mask = _pad(_encode(tb, texts, 64), _bos(tb))
    return {"student": student, "aim": aim, "tb": tb, "ta": ta, "texts": texts, "opt": opt, "ids": ids,
            "mask": mask, "lines": b}


def aim_step(w):
    w["opt"].zero_grad(set_to_none=True)
    w["aim"](w["student"], w["tb"], w["texts"]).backward()
    w["opt"].step()


def lm_step(w):
    from matt.transfer import lm_loss

    w["opt"].zero_grad(set_to_none=True)
    lm_loss(w["student"], w["ids"], w["mask"]).backward()
    w["opt"].step()


def _setup(*args):
    return (_world(*args),)


def run_bench(cfg) -> dict:
    from matt.align import align_segments, token_spans

    b = cfg.bench
    args = (int(b.layers), int(b.width), int(b.heads), int(b.k), int(b.batch), int(b.vocab))
    w = _world(*args)
    dev = str(cfg.get("device", "cpu"))
    sync = None
    if dev.startswith("cuda"):  # the same step on the GPU (device=auto picks it when present)
        w["student"].to(dev)
        w["aim"].teacher.to(dev)
        w["ids"], w["mask"] = w["ids"].to(dev), w["mask"].to(dev)
        w["aim"]._cache.clear()
        with torch.no_grad():
            w["aim"](w["student"], w["tb"], w["texts"])
        sync = torch.cuda.synchronize
    res = compare({"aim_step": lambda: aim_step(w), "lm_step": lambda: lm_step(w)}, repeats=int(b.repeats),
                  warmup=2, threads=1, sync=sync)
    speed = res.speedup("aim_step", over="lm_step")
    mem = {}
    if b.memory and not dev.startswith("cuda"):
        for name, fn in (("aim_step", aim_step), ("lm_step", lm_step)):
            mem[name] = peak_memory(fn, *[], setup=_Setup(args)).mib
    # alignment throughput against the two tokenisations it needs
    lines = w["lines"][: int(b.align_lines)]
    ta, tb = w["ta"], w["tb"]
    al = compare({"align_segments": lambda: [align_segments(t, ta, tb) for t in lines],
                  "tokenize_both": lambda: [(token_spans(t, ta), token_spans(t, tb)) for t in lines]},
                 repeats=5, warmup=1, threads=1)
    lines_per_s = len(lines) / al.median("align_segments")
    claims = [Claim.threshold(
        "aim_step_half_lm_step", f"An AIM step (first {b.k} of {b.layers} layers, cached teacher targets, no LM "
        f"head) takes at most 0.5x the wall time of an LM step at equal batch ({b.batch} lines), d = {b.width}.",
        "LM-step time / AIM-step time (median of paired ratios)", speed, threshold=2.0, better="higher",
        baselines={"lm_step_s": res.time("lm_step"), "aim_step_s": res.time("aim_step")})]
    rows = [{**r, "kind": "step"} for r in res.rows()] + [{**r, "kind": "align"} for r in al.rows()]
    for r in rows:
        if r["candidate"] in mem:
            r["peak_mib"] = mem[r["candidate"]]
    extra = {"speedup_lm_over_aim": speed.to_dict(), "peak_mib": mem, "align_lines_per_s": lines_per_s,
             "align_over_tokenize": al.median("align_segments") / al.median("tokenize_both"),
             "cpu_speedup": res.speedup("aim_step", over="lm_step", kind="cpu").to_dict()}
    log.info("AIM step %.4fs, LM step %.4fs, speedup %.2f; alignment %.0f lines/s", res.median("aim_step"),
             res.median("lm_step"), speed.value, lines_per_s)
    return {"claims": claims, "metrics": rows, "seeds": [int(cfg.seed)], "extra": extra,
            "timings": {"lm_step_median_s": res.median("lm_step"), "aim_step_median_s": res.median("aim_step")}}


class _Setup:
    """Picklable set-up for :func:`paperworks.bench.peak_memory` (builds the world in the child)."""

    def __init__(self, args):
        self.args = args

    def __call__(self):
        torch.set_num_threads(1)
        return _setup(*self.args)
