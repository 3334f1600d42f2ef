"""M²LE: per-task PEFT LoRA, trained with TSP and merged by HIM into one plain model.

*Inferred from the abstract* (no code or full text is public; see :mod:`m2le.merge` for HIM).
Per task t: a fresh LoRA adapter on the named modules is trained on the task's data; TSP trains the
*modulated* update m̃⊙ΔW (a forward hook on each LoRA layer, one forward per step) with m̃ drawn,
each step and with probability 1/3 each, from {1 − r, 1, 1 + r}, r = 1 − (F_k + λ)/(F_prev + F_k + 2λ)
the element-wise shrinkage HIM would apply if the task's curvature were that of a random stored
task k (``tsp="fisher"``; r = ε when nothing is stored yet), or r = ε = 0.5 everywhere (``tsp="pm"``,
P&M's perturbation). At the task's end the diagonal empirical Fisher F_cur of every target weight
is computed once at the trained weights W + ΔW and stored; the merge W ← W + m⊙ΔW takes weights,
deltas and Fishers only; the adapter is dropped and F_prev ← F_prev + F_cur. No data is kept.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from m2le.fisher import _batches, check_labels, empirical_fisher, to_model
from m2le.merge import MERGES, merge_lora
from paperworks import atomic_torch_save

_PREFIX = "base_model.model."
_LORA_FIELDS = ("r", "lora_alpha", "target_modules", "lora_dropout", "bias", "use_rslora")


def _lora_fields(lc) -> dict:
    out = {}
    for k in _LORA_FIELDS:
        v = getattr(lc, k)
        out[k] = sorted(v) if isinstance(v, (set, frozenset)) else v
    return out


class M2LE:
    """Continual learning by LoRA per task merged with M²LE (HIM + TSP).

    Args:
        model: any ``nn.Module`` returning logits (n, C); copied, the caller's model is untouched.
        lora_config: a ``peft.LoraConfig`` naming the target ``nn.Linear`` modules (rank ``r`` ≥ 1).
        merge: ``"him"`` (element-wise m = F_cur/(F_prev + F_cur)), ``"fisher"`` (Fisher-weighted
            averaging of the optima), ``"scalar"`` (P&M's α*), ``"average"`` (α = 1/t), ``"seq"`` (m = 1).
        tsp: ``True``/``"fisher"`` (modulations from stored Fisher ratios), ``"pm"`` (P&M's
            {1−ε, 1, 1+ε}) or ``False``.
        damping: λ ≥ 0 added to both Fishers in the merge.
        epsilon: ε of the P&M perturbation (and TSP's first task).
        seed: seed of TSP's draws (default: from torch's generator).

    Example:
        >>> cl = M2LE(mlp, LoraConfig(r=4, target_modules=["fc1", "fc2"]))
        >>> for loader in tasks:
        ...     model = cl.learn_task(loader, epochs=50, lr=1e-2)
    """

    def __init__(self, model: nn.Module, lora_config, *, merge: str = "him", tsp=True, damping: float = 1e-8,
                 epsilon: float = 0.5, seed: int | None = None):
        from peft import LoraConfig

        from paperworks import check_float, check_int

        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not isinstance(lora_config, LoraConfig):
            raise TypeError(f"lora_config must be a peft.LoraConfig, got {type(lora_config).__name__}")
        check_int(lora_config.r, "lora_config.r", minimum=1)
        if merge not in MERGES:
            raise ValueError(f"merge must be one of {MERGES}, got {merge!r}")
        if tsp not in (True, False, "fisher", "pm"):
            raise ValueError(f"tsp must be True, False, 'fisher' or 'pm', got {tsp!r}")
        self.merge, self.tsp = merge, ("fisher" if tsp is True else tsp)
        self.damping = check_float(damping, "damping", minimum=0.0)
        self.epsilon = check_float(epsilon, "epsilon", minimum=0.0, maximum=1.0)
        self.lora_config = copy.deepcopy(lora_config)
        self.model = copy.deepcopy(model)
        self.targets = self._resolve_targets()
        self.fisher_prev = {p: torch.zeros_like(w) for p, w in self._weights().items()}
        self.fishers: list[dict] = []
        self.modulations: list[dict] = []
        self.task = 0
        self._rng = random.Random(seed if seed is not None else int(torch.randint(0, 2**31, ()).item()))

    # the targets ------------------------------------------------------------------------------

    def _peft(self, model):
        from peft import get_peft_model

        try:
            return get_peft_model(model, copy.deepcopy(self.lora_config))
        except ValueError as e:
            names = [n for n, _ in self.model.named_modules() if n]
            raise ValueError(f"lora_config.target_modules {self.lora_config.target_modules!r} not found in the "
                             f"model (its modules: {names}): {e}") from None

    def _resolve_targets(self) -> dict[str, str]:
        from peft.tuners.lora import Linear as LoraLinear
        from peft.tuners.lora import LoraLayer

        pm = self._peft(copy.deepcopy(self.model))
        out = {}
        for name, mod in pm.named_modules():
            if isinstance(mod, LoraLayer):
                if not isinstance(mod, LoraLinear):
                    raise ValueError(f"target {name!r} is a {type(mod).__name__}; only nn.Linear targets are supported")
                plain = name[len(_PREFIX):] if name.startswith(_PREFIX) else name
                out[name] = f"{plain}.weight"
        if not out:
            raise ValueError(f"lora_config.target_modules {self.lora_config.target_modules!r} matched no module")
        return out

    def _weights(self) -> dict[str, torch.Tensor]:
        params = dict(self.model.named_parameters())
        return {p: params[p].detach().clone() for p in self.targets.values()}

    # training ---------------------------------------------------------------------------------

    def _draw(self, pname: str, w: torch.Tensor):
        """TSP's m̃ for one target weight (a scalar or a tensor of w's shape), drawn per step."""
        sign = self._rng.choice((-1, 0, 1))
        if sign == 0:
            return 1.0
        if self.tsp == "pm" or not self.fishers:
            return 1.0 + sign * self.epsilon
        fk = self._rng.choice(self.fishers)[pname]
        lam = self.damping
        r = 1.0 - (fk + lam) / (self.fisher_prev[pname] + fk + 2 * lam)
        return 1.0 + sign * r.to(w.dtype)

    @property
    def needs_fisher(self) -> bool:
        return self.merge in ("him", "fisher", "scalar") or self.tsp == "fisher"

    def _penalty(self, peft_model, deltas: dict) -> torch.Tensor | float:  # EWC overrides this
        return 0.0

    def learn_task(self, train_loader, *, epochs: int, lr: float, weight_decay: float = 0.0) -> nn.Module:
        """Train a fresh LoRA adapter on the task (with TSP), store its Fisher, merge, return the model.

        Args:
            train_loader: iterable of ``(x, y)`` batches (a ``DataLoader``), y in the head's classes.
            epochs: passes over ``train_loader``. lr: Adam's learning rate.

        Returns:
            the merged plain ``nn.Module`` (original parameter names, no adapter left).
        """
        from paperworks import check_float, check_int

        check_int(epochs, "epochs", minimum=1)
        lr = check_float(lr, "lr", minimum=0.0, open_minimum=True)
        check_float(weight_decay, "weight_decay", minimum=0.0)
        pm = self._peft(copy.deepcopy(self.model))
        mods = dict(pm.named_modules())
        lora = {name: mods[name] for name in self.targets}
        adapter = "default"
        current: dict[str, object] = {}

        def tsp_hook(name):
            def hook(mod, inp, out):
                m = current.get(name, 1.0)
                if isinstance(m, float) and m == 1.0:
                    return out
                dw = mod.get_delta_weight(adapter)
                return out + F.linear(inp[0], (m - 1.0) * dw)
            return hook

        hooks = [mod.register_forward_hook(tsp_hook(n)) for n, mod in lora.items()] if self.tsp else []
        params = [p for p in pm.parameters() if p.requires_grad]
        opt = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
        pm.train()
        steps = 0
        try:
            for epoch in range(epochs):
                for x, y in _batches(train_loader, "train_loader"):
                    x, y = to_model(self.model, x, y)
                    if self.tsp:
                        for n, p in self.targets.items():
                            current[n] = self._draw(p, self.fisher_prev[p])
                    logits = pm(x)
                    y = check_labels(logits, torch.as_tensor(y, device=logits.device), "train_loader labels")
                    loss = F.cross_entropy(logits, y)
                    pen = self._penalty(pm, {self.targets[n]: mod.get_delta_weight(adapter) for n, mod in lora.items()})
                    loss = loss + pen
                    if not torch.isfinite(loss):
                        raise FloatingPointError(f"loss is {float(loss)} at epoch {epoch}, step {steps} "
                                                 f"(task {self.task + 1}); lower lr")
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    steps += 1
        finally:
            for h in hooks:
                h.remove()
        if steps == 0:
            raise ValueError("train_loader yielded no batches")
        with torch.no_grad():
            deltas = {self.targets[n]: mod.get_delta_weight(adapter).detach().clone() for n, mod in lora.items()}
        return self._finish(deltas, train_loader)

    def _finish(self, deltas: dict, loader) -> nn.Module:
        # the task's Fisher, once, at the trained weights W + ΔW
        weights = self._weights()
        trained = copy.deepcopy(self.model)
        params = dict(trained.named_parameters())
        with torch.no_grad():
            for p, d in deltas.items():
                params[p].add_(d.to(params[p].dtype))
        self.last_trained = trained
        if self.needs_fisher:
            f_cur = empirical_fisher(trained, loader, params=list(deltas))
        else:  # Seq-LoRA / averaging need no curvature
            f_cur = {p: torch.zeros_like(d) for p, d in deltas.items()}
        self.task += 1
        merged, m = merge_lora(weights, deltas, self.fisher_prev, f_cur, merge=self.merge, damping=self.damping,
                               task=self.task)
        self._assign(merged)
        self.fisher_prev = {p: self.fisher_prev[p] + f_cur[p] for p in f_cur}
        self.fishers.append({p: v.detach().clone() for p, v in f_cur.items()})
        self.modulations.append(m)
        self.last_deltas = deltas
        return self.model

    def _assign(self, weights: dict) -> None:
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for p, w in weights.items():
                params[p].copy_(w.to(params[p].dtype))

    # state ------------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything needed to continue: the merged weights, the stored Fishers (no data), the config."""
        return {"model": {k: v.detach().clone() for k, v in self.model.state_dict().items()},
                "fisher_prev": {k: v.clone() for k, v in self.fisher_prev.items()},
                "fishers": [{k: v.clone() for k, v in f.items()} for f in self.fishers],
                "task": self.task,
                "config": {"merge": self.merge, "tsp": self.tsp, "damping": self.damping, "epsilon": self.epsilon,
                           "lora": _lora_fields(self.lora_config)}}

    def load_state_dict(self, state: dict) -> None:
        for key in ("model", "fisher_prev", "fishers", "task", "config"):
            if key not in state:
                raise ValueError(f"state is missing {key!r}")
        if set(state["fisher_prev"]) != set(self.fisher_prev):
            raise ValueError(f"state's fisher_prev keys {sorted(state['fisher_prev'])} differ from the targets "
                             f"{sorted(self.fisher_prev)}")
        for k, v in state["fisher_prev"].items():
            if v.shape != self.fisher_prev[k].shape:
                raise ValueError(f"state's fisher_prev[{k!r}] has shape {tuple(v.shape)}, expected "
                                 f"{tuple(self.fisher_prev[k].shape)}")
        self.model.load_state_dict(state["model"])
        self.fisher_prev = {k: v.clone() for k, v in state["fisher_prev"].items()}
        self.fishers = [{k: v.clone() for k, v in f.items()} for f in state["fishers"]]
        self.task = int(state["task"])
        c = state["config"]
        self.merge, self.tsp, self.damping, self.epsilon = c["merge"], c["tsp"], float(c["damping"]), float(c["epsilon"])

    def save(self, path) -> Path:
        """One self-contained file (loadable with ``weights_only=True``)."""
        path = Path(path)
        atomic_torch_save(self.state_dict(), path)
        return path

    @classmethod
    def load(cls, path, model: nn.Module) -> M2LE:
        """Rebuild from :meth:`save`'s file; ``model`` gives the architecture (its weights are replaced)."""
        from peft import LoraConfig

        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no checkpoint at {path}")
        p = next(iter(model.parameters()), None)
        state = torch.load(path, weights_only=True, map_location=p.device if p is not None else "cpu")
        c = state["config"]
        obj = cls(model, LoraConfig(**c["lora"]), merge=c["merge"], tsp=c["tsp"] or False, damping=c["damping"],
                  epsilon=c["epsilon"])
        obj.load_state_dict(state)
        return obj
