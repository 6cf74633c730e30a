# ruff: noqa: PLR1730, SIM114  (numba kernel: explicit branches on purpose, as in etf.py)
# mypy: disallow-untyped-defs=False, disallow-untyped-calls=False
# (numba types these functions from the arrays they are given)
"""The compiled ETF engine: `etf.etf_schedule`'s first pass over flat arrays (numba).

A twin of the Python engine for the case `fixed is None` and a `Placer` without budget or
given placement (`unbounded` or not, with or without the SCT reservation's `favourite`):
the ready set (`etf.ready_set`), the candidate choice (`etf.device_choice`), the commit
loop (`etf._commit_loop`, `_bind`, `_drop`), floating members (`floating.etf_policy`),
the SCT reservation (`sct.reservation`) and memory as `Placer.need` / `fits` / `commit`
with `StaticMemoryTracker.extra` / `place` count them. Every float is computed by the same
operations in the same order, so placements and start times are bit-identical, and a dead
end reports the same op (tests/algorithms/test_engine_kernel.py compares them).

The heaps are heapq's own algorithm over arrays: an entry is stored as (key, r), r being
the op's rank by (priority, op) (`order`), which compares exactly as the Python tuple
(key, priority, op) does, NaN keys included (see `_lt`); a pending entry's arrival is
`arr[i, d]`, the value its Python tuple holds.

The Python engine stays the reference; `etf.etf_schedule` dispatches here (see there for
when), and `schedule` leaves the `Placer` as the Python engine would (on a dead end too:
`retry.explain_stuck` reads it). All jitted code lives in this one file: numba's on-disk
cache checks only the defining file's timestamp.

Twin: `planner.algorithms.listsched.etf` with `floating`, `sct`, `placer`, `run` and
`planner.cost`'s `StaticMemoryTracker`, the reference; the hand-derived battery
(`tests/algorithms`, with the `list_engine` fixture) and
`tests/algorithms/test_engine_kernel.py` run over both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numba import njit  # type: ignore[import-untyped]

from ...model import Cluster, Device, Edge, Graph, Link, Op, Problem
from .instance import Instance
from .placer import Placer, Stuck

__all__ = ["schedule", "schedule_arrays", "warm_up"]

INF = np.inf
#: helpers that allocate nothing compile without numba's reference counting (as in
#: `planner.fastsim._kernel`: otherwise each call increments and decrements every array)
_leaf = njit(cache=True, _nrt=False)
#: the engine's parts take the run's arrays as named tuples; numba passes every array as
#: seven scalars, so a call costs hundreds of stores: they are inlined into the loop instead
_part = njit(cache=True, inline="always")


# -- the run's arrays, as named tuples: numba reads a field at no cost, and the classes live
# here, beside the kernels typed by them, so that numba's cache sees an edit to them too


class InstArrays(NamedTuple):
    """`A`, the instance: `Instance.engine_arrays`' tuple, field for field (see there)."""

    comp: np.ndarray  # (n, m) compute seconds
    lat: np.ndarray  # (m, m) link latency
    inv: np.ndarray  # (m, m) seconds per byte
    pred_ptr: np.ndarray  # inputs in CSR: op i's edges pred_ptr[i]:pred_ptr[i + 1]
    pred_src: np.ndarray  # their producer,
    pred_b: np.ndarray  # bytes,
    pred_bf: np.ndarray  # and bytes as floats
    succ_ptr: np.ndarray  # outputs in CSR
    succ_dst: np.ndarray  # their consumer,
    succ_b: np.ndarray  # and bytes
    group_of: np.ndarray  # colocation group per op, -1 for none
    grp_ptr: np.ndarray  # groups in CSR
    grp_ops: np.ndarray  # their members
    flo: np.ndarray  # whether op floats in its group
    allow: np.ndarray  # (n, m) op may run on device
    best: np.ndarray  # its unit's least time
    po: np.ndarray  # params + outputs per op
    temp: np.ndarray  # temp per op
    caps: np.ndarray  # memory per device
    unit: np.ndarray  # (n, m) unit times


