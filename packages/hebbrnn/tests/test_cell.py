import pytest
import torch
from hebbrnn import HebbianRNNCell, HebbRNN


def _unroll(cell, x, state=None):
    hs = []
    for t in range(x.shape[1]):
        h, state = cell(x[:, t], state)
        hs.append(h)
    return torch.stack(hs, 1), state


def _pair(clip, **kw):
    torch.manual_seed(1)
    fact = HebbianRNNCell(6, 10, clip=clip, factored=True, **kw).double()
    mat = HebbianRNNCell(6, 10, clip=clip, factored=False, **kw).double()
    with torch.no_grad():  # non-trivial gains, so A ⊙ F is not F
        fact.A.normal_()
    mat.load_state_dict(fact.state_dict())
    return fact, mat


@pytest.mark.parametrize("clip", [0.05, 1e6])
def test_factored_equals_materialised_in_value_and_gradient(clip):
    fact, mat = _pair(clip, eta=0.5, decay=0.8)
    x = torch.randn(3, 12, 6, dtype=torch.float64)
    outs, grads = [], []
    for cell in (fact, mat):
        y, s = _unroll(cell, x)
        (y.cos().sum() + cell.trace(s).square().sum()).backward()
        outs.append((y.detach(), cell.trace(s).detach()))
        grads.append([p.grad.clone() for p in cell.parameters()])
    torch.testing.assert_close(outs[0][0], outs[1][0], atol=1e-10, rtol=0)
    torch.testing.assert_close(outs[0][1], outs[1][1], atol=1e-10, rtol=0)
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
    norm = torch.linalg.matrix_norm(outs[1][1])
    if clip < 1:  # clipping was active: the trace sits on the bound
        assert torch.allclose(norm, torch.full_like(norm, clip))
    else:
        assert (norm < clip).all()


def test_factored_norm_matches_the_materialised_trace():
    fact, _ = _pair(10.0, eta=0.3)
    _, s = _unroll(fact, torch.randn(2, 7, 6, dtype=torch.float64))
    torch.testing.assert_close(s["norm2"], fact.trace(s).square().sum((1, 2)), atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("factored", [True, False])
def test_with_eta_zero_the_trace_decays_as_lambda_t(factored):
    torch.manual_seed(0)
    live = HebbianRNNCell(4, 8, factored=factored, clip=5.0).double()
    _, s0 = _unroll(live, torch.randn(2, 5, 4, dtype=torch.float64))
    off = HebbianRNNCell(4, 8, factored=factored, plastic=False, clip=5.0).double()
    off.load_state_dict(live.state_dict())
    off.set_decay(0.7)
    F0 = live.trace(s0)
    assert F0.abs().max() > 0 and float(off.eta) == 0.0
    s = s0
    for t in range(1, 6):
        _, s = off(torch.randn(2, 4, dtype=torch.float64), s)
        torch.testing.assert_close(off.trace(s), 0.7**t * F0, atol=1e-12, rtol=1e-10)


def test_hebbian_term_matches_an_explicit_loop():
    # the update rule and (A ⊙ F) h against brute-force loops, one sample
    torch.manual_seed(2)
    cell = HebbianRNNCell(3, 5, factored=False, clip=100.0).double()
    with torch.no_grad():
        cell.A.normal_()
    x = torch.randn(1, 3, 3, dtype=torch.float64)
    h1, s1 = cell(x[:, 0], None)
    h2, s2 = cell(x[:, 1], s1)
    lam, eta = float(cell.decay.detach()), float(cell.eta.detach())
    F = s2["F"][0]
    torch.testing.assert_close(F, lam * s1["F"][0] + eta * torch.outer(h2[0], h1[0]))
    assert F.abs().max() > 0
    expected = torch.zeros(5, dtype=torch.float64)
    for i in range(5):
        for j in range(5):
            expected[i] += cell.A[i, j] * F[i, j] * h2[0, j]
    h3, _ = cell(x[:, 2], s2)
    torch.testing.assert_close(h3[0], torch.tanh(cell.W @ h2[0] + cell.U @ x[0, 2] + cell.b + expected))


def test_rate_is_live_at_initialisation_and_parameterisations():
    cell = HebbianRNNCell(3, 4, eta=0.2, decay=0.6)
    assert abs(float(cell.eta.detach()) - 0.2) < 1e-6 and abs(float(cell.decay.detach()) - 0.6) < 1e-6
    cell.decay_raw.data.fill_(50.0)
    assert 0 < float(cell.decay.detach()) <= 1


def test_bad_arguments():
    for kw, err in [({"decay": 1.0}, ValueError), ({"decay": 0.0}, ValueError), ({"decay": float("nan")}, ValueError),
                    ({"clip": -1.0}, ValueError), ({"eta": 0.0}, ValueError), ({"clip": "1"}, TypeError)]:
        with pytest.raises(err):
            HebbianRNNCell(3, 4, **kw)
    with pytest.raises(ValueError, match="decay"):
        HebbianRNNCell(3, 4).set_decay(1.5)
    with pytest.raises(TypeError):
        HebbianRNNCell(2.0, 4)


def test_state_from_another_batch_size_is_refused():
    m = HebbRNN(5, 8, 3)
    _, state = m(torch.zeros(4, 3, 5))
    with pytest.raises(ValueError, match="batch size 4"):
        m(torch.zeros(2, 3, 5), state)
    mat = HebbRNN(5, 8, 3, factored=False)
    with pytest.raises(ValueError, match="factored"):
        mat(torch.zeros(4, 3, 5), state)


def test_non_finite_inputs_are_refused():
    m = HebbRNN(5, 8, 3)
    x = torch.zeros(2, 3, 5)
    x[0, 1, 2] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        m(x)
    with pytest.raises(ValueError, match="shape"):
        m(torch.zeros(2, 3, 4))


def test_state_continues_an_episode():
    torch.manual_seed(0)
    m = HebbRNN(5, 8, 3).double()
    x = torch.randn(2, 6, 5, dtype=torch.float64)
    y, _ = m(x)
    y1, s = m(x[:, :3])
    y2, _ = m(x[:, 3:], s)
    torch.testing.assert_close(torch.cat([y1, y2], 1), y)
