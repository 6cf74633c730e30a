"""The simulator: an independent discrete-event re-execution of a plan.

Every algorithm's plan is judged here, under the spec's cost model, with the formulas of
`planner.cost` (compute times, `latency + bytes / bandwidth`, static memory). No algorithm
can bend it: it ignores a plan's own start times except to check them.

Semantics
---------
- **Compute.** An op runs on its device alone, without preemption, for `compute[i][d]`
  seconds. It starts when its device is free and every input is on the device.
- **Order.** With `Plan.order`, each device runs its ops in that order. Entries that
  contradict the placement (an op listed on another device, twice, or not at all) are
  `order` violations; the simulator drops them and runs left-out ops last, in topological
  order. An order that contradicts precedence deadlocks; the simulator does not hang: the
  stuck ops get start and end `inf` and an `order` violation names, per device, the op
  that cannot start and the inputs it waits for. Without an order, devices dispatch
  dynamically: a device that is idle starts, among its ops whose inputs have all arrived,
  the one that became ready earliest, ties by larger upward rank (`upward_rank`: mean
  compute plus the longest mean-cost path to an exit, from `cost.Costs`), then by smaller
  op index. `default_order` returns the order this produces.
- **Transfers.** A producer's tensor goes to another device at most once; it carries the
  largest `bytes` of the edges to consumers there, is ready when the producer ends, and
  takes `latency + bytes / bandwidth`. Consumers wait for its arrival; same-device edges
  cost nothing. Transfers are committed in order of ready time, ties by (producer
  topological position, destination device index). A zero-time op that starts at an
  instant commits its transfers after those committed when it started, one rule for
  dispatch and explicit orders: an instant is processed in rounds (the completions due,
  in topological order, then each idle device starts one op), and a zero-time op
  completes in the round after the one where dispatch would start it, the round its
  inputs became known in (or the instant's first, for inputs that arrive then) or its
  device's previous op completed in, whichever is later. So a placement run by dispatch
  and the same placement in the order dispatch gave run the same schedule, to the bit.
  - `none`: a transfer starts when it is ready.
  - `link`: each directed link carries one transfer at a time; a transfer starts at the
    earliest time >= ready at which its link is free after every previously committed
    transfer on it (no backfilling).
  - `device`: the same, but the resource is the pair of both endpoints' single channels
    (each device's sends and receives share one channel).
- **Memory.** `static`: `cost.static_memory` (params and outputs of a device's ops, each
  tensor it receives once, its largest temp). `liveness`: params are resident from t=0;
  an op's output and temp are allocated at its start; the temp is freed at its end; the
  output is freed once nothing reads it: when its last consumer on the same device and
  its last transfer that carries bytes (which reads it until it ends) have both ended,
  whichever it has (never with neither, as a sink, nor while a transfer it owes never
  happens: no link; `memory._frees`); a received copy is allocated when its
  transfer starts and freed when the last consumer of it there finishes. Each buffer
  occupies memory on the half-open interval [allocated, freed): at one instant frees
  happen before allocations. But a zero-time op holds its temp, its output and its
  inputs at its instant, where those intervals are empty or ended: the instant also
  counts its level less what the op that starts after the zero-time ones (with a
  duration) allocates, plus the buffers freed there that zero-time ops there read, plus
  their largest temp (never above the static figure).
  `memory_peak_bytes` is the figure the plan's memory model constrains (static total, or
  liveness peak); a device whose figure exceeds its `memory` is a `memory` violation
  naming the device's ops (`static`) or the ops whose buffers are live at the peak
  (`liveness`).
- **Violations** (all are reported, not just the first): `unplaced` (no device, or one
  that does not exist: the op never runs, so its consumers never start), `order`, `pin`,
  `colocation` (a group split across devices), `unrunnable` (an op on a device where its
  compute time is infinite: it never ends), `no_link` (a transfer between devices with no
  link: it never arrives), `memory`; and, when the plan carries intended start times
  (`Plan.start_s`, checked but never trusted), `overlap` (two ops on one device whose
  intended runs `[start, start + compute)` intersect) and `precedence` (an op intended to
  start before an input could arrive even without contention: the producer's intended
  end, plus on another device `latency + bytes / bandwidth` of the copy sent there).
  Comparisons of intended times allow a relative slack of 1e-9. Times that never happen
  are `inf` (`null` in JSON).

Everything is deterministic: no randomness, no dependence on set or dict iteration order.

The package: `results` (what a simulation returns), `checks` (placement, pins,
colocation, the order's entries, a deadlocked order, intended start times), `tables` (the
graph as the loop reads it, and the upward rank dispatch breaks ties by), `run` (the event
loop), `memory` (static bytes and liveness, from a finished run). `simulate` below runs
them in the order their data exists.

Twin: `planner.fastsim._kernel` repeats `run.Run.execute`, `memory.static_bytes` and
`memory.liveness` step for step; a rule changed here is changed there in the same commit,
and the battery that pins the rules (`tests/trust/test_rules_pinned.py`, and
`tests/test_fastsim.py` for bit-identity) runs over both.
"""

from __future__ import annotations

import gc
import itertools
import math
import operator
from collections.abc import Sequence

import numpy as np

from ..cost import INF, costs
from ..model import Problem, Spec
from ..plan import Plan
from ..units import format_bytes_of
from .checks import (
    check_colocations,
    check_pins,
    check_start_times,
    deadlock,
    normalize_order,
    valid_placement,
)
from .memory import liveness, static_bytes
from .results import KINDS, SimResult, Transfer, Violation
from .run import Run
from .tables import upward_rank

