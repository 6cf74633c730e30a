"""Tied weights in a pipeline (issue 38): holders that any split may separate, each
keeping the weight, its gradient and optimizer state; one all-reduce of the gradient per
iteration between the holders' devices, in the simulated iteration; one copy where the
holders share a device."""

from __future__ import annotations

import dataclasses

import pytest

from planner import loads as load_text
from planner.algorithms import run
from planner.cost import allreduce_time, costs, tied_duplicate_bytes
from planner.model import Problem
from planner.pipeline import allreduce, schedule
from planner.pipeline.bound import PipelineBound
from planner.pipeline.split import split_of, stage_bytes
from planner.render.pipeline import pipeline_json
from planner.report.views import PipelineRow

KIB = 1024
SPEC = """
cluster c {
  device gpu[0..2] { memory 1 GiB }
  link gpu[0..2] <-> gpu[0..2] { bandwidth 1 GB/s  latency 10 us }
}
graph lm {
  op emb { time 1 ms  params 64 KiB  output 1 KiB }
  op blk { time 2 ms  params 8 KiB  output 1 KiB }
  op head { time 1 ms  params 64 KiB  output 1 KiB }
  op head.bwd { time 1 ms  params 192 KiB  output 1 KiB  backward_of head }
  op blk.bwd { time 2 ms  params 24 KiB  output 1 KiB  backward_of blk }
  op emb.bwd { time 1 ms  params 192 KiB  backward_of emb }
  emb -> blk -> head -> head.bwd -> blk.bwd -> emb.bwd
  blk -> blk.bwd
  emb -> emb.bwd
  %s
}
plan p { graph lm  cluster c  objective pipeline  microbatches 4  schedule 1f1b }
"""
TIES = "tie emb, head { bytes 64 KiB }\n  tie emb.bwd, head.bwd { bytes 192 KiB }"


def _problem(ties: str = TIES) -> Problem:
    return load_text(SPEC % ties).plan()


def _placement(p: Problem, where: dict[str, int]) -> tuple[int, ...]:
    return tuple(where[op.name.removesuffix(".bwd")] for op in p.graph.ops)


def test_the_allreduce_formula() -> None:
    c = costs(_problem())
    # ring: 2 (n - 1) steps of bytes / n over the slowest link, each with its latency
    assert allreduce_time(c, 1e6, [0, 1]) == pytest.approx(2 * 10e-6 + 1e6 / 1e9)
    assert allreduce_time(c, 3e6, [0, 1, 2]) == pytest.approx(4 * 10e-6 + 4 / 3 * 3e6 / 1e9)
    assert allreduce_time(c, 1e6, [2]) == 0.0


def test_the_iteration_pays_one_allreduce_after_the_holders_last_backward() -> None:
    tied, free = _problem(), _problem("")
    place = _placement(tied, {"emb": 0, "blk": 1, "head": 2})
    with_tie = schedule.run(tied, place, tied.pipeline)
    without = schedule.run(free, place, free.pipeline)
    expected = 2 * 10e-6 + 64 * KIB / 1e9  # two devices, the weight's gradient
    assert with_tie.allreduce_s == pytest.approx(expected)
    # the first stage's backward ends the iteration; the all-reduce follows it
    assert with_tie.iteration_s == pytest.approx(without.iteration_s + expected)
    assert pipeline_json(tied, [_row(tied, with_tie)], _bound())["allreduce_s"] \
        == pytest.approx(expected)


def test_holders_on_one_device_need_no_allreduce() -> None:
    tied, free = _problem(), _problem("")
    place = _placement(tied, {"emb": 0, "blk": 1, "head": 0})
    run = schedule.run(tied, place, tied.pipeline)
    assert run.allreduce_s == 0.0
    assert run.iteration_s == schedule.run(free, place, free.pipeline).iteration_s


def test_a_tie_over_replicated_stages_waits_for_their_buckets_and_one_stage_needs_none(
        ) -> None:
    """Before: a tie's all-reduce ran on its own clock, beside the replicas' bucket
    all-reduces on the same devices (its seconds counted in `allreduce_s`, not in the
    iteration); holders on one replicated stage paid one on top of DDP's buckets."""
    tied = _problem()
    apart = schedule.run(tied, _placement(tied, {"emb": 0, "blk": 2, "head": 2}),
                         tied.pipeline, replicas={0: (0, 1)})
    buckets = [a for a in apart.allreduces if a.kind == "replicas"]
    (tie,) = [a for a in apart.allreduces if a.kind == "tie"]
    assert buckets and tie.devices == (0, 1, 2)
    assert tie.start_s >= max(a.end_s for a in buckets)
    assert apart.iteration_s == pytest.approx(max(tie.end_s, *(a.end_s for a in buckets)))
    together = schedule.run(tied, _placement(tied, {"emb": 0, "blk": 2, "head": 0}),
                            tied.pipeline, replicas={0: (0, 1)})
    assert {a.kind for a in together.allreduces} == {"replicas"}
    assert together.allreduce_s == pytest.approx(
        sum(a.end_s - a.start_s for a in together.allreduces))


def test_ties_without_gradients_cost_memory_only() -> None:
    p = _problem()
    # the forward holders' tie carries the gradient; the backward ops' tie has none
    assert allreduce.tied_gradients(p) == [((0, 2), (5, 3), 64 * KIB)]
    inference = dataclasses.replace(p, graph=dataclasses.replace(p.graph, backward_of={}))
    assert allreduce.tied_gradients(inference) == []


def test_each_holder_keeps_the_weight_and_one_device_keeps_one_copy() -> None:
    tied = _problem()
    apart = _placement(tied, {"emb": 0, "blk": 1, "head": 2})
    held = stage_bytes(tied, split_of(tied, apart), tied.pipeline)
    together = _placement(tied, {"emb": 0, "blk": 1, "head": 0})
    held_together = stage_bytes(tied, split_of(tied, together), tied.pipeline)
    free = _problem("")
    held_free = stage_bytes(free, split_of(free, together), free.pipeline)
    # apart: emb's and head's devices each hold the weight, its gradient and Adam state
    assert held[0] >= 256 * KIB and held[2] >= 256 * KIB
    # together: one copy, 256 KiB less than the two holders' params
    assert held_free[0] - held_together[0] == 256 * KIB
    assert tied_duplicate_bytes(tied.graph, together, 3) == [256 * KIB, 0, 0]


@pytest.mark.parametrize("algo", ["pipedp", "auto"])
def test_the_planner_splits_the_tied_ops_across_stages(algo: str) -> None:
    p = _problem()
    sol = run(algo, p)
    placement = sol.plan.placement
    result = schedule.run(p, placement, p.pipeline)
    emb, head = p.graph.op_index["emb"], p.graph.op_index["head"]
    assert placement[emb] != placement[head]
    assert result.allreduce_s > 0
    one = schedule.run(p, (0,) * len(placement), p.pipeline)
    assert result.iteration_s < one.iteration_s
    assert sol.info["iteration_s"] == pytest.approx(result.iteration_s)


def _row(p: Problem, result: schedule.PipelineRun) -> PipelineRow:
    return PipelineRow("this plan", "expert", result, True)


def _bound() -> PipelineBound:
    return PipelineBound(0.0, 0.0, "work")
