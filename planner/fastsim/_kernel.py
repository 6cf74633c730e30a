# ruff: noqa: PLR1730, SIM114  (numba kernel: explicit branches on purpose, as in simulate)
# mypy: disallow-untyped-defs=False, disallow-untyped-calls=False
# (numba types these functions from the arrays they are given)
"""The compiled simulator: `planner.simulate`'s event loop and memory rules over arrays.

Every step mirrors `simulate.run.Run.execute` (and `simulate.memory`'s `static_bytes` and
`liveness`) in the same order of floating-point operations, so times come out
bit-identical. Events carry unique keys, so any queue that pops in (time, key) order
replays the reference exactly.

All jitted code lives in this one file on purpose: numba's on-disk cache checks only the
defining file's timestamp, so a caller cached here would keep a stale copy of a callee
edited in another file.

Twin: `planner.simulate`, the reference; a rule changed here is changed there in the same
commit, and the battery that pins the rules (`tests/trust/test_rules_pinned.py`, and
`tests/test_fastsim.py` for bit-identity) runs over both.
"""

from __future__ import annotations

import numpy as np
from numba import njit  # type: ignore[import-untyped]

INF = np.inf
#: helpers that allocate nothing compile without numba's reference counting: otherwise
#: every call increments and decrements each array argument atomically, which made the
#: queues below 20x slower
_leaf = njit(cache=True, _nrt=False)
#: the event loop's small steps and the heaps' shared sift, inlined into their callers at
#: numba's level (LLVM leaves calls with many array arguments alone, and each costs per event)
_step = njit(cache=True, _nrt=False, inline="always")
# violation bits, in `simulate.KINDS` order
UNPLACED, ORDER, PIN, COLOCATION, UNRUNNABLE, NO_LINK, MEMORY = 1, 2, 4, 8, 16, 32, 256
RETRY = 1 << 20  # an assumption of the fast path failed: ask the reference instead
# how per-device sequences are given
DISPATCH, GIVEN, PRIORITY = 0, 1, 2


# -- queues: plain arrays (numba has no fast heap of tuples). Heap branches mispredict about
# half the time, so pops walk the hole down with a select and sift the last item up from
# the leaf (bottom-up heapsort's trick).


@_step
def _hole_to_leaf(ht, hk, lo, size):
    """Walk the hole at the root of the (time, key) heap in ht/hk[lo:lo + size] down to a
    leaf, moving the lesser child up at each level; return the leaf's place. A heap of
    plain keys passes its array as both `ht` and `hk` (the same order, and the compiler
    drops the second comparison and copy)."""
    c = 0
    while True:
        a = 2 * c + 1
        if a >= size:
            break
        if a + 1 < size:
            x = lo + a  # the first child, x + 1 the second
            a += (ht[x + 1] < ht[x]) | ((ht[x + 1] == ht[x]) & (hk[x + 1] < hk[x]))
        ht[lo + c] = ht[lo + a]
        hk[lo + c] = hk[lo + a]
        c = a
    return c


@_step
def _sift_up(ht, hk, lo, c, t, k):
    """Put (t, k) in the hole at `c` of the (time, key) heap in ht/hk[lo:], moving it up
    past every parent that comes after it. A heap of plain keys passes as `_hole_to_leaf`
    does (its array twice, the key as both), where the test reduces to `h[p] < key`."""
    while c > 0:
        p = (c - 1) >> 1
        if ht[lo + p] < t or (ht[lo + p] == t and hk[lo + p] < k):
            break
        ht[lo + c] = ht[lo + p]
        hk[lo + c] = hk[lo + p]
        c = p
    ht[lo + c] = t
    hk[lo + c] = k


@_leaf
def ev_push(ht, hk, size, t, k):
    """Push (t, k) onto the (time, key) heap of `size` items; return the new size."""
    _sift_up(ht, hk, 0, size, t, k)
    return size + 1


@_leaf
def ev_pop(ht, hk, size):
    """Remove the smallest (time, key) from a heap of `size` items; return its key."""
    top = hk[0]
    size -= 1
    t, k = ht[size], hk[size]
    _sift_up(ht, hk, 0, _hole_to_leaf(ht, hk, 0, size), t, k)
    return top


@_leaf
def kpush(h, lo, size, key):
    """Push an int64 key onto the heap in h[lo:lo + size]; return the new size."""
    _sift_up(h, h, lo, size, key, key)
    return size + 1


