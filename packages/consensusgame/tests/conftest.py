import os

# cheap XLA CPU compiles (the suite is dominated by compile time); set before JAX starts
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from consensusgame import ConsensusGame, graphs, train_ippo  # noqa: E402
from consensusgame.run import compile_cache  # noqa: E402

compile_cache(True)  # repeated runs of the suite reuse compiled executables


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
def trained_op(env10):
    """The brief's smoke: N=10, K=2, 150 PPO updates, other-play."""
    params, curve = train_ippo(env10, key=jax.random.key(0), other_play=True, num_updates=150, num_envs=4,
                               epochs=2, minibatches=2, hidden=16)
    return params, curve
