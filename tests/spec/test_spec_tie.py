"""`tie OPS { bytes N }`: ops that share one weight, read by both parsers, lowered with its
default and its checks, printed canonically."""

from __future__ import annotations

import pytest

from planner.errors import SpecError
from planner.model import Tie
from planner.spec.format import format_source
from planner.spec.load import load_text
from planner.spec.parse import _fast_parse, parse_lark

GRAPH = """graph g {
  op wte { time 1 ms  params 64 KiB }
  op h { time 1 ms  params 1 MiB }
  op lm_head { time 1 ms  params 80 KiB }
  wte -> h -> lm_head
  %s
}
"""


def _ties(stmt: str) -> tuple[Tie, ...]:
    return load_text(GRAPH % stmt, "t.plan").spec.graphs["g"].ties


def test_a_tie_lowers_to_its_ops_and_bytes() -> None:
    assert _ties("tie lm_head, wte { bytes 48 KiB }") == (Tie((0, 2), 48 * 1024),)


def test_bytes_default_to_the_least_params_of_the_tied_ops() -> None:
    assert _ties("tie wte, lm_head") == (Tie((0, 2), 64 * 1024),)
    assert _ties('tie "wte", "lm_*"') == (Tie((0, 2), 64 * 1024),)


def test_one_op_may_hold_several_weights_within_its_params() -> None:
    ties = _ties("tie wte, h { bytes 32 KiB }\n  tie wte, lm_head { bytes 32 KiB }")
    assert ties == (Tie((0, 1), 32 * 1024), Tie((0, 2), 32 * 1024))


@pytest.mark.parametrize(("stmt", "code"), [
    ("tie wte", "E236"),
    ("tie wte, wte", "E236"),
    ("tie wte, lm_head { bytes 65 KiB }", "E237"),
    ("tie wte, lm_head { bytes 0 B }", "E237"),
    ("tie wte, h { bytes 40 KiB }\n  tie wte, lm_head { bytes 40 KiB }", "E237"),
    ("tie wte, lm_head\n  tie lm_head, wte, h { bytes 1 KiB }", "E238"),
    ("tie wte, lm_head { bytes 1 KiB  size 2 KiB }", "E210"),
    ("tie wte, lm_head { bytes 1 ms }", "E222"),
])
def test_mistakes_are_located(stmt: str, code: str) -> None:
    with pytest.raises(SpecError) as err:
        _ties(stmt)
    diags = err.value.diagnostics
    assert [d.code for d in diags] == [code] * len(diags)
    assert all(d.span is not None and d.span.line >= 5 for d in diags)


@pytest.mark.parametrize("stmt", ["tie wte, lm_head", "tie wte,lm_head{bytes 1 KiB}",
                                  "tie wte ,\n lm_head {\n bytes 1 KiB ; }", "tie tie, op"])
def test_both_parsers_build_one_tree_and_fmt_prints_it_canonically(stmt: str) -> None:
    text = GRAPH.replace("op h ", "op tie ").replace("-> h ->", "-> tie ->") % stmt
    if "op," not in stmt and " op" in stmt:
        text = text.replace("op lm_head", "op op").replace("-> lm_head", "-> op")
    fast = _fast_parse(text, "t.plan")
    assert fast is None or fast == parse_lark(text, "t.plan")
    out = format_source(text, "t.plan")
    assert format_source(out, "t.plan") == out
    assert any(line.startswith("  tie ") for line in out.splitlines())
    assert load_text(out, "t.plan").spec.graphs["g"] == load_text(text, "t.plan").spec.graphs["g"]


def test_fmt_layout() -> None:
    out = format_source("graph g { op a op b tie a,b{bytes 1 KiB} tie a ,b }")
    assert out == "graph g {\n  op a\n  op b\n  tie a, b { bytes 1 KiB }\n  tie a, b\n}\n"


@pytest.mark.parametrize("stmt", ["colocate wte", "colocate wte, wte", 'colocate "lm_*"'])
def test_a_colocate_of_one_op_is_located_as_a_tie_of_one_is(stmt: str) -> None:
    # `tie wte` is E236; `colocate wte` constrains nothing: W236 at the statement, not silence
    loaded = load_text(GRAPH % stmt, "t.plan")
    (d,) = loaded.warnings
    assert d.code == "W236" and d.span is not None
    assert (d.span.line, d.span.column) == (6, 3)
    assert "does nothing" in d.message and d.hints
    assert load_text(GRAPH % "colocate wte, h", "t.plan").warnings == []
