"""The canonical layout (`planner.spec.format`): golden files and one test per rule."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from planner.errors import SpecError
from planner.spec.format import format_name, format_source
from planner.spec.load import load_text

HERE = Path(__file__).resolve().parent
FORMAT = HERE / "format"
EXAMPLE = HERE / "valid" / "example"
UPDATE = os.environ.get("UPDATE_GOLDEN", "") not in ("", "0")


def fmt(text: str) -> str:
    """Format, and check idempotence on the way."""
    out = format_source(text)
    assert format_source(out) == out, "not idempotent"
    return out


@pytest.mark.parametrize("path", [EXAMPLE / "tiny.plan", EXAMPLE / "clusters" / "dgx1.plan"],
                         ids=["tiny", "dgx1"])
def test_examples_are_canonical(path: Path) -> None:
    """The language issue's two example files are already in the canonical layout."""
    text = path.read_text(encoding="utf-8")
    assert format_source(text) == text


@pytest.mark.parametrize("name", sorted(p.stem for p in FORMAT.glob("*.plan")))
def test_golden_layout(name: str) -> None:
    """Each `format/NAME.plan` formats to `format/NAME.formatted` (UPDATE_GOLDEN=1 rewrites)."""
    got = fmt((FORMAT / f"{name}.plan").read_text(encoding="utf-8"))
    golden = FORMAT / f"{name}.formatted"
    if UPDATE:
        golden.write_text(got, encoding="utf-8")
    assert got == golden.read_text(encoding="utf-8")


def test_bad_input_raises_spec_error() -> None:
    """Syntax errors propagate as the parser's SpecError, with a position."""
    with pytest.raises(SpecError) as info:
        format_source("graph g {\n  op a { time 1 ms\n", "x.plan")
    span = info.value.diagnostics[0].span
    assert span is not None and span.file == "x.plan" and span.line == 2


# One case per layout rule, in `format/layout_cases.json`: its id, the rule it shows, the
# source and its canonical layout (data, so that tabs, trailing spaces and `\r` stay exact);
# `fmt` also checks that the result formats to itself.
LAYOUT_CASES = [pytest.param(case["source"], case["expected"], id=case["id"])
                for case in json.loads((FORMAT / "layout_cases.json").read_text(encoding="utf-8"))]


@pytest.mark.parametrize(("src", "expected"), LAYOUT_CASES)
def test_layout_rule(src: str, expected: str) -> None:
    """Each source formats to its canonical layout (the case's `rule` says what it shows)."""
    assert fmt(src) == expected


def test_width_limit_breaks_one_line_blocks_at_101_columns() -> None:
    """A one-line block stays so up to 100 columns; at 101 it takes the multi-line form."""
    def op_line(width: int) -> str:
        stem = "  op  { time 1 ms }"
        return f"  op {'x' * (width - len(stem))} {{ time 1 ms }}"

    at_limit, over = op_line(100), op_line(101)
    assert len(at_limit) == 100 and len(over) == 101
    assert fmt(f"graph g {{\n{at_limit}\n}}\n") == f"graph g {{\n{at_limit}\n}}\n"
    name = "x" * (101 - len("  op  { time 1 ms }"))
    broken = f"graph g {{\n  op {name} {{\n    time 1 ms\n  }}\n}}\n"
    assert fmt(f"graph g {{\n{over}\n}}\n") == broken


def test_trailing_comment_column_given_up_where_code_got_longer() -> None:
    """A trailing comment's column is given up where the code before it got longer (here by
    link alignment): it goes two spaces after the code."""
    src = ("cluster c {\n  link a -> b { bandwidth 1 GB/s } # x\n"
           "  link aaaa -> b { bandwidth 1 GB/s }\n}\n")
    assert "link a -> b    { bandwidth 1 GB/s }  # x\n" in fmt(src)


def test_names_bare_or_json() -> None:
    """Bare when the NAME pattern allows, else JSON (non-ASCII kept, controls escaped); in a
    file too: the `names-bare-or-json` layout case."""
    assert format_name("conv1") == "conv1"
    assert format_name("a.b-c_d") == "a.b-c_d"
    assert format_name("head/logits:0") == '"head/logits:0"'
    assert format_name("1abc") == '"1abc"'
    assert format_name("") == '""'
    assert format_name("café") == '"café"'
    assert format_name('tab\there "q"') == '"tab\\there \\"q\\""'
    assert format_name("\ud800") == '"\\ud800"'  # a lone surrogate cannot be written as UTF-8


