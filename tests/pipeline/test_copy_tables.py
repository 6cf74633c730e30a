"""The micro-batch copies' tables, built with numpy, equal the per-op builders they replaced.

`order.relayed`, `order.task_ops`, `order.orders` and the stages' figures of
`schedule.run` were loops over every op and edge, once per simulation; they now slice and
tile arrays (`units.unit_arrays`, the graph's `cost.columns`). Here the per-op versions are
kept as the reference and compared on random problems and splits (relays, devices that
are not a chain, every schedule, replicas); and the compiled path's evaluator of a copy
reads no edge objects.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from bisect import bisect_right

import numpy as np
from pipe_support import random_spec

from planner import fastsim
from planner.cost import _build_columns, columns
from planner.model import Pipeline, Problem
from planner.pipeline import order, schedule
from planner.pipeline.order import Relayed
from planner.pipeline.split import Split
from planner.pipeline.units import units
from planner.schedules import Schedule


@functools.cache
def _cases() -> list[tuple[Problem, Split, Pipeline, dict[int, tuple[int, ...]]]]:
    """Random problems with random splits (stages on any device: relays, repeated devices),
    under each schedule, some with a replicated stage."""
    out = []
    for seed in range(30):
        rng = random.Random(seed)
        devices = rng.randint(2, 4)
        p = random_spec(seed, rng.randint(3, 7), devices, training=rng.random() < 0.8,
                        microbatches=rng.randint(1, 5))
        n = units(p).count
        stages = rng.randint(2, min(n, 5)) if n > 1 else 1
        bounds = (0, *sorted(rng.sample(range(1, n), stages - 1)), n)
        where = tuple(rng.randrange(devices) for _ in range(stages))
        mb = p.pipeline.microbatches  # type: ignore[union-attr]
        pipeline = Pipeline(mb, rng.choice(["gpipe", "1f1b"]))
        if stages % 2 == 0 and rng.random() < 0.3:  # 2 virtual stages per device
            where = tuple(k % (stages // 2) for k in range(stages))
            pipeline = Pipeline(mb, "interleaved", 2)
        free = [d for d in range(devices) if d not in where]
        groups = {where[0]: (where[0], *free)} if free and rng.random() < 0.3 else {}
        out.append((p, Split(bounds, where), pipeline, groups))
    return out


def _per_op_edges(problem: Problem, split: Split) -> list[tuple[int, int, int]]:
    """The relayed graph's edges as the per-op builder listed them: the edges within a
    stage in graph order, then each crossing tensor's hops, producer by producer."""
    st = [bisect_right(split.bounds, k) - 1 for k in units(problem).unit_of]
    edges = problem.graph.edges
    kept = order._Edges([e.src for e in edges if st[e.src] == st[e.dst]],
                        [e.dst for e in edges if st[e.src] == st[e.dst]],
                        [e.bytes for e in edges if st[e.src] == st[e.dst]])
    crossing: dict[int, list[tuple[int, int]]] = {}
    for e in edges:
        if st[e.src] != st[e.dst]:
            crossing.setdefault(e.src, []).append((e.dst, e.bytes))
    relays = 0
    for i, out in crossing.items():
        for sign in (1, -1):
            ahead = [(j, b) for j, b in out if (st[j] - st[i]) * sign > 0]
            relays += len(order._relay_hops(st, i, ahead, sign, kept,
                                            len(problem.graph.ops) + relays))
    return list(zip(kept.src, kept.dst, kept.size, strict=True))


def _per_op_task_ops(problem: Problem, split: Split, sched: Schedule
                     ) -> list[tuple[int, list[tuple[int, list[int], list[int]]]]]:
    """`task_ops` as the per-op builder made it: sorted by a position table."""
    u = units(problem)
    position = {i: k for k, i in enumerate(problem.graph.topological_order)}
    out = []
    for d in dict.fromkeys(split.devices):
        mine = [k for k, e in enumerate(split.devices) if e == d]
        chunks = []
        for ks in ([[k] for k in mine] if sched.task_per_stage else [mine]):
            ops = sorted((i for k in ks for unit in u.members[split.bounds[k]:split.bounds[k + 1]]
                          for i in unit), key=position.__getitem__)
            chunks.append((ks[0], [i for i in ops if not u.backward[i]],
                           [i for i in ops if u.backward[i]]))
        out.append((d, chunks))
    return out


