"""`time[KIND]` naming a device kind that no device of the spec has: W256, with
did-you-mean, at the selector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import SpecError
from planner.spec.load import load_text

CLUSTER = """
cluster c {
  device tpu[0..1] { kind tpu  memory 16 GiB }
  device cpu0 { kind cpu  memory 64 GiB }
  link tpu[0..1] <-> cpu0 { bandwidth 10 GB/s }
  link tpu0 <-> tpu1 { bandwidth 100 GB/s }
}
plan p { graph g  cluster c }
"""
GRAPH = """
graph g {
  op a { time 2 ms  time[tpuu] 1 ms }
  op b { time 2 ms  time[tpu] 1 ms  time[v100] 3 ms }
  a -> b
}
"""


def test_a_misspelt_kind_is_a_warning_with_did_you_mean() -> None:
    loaded = load_text(GRAPH + CLUSTER, "s.plan")  # loads: `a` still has a plain `time`
    by_kind = {d.message.split("`")[1]: d for d in loaded.warnings}
    assert set(by_kind) == {"time[tpuu]", "time[v100]"}
    typo = by_kind["time[tpuu]"]
    assert typo.code == "W256" and typo.severity.value == "warning"
    assert (typo.span.line, typo.span.column, typo.span.end_column) == (3, 26, 30)
    assert typo.hints == ("did you mean `tpu`?", "device kinds here: `tpu`, `cpu`")
    assert by_kind["time[v100]"].hints == ("device kinds here: `tpu`, `cpu`",)


def test_a_graph_without_clusters_is_not_judged(tmp_path: Path) -> None:
    # a graph library: the kinds come with the specs that import it
    assert load_text(GRAPH, "g.plan").warnings == []
    (tmp_path / "g.plan").write_text(GRAPH)
    main = 'import "g.plan"\n' + CLUSTER
    assert [d.code for d in load_text(main, "m.plan", base=tmp_path).warnings] == [
        "W256", "W256"]


def test_solve_and_simulate_show_the_warning(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(args: list[str], _: Path) -> tuple[int, str, str]:
        res = runner.invoke(app, args)
        return res.exit_code, res.stdout, res.stderr

    spec = (GRAPH + CLUSTER).replace("plan p { graph g  cluster c }",
                                     "plan p { graph g  cluster c  place a, b on tpu0 }")
    (tmp_path / "s.plan").write_text(spec)
    code, _, err = invoke(["simulate", "s.plan"], tmp_path)
    assert code == 0 and "s.plan:3:26: warning[W256]: `time[tpuu]`" in err
    code, out, _ = invoke(["solve", "s.plan", "--algo", "heft", "--json"], tmp_path)
    doc = json.loads(out)
    assert code == 0 and [d["code"] for d in doc["diagnostics"]] == ["W256", "W256"]


def test_every_selector_counts_whichever_way_its_op_is_read() -> None:
    """W256 counts each `time[KIND]` of the kind: in a plain op block, in one that takes
    the reporting path (a unit of the wrong dimension, the kind given twice), and in an
    op defined twice (E202), and points at the first."""
    graph = """
graph g {
  op a { time 2 ms  time[tpuu] 1 ms }
  op b { time 2 ms  time[tpuu] 1 ms  time[tpuu] 2 ms }
  op c { time 2 ms  time[tpuu] 3 GB }
  op a { time 1 ms  time[tpuu] 1 ms }
}
"""
    with pytest.raises(SpecError) as err:
        load_text(graph + CLUSTER, "s.plan")
    (w256,) = [d for d in err.value.diagnostics if d.code == "W256"]
    assert "`time[tpuu]` (and 4 more ops)" in w256.message
    assert (w256.span.line, w256.span.column) == (3, 26)