@_leaf
def kpop(h, lo, size):
    """Remove and return the smallest key of the heap in h[lo:lo + size] (bottom-up)."""
    top = h[lo]
    size -= 1
    key = h[lo + size]
    _sift_up(h, h, lo, _hole_to_leaf(h, h, lo, size), key, key)  # a key's time is itself
    return top


@_leaf
def _cq_less(a, b, ft, fk, fh):
    """Whether channel a's head event comes before channel b's, by (time, key)."""
    ta, tb = ft[fh[a]], ft[fh[b]]
    return ta < tb or (ta == tb and fk[fh[a]] < fk[fh[b]])


@_step
def _cq_put(hh, hp, pos, c):
    """Channel c takes place `pos` of the channels' heap."""
    hh[pos] = c
    hp[c] = pos


@_leaf
def _cq_up(hh, hp, pos, ft, fk, fh):
    c = hh[pos]
    while pos > 0:
        p = (pos - 1) >> 1
        if _cq_less(hh[p], c, ft, fk, fh):
            break
        _cq_put(hh, hp, pos, hh[p])
        pos = p
    _cq_put(hh, hp, pos, c)


@_leaf
def _cq_down(hh, hp, size, ft, fk, fh):
    c = hh[0]
    pos = 0
    while True:
        a = 2 * pos + 1
        if a >= size:
            break
        if a + 1 < size and _cq_less(hh[a + 1], hh[a], ft, fk, fh):
            a += 1
        if _cq_less(c, hh[a], ft, fk, fh):
            break
        _cq_put(hh, hp, pos, hh[a])
        pos = a
    _cq_put(hh, hp, pos, c)


@_leaf
def _cq_push(ft, fk, fh, ftl, hh, hp, hn, c, t, k):
    """Append event (t, k) to channel c; return the number of non-empty channels.

    A channel is a FIFO in ft/fk[fh[c]:ftl[c]] kept in (time, key) order; `hh` is a heap
    of the non-empty channels by head event, `hp` each channel's place in it. Returns -1,
    appending nothing, if (t, k) would not come last.
    """
    q = ftl[c]
    if q > fh[c] and (ft[q - 1] > t or (ft[q - 1] == t and fk[q - 1] > k)):
        return -1
    ft[q] = t
    fk[q] = k
    ftl[c] = q + 1
    if q == fh[c]:
        hh[hn] = c
        _cq_up(hh, hp, hn, ft, fk, fh)
        return hn + 1
    return hn


@_leaf
def _cq_pop(ft, fk, fh, ftl, hh, hp, hn):
    """Remove the earliest event of all channels; return its key and the new `hn`."""
    c = hh[0]
    k = fk[fh[c]]
    fh[c] += 1
    if fh[c] == ftl[c]:
        hn -= 1
        if hn > 0:
            hh[0] = hh[hn]
            _cq_down(hh, hp, hn, ft, fk, fh)
    elif hn > 1:
        _cq_down(hh, hp, hn, ft, fk, fh)
    return k, hn


@_leaf
def sq_push(q, ht, hk, ft, fk, fh, ftl, hh, hp, c, t, k):
    """Static order's event queue: (t, k) to channel c, or to the heap when out of order.

    A device's completions come in time order under a static order (its next op cannot
    end before its last), so they queue in a FIFO per device (channel m: the unplaced, at
    `inf`). Only ties out of key order (zero-time ops) take the heap. `q` holds the
    sizes: q[1] heap items, q[3] non-empty channels.
    """
    r = _cq_push(ft, fk, fh, ftl, hh, hp, q[3], c, t, k)
    if r < 0:
        q[1] = ev_push(ht, hk, q[1], t, k)
    else:
        q[3] = r


@_leaf
def sq_first(q, ht, hk, ft, fk, fh, hh):
    """Whether the static queue's next event is a channel's (else the heap's)."""
    if q[3] == 0:
        return False
    if q[1] == 0:
        return True
    e = fh[hh[0]]
    return ft[e] < ht[0] or (ft[e] == ht[0] and fk[e] < hk[0])


@_leaf
def sq_time(q, ht, hk, ft, fk, fh, hh):
    """The time of the static queue's next event (`inf` when it is empty)."""
    if sq_first(q, ht, hk, ft, fk, fh, hh):
        return ft[fh[hh[0]]]
    return ht[0] if q[1] else INF


