"""m-SCT: memory-constrained Small Communication Time scheduling (the thesis's algorithm).

Favourite children come from the LP relaxation of Hanen and Munier, "An approximation
algorithm for scheduling dependent tasks on m processors with small communication delays",
Discrete Applied Mathematics 108(3), 2001 (ETFA 1995); the memory-constrained list
scheduling around it is Baechi's m-SCT (Jeon et al., "Baechi: fast device placement of
machine learning graphs", ACM SoCC 2020).

1. LP (HiGHS through highspy): variables `x_e ∈ [0, 1]` per edge, start `s_i ≥ 0` per op,
   makespan `w`; minimise `w` subject to `s_i + p_i + c_ij·x_ij ≤ s_j` per edge,
   `Σ_j x_ij ≥ outdeg(i) − 1`, `Σ_i x_ij ≥ indeg(j) − 1`, `s_i + p_i ≤ w` (sinks only: the
   edge rows imply it elsewhere). `p_i` is the op's mean compute time and `c_ij` the edge's
   mean transfer time over the cluster (0 on edges forced local by a colocation group or a
   shared pin). Times are scaled to O(1) so HiGHS's absolute tolerances are meaningful.
2. Favourites: edges with `x_e < threshold` (Options.threshold, default 0.5), taken in
   order of smaller `x_e`, then larger `c_ij`, then edge index, while the producer has no
   favourite child and the consumer no favourite parent yet (at most one of each).
3. m-ETF (`listsched.etf_schedule`) with the SCT rule: a device that has just run op `i` is
   reserved for `i`'s favourite child `f` once all of `f`'s inputs are placed and the device
   is among those where `f` can start earliest (start plus `f`'s slowdown there, on devices
   of different speeds: `listsched.etf_schedule`); meanwhile it may run only an urgent op (one
   whose inputs have arrived on every device it may run on: its communication delays can no
   longer be saved), otherwise it waits for `f`. Ties by upward rank (then topological
   position): with favourites, topological ties (m-ETF's rule) were no better on average
   (within 0.1% over the repo's specs, Baechi's GNMT graphs and random layered DAGs; GNMT
   227 ms against 232 ms).

The shared rules of `listsched` apply; two matter most on real graphs. Colocation groups
are bound by their first member that receives data from outside the group, not by their
constants (floating members): on Baechi's GNMT graph under Baechi's cost model this takes
m-SCT from 403 ms (Baechi's own m-SCT placement: about 400 ms) to 227 ms, while the
favourite threshold (0.2-1.0: 227 ms) and the urgent-op rule (without it: 223 ms) move it
by a few ms at most. And a pass that dead-ends in memory is retried with budgets, then
falls back to m-TOPO's placement (`listsched.memory_passes`; the LP is solved once).

Time: the LP has E + V + 1 columns and at most E + 3V rows; HiGHS's dual simplex grows
superlinearly (measured on this 2-core machine: ~0.06 s for GNMT's 2,494 ops / 4,150 edges,
~0.5 s for a layered 10,000 / 20,000, both in fewer iterations than 0.6 per row; but 7 s
for a random 3,000 / 6,000 with long edges, 4 iterations per row, and 78 s at 10,000). So
the LP runs on graphs of at most `LP_MAX_EDGES` edges and may take `LP_ITERATIONS_PER_ROW`
simplex iterations per row (deterministic limits); past them the favourites come from the
critical-path rule (`critical_children`:
each op's child on its longest path, O(E log E)), and `info["favourites_by"]` says so.
Then O((V·D + E·D) log V + V·D²) for the list scheduling, per pass. `auto` expects the LP to
take its worst case (`lpsize.lp_seconds_at_most`) when it decides what runs in its limit.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
from typing import NamedTuple

import highspy
import numpy as np

from ..cost import columns, transfer_seconds, transfer_seconds_array
from ..errors import Diagnostic, SolverError
from ..model import Problem
from .base import Options, Solution
from .listsched import (
    Instance,
    etf_schedule,
    memory_passes,
    priority_positions,
    solution,
    upward_rank,
)
from .lpsize import LP_ITERATIONS_PER_ROW, LP_MAX_EDGES

_BANNER_SHOWN = False


def _new_highs() -> highspy.Highs:
    """A `highspy.Highs` without the banner its first construction prints to fd 1.

    The banner is C++ output (not `sys.stdout`), so it would corrupt `--json` on stdout;
    fd 1 is pointed at /dev/null while the first instance is built.
    """
    global _BANNER_SHOWN
    if _BANNER_SHOWN:
        return highspy.Highs()  # type: ignore[no-untyped-call]
    _BANNER_SHOWN = True
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):  # no usable fd 1: nothing to protect
        return highspy.Highs()  # type: ignore[no-untyped-call]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        # e.g. Windows: no C library to flush
        with contextlib.suppress(OSError, AttributeError, TypeError):
            ctypes.CDLL(None).fflush(None)  # flush C stdio while fd 1 is /dev/null
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    return h


def lp_relaxation(inst: Instance) -> tuple[np.ndarray, float]:
    """Solve the favourite-child LP; returns (x per edge, LP makespan in seconds).

    Edge order is `problem.graph.edges`. Raises `SolverError` if HiGHS fails.
    """
    n_edges = len(inst.problem.graph.edges)
    if n_edges == 0:
        return np.zeros(0), max(inst.mean_compute, default=0.0)
    lp, scale = _lp_model(inst)
    n_rows = lp.num_row
    h = _new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", 0)
    # no `threads` option: HiGHS sizes one task scheduler per process, and a later value
    # that differs makes `run` fail ("Not Set") once any other HiGHS model has run here
    # (the exact ILP through Pyomo, or a user's own); the dual simplex is serial anyway
    # Dantzig pricing: 1.3-2x faster than the default on these degenerate DAG LPs (measured
    # on GNMT and random layered DAGs of 2.5k-10k ops)
    h.setOptionValue("simplex_dual_edge_weight_strategy", 0)
    # a deterministic work limit: random DAGs with long edges need 4x more iterations
    # than rows and minutes at 10k ops (layered graphs and GNMT: under 0.6x)
    h.setOptionValue("simplex_iteration_limit", int(LP_ITERATIONS_PER_ROW * n_rows))
    # the arrays go to HiGHS as they are: through `HighsLp`'s properties each would be
    # copied element by element (2.5 of the 5 ms of GNMT's model)
    h.passModel(lp.num_col, lp.num_row, len(lp.a_index), int(highspy.MatrixFormat.kRowwise),
                int(highspy.ObjSense.kMinimize), 0.0, lp.cost, lp.col_lower, lp.col_upper,
                lp.row_lower, lp.row_upper, lp.a_start, lp.a_index, lp.a_value,
                np.zeros(lp.num_col, dtype=np.int32))
    h.run()
    if h.getModelStatus() == highspy.HighsModelStatus.kIterationLimit:
        raise _LpTooLarge
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        status = h.modelStatusToString(h.getModelStatus())
        raise SolverError(Diagnostic(
            "E710", f"m-SCT's LP relaxation failed in HiGHS: {status}",
            None, ("use --algo metf, which needs no LP",)))
    x = np.asarray(h.getSolution().col_value[:n_edges], dtype=np.float64)
    return x, float(h.getInfo().objective_function_value) * scale


class _Lp(NamedTuple):
    """The favourite-child LP as HiGHS's row-wise arrays."""

    num_col: int
    num_row: int
    cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    a_start: np.ndarray
    a_index: np.ndarray
    a_value: np.ndarray


