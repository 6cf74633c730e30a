"""`hybrid`'s stage cost computed once per distinct input (`hybridstage.Start.cost`): the DP
asks again for groups alike (the same device classes, links beside them, ring link and
memory), 57% of its asks on GPT-24 over two nodes. Each answer must be the one a fresh
`Start` gives, to the bit, so that the layouts stay the same; and the DP keeps a start's
answers only while it is the one (its passes side by side: 69 MB -> 1 MB on GPT-24).
"""

from __future__ import annotations

import dataclasses
import weakref
from types import MappingProxyType

import pytest
from pipe_support import chain_text

from planner import loads
from planner.algorithms import pipehybrid
from planner.algorithms.hybridstage import Start, _classes, replica_units
from planner.cost import costs
from planner.model import Pipeline, Problem
from planner.pipeline.units import units


def _two_nodes() -> Problem:
    """Six training units on two nodes of two devices: fast links inside, slow between."""
    text = chain_text(6, 4, forward_ms=[4, 1, 6, 2, 5, 3], microbatches=4)
    text = text.replace(
        "  link d[0..3] <-> d[0..3] { bandwidth 10 GB/s latency 10 us }",
        "  link d[0..1] <-> d[0..1] { bandwidth 50 GB/s latency 2 us }\n"
        "  link d[2..3] <-> d[2..3] { bandwidth 50 GB/s latency 2 us }\n"
        "  link d[0..1] <-> d[2..3] { bandwidth 1 GB/s latency 5 us }")
    text = text.replace("schedule 1f1b", "schedule 1f1b; data_parallel auto")
    return loads(text).plan("p")


def _asks(m: int, pipeline: Pipeline) -> list[tuple[tuple[int, ...], bool, int]]:
    """Every (group, has_next, p) the DP's passes ask of a start, in its order."""
    out = []
    for used in range(1, m + 1):
        for p in range(1, used + 1):
            first = used - p
            for r in pipehybrid.replica_counts(p, pipeline):
                out.append((tuple(range(first, first + r)), first + r < used, p))
    return out


def test_each_answer_is_a_fresh_starts_to_the_bit() -> None:
    problem = _two_nodes()
    assert not pipehybrid.one_pass(problem)
    _assert_fresh(problem)


def _assert_fresh(problem: Problem) -> None:
    """Each answer of a start to the DP's asks is a fresh `Start`'s, to the bit."""
    assert problem.pipeline is not None
    u, c, t = units(problem), costs(problem), pipehybrid._tables(problem)
    asks = _asks(len(problem.cluster.devices), problem.pipeline)
    for a in range(len(t.cuts) - 1):
        start = Start(problem, u, t.grad_prefix, int(t.cuts[a]), t.cuts[a + 1:])
        for group, has_next, p in asks:
            got = start.cost(problem, c, problem.pipeline, group, has_next, p)
            fresh = Start(problem, u, t.grad_prefix, int(t.cuts[a]), t.cuts[a + 1:]).cost(
                problem, c, problem.pipeline, group, has_next, p)
            assert got.tobytes() == fresh.tobytes(), (a, group, has_next, p)


def test_alike_groups_share_one_answer() -> None:
    problem = _two_nodes()
    assert problem.pipeline is not None
    u, c, t = units(problem), costs(problem), pipehybrid._tables(problem)
    start = Start(problem, u, t.grad_prefix, 0, t.cuts[1:])
    # d0 then d1 inside node 0, and d2 then d3 inside node 1: alike
    first = start.cost(problem, c, problem.pipeline, (0,), True, 2)
    assert start.cost(problem, c, problem.pipeline, (2,), True, 2) is first
    # two replicas inside a node, before a stage in the same node: alike
    pair = start.cost(problem, c, problem.pipeline, (0, 1), False, 2)
    assert start.cost(problem, c, problem.pipeline, (2, 3), False, 2) is pair
    # a ring across the nodes is not
    assert start.cost(problem, c, problem.pipeline, (1, 2), False, 2) is not pair
    assert not first.flags.writeable  # shared: no caller may change it for the others


