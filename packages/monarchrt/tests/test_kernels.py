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
    out1 = block_attention(q, k, v, bias, scale=0.4)
    out2 = block_attention_ref(q, k, v, bias, scale=0.4)
    for a, b in zip(out1, out2):  # output, row entropy, row log-normaliser
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    ws = [torch.randn(x.shape, generator=gen) for x in out1]
    g1 = torch.autograd.grad(sum((x * w).sum() for x, w in zip(out1, ws)), leaves)
    g2 = torch.autograd.grad(sum((x * w).sum() for x, w in zip(out2, ws)), leaves)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def test_transposed_call_gives_the_aggregated_queries(gen):
    """Σ_s L[s,k] Q_s / Σ_s L[s,k] with L = softmax(S + bias) equals the primitive with roles swapped."""
    q, kt = torch.randn(3, 7, 4, generator=gen), torch.randn(3, 5, 4, generator=gen)
    bias = torch.randn(3, 5, generator=gen)
    L = torch.softmax(0.5 * q @ kt.transpose(-1, -2) + bias[:, None], -1)
    direct = (L.transpose(-1, -2) @ q) / L.sum(-2)[..., None]
    _, _, lse = block_attention_ref(q, kt, kt, bias, scale=0.5)
    swapped, _, _ = block_attention_ref(kt, q, q, -lse, scale=0.5)
    torch.testing.assert_close(swapped, direct, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("layout, knobs", [
    ((2, 4, 4), dict()),
    ((2, 4, 4), dict(block=(1, 2, 4), h_reduce=2, num_iters=2)),
    # 2x4 frames: the interpreter runs one program per query class, 16 per frame would cost ~10 s
    ((2, 2, 4), dict(causal_frames=True, chunk_frames=1, block=(1, 2, 4), num_iters=2)),
])
def test_monarch_on_triton_matches_reference_forward_and_gradients(interpret, gen, layout, knobs):
    N = layout[0] * layout[1] * layout[2]
    q, k, v = (torch.randn(1, 1, N, 8, generator=gen, requires_grad=True) for _ in range(3))
    w = torch.randn(1, 1, N, 8, generator=gen)
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
