"""The game behind JaxMARL's ``MultiAgentEnv`` contract, without depending on ``jaxmarl``.

:class:`MultiAgentConsensusGame` wraps a :class:`~consensusgame.game.ConsensusGame` with the
interface JaxMARL's wrappers and baselines (IPPO, MAPPO) use: ``num_agents``, ``agents``
(``"agent_0"`` …), per-agent ``observation_spaces`` / ``action_spaces`` dicts and the
``observation_space(agent)`` / ``action_space(agent)`` methods, dict-keyed observations, actions,
rewards and dones with ``dones["__all__"]``, ``step_env`` (no reset) and ``step`` that resets
automatically when the episode ends (``reset_state`` as in JaxMARL), ``get_obs`` and
``get_avail_actions``. The spaces are small local copies of JaxMARL's ``Discrete`` and ``Box``
(``sample``, ``contains``, ``n``/``shape``/``dtype``), so this module does not import ``jaxmarl``.

:func:`jaxmarl_env` gives the same game as an instance of ``jaxmarl``'s own ``MultiAgentEnv`` with
``jaxmarl``'s spaces (``pip install paperworks-consensusgame[marl]``), which JaxMARL's wrappers
(``LogWrapper``, ``CTRolloutManager``) and baselines check for; the tests run them on it.

Example:
    >>> env = MultiAgentConsensusGame(ConsensusGame(barabasi_albert(20)))
    >>> obs, state = env.reset(jax.random.key(0))
    >>> acts = {a: env.action_space(a).sample(k) for a, k in zip(env.agents, jax.random.split(key, env.num_agents))}
    >>> obs, state, rewards, dones, infos = env.step(key, state, acts)
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from consensusgame.game import ConsensusGame, EnvParams


class Discrete:
    """Integers ``0 … n−1`` (JaxMARL's ``spaces.Discrete``)."""

    def __init__(self, num_categories: int, dtype=jnp.int32):
        self.n = int(num_categories)
        self.shape = ()
        self.dtype = dtype

    def sample(self, key) -> jax.Array:
        return jax.random.randint(key, self.shape, 0, self.n).astype(self.dtype)

    def contains(self, x) -> jax.Array:
        return jnp.logical_and(x >= 0, x < self.n)


class Box:
    """A box ``[low, high]^shape`` (JaxMARL's ``spaces.Box``)."""

    def __init__(self, low, high, shape: tuple, dtype=jnp.float32):
        self.low, self.high, self.shape, self.dtype = low, high, tuple(shape), dtype

    def sample(self, key) -> jax.Array:
        return jax.random.uniform(key, self.shape, minval=self.low, maxval=self.high).astype(self.dtype)

    def contains(self, x) -> jax.Array:
        return jnp.logical_and(jnp.all(x >= self.low), jnp.all(x <= self.high))


class MultiAgentConsensusGame:
    """JaxMARL-style multi-agent view of a :class:`ConsensusGame` (see the module docstring).

    Args:
        game: the game (a ``ConsensusGame``).
        params: traced game parameters used by every step (default ``game.default_params``).
    """

    def __init__(self, game: ConsensusGame, params: EnvParams | None = None):
        if not isinstance(game, ConsensusGame):
            raise TypeError(f"game must be a ConsensusGame, got {type(game).__name__}")
        self.game = game
        self.params = game.complete_params(params)
        self.num_agents = game.num_agents
        self.agents = [f"agent_{i}" for i in range(self.num_agents)]
        obs_space = Box(0.0, 1.0, (game.obs_dim,))
        act_space = Discrete(game.n_options)
        self.observation_spaces = {a: obs_space for a in self.agents}
        self.action_spaces = {a: act_space for a in self.agents}

    @property
    def name(self) -> str:
        return "ConsensusGame"

    @property
    def agent_classes(self) -> dict:
        return {"agent": self.agents}

    def observation_space(self, agent: str):
        return self.observation_spaces[agent]

    def action_space(self, agent: str):
        return self.action_spaces[agent]

    def _split(self, x) -> dict:
        return {a: x[i] for i, a in enumerate(self.agents)}

    def get_obs(self, state) -> dict:
        return self._split(self.game._obs(state, self.params))

    def get_avail_actions(self, state) -> dict:
        return {a: jnp.ones(self.game.n_options, jnp.bool_) for a in self.agents}

    @partial(jax.jit, static_argnums=(0,))
    def reset(self, key):
        obs, state = self.game.reset(key, self.params)
        return self._split(obs), state

    def step_env(self, key, state, actions: dict):
        acts = jnp.stack([jnp.asarray(actions[a]) for a in self.agents]).astype(jnp.int32)
        obs, state, rew, done, info = self.game.step(key, state, acts, self.params)
        dones = self._split(done)
        dones["__all__"] = info["all_done"]
        return self._split(obs), state, self._split(rew), dones, info

    @partial(jax.jit, static_argnums=(0,))
    def step(self, key, state, actions: dict, reset_state=None):
        """``step_env`` then, when ``dones["__all__"]``, the state and observations of a fresh episode."""
        key, key_reset = jax.random.split(key)
        obs_st, st, rewards, dones, infos = self.step_env(key, state, actions)
        if reset_state is None:
            obs_re, re = self.reset(key_reset)
        else:
            re, obs_re = reset_state, self.get_obs(reset_state)
        state = jax.tree.map(lambda x, y: jax.lax.select(dones["__all__"], x, y), re, st)
        obs = jax.tree.map(lambda x, y: jax.lax.select(dones["__all__"], x, y), obs_re, obs_st)
        return obs, state, rewards, dones, infos


_JAXMARL_CLASS = None


def jaxmarl_env(game: ConsensusGame, params: EnvParams | None = None):
    """The game as a ``jaxmarl.environments.MultiAgentEnv`` (a subclass of it and of
    :class:`MultiAgentConsensusGame`) with ``jaxmarl``'s ``Discrete``/``Box`` spaces, for JaxMARL's
    wrappers and baselines. Needs ``jaxmarl`` (the ``[marl]`` extra)."""
    global _JAXMARL_CLASS
    try:
        from jaxmarl.environments import spaces
        from jaxmarl.environments.multi_agent_env import MultiAgentEnv
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("jaxmarl_env needs jaxmarl: pip install 'paperworks-consensusgame[marl]'") from e
    if _JAXMARL_CLASS is None:
        class JaxMARLConsensusGame(MultiAgentConsensusGame, MultiAgentEnv):
            """:class:`MultiAgentConsensusGame` registered as a JaxMARL ``MultiAgentEnv``."""

            def __init__(self, game, params=None):
                MultiAgentConsensusGame.__init__(self, game, params)
                obs_space = spaces.Box(0.0, 1.0, (game.obs_dim,))
                act_space = spaces.Discrete(game.n_options)
                self.observation_spaces = {a: obs_space for a in self.agents}
                self.action_spaces = {a: act_space for a in self.agents}

        _JAXMARL_CLASS = JaxMARLConsensusGame
    return _JAXMARL_CLASS(game, params)