@_leaf
def sq_pop(q, ht, hk, ft, fk, fh, ftl, hh, hp):
    """Remove the static queue's next event; return its key."""
    if sq_first(q, ht, hk, ft, fk, fh, hh):
        k, q[3] = _cq_pop(ft, fk, fh, ftl, hh, hp, q[3])
        return k
    k = ev_pop(ht, hk, q[1])
    q[1] -= 1
    return k


# -- memory: `simulate.memory.static_bytes` and the peaks of `liveness` ----------------


@njit(cache=True)
def static_bytes(place, m, succ_ptr, succ_dst, succ_bytes, params, output, temp):
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
        nt = 0  # `cost.copies`, inline: compiled code calls no Python
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


# long: a numba kernel for `simulate.memory.liveness`'s peaks, compared with it by
# tests/test_fastsim.py; its passes (buffers, copies per device, ops per device, the sweep)
# share their scratch arrays, and a split would change compiled code checked against it
# complex: the passes' loops and the sweep's three-way merge of starts, ends and copies, each
# a branch of its own; one numba kernel, kept whole for the reasons above
@njit(cache=True)
def liveness_peaks(place, m, start, end, run, succ_ptr, succ_dst, params, output, temp,
                   tr_i, tr_t):
    """Per device, the highest level of live bytes over a run (buffers on [alloc, free)).

    Params are live from t = 0; an op's output from its start to the last end of its
    consumers on its device and of its transfers that carry bytes (`simulate.memory._frees`:
    never without either, nor while a transfer it owes never happens), its temp from start
    to end; a received copy from its transfer's start to the last end of its consumers
    there. At one instant frees and allocations net out, so the peak is the highest level
    after an instant; where zero-time ops run, also that level less what the op starting
    after them allocates, plus the buffers freed there that they read and their largest
    temp (`simulate.memory._zero_time_extra`).

    Nearly no sort: a device runs its ops one after another (`run`), so their starts and
    ends come in that order, and a free happens at the end of an op on the device (the
    buffer's last consumer there), but an output still being sent then or with no consumer
    there, freed as its last transfer ends (`late`, sorted per device). Copies arrive in
    start order except under `link` contention, where an insertion sort puts the few
    stragglers back.
    """
    n = place.shape[0]
    n_tr = tr_i.shape[0]
    up = np.zeros(n, np.int64)  # bytes allocated at start[i]
    down = np.zeros(n, np.int64)  # bytes freed at end[i]
    read = np.zeros(n, np.int64)  # of those, bytes a zero-time op ending then reads
    base = np.zeros(m, np.int64)
    sent = np.full(n, -1.0)  # per op, when its last transfer that carries bytes ends
    n_sent = np.zeros(n, np.int64)  # per op, its transfers (one per consuming device)
    for r in range(n_tr):
        n_sent[tr_i[r, 0]] += 1
        if tr_i[r, 3] > 0 and tr_t[r, 1] > sent[tr_i[r, 0]]:
            sent[tr_i[r, 0]] = tr_t[r, 1]
    late = np.full(n, -1.0)  # per op, when its last transfer frees its output (-1: not so)
    seen = np.full(m, -1, np.int64)
    for i in range(n):
        d = place[i]
        if d < 0:
            continue
        base[d] += params[i]
        if not np.isfinite(start[i]):
            continue
        last = _last_consumer(i, d, place, end, succ_ptr, succ_dst)
        if _owes(i, d, place, succ_ptr, succ_dst, seen) > n_sent[i]:
            last = -2  # a transfer it owes never happens (no link): never freed
        if last > -2 and sent[i] > (end[last] if last >= 0 else start[i]) and output[i] > 0:
            up[i] += output[i]
            late[i] = sent[i]
        else:
            _account(up, down, i, max(last, -1), output[i], start[i], end)
        _account(up, down, i, i, temp[i], start[i], end)
        if (late[i] < 0 and last >= 0 and output[i] > 0
                and _zero_time_reader(i, d, end[last], place, start, end, succ_ptr,
                                      succ_dst)):
            read[last] += output[i]
    l_ptr, l_t, l_b = _late_frees(place, m, late, output)
    # copies per destination, in start order
    c_ptr = np.zeros(m + 1, np.int64)
    for r in range(n_tr):
        c_ptr[tr_i[r, 2] + 1] += 1
    for d in range(m):
        c_ptr[d + 1] += c_ptr[d]
    fill = c_ptr[:m].copy()
    c_t = np.empty(n_tr)
    c_b = np.zeros(n_tr, np.int64)
    for r in range(n_tr):
        d = tr_i[r, 2]
        alloc = tr_t[r, 0]
        last = _last_consumer(tr_i[r, 0], d, place, end, succ_ptr, succ_dst)
        free = end[last] if last >= 0 else -1.0
        size = 0
        if tr_i[r, 3] > 0 and np.isfinite(alloc) and free > alloc:
            size = tr_i[r, 3]
            if np.isfinite(free):
                down[last] += size
        if last >= 0 and tr_i[r, 3] > 0 and _zero_time_reader(tr_i[r, 0], d, free, place,
                                                              start, end, succ_ptr, succ_dst):
            read[last] += tr_i[r, 3]
        q = fill[d]
        fill[d] += 1
        while q > c_ptr[d] and c_t[q - 1] > alloc:  # insertion sort (link contention)
            c_t[q] = c_t[q - 1]
            c_b[q] = c_b[q - 1]
            q -= 1
        c_t[q] = alloc
        c_b[q] = size
    # ops per device in the order they ran
    o_ptr = np.zeros(m + 1, np.int64)
    for i in run:
        o_ptr[place[i] + 1] += 1
    for d in range(m):
        o_ptr[d + 1] += o_ptr[d]
    fill = o_ptr[:m].copy()
    ops = np.empty(run.shape[0], np.int64)
    for i in run:
        ops[fill[place[i]]] = i
        fill[place[i]] += 1
    peak = base.copy()
    for d in range(m):
        level = base[d]
        a, f, c, lf = o_ptr[d], o_ptr[d], c_ptr[d], l_ptr[d]
        a_end, c_end, l_end = o_ptr[d + 1], c_ptr[d + 1], l_ptr[d + 1]
        while a < a_end or f < a_end or c < c_end or lf < l_end:
            t = INF
            if a < a_end:
                t = start[ops[a]]
            if f < a_end and end[ops[f]] < t:
                t = end[ops[f]]
            if c < c_end and c_t[c] < t:
                t = c_t[c]
            if lf < l_end and l_t[lf] < t:
                t = l_t[lf]
            if t == INF:
                break  # what remains never happens
            zero, most, after, freed = False, 0, 0, 0
            while a < a_end and start[ops[a]] == t:
                i = ops[a]
                level += up[i]
                if end[i] == t:  # a zero-time op: its temp while it runs
                    zero = True
                    most = max(most, temp[i])
                else:  # the op that starts after them
                    after += up[i]
                a += 1
            while f < a_end and end[ops[f]] == t:
                level -= down[ops[f]]
                freed += read[ops[f]]
                f += 1
            while c < c_end and c_t[c] == t:
                level += c_b[c]
                c += 1
            while lf < l_end and l_t[lf] == t:
                level -= l_b[lf]
                lf += 1
            if level > peak[d]:
                peak[d] = level
            if zero and level - after + freed + most > peak[d]:
                peak[d] = level - after + freed + most
    return peak


