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
        self._uncounted: set[str] = set()

    def record(self, kind: str, *, circuits: int, shots: int, counted: bool = True) -> None:
        """Charge ``circuits`` executions and ``shots`` shots to ``kind``. ``counted=False``: the
        circuits ran on an analytic device, so their shots are unknown (``shots`` must be 0) and
        :attr:`complete` turns ``False``."""
        if not isinstance(kind, str) or not kind:
            raise TypeError(f"kind must be a non-empty str, got {kind!r}")
        for name, v in (("circuits", circuits), ("shots", shots)):
            if isinstance(v, bool) or int(v) != v or v < 0:
                raise ValueError(f"{name} must be a non-negative int, got {v!r}")
        if not counted:
            if shots:
                raise ValueError(f"shots must be 0 when counted=False, got {shots}")
            self._uncounted.add(kind)
        self._circuits[kind] += int(circuits)
        self._shots[kind] += int(shots)

    @property
    def complete(self) -> bool:
        """``False`` when some circuits ran analytically and their shots could not be counted."""
        return not self._uncounted

    @property
    def uncounted(self) -> list[str]:
        """Kinds with analytic (uncounted) shots."""
        return sorted(self._uncounted)

    @property
    def shots(self) -> int:
        return sum(self._shots.values())

    @property
    def circuits(self) -> int:
        return sum(self._circuits.values())

    def by_kind(self) -> dict[str, dict[str, int]]:
        return {k: {"circuits": self._circuits[k], "shots": self._shots[k]} for k in self._circuits}

    def __repr__(self) -> str:
        extra = f", uncounted={self.uncounted}" if self._uncounted else ""
        return f"ShotLedger(shots={self.shots}, circuits={self.circuits}, by_kind={self.by_kind()}{extra})"