def test_relayed_graph_has_the_per_op_edges_and_its_columns() -> None:
    relays = 0
    for p, split, _, _ in _cases():
        relay = order.relayed(p, split.placement(p), split)
        got = [(e.src, e.dst, e.bytes) for e in relay.graph.edges]
        assert got == _per_op_edges(p, split)
        relays += len(relay.stage)
        # given with the graph (not read from its edges), and equal to what they would read
        assert "_columns" in relay.graph.__dict__
        given, read = columns(relay.graph), _build_columns(relay.graph)
        for name in ("src", "dst", "nbytes", "params", "output", "temp"):
            a, b = getattr(given, name), getattr(read, name)
            assert a.dtype == b.dtype and np.array_equal(a, b), name
        assert (given.integral, given.exact) == (read.integral, read.exact)
        # its topological order, given too, is the one the graph derives from its edges
        assert relay.graph.topological_order == dataclasses.replace(
            relay.graph).topological_order
    assert relays  # the cases relay tensors


def test_task_ops_and_orders_are_the_per_op_ones() -> None:
    for p, split, pipeline, groups in _cases():
        sched = pipeline.schedule_spec
        for s in (sched, sched.by_microbatch()) if sched.all_in_flight else (sched,):
            got = order.task_ops(p, split, s)
            assert [(d, [(k, f.tolist(), b.tolist()) for k, f, b in chunks])
                    for d, chunks in got] == _per_op_task_ops(p, split, s)
            relay = order.relayed(p, split.placement(p), split)
            _assert_orders(p, relay, split, pipeline, s, groups)


def _assert_orders(p: Problem, relay: Relayed, split: Split, pipeline: Pipeline, s: Schedule,
                   groups: dict[int, tuple[int, ...]]) -> None:
    """Each device's order: per task in the schedule's order, its ops then its stage's
    relays, in its micro-batch's copy (the per-op builder's)."""
    got = order.orders(p, relay, split, pipeline, s, groups)
    n, g = len(relay.graph.ops), len(p.graph.ops)
    training = units(p).training
    tasks = _per_op_task_ops(p, split, s)
    sizes = [len(groups.get(d, (d,))) for d, _ in tasks]
    for rank, (d, chunks) in enumerate(tasks):
        mine = [k for k, e in enumerate(split.devices) if e == d]
        # relay r ends the task of its stage's chunk, backward where its tensor is
        ends = [(mine.index(k) if s.task_per_stage else 0, not (back and training))
                if k in mine else None for k, back in zip(relay.stage, relay.backward,
                                                          strict=True)]
        for j, e in enumerate(groups.get(d, (d,))):
            mbs = range(j, pipeline.microbatches, sizes[rank])
            warm = min(s.in_flight(pipeline.microbatches, sizes, rank, training), len(mbs)) - 1
            want = []
            for forward, c, m in s.order(rank, len(tasks), len(chunks), len(mbs), training,
                                         warm):
                ops = chunks[c][1] if forward else chunks[c][2]
                tail = [g + r for r, end in enumerate(ends) if end == (c, forward)]
                want += [i + mbs[m] * n for i in ops + tail]
            assert got[e].dtype == np.int64 and got[e].tolist() == want


def test_the_copies_evaluator_reads_no_edge_objects() -> None:
    """The compiled path builds its evaluator of one copy from the relayed graph's columns
    and given topological order: the graph's per-op edge lists are never built."""
    for p, split, pipeline, groups in _cases()[:10]:
        one, *_ = schedule._one_copy(p, split.placement(p), split, pipeline,
                                     pipeline.schedule_spec, (), groups)
        fastsim.Evaluator(one).repeated(pipeline.microbatches)
        assert not {"successors", "predecessors"} & one.graph.__dict__.keys()
