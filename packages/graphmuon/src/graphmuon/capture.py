"""Propagated-input captures for PyG layers, and :func:`attach` which registers them.

GraphMuon's Σ must be the covariance of the input a weight *actually multiplies after
propagation*. Where PyG applies the weight before propagating (``GCNConv``: ``Â (H Wᵀ)``),
that input is ``Â H``, which the layer never forms: the capture computes it with one extra
sparse product (the trap is to use ``H``, which is just input-whitened Muon). Where the weight
comes after propagation (``SGConv.lin``, ``SAGEConv.lin_l``, the MLP inside ``GINConv``) a
pre-hook on that ``nn.Linear`` reads the propagated input for free.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, GINConv, MessagePassing, SAGEConv, SGConv
from torch_geometric.nn import Linear as PygLinear
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from graphmuon.optimizer import CaptureFn, _first_input

LINEARS = (nn.Linear, PygLinear)


def gcn_propagated_input(conv: GCNConv, args: tuple, kwargs: dict) -> Tensor:
    """``Â H`` exactly as ``conv`` would propagate ``H`` (same normalisation, self-loops, cache)."""
    names = ("x", "edge_index", "edge_weight")
    vals = dict(zip(names, args))
    vals.update({k: v for k, v in kwargs.items() if k in names})
    x, edge_index, edge_weight = vals.get("x"), vals.get("edge_index"), vals.get("edge_weight")
    if not isinstance(x, Tensor) or not isinstance(edge_index, Tensor):
        raise TypeError("GCNConv capture needs x and edge_index tensors (SparseTensor adjacency is not supported)")
    if conv.normalize:
        cache = conv._cached_edge_index
        if cache is not None:
            edge_index, edge_weight = cache
        else:
            edge_index, edge_weight = gcn_norm(edge_index, edge_weight, x.size(conv.node_dim), conv.improved,
                                               conv.add_self_loops, conv.flow, x.dtype)
    return conv.propagate(edge_index, x=x, edge_weight=edge_weight)


def graph_weights(model: nn.Module, *, linear: Iterable[nn.Linear | str] = (), skip: Iterable[str] = ()
                  ) -> list[tuple[str, Tensor, nn.Module, CaptureFn]]:
    """``(name, weight, module_to_hook, capture)`` for every graph weight of ``model``.

    Covered: ``GCNConv`` (``lin.weight``, input ``Â H``), ``SGConv`` (``lin.weight``, input ``Â^K H``),
    ``SAGEConv`` (every inner ``nn.Linear``, e.g. ``lin_l`` on the aggregated input and ``lin_r`` on
    the root input), ``GINConv`` (every ``nn.Linear`` of its MLP; the first acts on
    ``(1+ε)H + Σ_j H_j``). ``linear``: further ``nn.Linear`` modules (or their names) applied after
    a propagation. Any other ``MessagePassing`` layer with 2-D weights raises ``ValueError`` unless
    its name is in ``skip`` (register it yourself with :meth:`GraphMuon.register`).
    """
    skip = set(skip)
    by_name = dict(model.named_modules())
    extra = []
    for item in linear:
        mod = by_name.get(item) if isinstance(item, str) else item
        if not isinstance(mod, LINEARS):
            raise ValueError(f"linear entry {item!r} is not an nn.Linear of the model")
        extra.append(mod)
    names_of = {id(m): n for n, m in by_name.items()}
    out, seen = [], set()

    def add(name, weight, module, capture):
        if id(weight) not in seen:
            seen.add(id(weight))
            out.append((name, weight, module, capture))

    for name, mod in model.named_modules():
        if name in skip or any(name.startswith(s + ".") for s in skip):
            continue
        if isinstance(mod, GCNConv):
            add(f"{name}.lin.weight", mod.lin.weight, mod, gcn_propagated_input)
        elif isinstance(mod, SGConv):
            add(f"{name}.lin.weight", mod.lin.weight, mod.lin, _first_input)
        elif isinstance(mod, (SAGEConv, GINConv)):
            for sub, lin in mod.named_modules():
                if isinstance(lin, LINEARS) and lin.weight.ndim == 2:
                    add(f"{name}.{sub}.weight", lin.weight, lin, _first_input)
        elif isinstance(mod, MessagePassing):
            own = [n for n, p in mod.named_parameters() if p.ndim == 2]
            if own:
                raise ValueError(f"graph layer {name!r} ({type(mod).__name__}) has no propagated-input capture for "
                                 f"{own}: register it with GraphMuon.register(weight, module, capture) or pass "
                                 f"skip=[{name!r}]")
    for mod in extra:
        add(f"{names_of.get(id(mod), 'linear')}.weight", mod.weight, mod, _first_input)
    return out


def attach(model: nn.Module, optimizer, *, linear: Iterable[nn.Linear | str] = (), skip: Iterable[str] = ()):
    """Register the propagated-input hooks of ``model``'s graph weights with a :class:`GraphMuon`.

    Registered weights get the GraphMuon update; every other parameter of the optimizer gets AdamW.
    Call it once, after building the optimizer and before training.

    Returns:
        The list of hook handles.
    """
    from graphmuon.optimizer import GraphMuon

    if not isinstance(optimizer, GraphMuon):
        raise TypeError(f"optimizer must be a graphmuon.GraphMuon, got {type(optimizer).__name__}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    found = graph_weights(model, linear=linear, skip=skip)
    if not found:
        raise ValueError("model has no graph weights GraphMuon knows how to capture (GCNConv, SGConv, SAGEConv, "
                         "GINConv, or nn.Linear modules passed as linear=)")
    return [optimizer.register(w, m, c, name=n) for n, w, m, c in found]


class Recorder:
    """Records the latest propagated input of each graph weight (for diagnostics; any optimizer).

    ``with recorder: model(...)`` captures; outside the block the hooks do nothing.
    """

    def __init__(self, model: nn.Module, **kw):
        self.weights = graph_weights(model, **kw)
        self.inputs: dict[str, Tensor] = {}
        self._on = False
        self._handles = [m.register_forward_pre_hook(self._hook(n, c), with_kwargs=True)
                         for n, _, m, c in self.weights]

    def _hook(self, name, capture):
        def hook(mod, args, kwargs):
            if self._on:
                with torch.no_grad():
                    x = capture(mod, args, kwargs)
                    self.inputs[name] = x.reshape(-1, x.size(-1)).detach().float()
        return hook

    def __enter__(self):
        self._on = True
        return self

    def __exit__(self, *exc):
        self._on = False
        return False

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
