"""An op's `type`: declared in the spec (a PyTorch import writes the module's class), kept
by `fmt` and the JSON interchange, and what charts group ops by; without one, the type is
read from the name, a backward op (`x.bwd`) taking its forward op's."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.io.interchange import export_spec, import_json
from planner.render.groups import legend_by_type, op_type
from planner.spec.format import format_source

SPEC = """graph g {
  op conv1 { time 2 ms  type Conv2d }
  op "layer1.0" { time 5 ms  type "BasicBlock" }
  op head.fc { time 1 ms }
  op "head.fc.bwd" { time 2 ms  backward_of head.fc }
  conv1 -> "layer1.0"
  "layer1.0" -> head.fc
  head.fc -> "head.fc.bwd"
}
"""


def test_a_declared_type_reaches_the_model() -> None:
    ops = planner.loads(SPEC).graphs["g"].ops
    assert [o.type for o in ops] == ["Conv2d", "BasicBlock", "", ""]


def test_a_number_is_no_type(tmp_path: Path) -> None:
    spec = tmp_path / "t.plan"
    spec.write_text("graph g { op a { time 1 ms  type 3 } }\n")
    result = CliRunner().invoke(app, ["check", str(spec)])
    assert result.exit_code == 1 and "E213" in result.output


def test_fmt_and_the_interchange_keep_it(tmp_path: Path) -> None:
    formatted = format_source(SPEC)
    assert "type Conv2d" in formatted and "type BasicBlock" in formatted
    assert format_source(formatted) == formatted
    spec = planner.loads(SPEC)
    data = export_spec(spec)
    assert [op.get("type") for op in data["ops"]] == ["Conv2d", "BasicBlock", None, None]
    (tmp_path / "g.json").write_text(json.dumps(data))
    again = import_json(tmp_path / "g.json").workload.ops
    assert [o.type for o in again] == ["Conv2d", "BasicBlock", "", ""]


def test_charts_group_by_the_declared_type_and_a_backward_op_by_its_forward_op() -> None:
    assert op_type("layer1.0", "BasicBlock") == "BasicBlock"
    assert op_type("head.fc") == "fc"
    assert op_type("enc.L0.q.bwd") == op_type("enc.L0.q") == "q"
    ops = planner.loads(SPEC).graphs["g"].ops
    legend = legend_by_type([o.name for o in ops], [2.0, 5.0, 1.0, 2.0],
                            [o.type for o in ops])
    assert legend.names == ("BasicBlock", "fc", "Conv2d")
    assert [legend.names[k] for k in legend.of_op] == ["Conv2d", "BasicBlock", "fc", "fc"]
