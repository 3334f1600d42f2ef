import pytest
import torch
from gfmuc.prototypes import assignment_margin, dec_kl, select_confident, soft_assign, target_distribution


def test_margin_and_selection_hand_case():
    centroids = torch.tensor([[0.0, 0.0], [10.0, 0.0]])
    z = torch.tensor([[0.0, 0.0], [5.0, 0.0], [9.0, 0.0], [4.0, 0.0], [1.0, 0.0]])
    m = assignment_margin(z, centroids)
    # |d2 - d1| of squared distances: 100, 0, 80, 20, 80
    assert m.tolist() == pytest.approx([100.0, 0.0, 80.0, 20.0, 80.0])
    assert select_confident(m, 0.4).tolist() == [0, 2]          # ceil(0.4*5) = 2 most confident
    assert select_confident(m, 0.6).tolist() == [0, 2, 4]       # the tie 80/80 kept whole here
    assert select_confident(m, 0.01).tolist() == [0]
    assert select_confident(m, 1.0).tolist() == [0, 1, 2, 3, 4]


def test_dec_distributions(rng):
    z, mu = torch.tensor(rng.normal(size=(30, 4))), torch.tensor(rng.normal(size=(3, 4)))
    q = soft_assign(z, mu)
    p = target_distribution(q)
    torch.testing.assert_close(q.sum(1), torch.ones(30, dtype=q.dtype))
    torch.testing.assert_close(p.sum(1), torch.ones(30, dtype=q.dtype))
    # sharpening: the target puts more mass on each point's top cluster
    assert (p.max(1).values >= q.max(1).values - 1e-12).all()
    assert float(dec_kl(q)) >= 0
