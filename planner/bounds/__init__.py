"""Lower bounds on the makespan and on the devices a plan needs.

Every bound holds for every plan that respects the problem's pins and colocation groups
(plans that break them are infeasible anyway), under every contention model, because
contention only delays transfers. Costs come from `planner.cost`.

Allowed devices: op `i` may run on `A(i)` (`planner.facts`: the devices where every member
of its colocation group has a finite compute time, narrowed to the group's pin). An op with
no allowed device contributes nothing (no plan of it is valid).

- `critical_path_s`: the longest path with each op at its fastest device, no
  communication. Every path's ops run one after another, each for at least its fastest
  time.
- `work_s`: the sum of fastest times divided by the number of devices. Some device
  carries at least the average load.
- `constrained_path_s`: the longest path where op `i` weighs `min over A(i)` of its time
  and edge `i -> j` weighs 0 if `A(i)` and `A(j)` share a device, else the fastest
  `latency + bytes / bandwidth` from a device of `A(i)` to one of `A(j)`: then the tensor
  must cross, it cannot leave before `i` ends, and it carries at least the edge's bytes.
- `load_s`: the assignment (load) bound. Treat each colocation group as one job `J` with
  time `c_J(d)` = the sum of its members' times on `d ∈ A(J)`; every plan puts each job
  on one allowed device, so its makespan is at least its busiest device's load, which is
  at least the optimum `T*` of the fractional relaxation
  `min T  s.t.  sum_d x_Jd = 1,  sum_J c_J(d) x_Jd <= T,  x >= 0`.
  By LP duality, for every weight vector `y >= 0` with `sum_d y_d = 1`,
  `sum_J min_{d ∈ A(J)} y_d c_J(d) <= T*` (multiply each load constraint by `y_d`, sum,
  and bound each job's share by its cheapest device). We evaluate a few `y` (uniform,
  which gives at least `work_s`; proportional to each device's throughput, which is exact
  for related devices; one-hot, which gives the load of ops that can run only there) and
  improve on them with Kelley's cutting planes (`_best_weights`), which in practice reach
  the LP optimum. The bound is the exact value of the best `y` found, so it is valid even
  where the search stops short. The relaxation may split a job across devices, so
  `load_s` is also at least every job's time on its fastest allowed device (a colocation
  group runs whole on one device).

- `arrival_path_s`: per op `i` and allowed device `d`, a lower bound `EF(i, d)` on when
  `i` can finish if it runs on `d`: `ES(i, d) = max over edges p -> i of min over a in A(p)
  of EF(p, a) + T(a, d)`, `EF(i, d) = ES(i, d) + time(i, d)`, where `T(a, d)` is 0 when
  `a = d` and `latency + bytes / bandwidth` of the edge's bytes otherwise (only `a = d`
  when `p` and `i` are colocated; infinite without a link). Proof by induction in
  topological order: in a valid plan with `p` on `a` and `i` on `d`, `i` starts after
  `p` ends (`>= EF(p, a)`), and when `a != d` after `p`'s tensor crosses `a -> d`, which
  starts after `p` ends and takes at least `T(a, d)` (the copy sent carries at least this
  edge's bytes; contention only delays it). Every op runs somewhere in `A(i)`, so the
  makespan is at least `min over d in A(i) of EF(i, d)` for every `i`. This sees what
  the paths above miss: an input pinned to a CPU behind a slow link delays every GPU op
  after it by the transfer, since running them on the CPU instead costs more.

- `memory_path_s`: transfers forced by memory on a path. Take a path `v_1 -> ... -> v_k`
  and any valid plan; cut the path into maximal runs of consecutive ops on one device. A
  run lies on one device with the whole placement unit of each of its ops, so the least
  bytes of those units together (`planner.facts`, under the plan's memory model) are at
  most the largest device cap; and the tensor of the path edge between two runs crosses
  devices, so the second run starts at least the edge's least transfer time (over the
  distinct, linked device pairs its ends may use; no cut inside a unit) after the first
  ends. So the path takes at least the sum of its ops' fastest times plus the cheapest
  set of cuts that leaves every run within the largest cap (`_cheapest_cuts`, a sliding
  window over the path, O(k log k)). It is evaluated on two paths: the critical path and
  the path holding the most bytes; it exceeds `critical_path_s` only when memory forces a
  path apart, e.g. a ResNet chain whose weights fill more than one device.

- `forced_colocation_s`: edges whose crossing alone would make a path longer than a
  target glue their ends onto one device, where the glued ops run one after another
  (`planner.bounds.forced`, with its proof).

- `ramp_s`: for a time `a`, the work that cannot be done before `a` (each op's least time
  past its longest path in) runs after it on the devices; mirrored, the work that cannot
  be left until after a time, on the reversed graph (`planner.bounds.ramp`, with its
  proof). Devices idle while a narrow graph fills and drains.

`makespan_s` is the largest of them. Memory: `memory_bytes` is a lower bound on the total
bytes a plan's devices must hold together under the plan's memory model
(`planner.facts`, `least_total_bytes`, proved there). `min_devices` is the
fewest devices whose caps sum to at least that (the largest caps first); it is one more
than the cluster has when even all devices together cannot hold it.

Twin: `planner.bounds._kernel` repeats the graph passes (`_passes`) for big graphs;
`tests/test_bounds_kernel.py` compares both on every spec and random problems.
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import compiled
from ..cost import INF, columns, costs, transfer_seconds
from ..facts import Facts, facts
from ..model import Graph, Problem, derived
from ..signals import shielded
from .forced import forced_colocation_bound
from .ramp import head_tail, ramp_bound

__all__ = ["OPTIMAL_GAP", "Bounds", "lower_bound", "relative_gap"]

#: the largest `relative_gap` at which a plan is called `optimal`, whatever algorithm made
#: it and whatever `--gap` let a solver stop at: "optimal" means the makespan (or period)
#: is within (1 + 1e-6) of the bound printed beside it
OPTIMAL_GAP = 1e-6

#: which code runs the graph passes (the two longest paths, the arrival path, the memory
#: path's two heaviest paths): "auto" (compiled, `_kernel`, from `KERNEL_MIN_OPS`, when
#: numba's cache holds them: a command never compiles them, `planner.compiled`),
#: "kernel" (compiled whatever the size) or "reference" (numpy, one level of the graph at
#: a time); the environment variable PLANNER_BOUNDS_ENGINE sets it at import, tests set
#: it directly. Both give the same bounds, bit for bit.
ENGINE = os.environ.get("PLANNER_BOUNDS_ENGINE", "auto")
#: the sizes from which "auto" compiles: (numba not imported yet, imported). Importing numba
#: and loading the cached passes takes 0.4-0.5 s CPU, loading them once numba has run
#: (e.g. the ETF engine's kernel) 0.01-0.05 s, when they save 4-6 us per op of
#: `lower_bound`'s 9-12 (generated graphs of 10k and 100k ops on 8 devices, where a numpy
#: call per level of the graph is most of the cost)
KERNEL_MIN_OPS = (90_000, 5_000)
_passes: Any = None  # `_kernel.passes` once loaded


def prepare() -> float:
    """Import numba and load the compiled passes (`_kernel`) from numba's cache, or compile
    them (once per machine: `python -m planner.bounds` does it ahead); return the seconds,
    0.0 when they are loaded already."""
    global _passes
    if _passes is not None:
        return 0.0
    t0 = time.perf_counter()
    from . import _kernel  # lazy: numba (heavy to import): only when it pays

    one, pair = np.zeros(1), np.zeros((1, 1))
    none = np.zeros(0, dtype=np.int64)
    _kernel.passes(np.zeros(1, np.int64), np.zeros(2, np.int64), none, none, one, one,
                   np.zeros(0), pair, pair, pair, np.zeros(0), np.zeros(0, np.bool_), one,
                   True)
    _passes = _kernel.passes
    return time.perf_counter() - t0


def _compiled(n: int) -> bool:
    """Whether `lower_bound` runs the compiled passes on a graph of `n` ops (`ENGINE`,
    `KERNEL_MIN_OPS`); loads them then."""
    if ENGINE == "reference":
        return False
    if _passes is None:
        if ENGINE != "kernel" and n < KERNEL_MIN_OPS["numba" in sys.modules]:
            return False
        if not compiled.numba_available():
            return False
        if ENGINE == "kernel":
            prepare()  # asked for by name: compile them if need be
            return True
        # in one piece: a Ctrl-C inside numba's loading left llvmlite objects half-built
        return shielded(_load_cached)
    return True


def _load_cached() -> bool:
    """Load the compiled passes if numba's cache holds them; never compile on a command's
    clock: otherwise the background build starts (`planner.compiled`) and this says
    False."""
    return compiled.load_kernel("planner.bounds._kernel", "passes", prepare,
                                "the bounds' graph passes")


@dataclass(frozen=True, slots=True)
class Bounds:
    """Lower bounds of one problem (see the module docstring for each proof)."""

    #: the best (largest) valid lower bound on the makespan
    makespan_s: float
    #: each op at its fastest device, no communication
    critical_path_s: float
    #: sum of fastest times / number of devices
    work_s: float
    #: fewest devices whose caps could hold the minimal total memory
    min_devices: int
    #: longest path over allowed devices, with transfers that are forced
    constrained_path_s: float = 0.0
    #: the assignment bound: LP duality, and each job whole on one device (>= work_s)
    load_s: float = 0.0
    #: the minimal total memory behind `min_devices`
    memory_bytes: int = 0
    #: earliest finish over each op's allowed devices, with every transfer a device
    #: choice forces (pins, devices that cannot run an op, colocation)
    arrival_path_s: float = 0.0
    #: a path's fastest times plus the transfers memory forces onto it
    memory_path_s: float = 0.0
    #: the serial time of ops that edges too costly to cross glue onto one device
    forced_colocation_s: float = 0.0
    #: a time plus the work that cannot be done before it, spread over the devices (or
    #: mirrored: the work that cannot be left until after it): a graph's narrow start and
    #: end idle devices
    ramp_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict, fields in declaration order."""
        return asdict(self)


