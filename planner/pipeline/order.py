"""The order a pipeline's devices run their ops in, and whether that order deadlocks.

`planner.pipeline.schedule` simulates a plan as a pipeline: the graph with its relays
(`relayed`: a tensor that skips a stage is relayed by it) copied once per micro-batch,
each device running its ops in the schedule's order (`orders`, its tasks from
`task_ops`). `deadlocks` says, without simulating, whether that order leaves ops that
never start: a cycle of the copies' edges and the devices' orders (the simulator starts
an op when its inputs are in and the ops before it on its device have run, so it waits
forever exactly on such a cycle). A split whose devices are a chain of stages, its edges
running along the pipeline (forward tensors to later stages, gradients to earlier ones),
never deadlocks under 1F1B, nor under interleaved 1F1B where a chain's tasks run in its
order (`_tasks_deadlock`, once per devices, stages and micro-batches: always where torch's
rounds divide the micro-batches); any other split is checked op by op. `split.runs` falls back to
the schedule's `deadlock_fallback` (GPipe's order) where it deadlocks: one rule for the
simulator and the memory model.
"""

from __future__ import annotations

import functools
import heapq
from bisect import bisect_right
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from ..cost import column_arrays, columns, with_columns
from ..model import Graph, Op, Pipeline, Problem, derived, indexed_graph, new_edges
from ..schedules import Schedule, rounds
from . import hybrid
from .units import unit_arrays, units

if TYPE_CHECKING:  # split.py imports this module
    from .split import Split

_NONE: Mapping[int, tuple[int, ...]] = MappingProxyType({})


def deadlocks(problem: Problem, split: Split, pipeline: Pipeline,
              groups: Mapping[int, tuple[int, ...]] = _NONE) -> bool:
    """Whether the devices' order under `pipeline`'s schedule (as the split runs it:
    `split.runs_as`) deadlocks (module docstring); once per split, pipeline and groups."""
    schedule = pipeline.schedule_spec
    if schedule.deadlock_fallback is None or not _may_deadlock(problem, split, pipeline):
        return False
    done: dict[tuple[object, ...], bool] = derived(problem, "pipeline.deadlocks", dict)
    key = (split.bounds, split.devices, pipeline,
           tuple(sorted((d, tuple(g)) for d, g in groups.items())))
    if key not in done:
        done[key] = _cycle(problem, split, pipeline, schedule, groups)
    return done[key]


