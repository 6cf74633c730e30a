"""`hybrid`'s stage cost computed once per distinct input (`hybridstage.Start.cost`): the DP
asks again for groups alike (the same device classes, links beside them, ring link and
memory), 57% of its asks on GPT-24 over two nodes. Each answer must be the one a fresh
`Start` gives, to the bit, so that the layouts stay the same; and the DP keeps a start's
answers only while it is the one (its passes side by side: 69 MB -> 1 MB on GPT-24).
"""

from __future__ import annotations

import weakref

import pytest
from pipe_support import chain_text

from planner import loads
from planner.algorithms import pipehybrid
from planner.algorithms.hybridstage import Start
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
    assert problem.pipeline is not None and not pipehybrid.one_pass(problem)
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