def relative_gap(makespan_s: float, bound_s: float) -> float | None:
    """How far above optimal a plan can be: `(makespan - bound) / bound`, the one definition
    printed everywhere (terminal, JSON `gap`, compare, HTML).

    With `bound <= optimum <= makespan`, `makespan <= (1 + gap) * optimum`, so "at most
    `100 * gap` % above optimal" is a true statement. 0 when the makespan meets the bound
    (within 1e-9 relative); None when the bound is 0 and the makespan is not (no finite gap
    is proved).
    """
    if makespan_s <= bound_s * (1 + 1e-9):  # float noise: "meets", not "1e-10 above"
        return 0.0
    if bound_s <= 0:
        return None
    return (makespan_s - bound_s) / bound_s


def lower_bound(problem: Problem) -> Bounds:
    """Every lower bound of `problem` (see the module docstring), computed once per problem
    and kept on it: a `solve` asks for them several times (its progress line, `auto`'s
    verdict, the exact solvers' cut, the report), and at 100k ops they take 0.5 s."""
    return derived(problem, "_bounds", lambda: _lower_bound(problem))


def _lower_bound(problem: Problem) -> Bounds:
    g = problem.graph
    devices = problem.cluster.devices
    n, m = len(g.ops), len(devices)
    if n == 0 or m == 0:
        return Bounds(0.0, 0.0, 0.0, 0 if n == 0 else 1, memory_bytes=0)
    c = costs(problem)
    comp = c.compute
    allowed = list(facts(problem).allowed)
    fastest = [0.0] * n
    wmin = [0.0] * n
    everywhere = tuple(range(m))
    for i in range(n):
        row = comp[i]
        f = min(row)
        fastest[i] = f if f < INF else 0.0
        a = allowed[i]
        if a == everywhere:
            wmin[i] = f
        else:
            wmin[i] = min(row[d] for d in a) if a else 0.0

    weight = _path_bytes(problem)  # the memory path's second path weighs bytes (or None)
    if _compiled(n):
        critical, constrained, arrival, heaviest = _compiled_passes(
            problem, fastest, wmin, allowed, weight)
    else:
        levels = _levels(problem)
        critical = _longest_path(problem, fastest, None, levels)
        constrained = _longest_path(problem, wmin, allowed, levels)
        arrival = _arrival_path(problem, levels)
        heaviest = None if weight is None else (
            _heaviest_path(g, fastest), _heaviest_path(g, weight))
    work = math.fsum(fastest) / m
    load = max(_load_bound(problem, allowed), work)
    need, min_dev = _memory_bound(problem)
    memory_path = 0.0 if heaviest is None else _memory_path(problem, fastest, heaviest)
    # heads and tails: both bounds below are at most the path and the work with one device
    # or no edges, where they are not computed
    head, tail = head_tail(problem, wmin) if g.edges and m > 1 else ([0.0] * n, [0.0] * n)
    forced = forced_colocation_bound(problem, c, wmin, allowed, head, tail)
    ramp = ramp_bound(head, tail, wmin, m) if g.edges and m > 1 else 0.0
    best = max(critical, work, constrained, load, arrival, memory_path, forced, ramp)
    return Bounds(best, critical, work, min_dev, constrained, load, need, arrival, memory_path,
                  forced, ramp)


