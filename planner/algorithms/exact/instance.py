"""What both exact models share: the problem as dense data, time windows, and timing.

- **Units** and their allowed devices are `planner.facts`' (a colocation group is one unit;
  a pin on one member pins the group); a unit with no device (E304) or an edge no link can
  carry (E305) is reported with the proofs `planner check` gives.
- **Arcs.** Edges between two distinct ops, merged per (producer, consumer) pair with the
  largest `bytes` (under contention `none` the consumer waits for the slowest tensor).
  Transfer times come from `cost.Costs.transfer_time`: `latency + bytes / bandwidth`.
- **Windows.** `head[i]`: a lower bound on op `i`'s start (longest path of fastest compute
  times into `i`, plus the cheapest transfer on arcs whose ends can never share a device);
  `tail[i]`: the same after `i` ends. With an upper bound `U` on the makespan, op `i` starts
  in `[head[i], U - tail[i] - pmin[i]]`.
- **Identical devices** (`classes`): devices with the same kind, speed, FLOP rate and
  memory whose swap maps every link onto an equal one, and that no pin names. Any plan can
  be relabelled inside a class, which the models exploit to break symmetry.
- **Timing** (`timing`): the contention-`none` earliest start times of a placement with a
  global op order (each device runs its ops in that order): exactly the semantics of the
  models' constraints. It is used to turn a warm-start plan into a MIP start and to report
  the objective of a solver's answer; the simulator remains the only judge of plans.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from ...cost import INF, Costs, costs, static_memory
from ...errors import InfeasibleError
from ...facts import facts, proofs
from ...model import Problem

N = TypeVar("N", int, float)


def choice_term(allowed: Sequence[int], d: int, x: Mapping[tuple[int, int], Any],
                key: tuple[int, int], one: N, zero: N) -> tuple[N, Any]:
    """A unit's placement on device `d` as a (constant, variable) term of the exact models:
    (zero, None) where `d` is not allowed, (one, None) where it is the unit's only device
    (no variable was made), else (zero, `x[key]`)."""
    if d not in allowed:
        return zero, None
    if len(allowed) == 1:
        return one, None
    return zero, x[key]


@dataclass(frozen=True, slots=True)
class Arc:
    """A precedence `src -> dst` carrying `bytes` (the largest of the merged edges)."""

    src: int
    dst: int
    bytes: int


class Instance:
    """The dense data of one problem for the exact models (see the module docstring)."""

    # complex: the instance's tables (proc, arcs, fanout, succ/pred arcs, rank, sinks), each
    # computed beside its typed attribute; the branches are those loops and comprehensions
    def __init__(self, problem: Problem) -> None:
        g = problem.graph
        cl = problem.cluster
        self.problem = problem
        self.costs: Costs = costs(problem)
        self.n = n = len(g.ops)
        self.m = m = len(cl.devices)
        comp = self.costs.compute

        # units, allowed devices and pins: the shared placement facts
        f = facts(problem)
        unit_of = f.unit_of
        self.unit_of: tuple[int, ...] = f.unit_of
        self.units: tuple[tuple[int, ...], ...] = f.units
        self.pinned: tuple[int, ...] = tuple(f.pin[mem[0]] for mem in f.units)
        self.allowed: tuple[tuple[int, ...], ...] = f.unit_allowed
        allowed = f.unit_allowed
        no_plan = [p for p in proofs(problem) if p.code in ("E304", "E305")]
        if no_plan:
            raise InfeasibleError([p.diagnostic() for p in no_plan])
        self.proc: tuple[tuple[float, ...], ...] = tuple(
            tuple(comp[i][d] if d in allowed[unit_of[i]] else INF for d in range(m))
            for i in range(n))
        self.pmin: tuple[float, ...] = tuple(min(row) for row in self.proc)

        merged: dict[tuple[int, int], int] = {}
        for e in g.edges:
            if e.src != e.dst:
                key = (e.src, e.dst)
                merged[key] = max(merged.get(key, 0), e.bytes)
        self.arcs: tuple[Arc, ...] = tuple(Arc(s, d, b) for (s, d), b in sorted(merged.items()))
        fan: list[dict[int, int]] = [{} for _ in range(n)]
        for (s, d), b in merged.items():
            v = unit_of[d]
            if v != unit_of[s]:
                fan[s][v] = max(fan[s].get(v, 0), b)
        #: per producer, `(consumer unit, bytes)` for every other unit it feeds: the size of
        #: the one copy of its output that unit's device receives when it is another device
        self.fanout: tuple[tuple[tuple[int, int], ...], ...] = tuple(
            tuple(sorted(f.items())) for f in fan)
        succ: list[list[int]] = [[] for _ in range(n)]
        pred: list[list[int]] = [[] for _ in range(n)]
        for k, a in enumerate(self.arcs):
            succ[a.src].append(k)
            pred[a.dst].append(k)
        self.succ_arcs = tuple(tuple(x) for x in succ)
        self.pred_arcs = tuple(tuple(x) for x in pred)
        self.topo: tuple[int, ...] = g.topological_order
        rank = [0] * n
        for r, i in enumerate(self.topo):
            rank[i] = r
        self.rank: tuple[int, ...] = tuple(rank)
        self.sinks: tuple[int, ...] = tuple(i for i in range(n) if not succ[i])
        self.caps: tuple[int, ...] = tuple(d.memory_bytes for d in cl.devices)

    # -- transfer times -----------------------------------------------------------------

    def transfer(self, k: int, a: int, b: int) -> float:
        """Seconds arc `k`'s own bytes take from device `a` to device `b` (0 on one device).

        A lower bound on the arc's delay: the copy sent may be larger (see `fanout`).
        """
        return self.costs.transfer_time(self.arcs[k].bytes, a, b)

    def can_share(self, u: int, v: int) -> bool:
        """Whether units `u` and `v` may end up on one device."""
        return u == v or not set(self.allowed[u]).isdisjoint(self.allowed[v])

    def min_transfer(self, k: int) -> float:
        """The least time arc `k` can cost given its ends' allowed devices."""
        a = self.arcs[k]
        u, v = self.unit_of[a.src], self.unit_of[a.dst]
        if self.can_share(u, v):
            return 0.0
        return min(self.transfer(k, x, y) for x in self.allowed[u] for y in self.allowed[v])

    # -- windows ------------------------------------------------------------------------

    def windows(
        self, pmin: Sequence[float], min_transfer: Callable[[int], float]
    ) -> tuple[list[float], list[float]]:
        """Heads and tails for op times `pmin` and arc lower bounds `min_transfer(k)`."""
        head = [0.0] * self.n
        for j in self.topo:
            for k in self.pred_arcs[j]:
                i = self.arcs[k].src
                head[j] = max(head[j], head[i] + pmin[i] + min_transfer(k))
        tail = [0.0] * self.n
        for i in reversed(self.topo):
            for k in self.succ_arcs[i]:
                j = self.arcs[k].dst
                tail[i] = max(tail[i], min_transfer(k) + pmin[j] + tail[j])
        return head, tail

    @cached_property
    def _windows_s(self) -> tuple[list[float], list[float]]:
        return self.windows(self.pmin, self.min_transfer)

    @property
    def head(self) -> list[float]:
        """Per op, a lower bound on its start time (seconds)."""
        return self._windows_s[0]

    @property
    def tail(self) -> list[float]:
        """Per op, a lower bound on the time from its end to the makespan (seconds)."""
        return self._windows_s[1]

    @cached_property
    def trivial_bound(self) -> float:
        """max(longest head + pmin + tail, least total work / devices)."""
        path = max((self.head[i] + self.pmin[i] + self.tail[i] for i in range(self.n)),
                   default=0.0)
        work = math.fsum(min(math.fsum(self.proc[i][d] for i in mem) for d in self.allowed[u])
                         for u, mem in enumerate(self.units))
        return max(path, work / max(1, self.m))

    @cached_property
    def horizon(self) -> float:
        """An upper bound on the optimum: every op and transfer one after another.

        Each arc is charged the slowest finite transfer of its producer's largest copy.
        """
        total = math.fsum(max(p for p in row if p < INF) for row in self.proc)
        biggest = [max((self.arcs[k].bytes for k in ks), default=0) for ks in self.succ_arcs]
        tt = self.costs.transfer_time
        for a in self.arcs:
            u, v = self.unit_of[a.src], self.unit_of[a.dst]
            if u == v:
                continue
            times = [tt(biggest[a.src], x, y) for x in self.allowed[u] for y in self.allowed[v]]
            total += max((t for t in times if t < INF), default=0.0)
        return total

    # -- reachability and pairs ---------------------------------------------------------

    @cached_property
    def descendants(self) -> tuple[int, ...]:
        """Per op, a bitset (Python int) of the ops reachable from it."""
        desc = [0] * self.n
        for i in reversed(self.topo):
            bits = 0
            for k in self.succ_arcs[i]:
                j = self.arcs[k].dst
                bits |= desc[j] | (1 << j)
            desc[i] = bits
        return tuple(desc)

    def comparable(self, i: int, j: int) -> bool:
        """Whether a path joins ops `i` and `j` (in either direction)."""
        d = self.descendants
        return bool((d[i] >> j) & 1 or (d[j] >> i) & 1)

    # -- identical devices --------------------------------------------------------------

    @cached_property
    def classes(self) -> tuple[tuple[int, ...], ...]:
        """Classes (size >= 2) of interchangeable devices that no pin names."""
        cl = self.problem.cluster
        devs = cl.devices
        named = set(self.pinned)
        lat, inv = self.costs.latency, self.costs.inv_bandwidth
        m = self.m

        def swappable(a: int, b: int) -> bool:
            if lat[a][b] != lat[b][a] or inv[a][b] != inv[b][a]:
                return False
            for x in range(m):
                if x in (a, b):
                    continue
                if (lat[a][x], inv[a][x], lat[x][a], inv[x][a]) != (
                        lat[b][x], inv[b][x], lat[x][b], inv[x][b]):
                    return False
            return True

        comp = self.costs.compute
        out: list[list[int]] = []
        for d in range(m):
            if d in named:
                continue
            sig = (devs[d].kind, devs[d].speed, devs[d].flop_rate, devs[d].memory_bytes)
            for c in out:
                r = c[0]
                if (devs[r].kind, devs[r].speed, devs[r].flop_rate, devs[r].memory_bytes) == sig \
                        and all(swappable(d, x) for x in c) \
                        and all(comp[i][d] == comp[i][r] for i in range(self.n)):
                    c.append(d)
                    break
            else:
                out.append([d])
        return tuple(tuple(c) for c in out if len(c) > 1)

    def canonical(self, placement: Sequence[int]) -> list[int]:
        """`placement` relabelled inside each class: devices in order of their smallest unit.

        This is the representative the symmetry-breaking constraints keep.
        """
        place = list(placement)
        first_unit: dict[int, int] = {}
        for u, mem in enumerate(self.units):
            first_unit.setdefault(place[mem[0]], u)
        for c in self.classes:
            by_first = sorted(c, key=lambda d: (first_unit.get(d, self.n + 1), d))
            relabel = dict(zip(by_first, c, strict=True))
            place = [relabel.get(d, d) for d in place]
        return place

    # -- memory -------------------------------------------------------------------------

    @cached_property
    def memory_terms(self) -> MemoryTerms:
        """The static memory model's data, per unit and producer (see `MemoryTerms`)."""
        ops = self.problem.graph.ops
        weight = [sum(ops[i].params_bytes + ops[i].output_bytes for i in mem)
                  for mem in self.units]
        temp = [max(ops[i].temp_bytes for i in mem) for mem in self.units]
        receives = tuple((p, f) for p, f in enumerate(self.fanout) if f)
        rows = []
        for d in range(self.m):
            worst = sum(w for u, w in enumerate(weight) if d in self.allowed[u])
            worst += max((t for u, t in enumerate(temp) if d in self.allowed[u]), default=0)
            for _, per in receives:
                worst += max((b for v, b in per if d in self.allowed[v]), default=0)
            rows.append(worst > self.caps[d])
        return MemoryTerms(tuple(weight), tuple(temp), receives, tuple(rows))

    def fits_memory(self, placement: Sequence[int]) -> bool:
        """Whether a complete placement respects every cap (static model, exact bytes)."""
        used = static_memory(self.problem.graph, placement, self.m)
        return all(u <= c for u, c in zip(used, self.caps, strict=True))

    def respects(self, placement: Sequence[int]) -> bool:
        """Whether a placement keeps pins, colocation, runnable devices, links and memory."""
        if len(placement) != self.n or any(not 0 <= d < self.m for d in placement):
            return False
        for u, mem in enumerate(self.units):
            d = placement[mem[0]]
            if d not in self.allowed[u] or any(placement[i] != d for i in mem):
                return False
        for k, a in enumerate(self.arcs):
            if self.transfer(k, placement[a.src], placement[a.dst]) == INF:
                return False
        return self.fits_memory(placement)

    # -- timing -------------------------------------------------------------------------

    def priority_order(self, key: Sequence[float],
                       extra: Sequence[tuple[int, int]] = ()) -> list[int]:
        """A topological order of the ops following `key` (ties by topological rank).

        `extra` adds precedence pairs (e.g. a plan's per-device chains); if they make a
        cycle, the result is shorter than `n` (the ops on the cycle are left out).
        """
        n = self.n
        succ: list[list[int]] = [[self.arcs[k].dst for k in self.succ_arcs[i]]
                                 for i in range(n)]
        for a, b in extra:
            succ[a].append(b)
        indeg = [0] * n
        for targets in succ:
            for j in targets:
                indeg[j] += 1
        heap = [(key[i], self.rank[i], i) for i in range(n) if indeg[i] == 0]
        heapq.heapify(heap)
        out: list[int] = []
        while heap:
            _, _, i = heapq.heappop(heap)
            out.append(i)
            for j in succ[i]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(heap, (key[j], self.rank[j], j))
        return out

    def timing(
        self,
        placement: Sequence[int],
        order: Sequence[int],
        dur: Callable[[int, int], float] | None = None,
        xfer: Callable[[int, int, int], float] | None = None,
    ) -> tuple[list[float], float]:
        """Earliest start times and makespan of `placement` run in the global `order`.

        `order` must be topological; each device runs its ops in that order. A producer's
        output goes to another device once, with the largest `bytes` of its edges to the
        consumers there, and every one of them waits for it (the cost model's rule).
        `dur(i, d)` and `xfer(bytes, a, b)` default to the cost model in seconds (CP-SAT
        passes its integer ticks).
        """
        dur = dur or (lambda i, d: self.proc[i][d])
        xfer = xfer or self.costs.transfer_time
        sent: dict[tuple[int, int], int] = {}
        for a in self.arcs:
            b = placement[a.dst]
            if placement[a.src] != b and a.bytes > sent.get((a.src, b), -1):
                sent[(a.src, b)] = a.bytes
        start = [0.0] * self.n
        finish = [0.0] * self.n
        free = [0.0] * self.m
        for i in order:
            d = placement[i]
            t = free[d]
            for k in self.pred_arcs[i]:
                p = self.arcs[k].src
                dp = placement[p]
                arrive = finish[p] if dp == d else finish[p] + xfer(sent[(p, d)], dp, d)
                t = max(t, arrive)
            start[i] = t
            finish[i] = t + dur(i, d)
            free[d] = finish[i]
        return start, max(finish, default=0.0)


@dataclass(frozen=True, slots=True)
class MemoryTerms:
    """Static memory data: per unit its params + outputs (`weight`) and largest `temp`;
    per producer op, `(consumer unit, bytes)` for the copies other units may need; per
    device whether its cap can bind at all (`rows`: else the constraint is left out).
    """

    weight: tuple[int, ...]
    temp: tuple[int, ...]
    receives: tuple[tuple[int, tuple[tuple[int, int], ...]], ...]
    rows: tuple[bool, ...]
