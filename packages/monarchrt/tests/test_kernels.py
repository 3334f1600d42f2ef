import pytest
import torch
from monarchrt import block_attention, monarch_attention
from monarchrt.kernels import block_attention_ref


def test_dispatcher_picks_triton_only_when_it_can_run(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv("PAPERWORKS_FORCE_REFERENCE", "1")
    assert block_attention.backend() == "reference"


@pytest.mark.parametrize("shape", [(3, 5, 7, 8, 12), (2, 17, 16, 8, 16), (1, 1, 3, 4, 4)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_triton_primitive_matches_reference_forward_and_backward(interpret, gen, shape, with_bias):
    assert block_attention.backend() == "triton"
    B, M, N, D, E = shape
    q, k = torch.randn(B, M, D, generator=gen), torch.randn(B, N, D, generator=gen)
    v = torch.randn(B, N, E, generator=gen)
    bias = None
    if with_bias:
        bias = torch.randn(B, N, generator=gen)
        bias[:, 0] = float("-inf")
    leaves = [t.requires_grad_() for t in (q, k, v) + ((bias,) if with_bias else ())]
    o1, e1 = block_attention(q, k, v, bias, scale=0.4)
    o2, e2 = block_attention_ref(q, k, v, bias, scale=0.4)
    torch.testing.assert_close(o1, o2, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(e1, e2, atol=1e-5, rtol=1e-5)
    wo, we = torch.randn(o1.shape, generator=gen), torch.randn(e1.shape, generator=gen)
    g1 = torch.autograd.grad((o1 * wo).sum() + (e1 * we).sum(), leaves)
    g2 = torch.autograd.grad((o2 * wo).sum() + (e2 * we).sum(), leaves)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("knobs", [
    dict(),
    dict(block=(1, 2, 4), h_reduce=2, num_iters=2),
    dict(causal_frames=True, chunk_frames=1, f_tied=False, block=(1, 2, 2)),
])
def test_monarch_on_triton_matches_reference_forward_and_gradients(interpret, gen, knobs):
    layout = (2, 4, 4)
    q, k, v = (torch.randn(1, 1, 32, 8, generator=gen, requires_grad=True) for _ in range(3))
    w = torch.randn(1, 1, 32, 8, generator=gen)
    outs = {}
    for backend in ("auto", "torch"):
        o = monarch_attention(q, k, v, layout, backend=backend, **knobs)
        outs[backend] = (o, torch.autograd.grad((o * w).sum(), (q, k, v)))
    torch.testing.assert_close(outs["auto"][0], outs["torch"][0], atol=1e-5, rtol=1e-5)
    for a, b in zip(outs["auto"][1], outs["torch"][1]):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def test_primitive_rejects_bad_shapes(gen):
    q = torch.randn(2, 3, 4, generator=gen)
    with pytest.raises(ValueError, match="bias"):
        block_attention_ref(q, q, q, torch.zeros(2, 5))
    with pytest.raises(ValueError, match="3-D"):
        block_attention_ref(q[0], q, q)


@pytest.mark.gpu
def test_triton_on_cuda_matches_reference():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    q, k, v = (torch.randn(1, 4, 8 * 16 * 16, 64, device="cuda") for _ in range(3))
    a = monarch_attention(q, k, v, (8, 16, 16))
    b = monarch_attention(q, k, v, (8, 16, 16), backend="torch")
    torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
