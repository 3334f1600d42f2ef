"""Episodic meta-training: every episode is a fresh batch of lists; the slow weights learn to learn.

Loss per episode: the recall cross-entropy over cosine scores (:func:`hebbrnn.data.recall_scores`),
plus, for a model with a predictive module, the mean squared error of its next-input prediction over
the encoding phase (weight ``predictive_weight``). Adam, gradient-norm clipping.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import torch

from hebbrnn.data import HierarchicalRecall, recall_scores
from paperworks import atomic_torch_save, check_float, check_int

log = logging.getLogger(__name__)


def _check_model(model) -> None:
    if not (hasattr(model, "hidden_states") and hasattr(model, "readout")):
        raise TypeError(f"model must be a HebbRNN or ControlRNN (hidden_states + readout), got {type(model).__name__}")


def episode_loss(model, inputs, targets, meta, *, predictive_weight: float = 1.0):
    """``(loss, recall_loss, accuracy, prediction_loss or None)`` of one batch of episodes."""
    hidden, _ = model.hidden_states(inputs)
    loss, acc = recall_scores(model.readout(hidden), targets, meta["items"])
    rec = loss
    pred = None
    if getattr(model, "predictive", False):
        e = int(meta["encoding_end"])
        guess = model.predict_next(hidden[:, : e - 1])
        pred = torch.nn.functional.mse_loss(guess, inputs[:, 1:e])
        loss = loss + predictive_weight * pred
    return loss, rec, acc, pred


@torch.no_grad()
def evaluate(model, task: HierarchicalRecall, *, batches: int = 4, batch_size: int = 64, seed: int = 12345) -> float:
    """Recall accuracy on ``batches`` fresh batches drawn from ``task`` with a fixed seed (novel items)."""
    _check_model(model)
    g = torch.Generator().manual_seed(int(seed))
    dtype = next(model.parameters()).dtype
    accs = []
    for _ in range(check_int(batches, "batches")):
        x, y, meta = task.sample(batch_size, g, dtype=dtype)
        _, acc = recall_scores(model(x)[0], y, meta["items"])
        accs.append(float(acc))
    return sum(accs) / len(accs)


def meta_train(model, task: HierarchicalRecall, *, episodes: int, batch_size: int = 64, lr: float = 1e-3,
               seed: int = 0, eval_every: int = 0, eval_task: HierarchicalRecall | None = None,
               eval_batches: int = 2, criterion: float | None = None, min_episodes: int = 0, grad_clip: float = 1.0,
               predictive_weight: float = 1.0, checkpoint=None, checkpoint_every: int = 100,
               resume: bool = False, progress: bool = False) -> dict:
    """Meta-train ``model`` on ``episodes`` batches of fresh episodes from ``task`` (in place).

    Args:
        episodes: meta-training episodes (one optimiser step each, a batch of ``batch_size`` lists).
        lr: Adam's learning rate. seed: seeds the episode stream (``torch.Generator``).
        eval_every: evaluate novel-item accuracy on ``eval_task`` (default ``task``) every so many
            episodes (0: never). criterion: stop when that accuracy reaches it (``reached``: the first
            evaluation at or above it), but not before ``min_episodes``.
        checkpoint: a file to save model, optimiser, generator and history to every
            ``checkpoint_every`` episodes; ``resume=True`` continues from it to the same result.

    Returns:
        history: ``loss``, ``recall_loss``, ``acc`` (per episode), ``prediction_loss`` (predictive
        models), ``evals`` (``[episode, accuracy]`` pairs), ``reached`` (episodes to criterion or
        ``None``), ``episodes`` (done).

    Raises:
        FloatingPointError: a non-finite loss, naming the episode.
    """
    _check_model(model)
    if not isinstance(task, HierarchicalRecall):
        raise TypeError(f"task must be a HierarchicalRecall, got {type(task).__name__}")
    if task.input_size != model.input_size:
        raise ValueError(f"task inputs have {task.input_size} channels but the model expects {model.input_size}")
    episodes = check_int(episodes, "episodes", minimum=0)
    batch_size = check_int(batch_size, "batch_size")
    lr = check_float(lr, "lr", minimum=0, open_minimum=True)
    seed = check_int(seed, "seed", minimum=0)
    eval_every = check_int(eval_every, "eval_every", minimum=0)
    criterion = check_float(criterion, "criterion", minimum=0, maximum=1, optional=True)
    min_episodes = check_int(min_episodes, "min_episodes", minimum=0)
    if criterion is not None and eval_every == 0:
        raise ValueError("criterion needs eval_every > 0")
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    hist = {"loss": [], "recall_loss": [], "acc": [], "prediction_loss": [], "evals": [], "reached": None,
            "episodes": 0}
    start = 0
    if resume:
        if checkpoint is None or not Path(checkpoint).is_file():
            raise FileNotFoundError(f"resume=True but there is no checkpoint at {checkpoint}")
        doc = torch.load(checkpoint, weights_only=True)
        model.load_state_dict(doc["model"])
        opt.load_state_dict(doc["optimizer"])
        gen.set_state(doc["generator"])
        hist, start = doc["history"], int(doc["episode"])
    dtype = next(model.parameters()).dtype
    eval_task = eval_task or task
    model.train()
    bar = range(start, episodes)
    if progress:
        from tqdm import tqdm

        bar = tqdm(bar, disable=None, desc=type(model).__name__)
    for ep in bar:
        x, y, meta = task.sample(batch_size, gen, dtype=dtype)
        loss, rec, acc, pred = episode_loss(model, x, y, meta, predictive_weight=predictive_weight)
        if not math.isfinite(float(loss.detach())):
            raise FloatingPointError(f"meta_train: the loss is {float(loss.detach())} at episode {ep} (lr={lr:g}); "
                                     "training stopped")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        hist["loss"].append(float(loss.detach()))
        hist["recall_loss"].append(float(rec.detach()))
        hist["acc"].append(float(acc))
        if pred is not None:
            hist["prediction_loss"].append(float(pred.detach()))
        hist["episodes"] = ep + 1
        if eval_every and (ep + 1) % eval_every == 0:
            model.eval()
            a = evaluate(model, eval_task, batches=eval_batches, batch_size=batch_size, seed=10**6 + seed)
            model.train()
            hist["evals"].append([ep + 1, a])
            if criterion is not None and a >= criterion and hist["reached"] is None:
                hist["reached"] = ep + 1
            if hist["reached"] is not None and ep + 1 >= min_episodes:
                break
        if checkpoint is not None and (ep + 1) % checkpoint_every == 0:
            _save_checkpoint(checkpoint, model, opt, gen, hist, ep + 1)
    if checkpoint is not None:
        _save_checkpoint(checkpoint, model, opt, gen, hist, hist["episodes"])
    model.eval()
    return hist


def _save_checkpoint(path, model, opt, gen, hist, episode) -> None:
    path = Path(path)
    atomic_torch_save({"model": model.state_dict(), "optimizer": opt.state_dict(), "generator": gen.get_state(),
                       "history": hist, "episode": int(episode)}, path)
