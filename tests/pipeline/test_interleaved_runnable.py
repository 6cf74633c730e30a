"""W626 and the stage caps judge an `interleaved` plan as it runs and is exported (helper):
a split of one stage per device runs as 1F1B, torch's `Schedule1F1B`, which needs as many
micro-batches as stages; stages that do not loop over one chain of devices are refused by
`ScheduleInterleaved1F1B`. Before: W626 of a one-per-device split at 5 micro-batches
(judged by the interleaved rounds) that the export took, none of one with more stages than
micro-batches or of stages that do not loop, both of which the export refused (E947); and
`hybrid` planned more stages than micro-batches."""

from __future__ import annotations

from pipe_support import chain_text

import planner
from planner.pipeline.runnable import refusal
from planner.pipeline.split import split_of


def _problem(microbatches: int, devices: int = 2) -> planner.Problem:
    text = chain_text(6, devices, microbatches=microbatches, schedule="interleaved")
    return planner.loads(text.replace("schedule interleaved", "schedule interleaved; "
                                      "stages_per_device 2")).plan("p")


def test_one_stage_per_device_is_judged_as_1f1b() -> None:
    one_each = [0, 0, 0, 1, 1, 1] * 2  # f0-f2 and their backward ops on d0, the rest on d1
    placement = [d for k in range(6) for d in (one_each[k], one_each[k])]
    five = _problem(5)
    assert split_of(five, placement).stages == 2
    assert refusal(five, placement) is None  # Schedule1F1B runs 5 micro-batches on 2 stages
    why, change = refusal(_problem(1), placement) or ("", "")
    assert "runs 2 stages with 1 micro-batch(es): torch's Schedule1F1B" in why
    assert change == "set `microbatches 2` (or more), or `schedule gpipe`"


def test_stages_that_do_not_loop_are_refused_as_the_export_refuses_them() -> None:
    # d1, d0, d1: three stages, no chain of two devices repeated
    placement = [d for unit in (1, 1, 0, 0, 1, 1) for d in (unit, unit)]
    why, change = refusal(_problem(4), placement) or ("", "")
    assert "stages are on d1 -> d0 -> d1: torch's ScheduleInterleaved1F1B runs stage k on " \
           "rank k mod D, and these do not loop over one chain of devices" in why
    assert change.startswith("solve the plan with `--algo pipedp`")
    looped = [d for unit in (0, 0, 1, 0, 1, 1) for d in (unit, unit)]  # d0, d1, d0, d1
    assert refusal(_problem(4), looped) is None


def test_hybrids_layouts_keep_a_stage_per_micro_batch_under_interleaved() -> None:
    """Its layouts are a stage per group of devices: 1F1B's, at most M stages (before, 4
    stages at 2 micro-batches on 4 devices); pipedp's split that loops stays a candidate."""
    from planner.algorithms import pipehybrid

    problem = _problem(2, devices=4)
    assert problem.pipeline is not None
    layouts = pipehybrid.candidates(problem, problem.pipeline)
    assert layouts and max(len(lay.groups) for lay in layouts) == 2
    result = planner.solve(problem, "hybrid")
    assert refusal(problem, result.plan.placement) is None


def test_e259_hints_only_values_that_interleave() -> None:
    """3 units at `stages_per_device 4`: E259 hinted "from 2 to 3", and each was W258,
    "cannot interleave" (4 and 6 stages, 3 units); 9 units: 2 to 4."""
    import warnings

    import pytest

    for units, hint in ((3, "3 unit(s) cannot interleave (2 stages on each of two devices "
                             "need 4): use `schedule 1f1b`"),
                        (9, "set `stages_per_device` from 2 to 4")):
        text = chain_text(units, 2, microbatches=4, schedule="interleaved").replace(
            "schedule interleaved", "schedule interleaved; stages_per_device 12")
        with pytest.raises(planner.SpecError) as err:
            planner.loads(text)
        (d,) = [d for d in err.value.diagnostics if d.code == "E259"]
        assert d.hints == (hint,)
        if units == 9:
            fine = text.replace("stages_per_device 12", "stages_per_device 4")
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                planner.loads(fine)
            assert not [w for w in seen if "W258" in str(w.message)]
