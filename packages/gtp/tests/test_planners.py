import gymnasium as gym
import numpy as np
import pytest
from gtp import CEMPlanner, GTPPlanner, LearnedModels, MPPIPlanner, PriorPolicy, RandomShootingPlanner, evaluate
from gtp.experiments import RandomPolicy


def _planners(m, n=8):
    return {
        "gtp": GTPPlanner(m.prior, m.dynamics, m.reward, m.value, n_samples=n),
        "gtp_both": GTPPlanner(m.prior, m.dynamics, m.reward, m.value, n_samples=n, refine="both"),
        "gtp_none": GTPPlanner(m.prior, m.dynamics, m.reward, m.value, n_samples=n, refine=None),
        "mppi": MPPIPlanner(m.dynamics, m.reward, m.value, n_samples=n),
        "cem": CEMPlanner(m.dynamics, m.reward, m.value, n_samples=n),
        "rs": RandomShootingPlanner(m.dynamics, m.reward, m.value, n_samples=n),
        "prior": PriorPolicy(m.prior),
    }


def test_planning_never_steps_the_environment(pendulum_models, monkeypatch):
    """During planning the environment's step is a sentinel that raises."""
    env = gym.make("Pendulum-v1")
    obs, _ = env.reset(seed=0)
    cls = type(env.unwrapped)
    real_step = cls.step
    state = {"planning": False}

    def sentinel(self, action):
        if state["planning"]:
            raise AssertionError("the planner stepped the environment")
        return real_step(self, action)

    monkeypatch.setattr(cls, "step", sentinel)
    for name, p in _planners(pendulum_models).items():
        p.reset()
        for _ in range(3):
            state["planning"] = True
            a = p.act(obs)
            state["planning"] = False
            assert a.shape == (1,), name
            obs, *_ = env.step(a)


def test_batched_plans_and_warm_start(pendulum_models):
    m = pendulum_models
    obs = np.stack([gym.make("Pendulum-v1").reset(seed=i)[0] for i in range(3)])
    for name, p in _planners(m).items():
        chunk, diag = p.plan(obs)
        assert chunk.shape[0] == 3 and chunk.shape[-1] == 1 and np.isfinite(chunk).all(), name
        assert np.all(chunk >= -2 - 1e-5) and np.all(chunk <= 2 + 1e-5), name
        assert "plan_ms" in diag
    gtp_ = GTPPlanner(m.prior, m.dynamics, m.reward, m.value, n_samples=8)
    c1, d1 = gtp_.plan(obs)
    assert d1["rollouts"] == 8 * 3  # equal budget: iterations x N
    assert gtp_._prev is not None and gtp_._warm(3).shape == (3, m.prior.horizon, 1)
    np.testing.assert_allclose(gtp_._warm(3)[:, :-1].numpy(), c1[:, 1:])  # the warm start is c1 shifted
    gtp_.reset()
    assert gtp_._prev is None


def test_smoke_gtp_beats_random_actions(pendulum_models):
    """The brief's smoke: Pendulum, 2k transitions, 200 prior steps; the planner beats random actions."""
    m = pendulum_models
    p = GTPPlanner(m.prior, m.dynamics, m.reward, m.value, n_samples=16)
    a = evaluate("Pendulum-v1", p, episodes=3, seed=5, max_steps=60)
    b = evaluate("Pendulum-v1", RandomPolicy([-2.0], [2.0], 0), episodes=3, seed=5, max_steps=60)
    assert a["returns"].mean() > b["returns"].mean()


def test_save_load_roundtrip(pendulum_models, tmp_path):
    m = pendulum_models
    path = m.save(tmp_path / "m.pt")
    m2 = LearnedModels.load(path)
    obs = np.array([1.0, 0.0, 0.5], np.float32)
    outs = []
    for mm in (m, m2):
        p = GTPPlanner(mm.prior, mm.dynamics, mm.reward, mm.value, n_samples=8)
        p.seed(3)
        outs.append(p.plan(obs)[0])
    np.testing.assert_array_equal(outs[0], outs[1])
    with pytest.raises(FileNotFoundError):
        LearnedModels.load(tmp_path / "missing.pt")


def test_bad_inputs(pendulum_models):
    m = pendulum_models
    with pytest.raises(ValueError, match="n_samples"):
        GTPPlanner(m.prior, m.dynamics, m.reward, m.value, n_samples=0)
    with pytest.raises(ValueError, match="horizon"):
        MPPIPlanner(m.dynamics, m.reward, m.value, horizon=0)
    with pytest.raises(ValueError, match="refine"):
        GTPPlanner(m.prior, m.dynamics, m.reward, m.value, refine="magic")
    with pytest.raises(TypeError, match="prior"):
        GTPPlanner(m.dynamics, m.dynamics, m.reward, m.value)
    p = GTPPlanner(m.prior, m.dynamics, m.reward, m.value, n_samples=4)
    with pytest.raises(ValueError, match="NaN"):
        p.plan(np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="obs must have shape"):
        p.plan(np.zeros(5))
    with pytest.raises(ValueError, match="episodes"):
        evaluate("Pendulum-v1", p, episodes=0)
    with pytest.raises(TypeError, match="Box"):
        evaluate("CartPole-v1", p, episodes=1)
