import pytest
import torch
from tikhonovgnn import QExplainer, TikhonovGNN
from tikhonovgnn.baselines import Baseline
from tikhonovgnn.data import motif_graphs
from tikhonovgnn.explain import make_explainer, motif_faithfulness, rank_agreement, rerun_agreement


@pytest.fixture
def models():
    torch.manual_seed(0)
    return TikhonovGNN(8, 8, 2, q_kind="gin").eval(), Baseline("gin", 8, 8, 2, num_layers=2).eval()


def test_q_explainer_returns_the_layer_q(models):
    tik, _ = models
    g = motif_graphs(2, 0, base_nodes=10)[0]
    e = make_explainer(tik, "q")(g.x, g.edge_index)
    torch.testing.assert_close(e.node_mask.view(-1), tik.explain(g.x, g.edge_index)["q"])
    assert isinstance(make_explainer(tik, "q").algorithm, QExplainer)
    hard = make_explainer(tik, "q", top_k=5)(g.x, g.edge_index)
    assert int((hard.node_mask > 0).sum()) == 5


def test_faithfulness_metrics_are_in_range(models):
    tik, gin = models
    graphs = motif_graphs(2, 0, base_nodes=10)
    masks = {}
    out = motif_faithfulness(tik, gin, graphs, top_k=5, gnnexplainer_epochs=2, masks=masks)
    assert [m.shape for m in masks["q"]] == [(g.num_nodes,) for g in graphs] == [m.shape for m in masks["gnnexplainer"]]
    assert set(out) >= {"auroc_q", "auroc_gnnexplainer", "fid_plus_q", "fid_plus_random", "fid_plus_motif"}
    assert all(0.0 <= v <= 1.0 for v in out.values())
    agree = rerun_agreement(tik, gin, graphs[:1], gnnexplainer_epochs=2)
    assert agree["q"] == 1.0 and -1.0 <= agree["gnnexplainer"] <= 1.0


def test_bad_algorithm(models):
    with pytest.raises(ValueError, match="algorithm"):
        make_explainer(models[0], "saliency")


def test_rank_agreement_matches_scipy_and_handles_constant_masks():
    from scipy.stats import spearmanr

    a, b = [0.1, 0.5, 0.2, 0.9], [1.0, 3.0, 2.5, 4.0]
    assert rank_agreement(a, b) == pytest.approx(spearmanr(a, b).statistic)
    assert rank_agreement([1, 1, 1], [2, 2, 2]) == 1.0
    assert rank_agreement([1, 1, 1], [1, 2, 3]) == 0.0
