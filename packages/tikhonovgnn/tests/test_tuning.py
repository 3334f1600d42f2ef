import math

import pytest
import torch
from tikhonovgnn.train import train_graph_classifier, tune_on_ladder

LADDER = [0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3]


def _counting(f):
    calls = []

    def score(v):
        calls.append(v)
        return f(v)

    return score, calls


def test_ladder_extends_off_an_edge_until_the_best_is_interior():
    # optimum at 0.1, right of the starting grid: 0.1 then 0.3 are added, and 0.1 is bracketed
    score, calls = _counting(lambda v: (math.log10(v) + 1.0) ** 2)
    best, scores, interior = tune_on_ladder(score, LADDER, [0.003, 0.01, 0.03])
    assert best == 0.1 and interior
    assert calls == [0.003, 0.01, 0.03, 0.1, 0.3]
    assert set(scores) == set(calls)
    # the same on the left
    score, calls = _counting(lambda v: (math.log10(v) + 3.0) ** 2)
    best, _, interior = tune_on_ladder(score, LADDER, [0.003, 0.01, 0.03])
    assert best == 0.001 and interior and calls[-2:] == [0.001, 0.0003]


def test_ladder_agrees_with_brute_force_on_unimodal_scores():
    for centre in (-3.7, -3.1, -2.4, -2.0, -1.6, -0.8, -0.3):
        f = lambda v, c=centre: abs(math.log10(v) - c)  # noqa: E731
        best, _, interior = tune_on_ladder(f, LADDER, [0.003, 0.01, 0.03])
        assert best == min(LADDER, key=f)
        assert interior == (best not in (LADDER[0], LADDER[-1]))


def test_ladder_end_is_reported_as_not_interior_and_interior_start_is_not_extended():
    best, scores, interior = tune_on_ladder(lambda v: v, LADDER, [0.003, 0.01])  # best: the smallest value
    assert best == LADDER[0] and not interior and len(scores) == 4
    score, calls = _counting(lambda v: abs(v - 0.01))
    best, _, interior = tune_on_ladder(score, LADDER, [0.003, 0.01, 0.03])
    assert best == 0.01 and interior and len(calls) == 3


def test_ladder_treats_a_diverged_score_as_worst():
    best, _, interior = tune_on_ladder(lambda v: math.nan if v == 0.01 else v, LADDER, [0.001, 0.003, 0.01])
    assert best == 0.0003 and not interior


@pytest.mark.parametrize("start", [[0.01], [0.01, 0.02]])
def test_ladder_rejects_bad_starts(start):
    with pytest.raises(ValueError):
        tune_on_ladder(lambda v: v, LADDER, start)


def test_stop_on_nonfinite_keeps_the_best_validated_weights():
    from tikhonovgnn.baselines import make_model
    from torch_geometric.data import Data

    torch.manual_seed(0)
    graphs = [Data(x=torch.randn(5, 3), edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), y=torch.tensor([i % 2]))
              for i in range(8)]
    model = make_model("mlp", 3, 8, 2, task="graph", num_layers=2)
    with pytest.raises(FloatingPointError):
        train_graph_classifier(model, graphs, epochs=3, lr=1e30, val=graphs)
    model = make_model("mlp", 3, 8, 2, task="graph", num_layers=2)
    info = {}
    train_graph_classifier(model, graphs, epochs=50, lr=1e30, val=graphs, log=info, stop_on_nonfinite=True)
    assert info["diverged"] and info["epochs_run"] < 50
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_min_delta_stops_a_run_whose_loss_only_creeps_down():
    from tikhonovgnn.baselines import make_model
    from torch_geometric.data import Data

    torch.manual_seed(0)
    graphs = [Data(x=torch.full((4, 2), float(i % 2)), edge_index=torch.tensor([[0, 1], [1, 0]]),
                   y=torch.tensor([i % 2])) for i in range(8)]  # separable: the loss shrinks for ever
    runs = {}
    for delta in (0.0, 10.0):
        model, info = make_model("mlp", 2, 8, 2, task="graph", num_layers=2), {}
        train_graph_classifier(model, graphs, epochs=40, lr=0.05, val=graphs, patience=3, log=info, min_delta=delta)
        runs[delta] = info
    assert runs[0.0]["epochs_run"] == 40  # every epoch improves a little, so patience never runs out
    assert runs[10.0]["epochs_run"] == 4 and runs[10.0]["best_epoch"] == 1  # no drop of 10 nats: stop after 3
