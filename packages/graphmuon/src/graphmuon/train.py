"""Full-batch training with a time-to-target clock.

The clock runs over what a user would wait for: forward, backward, every optimizer's ``step``
(including GraphMuon's capture hooks, covariance, inverse square root and Newton–Schulz).
Evaluation and the amplification diagnostics run with the clock stopped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from graphmuon.capture import Recorder
from graphmuon.diagnostics import amplification


def _accuracy(logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> float:
    return float((logits[mask].argmax(-1) == y[mask]).float().mean())


def train(model: nn.Module, data, make_optimizers: Callable[[nn.Module], list], *, steps: int,
          target: float | None = None, patience: int | None = None, diag_every: int = 0) -> dict:
    """Train ``model`` on ``data`` (node or graph classification, masks on ``data``) for at most ``steps`` steps.

    Stopping: with ``target`` and no ``patience`` the run stops at the first step whose validation
    accuracy reaches ``target`` (a time-to-target run); with ``patience`` it stops once the
    validation accuracy has not improved for ``patience`` steps (early stopping; the target, if
    given, is still timed); otherwise it runs all ``steps``. ``steps`` is the declared cap: a run
    that has not reached the target by then *missed* it (``steps_to_target``/``time_to_target``
    ``None``: censored by the caller, never imputed).

    Returns per-step curves: ``val``/``test`` accuracy after each step, ``clock`` (cumulative timed
    seconds), ``step_time``, ``loss``; ``steps_to_target``, ``time_to_target``, ``best_val``,
    ``test_at_best`` (test accuracy at the best validation step), and ``amp``
    (``{weight name: [amplification, ...]}`` every ``diag_every`` steps; 0 = off). A non-finite loss
    or gradient stops the run (``diverged=True``).
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int) or patience < 1):
        raise ValueError(f"patience must be None or an int >= 1, got {patience!r}")
    opts = make_optimizers(model)
    recorder = Recorder(model) if diag_every else None
    names = [n for n, *_ in recorder.weights] if recorder else []
    weights = {n: w for n, w, *_ in recorder.weights} if recorder else {}
    amp: dict[str, list[float]] = {n: [] for n in names}
    y, tr = data.y, data.train_mask
    curves = {"val": [], "test": [], "clock": [], "step_time": [], "loss": []}
    clock, diverged = 0.0, False
    hit = None
    best, best_at = -math.inf, -1
    for step in range(steps):
        diag = bool(diag_every) and step % diag_every == 0
        if diag:  # untimed: the propagated inputs and weights before this step
            model.train()
            with torch.no_grad(), recorder:
                model(data)
            before = {n: w.detach().clone() for n, w in weights.items()}
        model.train()
        t0 = time.perf_counter()
        for o in opts:
            o.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(data)[tr], y[tr])
        if not torch.isfinite(loss):
            diverged = True
            break
        loss.backward()
        try:
            for o in opts:
                o.step()
        except ValueError as err:  # GraphMuon refuses non-finite gradients: at this lr the run diverged
            if "non-finite" not in str(err):
                raise
            diverged = True
            break
        dt = time.perf_counter() - t0
        clock += dt
        if diag:
            for n, w in weights.items():
                amp[n].append(amplification(recorder.inputs[n], w.detach() - before[n]))
        model.eval()
        with torch.no_grad():
            logits = model(data)
        if not torch.isfinite(logits).all():
            diverged = True
            break
        v = _accuracy(logits, y, data.val_mask)
        curves["val"].append(v)
        curves["test"].append(_accuracy(logits, y, data.test_mask))
        curves["clock"].append(clock)
        curves["step_time"].append(dt)
        curves["loss"].append(float(loss.detach()))
        if v > best:
            best, best_at = v, step
        if target is not None and hit is None and v >= target:
            hit = step
            if patience is None:
                break
        if patience is not None and step - best_at >= patience:
            break
    if recorder:
        recorder.remove()
    for o in opts:
        if hasattr(o, "remove_hooks"):
            o.remove_hooks()
    return {**curves, "amp": amp, "diverged": diverged, "steps": len(curves["val"]), "cap": steps,
            "steps_to_target": None if hit is None else hit + 1,
            "time_to_target": None if hit is None else curves["clock"][hit],
            "best_val": best if best_at >= 0 else 0.0,
            "test_at_best": curves["test"][best_at] if best_at >= 0 else 0.0}


def best_val(run: dict) -> float:
    return max(run["val"]) if run["val"] else 0.0


def median_amp(run: dict) -> float:
    """Mean over graph weights of the median amplification over training (nan if none recorded)."""
    vals = [float(np.nanmedian(v)) for v in run["amp"].values() if v and np.isfinite(v).any()]
    return float(np.mean(vals)) if vals else math.nan


def training_step(model: nn.Module, data, opts: list) -> None:
    """One timed unit of :func:`train`: zero_grad, forward, backward and every optimizer's ``step``."""
    model.train()
    for o in opts:
        o.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(data)[data.train_mask], data.y[data.train_mask])
    if not torch.isfinite(loss):
        raise FloatingPointError("non-finite loss while timing steps: lower the learning rate")
    loss.backward()
    for o in opts:
        o.step()


def time_steps(make: dict[str, Callable[[], tuple[nn.Module, list]]], data, *, repeats: int = 15, warmup: int = 2,
               threads=1):
    """Per-step cost of several optimizers, interleaved with :func:`paperworks.bench.compare`.

    ``make[name]()`` builds ``(model, optimizers)``; every candidate then takes ``warmup + repeats``
    training steps on ``data``, the candidates alternating step by step, with the threads pinned.
    Returns the :class:`~paperworks.bench.BenchResult` (``res.speedup("muon", over="graphmuon")`` is
    GraphMuon's step time over Muon's).
    """
    from paperworks.bench import compare

    built = {name: f() for name, f in make.items()}
    cands = {name: (lambda m=m, o=o: training_step(m, data, o)) for name, (m, o) in built.items()}
    res = compare(cands, repeats=repeats, warmup=warmup, threads=threads)
    for _, opts in built.values():
        for o in opts:
            if hasattr(o, "remove_hooks"):
                o.remove_hooks()
    return res
