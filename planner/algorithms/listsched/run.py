"""What one run of the list-scheduling engine shares with its policies: the run's lists
(`EtfRun`), a device's best pair (`Pair`), `validity`, and the hooks a reservation policy
gives the engine (`Reservation`).

A module below both the engine (`etf`) and the policies (`floating`, `sct`), so that the
policies read and write the run's lists without importing the engine (they did, under
`TYPE_CHECKING`: a cycle).

Twin: `planner.algorithms.listsched._engine_kernel` holds these lists as arrays and repeats
`validity`; the hand-derived battery (`tests/algorithms`, with the `list_engine` fixture)
and `tests/algorithms/test_engine_kernel.py` run over both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from .instance import Instance
from .placer import Placer

__all__ = ["EtfRun", "Pair", "Reservation", "validity"]

#: a device's best pair: (start + slowdown, priority, finish, device, op, start)
Pair = tuple[float, int, float, int, int, float]


class Reservation(NamedTuple):
    """The reservation's hooks into the engine: `on_ready(i, devices, arrivals)` when op `i`
    becomes ready, `reserve(d, pair)` the choice of a reserved device `d` (`pair`: its best
    pair without the reservation), and `on_commit(i, d)` after op `i` is committed to `d`."""

    on_ready: Callable[[int, tuple[int, ...], list[float]], None]
    reserve: Callable[[int, Pair | None], Pair | None]
    on_commit: Callable[[int, int], None]


class EtfRun:
    """The lists of one `etf_schedule` run, shared by the engine's parts and its policies.

    Per op: `start`, `end`, `missing` (inputs not yet done), `unfit_mask` (bitmask of
    devices where it does not fit), `arrivals` (per device, when its inputs arrive there;
    None until it is ready), and for floating members `inputs_done` (when their inputs are
    done). Per device: `avail` (when it is free), the ready set's heaps `arrived` (by
    (slowdown, priority, op)) and `pending` (by (arrival + slowdown, priority, op,
    arrival)), `best_pair` (its cached best pair), `dirty` (whether that pair must be
    chosen again) and `reserved` (the op a policy holds it for, or -1: `sct`). Per group:
    `waiting`, its waiting floating members. `floating` is `inst.floating`, or None with
    `fixed`; `priority` is the ops' priority ranks (`prank`: smaller first); `valid` is
    `validity(self)`. Hot loops alias these to short local names.
    """

    __slots__ = ("arrivals", "arrived", "avail", "best_pair", "dirty", "end", "fixed",
                 "floating", "inputs_done", "inst", "missing", "pending", "placer",
                 "priority", "reserved", "start", "unfit_mask", "unit_best", "unit_time",
                 "valid", "waiting")

    def __init__(self, inst: Instance, placer: Placer, prank: Sequence[int],
                 fixed: Sequence[int] | None) -> None:
        n, m = inst.n, inst.m
        self.inst = inst
        self.placer = placer
        self.priority = prank
        self.fixed = fixed
        self.start = [0.0] * n
        self.end = [0.0] * n
        self.avail = [0.0] * m
        self.missing = [len(p) for p in inst.pred]
        self.unfit_mask = [0] * n
        self.arrivals: list[list[float] | None] = [None] * n
        self.arrived: list[list[tuple[float, int, int]]] = [[] for _ in range(m)]
        self.pending: list[list[tuple[float, int, int, float]]] = [[] for _ in range(m)]
        # the slowdown is 0 with `fixed` and on identical devices (`etf_schedule`)
        self.unit_time, self.unit_best = inst.unit_time, inst.unit_best
        self.best_pair: list[Pair | None] = [None] * m
        self.dirty = [True] * m
        self.reserved = [-1] * m
        # floating members of unbound groups (`floating`): done in advance, in an order
        # consistent with precedence, and committed when their group binds
        self.floating = inst.floating if fixed is None else None
        self.inputs_done = [0.0] * n
        self.waiting: list[list[int]] = [[] for _ in inst.groups]
        self.valid = validity(self)


def validity(run: EtfRun) -> Callable[[int, int], bool]:
    """`valid(i, d)`: whether op `i` may still be committed to device `d` (unplaced, not
    dropped there, and its colocation group unbound or bound to `d`)."""
    group_of = run.inst.group_of
    dev_of, group_dev = run.placer.device_of, run.placer.group_dev
    forb = run.unfit_mask

    def valid(i: int, d: int) -> bool:
        if dev_of[i] >= 0 or (forb[i] >> d) & 1:
            return False
        g = group_of[i]
        return g < 0 or group_dev[g] < 0 or group_dev[g] == d

    return valid
