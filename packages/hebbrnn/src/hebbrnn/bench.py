"""``hebbrnn experiment=bench``: one meta-training step (forward, backward, Adam) of the factored and
materialised Hebb-RNN and each parameter-matched control, batch 64, hidden 64 and 128; interleaved wall
and CPU time (:func:`paperworks.bench.compare`) and peak memory in a fresh process
(:func:`paperworks.bench.peak_memory`)."""

from __future__ import annotations

import logging

import torch

from hebbrnn.baselines import ControlRNN, count_parameters
from hebbrnn.data import HierarchicalRecall
from hebbrnn.model import HebbRNN
from hebbrnn.train import episode_loss
from paperworks import Claim
from paperworks.bench import compare, peak_memory

log = logging.getLogger(__name__)
CANDIDATES = ("factored", "materialised", "rnn", "gru", "lstm")


def build(name: str, hidden: int, batch: int, seed: int = 0):
    """A model, its Adam optimiser and one batch of episodes (picklable inputs for the memory probe)."""
    task = HierarchicalRecall()
    torch.manual_seed(seed)
    ref = HebbRNN(task.input_size, hidden, task.item_dim)
    if name in ("factored", "materialised"):
        model = HebbRNN(task.input_size, hidden, task.item_dim, factored=name == "factored")
        model.load_state_dict(ref.state_dict())
    else:
        model = ControlRNN(name, task.input_size, task.item_dim, n_params=count_parameters(ref))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y, meta = task.sample(batch, torch.Generator().manual_seed(seed))
    return model, opt, x, y, meta


def train_step(model, opt, x, y, meta) -> float:
    loss, *_ = episode_loss(model, x, y, meta)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return float(loss.detach())


class _Setup:
    def __init__(self, name, hidden, batch):
        self.args = (name, hidden, batch)

    def __call__(self):
        torch.set_num_threads(1)
        return build(*self.args)


def run_bench(cfg) -> dict:
    bc = cfg.bench
    claims, checks, metrics, timings = [], [], [], {}
    batch = int(bc.batch_size)
    for hidden in [int(h) for h in bc.hidden]:
        built = {n: build(n, hidden, batch) for n in CANDIDATES}
        res = compare({n: (lambda b=b: train_step(*b)) for n, b in built.items()}, repeats=int(bc.repeats),
                      warmup=1, threads=1)
        row = {"hidden": hidden, "batch": batch}
        for r in res.rows():
            row[f"{r['candidate']}_wall_s"] = r["wall_median_s"]
            row[f"{r['candidate']}_cpu_s"] = r["cpu_median_s"]
            timings[f"h{hidden}_{r['candidate']}_wall_median_s"] = r["wall_median_s"]
        for n in CANDIDATES:
            row[f"{n}_params"] = count_parameters(built[n][0])
        sp = res.speedup("factored", over="materialised")
        vs_gru = res.speedup("gru", over="factored")  # t_factored / t_gru
        row.update(speedup_vs_materialised=sp.value, factored_over_gru=vs_gru.value,
                   speedup_vs_materialised_cpu=res.speedup("factored", over="materialised", kind="cpu").value,
                   factored_over_gru_cpu=res.speedup("gru", over="factored", kind="cpu").value)
        if bc.memory:
            for n in CANDIDATES:
                mem = peak_memory(train_step, setup=_Setup(n, hidden, batch))
                row[f"{n}_peak_mib"] = mem.mib
                row["memory_method"] = mem.method
        metrics.append(row)
        log.info("hidden %d: factored %.3fs, materialised %.3fs, gru %.3fs", hidden, res.median("factored"),
                 res.median("materialised"), res.median("gru"))
        if hidden == int(bc.claim_hidden):
            claims.append(Claim.threshold(
                "factored_speedup", f"Hidden {hidden}, batch {batch}: the factored path is at least 3× faster per "
                "meta-training step than the materialised one.", "wall-time ratio materialised / factored (median of "
                "paired ratios, interleaved)", sp, threshold=3.0, better="higher"))
            claims.append(Claim.threshold(
                "factored_vs_gru", f"Hidden {hidden}, batch {batch}: a factored Hebb-RNN step costs at most 5× a "
                "parameter-matched torch.nn.GRU step.", "wall-time ratio factored / GRU (median of paired ratios, "
                "interleaved)", vs_gru, threshold=5.0, better="lower"))
    checks.append(Claim.check("bench_ran_every_size", "Every hidden size was timed.", "hidden sizes timed",
                              len(metrics), target=len(list(bc.hidden)), tol=0))
    return {"claims": claims, "checks": checks, "metrics": metrics, "timings": timings}