@njit(cache=True)
def _late_frees(place, m, late, output):
    """Per device (`ptr` into times and bytes), the outputs freed as their last transfer
    ends (after their last consumer there, or without one), in time order."""
    ptr = np.zeros(m + 1, np.int64)
    for i in range(place.shape[0]):
        if late[i] >= 0:
            ptr[place[i] + 1] += 1
    for d in range(m):
        ptr[d + 1] += ptr[d]
    fill = ptr[:m].copy()
    t = np.empty(ptr[m])
    b = np.zeros(ptr[m], np.int64)
    for i in range(place.shape[0]):
        if late[i] >= 0:
            t[fill[place[i]]] = late[i]
            b[fill[place[i]]] = output[i]
            fill[place[i]] += 1
    for d in range(m):
        if ptr[d + 1] - ptr[d] > 1:
            seg = slice(ptr[d], ptr[d + 1])
            order = np.argsort(t[seg], kind="mergesort")
            t[seg] = t[seg][order]
            b[seg] = b[seg][order]
    return ptr, t, b


@_leaf
def _last_consumer(i, d, place, end, succ_ptr, succ_dst):
    """The consumer of op i on device d that ends last (-1: none there)."""
    last = -1
    for q in range(succ_ptr[i], succ_ptr[i + 1]):
        j = succ_dst[q]
        if place[j] == d and (last < 0 or end[j] > end[last]):
            last = j
    return last


