import os

# cheap XLA CPU compiles (the suite is dominated by compile time); set before JAX starts, added to any
# flags already there (tools/run_tests.py -j 2 sets XLA_FLAGS to pin XLA's threads: with setdefault the
# suite then compiled at full optimisation, 198 s instead of ~60 s cold)
from consensusgame.run import FAST_COMPILE_FLAGS  # noqa: E402  (imports no JAX backend)

_flags = os.environ.get("XLA_FLAGS", "")
if "xla_backend_optimization_level" not in _flags:
    os.environ["XLA_FLAGS"] = f"{_flags} {FAST_COMPILE_FLAGS.format(level=0)}".strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from consensusgame import ConsensusGame, graphs  # noqa: E402
from consensusgame.game import EnvParams  # noqa: E402
from consensusgame.ippo import PPOConfig, make_train  # noqa: E402
from consensusgame.run import compile_cache  # noqa: E402

compile_cache(True)  # repeated runs of the suite reuse compiled executables

# one compiled, vmapped training shared by the whole suite: (seed, conformity, other_play)
GRID = [(0, 0.5, True), (0, 0.9, True), (0, 0.9, False)]
SMOKE_PPO = dict(num_updates=150, num_envs=4, epochs=2, minibatches=2, hidden=16)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def ba10():
    return graphs.barabasi_albert(10, 3, seed=0)


@pytest.fixture(scope="session")
def env10(ba10):
    return ConsensusGame(ba10, n_options=2, signal_accuracy=0.65, conformity=0.5, rounds=5)


@pytest.fixture(scope="session")
def trained_grid(env10):
    """N=10, K=2, 150 PPO updates for each job of GRID, trained in one jitted vmap (one compile)."""
    train = jax.jit(jax.vmap(make_train(env10, PPOConfig(**SMOKE_PPO))))
    keys = jax.vmap(jax.random.key)(jnp.asarray([s for s, _, _ in GRID]))
    params = EnvParams(jnp.asarray([c for _, c, _ in GRID], jnp.float32), jnp.full((len(GRID),), 0.65, jnp.float32))
    stacked, curves = train(keys, params, jnp.asarray([op for *_, op in GRID]))
    return {job: (jax.tree.map(lambda x, i=i: x[i], stacked), np.asarray(curves[i])) for i, job in enumerate(GRID)}


@pytest.fixture(scope="session")
def trained_op(trained_grid):
    """The brief's smoke: other-play at c = 0.5."""
    return trained_grid[(0, 0.5, True)]
