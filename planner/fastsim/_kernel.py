"""The event loop of `planner.simulate`, compiled with numba over flat arrays.

Every step mirrors `simulate._Run.execute` in the same order of floating-point operations,
so times come out bit-identical. Events carry unique keys, so any heap that pops in
(time, key) order replays the reference exactly; the heaps here are plain arrays.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._memory import liveness_peaks, static_bytes

INF = np.inf
# violation bits, in `simulate.KINDS` order
UNPLACED, ORDER, PIN, COLOCATION, UNRUNNABLE, NO_LINK, MEMORY = 1, 2, 4, 8, 16, 32, 256
RETRY = 1 << 20  # an assumption of the fast path failed: ask the reference instead
# how per-device sequences are given
DISPATCH, GIVEN, PRIORITY = 0, 1, 2


@njit(cache=True, inline="always")
def _ev_push(ht, hk, size, t, k):  # type: ignore[no-untyped-def]
    """Push (t, k) onto the (time, key) heap of `size` items; return the new size."""
    c = size
    while c > 0:
        p = (c - 1) >> 1
        if ht[p] < t or (ht[p] == t and hk[p] < k):
            break
        ht[c] = ht[p]
        hk[c] = hk[p]
        c = p
    ht[c] = t
    hk[c] = k
    return size + 1


@njit(cache=True, inline="always")
def _ev_pop(ht, hk, size):  # type: ignore[no-untyped-def]
    """Remove the smallest (time, key) from a heap of `size` items; return its key.

    Bottom-up: the hole walks down along smaller children (a select, not a branch: heap
    branches mispredict half the time), then the last item sifts up from the leaf.
    """
    top = hk[0]
    size -= 1
    t, k = ht[size], hk[size]
    c = 0
    while True:
        a = 2 * c + 1
        if a >= size:
            break
        if a + 1 < size:
            b = a + 1
            a += (ht[b] < ht[a]) | ((ht[b] == ht[a]) & (hk[b] < hk[a]))
        ht[c] = ht[a]
        hk[c] = hk[a]
        c = a
    while c > 0:
        p = (c - 1) >> 1
        if ht[p] < t or (ht[p] == t and hk[p] < k):
            break
        ht[c] = ht[p]
        hk[c] = hk[p]
        c = p
    ht[c] = t
    hk[c] = k
    return top


@njit(cache=True, inline="always")
def _kpush(h, lo, size, key):  # type: ignore[no-untyped-def]
    """Push an int64 key onto the heap in h[lo:lo + size]; return the new size."""
    c = size
    while c > 0:
        p = (c - 1) >> 1
        if h[lo + p] < key:
            break
        h[lo + c] = h[lo + p]
        c = p
    h[lo + c] = key
    return size + 1


@njit(cache=True, inline="always")
def _kpop(h, lo, size):  # type: ignore[no-untyped-def]
    """Remove and return the smallest key of the heap in h[lo:lo + size] (bottom-up)."""
    top = h[lo]
    size -= 1
    key = h[lo + size]
    c = 0
    while True:
        a = 2 * c + 1
        if a >= size:
            break
        if a + 1 < size:
            a += h[lo + a + 1] < h[lo + a]
        h[lo + c] = h[lo + a]
        c = a
    while c > 0:
        p = (c - 1) >> 1
        if h[lo + p] < key:
            break
        h[lo + c] = h[lo + p]
        c = p
    h[lo + c] = key
    return top


@njit(cache=True)
def _sequences(place, m, kind, ord_dev, ord_op, topo):  # type: ignore[no-untyped-def]
    """Per-device sequences as (ops, offsets) and the `order` bit if entries were dropped.

    GIVEN: `simulate._normalize_order` (entries as (device position, op), op -1 when not an
    integer); PRIORITY: `ord_op` lists ops in priority order, each device keeps its own.
    """
    n = place.shape[0]
    listed = np.zeros(n, np.bool_)
    pick_d = np.empty(n, np.int64)
    pick_i = np.empty(n, np.int64)
    cnt = 0
    bad = 0
    for k in range(ord_op.shape[0]):
        i = ord_op[k]
        d = ord_dev[k] if kind == GIVEN else (place[i] if 0 <= i < n else -1)
        if i < 0 or i >= n:
            bad = ORDER
        elif d >= m:
            bad = ORDER
        elif place[i] < 0:
            continue
        elif place[i] != d or listed[i]:
            bad = ORDER
        else:
            listed[i] = True
            pick_d[cnt] = d
            pick_i[cnt] = i
            cnt += 1
    for q in range(n):
        i = topo[q]
        if place[i] >= 0 and not listed[i]:
            bad = ORDER
            pick_d[cnt] = place[i]
            pick_i[cnt] = i
            cnt += 1
    ptr = np.zeros(m + 1, np.int64)
    for q in range(cnt):
        ptr[pick_d[q] + 1] += 1
    for d in range(m):
        ptr[d + 1] += ptr[d]
    fill = ptr[:m].copy()
    seq = np.empty(cnt, np.int64)
    for q in range(cnt):
        d = pick_d[q]
        seq[fill[d]] = pick_i[q]
        fill[d] += 1
    return seq, ptr, bad


@njit(cache=True)
def _checks(place, m, dur, pins, grp_ptr, grp_ops):  # type: ignore[no-untyped-def]
    """The bits of the rules a placement breaks before anything runs."""
    bad = 0
    for i in range(place.shape[0]):
        d = place[i]
        if d < 0:
            bad |= UNPLACED
        else:
            if pins[i] >= 0 and pins[i] != d:
                bad |= PIN
            if dur[i] == INF:
                bad |= UNRUNNABLE
    for g in range(grp_ptr.shape[0] - 1):
        first = -1
        for q in range(grp_ptr[g], grp_ptr[g + 1]):
            d = place[grp_ops[q]]
            if d < 0:
                continue
            if first < 0:
                first = d
            elif d != first:
                bad |= COLOCATION
    return bad


@njit(cache=True, inline="always")
def _try_start(d, seq, ptr, head, free, pending, ready, dur, start, end, run, cnt,
               ht, hk, pos):  # type: ignore[no-untyped-def]
    """Static order: start every head of `d`'s sequence whose inputs are all known."""
    k = head[d]
    f = free[d]
    while k < ptr[d + 1]:
        i = seq[k]
        if pending[i]:
            break
        s = max(f, ready[i])
        f = s + dur[i]
        start[i] = s
        end[i] = f
        run[cnt[0]] = i
        cnt[0] += 1
        cnt[1] = _ev_push(ht, hk, cnt[1], f, pos[i])
        k += 1
    head[d] = k
    free[d] = f


