import numpy as np
import pytest
from grace import GRACE, CompositionalWorld, ConceptDictionary, SAEConcepts, SpLiCE, TinyCLIP, Tokenizer, evaluate
from grace.metrics import load_embeddings
from sklearn.metrics import roc_auc_score


@pytest.mark.parametrize("name", ["grace", "splice", "sae"])
def test_coefficients_nonnegative_l0_matched_and_shapes(world, fitted, name):
    D, Z, _ = world
    C = fitted[name].transform(Z[:300])
    assert C.shape == (300, 12) and C.min() >= 0
    assert abs((C > 0).sum(1).mean() - 3) <= 0.5
    Zh = fitted[name].inverse_transform(C)
    assert Zh.shape == (300, 32)
    np.testing.assert_allclose(np.linalg.norm(Zh, axis=1), 1, atol=1e-5)


@pytest.mark.parametrize("name", ["grace", "splice"])
def test_planted_sparse_world_recovered(world, fitted, name):
    D, Z, coef = world
    C = fitted[name].transform(Z[:500])
    auc = roc_auc_score((coef[:500] > 0).ravel(), C.ravel())
    assert auc > 0.95


def test_geometry_term_falls_in_training(fitted):
    h = fitted["grace"].history_["geometry"]
    assert h[-1] < h[0]


def test_poisoned_attributes_leave_coefficients_identical(world, fitted, rng):
    D, Z, _ = world
    g = fitted["grace"]
    attrs = {"a": np.array(D.concepts)[rng.integers(0, 12, 200)]}
    poisoned = {"a": rng.permutation(attrs["a"])}
    C1 = g.transform(Z[:200])
    r1, r2 = evaluate(g, Z[:200], attrs), evaluate(g, Z[:200], poisoned)
    np.testing.assert_array_equal(C1, g.transform(Z[:200]))
    assert r1["recon_cos"] == r2["recon_cos"] and r1["geometry_spearman"] == r2["geometry_spearman"]


@pytest.mark.parametrize("name,cls", [("grace", GRACE), ("splice", SpLiCE), ("sae", SAEConcepts)])
def test_save_load_round_trip(world, fitted, tmp_path, name, cls):
    _, Z, _ = world
    p = fitted[name].save(tmp_path / f"{name}.pt")
    back = cls.load(p)
    np.testing.assert_allclose(back.transform(Z[:50]), fitted[name].transform(Z[:50]), atol=1e-6)


def test_tinyclip_save_load(tmp_path):
    m = TinyCLIP(len(Tokenizer().vocab))
    back = TinyCLIP.load(m.save(tmp_path / "clip.pt"))
    x = np.random.default_rng(0).uniform(size=(2, 3, 24, 24)).astype(np.float32)
    import torch

    with torch.no_grad():
        np.testing.assert_allclose(back.encode_image(torch.from_numpy(x)).numpy(),
                                   m.eval().encode_image(torch.from_numpy(x)).numpy(), atol=1e-6)


# bad input ------------------------------------------------------------------------------------------
def test_bad_inputs(world, fitted, tmp_path):
    D, Z, _ = world
    g = fitted["grace"]
    with pytest.raises(ValueError, match="width"):
        g.transform(np.ones((3, 5)))
    bad = Z[:3].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        g.transform(bad)
    with pytest.raises(ValueError, match="non-empty"):
        ConceptDictionary([], np.ones((0, 4)))
    with pytest.raises(ValueError, match="duplicate"):
        ConceptDictionary(["a", "a"], np.ones((2, 4)))
    for k in (0, 13):
        with pytest.raises(ValueError, match="target_l0"):
            GRACE(D, target_l0=k)
        with pytest.raises(ValueError, match="target_l0"):
            SpLiCE(D, target_l0=k)
    with pytest.raises(TypeError, match="open_clip"):
        ConceptDictionary.from_prompts(object(), Tokenizer(), ["red"])
    with pytest.raises(RuntimeError, match="not fitted"):
        GRACE(D).transform(Z[:2])
    np.savez(tmp_path / "x.npz", image_embeddings=Z[:4])
    with pytest.raises(ValueError, match="concept_embeddings"):
        load_embeddings(tmp_path / "x.npz")
    with pytest.raises(ValueError, match="holdout"):
        CompositionalWorld(holdout=0.9)


def test_load_embeddings_round_trip(world, tmp_path):
    D, Z, _ = world
    np.savez(tmp_path / "e.npz", image_embeddings=Z[:10], concept_embeddings=np.ones((12, 32)),
             concepts=np.array(D.concepts))
    d = load_embeddings(tmp_path / "e.npz")
    assert d["image_embeddings"].shape == (10, 32) and list(d["concepts"]) == D.concepts


def test_world_holdout_disjoint_and_video_shapes():
    w = CompositionalWorld(seed=3)
    _, a, caps = w.sample(50, split="heldout", seed=0)
    held = set(map(tuple, w.heldout_combos))
    assert all((s, c) in held for s, c in zip(a["shape"], a["colour"], strict=True))
    _, a2, _ = w.sample(200, split="seen", seed=0)
    assert not any((s, c) in held for s, c in zip(a2["shape"], a2["colour"], strict=True))
    v, av, _ = CompositionalWorld(video=True, seed=3).sample(4, seed=0)
    assert v.shape == (4, 4, 3, 24, 24) and "motion" in av


def test_remove_concepts_zeroes_only_named_columns(world, fitted):
    from grace import remove_concepts

    D, Z, _ = world
    C = fitted["splice"].transform(Z[:40])
    E = remove_concepts(C, D.concepts, ["c0", "c5"])
    assert np.all(E[:, [0, 5]] == 0)
    keep = [j for j in range(12) if j not in (0, 5)]
    np.testing.assert_array_equal(E[:, keep], C[:, keep])
    with pytest.raises(ValueError, match="unknown"):
        remove_concepts(C, D.concepts, ["nope"])
