"""The canonical layout (`planner.spec.format`): golden files and one test per rule."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from planner.errors import SpecError
from planner.spec.format import format_name, format_source

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


# One case per layout rule: (source, its canonical layout). A comment above each case (or
# group) says the rule it shows; `fmt` also checks that the result formats to itself.
LAYOUT_CASES = [
    # Nothing formats to nothing; comments alone are kept, blank runs collapsed.
    pytest.param("", "", id="empty-file"),
    pytest.param("\n\n  ;\n", "", id="blank-and-semicolons-only"),
    pytest.param("\n\n# a  \n\n\n\n# b\n\n", "# a\n\n# b\n", id="comments-only"),
    # Top-level items get exactly one blank line between them; the file ends with one \n.
    pytest.param("graph a { op x }\n\n\n\ngraph b { op y }graph c { op z }",
                 "graph a {\n  op x\n}\n\ngraph b {\n  op y\n}\n\ngraph c {\n  op z\n}\n",
                 id="one-blank-line-between-top-level-items"),
    # Imports keep their own grouping (blank lines collapsed to one).
    pytest.param('import "a.plan"\nimport "b.plan"\n\n\nimport "c.plan"\ngraph g {}',
                 'import "a.plan"\nimport "b.plan"\n\nimport "c.plan"\n\ngraph g {}\n',
                 id="consecutive-imports-stay-together"),
    # Blank lines in a block are kept but collapsed to one; none right after `{` or before `}`.
    pytest.param("graph g {\n\n\n  op a\n\n\n\n  op b\n  op c\n\n}\n",
                 "graph g {\n  op a\n\n  op b\n  op c\n}\n", id="blank-lines-inside-blocks"),
    # A block written on one line stays on one line, attributes two spaces apart.
    pytest.param("graph g { op a {time 1ms;output  2\tMiB;} ; op b { } }",
                 "graph g {\n  op a { time 1 ms  output 2 MiB }\n  op b {}\n}\n",
                 id="one-line-blocks-two-spaces-no-semicolons"),
    # One attribute per line, keys (with selectors) padded to the longest key + 1.
    pytest.param("graph g { op a {\n time 1 ms  time[cpu] 3 ms\n output 2 MiB } }",
                 "graph g {\n  op a {\n    time      1 ms\n    time[cpu] 3 ms\n"
                 "    output    2 MiB\n  }\n}\n", id="multi-line-blocks-align-values"),
    # Consecutive one-line links align `{`; a blank line or a comment line ends a run.
    pytest.param("cluster c {\n  device d[0..2] { memory 1 GiB }\n"
                 "  link d0 <-> d1 { bandwidth 1 GB/s }\n"
                 "  link d[0..1] <-> d2 { bandwidth 2 GB/s }  # trailing comments do not\n"
                 "  # a comment line does\n"
                 "  link d2 -> d0 { bandwidth 3 GB/s }\n"
                 "  link d2, d1 -> d0 { bandwidth 3 GB/s }\n\n"
                 "  link d0 <-> d2 { bandwidth 4 GB/s }\n"
                 "  link d1 <-> d2 {\n    bandwidth 4 GB/s\n  }\n"
                 "  link d0 -> d1 { bandwidth 5 GB/s }\n}\n",
                 "cluster c {\n  device d[0..2] { memory 1 GiB }\n"
                 "  link d0 <-> d1      { bandwidth 1 GB/s }\n"
                 "  link d[0..1] <-> d2 { bandwidth 2 GB/s }  # trailing comments do not\n"
                 "  # a comment line does\n"
                 "  link d2 -> d0     { bandwidth 3 GB/s }\n"
                 "  link d2, d1 -> d0 { bandwidth 3 GB/s }\n\n"
                 "  link d0 <-> d2 { bandwidth 4 GB/s }\n"
                 "  link d1 <-> d2 {\n    bandwidth 4 GB/s\n  }\n"
                 "  link d0 -> d1 { bandwidth 5 GB/s }\n}\n", id="link-runs-align-their-blocks"),
    # Alignment is for link runs only.
    pytest.param("graph g {\n  op a    { time 1 ms }\n  op long { time 1 ms }\n}\n",
                 "graph g {\n  op a { time 1 ms }\n  op long { time 1 ms }\n}\n",
                 id="ops-and-devices-not-aligned"),
    # Setting keys pad to the longest setting + 1; pin/place to the longest present + 1.
    pytest.param("plan p { graph g cluster c pin a to x pin b to y }",
                 "plan p {\n  graph   g\n  cluster c\n  pin a to x\n  pin b to y\n}\n",
                 id="plan-settings-padded"),
    pytest.param("plan p { memory static\nplace a, b on x\npin c to y }",
                 "plan p {\n  memory static\n  place a, b on x\n  pin   c to y\n}\n",
                 id="plan-pins-padded"),
    # At least two spaces between code and `#`: same column; otherwise two spaces.
    pytest.param("graph g {\n  op a        # far\n  op b # near\n  op c  #two\n}\n",
                 "graph g {\n  op a        # far\n  op b  # near\n  op c  #two\n}\n",
                 id="trailing-comment-column-or-two-spaces"),
    # The column is kept even where the code before it got shorter.
    pytest.param("plan p {\n  graph    g      # x\n}\n", "plan p {\n  graph g         # x\n}\n",
                 id="trailing-comment-column-kept-after-shorter-code"),
    # Only trailing whitespace is removed from a comment.
    pytest.param("#!weird   text\t# with ##hashes  \t\ngraph g {}\n",
                 "#!weird   text\t# with ##hashes\ngraph g {}\n", id="comment-text-kept-exactly"),
    # An own-line comment goes before the next item, indented like it; before `}` else.
    pytest.param("graph g {\n# one\n      op a\n          # two\n}\n# three\n",
                 "graph g {\n  # one\n  op a\n  # two\n}\n# three\n",
                 id="comments-attach-to-next-statement"),
    # A comment that would end up mid-line moves onto its own line before the statement.
    pytest.param("plan p {\n  pin a,  # first\n    b to x\n}\n",
                 "plan p {\n  # first\n  pin a, b to x\n}\n",
                 id="comment-inside-one-line-statement-moves-before-it"),
    # Names are bare when the NAME pattern allows, else JSON (non-ASCII kept).
    pytest.param('graph "g" { op "a" op "b c" op "\\u00e9" "a" -> "b c" }',
                 'graph g {\n  op a\n  op "b c"\n  op "é"\n  a -> "b c"\n}\n',
                 id="names-bare-or-json"),
    # `1_000`, `2e-3`, `0.50` are printed as written; a unit follows after one space.
    pytest.param("graph g { op a { time 2e-3 s  output 1_000 KiB  params 0.50MiB } }",
                 "graph g {\n  op a { time 2e-3 s  output 1_000 KiB  params 0.50 MiB }\n}\n",
                 id="numbers-keep-their-text"),
    # `, ` between list items, ` -> ` in chains, ranges compact, link arrows kept.
    pytest.param('cluster c { device d [ 0 .. 3 ] { memory 1 GiB }\n'
                 'link d [ * ]->d0,d1 { bandwidth 1 GB/s } }\n'
                 'graph g { a ->b ->c colocate a,b,"c*" }',
                 "cluster c {\n  device d[0..3] { memory 1 GiB }\n"
                 "  link d[*] -> d0, d1 { bandwidth 1 GB/s }\n}\n\n"
                 "graph g {\n  a -> b -> c\n  colocate a, b, \"c*\"\n}\n",
                 id="lists-chains-ranges-and-arrows"),
    # Windows line endings are normalised.
    pytest.param("graph g {\r\n  op a  # c\r\n}\r\n", "graph g {\n  op a  # c\n}\n",
                 id="crlf-to-lf"),
]


@pytest.mark.parametrize(("src", "expected"), LAYOUT_CASES)
def test_layout_rule(src: str, expected: str) -> None:
    """Each source formats to its canonical layout (the rule each case shows is above it)."""
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
