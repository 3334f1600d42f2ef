import pytest
import torch
from molhit import MolHIT
from molhit.model import _bond_temperature, _top_p

SMILES = ["CCO", "c1ccccc1", "CC(=O)O", "CCN", "c1ccncc1", "CC(=O)Nc1ccc(O)cc1"]


@pytest.mark.parametrize("process", ["hierarchical", "absorbing", "marginal"])
def test_fit_and_sample(process):
    m = MolHIT(process=process, T=8, n_layers=1, d_model=16, d_edge=8, n_heads=2, cond_bins=2)
    losses = m.fit(SMILES, steps=30, batch_size=8, lr=5e-3, cond=torch.tensor([0, 1, 0, 0, 1, 1]), log_every=0)
    assert losses[-1] < losses[0]
    out = m.sample(5, temperature=0.9, top_p=0.9, seed=1)
    assert len(out) == 5 and all(s is None or isinstance(s, str) for s in out)
    assert len(m.sample(3, guidance=1.0, cond=1)) == 3


def test_top_p_keeps_the_nucleus():
    logp = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()
    kept = torch.isfinite(_top_p(logp, 0.7))
    assert kept.tolist() == [[True, True, False, False]]


@pytest.mark.parametrize("temperature, top_p", [(0.5, 1.0), (0.6, 0.9), (1.5, 1.0), (1.0, 0.8)])
def test_temperature_sharpens_the_bond_type_but_keeps_the_bond_probability(temperature, top_p):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 5, 4, generator=g) * 2
    logits[..., 0] += 3                                  # class 0 = no bond, the likeliest for most pairs
    logp = logits.log_softmax(-1)
    out = _bond_temperature(logp, temperature, top_p)
    torch.testing.assert_close(out.exp().sum(-1), torch.ones(3, 5, 5))
    torch.testing.assert_close(out[..., 0], logp[..., 0])                      # p(no bond) unchanged
    # given a bond, the type is p_k^(1/T), renormalised (then the nucleus)
    typ = (logp[..., 1:] / temperature).softmax(-1)
    want = _top_p(typ.log(), top_p).softmax(-1)
    got = (out[..., 1:] - torch.logsumexp(out[..., 1:], -1, keepdim=True)).exp()
    torch.testing.assert_close(got, want)
    # what 0.1 did (every logit divided by T < 1) drops the expected number of bonds; this does not
    if temperature < 1:
        old_bonds = 1 - (logp / temperature).softmax(-1)[..., 0]
        assert float(old_bonds.sum()) < float((1 - out[..., 0].exp()).sum())


def test_bad_sampling_args():
    m = MolHIT(T=4, n_layers=1, d_model=16, d_edge=8, n_heads=2)
    with pytest.raises(RuntimeError, match="fit"):
        m.sample(2)
    m.fit(SMILES, steps=2, batch_size=4, log_every=0)
    for kw, match in [({"temperature": 0}, "temperature"), ({"top_p": 0}, "top_p"), ({"sampler": "x"}, "sampler")]:
        with pytest.raises(ValueError, match=match):
            m.sample(2, **kw)
    with pytest.raises(ValueError, match="n must"):
        m.sample(0)
    with pytest.raises(ValueError, match="process"):
        MolHIT(process="gaussian")


BENZENES = ["Cc1ccccc1", "Oc1ccccc1", "CCc1ccccc1", "Nc1ccccc1", "Cc1ccccc1C", "OCc1ccccc1", "CC(=O)c1ccccc1",
            "c1ccccc1"]


def test_scaffold_inpainting_keeps_the_scaffold():
    from rdkit import Chem

    m = MolHIT(T=10, n_layers=1, d_model=32, d_edge=8, n_heads=2)
    m.fit(BENZENES, steps=60, batch_size=16, lr=5e-3, log_every=0)
    atoms, bonds = m.encoding.encode("c1ccccc1")
    graphs = m.generate(48, scaffold="c1ccccc1", seed=0)
    for a, b in graphs:  # the fixed part is exactly the scaffold, and something was added
        assert len(a) > 6 and (a[:6] == atoms).all() and (b[:6, :6] == bonds).all()
    valid = [s for s in m.decode(graphs) if s is not None]
    pat = Chem.MolFromSmiles("c1ccccc1")
    assert valid and all(Chem.MolFromSmiles(s).HasSubstructMatch(pat) for s in valid)
    for a, b in m.generate(6, scaffold="c1ccccc1", resample=2, seed=1):  # RePaint resampling keeps it too
        assert (a[:6] == atoms).all() and (b[:6, :6] == bonds).all()
    with pytest.raises(ValueError, match="resample"):
        m.sample(2, scaffold="c1ccccc1", resample=0)
    with pytest.raises(ValueError, match="scaffold"):
        m.sample(2, scaffold="c1ccccc1CCCCCCCC")  # no training molecule is larger
    with pytest.raises(ValueError, match="scaffold"):
        m.sample(2, scaffold="P1CCCC1")


