"""The event loop: one execution of a placement, by dynamic dispatch or a given order, with
the transfers it commits under the spec's contention (the package docstring's semantics).

Twin: `planner.fastsim._kernel` takes `Run.execute`'s steps in the same order under the same
names; a rule changed here is changed there in the same commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from heapq import heappop, heappush

from ..cost import INF, costs
from ..model import Problem
from .tables import graph_tables, upward_rank

__all__ = ["Run"]

_CONTENTION_CODE = {"none": 0, "link": 1, "device": 2}


class Run:
    """One execution: plain lists and a heap, no per-event objects beyond heap tuples.

    The loop (`execute`) takes the events of one instant as a batch, in (time, key) order;
    each event is one of the named steps below, which fastsim/_kernel.py's `execute` takes
    in the same order under the same names, as functions or as marked inline sections
    where a call per event cost too much there (tests/test_fastsim.py checks that they
    agree).
    A step copies the fields it uses into locals: the per-event work stays free of repeated
    attribute look-ups.
    """

    def __init__(self, problem: Problem, place: list[int], dur: list[float],
                 seqs: list[list[int]] | None) -> None:
        g = problem.graph
        n, m = len(g.ops), len(problem.cluster.devices)
        self.problem = problem
        self.place = place
        self.dur = dur
        self.seqs = seqs
        self.n, self.m = n, m
        self.start = [INF] * n
        self.end = [INF] * n
        self.done = [False] * n
        self.order: list[list[int]] = [[] for _ in range(m)]
        self.tr_src: list[int] = []
        self.tr_sd: list[int] = []
        self.tr_dd: list[int] = []
        self.tr_bytes: list[int] = []
        self.tr_start: list[float] = []
        self.tr_end: list[float] = []
        self.no_link: list[tuple[int, int, int]] = []
        self.stuck: list[tuple[int, int]] = []  # (device, op at the head of its order)
        # the graph and the links, as the loop reads them
        tables = graph_tables(g)
        self.consumer, self.edge_bytes = tables.e_dst, tables.e_bytes
        self.key_of, self.op_of = tables.pos, tables.topo  # event key <-> op (topo order)
        self.successors = g.successors
        c = costs(problem)
        self.latency, self.inv_bandwidth = c.latency, c.inv_bandwidth
        self.contention = _CONTENTION_CODE[problem.contention]
        # the run's state
        self.pending = [len(x) for x in g.predecessors]  # inputs not yet known, per op
        self.ready = [0.0] * n  # when all inputs known so far are on the op's device
        self.events: list[tuple[float, int]] = []  # (time, key): key < n ends op_of[key]
        self.link_free = [0.0] * (m * m)
        self.channel_free = [0.0] * m
        self.largest = [-1] * m  # scratch: largest bytes to each device for one producer
        self.arrival = [0.0] * m  # scratch: arrival at each device for one producer
        self.dynamic = seqs is None
        # static order: the next op of each device's order and when the device is free; a
        # zero-time op's completion waits for the batch after the one where dispatch would
        # start it: the batch its inputs became known in (or the first of the instant they
        # arrive at), and the one its device's previous op completed in
        self.next_in_order = [0] * m
        self.free_at = [0.0] * m
        self.known_batch = [0] * n
        self.known_time = [0.0] * n
        self.done_batch = [0] * n
        self.previous_on_device = [-1] * n
        self.deferred: list[int] = []
        for seq in seqs or ():
            for k in range(1, len(seq)):
                self.previous_on_device[seq[k]] = seq[k - 1]
        # dynamic dispatch: per device, idle or not and a heap of (ready, -rank, op); the
        # devices whose heap or state changed in this batch
        self.idle = [True] * m
        self.queue: list[list[tuple[float, float, int]]] = [[] for _ in range(m)]
        self.negrank = [-r for r in upward_rank(problem)] if self.dynamic else []
        self.dirty: list[int] = []
        self.is_dirty = [False] * m

    def execute(self) -> None:
        """Run to completion (or to a deadlock of a static order)."""
        self._seed()
        events, dirty, deferred = self.events, self.dirty, self.deferred
        n, op_of, dur, place = self.n, self.op_of, self.dur, self.place
        dynamic = self.dynamic
        t = 0.0
        batch = first_batch = 0
        while events or dirty:
            if events and not dirty:
                if events[0][0] != t:
                    first_batch = batch
                t = events[0][0]
            while events and events[0][0] == t:
                key = heappop(events)[1]
                if (not dynamic and key < n and dur[op_of[key]] == 0.0
                        and place[op_of[key]] >= 0
                        and self._zero_time_waits(op_of[key], t, batch, first_batch)):
                    deferred.append(key)
                elif key >= n:
                    self._becomes_ready(key - n, t)
                else:
                    self._complete(op_of[key], t, batch)
            if dirty:
                self._dispatch(t)
            for key in deferred:
                heappush(events, (t, key))
            deferred.clear()
            batch += 1
        if not dynamic:
            seqs, next_in_order = self.seqs, self.next_in_order
            for d in range(self.m):
                if next_in_order[d] < len(seqs[d]):  # type: ignore[index]
                    self.stuck.append((d, seqs[d][next_in_order[d]]))  # type: ignore[index]

    def _seed(self) -> None:
        """The first events: unplaced ops never end (their consumers never get inputs); the
        ops without inputs queue at t = 0 (dynamic) or start in order (static)."""
        place, events, key_of = self.place, self.events, self.key_of
        for i in range(self.n):
            if place[i] < 0:
                heappush(events, (INF, key_of[i]))
        if not self.dynamic:
            for d in range(self.m):
                self._try_start(d)
            return
        pending, negrank = self.pending, self.negrank
        for i in range(self.n):
            d = place[i]
            if d >= 0 and not pending[i]:
                self.queue[d].append((0.0, negrank[i], i))
        for d in range(self.m):
            q = self.queue[d]
            q.sort()
            if q:
                self._wake(d)

    def _zero_time_waits(self, i: int, t: float, batch: int, first_batch: int) -> bool:
        """Static order: whether zero-time op `i`'s completion, due now, waits a batch."""
        trig = self.known_batch[i] if self.known_time[i] == t else first_batch
        p_i = self.previous_on_device[i]
        if p_i >= 0 and self.end[p_i] == t:
            trig = max(trig, self.done_batch[p_i]) if self.done[p_i] else batch
        return batch <= trig  # dispatch would start it in this batch or later

    def _wake(self, d: int) -> None:
        """Dispatch looks at device `d` at the end of this batch."""
        if not self.is_dirty[d]:
            self.is_dirty[d] = True
            self.dirty.append(d)

    def _becomes_ready(self, j: int, t: float) -> None:
        """Dynamic: op `j`'s last input arrives now."""
        d = self.place[j]
        heappush(self.queue[d], (t, self.negrank[j], j))
        self._wake(d)

    def _complete(self, i: int, t: float, batch: int) -> None:
        """Op `i` ends at `t`: its device is free, its outputs go to its consumers."""
        self.done[i] = True
        self.done_batch[i] = batch
        di = self.place[i]
        if self.dynamic and di >= 0:
            self.idle[di] = True
            self._wake(di)
        out = self.successors[i]
        if out:
            self._send_outputs(i, di, out, t)
            self._deliver(i, di, out, t, batch)

    def _send_outputs(self, i: int, di: int, out: Sequence[int], t: float) -> None:
        """One transfer of op `i`'s output to each other device that consumes it (the
        largest edge's bytes), in device order; `arrival[d]` is when it lands on `d`.
        `cost.copies` and `cost.transfer_seconds` inline, as the kernel has them: a call
        per transfer alone costs the whole run 3% (10,000 ops), `copies`' dict far more."""
        place, consumer, edge_bytes = self.place, self.consumer, self.edge_bytes
        largest, arrival = self.largest, self.arrival
        touched: list[int] = []
        for k in out:
            dj = place[consumer[k]]
            if dj != di and dj >= 0:
                b = edge_bytes[k]
                cur = largest[dj]
                if cur < 0:
                    largest[dj] = b
                    touched.append(dj)
                elif b > cur:
                    largest[dj] = b
        if not touched:
            return
        touched.sort()
        lrow = self.latency[di] if di >= 0 else None
        irow = self.inv_bandwidth[di] if di >= 0 else None
        mode, m = self.contention, self.m
        link_free, channel_free = self.link_free, self.channel_free
        for dj in touched:
            b = largest[dj]
            largest[dj] = -1
            if lrow is None or t == INF:
                arrival[dj] = INF
                continue
            lt = lrow[dj]
            if lt == INF:
                arrival[dj] = INF
                self.no_link.append((i, di, dj))
                continue
            dt = lt + b * irow[dj]  # type: ignore[index]
            if mode == 0:
                s = t
            elif mode == 1:
                lk = di * m + dj
                s = link_free[lk]
                s = max(s, t)
                link_free[lk] = s + dt
            else:
                s = channel_free[di]
                s = max(s, channel_free[dj])
                s = max(s, t)
                channel_free[di] = channel_free[dj] = s + dt
            fin = s + dt
            arrival[dj] = fin
            self.tr_src.append(i)
            self.tr_sd.append(di)
            self.tr_dd.append(dj)
            self.tr_bytes.append(b)
            self.tr_start.append(s)
            self.tr_end.append(fin)

    def _deliver(self, i: int, di: int, out: Sequence[int], t: float, batch: int) -> None:
        """Op `i`'s consumers get its output (now on its device, at `arrival` elsewhere);
        one whose inputs are all known starts (static) or queues (dynamic)."""
        place, consumer, ready, pending = self.place, self.consumer, self.ready, self.pending
        arrival, dynamic = self.arrival, self.dynamic
        for k in out:
            j = consumer[k]
            dj = place[j]
            a = t if dj == di else arrival[dj]
            if a > ready[j]:  # ready[j] = max(ready[j], a), without the call
                ready[j] = a
            pending[j] -= 1
            if pending[j] or dj < 0:
                continue
            if not dynamic:
                self.known_batch[j] = batch
                self.known_time[j] = t
                if self.seqs[dj][self.next_in_order[dj]] == j:  # type: ignore[index]
                    self._try_start(dj)
            elif ready[j] <= t:
                heappush(self.queue[dj], (ready[j], self.negrank[j], j))
                self._wake(dj)
            else:
                heappush(self.events, (ready[j], self.n + j))

    def _dispatch(self, t: float) -> None:
        """Dynamic: each woken device that is idle starts the first op of its queue."""
        queue, idle, is_dirty, dur = self.queue, self.idle, self.is_dirty, self.dur
        for d in self.dirty:
            is_dirty[d] = False
            q = queue[d]
            if idle[d] and q:
                i = heappop(q)[2]
                idle[d] = False
                self.start[i] = t
                f = t + dur[i]
                self.end[i] = f
                self.order[d].append(i)
                heappush(self.events, (f, self.key_of[i]))
        self.dirty.clear()

    def _try_start(self, d: int) -> None:
        """Static order: start every head of `d`'s order whose inputs are all known."""
        seq = self.seqs[d]  # type: ignore[index]
        pending, ready, dur = self.pending, self.ready, self.dur
        k = self.next_in_order[d]
        f = self.free_at[d]
        while k < len(seq):
            i = seq[k]
            if pending[i]:
                break
            s = ready[i]
            if not s > f:  # s = max(f, ready[i]) without the call, NaN and all
                s = f
            f = s + dur[i]
            self.start[i] = s
            self.end[i] = f
            self.order[d].append(i)
            heappush(self.events, (f, self.key_of[i]))
            k += 1
        self.next_in_order[d] = k
        self.free_at[d] = f