def _lp_model(inst: Instance) -> tuple[_Lp, float]:
    """The favourite-child LP of a graph with edges, row-wise: (the arrays, the scale its
    times are divided by)."""
    g = inst.problem.graph
    n, n_edges = inst.n, len(g.edges)
    cols = columns(g)  # the graph's cached edge arrays: read, never written
    src, dst = cols.src, cols.dst
    nbytes = cols.nbytes.astype(np.float64, copy=False)
    group_of, pin = np.asarray(inst.group_of), np.asarray(inst.pin)
    g_src, p_src = group_of[src], pin[src]
    local = ((g_src >= 0) & (g_src == group_of[dst])) | ((p_src >= 0) & (p_src == pin[dst]))
    p = np.asarray(inst.mean_compute, dtype=np.float64)
    c = np.where(local, 0.0, transfer_seconds_array(inst.mean_lat, inst.mean_inv, nbytes))
    positive = np.concatenate([p[p > 0], c[c > 0]])
    scale = float(np.mean(positive)) if positive.size else 1.0
    p, c = p / scale, c / scale

    col_s = n_edges  # s_i is column n_edges + i; w is the last column
    col_w = n_edges + n
    outdeg = np.bincount(src, minlength=n)
    indeg = np.bincount(dst, minlength=n)
    # rows, in blocks: edges; out-degree >= 2; in-degree >= 2; sinks
    order_out = np.argsort(src, kind="stable")
    order_in = np.argsort(dst, kind="stable")
    multi_out = np.nonzero(outdeg >= 2)[0]
    multi_in = np.nonzero(indeg >= 2)[0]
    sinks = np.nonzero(outdeg == 0)[0]

    # edge rows: s_src - s_dst + c x <= -p_src  (3 entries each)
    e_index = np.stack([src + col_s, dst + col_s, np.arange(n_edges)], axis=1).ravel()
    e_value = np.stack([np.ones(n_edges), -np.ones(n_edges), c], axis=1).ravel()
    # out rows: sum of x over each multi-out op's edges (edges grouped by src)
    out_mask = outdeg[src[order_out]] >= 2
    o_index = order_out[out_mask]
    o_counts = outdeg[multi_out]
    # in rows likewise
    in_mask = indeg[dst[order_in]] >= 2
    i_index = order_in[in_mask]
    i_counts = indeg[multi_in]
    # sink rows: s_i - w <= -p_i
    s_index = np.stack([sinks + col_s, np.full(sinks.size, col_w)], axis=1).ravel()
    s_value = np.tile([1.0, -1.0], sinks.size)

    index = np.concatenate([e_index, o_index, i_index, s_index]).astype(np.int32)
    value = np.concatenate([e_value, np.ones(o_index.size), np.ones(i_index.size), s_value])
    lengths = np.concatenate([np.full(n_edges, 3), o_counts, i_counts, np.full(sinks.size, 2)])
    start = np.zeros(lengths.size + 1, dtype=np.int32)
    np.cumsum(lengths, out=start[1:])
    inf = highspy.kHighsInf
    row_lower = np.concatenate([np.full(n_edges, -inf), (o_counts - 1).astype(float),
                                (i_counts - 1).astype(float), np.full(sinks.size, -inf)])
    row_upper = np.concatenate([-p[src], np.full(o_counts.size, inf),
                                np.full(i_counts.size, inf), -p[sinks]])

    n_cols = n_edges + n + 1
    cost = np.zeros(n_cols)
    cost[col_w] = 1.0
    return _Lp(n_cols, int(lengths.size), cost, np.zeros(n_cols),
               np.concatenate([np.ones(n_edges), np.full(n + 1, inf)]), row_lower, row_upper,
               start[:-1], index, value), scale


