"""The paper's miniature as independent jobs (one thread each), run by a small process pool.

Jobs: ``pilot`` (one model, one learning rate, a short run: the learning rate is picked per model),
``train`` (one model, one seed: meta-training, accuracy on the test sets, geometry of the delay states
against the shuffled-label null; the Hebb-RNN job also measures its untrained network, the
random-network null), ``transfer`` (backward recall from the trained scaffold or from scratch) and
``predictive`` (the no-boundary task with or without the predictive module).
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

import numpy as np
import torch

from hebbrnn.baselines import ControlRNN, count_parameters
from hebbrnn.data import HierarchicalRecall
from hebbrnn.geometry import ordinal_geometry
from hebbrnn.model import HebbRNN
from hebbrnn.train import evaluate, meta_train

log = logging.getLogger(__name__)
MODELS = ("hebb", "hebb_off", "rnn", "gru", "lstm")
CONTROLS = ("rnn", "gru", "lstm")


# tasks and models ---------------------------------------------------------------------------------------
def make_task(tc: dict, **over) -> HierarchicalRecall:
    kw = {"n_items": tc["n_items"], "chunks": tuple(tc["chunks"]), "item_dim": tc["item_dim"], "gap": tc["gap"],
          "chunk_gap": tc["chunk_gap"], "delay": tc["delay"], "cue_size": tc["n_items"]}
    kw.update(over)
    return HierarchicalRecall(**kw)


def test_tasks(tc: dict) -> dict:
    """The test sets: novel items (the training distribution, fresh items), a longer list (4 chunks of 3,
    the first ``n_items`` ranks cued), and a new chunk pattern."""
    return {"novel": make_task(tc), "longer": make_task(tc, n_items=tc["longer_items"],
                                                         chunks=tuple(tc["longer_chunks"])),
            "pattern": make_task(tc, chunks=tuple(tc["new_pattern"]))}


def make_model(kind: str, tc: dict, hidden: int, seed: int, *, predictive: bool = False):
    torch.manual_seed(seed)
    task = make_task(tc)
    d_in, d_out = task.input_size, tc["item_dim"]
    cell = {"clip": tc["clip"], "eta": tc["eta"], "decay": tc["decay"]}
    ref = HebbRNN(d_in, hidden, d_out, **cell)
    if kind in ("hebb", "hebb_off"):
        torch.manual_seed(seed)
        return HebbRNN(d_in, hidden, d_out, plastic=kind == "hebb", predictive=predictive, **cell)
    torch.manual_seed(seed)
    return ControlRNN(kind, d_in, d_out, n_params=count_parameters(ref))


def delay_states(model, task: HierarchicalRecall, *, episodes: int, seed: int):
    """Hidden states in the first blank step after each item, with their global and local ranks."""
    g = torch.Generator().manual_seed(seed)
    x, _, meta = task.sample(episodes, g, dtype=next(model.parameters()).dtype)
    with torch.no_grad():
        hidden, _ = model.hidden_states(x)
    t = meta["item_times"] + 1
    S = hidden[torch.arange(episodes).unsqueeze(1), t].reshape(-1, hidden.shape[-1]).numpy()
    return S, meta["global_rank"].reshape(-1).numpy(), meta["local_rank"].reshape(-1).numpy()


def geometry_of(model, task, gc: dict, seed: int) -> dict:
    S, g, loc = delay_states(model, task, episodes=gc["episodes"], seed=7919 + seed)
    return ordinal_geometry(S, g, loc, n_null=gc["n_null"], n_null_decode=gc["n_null_decode"], seed=seed)


# jobs ---------------------------------------------------------------------------------------------------
def _threads():
    torch.set_num_threads(1)


def job_pilot(spec: dict) -> dict:
    _threads()
    t0 = time.perf_counter()
    tc = spec["task"]
    model = make_model(spec["model"], tc, spec["hidden"], spec["seed"])
    try:
        meta_train(model, make_task(tc), episodes=spec["episodes"], batch_size=spec["batch_size"], lr=spec["lr"],
                   seed=spec["seed"])
        score = evaluate(model, make_task(tc), batches=spec["eval_batches"], seed=777)  # a held-out stream
    except FloatingPointError as e:  # a diverging rate is a bad rate, not a failed run
        log.warning("pilot %s lr=%g diverged: %s", spec["model"], spec["lr"], e)
        score = float("-inf")
    return {"score": score, "seconds": time.perf_counter() - t0}


def job_train(spec: dict) -> dict:
    _threads()
    t0 = time.perf_counter()
    tc, seed, kind = spec["task"], spec["seed"], spec["model"]
    model = make_model(kind, tc, spec["hidden"], seed)
    out = {"model": kind, "seed": seed, "hidden_size": model.hidden_size, "n_params": count_parameters(model)}
    if kind == "hebb":  # the random-network null: the same network before meta-training
        out["geometry_random"] = geometry_of(model, make_task(tc), spec["geometry"], seed)
        out["acc_random"] = evaluate(model, make_task(tc), batches=spec["eval_batches"], seed=5 + seed)
    h = meta_train(model, make_task(tc), episodes=spec["episodes"], batch_size=spec["batch_size"], lr=spec["lr"],
                   seed=seed, eval_every=spec["eval_every"], eval_batches=2)
    out["history"] = {"evals": h["evals"], "loss_last": float(np.mean(h["loss"][-20:]))}
    out["acc"] = {name: evaluate(model, task, batches=spec["eval_batches"], seed=100_000 + seed)
                  for name, task in test_tasks(tc).items()}
    out["geometry"] = geometry_of(model, make_task(tc), spec["geometry"], seed)
    if kind == "hebb":
        out["eta"], out["decay"] = float(model.cell.eta), float(model.cell.decay)
    out["state_dict"] = {k: v.clone() for k, v in model.state_dict().items()}
    out["seconds"] = time.perf_counter() - t0
    return out


def job_transfer(spec: dict) -> dict:
    """Backward recall, from the forward-trained Hebb-RNN (``start="scaffold"``) or a fresh one."""
    _threads()
    t0 = time.perf_counter()
    tc, seed, xc = spec["task"], spec["seed"], spec["transfer"]
    model = make_model("hebb", tc, spec["hidden"], seed)
    if spec["start"] == "scaffold":
        model.load_state_dict(spec["state_dict"])
    task = make_task(tc, recall="backward")
    acc0 = evaluate(model, task, batches=2, seed=10**6 + seed)
    h = meta_train(model, task, episodes=xc["cap"], batch_size=spec["batch_size"], lr=spec["lr"], seed=50_000 + seed,
                   eval_every=xc["eval_every"], eval_batches=2, criterion=xc["criterion"],
                   min_episodes=xc["budget"])
    at_budget = [a for e, a in h["evals"] if e <= xc["budget"]]
    return {"start": spec["start"], "seed": seed, "reached": h["reached"], "evals": [[0, acc0], *h["evals"]],
            "acc_at_budget": at_budget[-1] if at_budget else acc0, "seconds": time.perf_counter() - t0}


def job_predictive(spec: dict) -> dict:
    """The no-boundary task (every gap equal, chunk patterns drawn per episode, items of a chunk sharing
    content): a Hebb-RNN with or without the predictive module; geometry of its delay states."""
    _threads()
    t0 = time.perf_counter()
    tc, seed, pc = spec["task"], spec["seed"], spec["predictive"]
    model = make_model("hebb", tc, spec["hidden"], seed, predictive=spec["with_module"])
    task = make_task(tc, chunks=[tuple(p) for p in pc["patterns"]], boundary="none",
                     chunk_similarity=pc["chunk_similarity"])
    h = meta_train(model, task, episodes=pc["episodes"], batch_size=spec["batch_size"], lr=spec["lr"], seed=seed,
                   eval_every=spec["eval_every"], eval_batches=2, predictive_weight=pc["weight"])
    return {"with_module": spec["with_module"], "seed": seed, "evals": h["evals"],
            "acc": evaluate(model, task, batches=spec["eval_batches"], seed=100_000 + seed),
            "prediction_loss": float(np.mean(h["prediction_loss"][-20:])) if h["prediction_loss"] else None,
            "geometry": geometry_of(model, task, spec["geometry"], seed), "seconds": time.perf_counter() - t0}


JOBS = {"pilot": job_pilot, "train": job_train, "transfer": job_transfer, "predictive": job_predictive}


def _run_job(kind: str, spec: dict):
    return JOBS[kind](spec)


# the scheduler ------------------------------------------------------------------------------------------
def run_jobs(initial: list, on_done, *, workers: int) -> None:
    """Run ``(key, kind, spec, priority)`` jobs in ``workers`` processes (one thread each).

    ``on_done(key, result)`` may return new jobs (dependants); the highest priority runs first.
    ``workers=0`` runs everything in this process (tests).
    """
    queue = list(initial)
    if workers == 0:
        while queue:
            queue.sort(key=lambda j: -j[3])
            key, kind, spec, _ = queue.pop(0)
            queue += on_done(key, _run_job(kind, spec)) or []
        return
    env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    os.environ.update(env)
    import multiprocessing as mp

    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        running = {}
        while queue or running:
            queue.sort(key=lambda j: -j[3])
            while queue and len(running) < workers:
                key, kind, spec, _ = queue.pop(0)
                running[pool.submit(_run_job, kind, spec)] = key
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                key = running.pop(fut)
                queue += on_done(key, fut.result()) or []