def test_chain_keeps_a_both_ways_arrow_so_check_still_refuses_it() -> None:
    """`a <-> b` between ops is E233; `fmt` printed every hop `->`, so a spec that `check`
    refused passed after `fmt`. Each arrow is kept as written, a comment between them
    moved above."""
    ops = "".join(f"  op {x} {{ time 1 ms }}\n" for x in "abc")
    src = f"graph g {{\n{ops}  a -> b <-> # x\n  c\n}}\n"
    out = fmt(src)
    assert out.endswith("  # x\n  a -> b <-> c\n}\n")
    with pytest.raises(SpecError) as info:
        load_text(out)
    assert [d.code for d in info.value.diagnostics] == ["E233"]


def test_invisible_characters_in_names_stay_escaped() -> None:
    """`fmt` wrote `"a\\u202eb"` with a raw RIGHT-TO-LEFT OVERRIDE, which reorders the
    line in review (the Trojan Source trick E261 refuses in a name): a character that is
    not printable stays escaped, a printable one is written as itself."""
    src = 'import "x\\u200b.plan"\n\ngraph g {\n  op "a\\u202eb\\udb40\\udc41é" {}\n}\n'
    assert fmt(src) == src
    assert format_name("\u202e\u00a0日") == '"\\u202e\\u00a0日"'


def test_an_empty_link_block_on_two_lines_joins_its_run_at_once() -> None:
    """Before: `{` and `}` on two lines printed `{}` unpadded beside the next link, and a
    second `fmt` padded it (`fmt --check` failed on `fmt`'s own output, exit 5)."""
    text = ("cluster c {\n  device gpu[0..3] { memory 1 GiB }\n  link gpu0 -> gpu1 {\n  }\n"
            "  link gpu[0..3] <-> gpu[0..3] { bandwidth 5 GB/s }\n}\n")
    assert fmt(text).splitlines()[2:4] == [
        "  link gpu0 -> gpu1            {}",
        "  link gpu[0..3] <-> gpu[0..3] { bandwidth 5 GB/s }"]
    # a comment inside keeps the block open, and out of the run
    kept = text.replace("{\n  }", "{\n    # to come\n  }")
    assert fmt(kept).splitlines()[2:6] == [
        "  link gpu0 -> gpu1 {", "    # to come", "  }",
        "  link gpu[0..3] <-> gpu[0..3] { bandwidth 5 GB/s }"]


@pytest.mark.parametrize("marks", [1, 2, 3])
def test_every_leading_byte_order_mark_is_dropped_once_for_all(marks: int) -> None:
    """Two marks (two tools each added one) were E999: the formatter dropped one and its
    parser the second, so the formatter's offsets were one off (helper)."""
    text = "\ufeff" * marks + "graph g { op a { time 1 ms } }\n"
    assert format_source(text) == "graph g {\n  op a { time 1 ms }\n}\n"
    assert [op.name for op in load_text(text).spec.graphs["g"].ops] == ["a"]


def test_a_key_that_would_read_as_the_unit_before_it_keeps_its_own_line() -> None:
    """`speed 2; s 1` was printed `speed 2  s 1`, which reads `speed` 2 s, then `1`: the
    output no longer parsed (an unknown key; `check` says E210 of it) (helper)."""
    out = format_source("cluster c {\n  device d { memory 1 GiB; speed 2; s 1 }\n}\n")
    assert out == ("cluster c {\n  device d {\n    memory 1 GiB\n    speed  2\n    s      1\n"
                   "  }\n}\n")
    assert format_source(out) == out
    kept = "cluster c {\n  device d { memory 1 GiB  speed 2  flops 1 TFLOPS }\n}\n"
    assert format_source(kept) == kept  # a key that is no unit stays on the line


def test_a_semicolon_the_layout_cannot_drop_is_e109_at_it() -> None:
    """In a plan, `x pin; to d7` reads as two settings; on lines of their own, `to` starts
    no statement: `fmt` printed that, exit 0, and its output did not parse (helper)."""
    text = ("cluster c { device d7 { memory 1 GiB } }\ngraph g { op a { time 1 ms } }\n"
            "plan p {\n  graph g\n  cluster c\n  x pin ; to d7\n}\n")
    with pytest.raises(SpecError) as info:
        format_source(text, "s.plan")
    (diag,) = info.value.diagnostics
    assert diag.code == "E109" and (diag.span.line, diag.span.column) == (6, 9)
    assert text[diag.span.start] == ";"
    assert format_source(text.replace("x pin ; to d7", "pin a to d7")).count(";") == 0