def test_the_dp_holds_one_start_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = _two_nodes()
    assert problem.pipeline is not None
    alive: weakref.WeakSet[Start] = weakref.WeakSet()
    most = 0

    class Counted(Start):
        def __init__(self, *args: object) -> None:
            nonlocal most
            super().__init__(*args)  # type: ignore[arg-type]
            alive.add(self)
            most = max(most, len(alive))

    monkeypatch.setattr(pipehybrid, "Start", Counted)
    assert pipehybrid.candidates(problem, problem.pipeline)
    assert 1 <= most <= 2  # the one, and the one before it while the next is built


def _kinds(kinds: str, forward_ms: list[float], backward_ms: list[float], settings: str
           ) -> str:
    """`chain_text`'s training chain on devices of the kinds in `kinds` (a character each):
    each layer takes its forward and backward times on kind `a` and the other way round on
    the others, so each unit takes the same time on every device, split otherwise."""
    text = chain_text(len(forward_ms), len(kinds), forward_ms=forward_ms,
                      backward_ms=backward_ms, microbatches=2)
    text = text.replace(f"device d[0..{len(kinds) - 1}] {{ memory 64 GiB }}", "\n".join(
        f"device d{k} {{ memory 64 GiB; kind {x} }}" for k, x in enumerate(kinds)))
    others = sorted(set(kinds) - {"a"})
    for k, (f, b) in enumerate(zip(forward_ms, backward_ms, strict=True)):
        for op, mine, theirs in ((f"f{k}", f, b), (f"f{k}.bwd", b, f)):
            text = text.replace(f"op {op} {{ time {mine} ms;", f"op {op} {{ time[a] {mine} ms;"
                                + "".join(f" time[{x}] {theirs} ms;" for x in others))
    return text.replace("microbatches 2; schedule 1f1b", settings)


def test_devices_alike_in_compute_but_not_its_forward_share_are_not_alike() -> None:
    """d0 (kind b) and d1, d2 (kind a) take each layer's forward + backward alike, split
    the other way round. Their class held compute and bans, not the forward share, which
    a stage's wait for its first backward reads: d1's and d2's stages reused d0's figures
    (asked first), and the DP's best layout on the three devices cut after f0 (49.22 ms
    by its own cost, `layout_cost`) where cutting after f1 costs 47.22 ms."""
    problem = loads(_kinds("baa", [6, 2, 1, 9], [5, 4, 7, 5],
                           "microbatches 2; schedule gpipe; data_parallel 1")).plan("p")
    assert problem.pipeline is not None
    _assert_fresh(problem)
    (three,) = (lay for lay in pipehybrid._dp(problem, problem.pipeline)
                if len(lay.groups) == 3)
    best = pipehybrid.Layout((0, 2, 3, 4), ((0,), (1,), (2,)))
    assert three == best
    assert pipehybrid.layout_cost(problem, problem.pipeline, best) == pytest.approx(0.04722)


def test_replicas_bound_otherwise_than_the_first_need_no_class_of_their_own() -> None:
    """Under `data_parallel 2` a pin binds a stage's first replica alone
    (`replica_units`), which the device classes do not hold (`hybridstage._classes` says
    why they need not). Here d1 and d3 are alike under the pins (f0, pinned to d0, is
    banned on both) and not without them (built in Python: d3's kind cannot run f0); every
    answer is still a fresh start's."""
    problem = loads(_kinds("abac", [3, 4, 5], [6, 8, 9],
                           "microbatches 4; schedule 1f1b; data_parallel 2; "
                           "pin f0, f0.bwd to d0")).plan("p")
    ops = list(problem.graph.ops)
    ops[0] = dataclasses.replace(ops[0], time_by_kind=MappingProxyType(
        {x: t for x, t in ops[0].time_by_kind.items() if x != "c"}))
    problem = dataclasses.replace(problem, graph=dataclasses.replace(problem.graph,
                                                                     ops=tuple(ops)))
    kinds, _ = _classes(problem)
    pinned, free = units(problem).banned_prefix, replica_units(problem).banned_prefix
    assert kinds[1] == kinds[3] and (pinned[1] == pinned[3]).all()
    assert (free[1] != free[3]).any()
    _assert_fresh(problem)
    assert pipehybrid._dp(problem, problem.pipeline)  # layouts with f0 on d0 and d1