@njit(cache=True)
def execute(place, m, dur, seq, ptr, dynamic, rank, byrank, sources, topo, pos, pending,
            succ_ptr, succ_dst, succ_bytes, lat, inv, mode, tr_cap):  # type: ignore[no-untyped-def]
    """Run one simulation; see `simulate._Run.execute`, which this follows line by line.

    Returns start, end, the ops in the order they started (all devices interleaved; a
    device's order is its subsequence), the transfers (src op, src device, dst device,
    bytes, start, end), and the `no_link`, `order` (deadlock) and `RETRY` bits.

    Dynamic dispatch pops (ready time, -upward rank, index), the reference's key. An op
    enters its device's queue at the instant it becomes ready, so the ready times in a
    queue only grow: the key is then one int64, (instant number << 32) | `rank` (the
    op's place in (-upward rank, index) order). Ops without inputs are ready at t = 0 in
    rank order, so they wait in a sorted list (`sources`) rather than in the heap.
    """
    n = place.shape[0]
    start = np.full(n, INF)
    end = np.full(n, INF)
    ready = np.zeros(n)
    run = np.empty(n, np.int64)
    cnt = np.zeros(3, np.int64)  # ops started, heap size, transfers
    ht = np.empty(2 * n + 1)
    hk = np.empty(2 * n + 1, np.int64)
    tr_i = np.empty((tr_cap, 4), np.int64)
    tr_t = np.empty((tr_cap, 2))
    link_free = np.zeros(m * m)
    chan_free = np.zeros(m)
    best = np.full(m, -1, np.int64)
    arrive = np.zeros(m)
    touched = np.empty(m, np.int64)
    head = ptr[:m].copy()
    free = np.zeros(m)
    idle = np.ones(m, np.bool_)
    # dynamic: per device, a heap of keys in its slice of qh and a list of sources
    qh = np.empty(n, np.int64)
    qlo = np.zeros(m, np.int64)
    qn = np.zeros(m, np.int64)
    src = np.empty(sources.shape[0], np.int64)
    s_at = np.zeros(m + 1, np.int64)
    s_end = np.zeros(m, np.int64)
    instant = 0
    dirty = np.empty(m, np.int64)
    is_dirty = np.zeros(m, np.bool_)
    nd = 0
    bad = 0
    if dynamic:
        for i in range(n):
            if place[i] >= 0 and place[i] + 1 < m:
                qlo[place[i] + 1] += 1
        for d in range(1, m):
            qlo[d] += qlo[d - 1]
    t = 0.0
    for i in range(n):
        if place[i] < 0:
            cnt[1] = _ev_push(ht, hk, cnt[1], INF, pos[i])
    if dynamic:
        for i in sources:
            if place[i] >= 0:
                s_at[place[i] + 1] += 1
        for d in range(m):
            s_at[d + 1] += s_at[d]
        s_end[:] = s_at[:m]
        for i in sources:
            d = place[i]
            if d >= 0:
                src[s_end[d]] = i
                s_end[d] += 1
        for d in range(m):
            if s_end[d] > s_at[d]:
                dirty[nd] = d
                nd += 1
                is_dirty[d] = True
    else:
        for d in range(m):
            _try_start(d, seq, ptr, head, free, pending, ready, dur, start, end, run, cnt,
                       ht, hk, pos)
    while cnt[1] or nd:
        if cnt[1] and not nd and ht[0] != t:
            t = ht[0]
            instant += 1
        while cnt[1] and ht[0] == t:
            key = _ev_pop(ht, hk, cnt[1])
            cnt[1] -= 1
            if key >= n:  # dynamic: op key - n becomes ready now
                j = key - n
                d = place[j]
                qn[d] = _kpush(qh, qlo[d], qn[d], (instant << 32) | rank[j])
                if not is_dirty[d]:
                    is_dirty[d] = True
                    dirty[nd] = d
                    nd += 1
                continue
            i = topo[key]
            di = place[i]
            if dynamic and di >= 0:
                idle[di] = True
                if not is_dirty[di]:
                    is_dirty[di] = True
                    dirty[nd] = di
                    nd += 1
            lo, hi = succ_ptr[i], succ_ptr[i + 1]
            if lo == hi:
                continue
            nt = 0
            for k in range(lo, hi):
                dj = place[succ_dst[k]]
                if dj != di and dj >= 0:
                    b = succ_bytes[k]
                    cur = best[dj]
                    if cur < 0:
                        best[dj] = b
                        touched[nt] = dj
                        nt += 1
                    elif b > cur:
                        best[dj] = b
            if nt:
                for a in range(1, nt):  # insertion sort: m is small
                    x = touched[a]
                    c = a
                    while c > 0 and touched[c - 1] > x:
                        touched[c] = touched[c - 1]
                        c -= 1
                    touched[c] = x
                for q in range(nt):
                    dj = touched[q]
                    b = best[dj]
                    best[dj] = -1
                    if di < 0 or t == INF:
                        arrive[dj] = INF
                        continue
                    lt = lat[di, dj]
                    if lt == INF:
                        arrive[dj] = INF
                        bad |= NO_LINK
                        continue
                    dt = lt + b * inv[di, dj]
                    if mode == 0:
                        s = t
                    elif mode == 1:
                        lk = di * m + dj
                        s = max(link_free[lk], t)
                        link_free[lk] = s + dt
                    else:
                        s = max(max(chan_free[di], chan_free[dj]), t)
                        chan_free[di] = s + dt
                        chan_free[dj] = s + dt
                    fin = s + dt
                    arrive[dj] = fin
                    r = cnt[2]
                    tr_i[r, 0] = i
                    tr_i[r, 1] = di
                    tr_i[r, 2] = dj
                    tr_i[r, 3] = b
                    tr_t[r, 0] = s
                    tr_t[r, 1] = fin
                    cnt[2] = r + 1
            for k in range(lo, hi):
                j = succ_dst[k]
                dj = place[j]
                a = t if dj == di else arrive[dj]
                ready[j] = max(ready[j], a)
                pending[j] -= 1
                if pending[j] or dj < 0:
                    continue
                if not dynamic:
                    if seq[head[dj]] == j:
                        _try_start(dj, seq, ptr, head, free, pending, ready, dur, start, end,
                                   run, cnt, ht, hk, pos)
                elif ready[j] <= t:
                    if ready[j] != t:  # a transfer that ends before it starts
                        bad |= RETRY
                    qn[dj] = _kpush(qh, qlo[dj], qn[dj], (instant << 32) | rank[j])
                    if not is_dirty[dj]:
                        is_dirty[dj] = True
                        dirty[nd] = dj
                        nd += 1
                else:
                    cnt[1] = _ev_push(ht, hk, cnt[1], ready[j], n + j)
        for q in range(nd):
            d = dirty[q]
            is_dirty[d] = False
            if idle[d] and (qn[d] or s_at[d] < s_end[d]):
                # a source's key is its rank (instant 0)
                if s_at[d] < s_end[d] and (qn[d] == 0 or rank[src[s_at[d]]] < qh[qlo[d]]):
                    i = src[s_at[d]]
                    s_at[d] += 1
                else:
                    i = byrank[_kpop(qh, qlo[d], qn[d]) & 0xFFFFFFFF]
                    qn[d] -= 1
                idle[d] = False
                start[i] = t
                f = t + dur[i]
                end[i] = f
                run[cnt[0]] = i
                cnt[0] += 1
                cnt[1] = _ev_push(ht, hk, cnt[1], f, pos[i])
        nd = 0
    if not dynamic:
        for d in range(m):
            if head[d] < ptr[d + 1]:
                bad |= ORDER  # the static order deadlocked
    r = cnt[2]
    return start, end, run[:cnt[0]], tr_i[:r], tr_t[:r], bad


