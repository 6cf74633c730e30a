"""Memory figures of one simulated run, compiled with numba (see `planner.simulate`).

Both follow `planner.simulate` rule for rule: `static_bytes` is `_static_bytes` and
`liveness_peaks` is the peak of `_liveness`, without the timeline or the live-op lists.
"""

from __future__ import annotations

import numpy as np
from numba import njit

INF = np.inf


@njit(cache=True)
def static_bytes(place, m, succ_ptr, succ_dst, succ_bytes, params, output, temp):  # type: ignore[no-untyped-def]
    """Per device: params and outputs of its ops, each copy it receives, its largest temp.

    Unplaced ops (-1) and the edges touching them are ignored.
    """
    mem = np.zeros(m, np.int64)
    big = np.zeros(m, np.int64)
    best = np.full(m, -1, np.int64)
    touched = np.empty(m, np.int64)
    for i in range(place.shape[0]):
        d = place[i]
        if d < 0:
            continue
        mem[d] += params[i] + output[i]
        if temp[i] > big[d]:
            big[d] = temp[i]
        nt = 0
        for k in range(succ_ptr[i], succ_ptr[i + 1]):
            dj = place[succ_dst[k]]
            if dj < 0 or dj == d:
                continue
            if best[dj] < 0:
                touched[nt] = dj
                nt += 1
            if succ_bytes[k] > best[dj]:
                best[dj] = succ_bytes[k]
        for q in range(nt):
            dj = touched[q]
            mem[dj] += best[dj]
            best[dj] = -1
    return mem + big


@njit(cache=True)
def liveness_peaks(place, m, start, end, succ_ptr, succ_dst, params, output, temp,
                   tr_src, tr_dd, tr_bytes, tr_start):  # type: ignore[no-untyped-def]
    """Per device, the highest level of live bytes over a run (buffers on [alloc, free)).

    Params are live from t = 0; an op's output from its start to the last end of its
    consumers on its device (never freed without one), its temp from start to end; a
    received copy from its transfer's start to the last end of its consumers there. At one
    instant frees and allocations net out, so the peak is the highest level after an
    instant: the running sum at the end of each run of equal times.
    """
    n = place.shape[0]
    n_tr = tr_src.shape[0]
    cap = m + 4 * n + 2 * n_tr
    ev_d = np.empty(cap, np.int64)
    ev_t = np.empty(cap, np.float64)
    ev_s = np.empty(cap, np.int64)
    base = np.zeros(m, np.int64)
    for i in range(n):
        if place[i] >= 0:
            base[place[i]] += params[i]
    k = 0
    for d in range(m):
        ev_d[k] = d
        ev_t[k] = 0.0
        ev_s[k] = base[d]
        k += 1
    for i in range(n):
        d = place[i]
        if d < 0 or not np.isfinite(start[i]):
            continue
        last = -1.0
        for q in range(succ_ptr[i], succ_ptr[i + 1]):
            j = succ_dst[q]
            if place[j] == d and end[j] > last:
                last = end[j]
        free = last if last >= 0.0 else INF
        k = _buffer(ev_d, ev_t, ev_s, k, d, start[i], free, output[i])
        k = _buffer(ev_d, ev_t, ev_s, k, d, start[i], end[i], temp[i])
    for r in range(n_tr):
        i, d = tr_src[r], tr_dd[r]
        last = -1.0
        for q in range(succ_ptr[i], succ_ptr[i + 1]):
            j = succ_dst[q]
            if place[j] == d and end[j] > last:
                last = end[j]
        k = _buffer(ev_d, ev_t, ev_s, k, d, tr_start[r], last, tr_bytes[r])
    idx = np.argsort(ev_t[:k])
    level = np.zeros(m, np.int64)
    peak = np.zeros(m, np.int64)
    seen = np.zeros(m, np.bool_)
    touched = np.empty(m, np.int64)
    nt = 0
    for p in range(k):
        e = idx[p]
        d = ev_d[e]
        level[d] += ev_s[e]
        if not seen[d]:
            seen[d] = True
            touched[nt] = d
            nt += 1
        if p + 1 == k or ev_t[idx[p + 1]] != ev_t[e]:
            for q in range(nt):
                dd = touched[q]
                seen[dd] = False
                if level[dd] > peak[dd]:  # levels never go negative: frees follow allocs
                    peak[dd] = level[dd]
            nt = 0
    return peak


@njit(cache=True)
def _buffer(ev_d, ev_t, ev_s, k, d, alloc, free, size):  # type: ignore[no-untyped-def]
    """Append a buffer's alloc and free events when `simulate._liveness` keeps it."""
    if size <= 0 or not np.isfinite(alloc) or not free > alloc:
        return k
    ev_d[k] = d
    ev_t[k] = alloc
    ev_s[k] = size
    k += 1
    if np.isfinite(free):
        ev_d[k] = d
        ev_t[k] = free
        ev_s[k] = -size
        k += 1
    return k