class _LpTooLarge(Exception):
    """The LP needs more simplex iterations than `LP_ITERATIONS_PER_ROW` per row."""


def critical_children(inst: Instance, rank: list[float]) -> list[int]:
    """Favourite children without the LP: each op's child on its longest remaining path.

    Edges are taken by larger mean transfer time plus the child's upward rank (the path an
    edge's delay would lengthen most), then edge index, while the producer has no
    favourite child and the consumer no favourite parent yet (at most one of each, as with
    the LP). Edges forced local never matter and are skipped. O(E log E).
    """
    cands = []
    for k, e in enumerate(inst.problem.graph.edges):
        if e.src != e.dst and not (inst.group_of[e.src] >= 0
                                   and inst.group_of[e.src] == inst.group_of[e.dst]):
            cands.append((-(inst.mean_comm(e.bytes) + rank[e.dst]), k))
    cands.sort()
    return _take_favourites(inst, [k for _, k in cands])


def favourite_children(inst: Instance, x: np.ndarray, threshold: float) -> list[int]:
    """Per op, its favourite child (or -1): edges with `x < threshold`, at most one favourite
    child per op and one favourite parent per op, taken by smaller x, larger mean
    communication time, then edge index."""
    cands = []
    ml, mi = inst.mean_lat, inst.mean_inv
    for k, (xk, e) in enumerate(zip(x.tolist(), inst.problem.graph.edges, strict=True)):
        if xk < threshold and e.src != e.dst:
            cands.append((xk, -transfer_seconds(ml, mi, e.bytes), k))
    cands.sort()
    return _take_favourites(inst, [k for _, _, k in cands])


def _take_favourites(inst: Instance, edge_order: list[int]) -> list[int]:
    """Per op, its favourite child (or -1): the edges in `edge_order`, each taken while its
    producer has no favourite child and its consumer no favourite parent yet."""
    edges = inst.problem.graph.edges
    fav = [-1] * inst.n
    has_parent = [False] * inst.n
    for k in edge_order:
        e = edges[k]
        if fav[e.src] < 0 and not has_parent[e.dst]:
            fav[e.src] = e.dst
            has_parent[e.dst] = True
    return fav


def place(problem: Problem, options: Options) -> Solution:
    """Place and order `problem`'s ops with m-SCT; raises `InfeasibleError` when stuck."""
    inst = Instance.of(problem)
    rank = upward_rank(inst)
    prank = priority_positions(inst, rank)
    by = "lp"
    if inst.m > 1 and problem.graph.edges:
        try:
            if len(problem.graph.edges) > LP_MAX_EDGES:
                raise _LpTooLarge
            x, lp_w = lp_relaxation(inst)
            fav = favourite_children(inst, x, options.threshold)
        except _LpTooLarge:
            lp_w, by = math.nan, "critical path (the LP is over its size or iteration limit)"
            fav = critical_children(inst, rank)
    else:  # one device, or no edges: nothing to communicate, SCT is ETF
        lp_w, fav = 0.0, [-1] * inst.n
    placement, start, status, info = memory_passes(
        inst, "msct", lambda placer: etf_schedule(placer.inst, placer, prank, favourite=fav))
    return solution(inst, placement, start, "msct", status, **info,
                    lp_makespan_s=None if math.isnan(lp_w) else lp_w, favourites_by=by,
                    favourites=sum(1 for f in fav if f >= 0))
