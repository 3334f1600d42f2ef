import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tmevolve import TMEvolve, TMEvolveConv, concept_scores, patch_graph


def _grid(n=5):
    ii, jj = np.divmod(np.arange(n * n), n)
    return patch_graph(np.stack([ii, jj], 1))


def _dense_reference(conv, x, ei, S, c):
    """The update with dense N×N matrices, written independently of the sparse code."""
    n = x.shape[0]
    A = torch.zeros(n, n, dtype=x.dtype)
    A[ei[1], ei[0]] = 1.0
    deg = A.sum(1)
    a = A / torch.maximum(deg[:, None], deg[None, :]).clamp(min=1)
    s = S @ S.T
    g = torch.sigmoid(10 * (c @ conv.gate @ c.T + conv.gate_bias)) if c is not None else torch.ones(n, n, dtype=x.dtype)
    wd, wf = a * s, a * (1 - s) * g
    diff = wd @ x - wd.sum(1, keepdim=True) * x
    flux = (wf @ x - wf.sum(1, keepdim=True) * x) @ conv.lin_flux.weight.T
    react = conv.react2(torch.tanh(conv.react1(x)))
    return x + conv.dt * (diff + flux + react), wf[ei[1], ei[0]]


def test_conv_matches_dense_reference_with_gradients():
    torch.manual_seed(0)
    ei = _grid(5)
    n, d, r, k = 25, 6, 3, 4
    conv = TMEvolveConv(d, concepts=k, dt=0.7).double()
    with torch.no_grad():
        conv.gate.normal_()
    x = torch.randn(n, d, dtype=torch.double, requires_grad=True)
    S = torch.softmax(torch.randn(n, r, dtype=torch.double), -1).requires_grad_()
    c = torch.softmax(torch.randn(n, k, dtype=torch.double), -1)
    conv.eval()
    out, flux = conv(x, ei, S, c)
    ref, ref_flux = _dense_reference(conv, x, ei, S, c)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(flux, ref_flux)
    w = torch.randn_like(out)
    g1 = torch.autograd.grad((out * w).sum(), (x, S, conv.gate))
    g2 = torch.autograd.grad((ref * w).sum(), (x, S, conv.gate))
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b)


def test_diffusion_conserves_mass_obeys_max_principle_and_respects_hard_boundaries():
    torch.manual_seed(1)
    ei = _grid(6)
    n = 36
    conv = TMEvolveConv(4, dt=1.0, flux=False, reaction=False).double()
    x = torch.randn(n, 4, dtype=torch.double)
    left = torch.arange(n) % 6 < 3
    S = torch.stack([left, ~left], 1).double()  # two hard regions
    y = x
    for _ in range(20):
        y, _ = conv(y, ei, S)
    torch.testing.assert_close(y.sum(0), x.sum(0))
    assert y.max() <= x.max() + 1e-12 and y.min() >= x.min() - 1e-12
    torch.testing.assert_close(y[left].sum(0), x[left].sum(0))  # nothing crossed the boundary
    x2 = x.clone()
    x2[~left] += 5.0
    y2 = x2
    for _ in range(20):
        y2, _ = conv(y2, ei, S)
    torch.testing.assert_close(y2[left], y[left])


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000))
def test_permuting_patches_leaves_slide_output_unchanged(seed):
    g = torch.Generator().manual_seed(seed)
    ii, jj = np.divmod(np.arange(36), 6)
    coords = np.stack([ii, jj], 1)
    x = torch.randn(36, 8, generator=g)
    torch.manual_seed(0)
    model = TMEvolve(8, 16, 2, num_regions=3, num_steps=2, concepts=torch.randn(3, 8, generator=g)).eval()
    out, _ = model(x, patch_graph(coords))
    perm = torch.randperm(36, generator=g)
    out_p, aux_p = model(x[perm], patch_graph(coords[perm.numpy()]))
    torch.testing.assert_close(out, out_p, rtol=1e-4, atol=1e-5)


def test_batched_slides_never_interact(smoke_data):
    from torch_geometric.loader import DataLoader

    torch.manual_seed(0)
    model = TMEvolve(64, 16, 1, num_regions=4, num_steps=2, concepts=smoke_data["train"].concepts).eval()
    slides = [smoke_data["test"][i] for i in range(3)]
    b = next(iter(DataLoader(slides, batch_size=3)))
    out, aux = model(b.x, b.edge_index, b.batch)
    assert aux["S"].shape == (b.num_nodes, 4) and aux["flux"].shape == (b.edge_index.shape[1],)
    torch.testing.assert_close(aux["S"].sum(-1), torch.ones(b.num_nodes))
    for i, d in enumerate(slides):
        torch.testing.assert_close(out[i], model(d.x, d.edge_index)[0][0], rtol=1e-4, atol=1e-5)


def test_concept_scores_are_a_distribution():
    c = concept_scores(torch.randn(10, 5), torch.randn(3, 5))
    torch.testing.assert_close(c.sum(-1), torch.ones(10))


@pytest.mark.parametrize("kwargs,match", [
    ({"dt": 1.5}, "dt must"), ({"dt": 0.0}, "dt must"), ({"dt": "0.1"}, "dt must"),
    ({"concepts": torch.randn(5, 7)}, "width 7"), ({"concepts": torch.full((5, 8), float("nan"))}, "finite"),
    ({"task": "segmentation"}, "task must"), ({"num_regions": 0}, "num_regions"),
])
def test_bad_model_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        TMEvolve(8, 16, 1, **kwargs)


def test_bad_forward_inputs():
    model = TMEvolve(8, 16, 1)
    ei = _grid(3)
    x = torch.randn(9, 8)
    with pytest.raises(ValueError, match="finite"):
        model(torch.where(torch.arange(9)[:, None] == 2, float("nan"), x), ei)
    with pytest.raises(ValueError, match="at least 2"):
        model(x[:1], ei[:, :0])
    with pytest.raises(ValueError, match=r"\(N, 8\)"):
        model(torch.randn(9, 7), ei)


def test_save_reload_roundtrip(tmp_path):
    torch.manual_seed(0)
    model = TMEvolve(8, 16, 1, num_regions=3, concepts=torch.randn(4, 8), task="survival").eval()
    model.freeze_regions(torch.randn(3, 8))
    x, ei = torch.randn(9, 8), _grid(3)
    again = TMEvolve.load(model.save(tmp_path / "m.pt"))
    torch.testing.assert_close(again(x, ei)[0], model(x, ei)[0])
    assert again.task == "survival"
    with pytest.raises(FileNotFoundError):
        TMEvolve.load(tmp_path / "missing.pt")
