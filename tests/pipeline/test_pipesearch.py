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


# Under 1F1B the search's plan gpu1 {l0}, gpu0 {l1, l2}, gpu1 {l3} would deadlock: it runs
# in GPipe's order, every micro-batch in flight on gpu0 (2 MB of params, 4 x 1.5 MB of
# activations, 4 x (0.5 MB + 1 KB) of receive buffers: 10 MB), over gpu0's 8.5 MB (with
# 1F1B's 2 micro-batches in flight it would hold 7 MB)
TIED = """
graph g4 {
  op l0 { time 10 ms  output 0.5 MB  params 10 MB }
  op l1 { time 10 ms  output 0.5 MB  params 1 MB }
  op l2 { time 10 ms  output 0.5 MB  params 1 MB }
  op l3 { time 10 ms  output 1 KB  params 10 MB }
  op b3 { time 20 ms  output 1 KB  backward_of l3 }
  op b2 { time 20 ms  output 1 KB  backward_of l2 }
  op b1 { time 20 ms  output 1 KB  backward_of l1 }
  op b0 { time 20 ms  output 1 KB  backward_of l0 }
  l0 -> l1 -> l2 -> l3 -> b3 -> b2 -> b1 -> b0
  tie l0, l3 { bytes 10 MB }
}
cluster c2 {
  device gpu0 { memory 8.5 MB }
  device gpu1 { memory 1 GB }
  link gpu0 <-> gpu1 { bandwidth 1 GB/s  latency 1 us }
}
plan p { graph g4  cluster c2  objective pipeline  microbatches 4  schedule 1f1b }
"""


def test_a_run_that_falls_back_to_gpipe_holds_gpipes_memory() -> None:
    """Before: the run fell back to GPipe's order but counted 1F1B's micro-batches in
    flight (5.0 MB on gpu0, `fits yes`; with the receive buffers, counted since
    2026-12-07, it would be 7.0 MB of gpu0's 8.5 MB), and `search` returned the plan."""
    p = loads(TIED).plan("p")
    where = {"l0": 1, "l1": 0, "l2": 0, "l3": 1}
    placement = tuple(where[op.name.replace("b", "l")] for op in p.graph.ops)
    ran = run_pipeline(p, placement, p.pipeline)
    assert ran.schedule == "gpipe" and "deadlock" in ran.note
    # params, M x (kept + received), and the receive buffers: M x (input + output gradient)
    assert ran.memory_bytes[0] == 2e6 + 4 * 1.5e6 + 1e3 + 4 * (0.5e6 + 1e3)
    found = run("search", p, Options(time_limit_s=1.0, seed=1))
    held = run_pipeline(p, found.plan.placement, p.pipeline).memory_bytes
    assert all(h <= d.memory_bytes for h, d in zip(held, p.cluster.devices, strict=True))


def test_a_plan_of_the_search_drops_pipedps_notes_on_its_own_split() -> None:
    """Before: search's plan came with pipedp's memory note, whose "this split" figures
    (120 ms, 480 ms) were another plan's."""
    p = loads(TIED.replace("output 0.5 MB", "output 1 KB")
              .replace("memory 8.5 MB", "memory 5 MB")).plan("p")
    dp = run("pipedp", p)
    assert "this split" in dp.info["memory_note"]
    found = run("search", p, Options(time_limit_s=1.0, seed=1))
    assert found.plan.placement != dp.plan.placement
    assert "memory_note" not in found.info and "stages_note" not in found.info
