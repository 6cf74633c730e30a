"""`search` under `objective pipeline` (issue 26, item 3c): moves from pipedp's split,
judged by the period, kept only when the simulated iteration is shorter."""

from __future__ import annotations

from pipe_support import chain_spec

from planner import loads
from planner.algorithms import Options, run
from planner.pipeline.schedule import run as run_pipeline
from planner.pipeline.split import split_of
from planner.simulate import simulate

# u1 takes 10 ms, u0 and u2 1 ms each: every contiguous split of u0, u1, u2 over two
# devices has a 11 ms stage; u1 alone on one device and u0, u2 on the other is 10 ms
SANDWICH = """
cluster c { device d[0..1] { memory 1 GiB }
  link d[0..1] <-> d[0..1] { bandwidth 1000 GB/s } }
graph g {
  op u0 { time 1 ms; output 1 KB }
  op u1 { time 10 ms; output 1 KB }
  op u2 { time 1 ms; output 1 KB }
  u0 -> u1 -> u2
}
plan p { graph g; cluster c; objective pipeline; microbatches 8; schedule gpipe }
"""


def test_the_search_finds_a_plan_that_is_not_contiguous() -> None:
    p = loads(SANDWICH).plan("p")
    dp = run("pipedp", p)
    found = run("search", p, Options(time_limit_s=1.0, seed=3))
    assert found.info["chosen"] == "search"
    assert found.info["period_s"] < dp.info["period_s"] - 0.9e-3
    assert split_of(p, found.plan.placement).stages == 3  # d0, d1, d0 again
    mine = run_pipeline(p, found.plan.placement, p.pipeline).iteration_s
    theirs = run_pipeline(p, dp.plan.placement, p.pipeline).iteration_s
    assert mine < theirs
    assert simulate(p, found.plan).feasible
    again = run("search", p, Options(time_limit_s=1.0, seed=3))
    assert again.plan == found.plan  # a seed and a limit give one plan


def test_the_search_keeps_pipedps_split_where_no_move_helps() -> None:
    p = chain_spec([4, 4, 4, 4], [8, 8, 8, 8], microbatches=8)
    dp = run("pipedp", p)
    found = run("search", p, Options(time_limit_s=0.5))
    assert found.plan.placement == dp.plan.placement
    assert found.plan.algorithm == "search"
    assert "moves kept" in found.info["search"]