class MemState(NamedTuple):
    """`M`, memory as `Placer` and `StaticMemoryTracker` hold it."""

    dev_of: np.ndarray  # device per op, -1 unplaced
    used: np.ndarray  # tracker's used per device
    trtemp: np.ndarray  # tracker's temp per device
    copies: np.ndarray  # (n, m) bytes of op's output held on device
    group_dev: np.ndarray  # device per group, -1 unbound
    gpl: np.ndarray  # group params + outputs left to place
    res_po: np.ndarray  # reserved params + outputs per device
    res_val: np.ndarray  # group's reserved temp (res_temp[rdev[g]][g])
    res_on: np.ndarray  # whether group has one,
    rdev: np.ndarray  # on which device,
    rlist: np.ndarray  # (m, groups) the groups with one per device,
    rsz: np.ndarray  # how many,
    rpos: np.ndarray  # and group's place in rlist
    scratch: np.ndarray  # per op, -1 between uses (`_need`)
    touched: np.ndarray  # the ops `_need` set in scratch


class RunState(NamedTuple):
    """`R`, the run: times, the ready set's heaps and the SCT reservation."""

    m: int  # devices
    prank: np.ndarray  # priority per op
    rank: np.ndarray  # rank by (priority, op): a heap entry's r
    end: np.ndarray  # finish per op
    avail: np.ndarray  # free from, per device
    vend: np.ndarray  # floating op's inputs done
    arr: np.ndarray  # (n, m) inputs' arrival on device
    ready: np.ndarray  # per op
    dirty: np.ndarray  # device's cached candidate stale
    hoff: np.ndarray  # where device d's part of each heap array starts
    ak: np.ndarray  # arrived heap: keys,
    ar: np.ndarray  # ranks,
    asz: np.ndarray  # sizes
    pk: np.ndarray  # pending heap
    pr: np.ndarray
    psz: np.ndarray
    uk: np.ndarray  # urgent heap (SCT)
    ur: np.ndarray
    usz: np.ndarray
    reserved: np.ndarray  # SCT's favourite op per device, -1 none
    sct: bool  # the SCT reservation is on


class FloatState(NamedTuple):
    """`F`, floating members waiting for their group's device."""

    missing: np.ndarray  # inputs not done, per op
    stack: np.ndarray  # `_settle`'s
    af_buf: np.ndarray  # group's waiting members, in grp_ptr's slots
    af_len: np.ndarray  # how many, per group


class Candidates(NamedTuple):
    """`C`, per device the cached candidate pair (`etf.device_choice`)."""

    has: np.ndarray  # whether there is one
    key: np.ndarray  # its key,
    pr: np.ndarray  # op's priority,
    fin: np.ndarray  # finish,
    op: np.ndarray  # op,
    est: np.ndarray  # and start


# -- heaps of (key, r) in hk/hr[base:base + hsz[d]], one per device: heapq's algorithm and
# Python's tuple order, so that even a NaN key (inf - inf: an arrival over a missing link)
# leaves the heap as heapq leaves it


@_leaf
def _lt(k1, r1, k2, r2):
    """(k1, r1) < (k2, r2) as Python compares tuples: the first unequal item decides, and
    NaN is unequal to everything and less than nothing."""
    if k1 != k2:
        return k1 < k2
    return r1 < r2


@_leaf
def _sift_to_root(hk, hr, base, pos, key, r):
    """heapq's `_siftdown`: the item (`key`, `r`) moves from `pos` towards the root past
    every parent it is less than."""
    while pos > 0:
        parent = (pos - 1) >> 1
        if not _lt(key, r, hk[base + parent], hr[base + parent]):
            break
        hk[base + pos] = hk[base + parent]
        hr[base + pos] = hr[base + parent]
        pos = parent
    hk[base + pos] = key
    hr[base + pos] = r


