"""Memory from a finished run: static bytes per device, and the liveness peak, timeline
and ops live at the peak (the package docstring's semantics).

Twin: `planner.fastsim._kernel` computes `static_bytes` and the peaks of `liveness` over
arrays; a rule changed here is changed there in the same commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..cost import INF, Columns, columns, static_memory
from ..model import Graph, Op, Problem

if TYPE_CHECKING:
    from .run import Run

__all__ = ["liveness", "static_bytes"]


def static_bytes(graph: Graph, place: list[int], m: int) -> list[int]:
    """`cost.static_memory`, ignoring unplaced ops and the edges that touch them."""
    if all(d >= 0 for d in place):
        return static_memory(graph, place, m)
    if m == 0:
        return []
    ops = tuple(op if d >= 0 else Op(op.name) for op, d in zip(graph.ops, place, strict=True))
    edges = tuple(e for e in graph.edges if place[e.src] >= 0 and place[e.dst] >= 0)
    return static_memory(Graph(graph.name, ops, edges), [max(d, 0) for d in place], m)


def liveness(problem: Problem, place: list[int], run: Run
              ) -> tuple[list[int], list[tuple[tuple[float, int], ...]], list[tuple[int, ...]]]:
    """Per device: liveness peak, (time, bytes) timeline, and the ops live at the peak.

    The live ops (whose output, temp or received copy is held at the first peak instant)
    are only collected for devices over their cap.

    Buffers live on [alloc, free). Because frees come before allocations at one instant,
    only the net change per instant matters: the level after an instant is the highest
    within it, but where zero-time ops run (`_zero_time_extra`). Vectorised with numpy
    (one sort of all alloc and free events).
    """
    g = problem.graph
    m = len(problem.cluster.devices)
    if m == 0:
        return [], [], []
    caps = [dev.memory_bytes for dev in problem.cluster.devices]
    cols = columns(g)
    params, output, temp = _int64_sizes(g)
    pl = np.array(place, dtype=np.int64)
    start = np.array(run.start, dtype=float)
    end = np.array(run.end, dtype=float)
    placed = pl >= 0
    runs = placed & np.isfinite(start)
    tr_src = np.array(run.tr_src, dtype=np.int64)
    tr_dd = np.array(run.tr_dd, dtype=np.int64)
    tr_start = np.array(run.tr_start, dtype=float)
    out_free, tr_free = _frees(cols, pl, start, end, run, m)
    # buffers: device, alloc, free, bytes, op
    dev = np.concatenate([pl[runs], pl[runs], tr_dd])
    alloc = np.concatenate([start[runs], start[runs], tr_start])
    free = np.concatenate([out_free[runs], end[runs], tr_free])
    size = np.concatenate([output[runs], temp[runs],
                           np.array(run.tr_bytes, dtype=np.int64)])
    owner = np.concatenate([np.flatnonzero(runs), np.flatnonzero(runs), tr_src])
    copy = np.arange(len(owner)) >= 2 * int(runs.sum())  # a received copy, not an op's buffer
    keep = (size > 0) & np.isfinite(alloc) & (free > alloc)
    dev, alloc, free, size, owner = dev[keep], alloc[keep], free[keep], size[keep], owner[keep]
    copy = copy[keep]
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
    extra = _zero_time_extra(pl, start, end, runs, cols, output, temp, out_free,
                             (tr_src, tr_dd, tr_free, np.array(run.tr_bytes, dtype=np.int64)), m)
    peaks: list[int] = []
    timelines: list[tuple[tuple[float, int], ...]] = []
    live: list[tuple[int, ...]] = []
    for d in range(m):
        seg = slice(lo[d], hi[d])
        peak, top_t, held, steps = _device_levels(g_t[seg], level[seg], shown[seg],
                                                  extra.get(d, []))
        peaks.append(peak)
        timelines.append(steps)
        on = (dev == d) & (alloc <= top_t) & (top_t < free) if peak > caps[d] else None
        if on is not None and held:  # not the buffers of the op starting after zero-time ones
            on &= copy | (alloc < top_t) | (end[owner] == alloc)
        live.append(() if on is None else tuple(sorted({*owner[on].tolist(), *held})))
    return peaks, timelines, live


def _frees(cols: Columns, pl: np.ndarray, start: np.ndarray, end: np.ndarray, run: Run,
           m: int) -> tuple[np.ndarray, np.ndarray]:
    """When each op's output is freed (`inf`: never) and each received copy (`run`'s
    transfers, in order). An output once nothing reads it: after its last consumer on its
    device and after its last transfer that carries bytes, which reads it until it ends;
    never without either, nor while a transfer it owes never happens (no link: fewer
    transfers than consuming devices). One sent in no time by an op that takes none is
    kept too (a buffer of no length would leave its instant out). A copy after its last
    consumer there."""
    src, dst = cols.src, cols.dst
    n = len(pl)
    # per producer, the last end of its consumers on its own device (-1: none there)
    d_src, d_dst = pl[src], pl[dst]
    local = (d_dst >= 0) & (d_src == d_dst)
    last_local = np.full(n, -1.0)
    np.maximum.at(last_local, src[local], end[dst[local]])
    # per (producer, other device), the last end of its consumers there
    remote = (d_dst >= 0) & (d_src != d_dst)
    r_keys = src[remote] * m + d_dst[remote]
    uniq, inv = np.unique(r_keys, return_inverse=True)
    last_remote = np.full(len(uniq), -1.0)
    np.maximum.at(last_remote, inv, end[dst[remote]])
    tr_src = np.array(run.tr_src, dtype=np.int64)
    sent = np.array(run.tr_bytes, dtype=np.int64) > 0
    last_sent = np.full(n, -1.0)
    np.maximum.at(last_sent, tr_src[sent], np.array(run.tr_end, dtype=float)[sent])
    owed = np.bincount(uniq // m, minlength=n) > np.bincount(tr_src, minlength=n)
    last = np.maximum(last_local, last_sent)
    read = (last_local >= 0.0) | (last_sent > start)
    out_free = np.where(read & ~owed, last, INF)
    tr_dd = np.array(run.tr_dd, dtype=np.int64)
    tr_free = (last_remote[np.searchsorted(uniq, tr_src * m + tr_dd)]
               if len(tr_src) else np.zeros(0))
    return out_free, tr_free


def _device_levels(g_t: np.ndarray, lv: np.ndarray, shown: np.ndarray,
                   extra: list[tuple[float, int, tuple[int, ...]]]
                   ) -> tuple[int, float, tuple[int, ...], tuple[tuple[float, int], ...]]:
    """One device's peak, its first instant, the ops `_zero_time_extra` gives for it when
    a zero-time instant holds it (else none), and its timeline: the level after each
    instant where it changes, and a zero-time instant above its level as a step of no
    width (its level, then the level after it)."""
    k = int(np.argmax(lv))
    held: tuple[int, ...] = ()
    peak, top_t = int(lv[k]), float(g_t[k])
    levels = list(zip(g_t[shown].tolist(), lv[shown].tolist(), strict=True))
    spikes: list[tuple[float, int]] = []
    at = {t for t, _ in levels}
    for t, nbytes, ops in extra:
        after = int(lv[np.searchsorted(g_t, t, side="right") - 1])
        if nbytes > 0:
            spikes.append((t, after + nbytes))
            if t not in at:
                levels.append((t, after))
        if after + nbytes > peak:
            peak, top_t, held = after + nbytes, t, ops
    steps = spikes + levels
    steps.sort(key=lambda s: s[0])  # stable: a spike stays before its instant's level
    return peak, top_t, held, tuple(steps)


def _zero_time_extra(pl: np.ndarray, start: np.ndarray, end: np.ndarray, runs: np.ndarray,
                     cols: Columns, output: np.ndarray, temp: np.ndarray,
                     out_free: np.ndarray, copies: tuple[np.ndarray, ...], m: int
                     ) -> dict[int, list[tuple[float, int, tuple[int, ...]]]]:
    """Per device, (instant, bytes beyond the level after it, ops) where zero-time ops run.

    A zero-time op holds its temp and output, and its inputs, while it runs, but the
    level after its instant has them freed (each buffer on [alloc, free) is empty or
    ended). So the instant holds the level after it, less what the op that starts there
    after them (with a duration) allocates, plus every buffer freed there that a
    zero-time op there reads (its inputs, a zero-length output among them), plus the
    largest temp of those ops (they run one at a time). That counts no buffer twice and
    at most one temp: never above the static figure, which bounds the peak."""
    zero = runs & (start == end)
    if not zero.any():
        return {}
    found: dict[tuple[int, float], list[Any]] = {}
    for z in np.flatnonzero(zero).tolist():
        entry = found.setdefault((int(pl[z]), float(start[z])), [0, 0, set()])
        entry[1] = max(entry[1], int(temp[z]))
        entry[2].add(z)
    src, dst = cols.src, cols.dst
    reads = zero[dst]
    local = reads & (pl[src] == pl[dst]) & (out_free[src] == start[dst]) & (output[src] > 0)
    for i in np.unique(src[local]).tolist():
        entry = found[(int(pl[i]), float(out_free[i]))]
        entry[0] += int(output[i])
        entry[2].add(i)
    tr_src, tr_dd, tr_free, tr_bytes = copies
    remote = reads & (pl[src] != pl[dst])
    if remote.any() and len(tr_src):
        keys = tr_src * m + tr_dd
        order = np.argsort(keys)
        at = order[np.searchsorted(keys[order], src[remote] * m + pl[dst][remote])]
        hit = tr_free[at] == start[dst][remote]
        for r in np.unique(at[hit]).tolist():
            entry = found[(int(tr_dd[r]), float(tr_free[r]))]
            entry[0] += int(tr_bytes[r])
            entry[2].add(int(tr_src[r]))
    after = runs & ~zero & np.isin(start, np.array([t for _, t in found]))
    for i in np.flatnonzero(after).tolist():
        starts = found.get((int(pl[i]), float(start[i])))
        if starts is not None:  # its buffers, as `liveness` keeps them
            starts[0] -= int(temp[i]) + (int(output[i]) if out_free[i] > start[i] else 0)
    out: dict[int, list[tuple[float, int, tuple[int, ...]]]] = {}
    for (d, t), (freed, most, ops) in sorted(found.items()):
        out.setdefault(d, []).append((t, freed + most, tuple(sorted(ops))))
    return out


def _int64_sizes(graph: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per op params, output and temp bytes as int64 (as numpy makes them of a model built
    in code with float sizes: truncated; a size beyond int64 raises OverflowError)."""
    cols = columns(graph)
    if cols.integral:
        return cols.params, cols.output, cols.temp
    ops = graph.ops
    return tuple(np.array([getattr(op, a) for op in ops], dtype=np.int64)  # type: ignore[return-value]
                 for a in ("params_bytes", "output_bytes", "temp_bytes"))
