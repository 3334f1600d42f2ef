"""The Hebb-RNN sequence model: a :class:`~hebbrnn.cell.HebbianRNNCell` unrolled over an episode, a linear
readout, and an optional predictive module (a linear head predicting the next input from ``h_t``)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from hebbrnn.cell import HebbianRNNCell
from paperworks import atomic_torch_save, check_float, check_int


def check_inputs(x, input_size: int) -> None:
    """``x`` must be a finite ``(B, T, input_size)`` float tensor."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor of shape (batch, time, {input_size}), got {type(x).__name__}")
    if x.dim() != 3 or x.shape[-1] != input_size or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must have shape (batch, time, {input_size}), got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x must be finite (found NaN or inf)")


class SavableModel(nn.Module):
    """``save(path)`` / ``Cls.load(path)``: one self-contained file (config + weights), ``weights_only=True``."""

    def config(self) -> dict:  # pragma: no cover - overridden
        raise NotImplementedError

    def save(self, path) -> Path:
        path = Path(path)
        atomic_torch_save({"class": type(self).__name__, "config": self.config(),
                           "state_dict": {k: v.detach().cpu() for k, v in self.state_dict().items()}}, path)
        return path

    @classmethod
    def load(cls, path, *, map_location="cpu"):
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no saved model at {path}")
        doc = torch.load(path, map_location=map_location, weights_only=True)
        if not isinstance(doc, dict) or doc.get("class") != cls.__name__:
            raise ValueError(f"{path} does not hold a saved {cls.__name__} (found {doc.get('class')!r})")
        model = cls(**doc["config"])
        dtype = next(iter(doc["state_dict"].values())).dtype
        model.to(dtype)
        model.load_state_dict(doc["state_dict"])
        return model

    def forward(self, x: torch.Tensor, state=None):
        """``x`` ``(B, T, input_size)`` → ``(outputs (B, T, output_size), state)``."""
        hidden, state = self.hidden_states(x, state)
        return self.readout(hidden), state


class HebbRNN(SavableModel):
    """Hebb-RNN (inferred from the abstract; see :mod:`hebbrnn.cell` for the plastic cell's maths).

    Args:
        input_size, hidden_size, output_size: sizes.
        plastic: ``False`` is the Hebb-off ablation (``η = 0``).
        predictive: add the predictive module ``x̂_{t+1} = P h_t + p`` (:meth:`predict_next`),
            trained by :func:`hebbrnn.meta_train` on next-input prediction during encoding.
        factored: the factored (default) or the materialised exact path.
        clip, eta, decay: the cell's trace bound and initial rate and decay.

    ``forward(x, state=None) -> (outputs (B, T, output_size), state)``; ``state=None`` starts an episode
    (zero activity, zero trace); passing the returned ``state`` continues it.

    Example:
        >>> m = HebbRNN(25, 32, 16)
        >>> y, s = m(torch.zeros(4, 10, 25))
        >>> y.shape
        torch.Size([4, 10, 16])
    """

    def __init__(self, input_size: int, hidden_size: int, output_size: int, *, plastic: bool = True,
                 predictive: bool = False, factored: bool = True, clip: float = 1.0, eta: float = 0.1,
                 decay: float = 0.9):
        super().__init__()
        self.input_size = check_int(input_size, "input_size")
        self.hidden_size = check_int(hidden_size, "hidden_size")
        self.output_size = check_int(output_size, "output_size")
        if not isinstance(predictive, bool):
            raise TypeError("predictive must be a bool")
        self.predictive = predictive
        self.cell = HebbianRNNCell(input_size, hidden_size, clip=check_float(clip, "clip"), factored=factored,
                                   plastic=plastic, eta=eta, decay=decay)
        self.readout = nn.Linear(hidden_size, output_size)
        self.predictor = nn.Linear(hidden_size, input_size) if predictive else None
        self.reset_parameters()

    @property
    def plastic(self) -> bool:
        return self.cell.plastic

    @property
    def factored(self) -> bool:
        return self.cell.factored

    def config(self) -> dict:
        c = self.cell
        return {"input_size": self.input_size, "hidden_size": self.hidden_size, "output_size": self.output_size,
                "plastic": c.plastic, "predictive": self.predictive, "factored": c.factored, "clip": c.clip,
                "eta": c.eta_init, "decay": c.decay_init}

    def reset_parameters(self) -> None:
        self.cell.reset_parameters()
        self.readout.reset_parameters()
        if self.predictor is not None:
            self.predictor.reset_parameters()

    def hidden_states(self, x: torch.Tensor, state=None) -> tuple[torch.Tensor, dict]:
        """``(hidden (B, T, H), state)``: the activity at every step and the final state."""
        check_inputs(x, self.input_size)
        if state is not None:
            self.cell.check_state(state, x.shape[0])
        hs = []
        for t in range(x.shape[1]):
            h, state = self.cell(x[:, t], state)
            hs.append(h)
        return torch.stack(hs, 1), state

    def predict_next(self, hidden: torch.Tensor) -> torch.Tensor:
        """The predictive module's guess of ``x_{t+1}`` from ``h_t`` (needs ``predictive=True``)."""
        if self.predictor is None:
            raise RuntimeError("this HebbRNN has no predictive module (build it with predictive=True)")
        return self.predictor(hidden)