def _path_bytes(problem: Problem) -> list[float] | None:
    """The op weights of the memory path's path of most bytes (what an op's unit holds
    for the whole step under the memory model); None when the whole graph fits on one
    device, so that no cut is forced and `memory_path_s` is 0."""
    f = facts(problem)
    if f.least_total_bytes <= max(d.memory_bytes for d in problem.cluster.devices):
        return None
    ops = problem.graph.ops
    if problem.memory_model == "liveness":
        return [float(o.params_bytes) for o in ops]
    return [float(o.params_bytes + o.output_bytes) for o in ops]


def _memory_path(problem: Problem, fastest: list[float],
                 paths: tuple[list[int], list[int]]) -> float:
    """`memory_path_s` (module docstring): the critical path and the path of most bytes
    (`paths`: `_heaviest_path` of `fastest` and of `_path_bytes`), each with the cheapest
    cuts that memory forces on it."""
    f = facts(problem)
    cap = max(d.memory_bytes for d in problem.cluster.devices)
    best = 0.0
    parts = _unit_parts(problem, f)
    for path in paths:
        cuts = _cheapest_cuts(problem, path, cap, parts)
        if cuts < INF:
            best = max(best, math.fsum(fastest[i] for i in path) + cuts)
    return best


def _heaviest_path(g: Any, weight: list[float]) -> list[int]:
    """The ops of a path of largest total `weight` (ties: the first found), in order."""
    edges, pred = g.edges, g.predecessors
    total = [0.0] * len(g.ops)
    back = [-1] * len(g.ops)
    for j in g.topological_order:
        best, arg = 0.0, -1
        for k in pred[j]:
            i = edges[k].src
            if total[i] > best or arg < 0:
                best, arg = total[i], i
        total[j], back[j] = best + weight[j], arg
    return _back_path(np.array(total), np.array(back, dtype=np.int64))