@_leaf
def _push(hk, hr, hsz, base, d, key, r):
    """heapq.heappush: append, then `_sift_to_root`."""
    pos = hsz[d]
    hsz[d] = pos + 1
    _sift_to_root(hk, hr, base, pos, key, r)


@_leaf
def _pop(hk, hr, hsz, base, d):
    """heapq.heappop: the last item goes to the root, `_siftup` walks the smaller child
    (the right one unless the left is less) to a leaf, `_sift_to_root` brings it back up."""
    size = hsz[d] - 1
    hsz[d] = size
    if size == 0:
        return
    key = hk[base + size]
    r = hr[base + size]
    pos = 0
    child = 1
    while child < size:
        right = child + 1
        if right < size and not _lt(hk[base + child], hr[base + child], hk[base + right],
                                    hr[base + right]):
            child = right
        hk[base + pos] = hk[base + child]
        hr[base + pos] = hr[base + child]
        pos = child
        child = 2 * pos + 1
    _sift_to_root(hk, hr, base, pos, key, r)


# -- memory: Placer and StaticMemoryTracker --------------------------------------------------


@_leaf
def _valid(i, d, dev_of, forb, group_of, group_dev):
    """`run.validity`."""
    if dev_of[i] >= 0 or forb[i, d]:
        return False
    g = group_of[i]
    return g < 0 or group_dev[g] < 0 or group_dev[g] == d


@_leaf
def _unplaced_temp(g, without, grp_ptr, grp_ops, dev_of, temp):
    """`Placer._unplaced_temp`."""
    best = 0
    found = False
    for k in range(grp_ptr[g], grp_ptr[g + 1]):
        j = grp_ops[k]
        if dev_of[j] < 0 and j != without and (not found or temp[j] > best):
            best = temp[j]
            found = True
    return best


@_part
def _need(i, d, A, M):
    """`Placer.need`, with `StaticMemoryTracker.extra` inline."""
    po, temp, dev_of = A.po, A.temp, M.dev_of
    copies, scratch, touched = M.copies, M.scratch, M.touched
    add = po[i] + max(0, temp[i] - M.trtemp[d])
    nt = 0
    for e in range(A.pred_ptr[i], A.pred_ptr[i + 1]):
        s = A.pred_src[e]
        sd = dev_of[s]
        if sd != -1 and sd != d:
            if scratch[s] < 0:
                scratch[s] = copies[s, d]
                touched[nt] = s
                nt += 1
            if A.pred_b[e] > scratch[s]:
                scratch[s] = A.pred_b[e]
    for k in range(nt):
        s = touched[k]
        add += scratch[s] - copies[s, d]
        scratch[s] = -1
    total = M.used[d] + add + M.res_po[d]
    g = A.group_of[i]
    rest = 0
    found = False
    for k in range(M.rsz[d]):
        gg = M.rlist[d, k]
        if gg != g and (not found or M.res_val[gg] > rest):
            rest = M.res_val[gg]
            found = True
    if g >= 0:
        if M.group_dev[g] < 0:
            total += M.gpl[g]
        total -= po[i]
        ut = _unplaced_temp(g, i, A.grp_ptr, A.grp_ops, dev_of, temp)
        if ut > rest:
            rest = ut
        # Python's max(rest, ut) keeps rest on ties: the same value
    new_temp = M.trtemp[d]
    if temp[i] > new_temp:
        new_temp = temp[i]
    if rest > new_temp:
        total += rest - new_temp
    return total


@_leaf
def _charge(s, d, nb, used, copies):
    held = copies[s, d]
    if nb > held:
        copies[s, d] = nb
        used[d] += nb - held


