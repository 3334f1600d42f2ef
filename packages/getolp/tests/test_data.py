import numpy as np
import pytest
import scipy.sparse as sp
from getolp.barycenter import n_variables
from getolp.data import (
    KINDS,
    digits_histograms,
    fit_grid,
    load_histogram,
    recolor,
    resample,
    rgb_histogram,
    sample_images,
    synthetic_histograms,
)
from PIL import Image


@pytest.mark.parametrize("kind", KINDS)
def test_synthetic_histograms_are_probabilities(rng, kind):
    h = synthetic_histograms(rng, 3, (6, 5), kind, density=0.2)
    assert h.shape == (3, 6, 5) and h.min() >= 0
    np.testing.assert_allclose(h.sum(axis=(1, 2)), 1.0)
    support = (h > 0).reshape(3, -1)
    if kind == "sparse":
        assert (support.sum(axis=1) == 6).all()
    if kind == "equal":
        assert (h == h[0]).all()
    if kind == "dirac":
        assert (support.sum(axis=1) == 1).all()
    if kind == "disjoint":
        assert (support.sum(axis=0) <= 1).all() and support.any(axis=1).all()
    with pytest.raises(ValueError, match="kind must be"):
        synthetic_histograms(rng, 3, (6, 5), "uniform")


def test_rgb_histogram_counts_pixels():
    img = np.zeros((2, 3, 3), dtype=np.uint8)
    img[0, :] = (255, 0, 0)  # 3 red pixels
    img[1, 0] = (0, 0, 255)  # 1 blue, 2 black
    h = rgb_histogram(img, bins=4)
    assert h.shape == (4, 4, 4) and h.sum() == pytest.approx(1.0)
    assert h[3, 0, 0] == pytest.approx(3 / 6) and h[0, 0, 3] == pytest.approx(1 / 6)
    assert h[0, 0, 0] == pytest.approx(2 / 6)
    with pytest.raises(ValueError, match="image must have shape"):
        rgb_histogram(np.zeros((4, 4)))


def test_recolor_with_the_identity_plan_keeps_the_image():
    img = sample_images()["china"][:40, :50]
    h = rgb_histogram(img, 4).ravel()
    out = recolor(img, sp.diags(h), 4)
    np.testing.assert_array_equal(out, img)


def test_digits(rng):
    h = digits_histograms(7, 5, rng=rng)
    assert h.shape == (5, 8, 8)
    np.testing.assert_allclose(h.sum(axis=(1, 2)), 1.0)
    with pytest.raises(ValueError, match="digit must be"):
        digits_histograms(11)


def test_load_npy_and_images(tmp_path, rng):
    a = rng.random((4, 4))
    np.save(tmp_path / "a.npy", a)
    np.testing.assert_allclose(load_histogram(tmp_path / "a.npy", (4, 4)), a / a.sum())
    with pytest.raises(ValueError, match="does not match grid_shape"):
        load_histogram(tmp_path / "a.npy", (3, 3))
    np.save(tmp_path / "neg.npy", -a)
    with pytest.raises(ValueError, match="non-negative"):
        load_histogram(tmp_path / "neg.npy")
    img = (rng.random((20, 30, 3)) * 255).astype(np.uint8)
    Image.fromarray(img).save(tmp_path / "x.png")
    g = load_histogram(tmp_path / "x.png", (5, 6))
    assert g.shape == (5, 6) and g.sum() == pytest.approx(1.0)
    c = load_histogram(tmp_path / "x.png", mode="rgb", bins=4)
    np.testing.assert_allclose(c, rgb_histogram(img, 4))
    (tmp_path / "x.txt").write_text("1 2 3")
    with pytest.raises(ValueError, match="path must be a .npy file or an image"):
        load_histogram(tmp_path / "x.txt")
    with pytest.raises(ValueError, match="is not a file"):
        load_histogram(tmp_path / "missing.npy")


def test_resample_keeps_mass_and_fit_grid_fits(rng):
    h = rng.random((30, 40))
    g = resample(h, (15, 20))
    assert g.shape == (15, 20) and g.sum() == pytest.approx(1.0)
    blocks = h.reshape(15, 2, 20, 2).sum(axis=(1, 3))  # box filter by 2: the mass of each 2x2 block
    np.testing.assert_allclose(g, blocks / blocks.sum(), rtol=1e-5)
    shape = fit_grid((300, 400), 3, 100_000)
    assert n_variables(shape, 3) <= 100_000 < n_variables((shape[0] + 1, shape[1] + 2), 3)
    assert fit_grid((4, 4), 2, 10**6) == (4, 4)


def test_npy_of_strings_is_refused(tmp_path):
    np.save(tmp_path / "s.npy", np.array(["1", "2"]))
    with pytest.raises(ValueError, match="real numbers"):
        load_histogram(tmp_path / "s.npy")