__all__ = [
    "KINDS", "SimResult", "Transfer", "Violation", "default_order", "simulate", "upward_rank",
]


def default_order(problem: Problem, placement: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """The per-device order dynamic dispatch produces for `placement` (see module doc)."""
    return simulate(problem, Plan(tuple(placement))).order


def simulate(problem: Problem, plan: Plan) -> SimResult:
    """Re-execute `plan` on `problem` under its cost model and check every rule; a `plan`
    that is no `Plan` (a `Result`, a placement by names) is a `TypeError` that says what
    to pass (before: AttributeError: ... has no attribute 'placement')."""
    if not isinstance(problem, Problem):  # before: AttributeError: 'Spec' ... 'graph'
        how = ": pick one of its plans with .plan(NAME)" if isinstance(problem, Spec) else ""
        raise TypeError(f"`problem` must be a planner.Problem, not a "
                        f"{type(problem).__name__}{how}")
    if not isinstance(plan, Plan):
        raise TypeError(f"`plan` must be a planner.plan.Plan, not {_not_a_plan(plan)}")
    enabled = gc.isenabled()
    # hundreds of thousands of small acyclic objects: the cyclic collector only costs time
    gc.disable()
    try:
        return _simulate(problem, plan)
    finally:
        if enabled:
            gc.enable()


def _not_a_plan(value: object) -> str:
    """`value`'s type, and the `Plan` it holds or stands for, where there is one."""
    kind = type(value).__name__
    if isinstance(getattr(value, "plan", None), Plan):
        return f"a {kind}: its plan is .plan (a Result's figures are its own: .simulation)"
    if isinstance(value, dict):
        return (f"a {kind}: for a placement by names, planner.read_plan(problem, "
                '{"placement": {OP: DEVICE, ...}}) simulates it')
    return kind


# complex: the checks around one run, in the order their data exists: placement, pins,
# colocation, unrunnable, order, no link, deadlock, start times, memory; then the result
def _simulate(problem: Problem, plan: Plan) -> SimResult:
    g = problem.graph
    devices = problem.cluster.devices
    n, m = len(g.ops), len(devices)
    c = costs(problem)
    found: dict[str, list[Violation]] = {k: [] for k in KINDS}

    place = valid_placement(problem, plan, found["unplaced"])
    check_pins(problem, place, found["pin"])
    check_colocations(problem, place, found["colocation"])
    compute = c.compute
    if -1 in place:
        dur = [compute[i][d] if d >= 0 else INF for i, d in enumerate(place)]
    else:  # new float objects side by side: the table's are spread over memory
        dur = np.fromiter(map(operator.getitem, compute, place), np.float64, n).tolist()
    if INF in dur:
        for i, d in enumerate(place):
            if d >= 0 and dur[i] == INF:
                found["unrunnable"].append(Violation(
                    "unrunnable", f"op `{g.ops[i].name}` cannot run on `{devices[d].name}`: "
                    "its compute time there is infinite", (i,), (d,)))

    seqs = None
    if plan.order is not None:
        seqs = normalize_order(problem, plan.order, place, found["order"])
    run = Run(problem, place, dur, seqs)
    run.execute()
    for i, di, dj in run.no_link:
        found["no_link"].append(Violation(
            "no_link", f"the output of `{g.ops[i].name}` cannot reach "
            f"`{devices[dj].name}`: there is no link from `{devices[di].name}` to "
            f"`{devices[dj].name}`", (i,), (di, dj)))
    if run.stuck:
        found["order"].append(deadlock(problem, run))
    if plan.start_s is not None:
        check_start_times(problem, plan.start_s, place, dur, found)

    static = static_bytes(g, place, m)
    if problem.memory_model == "liveness":
        peak, timeline, live = liveness(problem, place, run)
    else:
        peak = list(static)
        timeline = [((0.0, b),) for b in static]
        live = None
    what = "liveness peak" if live is not None else "static"
    for d, dev in enumerate(devices):
        if peak[d] > dev.memory_bytes:
            ops = live[d] if live is not None else tuple(i for i in range(n) if place[i] == d)
            needs, holds = format_bytes_of(peak[d], dev.memory_bytes)
            found["memory"].append(Violation(
                "memory", f"device `{dev.name}` needs {needs} ({what}) but its memory is "
                f"{holds}",
                tuple(sorted(ops)), (d,)))

    busy = [0.0] * m
    for d, seq in enumerate(run.order):
        busy[d] = math.fsum(map(dur.__getitem__, seq)) if seq else 0.0
    makespan = max(run.end, default=0.0)
    transfers = tuple(map(tuple.__new__, itertools.repeat(Transfer), zip(
        run.tr_src, run.tr_sd, run.tr_dd, run.tr_bytes, run.tr_start, run.tr_end, strict=True)))
    return SimResult(
        makespan_s=makespan,
        placement=tuple(place),
        order=tuple(tuple(s) for s in run.order),
        start_s=tuple(run.start),
        end_s=tuple(run.end),
        transfers=transfers,
        busy_s=tuple(busy),
        memory_static_bytes=tuple(static),
        memory_peak_bytes=tuple(peak),
        memory_timeline=tuple(timeline),
        violations=tuple(v for k in KINDS for v in found[k]),
    )
