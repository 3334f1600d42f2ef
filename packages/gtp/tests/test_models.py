import numpy as np
import torch
from gtp import DynamicsEnsemble, ValueFunction
from gtp.data import n_step_targets


def test_batched_ensemble_equals_per_member(rng):
    torch.manual_seed(0)
    dyn = DynamicsEnsemble(4, 2, members=5, hidden=32)
    o, a = torch.as_tensor(rng.normal(size=(16, 4)), dtype=torch.float32), torch.zeros(16, 2).uniform_(-1, 1)
    batched = dyn(o, a)
    assert batched.shape == (5, 16, 4)
    for e in range(5):
        torch.testing.assert_close(batched[e], dyn.member_forward(e, o, a), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dyn.step(o, a), batched.mean(0))


def _chain(n=5, gamma=0.9):
    """Deterministic chain s -> s+1, reward 1 on leaving the last state (terminal), one-hot states."""
    eye = np.eye(n, dtype=np.float32)
    obs, nxt, r, term = [], [], [], []
    for _ in range(200):
        for s in range(n):
            obs.append(eye[s])
            nxt.append(eye[min(s + 1, n - 1)])
            r.append(1.0 if s == n - 1 else 0.0)
            term.append(s == n - 1)
    P = np.zeros((n, n))
    for s in range(n - 1):
        P[s, s + 1] = 1
    R = np.zeros(n)
    R[-1] = 1
    exact = np.linalg.solve(np.eye(n) - gamma * P, R)
    d = {"observations": np.array(obs), "next_observations": np.array(nxt), "rewards": np.array(r, np.float32),
         "terminals": np.array(term), "actions": np.zeros((len(obs), 1), np.float32)}
    return d, eye, exact


def test_fitted_td_on_chain_matches_exact_value():
    gamma = 0.9
    d, eye, exact = _chain(gamma=gamma)
    torch.manual_seed(0)
    v = ValueFunction(5, hidden=32)
    v.fit(d["observations"], d["rewards"], d["next_observations"], d["terminals"], gamma=gamma, steps=600,
          generator=torch.Generator().manual_seed(0), tau=0.1)
    with torch.no_grad():
        got = v(torch.as_tensor(eye)).numpy()
    np.testing.assert_allclose(got, exact, atol=0.05)


def test_n_step_targets_on_chain():
    gamma = 0.9
    d, eye, exact = _chain(gamma=gamma)
    d["timeouts"] = np.zeros(len(d["rewards"]), bool)
    ret, boot, disc = n_step_targets(d, gamma, 3)
    # from state 0: rewards 0,0,0 then bootstrap at state 3 with γ³
    assert ret[0] == 0 and np.allclose(boot[0], eye[3]) and np.isclose(disc[0], gamma**3)
    # from state 3: r=0 then terminal reward 1 at state 4, no bootstrap
    assert np.isclose(ret[3], gamma) and disc[3] == 0
    # n-step target with the exact value is the exact value (Bellman consistency)
    vb = np.array([exact[np.argmax(b)] for b in boot])
    np.testing.assert_allclose(ret + disc * vb, exact[np.argmax(d["observations"], 1)], atol=1e-6)