@_part
def _commit(i, d, A, M):
    """`Placer.commit` (with `StaticMemoryTracker.place`)."""
    po, temp, dev_of, used, trtemp = A.po, A.temp, M.dev_of, M.used, M.trtemp
    used[d] += po[i]
    if temp[i] > trtemp[d]:
        used[d] += temp[i] - trtemp[d]
        trtemp[d] = temp[i]
    dev_of[i] = d
    for e in range(A.pred_ptr[i], A.pred_ptr[i + 1]):
        sd = dev_of[A.pred_src[e]]
        if sd != -1 and sd != d:
            _charge(A.pred_src[e], d, A.pred_b[e], used, M.copies)
    for e in range(A.succ_ptr[i], A.succ_ptr[i + 1]):
        cd = dev_of[A.succ_dst[e]]
        if cd != -1 and cd != d:
            _charge(i, cd, A.succ_b[e], used, M.copies)
    g = A.group_of[i]
    if g < 0:
        return
    res_po, res_on, rdev, rlist, rsz, rpos = M.res_po, M.res_on, M.rdev, M.rlist, M.rsz, M.rpos
    if M.group_dev[g] < 0:
        M.group_dev[g] = d
        res_po[d] += M.gpl[g]
    res_po[d] -= po[i]
    M.gpl[g] -= po[i]
    left = False
    for k in range(A.grp_ptr[g], A.grp_ptr[g + 1]):
        if dev_of[A.grp_ops[k]] < 0:
            left = True
            break
    if left:
        M.res_val[g] = _unplaced_temp(g, i, A.grp_ptr, A.grp_ops, dev_of, temp)
        if not res_on[g]:  # res_temp[d][g], d being the group's device
            res_on[g] = True
            rdev[g] = d
            rpos[g] = rsz[d]
            rlist[d, rsz[d]] = g
            rsz[d] += 1
    elif res_on[g] and rdev[g] == d:  # res_temp[d].pop(g)
        res_on[g] = False
        k = rpos[g]
        last = rlist[d, rsz[d] - 1]
        rlist[d, k] = last
        rpos[last] = k
        rsz[d] -= 1


# -- the ready set and floating members ------------------------------------------------------


# complex: `etf.ready_set`'s make_ready, with `Placer.allowed` and sct's on_ready inlined: a
# numba part (inlined into `_commit_loop`) that mirrors those three, to be read beside them
@_part
def _make_ready(i, A, M, R):
    """`etf.ready_set`'s make_ready, and the SCT reservation's `on_ready`."""
    pred_ptr, pred_src, dev_of, allow, hoff = A.pred_ptr, A.pred_src, M.dev_of, A.allow, R.hoff
    g = A.group_of[i]
    filt = g >= 0  # floating inputs are in i's group, so local wherever it goes
    base = 0.0
    if filt:
        first = True
        for e in range(pred_ptr[i], pred_ptr[i + 1]):
            p = pred_src[e]
            if dev_of[p] < 0 and (first or R.vend[p] > base):  # max(..., default=0.0)
                base = R.vend[p]
                first = False
    lo, hi = 0, R.m
    if g >= 0 and M.group_dev[g] >= 0:  # Placer.allowed: the group's device, if allowed
        lo = M.group_dev[g]
        hi = lo + 1
    r = R.rank[i]
    urgent = 0.0
    for d in range(lo, hi):
        if not allow[i, d]:
            continue
        t = base
        for e in range(pred_ptr[i], pred_ptr[i + 1]):
            p = pred_src[e]
            pd = dev_of[p]
            if filt and pd < 0:
                continue
            x = R.end[p]
            if pd != d:  # `cost.transfer_seconds`, inline: compiled code calls no Python
                x = x + (A.lat[pd, d] + A.pred_bf[e] * A.inv[pd, d])
            if x > t:
                t = x
        R.arr[i, d] = t
        slow = A.unit[i, d] - A.best[i]
        if t <= R.avail[d]:
            _push(R.ak, R.ar, R.asz, hoff[d], d, slow, r)
        else:
            _push(R.pk, R.pr, R.psz, hoff[d], d, t + slow, r)
        R.dirty[d] = True
        if t > urgent:
            urgent = t
    R.ready[i] = True
    if R.sct:
        for d in range(lo, hi):
            if allow[i, d]:
                _push(R.uk, R.ur, R.usz, hoff[d], d, urgent, r)
        for d in range(R.m):
            if R.reserved[d] == i:  # its reservation may become active
                R.dirty[d] = True


