import pytest
import torch
from molhit import MolHIT
from molhit.model import _top_p

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