def _cheapest_cuts(problem: Problem, path: list[int], cap: int,
                   part: list[tuple[int, int, int]]) -> float:
    """Least total transfer time of cuts that split `path` into runs whose units fit `cap`
    together (INF when a single op's units do not: no plan exists, `facts.proofs` says why);
    `part`: `_unit_parts`.

    `best[j]`: the cheapest cuts of `path[:j + 1]` with a run ending at `j`; a run may
    start at `i` when the units of `path[i..j]` fit, and the smallest such `i` only grows
    with `j`, so a sliding window (units counted in and out) and a monotone deque of
    `start[i]` (the cost of having cut before `i`) give every `best[j]` in one pass.
    """
    f = facts(problem)
    between = _cut_costs(problem, f, path)
    count: dict[int, int] = {}
    window = _Window(problem.memory_model)
    start: list[float] = []
    best: list[float] = []
    lo = 0
    deque: list[int] = []  # positions i in [lo, j], start[i] increasing
    head = 0
    for j, op in enumerate(path):
        start.append(0.0 if j == 0 else best[j - 1] + between[j - 1])
        while head < len(deque) and start[deque[-1]] >= start[j]:
            deque.pop()
        deque.append(j)
        u = f.unit_of[op]
        count[u] = count.get(u, 0) + 1
        if count[u] == 1:
            window.add(u, part[u])
        while lo < j and window.need() > cap:
            v = f.unit_of[path[lo]]
            count[v] -= 1
            if count[v] == 0:
                window.remove(v, part[v])
            lo += 1
        if window.need() > cap:
            return INF  # one op's units alone do not fit
        while deque[head] < lo:
            head += 1
        best.append(start[deque[head]])
    return best[-1] if best else 0.0


def _cut_costs(problem: Problem, f: Facts, path: list[int]) -> list[float]:
    """The path's edges: the cheapest transfer across each (INF where no cut is possible:
    both ends in one unit)."""
    c = costs(problem)
    g = problem.graph
    between: list[float] = []
    # per pair of allowed sets, the distinct (latency, s/B) of their linked device pairs:
    # the same minimum as `transfer_time` over every pair, without D² calls per edge
    links: dict[tuple[tuple[int, ...], tuple[int, ...]], list[tuple[float, float]]] = {}
    for a, b in itertools.pairwise(path):
        if f.unit_of[a] == f.unit_of[b]:
            between.append(INF)
            continue
        nbytes = min((g.edges[k].bytes for k in g.predecessors[b] if g.edges[k].src == a),
                     default=0)
        key = (f.allowed[a], f.allowed[b])
        pairs = links.get(key)
        if pairs is None:
            pairs = links[key] = sorted({(c.latency[x][y], c.inv_bandwidth[x][y])
                                         for x in key[0] for y in key[1]
                                         if x != y and c.latency[x][y] < INF})
        between.append(min((transfer_seconds(lat, inv, nbytes) for lat, inv in pairs),
                           default=INF))
    return between