@_part
def _settle(i, A, M, R, F):
    """`floating.etf_policy`'s settle: make op `i` ready, or let it float."""
    stack, missing = F.stack, F.missing
    stack[0] = i
    top = 1
    while top > 0:
        top -= 1
        i = stack[top]
        g = A.group_of[i]
        if not A.flo[i] or M.group_dev[g] >= 0:
            _make_ready(i, A, M, R)
            continue
        t = 0.0
        for e in range(A.pred_ptr[i], A.pred_ptr[i + 1]):
            p = A.pred_src[e]
            x = R.end[p] if M.dev_of[p] >= 0 else R.vend[p]
            if x > t:
                t = x
        R.vend[i] = t
        F.af_buf[A.grp_ptr[g] + F.af_len[g]] = i
        F.af_len[g] += 1
        for e in range(A.succ_ptr[i], A.succ_ptr[i + 1]):  # all in the group
            j = A.succ_dst[e]
            missing[j] -= 1
            if missing[j] == 0:
                stack[top] = j
                top += 1


@_part
def _land(g, d, A, M, R, F, start):
    """`floating.etf_policy`'s land: commit group `g`'s waiting members on `d`."""
    end, avail = R.end, R.avail
    for k in range(F.af_len[g]):
        f = F.af_buf[A.grp_ptr[g] + k]
        t = avail[d]
        for e in range(A.pred_ptr[f], A.pred_ptr[f + 1]):
            p = A.pred_src[e]
            pd = M.dev_of[p]
            # `cost.transfer_seconds`, inline: compiled code calls no Python
            x = end[p] if pd == d else end[p] + A.lat[pd, d] + A.pred_bf[e] * A.inv[pd, d]
            if x > t:
                t = x
        _commit(f, d, A, M)
        start[f] = t
        end[f] = t + A.comp[f, d]
        avail[d] = end[f]
    F.af_len[g] = 0


# -- the candidate choice, the SCT reservation and the commit loop ---------------------------


@_part
def _candidate(d, A, M, R, C, order, res_active, forb):
    """`etf.device_choice`'s candidate(d) into C's row d, then `sct`'s reserve
    (`_reserve`) while d is reserved."""
    dev_of, group_of, group_dev = M.dev_of, A.group_of, M.group_dev
    ak, ar, asz, pk, pr_, psz = R.ak, R.ar, R.asz, R.pk, R.pr, R.psz
    base = R.hoff[d]
    av = R.avail[d]
    while psz[d] > 0:
        i = order[pr_[base]]
        t = R.arr[i, d]
        if not (t <= av):
            break
        key = pk[base]
        r = pr_[base]
        _pop(pk, pr_, psz, base, d)
        _push(ak, ar, asz, base, d, key - t, r)
    while asz[d] > 0 and not _valid(order[ar[base]], d, dev_of, forb, group_of, group_dev):
        _pop(ak, ar, asz, base, d)
    while psz[d] > 0 and not _valid(order[pr_[base]], d, dev_of, forb, group_of, group_dev):
        _pop(pk, pr_, psz, base, d)
    i = -1
    key = 0.0
    pr = 0
    est = 0.0
    if asz[d] > 0:
        i = order[ar[base]]
        pr = R.prank[i]
        key = av + ak[base]
        est = av
    if psz[d] > 0:
        j = order[pr_[base]]
        if i < 0 or pk[base] < key or (pk[base] == key and R.prank[j] < pr):
            key = pk[base]  # a faster device's op beats the arrived ones
            i = j
            pr = R.prank[j]
            est = R.arr[j, d]
    C.has[d] = i >= 0
    if i >= 0:
        C.key[d] = key
        C.pr[d] = pr
        C.fin[d] = est + A.comp[i, d]
        C.op[d] = i
        C.est[d] = est
    if R.sct and R.reserved[d] >= 0:
        _reserve(d, A, M, R, C, order, res_active, forb)


