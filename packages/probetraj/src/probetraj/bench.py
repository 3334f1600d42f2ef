"""``probetraj experiment=bench``: live monitoring against plain ``model.generate`` on the tiny model."""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from paperworks import Claim
from paperworks.bench import compare
from probetraj.activations import HFActivationSource
from probetraj.lm import build_model, world_tokenizer
from probetraj.probe import PooledProbe
from probetraj.world import ReasoningWorld, template_dataset


def reencode_monitor(src: HFActivationSource, prompt: str, probe, n: int, seed: int = 0) -> np.ndarray:
    """The naive monitor: at every token, re-encode the whole prefix (no cache) and score its last state."""
    ids = src.encode(prompt)
    gen = torch.Generator().manual_seed(seed)
    traj = []
    with torch.no_grad():
        for _ in range(n):
            x = torch.tensor([ids])
            out = src.model(input_ids=x, attention_mask=torch.ones_like(x), output_hidden_states=True)
            traj.append(float(probe.trajectory(out.hidden_states[src.layer][0, -1:].numpy())[0]))
            ids.append(int(torch.multinomial(out.logits[0, -1].softmax(-1), 1, generator=gen)))
    return np.asarray(traj)


def run_bench(cfg, out_dir=None) -> dict:
    b = cfg.bench
    tok = world_tokenizer()
    model = build_model(
        tok,
        width=int(cfg.lm.width),
        layers=int(cfg.lm.layers),
        heads=int(cfg.lm.heads),
        n_ctx=int(cfg.lm.n_ctx),
        seed=0,
    ).eval()
    src = HFActivationSource(model, tok, layer=int(cfg.probe.layer))
    texts, y = template_dataset("refusal", 200, seed=0)
    probe = PooledProbe(pooling="max").fit(src.hidden_states(texts), y)
    prompt = ReasoningWorld("safety").prompts(1)[0][1]
    n = int(b.new_tokens)
    P = len(src.encode(prompt))
    ids = torch.tensor([src.encode(prompt)])

    def plain():
        with torch.no_grad():
            model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=n,
                min_new_tokens=n,
                do_sample=True,
                temperature=1.0,
                top_k=0,
                pad_token_id=tok.pad_token_id,
            )

    def monitor():
        src.monitor(prompt, probe, max_new_tokens=n, do_sample=True, stop_at_eos=False, end_think="<unused>")

    def reencode():
        reencode_monitor(src, prompt, probe, n)

    res = compare(
        {"generate": plain, "monitor": monitor, "reencode": reencode}, repeats=int(b.repeats), warmup=2, threads=1
    )
    ratio = res.speedup("generate", over="monitor")  # time(monitor) / time(generate)
    # offline scoring throughput: hidden states of many texts + trajectories
    corpus = [t.text for t in ReasoningWorld("safety", seed=1).sample(int(b.offline_texts))]
    t0 = time.perf_counter()
    H = src.hidden_states(corpus)
    trajs = probe.trajectories(H)
    off_s = time.perf_counter() - t0
    tokens = sum(len(t) for t in trajs)
    res_m = src.monitor(
        prompt, probe, max_new_tokens=n, do_sample=True, stop_at_eos=False, end_think="<unused>", seed=3
    )
    full = probe.trajectory(src.hidden_states_of_ids([src.encode(prompt) + res_m.token_ids[:-1]])[0][P:])
    claims = [
        Claim.threshold(
            "monitor_overhead",
            f"Live monitoring (probe score and running features at every one of {n} generated "
            "tokens) takes at most 1.15x the wall time of plain model.generate at equal sampling and length.",
            "time(monitor) / time(generate)",
            ratio,
            threshold=1.15,
            better="lower",
        )
    ]
    checks = [
        Claim.check(
            "bench_monitor_equals_full_forward",
            "The benchmarked monitor's scores equal one full forward's.",
            "max |difference|",
            float(np.max(np.abs(full - res_m.trajectory))),
            threshold=1e-4,
            better="lower",
        )
    ]
    rows = res.rows() + [
        {"candidate": "offline_scoring", "tokens": tokens, "wall_s": off_s, "tokens_per_s": tokens / off_s}
    ]
    re_ratio = res.speedup("monitor", over="reencode")
    return {
        "claims": claims,
        "checks": checks,
        "metrics": rows,
        "extra": {
            "new_tokens": n,
            "prompt_tokens": P,
            "monitor_over_generate": ratio.to_dict(),
            "reencode_over_monitor": re_ratio.to_dict(),
            "offline_tokens_per_s": tokens / off_s,
            "note": "random-init tiny GPT of the paper's size (timing only needs the shapes)",
            "log10_reencode_over_monitor": math.log10(max(re_ratio.value, 1e-12)),
        },
    }
