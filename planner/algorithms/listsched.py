"""The one list-scheduling core behind m-ETF, m-SCT, HEFT, CPOP and the baselines.

Four parts, composed by each algorithm:

- `Instance`: a problem as dense Python lists (compute times, per-op input and output
  edges, link latencies, pins, colocation groups, runnable devices), built once.
- `Placer`: the constraints of a partial placement: which devices an op may still go to
  (runnable, pins, its colocation group's device) and whether it fits in memory there
  (`planner.cost.StaticMemoryTracker`, plus reservations for colocation groups).
- Two drivers that choose (op, device) pairs and start times:
  `etf_schedule` (event-driven earliest start time, used by m-ETF, m-SCT and to order
  fixed placements) and `insertion_schedule` (ops in priority order, each on the device of
  earliest finish with insertion into idle gaps, used by HEFT and CPOP).
- `memory_passes`: runs a driver again with tighter memory budgets when it dead-ends, and
  falls back to m-TOPO's fill (`topo_fill`), so a plan is found whenever m-TOPO finds one.

Shared rules, documented once:

- **Communication estimates** use contention `none`: an input from another device arrives
  `latency + bytes / bandwidth` after its producer ends (`cost.Costs`). The simulator judges
  every plan under the plan's real contention model.
- **Memory** is checked with static accounting (`cost.StaticMemoryTracker`) under both
  memory models: the static total bounds the liveness peak from above, so a plan that fits
  statically fits under `liveness` too.
- **Colocation**: a group is placed as one unit. When its first op goes to device `d`,
  the static memory of the whole group (params and outputs of the members not yet placed,
  and their largest temp) must fit on `d` and is reserved there; the other members are then
  forced to `d`. A pin on any member pins the group.
- **Floating members** (`floating_members`): the device of a group is chosen by its first
  member that receives data from outside the group, not by its constants. A member floats
  when every input comes from a floating member of its group or carries 0 bytes, and every
  consumer is in its group (constants, shapes, `perm`s: TensorFlow colocates these with
  the op they feed). Until its group is bound, a floating op whose inputs are done waits,
  counted as done for its group's other members; when a non-floating member binds the group
  to `d`, the waiting floating ops run on `d` first, in the order they became ready. Why:
  bound by whichever member is ready first, a group's device is decided by a 1 µs constant
  that was free at that moment; on Baechi's GNMT graph this put the `loss` group away from
  the 614 MB logits it reads (one 108 ms transfer) and left every list scheduler near
  400 ms, Baechi's own figure; floating brings them to about 220 ms.
- **Memory budgets** (`Placer.budget`, `memory_passes`): a retry after a dead end limits
  the ops whose device is still a choice to a budget below the devices' memory, keeping the
  rest for ops forced onto a device (pinned, or members of a bound group) and the tensors
  they receive. An op that fits under its budget on no device may use the whole memory, as
  m-TOPO's walk spills.
- **Ties** never depend on hash order: ops by a static priority (an integer position,
  see `priority_positions`), then devices by earliest finish, then smallest device index.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import Any

from ..cost import INF, StaticMemoryTracker, costs
from ..errors import InfeasibleError
from ..facts import facts
from ..model import Problem, derived
from ..plan import Plan
from ..simulate import simulate
from . import display_name
from .base import Solution, Status
from .infeasible import stuck_error

#: sources with one consumer follow it (`Instance._sources_follow_their_consumer`)
FOLLOW_SOURCES = True


class Instance:
    """A problem as dense lists, precomputed once for the list schedulers.

    `pred[i]` / `succ[i]` list `(other op, bytes)` per edge; `allowed[i]` the devices op `i`
    may run on and `pin[i]` its device or -1 (both `planner.facts`'); `local[i]` per input
    edge whether both ends are forced onto one device (same group or same pin), so the edge
    never costs communication; `floating[i]` whether op `i` floats in its colocation group
    (`floating_members`).
    """

    def __init__(self, problem: Problem) -> None:
        g = problem.graph
        cluster = problem.cluster
        c = costs(problem)
        self.problem = problem
        self.n = n = len(g.ops)
        self.m = m = len(cluster.devices)
        self.compute: list[list[float]] = [list(row) for row in c.compute]
        self.lat: list[list[float]] = [list(row) for row in c.latency]
        self.inv: list[list[float]] = [list(row) for row in c.inv_bandwidth]
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
        if FOLLOW_SOURCES:
            self._sources_follow_their_consumer()

        self.mean_compute: list[float] = []
        for row in self.compute:
            finite = [t for t in row if t < INF]
            self.mean_compute.append(sum(finite) / len(finite) if finite else 0.0)
        self.mean_lat = c.mean_latency if m > 1 else 0.0
        self.mean_inv = c.mean_inv_bandwidth if m > 1 else 0.0
        group_of = self.group_of
        self.local: list[list[bool]] = [
            [(group_of[i] >= 0 and group_of[p] == group_of[i]) or (pin[i] >= 0 and pin[p] == pin[i])
             for p, _ in self.pred[i]]
            for i in range(n)
        ]
        self.floating = floating_members(self)

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

    def mean_comm(self, nbytes: int) -> float:
        """Mean transfer time of `nbytes` over the cluster's links (`cost.Costs.mean_transfer`)."""
        return self.mean_lat + nbytes * self.mean_inv

    def name(self, i: int) -> str:
        """The name of op `i`."""
        return self.problem.graph.ops[i].name


def floating_members(inst: Instance) -> list[bool]:
    """Per op, whether it *floats* in its colocation group (see the module docstring).

    An op floats when it is in an unpinned colocation group, every input comes from a
    floating member of its group or carries 0 bytes, and every consumer is in its group:
    constants, shapes and other bookkeeping that move no data into the group. A group whose
    members would all float has nothing to be anchored by, so none of them floats. O(V + E).
    """
    group_of, pin = inst.group_of, inst.pin
    out = [False] * inst.n
    for i in inst.topo:
        g = group_of[i]
        if g < 0 or pin[i] >= 0:
            continue
        out[i] = all(group_of[j] == g for j, _ in inst.succ[i]) and all(
            (out[p] if group_of[p] == g else b == 0) for p, b in inst.pred[i])
    for members in inst.groups:
        if all(out[i] for i in members):
            for i in members:
                out[i] = False
    return out


# ---- static priorities --------------------------------------------------------------------


def upward_rank(inst: Instance) -> list[float]:
    """HEFT's upward rank: mean compute of the op plus the longest mean path to an exit.

    `rank_u(i) = w̄(i) + max over successors j of (c̄(i, j) + rank_u(j))`, with `w̄` the mean
    compute time over runnable devices and `c̄` the mean transfer time (0 on edges that are
    forced local). O(V + E).
    """
    rank = [0.0] * inst.n
    w = inst.mean_compute
    ml, mi = inst.mean_lat, inst.mean_inv
    pred, local = inst.pred, inst.local
    # push each op's rank to its producers, in reverse topological order
    best = [0.0] * inst.n
    for i in reversed(inst.topo):
        r = w[i] + best[i]
        rank[i] = r
        for (p, b), loc in zip(pred[i], local[i]):
            v = r if loc else r + ml + b * mi
            best[p] = max(best[p], v)
    return rank


def downward_rank(inst: Instance) -> list[float]:
    """CPOP's downward rank: the longest mean path from an entry op to the op, excluded.

    `rank_d(j) = max over predecessors i of (rank_d(i) + w̄(i) + c̄(i, j))`, 0 at entries.
    O(V + E).
    """
    rank = [0.0] * inst.n
    w = inst.mean_compute
    ml, mi = inst.mean_lat, inst.mean_inv
    for j in inst.topo:
        best = 0.0
        for (p, b), loc in zip(inst.pred[j], inst.local[j]):
            v = rank[p] + w[p] + (0.0 if loc else ml + b * mi)
            best = max(best, v)
        rank[j] = best
    return rank


def priority_positions(inst: Instance, score: Sequence[float]) -> list[int]:
    """Each op's position when sorted by larger `score`, ties by topological position.

    Position 0 is the highest priority. Integer positions make heap keys cheap and ties
    deterministic. With ranks, this order is also topological (a producer's rank is at least
    its consumer's, and equal ranks fall back to topological position).
    """
    order = sorted(range(inst.n), key=lambda i: (-score[i], inst.topo_pos[i]))
    pos = [0] * inst.n
    for p, i in enumerate(order):
        pos[i] = p
    return pos


# ---- constraints of a partial placement ---------------------------------------------------


class Stuck(Exception):
    """A list scheduler found no device for op `op` (memory or constraints); see infeasible.py."""

    def __init__(self, op: int) -> None:
        super().__init__(op)
        self.op = op


class Placer:
    """Pins, colocation and memory of a partial placement (see the module docstring).

    `need(i, d)` only grows as more ops are placed (reservations turn into real use), so an
    op that does not fit on a device never fits there later.

    `budget` (bytes per device, see `memory_passes`) limits the ops whose device is still a
    choice; an op whose device is forced (pinned, or its colocation group bound) may use the
    device's whole memory, so room kept back by the budget serves the forced ops. With
    `placement` every op's device is given (a placement found by another rule), and only
    that device is allowed.
    """

    def __init__(self, inst: Instance, budget: Sequence[int] | None = None,
                 placement: Sequence[int] | None = None, *, unbounded: bool = False) -> None:
        self.inst = inst
        self.budget = budget
        self.placement = placement
        #: memory is not checked here (`liveness_pass` checks the whole plan by simulation)
        self.unbounded = unbounded
        #: per op: fits under its budget on no device, so it may use the whole memory
        self.spilled = [False] * inst.n
        self.tracker = StaticMemoryTracker(inst.problem.graph, inst.m)
        self.device_of: list[int] = self.tracker.device_of
        self.group_dev = [-1] * len(inst.groups)
        self.group_po_left = [sum(inst.po[i] for i in g) for g in inst.groups]
        # reservations per device: params+outputs of unplaced members of bound groups, and
        # per bound group the largest temp among its unplaced members
        self.res_po = [0] * inst.m
        self.res_temp: list[dict[int, int]] = [{} for _ in range(inst.m)]

    def allowed(self, i: int) -> tuple[int, ...]:
        """The devices op `i` may go to now."""
        inst = self.inst
        if self.placement is not None:
            return (self.placement[i],)
        g = inst.group_of[i]
        if g >= 0 and self.group_dev[g] >= 0:
            d = self.group_dev[g]
            return (d,) if d in inst.allowed[i] else ()
        return inst.allowed[i]

    def _unplaced_temp(self, g: int, without: int) -> int:
        """Largest temp among group `g`'s unplaced members other than op `without`."""
        temp, dev = self.inst.temp, self.device_of
        return max((temp[j] for j in self.inst.groups[g] if dev[j] < 0 and j != without),
                   default=0)

    def need(self, i: int, d: int) -> int:
        """Bytes device `d` would hold, reservations included, after placing op `i` there."""
        inst = self.inst
        tr = self.tracker
        total = tr.used[d] + tr.extra(i, d) + self.res_po[d]
        g = inst.group_of[i]
        res = self.res_temp[d]
        rest_temp = max((t for gg, t in res.items() if gg != g), default=0)
        if g >= 0:
            if self.group_dev[g] < 0:  # first member: reserve the rest of the group
                total += self.group_po_left[g]
            total -= inst.po[i]
            rest_temp = max(rest_temp, self._unplaced_temp(g, i))
        new_temp = max(tr.temp[d], inst.temp[i])
        if rest_temp > new_temp:
            total += rest_temp - new_temp
        return total

    def fits(self, i: int, d: int, caps: Sequence[int] | None = None) -> bool:
        """Whether op `i` fits on device `d` (within `caps`; by default the devices' memory,
        or the budget when op `i`'s device is still a choice)."""
        if self.unbounded:
            return True
        if caps is None:
            caps = self.inst.caps
            if self.budget is not None and not self.spilled[i] and not self.forced(i):
                caps = self.budget
        return self.need(i, d) <= caps[d]

    def forced(self, i: int) -> bool:
        """Whether op `i`'s device is no longer a choice (pinned, or its group bound)."""
        g = self.inst.group_of[i]
        return self.inst.pin[i] >= 0 or (g >= 0 and self.group_dev[g] >= 0)

    def commit(self, i: int, d: int) -> None:
        """Place op `i` on device `d` (charging memory, binding its colocation group)."""
        inst = self.inst
        self.tracker.place(i, d)
        g = inst.group_of[i]
        if g < 0:
            return
        if self.group_dev[g] < 0:
            self.group_dev[g] = d
            self.res_po[d] += self.group_po_left[g]
        self.res_po[d] -= inst.po[i]
        self.group_po_left[g] -= inst.po[i]
        if any(self.device_of[j] < 0 for j in inst.groups[g]):
            self.res_temp[d][g] = self._unplaced_temp(g, i)
        else:
            self.res_temp[d].pop(g, None)


# ---- driver 1: event-driven earliest start time -------------------------------------------


def etf_schedule(
    inst: Instance,
    placer: Placer | None,
    prank: Sequence[int],
    *,
    fixed: Sequence[int] | None = None,
    favourite: Sequence[int] | None = None,
) -> tuple[list[int], list[float]]:
    """Earliest Task First: repeatedly commit the (ready op, device) pair that starts first.

    A pair's start is `max(device free, inputs arrived)`; pairs are compared by start plus
    the op's *slowdown* on that device (its time there minus its time on its fastest
    allowed device). Ties: smaller `prank` (higher priority), then earlier finish, then
    smaller device index. Why the slowdown: ETF (and Baechi's m-ETF and m-SCT) were defined
    for identical devices, where it is 0 and this is exactly their earliest-start rule. On
    devices of different speeds, earliest start alone commits an op to whichever device is
    idle, however slow: the README's `tiny.plan` put every op on a CPU 20x slower than the
    GPUs (33.0 ms against 2.887 ms). For one op, start + slowdown orders its devices by
    finish time (earliest finish, as HEFT); across ops it is the start the op would have on
    its fastest device, so an op is never preferred for being slow. With `fixed` the device
    is given and the slowdown is not used. A pair whose op does not fit
    in memory (checked only when the pair is chosen) is dropped for good: static memory only
    grows, so it never fits later. With `fixed`, each op's device is given (no memory check):
    this orders a placement made by another algorithm (dynamic dispatch).

    Floating members of unbound colocation groups wait and run on their group's device when
    it binds (module docstring); their compute time is not in the binding member's start
    estimate (it starts after them). With a budget (`Placer.budget`), a pair over the budget
    is dropped like one that does not fit, until the limit changes: when a group binds to
    `d`, its members' drops on `d` are forgotten (forced, they may use the whole memory);
    an op over its budget on every device it may use spills (may use the whole memory) and
    is made ready again.

    With `favourite` (m-SCT): after device `d` runs op `i`, `d` is reserved for `i`'s
    favourite child `f` while `f` is unplaced, all of `f`'s inputs are placed, and `d` is
    among the devices where `f` can start earliest. A reserved device runs only `f` or an
    *urgent* op, one whose inputs have arrived on every device it may run on: waiting can no
    longer save it any communication. (Baechi also waits for every device to be free; that
    needs a re-check of each ready op whenever a device gets busier, 3x slower on GNMT, and
    made no consistent difference to the plans.) Urgent ops go first at equal times.

    Returns (device per op, start time per op). Raises `Stuck` when a ready op has no device
    left. Time: each ready op enters one arrival heap per allowed device, so O((V·D + E·D)
    log V) for V ops, E edges, D devices, plus O(D) work per committed op (O(D²) with
    reservations).
    """
    n, m = inst.n, inst.m
    comp, lat, inv, pred, succ = inst.compute, inst.lat, inst.inv, inst.pred, inst.succ
    group_of = inst.group_of
    if placer is None:
        placer = Placer(inst)
    dev_of = placer.device_of
    group_dev = placer.group_dev
    start = [0.0] * n
    end = [0.0] * n
    avail = [0.0] * m
    missing = [len(p) for p in pred]
    forb = [0] * n  # bitmask of devices where the op does not fit
    arr_of: list[list[float] | None] = [None] * n
    # per device: ready ops whose inputs are there by the time it is free, by (slowdown,
    # priority); and ops whose inputs arrive later, by (arrival + slowdown, priority, op,
    # arrival); the slowdown is 0 with `fixed` and on identical devices (module docstring)
    arrived: list[list[tuple[float, int, int]]] = [[] for _ in range(m)]
    pending: list[list[tuple[float, int, int, float]]] = [[] for _ in range(m)]
    fastest = facts(inst.problem).fastest
    sct = favourite is not None
    urgent_h: list[list[tuple[float, int, int]]] = [[] for _ in range(m)]
    reserved = [-1] * m
    heappush, heappop = heapq.heappush, heapq.heappop

    def valid(i: int, d: int) -> bool:
        if dev_of[i] >= 0 or (forb[i] >> d) & 1:
            return False
        g = group_of[i]
        return g < 0 or group_dev[g] < 0 or group_dev[g] == d

    cand: list[tuple[float, int, float, int, int, float] | None] = [None] * m
    dirty = [True] * m
    res_active = [False] * m

    # floating members of unbound groups (see the module docstring): done in advance, in
    # an order consistent with precedence, and committed when their group binds
    flo = inst.floating if fixed is None else None
    vend = [0.0] * n  # when a floating op's inputs are done (its members may use it then)
    afloat: list[list[int]] = [[] for _ in inst.groups]

    def make_ready(i: int) -> None:
        devices = (fixed[i],) if fixed is not None else placer.allowed(i)
        a = [INF] * m
        ins = [(end[p], dev_of[p], b) for p, b in pred[i]]
        base = 0.0
        if flo is not None and group_of[i] >= 0:
            # floating inputs are in i's group, so local wherever it goes
            base = max((vend[p] for p, _ in pred[i] if dev_of[p] < 0), default=0.0)
            ins = [x for x in ins if x[1] >= 0]
        pr = prank[i]
        urgent = 0.0
        for d in devices:
            t = base
            for e, pd, b in ins:
                if pd != d:
                    e += lat[pd][d] + b * inv[pd][d]
                if e > t:  # noqa: PLR1730 (hot loop: a call to max() costs more)
                    t = e
            a[d] = t
            if t > urgent:  # noqa: PLR1730
                urgent = t
            slow = 0.0 if fixed is not None else comp[i][d] - fastest[i]
            if t <= avail[d]:
                heappush(arrived[d], (slow, pr, i))
            else:
                heappush(pending[d], (t + slow, pr, i, t))
            dirty[d] = True
        arr_of[i] = a
        if sct:
            for d in devices:
                heappush(urgent_h[d], (urgent, pr, i))
            for d in range(m):
                if reserved[d] == i:  # its reservation may become active
                    dirty[d] = True

    def candidate(d: int) -> tuple[float, int, float, int, int, float] | None:
        """Device `d`'s best pair: (start + slowdown, priority, finish, d, op, start), or
        None."""
        av = avail[d]
        pend = pending[d]
        arrh = arrived[d]
        while pend and pend[0][3] <= av:
            key, pr, i, t = heappop(pend)
            heappush(arrh, (key - t, pr, i))
        while arrh and not valid(arrh[0][2], d):
            heappop(arrh)
        while pend and not valid(pend[0][2], d):
            heappop(pend)
        i = -1
        if arrh:
            slow, pr, i = arrh[0]
            key, est = av + slow, av
        if pend and (i < 0 or (pend[0][0], pend[0][1]) < (key, pr)):
            key, pr, i, est = pend[0]  # a faster device's op beats the arrived ones
        f = reserved[d]
        res_active[d] = False
        if f >= 0:
            af = arr_of[f]
            if dev_of[f] >= 0 or (af is not None and (af[d] == INF or not valid(f, d))):
                reserved[d] = -1  # f is placed, or can never come here: void for good
            elif af is not None:  # f is ready: is d among its earliest devices?
                est_f = max(av, af[d])
                key_f = est_f + comp[f][d] - fastest[f]
                if all(key_f <= max(avail[e], af[e]) + comp[f][e] - fastest[f]
                       for e in range(m) if e != d and af[e] < INF and valid(f, e)):
                    res_active[d] = True
                    uh = urgent_h[d]
                    while uh and not valid(uh[0][2], d):
                        heappop(uh)
                    u = uh[0][2] if uh else -1
                    if u >= 0 and max(av, uh[0][0]) + comp[u][d] - fastest[u] <= key_f:
                        est, pr, i = max(av, uh[0][0]), uh[0][1], u
                        key = est + comp[u][d] - fastest[u]
                    else:
                        key, est, pr, i = key_f, est_f, prank[f], f
        if i < 0:
            return None
        return (key, pr, est + comp[i][d], d, i, est)

    def settle(i: int) -> None:
        """All of op `i`'s inputs are done: make it ready, or let it float."""
        stack = [i]
        while stack:
            i = stack.pop()
            g = group_of[i]
            if flo is None or not flo[i] or group_dev[g] >= 0:
                make_ready(i)
                continue
            t = 0.0
            for p, _ in pred[i]:
                t = max(t, end[p] if dev_of[p] >= 0 else vend[p])
            vend[i] = t
            afloat[g].append(i)
            for j, _ in succ[i]:  # all in the group
                missing[j] -= 1
                if missing[j] == 0:
                    stack.append(j)

    def land(g: int, d: int) -> None:
        """Commit group `g`'s floating members, done so far, on `d` (it binds there)."""
        for f in afloat[g]:
            t = avail[d]
            for p, b in pred[f]:
                pd = dev_of[p]
                t = max(t, end[p] if pd == d else end[p] + lat[pd][d] + b * inv[pd][d])
            placer.commit(f, d)
            start[f] = t
            end[f] = avail[d] = t + comp[f][d]
        afloat[g] = []

    for i in [i for i in inst.topo if not pred[i]]:
        settle(i)

    placed = 0
    while placed < n:
        best: tuple[float, int, float, int, int, float] | None = None
        for d in range(m):
            c = cand[d]
            # a cached pair stays best for its device until the device commits, gets a new
            # ready op, or the pair's op is taken, forbidden or bound elsewhere (an inactive
            # reservation is re-checked after every commit, see below)
            if dirty[d] or (c is not None and not valid(c[4], d)):
                c = cand[d] = candidate(d)
                dirty[d] = False
            if c is not None and (best is None or c < best):
                best = c
        if best is None:
            for i in range(n):
                if dev_of[i] < 0 and arr_of[i] is not None:
                    raise Stuck(i)
            raise Stuck(next(i for i in range(n) if dev_of[i] < 0))  # pragma: no cover
        _, _, fin, d, i, est = best
        if fixed is None and not placer.fits(i, d):
            forb[i] |= 1 << d
            if placer.budget is not None and not placer.spilled[i] and not placer.forced(i) \
                    and all((forb[i] >> e) & 1 for e in placer.allowed(i)):
                # over its budget everywhere: it may use the whole memory, as m-TOPO spills
                placer.spilled[i] = True
                forb[i] = 0
                make_ready(i)
            continue
        g = group_of[i]
        if g >= 0 and group_dev[g] < 0:  # i binds its group to d
            if afloat[g]:  # its floating members run first
                placed += len(afloat[g])
                land(g, d)
                if avail[d] > est:
                    est, fin = avail[d], avail[d] + comp[i][d]
            if placer.budget is not None:  # members now forced to d: judged by the cap
                for j in inst.groups[g]:
                    forb[j] &= ~(1 << d)
        placer.commit(i, d)
        start[i] = est
        end[i] = fin
        avail[d] = fin
        dirty[d] = True
        placed += 1
        if sct:
            assert favourite is not None
            f = favourite[i]
            reserved[d] = f if f >= 0 and dev_of[f] < 0 else -1
            # another device got busier: a ready favourite may now start earliest on a
            # device that waits for it (active reservations only stay active)
            for dd in range(m):
                ff = reserved[dd]
                if ff >= 0 and not res_active[dd] and arr_of[ff] is not None:
                    dirty[dd] = True
        for j, _ in succ[i]:
            missing[j] -= 1
            if missing[j] == 0:
                if flo is not None and flo[j]:
                    settle(j)
                else:
                    make_ready(j)
    return list(dev_of), start


def schedule_fixed(inst: Instance, placement: Sequence[int]) -> tuple[list[int], list[float]]:
    """Start times for a given placement: each device runs its ready ops earliest first.

    Ties by upward rank (higher first), then topological position. No memory check: the
    caller chose the placement. O((V + E) log V).
    """
    prank = priority_positions(inst, upward_rank(inst))
    return etf_schedule(inst, Placer(inst), prank, fixed=placement)


# ---- driver 2: priority order, earliest finish with insertion -----------------------------


def insertion_schedule(
    inst: Instance,
    placer: Placer,
    prank: Sequence[int],
    preferred: Callable[[int], int] | None = None,
) -> tuple[list[int], list[float]]:
    """Ops in priority order (smaller `prank` first among ready ops); each goes to the device
    where it finishes earliest, inserted into the earliest idle gap that holds it.

    Devices where the op does not fit in memory are skipped; ties by smaller device index.
    `preferred(i)` may name a device to use whenever the op may go there and fits (CPOP's
    critical-path device), or -1. Floating members of unbound colocation groups wait, as in
    `etf_schedule`, and are inserted on their group's device, before the member that binds
    it. Raises `Stuck` when no device takes an op.
    Each device keeps its idle gaps (sorted, found from the op's data-ready time by
    bisection) and the time it is last free. Time: O(V log V + E·D) plus the gap search,
    O(V·D·g) with g the gaps scanned per query (few in practice; O(V) at worst).
    """
    n, m = inst.n, inst.m
    comp, lat, inv, pred, succ = inst.compute, inst.lat, inst.inv, inst.pred, inst.succ
    group_of, flo = inst.group_of, inst.floating
    dev_of = placer.device_of
    group_dev = placer.group_dev
    start = [0.0] * n
    end = [0.0] * n
    vend = [0.0] * n
    afloat: list[list[int]] = [[] for _ in inst.groups]
    # per device: idle gaps before its last op (sorted, disjoint), and when it is last free
    gap_s: list[list[float]] = [[] for _ in range(m)]
    gap_e: list[list[float]] = [[] for _ in range(m)]
    tail = [0.0] * m
    missing = [len(p) for p in pred]
    heap = [(prank[i], i) for i in range(n) if missing[i] == 0]
    heapq.heapify(heap)

    def slot(i: int, d: int) -> tuple[float, int]:
        """Op `i`'s earliest start on `d` and the gap it goes in (-1: after the last op)."""
        ready = 0.0
        for p, b in pred[i]:
            pd = dev_of[p]
            if pd < 0:  # a floating member of i's group: local wherever the group goes
                x = vend[p]
            else:
                x = end[p] if pd == d else end[p] + lat[pd][d] + b * inv[pd][d]
            ready = max(ready, x)
        dur = comp[i][d]
        gs, ge = gap_s[d], gap_e[d]
        k = bisect_right(ge, ready)
        n_gaps = len(gs)
        while k < n_gaps:
            t = max(ready, gs[k])
            if t + dur <= ge[k]:
                return t, k
            k += 1
        return max(ready, tail[d]), -1

    def occupy(i: int, d: int, t: float, k: int) -> None:
        """Commit op `i` on `d` from `t`, in gap `k` (or after the last op)."""
        fin = t + comp[i][d]
        placer.commit(i, d)
        gs, ge = gap_s[d], gap_e[d]
        if k < 0:  # after the last op, maybe leaving a gap
            if t > tail[d]:
                gs.append(tail[d])
                ge.append(t)
            tail[d] = fin
        else:  # split gap k around [t, fin]
            g0, g1 = gs[k], ge[k]
            parts = [(a, b) for a, b in ((g0, t), (fin, g1)) if b > a]
            gs[k:k + 1] = [a for a, _ in parts]
            ge[k:k + 1] = [b for _, b in parts]
        start[i] = t
        end[i] = fin

    while heap:
        _, i = heapq.heappop(heap)
        g = group_of[i]
        if flo[i] and group_dev[g] < 0:  # floats: done in advance, placed when g binds
            vend[i] = max((end[p] if dev_of[p] >= 0 else vend[p] for p, _ in pred[i]),
                          default=0.0)
            afloat[g].append(i)
        else:
            cands: list[tuple[float, int, float, int]] = []
            for d in placer.allowed(i):
                t, k = slot(i, d)
                cands.append((t + comp[i][d], d, t, k))
            cands.sort()
            pref = preferred(i) if preferred is not None else -1
            if pref >= 0:
                cands.sort(key=lambda c: c[1] != pref)  # stable: the preferred device first
            for _, d, t, k in cands:
                if placer.fits(i, d):
                    break
            else:
                if placer.budget is None or placer.spilled[i] or placer.forced(i):
                    raise Stuck(i)
                placer.spilled[i] = True  # over its budget everywhere: may use the memory
                for _, d, t, k in cands:
                    if placer.fits(i, d):
                        break
                else:
                    raise Stuck(i)
            if g >= 0 and afloat[g]:  # i binds its group: its floating members go first
                for f in afloat[g]:
                    occupy(f, d, *slot(f, d))
                afloat[g] = []
                t, k = slot(i, d)
            occupy(i, d, t, k)
        for j, _ in succ[i]:
            missing[j] -= 1
            if missing[j] == 0:
                heapq.heappush(heap, (prank[j], j))
    return list(dev_of), start


# ---- memory: balanced budgets, the topological fill, and retries --------------------------


def topo_budgets(inst: Instance) -> list[int]:
    """m-TOPO's budget per device: min(its memory, total static memory // devices + largest
    unit), where the total counts every op's params, output and temp, and the largest unit
    is the largest op or colocation group."""
    total = sum(inst.po) + sum(inst.temp)
    largest = max((p + t for p, t in zip(inst.po, inst.temp)), default=0)
    for members in inst.model_groups:
        largest = max(largest, sum(inst.po[i] for i in members)
                      + max(inst.temp[i] for i in members))
    share = total // max(inst.m, 1) + largest
    return [min(cap, share) for cap in inst.caps]


def topo_fill(inst: Instance, placer: Placer) -> None:
    """m-TOPO's walk (see `mtopo`): ops in topological order fill device after device up to
    `topo_budgets`, then spill to the first device with room under its real cap.

    Places every op through `placer`; raises `Stuck` for an op that fits nowhere. O(V + E),
    plus O(D) devices tried per op in the spill.
    """
    budget = topo_budgets(inst)
    current = 0
    for i in inst.topo:
        allowed = placer.allowed(i)
        forced = len(allowed) == 1 and (inst.pin[i] >= 0 or (
            inst.group_of[i] >= 0 and placer.group_dev[inst.group_of[i]] >= 0))
        if forced:
            d = allowed[0]
            if not placer.fits(i, d, inst.caps):
                raise Stuck(i)
            placer.commit(i, d)
            continue
        chosen = -1
        while current < inst.m:
            if current in allowed:
                if placer.fits(i, current, budget):
                    chosen = current
                    break
                current += 1  # the current device is full
                continue
            # the op cannot run here: a later device, without giving this one up
            chosen = next((d for d in allowed if d > current and placer.fits(i, d, budget)), -1)
            break
        if chosen < 0:  # spill: first device with room under its real cap
            chosen = next((d for d in allowed if placer.fits(i, d, inst.caps)), -1)
            if chosen < 0:
                raise Stuck(i)
        placer.commit(i, chosen)


def budget_ladder(inst: Instance) -> list[list[int]]:
    """The budgets `memory_passes` retries with, loosest first: per device, halfway from
    its memory down to m-TOPO's budget (`topo_budgets`), m-TOPO's budget, and an even share
    of the total static memory (each at most the device's memory; a rung equal to the
    memory or to the rung before is left out)."""
    caps = inst.caps
    floor = topo_budgets(inst)
    share = (sum(inst.po) + sum(inst.temp)) // max(inst.m, 1)
    out: list[list[int]] = []
    for rung in ([(c + f) // 2 for c, f in zip(caps, floor)], floor,
                 [min(c, share) for c in caps]):
        if rung != caps and (not out or rung != out[-1]):
            out.append(rung)
    return out


def memory_passes(
    inst: Instance,
    algorithm: str,
    attempt: Callable[[Placer], tuple[list[int], list[float]]],
) -> tuple[list[int], list[float], Status, dict[str, Any]]:
    """Run a list scheduler (`attempt`, given a fresh `Placer`) until it finds room.

    A greedy scheduler can fill a device so far that an op forced there later (a pinned op,
    or a member of a colocation group bound there, such as the backward op of a training
    graph colocated with its forward op) finds no room for the tensors it must receive; it
    then dead-ends (`Stuck`) although a plan exists. So:

    1. the first pass uses the devices' memory (no budget): when it succeeds, nothing
       changes; under `memory liveness`, a dead end is then retried once without memory
       checks, and that plan is kept when the simulator finds its liveness peaks within
       the caps (`liveness_pass`): static accounting is only an upper bound there;
    2. after a dead end, one pass per rung of `budget_ladder`, tightest last: the ops whose
       device is still a choice are held to the budget (`Placer.budget`), and the memory
       held back serves the forced ops and the copies they receive;
    3. if every pass dead-ends, m-TOPO's placement (`topo_fill`), ordered by the scheduler
       itself (each op's device given): status `fallback`, with the reason in `info`. So
       a plan is found whenever m-TOPO finds one.

    Returns (placement, start times, status, info); after a dead end,
    `info["memory_passes"]` counts the passes (the fallback counts as one) and
    `info["memory_budget_bytes"]` is the budget of the pass that succeeded. Raises the
    first pass's `InfeasibleError` (`explain_stuck`) when m-TOPO finds no placement either.
    Each dead end costs one more pass: at most five in all.
    """
    placer = Placer(inst)
    try:
        placement, start = attempt(placer)
    except Stuck as s:
        stuck = s.op  # the first pass's dead end explains an infeasibility best
    else:
        return placement, start, "feasible", {}
    if inst.problem.memory_model == "liveness":
        found = liveness_pass(inst, attempt)
        if found is not None:
            return (*found, "feasible", {"memory_passes": 2,
                                         "memory_check": "liveness peak, by simulation"})
    ladder = budget_ladder(inst)
    for k, budget in enumerate(ladder):
        try:
            placement, start = attempt(Placer(inst, budget))
        except Stuck:
            continue
        return placement, start, "feasible", {"memory_passes": k + 2,
                                               "memory_budget_bytes": tuple(budget)}
    fill = Placer(inst)
    try:
        topo_fill(inst, fill)
        placement, start = attempt(Placer(inst, placement=fill.device_of))
    except Stuck:
        raise explain_stuck(placer, algorithm, stuck, retried=True) from None
    shown = display_name(algorithm)
    reason = (f"{shown} ran out of memory under every budget; this is m-TOPO's placement, "
              f"ordered by {shown}")
    return placement, start, "fallback", {"memory_passes": len(ladder) + 2, "reason": reason}


def liveness_pass(
    inst: Instance, attempt: Callable[[Placer], tuple[list[int], list[float]]],
) -> tuple[list[int], list[float]] | None:
    """A plan for `memory liveness` that static accounting rejected, checked by simulation.

    Static memory bounds the liveness peak from above, so the schedulers' static check can
    dead-end where a plan fits (five 1 GiB ops in a chain on a 3 GiB device peak at 2 GiB).
    The scheduler runs once without memory checks; its plan is simulated with its own
    order, then with the simulator's dynamic dispatch, and the first whose every liveness
    peak is within the caps is returned (placement, start times), else None.
    """
    try:
        placement, start = attempt(Placer(inst, unbounded=True))
    except Stuck:
        return None
    ordered = solution(inst, placement, start, "").plan
    for plan in (ordered, Plan(ordered.placement)):
        sim = simulate(inst.problem, plan)
        if sim.feasible:
            return placement, list(sim.start_s)
    return None


def fill_and_order(
    inst: Instance, algorithm: str, fill: Callable[[Placer], None],
) -> tuple[list[int], list[float], dict[str, Any]]:
    """Run a placement rule (`fill` places every op through the placer it is given, or
    raises `Stuck`), then order the placement by dynamic dispatch (`schedule_fixed`).

    For the rules that place first and order after (m-TOPO and the baselines). Under
    `memory liveness` a dead end is retried by `liveness_pass`. Returns (placement, start
    times, info); raises `explain_stuck`'s error for the first dead end.
    """
    def attempt(placer: Placer) -> tuple[list[int], list[float]]:
        fill(placer)
        placement = list(placer.device_of)
        return placement, schedule_fixed(inst, placement)[1]

    placer = Placer(inst)
    try:
        placement, start = attempt(placer)
    except Stuck as s:
        found = liveness_pass(inst, attempt) if inst.problem.memory_model == "liveness" \
            else None
        if found is None:
            raise explain_stuck(placer, algorithm, s.op) from None
        return (*found, {"memory_check": "liveness peak, by simulation"})
    return placement, start, {}


def explain_stuck(placer: Placer, algorithm: str, op: int, *,
                  retried: bool = False) -> InfeasibleError:
    """The `InfeasibleError` for a `Stuck` op: proofs if any, else the op and its shortfall
    (`retried`: after `memory_passes` tried budgets and m-TOPO's placement too)."""
    shortfall = [(d, placer.need(op, d)) for d in placer.allowed(op)]
    return stuck_error(placer.inst.problem, algorithm, op, shortfall, retried=retried)


def retime(inst: Instance, placement: Sequence[int], sequence: Sequence[int]) -> list[float]:
    """Earliest start times of a placement and an op sequence under contention `none`.

    The algorithms estimate an edge's transfer from its own bytes; the cost model sends a
    producer's tensor to a device once, with the largest bytes of its edges to consumers
    there. Re-timing with that rule makes a plan's start times ones the simulator accepts
    (no op meant to start before its input can arrive). `sequence` lists every op once, in
    an order consistent with precedence; each device runs its ops in that order (every
    algorithm's schedule sorted by its own start times is such a sequence). O(V + E).
    """
    n = inst.n
    lat, inv, comp = inst.lat, inst.inv, inst.compute
    sent: dict[tuple[int, int], int] = {}
    for j in range(n):
        dj = placement[j]
        for p, b in inst.pred[j]:
            if placement[p] != dj and b > sent.get((p, dj), -1):
                sent[(p, dj)] = b
    start = [0.0] * n
    end = [0.0] * n
    free = [0.0] * inst.m
    for j in sequence:
        dj = placement[j]
        t = free[dj]
        for p, _ in inst.pred[j]:
            dp = placement[p]
            x = end[p] if dp == dj else end[p] + (lat[dp][dj] + sent[(p, dj)] * inv[dp][dj])
            t = max(t, x)
        start[j] = t
        end[j] = free[dj] = t + comp[j][dj]
    return start


def solution(inst: Instance, placement: Sequence[int], start: Sequence[float], algorithm: str,
             status: Status = "feasible", **info: Any) -> Solution:
    """A `Solution` for an algorithm's schedule: each device ordered by the algorithm's start
    times (ties by finish time, so a zero-time op keeps its place before a long op that
    started at the same instant, then by topological position), start times re-timed by
    `retime`.

    `info["estimate_s"]` is the algorithm's own makespan estimate (contention `none`, per-edge
    transfers); the makespan users see is always the simulator's.
    """
    m, comp, topo_pos = inst.m, inst.compute, inst.topo_pos
    # at one start time, a zero-time op ran first: sort by finish before topological
    # position (by position alone, a constant could queue behind a 25 ms op it preceded)
    sequence = sorted(range(inst.n), key=lambda i: (start[i], start[i] + comp[i][placement[i]],
                                                    topo_pos[i]))
    seqs: list[list[int]] = [[] for _ in range(m)]
    for i in sequence:
        seqs[placement[i]].append(i)
    est = max((start[i] + comp[i][placement[i]] for i in range(inst.n)), default=0.0)
    timed = retime(inst, placement, sequence)
    plan = Plan(tuple(placement), tuple(map(tuple, seqs)), tuple(timed), algorithm)
    return Solution(plan, status, MappingProxyType({"estimate_s": est, **info}))
