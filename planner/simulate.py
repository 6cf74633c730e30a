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
  output is freed when the last consumer on the same device finishes (never, without
  one); a received copy is allocated when its transfer starts and freed when the last
  consumer of it there finishes. Each buffer occupies memory on the half-open interval
  [allocated, freed): at one instant frees happen before allocations, and a buffer freed
  at the instant it is allocated never counts. `memory_peak_bytes` is the figure the
  plan's memory model constrains (static total, or liveness peak); a device whose figure
  exceeds its `memory` is a `memory` violation naming the device's ops (`static`) or the
  ops whose buffers are live at the peak (`liveness`).
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

Twin: `planner.fastsim._kernel` repeats `_Run.execute`, `_static_bytes` and `_liveness` step
for step; a rule changed here is changed there in the same commit, and the battery that pins
the rules (`tests/trust/test_rules_pinned.py`, and `tests/test_fastsim.py` for bit-identity)
runs over both.
"""

from __future__ import annotations

import gc
import itertools
import math
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from heapq import heappop, heappush
from typing import NamedTuple

import numpy as np

from .cost import INF, columns, copies_array, costs, static_memory, transfer_seconds_array
from .model import Graph, Op, Problem, derived
from .plan import Plan
from .units import format_bytes, format_seconds

__all__ = [
    "SimResult", "Transfer", "Violation", "default_order", "simulate", "upward_rank",
]

#: violation kinds, in the order a report lists them
KINDS: tuple[str, ...] = (
    "unplaced", "order", "pin", "colocation", "unrunnable", "no_link", "precedence",
    "overlap", "memory",
)
_CONTENTION_CODE = {"none": 0, "link": 1, "device": 2}
_REL_TOL = 1e-9  # relative slack when checking a plan's own (rounded) start times


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


def upward_rank(problem: Problem) -> tuple[float, ...]:
    """Per op, its upward rank under mean costs (HEFT; Topcuoglu et al., 2002).

    `rank(i) = mean_compute(i) + max over edges i->j of (mean_transfer(bytes) + rank(j))`,
    with the means of `cost.Costs` (mean transfer is linear in bytes, so it is computed as
    mean latency + bytes * mean seconds per byte). Cached on the problem: it does not
    depend on the placement.
    """
    return derived(problem, "_upward_rank", lambda: _upward_rank(problem))


def _upward_rank(problem: Problem) -> tuple[float, ...]:
    g = problem.graph
    c = costs(problem)
    lat = c.mean_latency
    inv = c.mean_inv_bandwidth
    t = _tables(g)
    e_dst, e_bytes = t.e_dst, t.e_bytes
    succ = g.successors
    mean = c.mean_compute
    rank = [0.0] * len(g.ops)
    for i in reversed(t.topo):
        best = 0.0
        for k in succ[i]:
            v = lat + e_bytes[k] * inv + rank[e_dst[k]]
            if v > best:  # noqa: PLR1730 (hot loop: a call to max() costs more)
                best = v
        rank[i] = mean(i) + best
    return tuple(rank)


def default_order(problem: Problem, placement: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """The per-device order dynamic dispatch produces for `placement` (see module doc)."""
    return simulate(problem, Plan(tuple(placement))).order


def simulate(problem: Problem, plan: Plan) -> SimResult:
    """Re-execute `plan` on `problem` under its cost model and check every rule."""
    enabled = gc.isenabled()
    # hundreds of thousands of small acyclic objects: the cyclic collector only costs time
    gc.disable()
    try:
        return _simulate(problem, plan)
    finally:
        if enabled:
            gc.enable()


# complex: the checks around one run, in the order their data exists: placement, pins,
# colocation, unrunnable, order, no link, deadlock, start times, memory; then the result
def _simulate(problem: Problem, plan: Plan) -> SimResult:
    g = problem.graph
    devices = problem.cluster.devices
    n, m = len(g.ops), len(devices)
    c = costs(problem)
    found: dict[str, list[Violation]] = {k: [] for k in KINDS}

    place = _valid_placement(problem, plan, found["unplaced"])
    _check_pins(problem, place, found["pin"])
    _check_colocations(problem, place, found["colocation"])
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
        seqs = _normalize_order(problem, plan.order, place, found["order"])
    run = _Run(problem, place, dur, seqs)
    run.execute()
    for i, di, dj in run.no_link:
        found["no_link"].append(Violation(
            "no_link", f"the output of `{g.ops[i].name}` cannot reach "
            f"`{devices[dj].name}`: there is no link from `{devices[di].name}` to "
            f"`{devices[dj].name}`", (i,), (di, dj)))
    if run.stuck:
        found["order"].append(_deadlock(problem, run))
    if plan.start_s is not None:
        _check_start_times(problem, plan.start_s, place, dur, found)

    static = _static_bytes(g, place, m)
    if problem.memory_model == "liveness":
        peak, timeline, live = _liveness(problem, place, run)
    else:
        peak = list(static)
        timeline = [((0.0, b),) for b in static]
        live = None
    what = "liveness peak" if live is not None else "static"
    for d, dev in enumerate(devices):
        if peak[d] > dev.memory_bytes:
            ops = live[d] if live is not None else tuple(i for i in range(n) if place[i] == d)
            found["memory"].append(Violation(
                "memory", f"device `{dev.name}` needs {format_bytes(peak[d])} "
                f"({what}) but its memory is {format_bytes(dev.memory_bytes)}",
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


# -- checks ---------------------------------------------------------------------------


def _valid_placement(problem: Problem, plan: Plan, out: list[Violation]) -> list[int]:
    """The plan's placement with every missing or out-of-range device as -1."""
    ops = problem.graph.ops
    m = len(problem.cluster.devices)
    given = plan.placement
    if len(given) == len(ops):  # the common case, without a look at each op
        try:
            place = list(map(operator.index, given))
        except TypeError:
            pass
        else:
            if not place or (min(place) >= 0 and max(place) < m):
                return place
    place = [-1] * len(ops)
    for i, op in enumerate(ops):
        raw = given[i] if i < len(given) else None
        try:
            d = operator.index(raw)  # type: ignore[arg-type]
        except TypeError:
            d = -1
        if 0 <= d < m:
            place[i] = d
        elif raw is None or d == -1:
            out.append(Violation("unplaced", f"op `{op.name}` is not placed on any device",
                                 (i,), ()))
        else:
            out.append(Violation(
                "unplaced", f"op `{op.name}` is placed on device {d}, which does not exist "
                f"(the cluster has {m} devices)", (i,), ()))
    if len(given) > len(ops):
        out.append(Violation(
            "unplaced", f"the placement has {len(given)} entries but the graph has "
            f"{len(ops)} ops", (), ()))
    return place