def _small(**kw):
    return MolHIT(T=6, n_layers=1, d_model=16, d_edge=8, n_heads=2, **kw)


def test_resume_equals_uninterrupted(tmp_path):
    cond = torch.tensor([[i % 2, i % 3] for i in range(len(SMILES))])
    kw = dict(batch_size=8, cond=cond, log_every=0, seed=3)
    full = _small(cond_bins=(2, 3))
    l_full = full.fit(SMILES, steps=16, **kw)
    ck = tmp_path / "ck.pt"
    first = _small(cond_bins=(2, 3))
    first.fit(SMILES, steps=16, checkpoint=ck, checkpoint_every=4, time_limit=0.0, **kw)  # "killed" after 1 step
    state = torch.load(ck, weights_only=True)
    assert state["step"] == 1 and len(state["rng"]) == 1 and "state" in state["opt"]
    mid = _small(cond_bins=(2, 3))
    mid.fit(SMILES, steps=9, checkpoint=ck, resume=True, **kw)
    resumed = _small(cond_bins=(2, 3))
    l_res = resumed.fit(SMILES, steps=16, checkpoint=ck, resume=True, **kw)
    assert l_res == l_full
    for p, q in zip(full.net.state_dict().values(), resumed.net.state_dict().values()):
        assert torch.equal(p, q)
    # writing checkpoints does not perturb training; a checkpoint of another process is refused
    other = _small(cond_bins=(2, 3))
    with pytest.raises(ValueError, match="process"):
        _small(process="absorbing", cond_bins=(2, 3)).fit(SMILES, steps=2, checkpoint=ck, resume=True, **kw)
    assert other.fit(SMILES, steps=16, checkpoint=tmp_path / "b.pt", **kw) == l_full


def test_two_property_guidance_api():
    m = _small(cond_bins=(2, 3))
    with pytest.raises(ValueError, match="cond must hold"):
        m.fit(SMILES, steps=2, cond=torch.zeros(len(SMILES), dtype=torch.long), log_every=0)
    with pytest.raises(ValueError, match="cond bins"):
        m.fit(SMILES, steps=2, cond=torch.full((len(SMILES), 2), 2), log_every=0)
    m.fit(SMILES, steps=4, batch_size=4, cond=torch.tensor([[i % 2, i % 3] for i in range(6)]), log_every=0)
    assert len(m.sample(2, cond=(1, None), guidance=1.0)) == 2
    assert len(m.sample(2, cond=(None, 2), guidance=1.0)) == 2
    for bad in (1, (2, 0), (0, 3), (0,)):
        with pytest.raises(ValueError, match="cond must"):
            m.sample(2, cond=bad, guidance=1.0)


def test_guidance_changes_the_prediction():
    """The conditional and unconditional predictions differ, so w moves the sampling distribution."""
    m = _small(cond_bins=(2,))
    m.fit(SMILES, steps=30, batch_size=8, lr=5e-3, cond=torch.tensor([0, 1, 0, 0, 1, 1]), log_every=0)
    xt = m.node_process.prior_sample((2, 5))
    et = torch.zeros(2, 5, 5, dtype=torch.long) + m.edge_process.prior_sample((1,))[0]
    mask = torch.ones(2, 5, dtype=torch.bool)
    p_un = m._log_p0(xt, et, 3, mask, None, 0.0, 1.0, 1.0)[0]
    p_g0 = m._log_p0(xt, et, 3, mask, (1,), 0.0, 1.0, 1.0)[0]
    p_g2 = m._log_p0(xt, et, 3, mask, (1,), 2.0, 1.0, 1.0)[0]
    assert torch.allclose(p_un.sum(-1), torch.ones(2, 5), atol=1e-5)
    assert not torch.allclose(p_un, p_g0, atol=1e-4)
    # w extrapolates away from the unconditional prediction: log p_w = (1+w) log p_c - w log p_u (renormalised)
    expect = torch.softmax(3 * p_g0.log() - 2 * p_un.log(), -1)
    assert torch.allclose(p_g2, expect, atol=1e-4)


