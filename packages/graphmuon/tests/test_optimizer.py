import copy

import pytest
import torch
from graphmuon import GraphMuon, attach, graph_polar_direction, inverse_sqrt
from graphmuon.diagnostics import identity_metric_gap
from torch import nn


def _pair(gen, d_in=16, d_out=8):
    a, b = nn.Linear(d_in, d_out, bias=False), nn.Linear(d_in, d_out, bias=False)
    with torch.no_grad():
        a.weight.copy_(torch.randn(d_out, d_in, generator=gen))
        b.weight.copy_(a.weight)
    return a, b


@pytest.mark.parametrize("scale,nesterov", [("match_rms_adamw", True), ("original", False)])
def test_identity_covariance_is_torch_muon(gen, scale, nesterov):
    a, b = _pair(gen)
    gm = GraphMuon(a.parameters(), lr=0.03, eps=0.0, scale=scale, nesterov=nesterov, weight_decay=0.05)
    gm.register(a.weight, a, name="w")
    mu = torch.optim.Muon(b.parameters(), lr=0.03, weight_decay=0.05, nesterov=nesterov, adjust_lr_fn=scale)
    x = 4.0 * torch.eye(16)  # XᵀX/n = I exactly
    target = torch.randn(16, 8, generator=gen)
    for _ in range(4):
        for lin, opt in ((a, gm), (b, mu)):
            opt.zero_grad()
            ((lin(x) - target) ** 2).sum().backward()
            opt.step()
    torch.testing.assert_close(gm.state[a.weight]["sigma"], torch.eye(16), atol=0, rtol=0)
    assert torch.equal(a.weight, b.weight)
    assert identity_metric_gap() == 0.0


def test_direction_has_unit_metric_norm(gen):
    x = torch.randn(200, 10, generator=gen) @ torch.randn(10, 10, generator=gen)  # anisotropic input
    sigma = x.T @ x / 200
    m = torch.randn(6, 10, generator=gen)
    z = inverse_sqrt(sigma.double()).float()
    sqrt_sigma = torch.linalg.inv(z)
    u = graph_polar_direction(m, z, orthogonalize="svd")
    assert abs(torch.linalg.matrix_norm(u @ sqrt_sigma, ord=2) - 1.0) < 1e-4
    s = torch.linalg.svdvals(graph_polar_direction(m, z) @ sqrt_sigma)
    assert 0.5 < s.min() and s.max() < 1.5


def test_direction_is_steepest_in_the_metric(gen):
    """polar(MΣ^{-1/2})Σ^{-1/2} maximises <M, U> over ‖UΣ^{1/2}‖_op ≤ 1 (checked against random feasible U)."""
    sigma = torch.randn(8, 8, generator=gen, dtype=torch.float64)
    sigma = sigma @ sigma.T + 0.1 * torch.eye(8, dtype=torch.float64)
    m = torch.randn(5, 8, generator=gen, dtype=torch.float64)
    z = inverse_sqrt(sigma)
    best = (m * graph_polar_direction(m, z, orthogonalize="svd")).sum()
    for _ in range(200):
        q = torch.randn(5, 8, generator=gen, dtype=torch.float64)
        q = q / torch.linalg.matrix_norm(q, ord=2)
        assert (m * (q @ z)).sum() <= best + 1e-9


def test_induced_step_size_matches_target(gen):
    lin = nn.Linear(12, 7, bias=False)
    opt = GraphMuon(lin.parameters(), lr=0.05, rms=0.2)
    opt.register(lin.weight, lin, name="w")
    x = torch.randn(300, 12, generator=gen) * torch.linspace(0.1, 3.0, 12)
    before = lin.weight.detach().clone()
    lin(x).pow(2).sum().backward()
    opt.step()
    dw = lin.weight.detach() - before
    induced = torch.linalg.matrix_norm(x @ dw.T) / 300**0.5
    torch.testing.assert_close(induced, torch.tensor(0.05 * 0.2 * (12 * 7) ** 0.5), rtol=1e-4, atol=0)


def _model_and_data(gen):
    from torch_geometric.nn import GCNConv
    from torch_geometric.utils import erdos_renyi_graph

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = GCNConv(6, 8), GCNConv(8, 3)

        def forward(self, x, ei):
            return self.c2(self.c1(x, ei).relu(), ei)

    torch.manual_seed(0)
    return Net(), torch.randn(30, 6, generator=gen), erdos_renyi_graph(30, 0.2), torch.randint(0, 3, (30,), generator=gen)


