"""Under `interleaved` a stage holds what it sent until the step ends (torch's runtime waits
on its sends only then: `Schedule.keeps_sends`), which `stage_bytes` counts by walking the
device's order, and the per-stage DP bounds by all M of a stage's sends, so that the split
it returns without enumerating fits as `stage_bytes` judges it. Measured against torch in
`tests/io/test_torch_pipeline_interleaved_sends.py`."""

from __future__ import annotations

import dataclasses

import pytest
from pipe_support import chain_text

from planner import loads
from planner.algorithms import Options, pipedp
from planner.errors import InfeasibleError
from planner.model import Problem
from planner.pipeline import splitdp
from planner.pipeline.split import Split, fits, split_of, stage_bytes
from planner.schedules import TABLE

MB = 1e6


def _chain(memory: str) -> Problem:
    """Sixteen 4 ms layers with 4 MB outputs on four devices, 2 stages per device, 8
    micro-batches."""
    return loads(chain_text(16, 4, outputs_mb=[4.0] * 16, memory=memory,
                            schedule="interleaved; stages_per_device 2")).plan("p")


def test_only_interleaved_keeps_its_sends() -> None:
    assert [s.name for s in TABLE if s.keeps_sends] == ["interleaved"]


def test_more_micro_batches_hold_more_sends() -> None:
    """Eight stages of two layers on four devices, two each, at 8 and 16 micro-batches: the
    peak is the step's end, so the 8 more add 8 of each stage's receive buffers and of its
    sends. d0: stage 0's output-gradient buffer and its output sent, stage 4's input and
    output-gradient buffers and its output and input gradient sent, 4 MB each: 24 MB a
    micro-batch; d1 and d2 32 MB; d3 (stage 7 sends its input's gradient alone) 24 MB.
    Before, the buffers alone: 12, 16, 16 and 12 MB."""
    p = _chain("1 TB")
    assert p.pipeline is not None
    split = Split(tuple(range(0, 17, 2)), (0, 1, 2, 3, 0, 1, 2, 3))
    fewer = stage_bytes(p, split, p.pipeline)
    more = stage_bytes(p, split, dataclasses.replace(p.pipeline, microbatches=16))
    assert [b - a for a, b in zip(fewer, more, strict=True)] == [
        8 * 24 * MB, 8 * 32 * MB, 8 * 32 * MB, 8 * 24 * MB]


@pytest.mark.parametrize("memory", ["250 MB", "300 MB", "400 MB"])
def test_the_dps_split_fits_as_stage_bytes_judges_it(memory: str) -> None:
    """At a small limit's work no split is enumerated and the per-stage DP plans; it
    returns its split unchecked, so its bound must hold the sends: without them, at 250 MB
    it returned a split that holds 256 MB on d1."""
    p = _chain(memory)
    try:
        found = pipedp.search_within(p, Options(), splitdp.cells_for(0.05)).solution
    except InfeasibleError as err:
        assert [d.code for d in err.diagnostics] == ["E707"]
        return
    assert found.info["split_search"].startswith("heuristic")
    assert p.pipeline is not None
    assert fits(p, stage_bytes(p, split_of(p, found.plan.placement), p.pipeline))


def test_a_repeating_chain_of_another_count_runs_interleaved_at_that_count() -> None:
    """torch's ScheduleInterleaved1F1B runs a rank's stages however many: a split of 4 per
    device in a repeating chain (`export torch --ranks` loops a plan's stages so) runs
    interleaved with 4, not as the fallback (before: 1F1B, whose order deadlocks here, so
    GPipe's). One stage per device still runs as 1F1B, a chain that does not repeat too,
    and replicated stages."""
    from planner.pipeline.split import runs_as

    p = _chain("1 TB")
    assert p.pipeline is not None
    four = runs_as(Split(tuple(range(0, 17, 2)), (0, 1) * 4), p.pipeline)
    assert (four.schedule, four.stages_per_device) == ("interleaved", 4)
    assert runs_as(Split(tuple(range(0, 17, 2)), (0, 1, 2, 3) * 2), p.pipeline) is p.pipeline
    for split, replicated in ((Split((0, 4, 8, 12, 16), (0, 1, 2, 3)), False),
                              (Split((0, 4, 8, 12, 16), (0, 1, 1, 0)), False),
                              (Split(tuple(range(0, 17, 2)), (0, 1) * 4), True)):
        assert runs_as(split, p.pipeline, replicated).schedule == "1f1b", split
