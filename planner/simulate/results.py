"""What a simulation returns: the result, its transfers and the rules a plan broke."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["KINDS", "SimResult", "Transfer", "Violation", "given_plan_hints"]

#: violation kinds, in the order a report lists them
KINDS: tuple[str, ...] = (
    "unplaced", "order", "pin", "colocation", "unrunnable", "no_link", "precedence",
    "overlap", "memory",
)


#: how to mend a given plan (`planner simulate`'s) that breaks a rule of a kind
_MEND = {
    "unplaced": "place every op on a device of the cluster (`place OPS on DEVICE`, or the "
                "--placement file)",
    "pin": "put each pinned op on its pin's device (in the `place` statements or the "
           "--placement file)",
    "colocation": "put the ops of each `colocate` on one device (in the `place` statements or "
                  "the --placement file)",
    "unrunnable": "put each op on a device whose kind it has a compute time for",
    "memory": "move ops off the device that overflows, or give it more `memory`",
}


def given_plan_hints(violations: tuple[Violation, ...]) -> tuple[str, ...]:
    """One hint per kind of rule a given plan breaks, for the kinds a hint can mend."""
    kinds = {v.kind for v in violations}
    return tuple(_MEND[k] for k in KINDS if k in kinds and k in _MEND)


@dataclass(frozen=True, slots=True)
class Violation:
    """One way a plan breaks the rules, with the ops and devices involved (indices)."""

    kind: str
    message: str
    ops: tuple[int, ...]
    devices: tuple[int, ...]


class Transfer(NamedTuple):
    """One tensor sent from `src_device` (where `src_op` ran) to `dst_device`.

    A named tuple: a run makes one per copy (about 90,000 in a 100,000-op plan), and a
    tuple is built in C where a frozen dataclass sets each field in Python.
    """

    src_op: int
    src_device: int
    dst_device: int
    bytes: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class SimResult:
    """What a simulation found: times, transfers, busy time, memory, violations.

    Per-op tuples are indexed by op, per-device tuples by device. Times that never happen
    (stuck or downstream of an impossible op or transfer) are `inf`; an unplaced op has
    device -1 in `placement`.
    """

    makespan_s: float
    placement: tuple[int, ...]
    #: per device, the ops in the order they ran
    order: tuple[tuple[int, ...], ...]
    start_s: tuple[float, ...]
    end_s: tuple[float, ...]
    #: in commit order
    transfers: tuple[Transfer, ...]
    busy_s: tuple[float, ...]
    memory_static_bytes: tuple[int, ...]
    #: the figure the plan's memory model constrains (static total or liveness peak)
    memory_peak_bytes: tuple[int, ...]
    #: per device, (time, bytes) steps under the plan's memory model (one step for static)
    memory_timeline: tuple[tuple[tuple[float, int], ...], ...]
    violations: tuple[Violation, ...]

    @property
    def feasible(self) -> bool:
        """Whether the plan broke no rule (then its makespan is finite)."""
        return not self.violations

    def ran(self) -> Iterator[tuple[int, int, float, float]]:
        """(device, op, start, end) of each op that ran (finite times), device by device
        in the order they ran: what a timeline or a trace draws."""
        for d, seq in enumerate(self.order):
            for i in seq:
                s, e = self.start_s[i], self.end_s[i]
                if math.isfinite(s) and math.isfinite(e):
                    yield d, i, s, e

    def sent(self) -> list[Transfer]:
        """The transfers that happened (finite times), in commit order."""
        return [t for t in self.transfers if math.isfinite(t.start_s) and math.isfinite(t.end_s)]