def _check_pins(problem: Problem, place: list[int], out: list[Violation]) -> None:
    ops, devs = problem.graph.ops, problem.cluster.devices
    for i, d in sorted(problem.pins.items()):
        if place[i] >= 0 and place[i] != d:  # unplaced ops are reported as such
            out.append(Violation(
                "pin", f"op `{ops[i].name}` is pinned to `{devs[d].name}` but placed on "
                f"`{devs[place[i]].name}`", (i,), (d, place[i])))


def _check_colocations(problem: Problem, place: list[int], out: list[Violation]) -> None:
    ops, devs = problem.graph.ops, problem.cluster.devices
    for group in problem.graph.colocations:
        used = sorted({place[i] for i in group if place[i] >= 0})
        if len(used) > 1:
            names = _names([ops[i].name for i in group])
            where = ", ".join(f"`{devs[d].name}`" for d in used)
            out.append(Violation("colocation", f"colocated ops {names} are split across "
                                 f"{where}", tuple(group), tuple(used)))


def _names(names: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(f"`{x}`" for x in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _normalize_order(problem: Problem, order: Sequence[Sequence[int]], place: list[int],
                     out: list[Violation]) -> list[list[int]]:
    """Per-device sequences that hold exactly the ops placed there.

    Entries that contradict the placement (wrong device, repeated, unknown op or device)
    are dropped and reported; placed ops the order leaves out run last, in topological
    order.
    """
    ops, devs = problem.graph.ops, problem.cluster.devices
    n, m = len(ops), len(devs)
    whole = _whole_order(order, place, n, m)
    if whole is not None:
        return whole
    seqs: list[list[int]] = [[] for _ in range(m)]
    listed = [False] * n
    for d, seq in enumerate(order):
        for entry in seq:
            try:
                i = operator.index(entry)
            except TypeError:
                i = -1
            if not 0 <= i < n:
                out.append(Violation("order", f"the order lists op {entry!r}, which does not "
                                     "exist", (), (d,) if d < m else ()))
            elif d >= m:
                out.append(Violation("order", f"the order lists `{ops[i].name}` on device "
                                     f"{d}, which does not exist", (i,), ()))
            elif place[i] < 0:
                continue  # reported as unplaced
            elif place[i] != d:
                out.append(Violation(
                    "order", f"the order lists `{ops[i].name}` on `{devs[d].name}` but it "
                    f"is placed on `{devs[place[i]].name}`", (i,), (d, place[i])))
            elif listed[i]:
                out.append(Violation("order", f"the order lists `{ops[i].name}` twice on "
                                     f"`{devs[d].name}`", (i,), (d,)))
            else:
                listed[i] = True
                seqs[d].append(i)
    for i in problem.graph.topological_order:
        d = place[i]
        if d >= 0 and not listed[i]:
            out.append(Violation("order", f"the order of `{devs[d].name}` leaves out "
                                 f"`{ops[i].name}` (run last)", (i,), (d,)))
            seqs[d].append(i)
    return seqs


def _whole_order(order: Sequence[Sequence[int]], place: list[int], n: int, m: int
                 ) -> list[list[int]] | None:
    """The order as lists when it lists every placed op once, on its device (an
    algorithm's order always does), checked with numpy; else None."""
    try:  # anything but sequences of indices goes entry by entry
        if len(order) > m and any(len(seq) for seq in order[m:]):
            return None
        seqs = [list(map(operator.index, seq)) for seq in order[:m]]
    except TypeError:
        return None
    seqs += [[] for _ in range(m - len(seqs))]
    pl = np.array(place, dtype=np.int64)
    try:
        flat = np.fromiter(itertools.chain.from_iterable(seqs), np.int64, sum(map(len, seqs)))
    except OverflowError:  # an index beyond int64: not an op
        return None
    if len(flat) != int((pl >= 0).sum()) or (len(flat) and not 0 <= flat.min() <= flat.max() < n):
        return None
    device = np.repeat(np.arange(m, dtype=np.int64), [len(seq) for seq in seqs])
    if not (pl[flat] == device).all() or (len(flat) and np.bincount(flat).max() > 1):
        return None
    ops = flat.tolist()  # new ints side by side (see `_GraphTables`)
    at = np.cumsum([0] + [len(seq) for seq in seqs]).tolist()
    return [ops[a:b] for a, b in itertools.pairwise(at)]


def _deadlock(problem: Problem, run: _Run) -> Violation:
    """The `order` violation naming each device's stuck op and the inputs it waits for."""
    ops, devs = problem.graph.ops, problem.cluster.devices
    edges, pred = problem.graph.edges, problem.graph.predecessors
    heads: list[int] = []
    parts: list[str] = []
    for d, i in run.stuck:
        heads.append(i)
        waits = sorted({edges[k].src for k in pred[i] if not run.done[edges[k].src]})
        parts.append(f"`{ops[i].name}` on `{devs[d].name}` waits for "
                     + _names([ops[w].name for w in waits], 3))
    shown = "; ".join(parts[:3]) + (f"; and {len(parts) - 3} more" if len(parts) > 3 else "")
    return Violation("order", f"the order contradicts precedence and deadlocks: {shown}",
                     tuple(heads), tuple(d for d, _ in run.stuck))


def _check_start_times(problem: Problem, start_s: Sequence[float], place: list[int],
                       dur: list[float], found: dict[str, list[Violation]]) -> None:
    """Check a plan's intended start times for overlap and precedence (see module doc).

    Vectorised over ops and edges (one sort for the overlaps, one for the largest copy per
    producer and device); only the violations are visited one by one, in the order of
    devices and start times (overlap) and of edges (precedence).
    """
    g, devs = problem.graph, problem.cluster.devices
    ops = g.ops
    n, m = len(ops), len(devs)
    if len(start_s) != n:
        found["order"].append(Violation("order", f"the plan gives {len(start_s)} start "
                                        f"times for {n} ops", (), ()))
        return
    c = costs(problem)
    start = np.array(start_s, dtype=np.float64)
    end = start + np.array(dur, dtype=np.float64)
    pl = np.array(place, dtype=np.int64)
    with np.errstate(invalid="ignore"):  # inf - inf where an op never ends: no violation
        # per device, by (start, end, op): a zero-time op first
        on = np.flatnonzero((pl >= 0) & np.isfinite(start))
        seq = on[np.lexsort((on, end[on], start[on], pl[on]))]
        a, b = seq[:-1], seq[1:]
        limit = end[a]  # b meant to start early: before a ends, beyond the tolerance
        early = (pl[a] == pl[b]) & (start[b] < limit - _REL_TOL * np.maximum(1.0, abs(limit)))
        for k in np.flatnonzero(early).tolist():
            i, j = int(a[k]), int(b[k])
            found["overlap"].append(Violation(
                "overlap", f"ops `{ops[i].name}` and `{ops[j].name}` overlap on "
                f"`{devs[place[i]].name}`: `{ops[j].name}` is meant to start at "
                f"{format_seconds(start_s[j])}, before `{ops[i].name}` ends at "
                f"{format_seconds(float(end[i]))}", (i, j), (place[i],)))

        cols = columns(g)
        src, dst = cols.src, cols.dst
        d_src, d_dst = pl[src], pl[dst]
        # the tensor to a device carries the largest bytes of the edges to it (an
        # unplaced consumer's device, -1, is a destination of its own)
        _, slot, top = copies_array(src, d_dst + 1, cols.nbytes, m + 1)
        largest = top[slot]
        ends = end[src]
        check = (d_src >= 0) & (d_dst >= 0) & np.isfinite(ends)
        local = d_src == d_dst
        ds, dd = np.maximum(d_src, 0), np.maximum(d_dst, 0)
        link = np.array(c.latency, dtype=np.float64).reshape(m, m)[ds, dd] if m else ends
        inv = np.array(c.inv_bandwidth, dtype=np.float64).reshape(m, m)[ds, dd] if m else ends
        # same device: the producer's end
        arrive = np.where(local, ends + 0.0, ends + transfer_seconds_array(link, inv, largest))
        early = check & np.isfinite(arrive) & (
            start[dst] < arrive - _REL_TOL * np.maximum(1.0, abs(arrive)))
    for k in np.flatnonzero(early).tolist():
        i, j = int(src[k]), int(dst[k])
        di, dj = place[i], place[j]
        what = "ends" if di == dj else "can arrive"
        found["precedence"].append(Violation(
            "precedence", f"op `{ops[j].name}` is meant to start at "
            f"{format_seconds(start_s[j])}, before its input from `{ops[i].name}` "
            f"{what} at {format_seconds(float(arrive[k]))}", (i, j),
            (di,) if di == dj else (di, dj)))


# -- the event loop -------------------------------------------------------------------


class _Run:
    """One execution: plain lists and a heap, no per-event objects beyond heap tuples.

    The loop (`execute`) takes the events of one instant as a batch, in (time, key) order;
    each event is one of the named steps below, which fastsim/_kernel.py's `execute` takes
    in the same order under the same names, as functions or as marked inline sections
    where a call per event cost too much there (tests/test_fastsim.py checks that they
    agree).
    A step copies the fields it uses into locals: the per-event work stays free of repeated
    attribute look-ups.
    """

    def __init__(self, problem: Problem, place: list[int], dur: list[float],
                 seqs: list[list[int]] | None) -> None:
        g = problem.graph
        n, m = len(g.ops), len(problem.cluster.devices)
        self.problem = problem
        self.place = place
        self.dur = dur
        self.seqs = seqs
        self.n, self.m = n, m
        self.start = [INF] * n
        self.end = [INF] * n
        self.done = [False] * n
        self.order: list[list[int]] = [[] for _ in range(m)]
        self.tr_src: list[int] = []
        self.tr_sd: list[int] = []
        self.tr_dd: list[int] = []
        self.tr_bytes: list[int] = []
        self.tr_start: list[float] = []
        self.tr_end: list[float] = []
        self.no_link: list[tuple[int, int, int]] = []
        self.stuck: list[tuple[int, int]] = []  # (device, op at the head of its order)
        # the graph and the links, as the loop reads them
        tables = _tables(g)
        self.consumer, self.edge_bytes = tables.e_dst, tables.e_bytes
        self.key_of, self.op_of = tables.pos, tables.topo  # event key <-> op (topo order)
        self.successors = g.successors
        c = costs(problem)
        self.latency, self.inv_bandwidth = c.latency, c.inv_bandwidth
        self.contention = _CONTENTION_CODE[problem.contention]
        # the run's state
        self.pending = [len(x) for x in g.predecessors]  # inputs not yet known, per op
        self.ready = [0.0] * n  # when all inputs known so far are on the op's device
        self.events: list[tuple[float, int]] = []  # (time, key): key < n ends op_of[key]
        self.link_free = [0.0] * (m * m)
        self.channel_free = [0.0] * m
        self.largest = [-1] * m  # scratch: largest bytes to each device for one producer
        self.arrival = [0.0] * m  # scratch: arrival at each device for one producer
        self.dynamic = seqs is None
        # static order: the next op of each device's order and when the device is free; a
        # zero-time op's completion waits for the batch after the one where dispatch would
        # start it: the batch its inputs became known in (or the first of the instant they
        # arrive at), and the one its device's previous op completed in
        self.next_in_order = [0] * m
        self.free_at = [0.0] * m
        self.known_batch = [0] * n
        self.known_time = [0.0] * n
        self.done_batch = [0] * n
        self.previous_on_device = [-1] * n
        self.deferred: list[int] = []
        for seq in seqs or ():
            for k in range(1, len(seq)):
                self.previous_on_device[seq[k]] = seq[k - 1]
        # dynamic dispatch: per device, idle or not and a heap of (ready, -rank, op); the
        # devices whose heap or state changed in this batch
        self.idle = [True] * m
        self.queue: list[list[tuple[float, float, int]]] = [[] for _ in range(m)]
        self.negrank = [-r for r in upward_rank(problem)] if self.dynamic else []
        self.dirty: list[int] = []
        self.is_dirty = [False] * m

    def execute(self) -> None:
        """Run to completion (or to a deadlock of a static order)."""
        self._seed()
        events, dirty, deferred = self.events, self.dirty, self.deferred
        n, op_of, dur, place = self.n, self.op_of, self.dur, self.place
        dynamic = self.dynamic
        t = 0.0
        batch = first_batch = 0
        while events or dirty:
            if events and not dirty:
                if events[0][0] != t:
                    first_batch = batch
                t = events[0][0]
            while events and events[0][0] == t:
                key = heappop(events)[1]
                if (not dynamic and key < n and dur[op_of[key]] == 0.0
                        and place[op_of[key]] >= 0
                        and self._zero_time_waits(op_of[key], t, batch, first_batch)):
                    deferred.append(key)
                elif key >= n:
                    self._becomes_ready(key - n, t)
                else:
                    self._complete(op_of[key], t, batch)
            if dirty:
                self._dispatch(t)
            for key in deferred:
                heappush(events, (t, key))
            deferred.clear()
            batch += 1
        if not dynamic:
            seqs, next_in_order = self.seqs, self.next_in_order
            for d in range(self.m):
                if next_in_order[d] < len(seqs[d]):  # type: ignore[index]
                    self.stuck.append((d, seqs[d][next_in_order[d]]))  # type: ignore[index]

    def _seed(self) -> None:
        """The first events: unplaced ops never end (their consumers never get inputs); the
        ops without inputs queue at t = 0 (dynamic) or start in order (static)."""
        place, events, key_of = self.place, self.events, self.key_of
        for i in range(self.n):
            if place[i] < 0:
                heappush(events, (INF, key_of[i]))
        if not self.dynamic:
            for d in range(self.m):
                self._try_start(d)
            return
        pending, negrank = self.pending, self.negrank
        for i in range(self.n):
            d = place[i]
            if d >= 0 and not pending[i]:
                self.queue[d].append((0.0, negrank[i], i))
        for d in range(self.m):
            q = self.queue[d]
            q.sort()
            if q:
                self._wake(d)

    def _zero_time_waits(self, i: int, t: float, batch: int, first_batch: int) -> bool:
        """Static order: whether zero-time op `i`'s completion, due now, waits a batch."""
        trig = self.known_batch[i] if self.known_time[i] == t else first_batch
        p_i = self.previous_on_device[i]
        if p_i >= 0 and self.end[p_i] == t:
            trig = max(trig, self.done_batch[p_i]) if self.done[p_i] else batch
        return batch <= trig  # dispatch would start it in this batch or later

    def _wake(self, d: int) -> None:
        """Dispatch looks at device `d` at the end of this batch."""
        if not self.is_dirty[d]:
            self.is_dirty[d] = True
            self.dirty.append(d)

    def _becomes_ready(self, j: int, t: float) -> None:
        """Dynamic: op `j`'s last input arrives now."""
        d = self.place[j]
        heappush(self.queue[d], (t, self.negrank[j], j))
        self._wake(d)

    def _complete(self, i: int, t: float, batch: int) -> None:
        """Op `i` ends at `t`: its device is free, its outputs go to its consumers."""
        self.done[i] = True
        self.done_batch[i] = batch
        di = self.place[i]
        if self.dynamic and di >= 0:
            self.idle[di] = True
            self._wake(di)
        out = self.successors[i]
        if out:
            self._send_outputs(i, di, out, t)
            self._deliver(i, di, out, t, batch)

    def _send_outputs(self, i: int, di: int, out: Sequence[int], t: float) -> None:
        """One transfer of op `i`'s output to each other device that consumes it (the
        largest edge's bytes), in device order; `arrival[d]` is when it lands on `d`.
        `cost.copies` and `cost.transfer_seconds` inline, as the kernel has them: a call
        per transfer alone costs the whole run 3% (10,000 ops), `copies`' dict far more."""
        place, consumer, edge_bytes = self.place, self.consumer, self.edge_bytes
        largest, arrival = self.largest, self.arrival
        touched: list[int] = []
        for k in out:
            dj = place[consumer[k]]
            if dj != di and dj >= 0:
                b = edge_bytes[k]
                cur = largest[dj]
                if cur < 0:
                    largest[dj] = b
                    touched.append(dj)
                elif b > cur:
                    largest[dj] = b
        if not touched:
            return
        touched.sort()
        lrow = self.latency[di] if di >= 0 else None
        irow = self.inv_bandwidth[di] if di >= 0 else None
        mode, m = self.contention, self.m
        link_free, channel_free = self.link_free, self.channel_free
        for dj in touched:
            b = largest[dj]
            largest[dj] = -1
            if lrow is None or t == INF:
                arrival[dj] = INF
                continue
            lt = lrow[dj]
            if lt == INF:
                arrival[dj] = INF
                self.no_link.append((i, di, dj))
                continue
            dt = lt + b * irow[dj]  # type: ignore[index]
            if mode == 0:
                s = t
            elif mode == 1:
                lk = di * m + dj
                s = link_free[lk]
                s = max(s, t)
                link_free[lk] = s + dt
            else:
                s = channel_free[di]
                s = max(s, channel_free[dj])
                s = max(s, t)
                channel_free[di] = channel_free[dj] = s + dt
            fin = s + dt
            arrival[dj] = fin
            self.tr_src.append(i)
            self.tr_sd.append(di)
            self.tr_dd.append(dj)
            self.tr_bytes.append(b)
            self.tr_start.append(s)
            self.tr_end.append(fin)

    def _deliver(self, i: int, di: int, out: Sequence[int], t: float, batch: int) -> None:
        """Op `i`'s consumers get its output (now on its device, at `arrival` elsewhere);
        one whose inputs are all known starts (static) or queues (dynamic)."""
        place, consumer, ready, pending = self.place, self.consumer, self.ready, self.pending
        arrival, dynamic = self.arrival, self.dynamic
        for k in out:
            j = consumer[k]
            dj = place[j]
            a = t if dj == di else arrival[dj]
            if a > ready[j]:  # ready[j] = max(ready[j], a), without the call
                ready[j] = a
            pending[j] -= 1
            if pending[j] or dj < 0:
                continue
            if not dynamic:
                self.known_batch[j] = batch
                self.known_time[j] = t
                if self.seqs[dj][self.next_in_order[dj]] == j:  # type: ignore[index]
                    self._try_start(dj)
            elif ready[j] <= t:
                heappush(self.queue[dj], (ready[j], self.negrank[j], j))
                self._wake(dj)
            else:
                heappush(self.events, (ready[j], self.n + j))

    def _dispatch(self, t: float) -> None:
        """Dynamic: each woken device that is idle starts the first op of its queue."""
        queue, idle, is_dirty, dur = self.queue, self.idle, self.is_dirty, self.dur
        for d in self.dirty:
            is_dirty[d] = False
            q = queue[d]
            if idle[d] and q:
                i = heappop(q)[2]
                idle[d] = False
                self.start[i] = t
                f = t + dur[i]
                self.end[i] = f
                self.order[d].append(i)
                heappush(self.events, (f, self.key_of[i]))
        self.dirty.clear()

    def _try_start(self, d: int) -> None:
        """Static order: start every head of `d`'s order whose inputs are all known."""
        seq = self.seqs[d]  # type: ignore[index]
        pending, ready, dur = self.pending, self.ready, self.dur
        k = self.next_in_order[d]
        f = self.free_at[d]
        while k < len(seq):
            i = seq[k]
            if pending[i]:
                break
            s = ready[i]
            if not s > f:  # s = max(f, ready[i]) without the call, NaN and all
                s = f
            f = s + dur[i]
            self.start[i] = s
            self.end[i] = f
            self.order[d].append(i)
            heappush(self.events, (f, self.key_of[i]))
            k += 1
        self.next_in_order[d] = k
        self.free_at[d] = f


# -- memory ---------------------------------------------------------------------------


def _static_bytes(graph: Graph, place: list[int], m: int) -> list[int]:
    """`cost.static_memory`, ignoring unplaced ops and the edges that touch them."""
    if all(d >= 0 for d in place):
        return static_memory(graph, place, m)
    if m == 0:
        return []
    ops = tuple(op if d >= 0 else Op(op.name) for op, d in zip(graph.ops, place, strict=True))
    edges = tuple(e for e in graph.edges if place[e.src] >= 0 and place[e.dst] >= 0)
    return static_memory(Graph(graph.name, ops, edges), [max(d, 0) for d in place], m)


def _liveness(problem: Problem, place: list[int], run: _Run
              ) -> tuple[list[int], list[tuple[tuple[float, int], ...]], list[tuple[int, ...]]]:
    """Per device: liveness peak, (time, bytes) timeline, and the ops live at the peak.

    The live ops (whose output, temp or received copy is held at the first peak instant)
    are only collected for devices over their cap.

    Buffers live on [alloc, free). Because frees come before allocations at one instant,
    only the net change per instant matters: the level after an instant is the highest
    within it. Vectorised with numpy (one sort of all alloc and free events).
    """
    g = problem.graph
    m = len(problem.cluster.devices)
    if m == 0:
        return [], [], []
    caps = [dev.memory_bytes for dev in problem.cluster.devices]
    cols = columns(g)
    src, dst = cols.src, cols.dst
    params, output, temp = _int64_sizes(g)
    pl = np.array(place, dtype=np.int64)
    start = np.array(run.start, dtype=float)
    end = np.array(run.end, dtype=float)
    placed = pl >= 0
    # per producer, the last end of its consumers on its own device (-1: none there)
    d_src, d_dst = pl[src], pl[dst]
    local = (d_dst >= 0) & (d_src == d_dst)
    last_local = np.full(len(pl), -1.0)
    np.maximum.at(last_local, src[local], end[dst[local]])
    # per (producer, other device), the last end of its consumers there
    remote = (d_dst >= 0) & (d_src != d_dst)
    r_keys = src[remote] * m + d_dst[remote]
    uniq, inv = np.unique(r_keys, return_inverse=True)
    last_remote = np.full(len(uniq), -1.0)
    np.maximum.at(last_remote, inv, end[dst[remote]])

    runs = placed & np.isfinite(start)
    out_free = np.where(last_local >= 0.0, last_local, INF)
    tr_src = np.array(run.tr_src, dtype=np.int64)
    tr_dd = np.array(run.tr_dd, dtype=np.int64)
    tr_start = np.array(run.tr_start, dtype=float)
    tr_free = (last_remote[np.searchsorted(uniq, tr_src * m + tr_dd)]
               if len(tr_src) else np.zeros(0))
    # buffers: device, alloc, free, bytes, op
    dev = np.concatenate([pl[runs], pl[runs], tr_dd])
    alloc = np.concatenate([start[runs], start[runs], tr_start])
    free = np.concatenate([out_free[runs], end[runs], tr_free])
    size = np.concatenate([output[runs], temp[runs],
                           np.array(run.tr_bytes, dtype=np.int64)])
    owner = np.concatenate([np.flatnonzero(runs), np.flatnonzero(runs), tr_src])
    keep = (size > 0) & np.isfinite(alloc) & (free > alloc)
    dev, alloc, free, size, owner = dev[keep], alloc[keep], free[keep], size[keep], owner[keep]
    base = np.zeros(m, dtype=np.int64)
    np.add.at(base, pl[placed], params[placed])
    freed = np.isfinite(free)
    ev_d = np.concatenate([np.arange(m), dev, dev[freed]])
    ev_t = np.concatenate([np.zeros(m), alloc, free[freed]])
    ev_s = np.concatenate([base, size, -size[freed]])
    order = np.lexsort((ev_t, ev_d))
    ev_d, ev_t, ev_s = ev_d[order], ev_t[order], ev_s[order]
    new = np.ones(len(ev_d), dtype=bool)
    new[1:] = (ev_d[1:] != ev_d[:-1]) | (ev_t[1:] != ev_t[:-1])
    first = np.flatnonzero(new)
    g_d, g_t = ev_d[first], ev_t[first]
    g_net = np.add.reduceat(ev_s, first)
    level = np.cumsum(g_net)
    lo = np.searchsorted(g_d, np.arange(m))  # every device has its t=0 group
    hi = np.append(lo[1:], len(g_d))
    before = np.where(lo > 0, level[np.maximum(lo - 1, 0)], 0)
    level -= before[g_d]
    shown = g_net != 0
    shown[lo] = True
    peaks: list[int] = []
    timelines: list[tuple[tuple[float, int], ...]] = []
    live: list[tuple[int, ...]] = []
    for d in range(m):
        seg = slice(lo[d], hi[d])
        lv = level[seg]
        k = int(np.argmax(lv))
        peaks.append(int(lv[k]))
        top_t = g_t[seg][k]
        mask = shown[seg]
        timelines.append(tuple(zip(g_t[seg][mask].tolist(), lv[mask].tolist(), strict=True)))
        if peaks[-1] > caps[d]:
            on = (dev == d) & (alloc <= top_t) & (top_t < free)
            live.append(tuple(np.unique(owner[on]).tolist()))
        else:
            live.append(())
    return peaks, timelines, live


def _int64_sizes(graph: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per op params, output and temp bytes as int64 (as numpy makes them of a model built
    in code with float sizes: truncated; a size beyond int64 raises OverflowError)."""
    cols = columns(graph)
    if cols.integral:
        return cols.params, cols.output, cols.temp
    ops = graph.ops
    return tuple(np.array([getattr(op, a) for op in ops], dtype=np.int64)  # type: ignore[return-value]
                 for a in ("params_bytes", "output_bytes", "temp_bytes"))


@dataclass(frozen=True)
class _GraphTables:
    """Per-graph lists the event loop indexes (cached on the graph), made from the graph's
    `cost.Columns` with `tolist()`, which lays out new ints side by side: the model's own
    (an edge's `dst`, the topological order's) are spread over memory, and at 100,000 ops
    reading them costs more per op than at 10,000."""

    #: per edge, its consumer and bytes
    e_dst: list[int]
    e_bytes: list[int]
    #: the ops in `Graph.topological_order`, and each op's position in it
    topo: list[int]
    pos: list[int]


def _tables(graph: Graph) -> _GraphTables:
    return derived(graph, "_sim_tables", lambda: _build_tables(graph))


def _build_tables(graph: Graph) -> _GraphTables:
    cols = columns(graph)
    n = len(graph.ops)
    e_bytes = (cols.nbytes.tolist() if cols.integral
               else [e.bytes for e in graph.edges])  # a float or huge size stays as given
    topo = np.array(graph.topological_order, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    pos[topo] = np.arange(n)
    return _GraphTables(cols.dst.tolist(), e_bytes, topo.tolist(), pos.tolist())
