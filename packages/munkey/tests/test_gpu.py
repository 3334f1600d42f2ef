"""CUDA checks (marked gpu; deselected by default): the model, deletion, baselines and a whole scenario on a GPU."""

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


class _Cfg(dict):
    """Attribute access over the package's yaml (no Hydra needed on a bare GPU machine)."""

    def __getattr__(self, k):
        v = self[k]
        return _Cfg(v) if isinstance(v, dict) else v


def _cfg(**over):
    conf = Path(__file__).parents[1] / "src" / "munkey" / "conf"
    c = yaml.safe_load((conf / "config.yaml").read_text())
    c.update(train={**c["train"], "epochs": 2}, forget_count=15, **over)
    c["unlearn"] = {**c["unlearn"], "epochs": 1, "lrs": [0.001], "ssd_alphas": [10.0]}
    return _Cfg(c)


def test_munkey_deletion_on_cuda(split, small_cfg):
    from munkey import MUNKEY, fit

    torch.manual_seed(0)
    m = fit(MUNKEY(**small_cfg, key_dim=16, topk=8).cuda(), split.x_train.cuda(), split.y_train.cuda(), epochs=2)
    x = split.x_test.cuda()
    with torch.no_grad():
        before, pos = m(x), m.retrieve(x)[0]
    gone = torch.arange(0, 210, 5)
    untouched = ~torch.isin(m.mem_ids[pos].cpu(), gone).any(1)
    w = {k: v.detach().clone() for k, v in m.named_parameters() if not k.startswith("mem_")}
    m.forget(gone.tolist())
    with torch.no_grad():
        after = m(x)
        near = split.x_train[:210:5].cuda() + 0.02 * torch.randn(42, 1, 8, 8, device="cuda")
        assert not torch.isin(m.mem_ids[m.retrieve(near)[0]].cpu(), gone).any()
    assert torch.equal(after[untouched.cuda()], before[untouched.cuda()])
    assert all(torch.equal(v, w[k]) for k, v in m.named_parameters() if not k.startswith("mem_"))
    import io

    buf = io.BytesIO()
    m.save(buf)
    buf.seek(0)
    cpu = MUNKEY.load(buf)
    with torch.no_grad():
        assert torch.allclose(cpu(split.x_test), after.cpu(), atol=1e-4)
    m.chunk = 16
    with torch.no_grad():
        assert torch.equal(m.retrieve(x)[0], m.retrieve(x)[0])


def test_whole_scenario_on_cuda(split):
    from munkey.munkey import MUNKEY
    from munkey.run import _train, run_scenario
    from munkey.vit import ViT

    cfg = _cfg()
    idx = np.arange(len(split.x_train))
    mk, vt = _train(MUNKEY, cfg, split, idx, 0, "cuda"), _train(ViT, cfg, split, idx, 0, "cuda")
    assert next(mk.parameters()).is_cuda and mk.mem_keys.is_cuda
    checks, hist = {}, {}
    rows = run_scenario(cfg, split, "random", 0, copy.deepcopy(mk), vt, "cuda", hist=hist, checks=checks)
    rows += run_scenario(cfg, split, "noisy", 0, mk, vt, "cuda")
    methods = {r["method"] for r in rows}
    assert {"munkey_delete", "oracle", "oracle_munkey", "finetune", "scrub", "salun", "ssd"} <= methods
    assert checks["weight_change"] == 0 and checks["deleted_retrieved"] == 0 and checks["untouched_max_diff"] == 0
    assert all(np.isfinite(r["avg_gap"]) for r in rows)