@_leaf
def _owes(i, d, place, succ_ptr, succ_dst, seen):
    """How many other devices hold a consumer of op i on device d (`seen`: scratch per
    device, left marked with i)."""
    count = 0
    for q in range(succ_ptr[i], succ_ptr[i + 1]):
        dj = place[succ_dst[q]]
        if dj >= 0 and dj != d and seen[dj] != i:
            seen[dj] = i
            count += 1
    return count


@_leaf
def _zero_time_reader(i, d, t, place, start, end, succ_ptr, succ_dst):
    """Whether a consumer of op i on device d takes no time at instant `t` (it reads the
    buffer freed then while it runs)."""
    for q in range(succ_ptr[i], succ_ptr[i + 1]):
        j = succ_dst[q]
        if place[j] == d and start[j] == t and end[j] == t:
            return True
    return False


@_leaf
def _account(up, down, i, last, size, alloc, end):
    """Count a buffer of op i freed at the end of op `last`, as `simulate.memory.liveness`
    keeps it: some bytes, allocated, and freed after it is allocated (or never)."""
    free = end[last] if last >= 0 else INF
    if size <= 0 or not free > alloc:
        return
    up[i] += size
    if np.isfinite(free):
        down[last] += size


# -- the event loop --------------------------------------------------------------------


@njit(cache=True)
def _sequences(place, m, kind, ord_dev, ord_op, topo):
    """Per-device sequences as (ops, offsets) and the `order` bit if entries were dropped.

    GIVEN: `simulate.checks.normalize_order` (entries as (device position, op), op -1 when
    not an integer); PRIORITY: `ord_op` lists ops in priority order, each device keeps its own.
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


@_leaf
def _checks(place, m, dur, pins, grp_ptr, grp_ops):
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


@_leaf
def _try_start(d, seq, ptr, head, free, pending, ready, dur, start, end, run, cnt,
               ht, hk, ft, fk, fh, ftl, hh, hp, pos):
    """Static order: start every head of `d`'s sequence whose inputs are all known.

    Its completions go to the static queue (`sq_push`).
    """
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
        sq_push(cnt, ht, hk, ft, fk, fh, ftl, hh, hp, d, f, pos[i])
        k += 1
    head[d] = k
    free[d] = f


@_leaf
def _prepare_queues(place, m, seq, ptr, dynamic, qlo, prev_on, fh, ftl):
    """Where each device's slice of the dynamic heap starts (`qlo`); for a static order,
    each op's predecessor on its device and the channels' slices."""
    n = place.shape[0]
    if dynamic:
        for i in range(n):
            if place[i] >= 0 and place[i] + 1 < m:
                qlo[place[i] + 1] += 1
        for d in range(1, m):
            qlo[d] += qlo[d - 1]
        return
    for d in range(m):
        for k in range(ptr[d] + 1, ptr[d + 1]):
            prev_on[seq[k]] = seq[k - 1]
    for i in range(n):
        if place[i] >= 0:
            fh[place[i] + 1] += 1
    for c in range(1, m + 1):
        fh[c] += fh[c - 1]
    for c in range(m + 1):  # no slices: they need reference counting
        ftl[c] = fh[c]


@_leaf
def _seed(place, m, dynamic, sources, topo, src, s_at, s_end, dirty, is_dirty,
          seq, ptr, head, free, pending, ready, dur, start, end, run, cnt,
          ht, hk, ft, fk, fh, ftl, hh, hp, pos):
    """`simulate.run.Run._seed`: unplaced ops never end; sources wait in per-device sorted
    lists (dynamic) or start in order (static). Returns how many devices are woken."""
    n = place.shape[0]
    for q in range(n):
        i = topo[q]
        if place[i] < 0:
            if dynamic:
                cnt[1] = ev_push(ht, hk, cnt[1], INF, q)
            else:
                sq_push(cnt, ht, hk, ft, fk, fh, ftl, hh, hp, m, INF, q)
    nd = 0
    if not dynamic:
        for d in range(m):
            _try_start(d, seq, ptr, head, free, pending, ready, dur, start, end, run, cnt,
                       ht, hk, ft, fk, fh, ftl, hh, hp, pos)
        return nd
    for i in sources:
        if place[i] >= 0:
            s_at[place[i] + 1] += 1
    for d in range(m):
        s_at[d + 1] += s_at[d]
    for d in range(m):
        s_end[d] = s_at[d]
    for i in sources:
        d = place[i]
        if d >= 0:
            src[s_end[d]] = i
            s_end[d] += 1
    for d in range(m):
        if s_end[d] > s_at[d]:
            nd = _wake(d, dirty, is_dirty, nd)
    return nd


@_step
def _zero_time_waits(i, t, batch, first_batch, known_batch, known_time, prev_on, end,
                     done_batch):
    """`simulate.run.Run._zero_time_waits`: whether zero-time op `i`'s completion waits."""
    trig = known_batch[i] if known_time[i] == t else first_batch
    p_i = prev_on[i]
    if p_i >= 0 and end[p_i] == t:
        trig = max(trig, done_batch[p_i]) if done_batch[p_i] >= 0 else batch
    return batch <= trig  # dispatch would start it in this batch or later