@_part
def _reserve(d, A, M, R, C, order, res_active, forb):
    """`sct.reservation`'s reserve(d, c), c being C's row d: f, an urgent op, or c."""
    comp, best, unit, arr, avail = A.comp, A.best, A.unit, R.arr, R.avail
    dev_of, group_of, group_dev = M.dev_of, A.group_of, M.group_dev
    base = R.hoff[d]
    av = avail[d]
    f = R.reserved[d]
    res_active[d] = False
    if dev_of[f] >= 0 or (R.ready[f] and (arr[f, d] == INF
                                          or not _valid(f, d, dev_of, forb, group_of,
                                                        group_dev))):
        R.reserved[d] = -1  # f is placed, or can never come here: void for good
        return
    if not R.ready[f]:
        return
    est_f = av
    if arr[f, d] > est_f:
        est_f = arr[f, d]
    key_f = est_f + unit[f, d] - best[f]
    for e in range(R.m):
        if e != d and arr[f, e] < INF and _valid(f, e, dev_of, forb, group_of, group_dev):
            te = avail[e]
            if arr[f, e] > te:
                te = arr[f, e]
            if not (key_f <= te + unit[f, e] - best[f]):
                return
    res_active[d] = True
    uk, ur, usz = R.uk, R.ur, R.usz
    while usz[d] > 0 and not _valid(order[ur[base]], d, dev_of, forb, group_of, group_dev):
        _pop(uk, ur, usz, base, d)
    if usz[d] > 0:
        u = order[ur[base]]
        eu = av
        if uk[base] > eu:
            eu = uk[base]
        if eu + unit[u, d] - best[u] <= key_f:
            C.has[d] = True
            C.key[d] = eu + unit[u, d] - best[u]
            C.pr[d] = R.prank[u]
            C.fin[d] = eu + comp[u, d]
            C.op[d] = u
            C.est[d] = eu
            return
    C.has[d] = True
    C.key[d] = key_f
    C.pr[d] = R.prank[f]
    C.fin[d] = est_f + comp[f, d]
    C.op[d] = f
    C.est[d] = est_f


@njit(cache=True)
def schedule_arrays(A, topo, prank, rank, order, favourite, sct, unbounded):
    """The first pass of `etf.etf_schedule` over arrays (see the module docstring), `A`
    being an `InstArrays`.

    Returns (stuck op or -1, then the state a `Placer` is synced from: device per op,
    start per op, used and temp per device, copies per (producer, device), group device,
    group params+outputs left, reserved params+outputs per device, and per group its
    reserved temp, whether it has one and on which device).
    """
    grp_ptr, grp_ops, allow, po = A.grp_ptr, A.grp_ops, A.allow, A.po
    n, m = A.comp.shape
    ng = len(grp_ptr) - 1
    gpl = np.zeros(ng, np.int64)
    for g in range(ng):
        for k in range(grp_ptr[g], grp_ptr[g + 1]):
            gpl[g] += po[grp_ops[k]]
    maxin = 1
    for i in range(n):
        if A.pred_ptr[i + 1] - A.pred_ptr[i] > maxin:
            maxin = A.pred_ptr[i + 1] - A.pred_ptr[i]
    M = MemState(np.full(n, -1, np.int64), np.zeros(m, np.int64), np.zeros(m, np.int64),
                 np.zeros((n, m), np.int64), np.full(ng, -1, np.int64), gpl,
                 np.zeros(m, np.int64), np.zeros(ng, np.int64), np.zeros(ng, np.bool_),
                 np.full(ng, -1, np.int64), np.empty((m, max(ng, 1)), np.int64),
                 np.zeros(m, np.int64), np.zeros(ng, np.int64), np.full(n, -1, np.int64),
                 np.empty(maxin, np.int64))
    hoff = np.zeros(m, np.int64)  # device d's heaps: [hoff[d], hoff[d] + ops allowed on d)
    total = 0
    for d in range(m):
        hoff[d] = total
        for i in range(n):
            total += allow[i, d] != 0
    nu = total if sct else 0
    R = RunState(m, prank, rank, np.zeros(n), np.zeros(m), np.zeros(n), np.full((n, m), INF),
                 np.zeros(n, np.bool_), np.ones(m, np.bool_), hoff,
                 np.empty(total), np.empty(total, np.int64), np.zeros(m, np.int64),
                 np.empty(total), np.empty(total, np.int64), np.zeros(m, np.int64),
                 np.empty(nu), np.empty(nu, np.int64), np.zeros(m, np.int64),
                 np.full(m, -1, np.int64), sct)
    missing = np.empty(n, np.int64)
    for i in range(n):
        missing[i] = A.pred_ptr[i + 1] - A.pred_ptr[i]
    F = FloatState(missing, np.empty(max(n, 1), np.int64),
                   np.empty(max(len(grp_ops), 1), np.int64), np.zeros(ng, np.int64))
    C = Candidates(np.zeros(m, np.bool_), np.zeros(m), np.zeros(m, np.int64), np.zeros(m),
                   np.zeros(m, np.int64), np.zeros(m))
    start = np.zeros(n)
    stuck = _commit_loop(A, topo, M, R, F, C, np.zeros((n, m), np.uint8), np.zeros(m, np.bool_),
                         order, favourite, start, unbounded)
    return (stuck, M.dev_of, start, M.used, M.trtemp, M.copies, M.group_dev, gpl, M.res_po,
            M.res_val, M.res_on, M.rdev)


