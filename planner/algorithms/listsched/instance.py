"""`Instance`: a problem as dense Python lists, built once and shared by every list scheduler.

Compute times, per-op input and output edges, link latencies, pins, colocation groups
(the model's, plus the schedulers' own: `Instance._sources_follow_their_consumer`) and
runnable devices; each op's floating flag comes from `floating_members` (the policy that
uses it: `floating`).
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from ...cost import INF, costs, transfer_seconds
from ...facts import facts
from ...model import Problem, derived

__all__ = ["FOLLOW_SOURCES", "Instance", "floating_members"]

#: sources with one consumer follow it (`Instance._sources_follow_their_consumer`)
FOLLOW_SOURCES = True


class Instance:
    """A problem as dense lists, precomputed once for the list schedulers.

    `pred[i]` / `succ[i]` list `(other op, bytes)` per edge; `allowed[i]` the devices op `i`
    may run on and `pin[i]` its device or -1 (both `planner.facts`'); `local[i]` per input
    edge whether both ends are forced onto one device (same group or same pin), so the edge
    never costs communication; `floating[i]` whether op `i` floats in its colocation group
    (`floating_members`); `unit_time[i][d]` and `unit_best[i]`, what the device choice of
    op `i` weighs (`_unit_times`: its colocation group's, whole).
    """

    # complex: the scheduler's tables (pred/succ, topo_pos, mean_compute, local, ...), each
    # computed beside its typed attribute; the branches are those loops and comprehensions
    def __init__(self, problem: Problem, *, follow: bool | None = None) -> None:
        g = problem.graph
        cluster = problem.cluster
        c = costs(problem)
        self.problem = problem
        self.n = n = len(g.ops)
        self.m = m = len(cluster.devices)
        self.compute: list[list[float]] = [list(row) for row in c.compute]
        self.lat: list[list[float]] = [list(row) for row in c.latency]
        # no link: 0 s/B, so the engines' inline `lat + bytes * inv` is inf for 0 bytes too,
        # as `cost.transfer_seconds` (inf * 0 was NaN: a consumer started before its input)
        self.inv: list[list[float]] = [
            [0.0 if lt >= INF else v for lt, v in zip(lat_row, inv_row, strict=True)]
            for lat_row, inv_row in zip(c.latency, c.inv_bandwidth, strict=True)]
        # one pass in edge order gives the lists `g.predecessors` / `g.successors` index;
        # reading edges in sequence, not by index, is 2x cheaper at 100k ops (memory order)
        self.pred: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self.succ: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for e in g.edges:
            self.pred[e.dst].append((e.src, e.bytes))
            self.succ[e.src].append((e.dst, e.bytes))
        self.topo: list[int] = list(g.topological_order)
        self.topo_pos: list[int] = [0] * n
        for p, i in enumerate(self.topo):
            self.topo_pos[i] = p
        self.caps: list[int] = [d.memory_bytes for d in cluster.devices]
        self.group_of: list[int] = list(g.colocation_of)
        self.groups: tuple[tuple[int, ...], ...] = g.colocations
        #: the model's own colocation groups (`groups` adds the schedulers' own, see
        #: `_sources_follow_their_consumer`); m-TOPO's budgets count these
        self.model_groups = g.colocations
        ops = g.ops
        self.po: list[int] = [o.params_bytes + o.output_bytes for o in ops]
        self.temp: list[int] = [o.temp_bytes for o in ops]

        f = facts(problem)
        pin = list(f.pin)
        self.pin = pin
        self.allowed: list[tuple[int, ...]] = list(f.allowed)
        if FOLLOW_SOURCES if follow is None else follow:  # None: the module's switch
            self._sources_follow_their_consumer()

        self.mean_compute: list[float] = []
        for row in self.compute:
            if INF not in row:  # runnable everywhere, the common case
                self.mean_compute.append(sum(row) / m)
                continue
            finite = [t for t in row if t < INF]
            self.mean_compute.append(sum(finite) / len(finite) if finite else 0.0)
        self.mean_lat = c.mean_latency if m > 1 else 0.0
        self.mean_inv = c.mean_inv_bandwidth if m > 1 else 0.0
        group_of = self.group_of
        self.local: list[list[bool]] = [
            [(group_of[i] >= 0 and group_of[p] == group_of[i]) or (pin[i] >= 0 and pin[p] == pin[i])
             for p, _ in self.pred[i]] if group_of[i] >= 0 or pin[i] >= 0
            else [False] * len(self.pred[i])  # neither grouped nor pinned: nothing is local
            for i in range(n)
        ]
        self.floating = floating_members(self)
        self.unit_time, self.unit_best = _unit_times(self)
        self._engine: Any = False  # `engine_arrays`, built on first use
        self._plain: Instance | None = None  # `without_followers`, built on first use
        #: per op, the one device that can hold it, else -1 (`room.memory_forced`, first use)
        self.forced_by_memory: list[int] | None = None

    def _sources_follow_their_consumer(self) -> None:
        """An op without inputs and with one consumer goes where that consumer goes.

        It joins its consumer in a colocation group of the schedulers' own (the model's
        groups are unchanged), in which it floats (`floating_members`): it is placed when
        its consumer is, on the same device. Why: a list scheduler puts a constant or a
        shape, ready at t = 0, on whichever device is idle then, and its tensor must then
        cross to its consumer; on Baechi's GNMT graph 45-55% of the heuristics' transfers
        start at such ops. Left alone: pinned or colocated sources, edges of 0 bytes,
        consumers in a colocation group, and consumers that may use a device the source
        may not. m-TOPO's budgets still count only the model's groups.
        """
        groups = list(self.groups)
        group_of, pin, allowed = self.group_of, self.pin, self.allowed
        joined: dict[int, int] = {}  # consumer -> its group of followers
        for i in range(self.n):
            if self.pred[i] or len(self.succ[i]) != 1 or pin[i] >= 0 or group_of[i] >= 0:
                continue
            j, nbytes = self.succ[i][0]
            if nbytes == 0:
                continue  # nothing would cross
            if j not in joined and (group_of[j] >= 0 or not set(allowed[j]) <= set(allowed[i])):
                continue
            if j not in joined:
                joined[j] = group_of[j] = len(groups)
                groups.append((j,))
            g = joined[j]
            groups[g] = tuple(sorted((*groups[g], i)))
            group_of[i], allowed[i], pin[i] = g, allowed[j], pin[j]
        self.groups = tuple(groups)

    @classmethod
    def of(cls, problem: Problem) -> Instance:
        """The instance of `problem`, built on first use and cached on the problem: every
        list scheduler reads it and none changes it, so `auto`'s candidates share one."""
        return derived(problem, "_instance", lambda: cls(problem))

    @property
    def followers(self) -> bool:
        """Whether some source follows its consumer here (the schedulers' own groups):
        `without_followers` is then another instance."""
        return len(self.groups) != len(self.model_groups)

    def without_followers(self) -> Instance | None:
        """This problem's instance without the schedulers' own groups (no source follows
        its consumer), built on first use; None when this instance has none.

        For the memory retry (`retry.memory_passes`): a follower is placed with its consumer
        as one unit, so a source with large params can make that unit fit on no device, or
        leave a device no room for what comes later, where the two apart fit.
        """
        if not self.followers:
            return None
        if self._plain is None:
            self._plain = Instance(self.problem, follow=False)
        return self._plain

    def engine_arrays(self) -> tuple[tuple[np.ndarray, ...], np.ndarray] | None:
        """The instance as flat arrays for the compiled ETF engine (`_engine_kernel`), built
        on first use and kept (`auto`'s candidates share them); None when its byte sums
        might not fit the kernel's int64."""
        if self._engine is False:
            self._engine = _engine_arrays(self)
        return self._engine  # type: ignore[no-any-return]

    def mean_comm(self, nbytes: int) -> float:
        """Mean transfer time of `nbytes` over the cluster's links (`cost.Costs.mean_transfer`,
        linear in bytes: `cost.transfer_seconds` over the mean link)."""
        return transfer_seconds(self.mean_lat, self.mean_inv, nbytes)

    def name(self, i: int) -> str:
        """The name of op `i`."""
        return self.problem.graph.ops[i].name


def _unit_times(inst: Instance) -> tuple[list[list[float]], list[float]]:
    """Per op and device, the time its unit takes there; per op, the least of those over
    the devices the unit may use (0.0 when it may use none).

    A unit is a colocation group of the model, whole, or a lone op. `unit_time[i][d]` is
    the sum of its members' times on `d` (for a lone op its own time: the same row as
    `compute`), and op `i`'s *slowdown* on `d` is `unit_time[i][d] - unit_best[i]`. Why the
    whole group: a group goes where its first placed member goes, so a rule that weighed
    that member alone put a group on a slow CPU because its first member (an embedding with
    a fast CPU kernel) was quick there, and left the rest of the group 20x slower (a
    two-tower model: 53.5 ms against a 16.02 ms optimum). The list schedulers compare a
    pair by `start + unit_time - unit_best` (`etf`, `sct`, in that order of operations) and
    a device by `start + unit_time` (`insertion`); for a lone op both are the rules they
    were, to the bit (`facts.fastest` is its `unit_best`). The groups the schedulers add
    themselves (`_sources_follow_their_consumer`) are left out: their sources are constants
    and shapes, whose time would only round the consumer's.
    """
    comp, allowed = inst.compute, inst.allowed
    unit_time = list(comp)
    best = list(facts(inst.problem).fastest)  # a lone op's: its own least time
    for members in inst.model_groups:
        if len(members) > 1:
            total = [sum(col) for col in zip(*(comp[j] for j in members), strict=True)]
            least = min((total[d] for d in allowed[members[0]]), default=0.0)
            for j in members:
                unit_time[j], best[j] = total, least
    return unit_time, best


def _engine_arrays(inst: Instance) -> tuple[tuple[np.ndarray, ...], np.ndarray] | None:
    """(the kernel's instance tuple `A`, topological order) for `Instance.engine_arrays`;
    `A` holds, in the order of `_engine_kernel.InstArrays`' fields (which names them):
    compute, lat, inv, pred and succ in CSR (edge order within an op, as `pred`/`succ`)
    with bytes (pred's also as floats, rounded as Python's `b * inv` rounds b), group per op,
    groups in CSR, floating flags, allowed devices (n x m), each unit's least time, params +
    outputs, temps, caps, and unit times (n x m; `_unit_times`)."""
    n, m = inst.n, inst.m
    edges = inst.problem.graph.edges
    ne = len(edges)
    try:
        src, dst, nbytes = (np.fromiter(map(attrgetter(a), edges), np.int64, ne)
                            for a in ("src", "dst", "bytes"))
        po = np.fromiter(inst.po, np.int64, n)
        temp = np.fromiter(inst.temp, np.int64, n)
    except OverflowError:
        return None
    # the kernel's sums of bytes stay far inside int64 below this
    mass = np.abs(nbytes).sum(dtype=float) + np.abs(po).sum(dtype=float)
    if mass + np.abs(temp).sum(dtype=float) >= 2.0**60:
        return None
    by_dst = np.argsort(dst, kind="stable")
    by_src = np.argsort(src, kind="stable")
    pred_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=pred_ptr[1:])
    succ_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=succ_ptr[1:])
    pred_b = nbytes[by_dst]
    grp_ptr = np.zeros(len(inst.groups) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, inst.groups), np.int64, len(inst.groups)), out=grp_ptr[1:])
    allow = np.ones((n, m), np.uint8)
    for i, a in enumerate(inst.allowed):
        if len(a) != m:
            allow[i] = 0
            allow[i, list(a)] = 1
    arrays = (
        np.fromiter(chain.from_iterable(inst.compute), np.float64, n * m).reshape(n, m),
        np.array(inst.lat, dtype=np.float64).reshape(m, m),
        np.array(inst.inv, dtype=np.float64).reshape(m, m),
        pred_ptr, src[by_dst], pred_b, pred_b.astype(np.float64),
        succ_ptr, dst[by_src], nbytes[by_src],
        np.fromiter(inst.group_of, np.int64, n), grp_ptr,
        np.fromiter(chain.from_iterable(inst.groups), np.int64, int(grp_ptr[-1])),
        np.fromiter(inst.floating, np.bool_, n), allow,
        np.array(inst.unit_best, dtype=np.float64), po, temp,
        np.fromiter((min(c, (1 << 63) - 1) for c in inst.caps), np.int64, m),
        np.fromiter(chain.from_iterable(inst.unit_time), np.float64, n * m).reshape(n, m))
    return arrays, np.fromiter(inst.topo, np.int64, n)


def floating_members(inst: Instance) -> list[bool]:
    """Per op, whether it *floats* in its colocation group (see the module docstring).

    An op floats when it is in an unpinned colocation group, every input comes from a
    floating member of its group or carries 0 bytes, and every consumer is in its group:
    constants, shapes and other bookkeeping that move no data into the group. A group whose
    members would all float has nothing to be anchored by, so none of them floats. O(V + E).
    """
    group_of, pin, succ, pred = inst.group_of, inst.pin, inst.succ, inst.pred
    out = [False] * inst.n
    for i in inst.topo:
        g = group_of[i]
        if g < 0 or pin[i] >= 0:
            continue
        floats = True  # loops, not all() over generators: this runs for every grouped op
        for j, _ in succ[i]:
            if group_of[j] != g:
                floats = False
                break
        if floats:
            for p, b in pred[i]:
                if not (out[p] if group_of[p] == g else b == 0):
                    floats = False
                    break
        out[i] = floats
    for members in inst.groups:
        if all(out[i] for i in members):
            for i in members:
                out[i] = False
    return out