@_step
def _wake(d, dirty, is_dirty, nd):
    """`simulate.run.Run._wake`; returns the new count of woken devices."""
    if not is_dirty[d]:
        is_dirty[d] = True
        dirty[nd] = d
        nd += 1
    return nd


@_step
def _dispatch(t, nd, dirty, is_dirty, idle, qh, qlo, qn, src, s_at, s_end, rank, byrank,
              dur, start, end, run, cnt, ht, hk, pos):
    """`simulate.run.Run._dispatch`: each woken idle device starts its first queued op (a
    source's key is its rank: instant 0)."""
    for q in range(nd):
        d = dirty[q]
        is_dirty[d] = False
        if idle[d] and (qn[d] or s_at[d] < s_end[d]):
            if s_at[d] < s_end[d] and (qn[d] == 0 or rank[src[s_at[d]]] < qh[qlo[d]]):
                i = src[s_at[d]]
                s_at[d] += 1
            else:
                i = byrank[kpop(qh, qlo[d], qn[d]) & 0xFFFFFFFF]
                qn[d] -= 1
            idle[d] = False
            start[i] = t
            f = t + dur[i]
            end[i] = f
            run[cnt[0]] = i
            cnt[0] += 1
            cnt[1] = ev_push(ht, hk, cnt[1], f, pos[i])


@_step
def _becomes_ready(j, instant, place, rank, qh, qlo, qn, dirty, is_dirty, nd):
    """`simulate.run.Run._becomes_ready` (dynamic): op `j`'s last input arrives now; it
    queues on its device, keyed (instant << 32) | rank. Returns the woken devices' count."""
    d = place[j]
    qn[d] = kpush(qh, qlo[d], qn[d], (instant << 32) | rank[j])
    return _wake(d, dirty, is_dirty, nd)


@_step
def _send_outputs(i, di, t, lo, hi, bad, place, succ_dst, succ_bytes, lat, inv, mode, m,
                  best, touched, arrive, link_free, chan_free, tr_i, tr_t, cnt):
    """`simulate.run.Run._send_outputs`: one transfer per other consuming device, in device
    order; each consumer device's arrival time in `arrive`. Returns `bad` with `NO_LINK`
    where a transfer has no link (`cost.copies` and `cost.transfer_seconds`, inline:
    compiled code calls no Python)."""
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
    return bad