# long: `etf._commit_loop` step for step, its hooks and the engine's parts inlined
# complex: etf._commit_loop's branches, with `_stuck` and sct's on_commit inlined and the pair
# order spelled out over the C.key/C.pr/C.fin arrays; kept step for step with the reference
@_leaf
def _commit_loop(A, topo, M, R, F, C, forb, res_active, order, favourite, start, unbounded):
    """The commit loop (`etf._commit_loop`); returns the stuck op, or -1 when all are
    placed. Allocates nothing, so it runs without reference counting, and the parts
    (`_part`) are inlined into it."""
    dev_of, group_of, group_dev = M.dev_of, A.group_of, M.group_dev
    dirty, reserved = R.dirty, R.reserved
    c_has, c_key, c_pr, c_fin, c_op = C.has, C.key, C.pr, C.fin, C.op
    m = R.m
    n = len(dev_of)
    for i in topo:
        if A.pred_ptr[i + 1] == A.pred_ptr[i]:
            _settle(i, A, M, R, F)
    placed = 0
    while placed < n:
        b = -1
        bk = 0.0
        bp = 0
        bf = 0.0
        for d in range(m):
            # a cached pair stays until its device commits, gets a new ready op, or loses
            # the pair's op (etf._commit_loop)
            if dirty[d] or (c_has[d] and not _valid(c_op[d], d, dev_of, forb, group_of,
                                                    group_dev)):
                _candidate(d, A, M, R, C, order, res_active, forb)
                dirty[d] = False
            if c_has[d] and (b < 0 or c_key[d] < bk or (c_key[d] == bk and (
                    c_pr[d] < bp or (c_pr[d] == bp and c_fin[d] < bf)))):
                b, bk, bp, bf = d, c_key[d], c_pr[d], c_fin[d]
        if b < 0:
            for i in range(n):  # etf._stuck: a ready op, else any unplaced op
                if dev_of[i] < 0 and R.ready[i]:
                    return i
            for i in range(n):
                if dev_of[i] < 0:
                    return i
            return -1
        d = b
        i = c_op[d]
        fin = c_fin[d]
        est = C.est[d]
        if not unbounded and _need(i, d, A, M) > A.caps[d]:
            forb[i, d] = 1  # etf._drop without a budget: no spill
            continue
        g = group_of[i]
        if g >= 0 and group_dev[g] < 0:  # i binds its group to d (etf._bind)
            landed = F.af_len[g]
            if landed:
                _land(g, d, A, M, R, F, start)
                placed += landed
                if R.avail[d] > est:
                    est, fin = R.avail[d], R.avail[d] + A.comp[i, d]
        _commit(i, d, A, M)
        start[i] = est
        R.end[i] = fin
        R.avail[d] = fin
        dirty[d] = True
        placed += 1
        if R.sct:  # sct.reservation's on_commit
            f = favourite[i]
            reserved[d] = f if f >= 0 and dev_of[f] < 0 else -1
            for dd in range(m):
                ff = reserved[dd]
                if ff >= 0 and not res_active[dd] and R.ready[ff]:
                    dirty[dd] = True
        for e in range(A.succ_ptr[i], A.succ_ptr[i + 1]):
            j = A.succ_dst[e]
            F.missing[j] -= 1
            if F.missing[j] == 0:
                if A.flo[j]:
                    _settle(j, A, M, R, F)
                else:
                    _make_ready(j, A, M, R)
    return -1