@njit(cache=True)
def evaluate(place_in, m, compute, kind, ord_dev, ord_op, full, liveness, rank, byrank,
             sources, topo, pos, pred_count, succ_ptr, succ_dst, succ_bytes, lat, inv, mode, tr_cap,
             pins, grp_ptr, grp_ops, params, output, temp, caps):  # type: ignore[no-untyped-def]
    """Simulate one placement (and order); see `planner.fastsim.Evaluator`.

    With `full` false, stops at the first broken rule found before running (the makespan
    is then `inf`). Returns (violation bits, makespan, start, end, run order, transfer
    ints, transfer times, static bytes, peak bytes).
    """
    n = place_in.shape[0]
    place = np.empty(n, np.int64)
    dur = np.empty(n)
    for i in range(n):
        d = place_in[i]
        place[i] = d if 0 <= d < m else -1
        dur[i] = compute[i, d] if 0 <= d < m else INF
    bad = _checks(place, m, dur, pins, grp_ptr, grp_ops)
    if kind == DISPATCH:
        seq, ptr = np.zeros(0, np.int64), np.zeros(m + 1, np.int64)
    else:
        seq, ptr, obad = _sequences(place, m, kind, ord_dev, ord_op, topo)
        bad |= obad
    static = static_bytes(place, m, succ_ptr, succ_dst, succ_bytes, params, output, temp)
    if not liveness:
        for d in range(m):
            if static[d] > caps[d]:
                bad |= MEMORY
    if bad and not full:
        z = np.zeros(0, np.int64)
        return (bad, INF, np.zeros(0), np.zeros(0), z, np.zeros((0, 4), np.int64),
                np.zeros((0, 2)), static, static)
    start, end, run, tr_i, tr_t, rbad = execute(
        place, m, dur, seq, ptr, kind == DISPATCH, rank, byrank, sources, topo, pos, pred_count.copy(),
        succ_ptr, succ_dst, succ_bytes, lat, inv, mode, tr_cap)
    bad |= rbad
    peak = static
    if liveness:
        peak = liveness_peaks(place, m, start, end, succ_ptr, succ_dst, params, output,
                              temp, tr_i[:, 0].copy(), tr_i[:, 2].copy(),
                              tr_i[:, 3].copy(), tr_t[:, 0].copy())
        for d in range(m):
            if peak[d] > caps[d]:
                bad |= MEMORY
    makespan = 0.0
    for i in range(n):
        if end[i] > makespan:
            makespan = end[i]
    return bad, makespan, start, end, run, tr_i, tr_t, static, peak