@_leaf
def _deliver(i, di, t, lo, hi, batch, instant, nd, bad, dynamic, n, place, succ_dst,
             arrive, ready, pending, known_batch, known_time, seq, ptr, head, free, dur,
             start, end, run, cnt, ht, hk, ft, fk, fh, ftl, hh, hp, pos, qh, qlo, qn, rank,
             dirty, is_dirty):
    """`simulate.run.Run._deliver`: the consumers get the output; one with all inputs known
    starts (static) or queues (dynamic). Returns (woken devices, bits)."""
    for k in range(lo, hi):
        j = succ_dst[k]
        dj = place[j]
        a = t if dj == di else arrive[dj]
        ready[j] = max(ready[j], a)
        pending[j] -= 1
        if pending[j] or dj < 0:
            continue
        if not dynamic:
            known_batch[j] = batch
            known_time[j] = t
            if seq[head[dj]] == j:
                _try_start(dj, seq, ptr, head, free, pending, ready, dur, start, end,
                           run, cnt, ht, hk, ft, fk, fh, ftl, hh, hp, pos)
        elif ready[j] <= t:
            if ready[j] != t:  # a transfer that ends before it starts
                bad |= RETRY
            qn[dj] = kpush(qh, qlo[dj], qn[dj], (instant << 32) | rank[j])
            nd = _wake(dj, dirty, is_dirty, nd)
        else:
            cnt[1] = ev_push(ht, hk, cnt[1], ready[j], n + j)
    return nd, bad


