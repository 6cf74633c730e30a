"""The JSON report of a simulated plan: what `planner simulate --json` and `solve --json` print.

Stable key order, ints for bytes, times in seconds as floats; times that never happen
(`inf`) are `null`. The simulator (`planner.simulate`) computes; this module only writes
its result down, with the lower bounds (`planner.bounds`) beside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..bounds import Bounds
from ..model import Problem
from ..simulate import SimResult, Violation


def _t(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _listed(ran: Sequence[int], planned: Sequence[Sequence[int]] | None, d: int, n: int
            ) -> Sequence[int]:
    """Device `d`'s ops for the report: `ran`, or the plan's order where `ran` stops short
    of it (`report_json`)."""
    if planned is None or d >= len(planned):
        return ran
    order = tuple(planned[d])
    whole = len(set(order)) == len(order) and all(
        isinstance(i, int) and 0 <= i < n for i in order)  # as the simulator read it
    return order if whole and len(order) > len(ran) and order[:len(ran)] == tuple(ran) else ran


def violations_json(problem: Problem, violations: Iterable[Violation]) -> list[dict[str, Any]]:
    """The report's `violations`: each rule broken, with the names of its ops and devices."""
    ops, devs = problem.graph.ops, problem.cluster.devices
    return [{"kind": v.kind, "message": v.message, "ops": [ops[i].name for i in v.ops],
             "devices": [devs[d].name if 0 <= d < len(devs) else None for d in v.devices]}
            for v in violations]


def report_json(problem: Problem, result: SimResult, bounds: Bounds,
                planned: Sequence[Sequence[int]] | None = None) -> dict[str, Any]:
    """The `planner simulate --json` object: stable key order, ints for bytes.

    Times are seconds as floats; times that never happen (`inf`) are `null`. `ratio` is
    makespan / lower bound (`null` when either is not a positive finite number). A
    device's `ops` are those it ran, in order; where `planned` (the plan's order) holds
    more after them (a deadlocked order), the plan's, so that the report reads back as
    that plan (before: none ran, no device listed an op, and the report read back as an
    order that left every op out).
    """
    ops = problem.graph.ops
    devs = problem.cluster.devices

    def dev_name(d: int) -> str | None:
        return devs[d].name if 0 <= d < len(devs) else None

    ms, lb = result.makespan_s, bounds.makespan_s
    ratio = ms / lb if math.isfinite(ms) and math.isfinite(lb) and lb > 0 else None
    schedule = sorted(range(len(ops)), key=lambda i: (result.start_s[i],
                                                      result.placement[i], i))
    return {
        "plan": problem.name,
        "memory_model": problem.memory_model,
        "contention": problem.contention,
        "makespan_s": _t(ms),
        "lower_bound_s": _t(lb),
        "ratio": ratio,
        "feasible": result.feasible,
        "bounds": bounds.to_json(),
        "violations": violations_json(problem, result.violations),
        "placement": {op.name: dev_name(d) for op, d in zip(ops, result.placement, strict=True)},
        "devices": [
            {
                "name": dev.name,
                "ops": [ops[i].name for i in _listed(result.order[d], planned, d, len(ops))],
                "busy_s": _t(result.busy_s[d]),
                "memory_static_bytes": int(result.memory_static_bytes[d]),
                "memory_peak_bytes": int(result.memory_peak_bytes[d]),
                "memory_cap_bytes": int(dev.memory_bytes),
            }
            for d, dev in enumerate(devs)
        ],
        "schedule": [
            {
                "op": ops[i].name,
                "device": dev_name(result.placement[i]),
                "start_s": _t(result.start_s[i]),
                "end_s": _t(result.end_s[i]),
            }
            for i in schedule
        ],
        "transfers": [
            {
                "src_op": ops[tr.src_op].name,
                "src_device": devs[tr.src_device].name,
                "dst_device": devs[tr.dst_device].name,
                "bytes": int(tr.bytes),
                "start_s": _t(tr.start_s),
                "end_s": _t(tr.end_s),
            }
            for tr in result.transfers
        ],
    }