def _steps(model, opt, x, ei, y, k, sched=None):
    for _ in range(k):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x, ei), y).backward()
        opt.step()
        if sched:
            sched.step()


def test_state_dict_round_trip_resumes_identically(gen):
    model, x, ei, y = _model_and_data(gen)
    opt = GraphMuon(model.parameters(), lr=0.02)
    attach(model, opt)
    _steps(model, opt, x, ei, y, 3)
    saved_model, saved_opt = copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict())
    _steps(model, opt, x, ei, y, 3)
    model2, *_ = _model_and_data(gen)
    model2.load_state_dict(saved_model)
    opt2 = GraphMuon(model2.parameters(), lr=0.02)
    attach(model2, opt2)
    opt2.load_state_dict(saved_opt)
    assert "sigma" in opt2.state[model2.c1.lin.weight]
    _steps(model2, opt2, x, ei, y, 3)
    for p, q in zip(model.parameters(), model2.parameters()):
        assert torch.equal(p, q)


def test_lr_scheduler_drives_both_updates(gen):
    model, x, ei, y = _model_and_data(gen)
    opt = GraphMuon(model.parameters(), lr=0.02)
    attach(model, opt)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.0)
    _steps(model, opt, x, ei, y, 1, sched)
    assert opt.param_groups[0]["lr"] == 0.0
    before = [p.detach().clone() for p in model.parameters()]
    _steps(model, opt, x, ei, y, 1)
    for b, p in zip(before, model.parameters()):
        assert torch.equal(b, p)  # lr 0: neither the GraphMuon nor the AdamW part moves


def test_unregistered_parameters_get_torch_adamw(gen):
    a, b = nn.Linear(5, 3), nn.Linear(5, 3)
    b.load_state_dict(a.state_dict())
    gm = GraphMuon(a.parameters(), lr=0.01, adamw_weight_decay=0.01, unregistered="ignore")  # all AdamW
    ref = torch.optim.AdamW(b.parameters(), lr=0.01, weight_decay=0.01)
    x = torch.randn(10, 5, generator=gen)
    for _ in range(3):
        for lin, opt in ((a, gm), (b, ref)):
            opt.zero_grad()
            lin(x).pow(2).sum().backward()
            opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q)


def test_bad_input_names_the_parameter(gen):
    model, x, ei, y = _model_and_data(gen)
    opt = GraphMuon(model.parameters(), lr=0.01)
    with pytest.raises(ValueError, match="'bias' must be a 2-D matrix"):
        opt.register(model.c1.bias, model.c1, name="bias")
    with pytest.raises(ValueError, match="not in this optimizer"):
        opt.register(nn.Parameter(torch.ones(2, 2)), model.c1, name="stray")
    strict = GraphMuon([{"params": [model.c1.lin.weight], "use_graphmuon": True}], lr=0.01)
    nn.functional.cross_entropy(model(x, ei), y).backward()
    with pytest.raises(ValueError, match="without a propagated-input capture"):
        strict.step()
    attach(model, opt)
    opt.zero_grad()
    nn.functional.cross_entropy(model(x, ei), y).backward()
    model.c2.lin.weight.grad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="non-finite gradient .* 'c2.lin.weight'"):
        opt.step()


@pytest.mark.parametrize("kw", [{"lr": -1.0}, {"momentum": 1.0}, {"eps": -1.0}, {"scale": "rms"},
                                {"orthogonalize": "qr"}, {"inv_sqrt": "chol"}, {"precond_every": 0}])
