"""`hybrid`'s stage cost: what its DP (`pipehybrid`, whose module docstring gives the
formula and why) charges a stage of units `[i, j)` on a group of replicas, per end j.

Apart from the DP itself so that each stays under the house's 600 lines: the DP reads
only `Start.cost`, `replica_units` and `fixed_count` from here.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from ..cost import (
    INF,
    Costs,
    allreduce_seconds,
    costs,
    ring_link,
    stage_memory,
    transfer_seconds_array,
)
from ..model import Pipeline, Problem, derived
from ..pipeline import hybrid
from ..pipeline.units import Units, units

__all__ = ["Start", "fixed_count", "replica_units"]

#: the prefix tables `Start._span` sums over
_COMPUTE, _BANNED, _REPLICA_BANNED, _FORWARD = range(4)
#: `_signature`: the figures' key, the ring's link (None: one replica), the least memory
_Signature = tuple[tuple[object, ...], tuple[float, float] | None, int]


def replica_units(problem: Problem) -> Units:
    """The units as a stage's replicas after its first may run them. Under `data_parallel
    N` a pin names the device of the first of the N pipelines (as `simulate --stages` and
    pipeilp's identical pipelines read it), so the other replicas are bound by op times
    alone; else by the pins too (under `auto` a pinned unit is never replicated)."""
    pipeline = problem.pipeline or Pipeline()
    if fixed_count(pipeline) in (None, 1) or not problem.pins:
        return units(problem)
    free = derived(problem, "pipehybrid.unpinned", lambda: dataclasses.replace(
        problem, pins=MappingProxyType({})))
    return units(free)


def fixed_count(pipeline: Pipeline) -> int | None:
    """`data_parallel N`'s N, or None (`auto`: the DP chooses)."""
    return None if pipeline.data_parallel == "auto" else int(pipeline.data_parallel)



def _group_key(problem: Problem, group: tuple[int, ...], has_next: bool, has_before: bool
               ) -> tuple[object, ...]:
    """What a stage's figures depend on besides its units: its devices' classes (their
    compute, its forward share and the units they may run: `_classes`) and the links to
    the stages beside it."""
    kinds, link = _classes(problem)
    before, after = _beside(problem, group)
    return (tuple(kinds[d] for d in group),
            link[before][group[0]] if has_before else None,
            link[group[-1]][after] if has_next else None)


def _beside(problem: Problem, group: tuple[int, ...]) -> tuple[int, int]:
    """The devices of the stages before and after a stage on `group`: the devices before
    its first and after its last, in the cluster's order or a rotation of it
    (`pipehybrid.device_orders`), so modulo the device count."""
    m = len(problem.cluster.devices)
    return (group[0] - 1) % m, (group[-1] + 1) % m


def _signature(problem: Problem, group: tuple[int, ...], has_next: bool, has_before: bool
               ) -> _Signature:
    """All a stage's cost reads of its group: `_group_key`, the ring's link
    (`cost.ring_link`, None on one device) and the least memory. Once per group."""
    done: dict[tuple[object, ...], _Signature] = derived(problem, "pipehybrid.signatures",
                                                         dict)
    key = (group, has_next, has_before)
    if key not in done:
        done[key] = (_group_key(problem, group, has_next, has_before),
                     ring_link(costs(problem), group) if len(group) > 1 else None,
                     min(problem.cluster.devices[d].memory_bytes for d in group))
    return done[key]


def _classes(problem: Problem) -> tuple[list[int], list[list[int]]]:
    """Per device its class, per pair its link's class. Devices of a class have the same
    `units` rows that `_figures` reads: compute, its forward share (`_busy`'s wait for the
    first backward; kinds whose units take alike totals, split otherwise between forward
    and backward, once shared one's figures) and bans.

    The replicas after a stage's first read their bans from `replica_units` instead, which
    the class need not hold. That differs from `units` only under `data_parallel N` with
    pins, and only on a pinned unit, which `units` allows on its pin P alone (or nowhere).
    A stage without one: its replicas' bans are `units`' own, in the class. A stage with
    one is inf unless its first device is P; P's class is P's alone (no other device is
    allowed the unit), and a group is N consecutive devices from its first, modulo the
    device count (`_dp`, `device_orders`, `layout_cost`): groups alike with P first are one
    group."""
    def derive() -> tuple[list[int], list[list[int]]]:
        u, c = units(problem), costs(problem)
        m = len(problem.cluster.devices)
        seen: dict[tuple[bytes, ...], int] = {}
        kinds = [seen.setdefault(tuple(t[d].tobytes() for t in (
            u.compute_prefix, u.forward_prefix, u.banned_prefix)), len(seen)) for d in range(m)]
        pairs: dict[tuple[float, ...], int] = {}
        link = [[pairs.setdefault((c.latency[a][b], c.inv_bandwidth[a][b], c.latency[b][a],
                                   c.inv_bandwidth[b][a]), len(pairs)) for b in range(m)]
                for a in range(m)]
        return kinds, link
    return derived(problem, "pipehybrid.classes", derive)


@dataclass(frozen=True, slots=True)
class _Figures:
    """What a stage's cost reads of its units and group, per end (module docstring)."""

    #: F(i), B(i): the forward and the backward compute of the units before the stage
    ahead: float
    behind: float
    #: max(C, X) (C where `contention none`), inf where a replica may not run a unit
    resource: NDArray[np.float64]
    #: C and its forward share, on the slowest replica and the first
    compute: NDArray[np.float64]
    forward: NDArray[np.float64]
    #: D: the transfers to the stage after and back, and the compute of the units after j
    after: NDArray[np.float64]


class Start:
    """The DP's figures of the stages that start at unit `i` and end at each of `ends`
    (module docstring; `u` is `units(problem)`); what depends on the stage's group is
    computed per group once, what depends on one device or link per device or link."""

    def __init__(self, problem: Problem, u: Units, grad_prefix: NDArray[np.float64], i: int,
                 ends: NDArray[np.int64],
                 ties: Sequence[tuple[NDArray[np.int64], float]] = ()) -> None:
        self.u, self.i, self.ends = u, i, ends
        self.grads = grad_prefix[ends] - grad_prefix[i]
        for holders, nbytes in ties:  # a tied weight's gradient reduced once per stage
            inside = np.searchsorted(holders, ends) - np.searchsorted(holders, i)
            self.grads = self.grads - np.maximum(inside - 1, 0) * nbytes
        self.params = u.params_prefix[ends] - u.params_prefix[i]
        self.transient = np.maximum.accumulate(u.transient[i:])[ends - i - 1]
        self.acts = u.kept_prefix[ends] - u.kept_prefix[i] + u.forward_bytes[i]
        self.bucket = np.minimum(self.grads, hybrid.DDP_BUCKET_BYTES)
        self._by_group: dict[tuple[object, ...], _Figures] = {}
        self._costs: dict[tuple[object, ...], NDArray[np.float64]] = {}
        self._flights: dict[tuple[int, int], int] = {}
        self._way_back: dict[tuple[object, ...], NDArray[np.float64] | float] = {}
        self._too_big: dict[tuple[object, ...], NDArray[np.bool_]] = {}
        # what the figures read per device or link, not per group: each computed once
        ahead, behind, after = _fastest(u, i, ends)
        self._fastest = ahead, behind, _read_only(after)
        self._spans: dict[tuple[int, int], NDArray[np.float64]] = {}

    def _busy(self, f: _Figures, share: int, flight: int) -> NDArray[np.float64]:
        """A replica's time from its first micro-batch in to its last one out: `share`
        = ceil(M / r) times max(C, X), and the wait for its first backward, D less the
        forwards it runs meanwhile; where it holds `flight` < `share` micro-batches (1F1B),
        at least ceil(share / flight) round trips C + D (module docstring)."""
        busy = share * f.resource
        if self.u.training:
            busy = busy + np.maximum(0.0, f.after - (min(flight, share) - 1) * f.forward)
        if flight < share:
            busy = np.maximum(busy, -(-share // flight) * (f.compute + f.after))
        return busy

    def _span(self, prefix: NDArray[np.float64], table: int, d: int) -> NDArray[np.float64]:
        """Per end, `prefix[d]`'s sum over the stage (`table` names `prefix`)."""
        key = (table, d)
        if key not in self._spans:
            self._spans[key] = _read_only(prefix[d, self.ends] - prefix[d, self.i])
        return self._spans[key]

    def _figures(self, problem: Problem, c: Costs, group: tuple[int, ...], has_next: bool,
                 ) -> _Figures:
        u, i, ends = self.u, self.i, self.ends
        # the slowest replica's compute (max is exact in any order, duplicates or not)
        compute = functools.reduce(np.maximum, (
            self._span(u.compute_prefix, _COMPUTE, d) for d in group))
        rep = group[0]
        banned = self._span(u.banned_prefix, _BANNED, rep)
        if len(group) > 1:  # the other replicas, as `replica_units` binds them
            bp = replica_units(problem).banned_prefix
            banned = np.maximum(banned, functools.reduce(np.maximum, (
                self._span(bp, _REPLICA_BANNED, d) for d in group[1:])))
        # the units before and after the stage at the pace of the fastest device (their
        # layout is not the stage's to know): no more than they take
        ahead, behind, after = self._fastest
        transfers = np.zeros(len(ends))
        before, beyond = _beside(problem, group)
        if i > 0:  # from the stage before (on the device before the group)
            transfers += _crossing(problem, c, before, group[0])[i]
        if has_next:  # to the stage after (the device after the group)
            out = _crossing(problem, c, group[-1], beyond)[ends]
            transfers, after = transfers + out, after + out
        resource = compute if problem.contention == "none" else np.maximum(compute, transfers)
        return _Figures(ahead, behind, np.where(banned > 0, INF, resource), compute,
                        self._span(u.forward_prefix, _FORWARD, rep), after)

    def cost(self, problem: Problem, c: Costs, pipeline: Pipeline, group: tuple[int, ...],
             has_next: bool, p: int) -> NDArray[np.float64]:
        """Per end: the cost of the stage on `group`, `p` devices from it to the last stage
        (module docstring); inf where it cannot run or a replica does not fit. Computed
        once per distinct input: the DP asks again for groups alike (same figures, ring
        link and memory) at the same micro-batches in flight, 57% of its asks on GPT-24
        over two nodes. Read-only: it is shared."""
        r = len(group)
        if (r, p) not in self._flights:
            self._flights[r, p] = hybrid.in_flight(pipeline, [r, p - r] if p > r else [r], 0,
                                                   self.u.training)
        key = (_signature(problem, group, has_next, self.i > 0), self._flights[r, p])
        if key not in self._costs:
            self._costs[key] = _read_only(self._cost(problem, c, pipeline, group, has_next,
                                                     *key))
        return self._costs[key]

    def _cost(self, problem: Problem, c: Costs, pipeline: Pipeline, group: tuple[int, ...],
              has_next: bool, signature: _Signature, flight: int,
              ) -> NDArray[np.float64]:
        """`cost`, computed: what it reads of `group` is its `_signature`; its parts
        each computed once per what they read."""
        figures, ring_at, cap = signature
        r = len(group)
        share = -(-pipeline.microbatches // r)
        if figures not in self._by_group:
            self._by_group[figures] = self._figures(problem, c, group, has_next)
        f = self._by_group[figures]
        busy = self._busy(f, share, flight if self.u.training
                          and not pipeline.schedule_spec.virtual_stages else share)
        if (r, ring_at) not in self._way_back:  # B(i) or the all-reduce, the longer
            ring = 0.0 if ring_at is None else allreduce_seconds(self.grads, r, *ring_at)
            self._way_back[r, ring_at] = np.maximum(f.behind, ring)
        cost = f.ahead + busy + self._way_back[r, ring_at]
        # a replica's share of the receive buffers (inference: of the inputs and outputs)
        key = (flight, r, cap) if self.u.training else (flight, r, has_next, cap)
        if key not in self._too_big:
            need = stage_memory(self.params, flight, self.acts, self.transient) + (
                self.bucket if r > 1 else 0.0) + hybrid.step_bytes(
                self.u, self.i, self.ends, pipeline, r, not has_next)
            self._too_big[key] = np.greater(need, cap)
        out: NDArray[np.float64] = np.where(self._too_big[key], INF, cost)
        return out


def _fastest(u: Units, i: int, ends: NDArray[np.int64]
             ) -> tuple[float, float, NDArray[np.float64]]:
    """F(i), B(i) and, per end j, the compute of the units after j, each on the device
    that runs them fastest."""
    cp, fp = u.compute_prefix, u.forward_prefix
    return (float(fp[:, i].min()), float((cp[:, i] - fp[:, i]).min()),
            (cp[:, [-1]] - cp[:, ends]).min(axis=0))


def _crossing(problem: Problem, c: Costs, a: int, b: int) -> NDArray[np.float64]:
    """Per boundary of `units(problem)`, `_cross_many` between devices a and b: elementwise,
    so the same floats as over any of them; once per link class (`_classes`)."""
    _, link = _classes(problem)
    done: dict[int, NDArray[np.float64]] = derived(problem, "pipehybrid.crossing", dict)
    if link[a][b] not in done:
        u = units(problem)
        done[link[a][b]] = _read_only(_cross_many(u, c, np.arange(u.count + 1), a, b))
    return done[link[a][b]]


def _read_only(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """`a`, shared among figures: made read-only so that no one changes it for the rest."""
    a.setflags(write=False)
    return a


def _cross_many(u: Units, c: Costs, xs: NDArray[np.int64], a: int, b: int
                ) -> NDArray[np.float64]:
    """Seconds of the transfers across boundaries `xs` between devices a and b, both ways."""
    if c.latency[a][b] >= INF or c.latency[b][a] >= INF:  # a missing link: none, both ways
        return np.full(len(xs), INF)
    return (transfer_seconds_array(c.latency[a][b], c.inv_bandwidth[a][b],
                                   u.forward_bytes[xs], u.forward_count[xs])
            + transfer_seconds_array(c.latency[b][a], c.inv_bandwidth[b][a],
                                     u.backward_bytes[xs], u.backward_count[xs]))
