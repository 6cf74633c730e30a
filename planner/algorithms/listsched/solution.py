"""A plan's start times and its `Solution`: `retime` (start times the simulator accepts)
and `solution` (each device ordered by the algorithm's start times, then re-timed).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from ...plan import Plan
from ..base import Solution, Status
from .instance import Instance

__all__ = ["retime", "solution"]


def retime(inst: Instance, placement: Sequence[int], sequence: Sequence[int]) -> list[float]:
    """Earliest start times of a placement and an op sequence under contention `none`.

    The algorithms estimate an edge's transfer from its own bytes; the cost model sends a
    producer's tensor to a device once, with the largest bytes of its edges to consumers
    there. Re-timing with that rule makes a plan's start times ones the simulator accepts
    (no op meant to start before its input can arrive). `sequence` lists every op once, in
    an order consistent with precedence; each device runs its ops in that order (every
    algorithm's schedule sorted by its own start times is such a sequence). O(V + E).
    """
    n = inst.n
    lat, inv, comp = inst.lat, inst.inv, inst.compute
    pred = inst.pred
    sent: dict[tuple[int, int], int] = {}
    for j in range(n):
        dev = placement[j]
        for p, nbytes in pred[j]:
            if placement[p] != dev and nbytes > sent.get((p, dev), -1):
                sent[(p, dev)] = nbytes
    start = [0.0] * n
    end = [0.0] * n
    free = [0.0] * inst.m
    for j in sequence:
        dev = placement[j]
        t = free[dev]
        for p, _ in pred[j]:
            src = placement[p]
            there = end[p] if src == dev else end[p] + (
                lat[src][dev] + sent[(p, dev)] * inv[src][dev])
            if there > t:  # noqa: PLR1730 (hot loop: a call to max() costs more)
                t = there
        start[j] = t
        end[j] = free[dev] = t + comp[j][dev]
    return start


def solution(inst: Instance, placement: Sequence[int], start: Sequence[float], algorithm: str,
             status: Status = "feasible", **info: Any) -> Solution:
    """A `Solution` for an algorithm's schedule: each device ordered by the algorithm's start
    times (ties by finish time, so a zero-time op keeps its place before a long op that
    started at the same instant, then by topological position), start times re-timed by
    `retime`.

    `info["estimate_s"]` is the algorithm's own makespan estimate (contention `none`, per-edge
    transfers); the makespan users see is always the simulator's.
    """
    m, comp, topo_pos = inst.m, inst.compute, inst.topo_pos
    # at one start time, a zero-time op ran first: sort by finish before topological
    # position (by position alone, a constant could queue behind a 25 ms op it preceded)
    finish = [start[i] + comp[i][placement[i]] for i in range(inst.n)]
    sequence = sorted(range(inst.n), key=lambda i: (start[i], finish[i], topo_pos[i]))
    seqs: list[list[int]] = [[] for _ in range(m)]
    for i in sequence:
        seqs[placement[i]].append(i)
    est = max(finish, default=0.0)
    timed = retime(inst, placement, sequence)
    plan = Plan(tuple(placement), tuple(map(tuple, seqs)), tuple(timed), algorithm)
    return Solution(plan, status, MappingProxyType({"estimate_s": est, **info}))
