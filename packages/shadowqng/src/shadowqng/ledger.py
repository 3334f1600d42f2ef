"""A shot ledger: every circuit execution of every method, counted the same way."""

from __future__ import annotations

from collections import defaultdict


class ShotLedger:
    """Cumulative circuits and shots, by kind (``gradient``, ``shadow``, ``rng``, ``metric``, ...).

    One circuit run with ``s`` shots counts as 1 circuit and ``s`` shots; a classical-shadow
    snapshot is one circuit with one shot (each snapshot has its own random basis).

    Example:
        >>> led = ShotLedger()
        >>> led.record("gradient", circuits=2 * 48, shots=2 * 48 * 100)
        >>> led.shots
        9600
    """

    def __init__(self):
        self._circuits: dict[str, int] = defaultdict(int)
        self._shots: dict[str, int] = defaultdict(int)

    def record(self, kind: str, *, circuits: int, shots: int) -> None:
        if not isinstance(kind, str) or not kind:
            raise TypeError(f"kind must be a non-empty str, got {kind!r}")
        for name, v in (("circuits", circuits), ("shots", shots)):
            if isinstance(v, bool) or int(v) != v or v < 0:
                raise ValueError(f"{name} must be a non-negative int, got {v!r}")
        self._circuits[kind] += int(circuits)
        self._shots[kind] += int(shots)

    @property
    def shots(self) -> int:
        return sum(self._shots.values())

    @property
    def circuits(self) -> int:
        return sum(self._circuits.values())

    def by_kind(self) -> dict[str, dict[str, int]]:
        return {k: {"circuits": self._circuits[k], "shots": self._shots[k]} for k in self._circuits}

    def __repr__(self) -> str:
        return f"ShotLedger(shots={self.shots}, circuits={self.circuits}, by_kind={self.by_kind()})"
