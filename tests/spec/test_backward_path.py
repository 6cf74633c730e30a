"""E235 follows its documented rule, "no path of edges leads from the forward op to the
backward op", whatever order the ops are declared in (main judged by the topological order,
whose ties follow declaration: a backward op with no path from its forward op was E235
declared before it and accepted declared after it)."""

from __future__ import annotations

import random
from types import MappingProxyType

import pytest

from planner import loads
from planner.errors import SpecError
from planner.model import Graph, Op, new_edges
from planner.spec.lower import backward_first
from planner.spec.lower.plan import _unreached  # noqa

_CLUSTER = """cluster c {
  device gpu[0..1] { memory 16 GiB  flops 10 TFLOPS }
  link gpu[0..1] <-> gpu[0..1] { bandwidth 50 GB/s  latency 2 us }
}
"""
_B0 = "  op b0 { time 1 ms; backward_of f2 }\n"


def _spec(b0_first: bool, edge: str = "") -> str:
    ops = "  op f1 { time 1 ms }\n  op f2 { time 1 ms }\n"
    return (_CLUSTER + "graph g {\n" + (_B0 + ops if b0_first else ops + _B0)
            + "  f1 -> f2 { bytes 1 MB }\n  f1 -> b0 { bytes 1 MB }\n" + edge + "}\n"
            "plan p { graph g  cluster c  objective pipeline  microbatches 4 }\n")


def _codes(text: str) -> list[str]:
    try:
        loads(text, "t.plan")
    except SpecError as err:
        return [d.code for d in err.diagnostics]
    return []


@pytest.mark.parametrize("b0_first", [True, False])
def test_no_path_from_the_forward_op_is_e235_in_either_order(b0_first: bool) -> None:
    # main: E235 with b0 declared first, accepted (exit 0) with b0 declared after f2
    assert _codes(_spec(b0_first)) == ["E235"]


@pytest.mark.parametrize("b0_first", [True, False])
def test_a_path_through_another_op_is_accepted_in_either_order(b0_first: bool) -> None:
    # f2 -> x -> b0: a path, not an edge (x declared last: it must come first by edges)
    text = _spec(b0_first, "  op x { time 1 ms }\n  f2 -> x { bytes 1 MB }\n"
                 "  x -> b0 { bytes 1 MB }\n")
    assert _codes(text) == []


def _random_graph(rng: random.Random, n: int) -> Graph:
    """A random DAG on `n` ops (edges go from a lower to a higher rank, ranks a random
    permutation of the declaration order) and a random `backward_of`."""
    rank = list(range(n))
    rng.shuffle(rank)
    pairs = {(a, b) for a in range(n) for b in range(n)
             if rank[a] < rank[b] and rng.random() < 0.25}
    src, dst = zip(*sorted(pairs), strict=True) if pairs else ((), ())
    ops = list(range(n))
    rng.shuffle(ops)
    forward, backward = ops[: n // 2], ops[n // 2:]
    back = {b: rng.choice(forward) for b in backward if rng.random() < 0.7}
    return Graph("g", tuple(Op(f"o{i}", time_s=1e-3) for i in range(n)),
                 new_edges(src, dst, [1] * len(src)), (), MappingProxyType(back))


def _reaches(graph: Graph, a: int, b: int) -> bool:
    """Whether a path of edges leads from op `a` to op `b` (depth-first, no shortcut)."""
    stack, seen = [a], {a}
    while stack:
        i = stack.pop()
        for e in graph.edges:
            if e.src == i and e.dst not in seen:
                if e.dst == b:
                    return True
                seen.add(e.dst)
                stack.append(e.dst)
    return False


def _relabelled(graph: Graph, perm: list[int]) -> Graph:
    """The same graph with op i declared at position perm[i]."""
    ops: list[Op] = [graph.ops[0]] * len(graph.ops)
    for i, op in enumerate(graph.ops):
        ops[perm[i]] = op
    edges = [(perm[e.src], perm[e.dst]) for e in graph.edges]
    src, dst = zip(*edges, strict=True) if edges else ((), ())
    return Graph("g", tuple(ops), new_edges(src, dst, [1] * len(src)), (),
                 MappingProxyType({perm[b]: perm[f] for b, f in graph.backward_of.items()}))


def test_backward_first_is_the_brute_force_path_rule_on_random_graphs() -> None:
    rng = random.Random(235)
    flagged = 0
    for _ in range(400):
        g = _random_graph(rng, rng.randint(2, 11))
        want = [(b, f) for b, f in g.backward_of.items() if not _reaches(g, f, b)]
        assert backward_first(g) == want
        flagged += bool(want)
        perm = list(range(len(g.ops)))
        rng.shuffle(perm)
        h = _relabelled(g, perm)  # the same graph declared in another order
        names = {(g.ops[b].name, g.ops[f].name) for b, f in want}
        assert {(h.ops[b].name, h.ops[f].name) for b, f in backward_first(h)} == names
        position = {op: k for k, op in enumerate(g.topological_order)}
        pos = [position[i] for i in range(len(g.ops))]
        ahead = [(b, f) for b, f in g.backward_of.items() if pos[b] > pos[f]]
        for batch in (1, 2, 3):  # the batched search, batches of any size
            assert _unreached(g, pos, ahead, batch) == {p for p in ahead if p in want}
    assert flagged > 50  # the random graphs do test both verdicts