def test_bad_hyperparameters(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        GraphMuon([nn.Parameter(torch.ones(2, 2))], **kw)


def test_evaluation_passes_do_not_move_sigma(gen):
    model, x, ei, y = _model_and_data(gen)
    opt = GraphMuon(model.parameters(), lr=0.01)
    attach(model, opt)
    model.eval()
    with torch.no_grad():
        model(x, ei)
    assert "pending_xtx" not in opt.state[model.c1.lin.weight]
    model.train()
    model(x, ei)
    assert opt.state[model.c1.lin.weight]["pending_n"] == 30


def test_step_without_registered_graph_weight_raises_or_warns(gen):
    lin = nn.Linear(5, 3)
    x = torch.randn(10, 5, generator=gen)
    for mode, ctx in (("raise", pytest.raises(RuntimeError, match="attach")),
                      ("warn", pytest.warns(RuntimeWarning, match="no graph weight registered"))):
        opt = GraphMuon(lin.parameters(), lr=0.01, unregistered=mode)
        lin(x).sum().backward()
        with ctx:
            opt.step()
    explicit = GraphMuon(lin.parameters(), lr=0.01, use_graphmuon=False)  # AdamW on purpose: no complaint
    lin(x).sum().backward()
    explicit.step()
    with pytest.raises(ValueError, match="unregistered"):
        GraphMuon(lin.parameters(), unregistered="silent")


def test_attach_twice_keeps_one_hook_per_weight(gen):
    model, x, ei, y = _model_and_data(gen)
    opt = GraphMuon(model.parameters(), lr=0.01)
    attach(model, opt)
    attach(model, opt)
    assert len(model.c1._forward_pre_hooks) == 1 and len(model.c2._forward_pre_hooks) == 1
    model(x, ei)
    assert opt.state[model.c1.lin.weight]["pending_n"] == 30  # captured once, not twice
    twice, *_ = _model_and_data(gen)
    once, *_ = _model_and_data(gen)
    o1, o2 = GraphMuon(twice.parameters(), lr=0.02), GraphMuon(once.parameters(), lr=0.02)
    attach(twice, o1)
    attach(twice, o1)
    attach(once, o2)
    _steps(twice, o1, x, ei, y, 3)
    _steps(once, o2, x, ei, y, 3)
    for p, q in zip(twice.parameters(), once.parameters()):
        assert torch.equal(p, q)


def test_float64_model_resumes_identically(gen):
    model, x, ei, y = _model_and_data(gen)
    model, x = model.double(), x.double()
    opt = GraphMuon(model.parameters(), lr=0.02, precond_every=2)
    attach(model, opt)
    _steps(model, opt, x, ei, y, 3)
    assert opt.state[model.c1.lin.weight]["sigma"].dtype == torch.float64
    saved_model, saved_opt = copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict())
    _steps(model, opt, x, ei, y, 3)
    model2, *_ = _model_and_data(gen)
    model2 = model2.double()
    model2.load_state_dict(saved_model)
    opt2 = GraphMuon(model2.parameters(), lr=0.02, precond_every=2)
    attach(model2, opt2)
    opt2.load_state_dict(saved_opt)
    _steps(model2, opt2, x, ei, y, 3)
    for p, q in zip(model.parameters(), model2.parameters()):
        assert torch.equal(p, q)


def test_precond_every_reuses_sigma_between_refreshes(gen):
    model, x, ei, y = _model_and_data(gen)
    opt = GraphMuon(model.parameters(), lr=0.02, precond_every=3)
    attach(model, opt)
    w = model.c1.lin.weight
    seen = []
    for _ in range(7):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x, ei), y).backward()
        seen.append(int(opt.state[w].get("pending_n", 0)))  # captured before this step?
        opt.step()
    assert seen == [30, 0, 0, 30, 0, 0, 30]  # captures only before the refresh steps 0, 3, 6


def test_cov_rows_subsample_is_unbiased_on_repeated_rows(gen):
    lin = nn.Linear(4, 3, bias=False)
    base = torch.randn(50, 4, generator=gen, dtype=torch.float64)
    x = base.repeat_interleave(4, dim=0).float()  # 200 rows; stride 4 picks each base row exactly once
    full, sub = GraphMuon(lin.parameters(), cov_rows=None), GraphMuon(lin.parameters(), cov_rows=50)
    for opt in (full, sub):
        opt.register(lin.weight, lin, name="w")
        lin(x)
        opt.remove_hooks()
    torch.testing.assert_close(sub.state[lin.weight]["pending_xtx"], full.state[lin.weight]["pending_xtx"],
                               rtol=1e-5, atol=1e-4)
    assert sub.state[lin.weight]["pending_n"] == 200


@pytest.mark.parametrize("kw,err", [({"lr": "0.01"}, TypeError), ({"lr": float("nan")}, ValueError),
                                    ({"momentum": True}, TypeError), ({"precond_every": 2.5}, TypeError),
                                    ({"cov_rows": 0}, ValueError), ({"ns_dtype": "bf16"}, TypeError),
                                    ({"adamw_betas": (0.9, "x")}, TypeError), ({"nesterov": 1}, TypeError)])
def test_hyperparameter_types_are_checked_by_name(kw, err):
    name = next(iter(kw))
    with pytest.raises(err, match=name):
        GraphMuon([nn.Parameter(torch.ones(2, 2))], **kw)
