"""`Result.period_gap` is the period's gap that `solve` prints and `solve --json` gives: for
a pipeline plan over a memory cap as for one that fits (T is at most that far above the
best period, a plan that fits, which the bound holds too), and None where a proof says no
plan fits (E301: there is no best period). Before, the API gave None for a plan that breaks
a rule while the command line said `at most 0.0% above the best period`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import planner
from planner.cli import app

#: two layers of 16 MB of params on two 40 MB devices: `uniform`'s even split does not
#: hold the activations of 8 micro-batches in flight (E401), though no proof says that no
#: plan fits; with 80 MB, `b` alone outgrows every device (E301: no plan fits)
SPEC = """
cluster c { device gpu[0..1] { memory 40 MB } link gpu0 <-> gpu1 { bandwidth 10 GB/s } }
graph g {
  op a { time 1 ms  output 8 MB  params 16 MB }
  op a.bwd { time 2 ms  output 8 MB  backward_of a }
  op b { time 1 ms  output 8 MB  params %s }
  op b.bwd { time 2 ms  output 8 MB  backward_of b }
  a -> b -> b.bwd -> a.bwd
}
plan p { graph g cluster c  objective pipeline  microbatches 8  schedule gpipe }
"""


@pytest.mark.parametrize(("params", "proof"), [("16 MB", False), ("80 MB", True)])
def test_the_api_and_solve_give_the_same_period_gap(tmp_path: Path, params: str,
                                                    proof: bool) -> None:
    spec = tmp_path / "s.plan"
    spec.write_text(SPEC % params, encoding="utf-8")
    result = planner.solve(planner.load(spec).plan("p"), "uniform")
    assert result.pipeline is not None and result.pipeline_bound is not None
    assert not result.feasible and result.gap is None  # over a cap; one pass's gap: none
    shown = CliRunner().invoke(app, ["solve", str(spec), "--algo", "uniform", "--json"])
    assert shown.exit_code == 3, shown.output
    pipe = json.loads(shown.stdout)["result"]["pipeline"]
    assert result.period_gap == pipe["period_gap"]
    assert (result.pipeline_bound.no_plan or None) == pipe["no_plan"]
    text = " ".join(CliRunner().invoke(app, ["solve", str(spec), "--algo", "uniform"])
                    .stdout.split())
    if proof:
        assert result.period_gap is None
        assert pipe["no_plan"].startswith("E301: the pipeline unit of `b`")
        assert "no gap: no plan fits (E301" in text
    else:
        bound, period = result.pipeline_bound.period_s, result.pipeline.period_s
        assert result.period_gap == pytest.approx((period - bound) / bound)
        assert pipe["no_plan"] is None
        assert f"at most {result.period_gap:.1%} above the best period" in text
