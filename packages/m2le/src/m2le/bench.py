"""The bench: per-task wall time and peak memory per method; the Fisher pass vs a per-sample loop."""

from __future__ import annotations

import copy

import torch

from paperworks import Claim


def _setup(method: str, seed: int, epochs: int):
    """A learner that has learned task 1 of the domain stream (Fishers stored), and task 2's loader."""
    from m2le.baselines import make_learner
    from m2le.data import domain_tasks, pretrain
    from m2le.experiments import lora_config

    base = pretrain(seed, epochs=10)
    tasks = domain_tasks(seed, T=2)
    ln = make_learner(method, base, lora_config(4), seed=seed)
    ln.learn_task(tasks[0].loader(batch_size=128, seed=seed), epochs=epochs, lr=1e-2)
    return ln, tasks[1].loader(batch_size=128, seed=seed + 1), epochs


def _learn(ln, loader, epochs):
    copy.deepcopy(ln).learn_task(loader, epochs=epochs, lr=1e-2)


def _memory_setup(method, seed, epochs):  # runs in the child process of peak_memory
    torch.set_num_threads(1)
    return _setup(method, seed, epochs)


def run_bench(cfg) -> tuple[list, list, list]:
    from m2le.baselines import METHODS
    from m2le.data import domain_tasks, pretrain
    from m2le.fisher import empirical_fisher, per_sample_fisher
    from paperworks.bench import compare, peak_memory

    b = cfg.bench
    seed, epochs = int(cfg.seed), int(b.epochs)
    rows, claims, checks = [], [], []
    # per-task wall time: every method learning task 2 (training + Fisher where needed + merge)
    setups = {m: _setup(m, seed, epochs) for m in METHODS}
    res = compare({m: (lambda s=s: _learn(*s)) for m, s in setups.items()}, repeats=int(b.repeats), warmup=1,
                  threads=int(b.threads))
    rows += [{"exp": "bench", "what": "task_time", **r} for r in res.rows()]
    for m in METHODS:
        if m != "seq":
            sp = res.speedup("seq", over=m)  # time(m) / time(seq), paired per repeat
            rows.append({"exp": "bench", "what": "task_time_ratio", "candidate": f"{m}_over_seq", "ratio": sp.value,
                         "ratio_lower": sp.lower, "ratio_upper": sp.upper})
    claims.append(Claim.threshold(
        "m2le_task_time_within_1.25x_seq", "Performance: per task, M²LE (TSP training + Fisher + HIM merge) takes at "
        f"most 1.25× Seq-LoRA's wall time at equal epochs ({epochs} epochs, domain task, ratio of paired medians).",
        "time(M²LE) / time(Seq-LoRA)", res.speedup("seq", over="m2le"), threshold=1.25, better="lower",
        notes=f"{b.threads} thread(s); every method's ratio in metrics.csv"))
    if b.memory:
        for m in b.memory_methods:
            mem = peak_memory(_learn_child, setup=_memory_partial(m, seed, epochs))
            rows.append({"exp": "bench", "what": "peak_memory", "candidate": m, "peak_mib": mem.mib,
                         "memory_method": mem.method, "wall_s": mem.wall_s})
    # the Fisher: closed form per linear layer vs one backward per sample
    base = pretrain(seed, epochs=10)
    t = domain_tasks(seed, T=1)[0]
    X, y = torch.as_tensor(t.X[: int(b.fisher_n)]), torch.as_tensor(t.y[: int(b.fisher_n)])
    names = ["fc1.weight", "fc2.weight"]
    batches = [(X[i:i + 128], y[i:i + 128]) for i in range(0, len(y), 128)]
    fast = empirical_fisher(base, batches, params=names)
    slow = per_sample_fisher(base, batches, params=names)
    rel = max(float((fast[k] - slow[k]).abs().max() / slow[k].abs().max()) for k in names)
    checks.append(Claim.check("fisher_equals_per_sample_loop", "The closed-form diagonal Fisher equals the per-sample "
                              "backward loop (max error relative to the largest entry).", "relative error", rel,
                              threshold=1e-6, better="lower"))
    fr = compare({"closed_form": lambda: empirical_fisher(base, batches, params=names),
                  "per_sample_loop": lambda: per_sample_fisher(base, batches, params=names)},
                 repeats=int(b.fisher_repeats), warmup=1, threads=int(b.threads))
    rows += [{"exp": "bench", "what": "fisher", **r} for r in fr.rows()]
    claims.append(Claim.threshold(
        "fisher_20x_faster_than_loop", f"Performance: the diagonal Fisher by the closed form per linear layer is at "
        f"least 20× faster than a per-sample backward loop ({len(y)} samples, fc1 + fc2 of the MLP).",
        "speed-up (loop time / closed-form time)", fr.speedup("closed_form", over="per_sample_loop"),
        threshold=20.0, better="higher", notes=f"equal to the loop to {rel:.1e} relative"))
    return claims, checks, rows


def _learn_child(ln, loader, epochs):
    ln.learn_task(loader, epochs=epochs, lr=1e-2)


def _memory_partial(method, seed, epochs):
    import functools

    return functools.partial(_memory_setup, method, seed, epochs)


__all__ = ["run_bench"]
