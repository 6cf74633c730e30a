"""The forced-colocation bound: edges too costly to cross glue their ends onto one device.

Claim. Let `L(e)` of an edge `e = u -> v` be `head(u) + w(u) + x(e) + w(v) + tail(v)`, where
`w(i)` is op `i`'s least time over its allowed devices `A(i)`, `head(i)` the longest path
of `w` into `i` (not counting `i`), `tail(i)` the longest path of `w` out of `i` (not
counting `i`), and `x(e)` the least `latency + bytes / bandwidth` from a device of `A(u)`
to a different, linked device of `A(v)` (infinite when there is none). Sort the edges by
`L`, largest first, `L_1 >= L_2 >= ...`; unite the ends of the first `k` edges (and every
colocation group), and for each resulting group `G` let `B(G) = min over i in G of
head(i) + min over d of sum over i in G of time(i, d) + min over i in G of tail(i)`, the
`min over d` taken over the devices of `A(G)` (every member may use them) whose memory
holds `G`'s least bytes (`planner.facts`, under the plan's memory model), infinite when
there is none, and `J(G)` the value of Jackson's preemptive schedule of `G`'s members
as jobs of one machine (release `head(i)`, length `p(i)`, the least time of `i` on the
devices that `B` ranges over, tail `tail(i)`): run, at every instant, a released job with
the longest tail, preempting. Let `S_k` be the largest `max(B(G), J(G))`. Then every
plan's makespan is at least `max over k of min(L_k, S_k)`.

Proof. Take a valid plan of makespan `T` and any `k` with `T < min(L_k, S_k)`. Each of the
first `k` edges has `L(e) >= L_k > T`. If such an edge crossed devices, `v` would start
after `u` ends plus the tensor's crossing, which takes at least `x(e)` (it carries at
least this edge's bytes; contention only delays it), and the path through the edge would
take `L(e) > T` (every op runs for at least `w`, one after another along a path). So the
plan keeps the ends of each of those edges on one device, and, by transitivity and the
colocation groups, every group `G` on one device `d` of `A(G)` that holds its bytes. There
its members run one after another: none starts before its `head`, so the last of them
ends at least `min head + sum of times` after 0, and what follows it takes at least its
`tail`: `T >= B(G)`. More finely, the group's members on `d` form a schedule of one
machine, without preemption, whose jobs are released no earlier than `head`, run at least
`p` (`d` is among the devices `p` is the least over) and are followed by at least their
`tail`; Jackson's preemptive schedule is optimal for the relaxation with preemption
allowed and the lengths `p` (Carlier 1982; Baker & Su 1974), so `T >= J(G)`. For the group
with `max(B(G), J(G)) = S_k > T`, a contradiction; so `T >= min(L_k, S_k)` for every `k`.

Why: the path bounds let every tensor cross, and the load bound lets every op move; on
graphs with large tensors both are far below the plans, while a chain whose tensors cost
more to send than the chain takes to run must run on one device, and when its weights
fill more than one device, it cannot: then the plan pays a crossing. `B` is kept as edges
join (O(E log E + (V + E) m)); `J` is then computed for the graphs of at most
`JACKSON_MAX_OPS` ops, by bisection over the levels up to where `B` alone crosses them
(`S_k` only grows with `k`, `L_k` only falls), O((V log V + E) log E): on ResNet-50 on
small4 it raises the bound from 79.51 to 80.41 ms.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from ..cost import INF, Costs, transfer_seconds
from ..disjoint import Disjoint
from ..model import Problem

#: the largest graph whose groups are bounded by Jackson's preemptive schedule as well
#: (about 13 passes of O(V log V) each: 0.1 s at 5,000 ops; beyond it, `B` alone)
JACKSON_MAX_OPS = 5_000


def forced_colocation_bound(problem: Problem, c: Costs, wmin: Sequence[float],
                            allowed: Sequence[tuple[int, ...]], head: Sequence[float],
                            tail: Sequence[float]) -> float:
    """`max over k of min(L_k, S_k)` (module docstring), its finite values only; 0.0 for a
    graph without edges (the largest single unit is in `load_s` already). `head` and
    `tail`: per op, as the docstring defines them (`ramp.head_tail`)."""
    g = problem.graph
    if not g.edges or not c.latency:
        return 0.0
    crossing = _Crossings(c)
    lengths = sorted(((head[e.src] + wmin[e.src] + crossing(e.bytes, allowed[e.src],
                                                            allowed[e.dst])
                       + wmin[e.dst] + tail[e.dst], k) for k, e in enumerate(g.edges)),
                     reverse=True)
    groups = _Groups(problem, c, allowed, head, tail, wmin)
    best = 0.0
    k = 0
    ends = [0]  # per level, how many edges have joined
    while k < len(lengths):
        level = lengths[k][0]
        while k < len(lengths) and lengths[k][0] == level:  # ties enter together
            e = g.edges[lengths[k][1]]
            groups.unite(e.src, e.dst)
            k += 1
        ends.append(k)
        value = min(level, groups.largest)
        if value < INF:  # (infinite: no valid plan at all, which `check` reports)
            best = max(best, value)
        if groups.largest >= level:
            break  # later levels are smaller: min(L, S) can only fall
    if len(g.ops) <= JACKSON_MAX_OPS:
        best = max(best, _with_jackson(problem, c, allowed, head, tail, wmin, lengths, ends))
    return best


def _with_jackson(problem: Problem, c: Costs, allowed: Sequence[tuple[int, ...]],
                  head: Sequence[float], tail: Sequence[float], wmin: Sequence[float],
                  lengths: list[tuple[float, int]], ends: list[int]) -> float:
    """`max over k of min(L_k, S_k)` with `S_k` counting `J` too, over the levels the scan
    reached (`ends[t]`: the edges joined after `t` levels): `S` only grows and `L` only
    falls, so the largest `min` is at the first level where `S >= L`, or just before."""
    def value(t: int) -> tuple[float, float]:  # (L, S) after t levels
        groups = _Groups(problem, c, allowed, head, tail, wmin)
        for _, k in lengths[:ends[t]]:
            e = problem.graph.edges[k]
            groups.unite(e.src, e.dst)
        return lengths[ends[t] - 1][0], max(groups.largest, groups.jackson())

    lo, hi = 1, len(ends) - 1  # the first level t with S >= L lies in lo..hi, if any
    if hi < lo:
        return 0.0
    while lo < hi:
        mid = (lo + hi) // 2
        level, largest = value(mid)
        if largest >= level:
            hi = mid
        else:
            lo = mid + 1
    best = 0.0
    for t in (lo - 1, lo):
        if t >= 1:
            level, largest = value(t)
            if min(level, largest) < INF:
                best = max(best, min(level, largest))
    return best


def jackson_preemptive(jobs: list[tuple[float, float, float]]) -> float:
    """The least `max(end + tail)` over preemptive schedules of one machine, jobs given as
    (release, length, tail): at every release or end, run a released job with the longest
    tail (Jackson's rule, optimal with preemption). O(n log n)."""
    jobs = sorted(jobs)
    ready: list[tuple[float, float]] = []  # (-tail, length left)
    t = best = 0.0
    k, n = 0, len(jobs)
    while k < n or ready:
        if not ready and t < jobs[k][0]:
            t = jobs[k][0]
        while k < n and jobs[k][0] <= t:
            heapq.heappush(ready, (-jobs[k][2], jobs[k][1]))
            k += 1
        negtail, left = heapq.heappop(ready)
        run = min(left, jobs[k][0] - t) if k < n else left
        t += run
        if run < left:
            heapq.heappush(ready, (negtail, left - run))
        elif t - negtail > best:
            best = t - negtail
    return best


class _Crossings:
    """`x(e)` per edge: the least time its tensor takes to cross from a device of `A(u)`
    to another of `A(v)` (infinite when no such pair is linked), over the pairs no other
    pair beats on both latency and seconds per byte (one to three on real clusters),
    found once per pair of device sets."""

    def __init__(self, c: Costs) -> None:
        self.c = c
        self.fronts: dict[tuple[tuple[int, ...], tuple[int, ...]],
                          list[tuple[float, float]]] = {}

    def __call__(self, nbytes: int, a: tuple[int, ...], b: tuple[int, ...]) -> float:
        front = self.fronts.get((a, b))
        if front is None:
            front = self.fronts[(a, b)] = self._front(a, b)
        best = INF
        for lat, inv in front:
            t = transfer_seconds(lat, inv, nbytes)
            if t < best:
                best = t
        return best

    def _front(self, a: tuple[int, ...], b: tuple[int, ...]) -> list[tuple[float, float]]:
        lat, inv = self.c.latency, self.c.inv_bandwidth
        pairs = sorted({(lat[x][y], inv[x][y]) for x in a for y in b
                        if y != x and lat[x][y] < INF})
        front: list[tuple[float, float]] = []
        for la, iv in pairs:  # by latency: keep a pair only if it is cheaper per byte
            if not front or iv < front[-1][1]:
                front.append((la, iv))
        return front


class _Groups:
    """Union-find over ops, keeping per group of two or more what its busy time needs
    (module docstring): its members' summed time on each device it may use, their least
    head and tail, and the parts of their least bytes (`planner.facts`: summed, largest,
    summed sinks). A lone op's span is within the critical path, so `largest` starts at 0
    and an op's entry is made when it first joins a group."""

    def __init__(self, problem: Problem, c: Costs, allowed: Sequence[tuple[int, ...]],
                 head: Sequence[float], tail: Sequence[float], wmin: Sequence[float]) -> None:
        g = problem.graph
        self.problem, self.c, self.allowed, self.wmin = problem, c, allowed, wmin
        self.caps = [d.memory_bytes for d in problem.cluster.devices]
        self.sets: Disjoint[int] = Disjoint(range(len(g.ops)))
        self.head, self.tail = list(head), list(tail)
        self.head0, self.tail0 = head, tail  # per op (`head`/`tail` become per group)
        # per op in a group: times per device (INF where not allowed), bytes parts
        self.time: dict[int, list[float]] = {}
        self.parts: dict[int, list[int]] = {}
        self.liveness = problem.memory_model == "liveness"
        self.largest = 0.0
        for members in g.colocations:
            for j in members[1:]:
                self.unite(members[0], j)

    def _entry(self, i: int) -> None:
        if i in self.time:
            return
        g = self.problem.graph
        op = g.ops[i]
        row = [INF] * len(self.caps)
        for d in self.allowed[i]:
            row[d] = self.c.compute[i][d]
        self.time[i] = row
        if self.liveness:  # as `facts._least_bytes` counts them
            self.parts[i] = [op.params_bytes,
                             op.output_bytes + op.temp_bytes,
                             0 if g.successors[i] else op.output_bytes]
        else:
            self.parts[i] = [op.params_bytes + op.output_bytes, op.temp_bytes, 0]

    def _busy(self, r: int) -> float:
        """Group `r`'s least span on one device: its earliest head, its members one after
        another on the device that holds their bytes and runs them fastest, its least
        tail (infinite when no device may hold it)."""
        add, peak, sink = self.parts[r]
        need = add + max(peak, sink)
        caps = self.caps
        least = min((t for d, t in enumerate(self.time[r]) if t < INF and caps[d] >= need),
                    default=INF)
        return self.head[r] + least + self.tail[r]

    def jackson(self) -> float:
        """The largest `J(G)` over the groups (module docstring), each member's length its
        least time on the devices that hold the group; infinite when a group fits none."""
        members: dict[int, list[int]] = {}
        for i in range(len(self.problem.graph.ops)):
            r = self.sets.find(i)
            if r in self.time:  # a group of two or more
                members.setdefault(r, []).append(i)
        caps, compute = self.caps, self.c.compute
        best = 0.0
        for r, ops in members.items():
            add, peak, sink = self.parts[r]
            need = add + max(peak, sink)
            holds = [d for d, t in enumerate(self.time[r]) if t < INF and caps[d] >= need]
            if not holds:
                return INF
            jobs = [(self.head0[i], min(compute[i][d] for d in holds), self.tail0[i])
                    for i in ops]
            best = max(best, jackson_preemptive(jobs))
        return best

    def unite(self, a: int, b: int) -> None:
        ra, rb = self.sets.find(a), self.sets.find(b)
        if ra == rb:
            return
        self._entry(ra)
        self._entry(rb)
        ra, rb = self.sets.union(ra, rb) or (ra, rb)  # the root kept, the one it takes in
        ta, tb = self.time[ra], self.time.pop(rb)
        for d, t in enumerate(tb):
            ta[d] = ta[d] + t if ta[d] < INF and t < INF else INF
        self.head[ra] = min(self.head[ra], self.head[rb])
        self.tail[ra] = min(self.tail[ra], self.tail[rb])
        pa, pb = self.parts[ra], self.parts.pop(rb)
        pa[0] += pb[0]
        pa[1] = max(pa[1], pb[1])
        pa[2] += pb[2]
        busy = self._busy(ra)  # INF when no device may hold the whole group
        if busy > self.largest:
            self.largest = busy
