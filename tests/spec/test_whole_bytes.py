"""Sizes are whole bytes: a fraction (`params 1.5 B`, `memory 0.1 GiB`) is rounded the way
that keeps a plan called within its caps within them as written (an op's or an edge's
size up, a device's `memory` down) and said (W266, at the value, with the whole figure),
from the literal's digits, not its float.

Before: every size was `round()`ed without a word, half to even: `output 2.5 B` read as 2
bytes (below what was written) and `params 1.5 B` as 2; `memory 3.5 B` as 4, so an op of
4 bytes "fit" a device of 3.5."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.spec.load import load_text

SPEC = """cluster c {{ device d[0..1] {{ memory {cap} }}
  link d0 <-> d1 {{ bandwidth 1 GB/s }} }}
graph g {{
  op a {{ {extra}time 1 ms  params {size}  output {size}  temp {size} }}
  op b {{ time 1 ms  params {size} }}
  a -> b {{ bytes {size} }}
  tie a, b {{ bytes {size} }}
}}
plan p {{ graph g  cluster c }}
"""


@pytest.mark.parametrize("extra", ["", "type conv  "])  # the fast reader and `Attrs`
@pytest.mark.parametrize(("size", "up"), [("1.5 B", 2), ("2.5 B", 3), ("7.25 B", 8),
                                          ("1.0001 KiB", 1025), ("0.3 MiB", 314573)])
def test_a_fraction_of_a_byte_rounds_up_and_is_w266_at_each_value(size: str, up: int,
                                                                  extra: str) -> None:
    loaded = load_text(SPEC.format(cap="1 GiB", size=size, extra=extra), "s.plan")
    g = loaded.spec.plan("p").graph
    a, b = g.ops
    assert (a.params_bytes, a.output_bytes, a.temp_bytes, b.params_bytes) == (up,) * 4
    assert [e.bytes for e in g.edges] == [up] and [t.bytes for t in g.ties] == [up]
    warned = [(d.code, d.span.line, d.span.column) for d in loaded.warnings
              if d.span is not None]
    line4 = SPEC.split("\n")[3].format(size=size, extra=extra)
    cols = [line4.index(f"{k} {size}") + len(k) + 2 for k in ("params", "output", "temp")]
    assert ("W266", 4, cols[0]) in warned and ("W266", 4, cols[2]) in warned
    assert [c for c, line, _ in warned if line in (5, 6, 7)] == ["W266"] * 3
    first = next(d for d in loaded.warnings if d.span is not None and d.span.line == 4)
    assert first.message == f"`params` {size} is not a whole number of bytes: read as {up} B"
    assert f"write `params {up} B`" in first.hints[0]


def test_a_memory_cap_rounds_down_and_whole_sizes_say_nothing() -> None:
    loaded = load_text(SPEC.format(cap="0.1 GiB", size="1.001 KB", extra=""), "s.plan")
    problem = loaded.spec.plan("p")
    assert [d.memory_bytes for d in problem.cluster.devices] == [107374182] * 2
    # 1.001 KB is 1000.9999999999999 B as a float, 1001 B as written: whole, no W266
    assert problem.graph.ops[0].params_bytes == 1001
    assert [(d.code, d.span and d.span.line) for d in loaded.warnings] == [("W266", 1)]
    assert "read as 107374182 B" in loaded.warnings[0].message


@pytest.mark.parametrize(("cap", "need"), [("3.5 B", "4 B"), ("2 B", "2.5 B")])
def test_check_says_an_op_over_its_cap_as_written_cannot_fit(cap: str, need: str,
                                                              tmp_path: Path) -> None:
    """Before: `memory 3.5 B` read as 4 B and `params 2.5 B` as 2 B: both plans "fit"."""
    spec = tmp_path / "s.plan"
    spec.write_text(f"cluster c {{ device d0 {{ memory {cap} }} }}\n"
                    f"graph g {{ op a {{ time 1 ms  params {need} }} }}\n"
                    "plan p { graph g  cluster c }\n")
    result = CliRunner().invoke(app, ["check", str(spec), "--json"])
    assert result.exit_code == 1, result.output
    assert '"E301"' in result.output and '"W266"' in result.output


def test_the_python_builder_rounds_as_a_spec_does() -> None:
    b = planner.ProblemBuilder("p")
    b.device("d0", memory="3.5 B")
    b.device("d1", memory=2.5)
    b.link("d0", "d1", bandwidth="1 GB/s")
    b.op("a", time="1 ms", params="2.5 B", output=1.25, temp="1.001 KB")
    b.op("z", time="1 ms")
    b.edge("a", "z", bytes="0.3 MiB")
    with pytest.warns(planner.PlannerWarning) as said:  # W266, as a spec says it
        p = b.build()
    assert [w.message.code for w in said] == ["W266"] * 5  # type: ignore[union-attr]
    assert [d.memory_bytes for d in p.cluster.devices] == [3, 2]
    (a, _), (e,) = p.graph.ops, p.graph.edges
    assert (a.params_bytes, a.output_bytes, a.temp_bytes, e.bytes) == (3, 2, 1001, 314573)


@pytest.mark.parametrize(("number", "factor", "up", "down", "whole"), [
    ("1.5", 1, 2, 1, False), ("16", 2**30, 2**34, 2**34, True), ("1.1", 1e3, 1100, 1100, True),
    ("1.5e1", 1, 15, 15, True), ("1_000.5", 1, 1001, 1000, False),
    ("1.0000000000000000000001", 1024, 1025, 1024, False),  # its float is 1024.0
    ("1023.9999999999", 2**40, 2**50 - 109, 2**50 - 110, False)])
def test_whole_bytes_is_exact(number: str, factor: float, up: int, down: int,
                              whole: bool) -> None:
    from planner.units import whole_bytes  # noqa: PLC0415 (the old code has none: the other tests still run)

    value = float(number.replace("_", "")) * factor
    assert whole_bytes(number, factor, value) == (up, whole)
    assert whole_bytes(number, factor, value, down=True) == (down, whole)