def _unit_parts(problem: Problem, f: Any) -> list[tuple[int, int, int]]:
    """Per unit, what it adds to a device's least bytes (`facts._least_bytes`): (summed
    part, its largest single buffer, its sinks' outputs); static memory has no sink part."""
    ops, succ = problem.graph.ops, problem.graph.successors
    liveness = problem.memory_model == "liveness"
    parts = []
    for members in f.units:
        summed = peak = sinks = 0
        for i in members:
            o = ops[i]
            if liveness:
                summed += o.params_bytes
                if f.fastest[i] > 0:
                    peak = max(peak, o.output_bytes + o.temp_bytes)
                if not succ[i]:
                    sinks += o.output_bytes
            else:
                summed += o.params_bytes + o.output_bytes
                peak = max(peak, o.temp_bytes)
        parts.append((summed, peak, sinks))
    return parts


class _Window:
    """The least bytes of a changing set of units: sums kept as totals, the largest buffer
    by a heap whose entries of removed units are skipped."""

    def __init__(self, memory_model: str) -> None:
        self.summed = self.sinks = 0
        self.heap: list[tuple[int, int]] = []
        self.present: set[int] = set()
        self.liveness = memory_model == "liveness"

    def add(self, u: int, part: tuple[int, int, int]) -> None:
        self.summed += part[0]
        self.sinks += part[2]
        self.present.add(u)
        heapq.heappush(self.heap, (-part[1], u))

    def remove(self, u: int, part: tuple[int, int, int]) -> None:
        self.summed -= part[0]
        self.sinks -= part[2]
        self.present.discard(u)

    def need(self) -> int:
        while self.heap and self.heap[0][1] not in self.present:
            heapq.heappop(self.heap)
        peak = -self.heap[0][0] if self.heap else 0
        if self.liveness:
            return self.summed + max(peak, self.sinks)
        return self.summed + peak


@dataclass(frozen=True)
class _Levels:
    """Ops by depth (the most edges on a path from a source) and edges by their consumer's
    depth: every edge into a level comes from a lower one, so a longest-path recurrence
    runs one level at a time in numpy batches.

    The edges are in level order and, within a level, grouped by consumer (in edge order
    within a group): a level's maxima over each op's incoming edges are then one
    `np.maximum.reduceat` over its slice of `edge_order`, and its ops (`ops_at[v]`,
    ascending) are exactly the groups' consumers, in order. Every op past level 0 has an
    incoming edge, so no group is empty. `ops_at[0]` holds the sources.
    """

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    ops_at: list[np.ndarray]
    #: every edge in that order; level `v`'s are `edge_order[edge_pos[v]:edge_pos[v + 1]]`
    edge_order: np.ndarray
    edge_pos: list[int]
    #: per level, where each of its ops' groups starts within the level's slice
    group_at: list[np.ndarray]


