"""Control models: vanilla RNN, GRU and LSTM (``torch.nn``) with a linear readout, their hidden size
chosen so the parameter count matches a target (within 5%)."""

from __future__ import annotations

import torch
from torch import nn

from hebbrnn.model import SavableModel, check_inputs
from paperworks import check_int

KINDS = {"rnn": (nn.RNN, 1), "gru": (nn.GRU, 3), "lstm": (nn.LSTM, 4)}


def control_params(kind: str, input_size: int, output_size: int, hidden: int) -> int:
    """Parameters of a one-layer ``kind`` with ``hidden`` units plus a linear readout (biases included)."""
    g = KINDS[kind][1]
    return g * (hidden * hidden + hidden * input_size + 2 * hidden) + hidden * output_size + output_size


def matched_hidden(kind: str, input_size: int, output_size: int, n_params: int) -> int:
    """The hidden size whose parameter count is closest to ``n_params``."""
    best = min(range(1, 4097), key=lambda h: abs(control_params(kind, input_size, output_size, h) - n_params))
    return best


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


class ControlRNN(SavableModel):
    """A ``torch.nn`` RNN/GRU/LSTM control with a linear readout, parameter-matched to ``n_params``.

    Args:
        kind: ``"rnn"`` (tanh), ``"gru"`` or ``"lstm"``.
        input_size, output_size: sizes.
        n_params: the parameter count to match (e.g. a :class:`~hebbrnn.HebbRNN`'s); the hidden size is
            chosen so the count is within 5% (a ``ValueError`` if no size gets that close).

    ``forward(x, state=None) -> (outputs (B, T, output_size), state)`` like :class:`~hebbrnn.HebbRNN`.
    """

    def __init__(self, kind: str = "rnn", input_size: int = 25, output_size: int = 16, *, n_params: int,
                 hidden_size: int | None = None):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
        self.kind = kind
        self.input_size = check_int(input_size, "input_size")
        self.output_size = check_int(output_size, "output_size")
        self.n_params = check_int(n_params, "n_params")
        h = matched_hidden(kind, input_size, output_size, n_params) if hidden_size is None else check_int(
            hidden_size, "hidden_size")
        got = control_params(kind, input_size, output_size, h)
        if abs(got - n_params) > 0.05 * n_params:
            raise ValueError(f"no {kind} hidden size matches {n_params} parameters within 5% (closest: {h} units, "
                             f"{got} parameters)")
        self.hidden_size = h
        rnn_cls = KINDS[kind][0]
        extra = {"nonlinearity": "tanh"} if kind == "rnn" else {}
        self.rnn = rnn_cls(input_size, h, batch_first=True, **extra)
        self.readout = nn.Linear(h, output_size)

    def config(self) -> dict:
        return {"kind": self.kind, "input_size": self.input_size, "output_size": self.output_size,
                "n_params": self.n_params, "hidden_size": self.hidden_size}

    def reset_parameters(self) -> None:
        self.rnn.reset_parameters()
        self.readout.reset_parameters()

    def hidden_states(self, x: torch.Tensor, state=None):
        check_inputs(x, self.input_size)
        if state is not None:
            hs = state[0] if isinstance(state, tuple) else state
            if hs.shape[1] != x.shape[0]:
                raise ValueError(f"state is for batch size {hs.shape[1]}, but the input has batch size {x.shape[0]}; "
                                 "pass state=None to start a new episode")
        out, state = self.rnn(x, state)
        return out, state