def _may_deadlock(problem: Problem, split: Split, pipeline: Pipeline) -> bool:
    """False where the order is known to run (module docstring): a chain of devices (or of
    virtual stages in rounds that divide the micro-batches), edges along the pipeline."""
    if _against(problem, split):
        return True
    schedule = pipeline.schedule_spec
    if schedule.virtual_stages:
        d, mb = len(set(split.devices)), pipeline.microbatches
        return mb % rounds(d, mb) != 0 and _tasks_deadlock(
            schedule, d, split.stages // d, mb, units(problem).training)
    return len(set(split.devices)) < split.stages


@functools.lru_cache(maxsize=256)
def _tasks_deadlock(schedule: Schedule, devices: int, chunks: int, microbatches: int,
                    training: bool) -> bool:
    """Whether the tasks of a chain of `devices` devices with `chunks` virtual stages each
    deadlock in `schedule`'s order, each task waiting for the one before it in the chain
    (forward: the stage before; backward: the stage after, the last stage its forward).
    A split's edges along the pipeline are some of those waits and an op waits for less
    than its whole task, so where these tasks run, the split's ops run too."""
    stages = devices * chunks

    def node(forward: bool, stage: int, m: int) -> int:
        return (m * stages + stage) * 2 + (0 if forward else 1)

    waits: list[list[int]] = [[] for _ in range(2 * stages * microbatches)]
    for m in range(microbatches):
        for k in range(stages):
            if k:
                waits[node(True, k - 1, m)].append(node(True, k, m))
            if training:
                after = node(False, k + 1, m) if k + 1 < stages else node(True, k, m)
                waits[after].append(node(False, k, m))
    for rank in range(devices):
        seq = [node(f, c * devices + rank, m)
               for f, c, m in schedule.order(rank, devices, chunks, microbatches, training)]
        for a, b in zip(seq, seq[1:], strict=False):
            waits[a].append(b)
    used = {node(f, k, m) for m in range(microbatches) for k in range(stages)
            for f in ((True, False) if training else (True,))}
    return _stuck(used, waits)


def _stuck(nodes: set[int], after: list[list[int]]) -> bool:
    """Whether Kahn's algorithm leaves some of `nodes` (edges `after[i]`) unvisited."""
    waiting = dict.fromkeys(nodes, 0)
    for i in nodes:
        for j in after[i]:
            waiting[j] += 1
    ready = deque(i for i in nodes if not waiting[i])
    seen = 0
    while ready:
        i = ready.popleft()
        seen += 1
        for j in after[i]:
            waiting[j] -= 1
            if not waiting[j]:
                ready.append(j)
    return seen < len(nodes)


def _against(problem: Problem, split: Split) -> bool:
    """Whether an edge runs against the pipeline between two stages of `split`: a forward
    tensor to an earlier stage, a gradient to a later one, a backward op's output to a
    forward op of another stage."""
    bounds = split.bounds
    return any(bisect_right(bounds, a) != bisect_right(bounds, b)
               for a, b in _reversible(problem))


def _reversible(problem: Problem) -> tuple[tuple[int, int], ...]:
    """The unit pairs of the edges that run against the pipeline wherever a cut parts
    them: forward to forward from a later unit to an earlier one (colocation), backward to
    backward from an earlier unit to a later one, backward to forward either way."""

    def build() -> tuple[tuple[int, int], ...]:
        u = units(problem)
        out: set[tuple[int, int]] = set()
        for e in problem.graph.edges:
            a, b = u.unit_of[e.src], u.unit_of[e.dst]
            back_src, back_dst = bool(u.backward[e.src]), bool(u.backward[e.dst])
            if a != b and (back_src and not back_dst or (back_src == back_dst
                                                        and (a < b) == back_src)):
                out.add((a, b))
        return tuple(sorted(out))

    return derived(problem, "pipeline.reversible", build)


def _cycle(problem: Problem, split: Split, pipeline: Pipeline, schedule: Schedule,
           groups: Mapping[int, tuple[int, ...]]) -> bool:
    """Whether the copies' edges and the devices' orders hold a cycle (Kahn's algorithm)."""
    relay = relayed(problem, split.placement(problem), split)
    g = relay.graph
    w, mb = len(g.ops), pipeline.microbatches
    src, dst = columns(g).src, columns(g).dst
    shift = np.repeat(np.arange(mb, dtype=np.int64) * w, len(src))
    heads, tails = [np.tile(src, mb) + shift], [np.tile(dst, mb) + shift]
    for seq in orders(problem, relay, split, pipeline, schedule, groups):
        if len(seq) > 1:
            heads.append(seq[:-1])
            tails.append(seq[1:])
    head, tail = np.concatenate(heads), np.concatenate(tails)
    n = w * mb
    by = np.argsort(head, kind="stable")
    start = np.searchsorted(head[by], np.arange(n + 1))
    after = tail[by].tolist()
    waiting = np.bincount(tail, minlength=n).tolist()
    ready = deque(i for i in range(n) if not waiting[i])
    seen = 0
    while ready:
        i = ready.popleft()
        seen += 1
        for j in after[start[i]:start[i + 1]]:
            waiting[j] -= 1
            if not waiting[j]:
                ready.append(j)
    return seen < n


@dataclass(frozen=True, slots=True)
class Relayed:
    """One micro-batch's graph as the stages run it: the graph's ops, then one zero-time
    relay op per stage that a tensor passes through (the pipeline model's relays, under
    every schedule), the edges that skip stages rewired through them."""

    graph: Graph
    #: per op of `graph`: its device
    placement: tuple[int, ...]
    #: per relay (op `n + r`): its stage, and whether it runs in the backward task
    stage: tuple[int, ...]
    backward: tuple[bool, ...]


def relayed(problem: Problem, placement: Sequence[int], split: Split) -> Relayed:
    """The graph of `Relayed`: a tensor consumed k stages away is sent to the next stage,
    relayed on by each stage in between, and each hop carries the largest bytes its
    consumers at or beyond that stage need (`units`' boundary model, hop for hop). The
    edges within a stage are the graph's own, found with numpy over its columns, which the
    relayed graph gets too (the compiled simulator reads them, not the edge objects)."""
    g = problem.graph
    n = len(g.ops)
    cols = columns(g)
    of_unit = np.repeat(np.arange(split.stages), np.diff(np.array(split.bounds)))
    of_op = of_unit[np.asarray(units(problem).unit_of, dtype=np.int64)]
    within = of_op[cols.src] == of_op[cols.dst]
    st = of_op.tolist()
    hops = _Edges([], [], [])
    stage: list[int] = []
    back: list[bool] = []
    by_src: dict[int, list[tuple[int, int]]] = {}
    for k in np.flatnonzero(~within).tolist():
        e = g.edges[k]
        by_src.setdefault(e.src, []).append((e.dst, e.bytes))
    for i, out in by_src.items():
        for sign in (1, -1):
            mine = [(j, b) for j, b in out if (st[j] - st[i]) * sign > 0]
            for t in _relay_hops(st, i, mine, sign, hops, n + len(stage)):
                stage.append(t)
                back.append(i in g.backward_of)
    kept = np.flatnonzero(within)

    def more(column: np.ndarray, values: Sequence[int]) -> np.ndarray:
        return np.concatenate([column, np.array(values, dtype=column.dtype)])

    relays = [0] * len(stage)
    table = column_arrays(more(cols.src[kept], hops.src), more(cols.dst[kept], hops.dst),
                          more(cols.nbytes[kept], hops.size),
                          *(more(a, relays) for a in (cols.params, cols.output, cols.temp)))
    ops = g.ops + (Op("relay", time_s=0.0),) * len(stage)
    graph = indexed_graph(g.name, ops, tuple(map(g.edges.__getitem__, kept.tolist()))
                          + new_edges(hops.src, hops.dst, hops.size), (), {},
                          # without relays the graph's own order holds (and is known)
                          topological_order=_least_order(len(ops), table.src, table.dst)
                          if stage else g.topological_order)
    with_columns(graph, table)
    return Relayed(graph, tuple(placement) + tuple(split.devices[t] for t in stage),
                    tuple(stage), tuple(back))


def _least_order(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[int, ...]:
    """`Graph.topological_order` of the graph with these edges: the ops in topological
    order, ties by smallest index (the one such order: whatever order the edges are taken
    in, each step takes the smallest op whose inputs are done), from the edge arrays."""
    by_src = np.argsort(src, kind="stable")
    start = np.searchsorted(src[by_src], np.arange(n + 1)).tolist()
    after = dst[by_src].tolist()
    waiting = np.bincount(dst, minlength=n).tolist()
    heap = [i for i in range(n) if not waiting[i]]
    out: list[int] = []
    while heap:
        i = heapq.heappop(heap)
        out.append(i)
        for j in after[start[i]:start[i + 1]]:
            waiting[j] -= 1
            if not waiting[j]:
                heapq.heappush(heap, j)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _Edges:
    """Edge lists being built (sources, destinations, bytes)."""

    src: list[int]
    dst: list[int]
    size: list[int]


def _relay_hops(st: Sequence[int], i: int, consumers: Sequence[tuple[int, int]], sign: int,
                edges: _Edges, first: int) -> list[int]:
    """Adds to `edges` the hops of op `i`'s tensor to `consumers` (op, bytes) in the stages
    after its own (`sign` 1) or before it (-1), through relays numbered from `first`;
    returns the relays' stages."""
    if not consumers:
        return []
    far = max(st[j] * sign for j, _ in consumers) * sign
    need: dict[int, int] = {}  # stage -> the largest bytes at or beyond it
    for j, b in consumers:
        need[st[j]] = max(need.get(st[j], 0), b)
    for t in range(far - sign, st[i], -sign):
        need[t] = max(need.get(t, 0), need[t + sign])
    holder, relays = i, list[int]()
    for t in range(st[i] + sign, far + sign, sign):
        hops = [(j, b) for j, b in consumers if st[j] == t]
        if t != far:  # a relay on stage t sends on what the later stages need
            hops.append((first + len(relays), need[t + sign]))
            relays.append(t)
        edges.src.extend([holder] * len(hops))
        edges.dst.extend(j for j, _ in hops)
        edges.size.extend(b for _, b in hops)
        holder = edges.dst[-1]
    return relays




def task_ops(problem: Problem, split: Split, schedule: Schedule
             ) -> list[tuple[int, list[tuple[int, np.ndarray, np.ndarray]]]]:
    """Per device in pipeline order: its tasks' (first stage, forward ops, backward ops), one
    per stage under a schedule of a task per stage (`interleaved`, `gpipe`), one for all
    its stages otherwise; ops in topological order (relays aside: `_orders` adds them)."""
    flat, start, position, backward = unit_arrays(problem)
    ranked: list[int] = []
    for d in split.devices:
        if d not in ranked:
            ranked.append(d)
    out = []
    for d in ranked:
        mine = [k for k, dev in enumerate(split.devices) if dev == d]
        groups = [[k] for k in mine] if schedule.task_per_stage else [mine]
        chunks = []
        for ks in groups:  # a stage's ops: its units', one run of `flat`
            ops = np.concatenate([flat[start[split.bounds[k]]:start[split.bounds[k + 1]]]
                                  for k in ks])
            ops = ops[np.argsort(position[ops], kind="stable")]
            back = backward[ops]
            chunks.append((ks[0], ops[~back], ops[back]))
        out.append((d, chunks))
    return out


def orders(problem: Problem, relayed: Relayed, split: Split, pipeline: Pipeline,
           schedule: Schedule, groups: Mapping[int, tuple[int, ...]] = _NONE,
           ) -> tuple[np.ndarray, ...]:
    """Per device, its ops of every micro-batch in the schedule's order (an int64 array);
    a relay ends the forward (or backward) task of its stage, as a stage sends its outputs
    when it is done. A replica of a replicated stage runs its own micro-batches (`hybrid`)."""
    n, mb = len(relayed.graph.ops), pipeline.microbatches
    training = units(problem).training
    devices = task_ops(problem, split, schedule)
    per_stage = schedule.task_per_stage  # (as `task_ops`)
    tails: dict[tuple[int, int, bool], list[int]] = {}  # (device, chunk, backward?) -> relays
    for r, (k, back) in enumerate(zip(relayed.stage, relayed.backward, strict=True)):
        d = split.devices[k]
        chunk = [j for j in range(split.stages) if split.devices[j] == d].index(k)
        key = (d, chunk if per_stage else 0, back and training)
        tails.setdefault(key, []).append(len(problem.graph.ops) + r)
    sizes = [len(hybrid.group(groups, d)) for d, _ in devices]
    order = [np.zeros(0, np.int64) for _ in problem.cluster.devices]
    for rank, (d, chunks) in enumerate(devices):
        ops = [tuple(np.concatenate([own, np.array(tails.get((d, c, back), []), np.int64)])
                     for back, own in ((False, fwd), (True, bwd)))
               for c, (_, fwd, bwd) in enumerate(chunks)]
        members = hybrid.group(groups, d)
        for j, e in enumerate(members):
            mine = range(j, mb, len(members))
            # its micro-batches in flight, less the one it starts on (1F1B's; `order`
            # takes its own count under virtual stages, or with all in flight)
            warm = min(schedule.in_flight(mb, sizes, rank, training), len(mine)) - 1
            seq = schedule.order(rank, len(devices), len(chunks), len(mine), training, warm)
            # each task's ops, shifted to its micro-batch's copy
            tasks = [ops[c][0 if forward else 1] + mine[m] * n for forward, c, m in seq]
            if tasks:
                order[e] = np.concatenate(tasks)
    return tuple(order)