def test_save_load_is_self_contained(tmp_path):
    """One file holds weights, encoding, process marginals, sizes and cond_bins: MolHIT.load needs no
    training data and samples exactly what the saved model samples; a training checkpoint loads too."""
    from molhit.encoding import digress_encoding

    m = MolHIT(digress_encoding(aromatic_bonds=True), process="marginal", T=6, n_layers=1, d_model=16, d_edge=8,
               n_heads=2, cond_bins=(2, 3))
    cond = torch.tensor([[i % 2, i % 3] for i in range(len(SMILES))])
    m.fit(SMILES, steps=6, batch_size=4, cond=cond, log_every=0, checkpoint=tmp_path / "ck.pt")
    m.save(tmp_path / "model.pt")
    state = torch.load(tmp_path / "model.pt", weights_only=True)            # plain types and tensors only
    assert state["format"] == "molhit-model/1" and "opt" not in state
    for path in (tmp_path / "model.pt", tmp_path / "ck.pt"):
        r = MolHIT.load(path)
        assert r.encoding.to_dict() == m.encoding.to_dict() and r.process_name == "marginal"
        assert r.cond_bins == (2, 3) and r.max_atoms == m.max_atoms
        assert torch.equal(r.n_atoms_dist, m.n_atoms_dist)
        torch.testing.assert_close(r.edge_process.Qbar, m.edge_process.Qbar)
        kw = dict(seed=4, cond=(1, None), guidance=0.5)
        assert [(a.tolist(), b.tolist()) for a, b in r.generate(4, **kw)] == \
               [(a.tolist(), b.tolist()) for a, b in m.generate(4, **kw)]
    torch.save(m.net.state_dict(), tmp_path / "bare.pt")                   # the 0.1 format: weights only
    with pytest.raises(ValueError, match="not a molhit model"):
        MolHIT.load(tmp_path / "bare.pt")
    with pytest.raises(FileNotFoundError):
        MolHIT.load(tmp_path / "missing.pt")
    with pytest.raises(RuntimeError, match="not fitted"):
        _small().save(tmp_path / "x.pt")


def test_bad_input_gets_clear_errors(tmp_path):
    from molhit.diffusion import HierarchicalDiffusion

    m = _small()
    with pytest.warns(UserWarning, match="vocabulary"):
        m.fit(SMILES + ["CP(C)C", "C[Si](C)(C)C", "CI"], steps=2, batch_size=4, log_every=0)
    assert m.skipped_["vocabulary"] == 3
    for kw, match in [({"temperature": float("nan")}, "temperature"), ({"guidance": 3.0}, "cond"),
                      ({"batch_size": 0}, "batch_size"), ({"top_p": float("nan")}, "top_p")]:
        with pytest.raises(ValueError, match=match):
            m.generate(2, **kw)
    with pytest.raises(ValueError, match="batch_size"):
        _small().fit(SMILES, steps=2, batch_size=0)
    with pytest.raises(ValueError, match="integer group"):
        HierarchicalDiffusion([0.7, 1.9], 4)
    h = HierarchicalDiffusion([0, 0, 1], 4)
    with pytest.raises(ValueError, match="x0"):
        h.marginal(9, 1)
    with pytest.raises(ValueError, match="t must"):
        h.marginal(0, 5)


def test_cosine_schedule_differs_from_constant_and_resumes(tmp_path):
    kw = dict(batch_size=8, log_every=0, seed=3)
    l_cos = _small().fit(SMILES, steps=10, lr_schedule="cosine", **kw)
    assert l_cos[0] == _small().fit(SMILES, steps=1, **kw)[0]        # step 0 runs at the full lr
    assert l_cos != _small().fit(SMILES, steps=10, **kw)               # then it decays
    ck = tmp_path / "c.pt"
    _small().fit(SMILES, steps=10, lr_schedule="cosine", checkpoint=ck, time_limit=0.0, **kw)
    assert _small().fit(SMILES, steps=10, lr_schedule="cosine", checkpoint=ck, resume=True, **kw) == l_cos
    with pytest.raises(ValueError, match="lr_schedule"):
        _small().fit(SMILES, steps=2, lr_schedule="step", **kw)
