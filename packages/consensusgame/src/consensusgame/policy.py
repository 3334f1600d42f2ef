"""The policy interface shared by learned policies and the hand-crafted baselines.

A :class:`Policy` is two pure functions and a pytree of arguments (network parameters, or
``()``), so a rollout ``jit``s and ``vmap``s and a new set of parameters does not recompile::

    carry = policy.init(policy.args, key, obs, state)
    actions, carry = policy.act(policy.args, key, obs, state, carry)

``obs`` is the ``(N, 3K + 2)`` observation and ``state`` the :class:`~consensusgame.game.EnvState`
(baselines read neighbour counts from it; learned policies read only ``obs``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple


class Policy(NamedTuple):
    init: Callable[..., Any]
    act: Callable[..., Any]
    args: Any = ()
    name: str = "policy"

    @property
    def static(self) -> tuple:
        """The hashable part (the functions) used as a ``jit`` static argument."""
        return (self.init, self.act)


def _no_carry(args, key, obs, state):
    return ()


def stateless(fn: Callable, name: str = "policy", args: Any = ()) -> Policy:
    """Wrap ``fn(args, key, obs, state) -> actions`` as a :class:`Policy` without carry."""

    def act(args, key, obs, state, carry):
        return fn(args, key, obs, state), carry

    return Policy(_no_carry, act, args, name)
