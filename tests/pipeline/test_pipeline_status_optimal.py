"""A pipeline plan that runs and meets its period's bound is `optimal`, whatever algorithm
made it (docs/algorithms.md: "`optimal` ... the makespan (a pipeline's period) is within
1e-6 of the valid lower bound printed beside it, whatever algorithm made the plan", and "a
fallback plan that meets its bound is shown `optimal`"). Before: pipeilp's alone; pipedp,
hybrid, auto and search said `feasible` of the same plan at the same bound, in `solve`,
the API and `compare`, and pipeilp's own `fallback` at its bound stayed `fallback`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli.helpers import invoke

import planner
from planner.algorithms.exact import backends

#: two training layers on two devices: L0 | L1 runs at T = 12 ms, the work bound
TWO = """cluster c { device d[0..1] { memory 1 GiB }
  link d[0..1] <-> d[0..1] { bandwidth 10 GB/s } }
graph g {
  op L0 { time 4 ms; output 1 MB }  op L0.bwd { time 8 ms; backward_of L0 }
  op L1 { time 4 ms; output 1 MB }  op L1.bwd { time 8 ms; backward_of L1 }
  L0 -> L1 -> L1.bwd -> L0.bwd
  L0 -> L0.bwd
}
plan p { graph g; cluster c; objective pipeline; microbatches 4 }
"""


@pytest.mark.parametrize("algo", ["pipedp", "hybrid", "auto", "search", "uniform"])
def test_a_plan_at_its_period_bound_is_optimal_whatever_made_it(tmp_path: Path,
                                                                algo: str) -> None:
    result = planner.solve(planner.loads(TWO).plan("p"), algo)
    assert (result.period_gap, result.status) == (0.0, "optimal")
    (tmp_path / "s.plan").write_text(TWO)
    code, out, _ = invoke(["solve", "s.plan", "--algo", algo, "--json"], tmp_path)
    assert code == 0 and json.loads(out)["result"]["status"] == "optimal"
    code, out, _ = invoke(["solve", "s.plan", "--algo", algo], tmp_path)
    assert "optimal (the period T; the iteration is not minimised)" in " ".join(out.split())


def test_a_plan_above_its_bound_stays_feasible(tmp_path: Path) -> None:
    result = planner.solve(planner.loads(TWO).plan("p"), "single")  # T = 24 ms
    assert result.period_gap == pytest.approx(1.0) and result.status == "feasible"


def test_compare_rows_say_it_too(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(TWO)
    code, _, _ = invoke(["compare", "s.plan", "--algos", "pipedp,hybrid,single", "--out",
                         "rows.json", "-j", "1"], tmp_path)
    assert code == 0
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert [(r["algorithm"], r["status"]) for r in rows] == [
        ("pipedp", "optimal"), ("hybrid", "optimal"), ("single", "feasible")]


@pytest.mark.skipif(not backends.available("highs"),
                    reason="HiGHS (highspy) is not installed")
def test_a_fallback_at_its_bound_is_optimal() -> None:
    # pipeilp's model (interleaved) has no placement at its relaxed plan's period, which
    # it keeps (`fallback`): that plan meets the unit bound, 18 ms
    text = """cluster c { device d0 { memory 400 MB }  device d1 { memory 40 MB }
  device d2 { memory 200 MB }  device d3 { memory 60 MB }
  link d[0..3] <-> d[0..3] { bandwidth 5 GB/s } }
graph g {
  op u0 { time 4 ms; output 4 MB; params 3 MB }
  op u0.bwd { time 14 ms; output 4 MB; backward_of u0 }
  op u1 { time 2 ms; output 7 MB }  op u1.bwd { time 6 ms; output 4 MB; backward_of u1 }
  op u2 { time 6 ms; output 7 MB; params 2 MB }  op u2.bwd { time 6 ms; backward_of u2 }
  op u3 { time 4 ms; output 4 MB }  op u3.bwd { time 4 ms; output 2 MB; backward_of u3 }
  u0 -> u0.bwd; u1 -> u1.bwd; u2 -> u2.bwd; u3 -> u3.bwd; u0 -> u1 -> u2 -> u3
  u1.bwd -> u0.bwd { bytes 8 MB }  u2.bwd -> u1.bwd { bytes 4 MB }  u3.bwd -> u2.bwd { bytes 7 MB }
}
plan p { graph g; cluster c; objective pipeline; microbatches 2; schedule interleaved
  stages_per_device 2; contention device; pin u2 to d3 }
"""
    result = planner.solve(planner.loads(text).plan("p"), "pipeilp", time_limit_s=1)
    assert result.info.get("reason") and result.period_gap == 0.0
    assert result.feasible and result.status == "optimal"
