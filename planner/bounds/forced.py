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
there is none. Let `S_k` be the largest `B(G)`. Then every plan's makespan is at least
`max over k of min(L_k, S_k)`.

Proof. Take a valid plan of makespan `T` and any `k` with `T < min(L_k, S_k)`. Each of the
first `k` edges has `L(e) >= L_k > T`. If such an edge crossed devices, `v` would start
after `u` ends plus the tensor's crossing, which takes at least `x(e)` (it carries at
least this edge's bytes; contention only delays it), and the path through the edge would
take `L(e) > T` (every op runs for at least `w`, one after another along a path). So the
plan keeps the ends of each of those edges on one device, and, by transitivity and the
colocation groups, every group `G` on one device `d` of `A(G)` that holds its bytes. There
its members run one after another: none starts before its `head`, so the last of them
ends at least `min head + sum of times` after 0, and what follows it takes at least its
`tail`: `T >= B(G)`, for the group with `B(G) = S_k > T`. A contradiction; so `T >=
min(L_k, S_k)` for every `k`.

Why: the path bounds let every tensor cross, and the load bound lets every op move; on
graphs with large tensors both are far below the plans, while a chain whose tensors cost
more to send than the chain takes to run must run on one device, and when its weights
fill more than one device, it cannot: then the plan pays a crossing. O(E log E + (V + E) m).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..cost import INF, Costs
from ..model import Problem


def forced_colocation_bound(problem: Problem, c: Costs, wmin: Sequence[float],
                            allowed: Sequence[tuple[int, ...]]) -> float:
    """`max over k of min(L_k, S_k)` (module docstring), its finite values only; 0.0 for a
    graph without edges (the largest single unit is in `load_s` already)."""
    g = problem.graph
    if not g.edges or not c.latency:
        return 0.0
    head, tail = _head_tail(problem, wmin)
    crossing = _Crossings(c)
    lengths = sorted(((head[e.src] + wmin[e.src] + crossing(e.bytes, allowed[e.src],
                                                            allowed[e.dst])
                       + wmin[e.dst] + tail[e.dst], k) for k, e in enumerate(g.edges)),
                     reverse=True)
    groups = _Groups(problem, c, allowed, head, tail, wmin)
    best = 0.0
    k = 0
    while k < len(lengths):
        level = lengths[k][0]
        while k < len(lengths) and lengths[k][0] == level:  # ties enter together
            e = g.edges[lengths[k][1]]
            groups.unite(e.src, e.dst)
            k += 1
        value = min(level, groups.largest)
        if value < INF:  # (infinite: no valid plan at all, which `check` reports)
            best = max(best, value)
        if groups.largest >= level:
            break  # later levels are smaller: min(L, S) can only fall
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
            t = lat + nbytes * inv
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


def _head_tail(problem: Problem, wmin: Sequence[float]) -> tuple[list[float], list[float]]:
    """Per op, the longest path of `wmin` into it and out of it, itself not counted."""
    g = problem.graph
    n = len(g.ops)
    head, tail = [0.0] * n, [0.0] * n
    order = g.topological_order
    edges, succ = g.edges, g.successors
    for i in order:
        x = head[i] + wmin[i]
        for k in succ[i]:
            j = edges[k].dst
            if x > head[j]:
                head[j] = x
    for i in reversed(order):
        for k in succ[i]:
            j = edges[k].dst
            x = tail[j] + wmin[j]
            if x > tail[i]:
                tail[i] = x
    return head, tail


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
        self.parent = list(range(len(g.ops)))
        self.head, self.tail = list(head), list(tail)
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
                             op.output_bytes + op.temp_bytes if self.wmin[i] > 0 else 0,
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

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def unite(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        self._entry(ra)
        self._entry(rb)
        self.parent[rb] = ra
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
