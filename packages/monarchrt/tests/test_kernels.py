import pytest
import torch
from monarchrt import block_attention, monarch_attention
from monarchrt.kernels import block_attention_ref


def test_dispatcher_picks_triton_only_when_it_can_run(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv("PAPERWORKS_FORCE_REFERENCE", "1")
    assert block_attention.backend() == "reference"


# (2, 20, 37, 8, 12): two query tiles and three key tiles (the last partial) of the interpreter's 16x16 tiles
@pytest.mark.parametrize("shape", [(2, 20, 37, 8, 12), (2, 17, 16, 8, 16), (1, 1, 3, 4, 4)])
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


@pytest.mark.parametrize("dtype, tol", [(torch.bfloat16, 3e-2), (torch.float16, 4e-3)])
def test_triton_primitive_in_low_precision_matches_the_fp32_reference(interpret, gen, dtype, tol):
    """bf16/fp16 inputs, fp32 accumulation: errors at the inputs' precision, relative to each output's scale."""
    B, M, N, D, E = 2, 20, 37, 8, 12
    q, k = torch.randn(B, M, D, generator=gen), torch.randn(B, N, D, generator=gen)
    v, bias = torch.randn(B, N, E, generator=gen), torch.randn(B, N, generator=gen)
    low = [t.to(dtype).requires_grad_() for t in (q, k, v, bias)]
    ref_in = [t.to(dtype).float().requires_grad_() for t in (q, k, v, bias)]  # the same rounded inputs
    out, ref = block_attention(*low, scale=0.4), block_attention_ref(*ref_in, scale=0.4)
    assert all(o.dtype == dtype for o in out)
    for a, b in zip(out, ref):
        assert float((a.float() - b).abs().max()) <= tol * max(1.0, float(b.abs().max()))
    ws = [torch.randn(x.shape, generator=gen) for x in ref]
    g1 = torch.autograd.grad(sum((x.float() * w).sum() for x, w in zip(out, ws)), low)
    g2 = torch.autograd.grad(sum((x * w).sum() for x, w in zip(ref, ws)), ref_in)
    for a, b in zip(g1, g2):
        assert float((a.float() - b).abs().max()) <= tol * float(b.abs().max())


def test_tiles_fit_100_kib_at_every_bench_shape():
    """Per-program tile bytes of the three kernels, for every block-attention call of every bench shape up to
    N = 64k (bf16, the bench's dtype; fp32 too): every configuration the autotuner may pick fits 100 KiB, and
    the bytes do not depend on N. The 0.1 kernel held all keys in one tile: ~1.75 MiB at N = 32k."""
    from monarchrt.fidelity import monarch_for_budget
    from monarchrt.kernels import KERNELS, TILE_BUDGET, _p2, fitting_configs, tile_bytes
    from monarchrt.monarch import make_plan

    from paperworks.hydra_glue import compose

    cfg = compose("monarchrt", ["experiment=bench_cuda"])
    bc = cfg.bench_cuda
    layouts = [tuple(int(x) for x in lay) for lay in bc.layouts]
    assert max(f * h * w for f, h, w in layouts) >= 65536
    assert TILE_BUDGET == 100 * 1024
    seen = set()
    for layout in layouts + [tuple(int(x) for x in lay) for lay in cfg.bench.layouts]:
        for d in (int(bc.d), 128):
            plan = make_plan(layout, **{k: v for k, v in monarch_for_budget(layout, d, float(bc.budget))[0].items()
                                        if k != "num_iters"})
            for name, (M, N, D, E) in plan.primitive_shapes(d).items():
                assert M >= 1 and N >= 1
                for itemsize in (2, 4):
                    for kernel in KERNELS:
                        fits = fitting_configs(kernel, _p2(D), _p2(E), itemsize)
                        assert fits and all(tile_bytes(kernel, c.BM, c.BN, _p2(D), _p2(E), itemsize) <= TILE_BUDGET
                                            for c in fits), (layout, d, name, kernel, itemsize)
                        seen.add((kernel, itemsize, _p2(D), _p2(E), len(fits)))
                # the 0.1 design: one tile of every key of a call
                if N >= 1024:
                    assert tile_bytes("fwd", 32, _p2(N), _p2(D), _p2(E), 4) > TILE_BUDGET
    assert any(n > 1 for *_, n in seen)   # bf16 leaves the autotuner a choice


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


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-4), (torch.bfloat16, 3e-2), (torch.float16, 4e-3)])
def test_triton_primitive_on_cuda_forward_and_backward_at_real_tile_sizes(dtype, tol):
    """On CUDA the autotuned tiles (not the interpreter's 16x16): many key tiles, a partial last one, masked
    keys; forward and backward against the fp32 reference on the same rounded inputs."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    g = torch.Generator(device="cuda").manual_seed(0)
    B, M, N, D, E = 3, 300, 1000, 64, 64
    q, k = torch.randn(B, M, D, device="cuda", generator=g), torch.randn(B, N, D, device="cuda", generator=g)
    v, bias = torch.randn(B, N, E, device="cuda", generator=g), torch.randn(B, N, device="cuda", generator=g)
    bias[:, :7] = float("-inf")
    low = [t.to(dtype).requires_grad_() for t in (q, k, v, bias)]
    ref_in = [t.to(dtype).float().requires_grad_() for t in (q, k, v, bias)]
    out, ref = block_attention(*low, scale=D ** -0.5), block_attention_ref(*ref_in, scale=D ** -0.5)
    assert all(o.dtype == dtype and o.is_cuda for o in out)
    for a, b in zip(out, ref):
        assert float((a.float() - b).abs().max()) <= tol * max(1.0, float(b.abs().max()))
    ws = [torch.randn(x.shape, device="cuda", generator=g) for x in ref]
    g1 = torch.autograd.grad(sum((x.float() * w).sum() for x, w in zip(out, ws)), low)
    g2 = torch.autograd.grad(sum((x * w).sum() for x, w in zip(ref, ws)), ref_in)
    for a, b in zip(g1, g2):
        assert float((a.float() - b).abs().max()) <= tol * float(b.abs().max())


@pytest.mark.gpu
def test_monarch_bf16_on_cuda_at_64k_tokens_runs_and_matches_the_reference_blockwise():
    """The bench's largest shape runs (forward + backward) in bf16 and its output is close to the fp32
    reference on the same inputs."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    from monarchrt.fidelity import monarch_for_budget

    layout = (64, 32, 32)
    knobs, _ = monarch_for_budget(layout, 64, 0.10)
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(1, 2, 65536, 64, device="cuda", generator=g, dtype=torch.bfloat16).requires_grad_()
               for _ in range(3))
    out = monarch_attention(q, k, v, layout, **knobs)
    out.float().sum().backward()
    assert all(torch.isfinite(t.grad.float()).all() for t in (q, k, v))
    with torch.no_grad():
        ref = monarch_attention(q[:, :1].float(), k[:, :1].float(), v[:, :1].float(), layout, backend="torch",
                                **knobs)
    assert float((out[:, :1].float() - ref).abs().max()) < 0.05


