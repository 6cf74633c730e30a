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
- `load_s`: the assignment bound: LP duality, and each colocation group whole on one
  device (`planner.bounds.load`, with its proof).

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

- `memory_path_s`: transfers forced by memory on a path: the path's fastest times plus the
  cheapest cuts that leave every run within the largest cap (`planner.bounds.memory`,
  with its proof).

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

import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import compiled
from ..cost import INF, columns, costs, transfer_seconds_array
from ..facts import facts
from ..model import Graph, Problem, derived
from ..signals import shielded
from .forced import forced_colocation_bound
from .load import allowed_mask, load_bound
from .memory import back_path, heaviest_path, memory_bound, memory_path, path_bytes
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
    (within 1e-9 relative); None when the bound is 0 and the makespan is not, or the
    makespan is not finite (no finite gap is proved: an `inf` plan does not "meet" an `inf`
    bound).
    """
    if not math.isfinite(makespan_s):
        return None
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

    weight = path_bytes(problem)  # the memory path's second path weighs bytes (or None)
    if _compiled(n):
        critical, constrained, arrival, heaviest = _compiled_passes(
            problem, fastest, wmin, allowed, weight)
    else:
        levels = _levels(problem)
        critical = _longest_path(problem, fastest, None, levels)
        constrained = _longest_path(problem, wmin, allowed, levels)
        arrival = _arrival_path(problem, levels)
        heaviest = None if weight is None else (
            heaviest_path(g, fastest), heaviest_path(g, weight))
    work = math.fsum(fastest) / m
    load = max(load_bound(problem, allowed), work)
    need, min_dev = memory_bound(problem)
    on_path = 0.0 if heaviest is None else memory_path(problem, fastest, heaviest)
    # heads and tails: both bounds below are at most the path and the work with one device
    # or no edges, where they are not computed
    head, tail = head_tail(problem, wmin) if g.edges and m > 1 else ([0.0] * n, [0.0] * n)
    forced = forced_colocation_bound(problem, c, wmin, allowed, head, tail)
    ramp = ramp_bound(head, tail, wmin, m) if g.edges and m > 1 else 0.0
    best = max(critical, work, constrained, load, arrival, on_path, forced, ramp)
    return Bounds(best, critical, work, min_dev, constrained, load, need, arrival, on_path,
                  forced, ramp)


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
            block = transfer_seconds_array(lat[None], inv[None], nbytes[kb, None, None])
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
    # Python ints (an object array: numpy's `&` calls theirs), 64 devices and more too (an
    # int64 mask was an OverflowError, E999, on every solve of a 64-device cluster)
    mask = np.array([bits[a] for a in allowed], dtype=np.int64 if len(
        problem.cluster.devices) < 63 else object)
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
    ok = allowed_mask(f.allowed, m)
    lat = np.array(c.latency, dtype=float)
    inv = np.where(np.isinf(lat), 0.0, np.array(c.inv_bandwidth, dtype=float))
    unit = np.array(f.unit_of, dtype=np.int64)
    return ok, np.where(ok, comp, np.inf), lat, inv, unit[src] == unit[dst]


def _compiled_passes(problem: Problem, fastest: list[float], wmin: list[float],
                     allowed: list[tuple[int, ...]], weight: list[float] | None
                     ) -> tuple[float, float, float, tuple[list[int], list[int]] | None]:
    """The critical, constrained and arrival paths, and with `weight` the memory path's two
    heaviest paths, from the compiled walk (`_kernel.passes`): what `_longest_path`,
    `_arrival_path` and `heaviest_path` give."""
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
    paths = (back_path(total_a, back_a), back_path(total_b, back_b)) if heavy else None
    return float(critical), float(constrained), arrival, paths