def schedule(inst: Instance, placer: Placer, prank: Sequence[int],
             favourite: Sequence[int] | None) -> tuple[list[int], list[float]]:
    """`etf.etf_schedule(inst, placer, prank, favourite=favourite)` on the compiled engine
    (the caller checks the case applies: `etf._kernel_case`). Syncs `placer` with the
    result; raises `Stuck` as the Python engine would."""
    n = inst.n
    arrays = inst.engine_arrays()
    assert arrays is not None  # etf._kernel_case checked
    A, topo = InstArrays(*arrays[0]), arrays[1]
    p = np.ascontiguousarray(prank, dtype=np.int64)
    if n and p.min() >= 0 and p.max() < n and np.bincount(p, minlength=n).max() == 1:
        rank = p  # a permutation (as every caller's): (priority, op) order is priority order
        order = np.empty(n, np.int64)
        order[p] = np.arange(n, dtype=np.int64)
    else:
        order = np.lexsort((np.arange(n), p)).astype(np.int64)
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n, dtype=np.int64)
    sct = favourite is not None
    fav = (np.ascontiguousarray(favourite, dtype=np.int64) if sct
           else np.full(n, -1, np.int64))
    out = schedule_arrays(A, topo, p, rank, order, fav, sct, bool(placer.unbounded))
    _sync(placer, out)
    if out[0] >= 0:
        raise Stuck(int(out[0]))
    return placer.device_of[:], out[2].tolist()


def _sync(placer: Placer, out: tuple[Any, ...]) -> None:
    """Leave `placer` as the Python engine leaves it (the order of its dicts aside)."""
    _, dev_of, _, used, trtemp, copies, group_dev, gpl, res_po, res_val, res_on, rdev = out
    tr = placer.tracker
    tr.device_of[:] = dev_of.tolist()  # placer.device_of is this list
    tr.used[:] = used.tolist()
    tr.temp[:] = trtemp.tolist()
    m = copies.shape[1]
    nz = np.flatnonzero(copies)
    tr.copies.update(zip(zip((nz // m).tolist(), (nz % m).tolist(), strict=True),
                         copies.ravel()[nz].tolist(), strict=True))
    placer.group_dev[:] = group_dev.tolist()
    placer.group_po_left[:] = gpl.tolist()
    placer.res_po[:] = res_po.tolist()
    for g in np.flatnonzero(res_on).tolist():
        placer.res_temp[int(rdev[g])][g] = int(res_val[g])


def warm_up() -> None:
    """Compile `schedule_arrays` (or load it from numba's cache): its one specialisation."""
    g = Graph("warm", (Op("a", time_s=1.0), Op("b", time_s=1.0)), (Edge(0, 1, 1),))
    devs = (Device("d0", 1 << 30), Device("d1", 1 << 30))
    links = (Link(0, 1, 1e9), Link(1, 0, 1e9))
    inst = Instance(Problem("warm", g, Cluster("c", devs, links)))
    schedule(inst, Placer(inst), [0, 1], [1, -1])
