import pytest
import torch
from graphmuon import amplification, graph_polar_direction, inverse_sqrt, newton_schulz
from graphmuon.data import csbm


def test_isotropic_input_has_no_amplification(gen):
    q, _ = torch.linalg.qr(torch.randn(100, 10, generator=gen))
    x = 3.0 * q  # XᵀX ∝ I
    dw = torch.linalg.qr(torch.randn(10, 6, generator=gen))[0].T  # orthonormal rows
    assert amplification(x, dw) == pytest.approx(1.0, abs=1e-6)
    assert amplification(x, 7.0 * dw) == pytest.approx(1.0, abs=1e-6)  # scale-free


def _amps(k, gen, dense_adj):
    data = csbm(0, n=500, classes=5, features=16, homophily=0.8, degree=8)
    a_hat = dense_adj(data.edge_index, data.num_nodes)
    x = torch.linalg.matrix_power(a_hat, k) @ data.x  # the first layer's input under K-hop propagation
    g = torch.randn(8, data.num_nodes, generator=gen) @ x  # gradient δᵀX of a layer Y = XWᵀ
    sigma = x.T @ x / x.size(0)
    z = inverse_sqrt(sigma + 1e-3 * sigma.diagonal().mean() * torch.eye(16))
    return amplification(x, newton_schulz(g).float()), amplification(x, graph_polar_direction(g, z))


def test_amplification_grows_with_depth_for_muon_only(dense_adj):
    muon1, gm1 = _amps(1, torch.Generator().manual_seed(1), dense_adj)
    muon16, gm16 = _amps(16, torch.Generator().manual_seed(1), dense_adj)
    assert muon16 > 1.5 * muon1
    assert gm16 <= 1.1 * gm1
    assert gm16 < muon16


def test_bad_input():
    with pytest.raises(ValueError, match="x must be"):
        amplification(torch.ones(5, 3), torch.ones(2, 4))
    with pytest.raises(TypeError):
        amplification([[1.0]], torch.ones(1, 1))