def test_primitive_shapes_are_the_calls_monarch_makes(gen, monkeypatch):
    import monarchrt.monarch as mm

    seen = []

    def spy(q, k, v, bias=None, scale=1.0):
        seen.append((q.shape[1], k.shape[1], q.shape[2], v.shape[2]))
        return block_attention_ref(q, k, v, bias, scale)

    monkeypatch.setattr(mm, "block_attention_ref", spy)
    layout, knobs = (2, 8, 8), dict(block=(1, 4, 8), h_reduce=2)
    q, k, v = (torch.randn(1, 1, 128, 8, generator=gen) for _ in range(3))
    monarch_attention(q, k, v, layout, num_iters=2, backend="torch", **knobs)
    shapes = mm.make_plan(layout, **knobs).primitive_shapes(8)
    assert seen == [shapes["R"], shapes["L"], shapes["T"], shapes["R"], shapes["L"]]


def test_bench_cuda_without_cuda_times_nothing_and_says_why():
    from monarchrt.run import part_bench_cuda

    from paperworks.hydra_glue import compose

    if torch.cuda.is_available():
        pytest.skip("a CUDA machine runs the real benchmark (test_bench_cuda_on_gpu)")
    rows, items = part_bench_cuda(compose("monarchrt", ["experiment=bench_cuda"]))
    assert rows == [] and {c.verdict for c in items} == {"inconclusive"}
    assert all("CUDA" in c.reason or c.kind == "check" for c in items)


@pytest.mark.gpu
def test_bench_cuda_on_gpu():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    from monarchrt.bench import bench_cuda

    rows, results = bench_cuda([(8, 32, 32)], 64, 0.10, heads=2, repeats=3, warmup=1)
    assert {r["pass"] for r in rows} == {"fwd", "fwd+bwd"} and set(results) == {(8192, "fwd"), (8192, "fwd+bwd")}
    assert all(r["monarch_s"] > 0 and r["flash_s"] > 0 and r["monarch_peak_MiB"] > 0 for r in rows)
    assert rows[-1]["max_abs_err_vs_fp32_reference"] < 0.05