# long: the arrays of one run, then the loop of `simulate.run.Run.execute`. `_complete`
# stays inline, marked with the reference's name: it reads and writes most of the run's arrays.
# `_deliver` is a call (numba cannot inline a function of its many arguments: "calling a
# closure with *args"), `_send_outputs` and `_becomes_ready` are inlined: so split, GNMT's
# and a 100k-op graph's runs take as long as with all four inline (a non-inlined
# `_send_outputs` made them 25% slower)
# complex: the reference's event loop: its pops (dynamic or static, the zero-time waits), the
# steps it calls, and the batch's end
@njit(cache=True)
def execute(place, m, dur, seq, ptr, dynamic, rank, byrank, sources, topo, pos, pending,
            succ_ptr, succ_dst, succ_bytes, lat, inv, mode, tr_cap):
    """Run one simulation; see `simulate.run.Run.execute`, whose steps this takes in the same
    order under the same names (the same order of floating-point operations, so times
    agree; tests/test_fastsim.py compares them):

    1. `_prepare_queues` (this kernel's own: the queues' slices of flat arrays), then
       `_seed`: the first events.
    2. Per instant t, in (time, key) order, each event due at t: a static order's zero-time
       op whose completion waits (`_zero_time_waits`) is deferred; a key of n or more is
       `_becomes_ready` (dynamic: an op's last input arrives); else `_complete` (inline):
       its device idles, `_send_outputs` times the transfers to the other consuming
       devices, `_deliver` hands the consumers the output, starting or queueing those
       with every input known.
    3. `_dispatch`: each woken idle device starts its first queued op; the deferred
       events go back into the queue at t; the next batch.
    4. A static order with ops left unstarted deadlocked (`ORDER`).

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
    cnt = np.zeros(4, np.int64)  # ops started, heap items, transfers, non-empty channels
    # dynamic: one (time, key) heap; static: a channel per device and one for the unplaced
    ht = np.empty(2 * n + 1)
    hk = np.empty(2 * n + 1, np.int64)
    ft = np.empty(0 if dynamic else n)
    fk = np.empty(0 if dynamic else n, np.int64)
    # channels: head and tail in ht/hk, a heap of the non-empty ones, their place in it
    fh = np.zeros(m + 1, np.int64)
    ftl = np.zeros(m + 1, np.int64)
    hh = np.zeros(m + 1, np.int64)
    hp = np.zeros(m + 1, np.int64)
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
    # static: a zero-time op's completion waits as in the reference (`simulate.run.Run`)
    known_batch = np.zeros(n, np.int64)
    known_time = np.zeros(n)
    done_batch = np.full(n, -1, np.int64)  # -1: not completed yet
    prev_on = np.full(n, -1, np.int64)
    deferred = np.empty(n, np.int64)
    dirty = np.empty(m, np.int64)
    is_dirty = np.zeros(m, np.bool_)
    _prepare_queues(place, m, seq, ptr, dynamic, qlo, prev_on, fh, ftl)
    nd = _seed(place, m, dynamic, sources, topo, src, s_at, s_end, dirty, is_dirty,
               seq, ptr, head, free, pending, ready, dur, start, end, run, cnt,
               ht, hk, ft, fk, fh, ftl, hh, hp, pos)
    t = 0.0
    instant = batch = first_batch = ndef = bad = 0
    while cnt[1] or cnt[3] or nd:
        if not nd and ((cnt[1] and ht[0] != t) if dynamic else
                       sq_time(cnt, ht, hk, ft, fk, fh, hh) != t):
            t = ht[0] if dynamic else sq_time(cnt, ht, hk, ft, fk, fh, hh)
            instant += 1
            first_batch = batch
        while (cnt[1] and ht[0] == t) if dynamic else (
                (cnt[1] or cnt[3]) and sq_time(cnt, ht, hk, ft, fk, fh, hh) == t):
            if dynamic:
                key = ev_pop(ht, hk, cnt[1])
                cnt[1] -= 1
            else:
                key = sq_pop(cnt, ht, hk, ft, fk, fh, ftl, hh, hp)
                if (key < n and dur[topo[key]] == 0.0 and place[topo[key]] >= 0
                        and _zero_time_waits(topo[key], t, batch, first_batch, known_batch,
                                             known_time, prev_on, end, done_batch)):
                    deferred[ndef] = key
                    ndef += 1
                    continue
            if key >= n:
                nd = _becomes_ready(key - n, instant, place, rank, qh, qlo, qn, dirty,
                                    is_dirty, nd)
                continue
            # `_complete`: op topo[key] ends now
            i = topo[key]
            done_batch[i] = batch
            di = place[i]
            if dynamic and di >= 0:
                idle[di] = True
                nd = _wake(di, dirty, is_dirty, nd)
            lo, hi = succ_ptr[i], succ_ptr[i + 1]
            if lo == hi:
                continue
            bad = _send_outputs(i, di, t, lo, hi, bad, place, succ_dst, succ_bytes, lat, inv,
                                mode, m, best, touched, arrive, link_free, chan_free, tr_i,
                                tr_t, cnt)
            nd, bad = _deliver(i, di, t, lo, hi, batch, instant, nd, bad, dynamic, n, place,
                               succ_dst, arrive, ready, pending, known_batch, known_time, seq,
                               ptr, head, free, dur, start, end, run, cnt, ht, hk, ft, fk, fh,
                               ftl, hh, hp, pos, qh, qlo, qn, rank, dirty, is_dirty)
        _dispatch(t, nd, dirty, is_dirty, idle, qh, qlo, qn, src, s_at, s_end, rank, byrank,
                  dur, start, end, run, cnt, ht, hk, pos)
        nd = 0
        for q in range(ndef):  # the heap takes them: a channel's times must not fall
            cnt[1] = ev_push(ht, hk, cnt[1], t, deferred[q])
        ndef = 0
        batch += 1
    if not dynamic:
        for d in range(m):
            if head[d] < ptr[d + 1]:
                bad |= ORDER  # the static order deadlocked
    r = cnt[2]
    return start, end, run[:cnt[0]], tr_i[:r], tr_t[:r], bad


@njit(cache=True, nogil=True)  # lets a search's threads overlap evaluations
def evaluate(place_in, m, compute, kind, ord_dev, ord_op, full, liveness, rank, byrank,
             sources, topo, pos, pred_count, succ_ptr, succ_dst, succ_bytes, lat, inv, mode,
             tr_cap, pins, grp_ptr, grp_ops, params, output, temp, caps):
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
    if full or not liveness:
        static = static_bytes(place, m, succ_ptr, succ_dst, succ_bytes, params, output, temp)
    else:  # a liveness makespan needs no static figure
        static = np.zeros(m, np.int64)
    if not liveness:
        for d in range(m):
            if static[d] > caps[d]:
                bad |= MEMORY
    if bad and not full:
        z = np.zeros(0, np.int64)
        return (bad, INF, np.zeros(0), np.zeros(0), z, np.zeros((0, 4), np.int64),
                np.zeros((0, 2)), static, static)
    start, end, run, tr_i, tr_t, rbad = execute(
        place, m, dur, seq, ptr, kind == DISPATCH, rank, byrank, sources, topo, pos,
        pred_count.copy(), succ_ptr, succ_dst, succ_bytes, lat, inv, mode, tr_cap)
    bad |= rbad
    peak = static
    if liveness:
        peak = liveness_peaks(place, m, start, end, run, succ_ptr, succ_dst, params, output,
                              temp, tr_i, tr_t)
        for d in range(m):
            if peak[d] > caps[d]:
                bad |= MEMORY
    makespan = 0.0
    for i in range(n):
        if end[i] > makespan:
            makespan = end[i]
    return bad, makespan, start, end, run, tr_i, tr_t, static, peak
