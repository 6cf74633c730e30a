"""Under `data_parallel N` and `1f1b`, each of the N pipelines runs M // N micro-batches (as
`export torch --pipeline` gives them), and torch's `Schedule1F1B` needs as many as stages:
hybrid, auto and search planned N pipelines of up to M stages, which the export refused
(E947), while pipeilp proved that nothing fits within a pipeline's own cap (E708) (helper:
2 stages x 2 replicas at 2 micro-batches)."""

from __future__ import annotations

import warnings

import pytest

import planner
from planner.errors import PlannerError
from planner.pipeline.runnable import refusal
from planner.pipeline.split import split_of

#: six 1 GiB layers: no 6 GiB device holds all six, so a pipeline needs two stages
SPEC = """
cluster four {
  device gpu[0..3] { memory 6 GiB  flops 10 TFLOPS }
  link gpu[*] <-> gpu[*] { bandwidth 25 GB/s  latency 2 us }
}
graph chain {
LAYERS
  l0 -> l1 -> l2 -> l3 -> l4 -> l5
}
plan p { graph chain  cluster four  objective pipeline  microbatches M  schedule 1f1b
         data_parallel 2 }
""".replace("LAYERS", "\n".join(f"  op l{k} {{ flops 40 GFLOP  params 1 GiB  output 1 MiB }}"
                                 for k in range(6)))


def _problem(microbatches: int) -> planner.Problem:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return planner.loads(SPEC.replace("microbatches M", f"microbatches {microbatches}")
                             ).plan()


@pytest.mark.parametrize("algorithm", ["hybrid", "auto", "search"])
def test_a_pipeline_of_one_micro_batch_gets_no_second_stage(algorithm: str) -> None:
    with pytest.raises(PlannerError) as info:
        planner.solve(_problem(2), algorithm)
    (diag,) = [d for d in info.value.diagnostics if d.code == "E712"]
    assert "in at most 1 stage(s)" in diag.message
    assert any("2 pipelines fit with `microbatches 4` (a layout of 2 stage(s), each on 2 "
               "replicas)" in hint for hint in diag.hints), diag.hints


def test_the_hinted_micro_batches_give_a_plan_torch_runs() -> None:
    problem = _problem(4)
    result = planner.solve(problem, "hybrid")
    assert split_of(problem, result.plan.placement).stages == 2
    assert refusal(problem, result.plan.placement) is None
    assert result.info["replicas"] == {"gpu0": ["gpu0", "gpu1"], "gpu2": ["gpu2", "gpu3"]}


def test_the_warning_counts_a_pipelines_micro_batches() -> None:
    why, change = refusal(_problem(2), [0, 0, 0, 2, 2, 2]) or ("", "")
    assert "runs 2 stages with 2 micro-batch(es) (each of its 2 pipelines runs 1)" in why
    assert change == "set `microbatches 4` (or more), or `schedule gpipe`"