def _edge_columns(g: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The edges' sources and destinations (int64) and bytes (float64), from the graph's
    cached `cost.columns` (not to be written to)."""
    cols = columns(g)
    return cols.src, cols.dst, cols.nbytes.astype(np.float64, copy=False)


def _levels(problem: Problem) -> _Levels:
    g = problem.graph
    n, edges = len(g.ops), g.edges
    src, dst, nbytes = _edge_columns(g)
    depth = [0] * n
    pred = g.predecessors
    for j in g.topological_order:
        d = 0
        for k in pred[j]:
            t = depth[edges[k].src] + 1
            if t > d:  # noqa: PLR1730 (hot loop: a call to max() costs more)
                d = t
        depth[j] = d
    top = max(depth, default=0)
    depth_arr = np.array(depth, dtype=np.int64)
    edge_level = depth_arr[dst]
    order = np.lexsort((dst, edge_level))  # by level, then consumer; stable
    at = np.searchsorted(edge_level[order], np.arange(0, top + 2))
    level_ops = np.argsort(depth_arr, kind="stable")
    op_at = np.searchsorted(depth_arr[level_ops], np.arange(0, top + 2))
    ordered_dst = dst[order]
    new_group = np.ones(len(order), dtype=bool)
    new_group[1:] = ordered_dst[1:] != ordered_dst[:-1]
    starts = np.flatnonzero(new_group)
    edge_pos = at.tolist()
    group_pos = np.searchsorted(starts, at).tolist()
    return _Levels(src, dst, nbytes,
                   [level_ops[op_at[v]:op_at[v + 1]] for v in range(top + 1)],
                   order, edge_pos,
                   [starts[group_pos[v]:group_pos[v + 1]] - edge_pos[v]
                    for v in range(top + 1)])


def _arrival_path(problem: Problem, lv: _Levels) -> float:
    """`arrival_path_s` (module docstring), vectorised over devices, one level at a time
    (`_Levels`). O(E·D²) arithmetic."""
    g = problem.graph
    n, m = len(g.ops), len(problem.cluster.devices)
    if n == 0:
        return 0.0
    nbytes, order = lv.nbytes, lv.edge_order
    src = lv.src[order]  # the edges' producers, in level order
    ok, comp_ok, lat, inv, same_unit = _arrival_tables(problem, src, lv.dst[order])
    ef = comp_ok.copy()  # level 0: sources start at 0
    off_diag = ~np.eye(m, dtype=bool)
    # the transfer tables of the edges (edge x a x d), for a block of consecutive levels at
    # a time (their edges are consecutive): a level is usually a few dozen edges, and a
    # numpy call per level and step is most of the cost
    block: np.ndarray = np.zeros((0, m, m))
    block_start = block_end = 0
    pos = lv.edge_pos
    for level in range(1, len(lv.ops_at)):
        lo, hi = pos[level], pos[level + 1]
        if hi > block_end:  # the next block of edges, from this level on
            block_start, block_end = lo, max(hi, min(lo + 16384, len(order)))
            kb = order[block_start:block_end]
            block = lat[None] + nbytes[kb, None, None] * inv[None]
            block[same_unit[block_start:block_end][:, None, None] & off_diag] = np.inf
        t = block[lo - block_start:hi - block_start]
        arrive = (ef[src[lo:hi]][:, :, None] + t).min(axis=1)             # edge x d
        ops = lv.ops_at[level]
        ef[ops] = np.maximum.reduceat(arrive, lv.group_at[level], axis=0) + comp_ok[ops]
    return _latest_finish(ok, ef)


def _latest_finish(ok: np.ndarray, ef: np.ndarray) -> float:
    """`arrival_path_s` from the EF table: the largest, over ops that can run somewhere, of
    their earliest finish on the best allowed device."""
    best = np.where(ok, ef, np.inf).min(axis=1)
    best = best[np.isfinite(best)]
    return float(best.max()) if len(best) else 0.0


def _longest_path(problem: Problem, weight: list[float],
                  allowed: list[tuple[int, ...]] | None, lv: _Levels) -> float:
    """Longest path with op weights; with `allowed`, forced transfers weigh their minimum.
    One level at a time (`_Levels`): the same additions and maxima as an op-by-op walk."""
    g = problem.graph
    n = len(g.ops)
    if n == 0:
        return 0.0
    w = np.asarray(weight, dtype=float)
    extra = (np.zeros(len(lv.src)) if allowed is None
             else _forced_transfers(problem, allowed, lv.src, lv.dst))
    finish = np.zeros(n)
    finish[lv.ops_at[0]] = w[lv.ops_at[0]]
    order, pos = lv.edge_order, lv.edge_pos
    src, extra = lv.src[order], extra[order]
    for level in range(1, len(lv.ops_at)):
        lo, hi = pos[level], pos[level + 1]
        ops = lv.ops_at[level]
        finish[ops] = np.maximum.reduceat(finish[src[lo:hi]] + extra[lo:hi],
                                          lv.group_at[level]) + w[ops]
    return float(finish.max())


def _forced_transfers(problem: Problem, allowed: list[tuple[int, ...]], src: np.ndarray,
                      dst: np.ndarray) -> np.ndarray:
    """Per edge, the least transfer time it must take when its ends' allowed sets share no
    device (the tensor crosses); 0 elsewhere."""
    g = problem.graph
    c = costs(problem)
    extra = np.zeros(len(src))
    bits: dict[tuple[int, ...], int] = {}
    for a in allowed:
        if a not in bits:
            bits[a] = sum(1 << d for d in a)
    mask = np.array([bits[a] for a in allowed], dtype=np.int64)
    ms, md = mask[src], mask[dst]
    for e in np.nonzero((ms != 0) & (md != 0) & ((ms & md) == 0))[0].tolist():
        i, j = int(src[e]), int(dst[e])
        extra[e] = min(c.transfer_time(g.edges[e].bytes, a, b)
                       for a in allowed[i] for b in allowed[j])
    return extra


def _arrival_tables(problem: Problem, src: np.ndarray, dst: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The arrival path's operands: `ok` (allowed op x device), `comp_ok` (compute time,
    infinite where not allowed), latency, seconds per byte (0 where there is no link), and
    per edge `src[k] -> dst[k]` whether its ends share a placement unit."""
    g = problem.graph
    n, m = len(g.ops), len(problem.cluster.devices)
    c = costs(problem)
    f = facts(problem)
    comp = np.array(c.compute, dtype=float).reshape(n, m)
    ok = _allowed_mask(f.allowed, m)
    lat = np.array(c.latency, dtype=float)
    inv = np.where(np.isinf(lat), 0.0, np.array(c.inv_bandwidth, dtype=float))
    unit = np.array(f.unit_of, dtype=np.int64)
    return ok, np.where(ok, comp, np.inf), lat, inv, unit[src] == unit[dst]


def _allowed_mask(allowed: Sequence[tuple[int, ...]], m: int) -> np.ndarray:
    """`ok[i, d]`: whether op `i` may run on device `d` (`allowed[i]` holds `d`); one row
    per distinct allowed set, then indexed (an assignment per op costs 0.3 s at 100k)."""
    distinct: dict[tuple[int, ...], int] = {}
    which = [distinct.setdefault(a, len(distinct)) for a in allowed]
    table = np.zeros((len(distinct), m), dtype=bool)
    for a, k in distinct.items():
        table[k, list(a)] = True
    return table[np.array(which, dtype=np.int64)].reshape(len(allowed), m)


def _load_bound(problem: Problem, allowed: list[tuple[int, ...]]) -> float:
    """The assignment bound: the best LP-dual value found, or a job whole on one device."""
    g = problem.graph
    n, m = len(g.ops), len(problem.cluster.devices)
    comp = np.array(costs(problem).compute, dtype=float).reshape(n, m)
    ok = _allowed_mask(allowed, m)
    cost = np.where(ok, comp, 0.0)
    # one job per colocation group whose members share an allowed device
    job = np.arange(n)
    for group in g.colocations:
        a = allowed[group[0]]
        if a and all(allowed[i] == a for i in group):
            job[list(group)] = group[0]
    if g.colocations:
        ids, job = np.unique(job, return_inverse=True)
        summed = np.zeros((len(ids), m))
        np.add.at(summed, job, cost)
        # members of a merged group share one allowed set, so any member's row will do
        member = np.zeros(len(ids), dtype=int)
        member[job] = np.arange(n)
        cost, ok = summed, ok[member]
    keep = ok.any(axis=1) & (cost.max(axis=1) > 0)
    cost, ok = cost[keep], ok[keep]
    if not len(cost):
        return 0.0
    whole = float(np.where(ok, cost, INF).min(axis=1).max())
    y = _best_weights(cost, ok)
    # the bound is the exact dual value of y on every job: valid whatever y is
    return max(_dual_value(cost, ok, y)[0], whole)


def _dual_value(cost: np.ndarray, ok: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """`sum_J min_{d in A(J)} y_d c_J(d)` and its supergradient (load of each device)."""
    scaled = np.where(ok, cost * y, INF)
    arg = scaled.argmin(axis=1)
    rows = np.arange(len(arg))
    grad = np.bincount(arg, weights=cost[rows, arg], minlength=cost.shape[1])
    return float(scaled[rows, arg].sum()), grad


#: Kelley's cutting-plane steps at most (`_best_weights`)
_KELLEY_STEPS = 60


def _best_weights(cost: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Weights `y` on the simplex with a high dual value (Kelley's cutting planes).

    The dual value is `f(y) = min over assignments a of g_a . y` (g_a: the device loads of
    assignment a), concave and polyhedral. Each evaluation at `y_k` yields the cut
    `f <= g_k . y`; the master problem `max_y min_k g_k . y` (a small matrix game, solved
    by `_game`) proposes the next `y` and bounds the optimum from above, so the loop stops
    when the gap closes. Jobs whose cost rows are proportional and share allowed devices
    add up to one job, which usually leaves a handful of rows.
    """
    m = cost.shape[1]
    scale = cost.max(axis=1)
    shape = np.where(ok, np.round(cost / scale[:, None], 12), -1.0)
    order = np.lexsort(shape.T[::-1])
    ordered = shape[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    rows = ordered[new]
    weight = np.bincount(inverse, weights=scale, minlength=len(rows))
    c_ok = rows >= 0
    c_cost = np.where(c_ok, rows, 0.0) * weight[:, None]

    totals = c_cost.sum(axis=0)
    starts: list[np.ndarray] = [np.full(m, 1.0 / m), *np.eye(m)]
    if (totals > 0).all() and np.isfinite(totals).all():
        with np.errstate(over="ignore"):  # totals of a few 1e-320 s overflow: skipped
            thr = 1.0 / totals  # exact for related devices (times proportional to 1/speed)
        if np.isfinite(thr.sum()) and thr.sum() > 0:  # not with times at a float's limits
            starts.append(thr / thr.sum())
    cuts: list[np.ndarray] = []
    best, best_y = -1.0, starts[0]
    for y in starts:
        v, grad = _dual_value(c_cost, c_ok, y)
        cuts.append(grad)
        if v > best:
            best, best_y = v, y
    for _ in range(_KELLEY_STEPS):
        found = _game(np.array(cuts))
        if found is None:
            break
        upper, y = found
        v, grad = _dual_value(c_cost, c_ok, y)
        if v > best:
            best, best_y = v, y
        if upper - best <= 1e-9 * upper:
            break
        cuts.append(grad)
    return best_y


def _game(payoff: np.ndarray) -> tuple[float, np.ndarray] | None:
    """`max over y in the simplex of min_k (payoff @ y)_k` and its `y`, or None.

    With a nonnegative payoff whose rows are not all zero, the value is `1 / max sum(w)`
    over `payoff.T @ w <= 1, w >= 0` and `y` is that LP's dual solution, normalised. A
    dense simplex with Bland's rule (sizes are tiny); None if it fails numerically.
    """
    top = float(payoff.max())
    if top <= 0:
        return None
    a = payoff.T / top  # m x K, entries in [0, 1]
    m, k = a.shape
    tab = np.zeros((m + 1, k + m + 1))
    tab[:m, :k] = a
    tab[:m, k:k + m] = np.eye(m)
    tab[:m, -1] = 1.0
    tab[m, :k] = -1.0
    basis = list(range(k, k + m))
    eps = 1e-12
    for _ in range(50 * (k + m)):
        entering = next((j for j in range(k + m) if tab[m, j] < -eps), None)
        if entering is None:
            u = tab[m, k:k + m]
            total = float(tab[m, -1])
            if total <= 0 or u.sum() <= 0:
                return None
            y = np.maximum(u, 0.0)
            return top / total, y / y.sum()
        col = tab[:m, entering]
        ratios = [(tab[i, -1] / col[i], basis[i], i) for i in range(m) if col[i] > eps]
        if not ratios:
            return None
        row = min(ratios)[2]
        tab[row] /= tab[row, entering]
        for i in range(m + 1):
            if i != row and tab[i, entering] != 0.0:
                tab[i] -= tab[i, entering] * tab[row]
        basis[row] = entering
    return None


def _compiled_passes(problem: Problem, fastest: list[float], wmin: list[float],
                     allowed: list[tuple[int, ...]], weight: list[float] | None
                     ) -> tuple[float, float, float, tuple[list[int], list[int]] | None]:
    """The critical, constrained and arrival paths, and with `weight` the memory path's two
    heaviest paths, from the compiled walk (`_kernel.passes`): what `_longest_path`,
    `_arrival_path` and `_heaviest_path` give."""
    g = problem.graph
    n = len(g.ops)
    src, dst, nbytes = _edge_columns(g)
    by_dst = np.argsort(dst, kind="stable")  # each op's inputs in edge order
    pred_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=pred_ptr[1:])
    ok, comp_ok, lat, inv, same_unit = _arrival_tables(problem, src, dst)
    heavy = weight is not None
    # a stop waits for the call: one during its return was an E999 (`signals`)
    critical, constrained, ef, total_a, back_a, total_b, back_b = shielded(
        _passes,
        np.array(g.topological_order, dtype=np.int64), pred_ptr, src[by_dst], by_dst,
        np.array(fastest), np.array(wmin), _forced_transfers(problem, allowed, src, dst),
        comp_ok, lat, inv, nbytes, same_unit, np.array(weight if heavy else fastest), heavy)
    arrival = _latest_finish(ok, ef)
    paths = (_back_path(total_a, back_a), _back_path(total_b, back_b)) if heavy else None
    return float(critical), float(constrained), arrival, paths


def _back_path(total: np.ndarray, back: np.ndarray) -> list[int]:
    """The path ending at the first op of largest `total`, following `back`, in order."""
    if not len(total):
        return []
    j = int(np.argmax(total))
    path = []
    while j >= 0:
        path.append(j)
        j = int(back[j])
    return path[::-1]


def _memory_bound(problem: Problem) -> tuple[int, int]:
    """(least total bytes under the memory model, fewest devices whose caps could hold them)."""
    need = facts(problem).least_total_bytes
    caps = sorted((d.memory_bytes for d in problem.cluster.devices), reverse=True)
    held = 0
    for k, cap in enumerate(caps, 1):
        held += cap
        if held >= need:
            return need, k if problem.graph.ops else 0
    return need, len(caps) + 1
