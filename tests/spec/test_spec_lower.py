"""Lowering's bookkeeping: repeated edges, op locations and the name index.

An edge written twice is one edge, where it first appeared, with the bytes given last (a
repeat without `bytes` gives none) and the location of its first writing; `Locations.ops`
finds each op's declaration; `Graph.op_index` (handed over from lowering) is the table the
property would build.
"""

from __future__ import annotations

import random

import pytest

from planner.errors import SpecError
from planner.model import Graph
from planner.spec.load import Loaded, load_text

CLUSTER = "cluster c { device d0 { memory 1 GB } }\n"


def load(body: str) -> Loaded:
    return load_text(f"{CLUSTER}graph g {{\n{body}\n}}\nplan p {{ graph g cluster c }}\n")


def test_repeated_edges_merge_in_order_of_first_appearance() -> None:
    loaded = load("  op a { time 1 ms output 3 KiB }\n"   # line 3
                  "  op b { time 1 ms }\n"
                  "  op c { time 1 ms }\n"
                  "  a -> b\n"                             # line 6: bytes = a's output
                  "  a -> c { bytes 5 KiB }\n"
                  "  a -> b { bytes 2 KiB }\n"
                  "  b -> c\n"
                  "  a -> b -> c { bytes 1 KiB }\n")       # both repeated: 1 KiB each
    g = loaded.spec.graphs["g"]
    assert [(e.src, e.dst, e.bytes) for e in g.edges] == [
        (0, 1, 1024), (0, 2, 5 * 1024), (1, 2, 1024)]
    spans = loaded.locations.edges["g"]
    assert [(s.line, s.column) for s in spans] == [(6, 8), (7, 8), (9, 8)]


def test_a_repeat_without_bytes_keeps_the_bytes_given_before() -> None:
    """`a -> b { bytes 100 MB }`, then the chain `a -> b`: before, the repeat set the edge
    back to a's output (1 MB), silently (a plan over a slow link ran 34x faster than it
    would)."""
    loaded = load("  op a { time 1 ms output 1 MB }\n  op b { time 1 ms }\n"
                  "  op c { time 1 ms output 1 MB }\n"
                  "  a -> b { bytes 100 MB }\n  a -> b\n"     # given, then not: 100 MB
                  "  c -> b\n  c -> b { bytes 7 MB }\n  c -> b\n")  # the last given: 7 MB
    g = loaded.spec.graphs["g"]
    assert [(e.src, e.dst, e.bytes) for e in g.edges] == [(0, 1, 10**8), (2, 1, 7 * 10**6)]


@pytest.mark.parametrize("seed", range(20))
def test_random_repeated_edges_merge_as_a_table_of_pairs_would(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(2, 12)
    lines = [f"  op o{i} {{ time 1 ms output {i + 1} KiB }}" for i in range(n)]
    want: dict[tuple[int, int], int] = {}  # insertion order: first appearance
    first_line: dict[tuple[int, int], int] = {}
    given: set[tuple[int, int]] = set()
    for _ in range(rng.randint(0, 40)):
        a = rng.randrange(n - 1)
        b = rng.randrange(a + 1, n)
        if rng.random() < 0.5:
            lines.append(f"  o{a} -> o{b}")
            if (a, b) not in given:  # a repeat without bytes keeps those given before
                want[(a, b)] = (a + 1) * 1024
        else:
            size = rng.randint(1, 9) * 1024
            lines.append(f"  o{a} -> o{b} {{ bytes {size // 1024} KiB }}")
            want[(a, b)] = size
            given.add((a, b))
        first_line.setdefault((a, b), len(lines) + 2)  # the body starts on line 3
    loaded = load("\n".join(lines))
    g = loaded.spec.graphs["g"]
    assert [((e.src, e.dst), e.bytes) for e in g.edges] == list(want.items())
    assert [s.line for s in loaded.locations.edges["g"]] == list(first_line.values())


def test_a_cycle_is_reported_at_its_closing_edge() -> None:
    with pytest.raises(SpecError) as err:
        load("  op a { time 1 ms }\n  op b { time 1 ms }\n  a -> b\n  a -> b\n  b -> a\n")
    (d,) = [d for d in err.value.diagnostics if d.code == "E231"]
    assert "a -> b -> a" in d.message
    assert (d.span.line, d.span.column) == (5, 8)  # `a -> b` closes it: its first writing


def test_op_locations_and_the_name_index() -> None:
    loaded = load("  op a { time 1 ms }\n  op b { time 1 ms }\n  a -> b\n")
    ops = loaded.locations.ops
    assert (ops[("g", "a")].line, ops[("g", "b")].line) == (3, 4)
    assert ops.get(("g", "zz")) is None and ops.get(("nope", "a")) is None
    assert ops.get("g") is None and ops.get(("g", "a", "x")) is None  # not a pair
    assert ("g", "b") in ops and ("g", "c") not in ops
    assert list(ops) == [("g", "a"), ("g", "b")] and len(ops) == 2
    g = loaded.spec.graphs["g"]
    assert dict(g.op_index) == {o.name: i for i, o in enumerate(g.ops)} == {"a": 0, "b": 1}
    # built without `__post_init__` (`indexed_graph`), it is the graph the class builds
    again = Graph(g.name, g.ops, g.edges, g.colocations)
    assert again == g and repr(again) == repr(g)
    assert dict(again.op_index) == dict(g.op_index)


def test_a_graph_with_an_op_defined_twice_keeps_its_first_definition() -> None:
    with pytest.raises(SpecError) as err:
        load("  op a { time 1 ms }\n  op a { time 2 ms }\n")
    (d,) = err.value.diagnostics
    assert d.code == "E202" and d.span.line == 4 and d.notes[0][1].line == 3
