"""The hints of `auto`'s E707 and `pipeilp`'s E708 (and the E707 before it) where no split
fits even recomputing: each change they suggest is checked by the recomputing contiguous
split too (`pipehints.Recomputing`), for both algorithms plan it. Before, they were
checked by pipedp's split alone, which never recomputes: this chain was told "a split fits
with `microbatches 1`", where both plan with `schedule 1f1b` or `microbatches 2`
(recomputing; 5 before a recomputing stage held the model's output per micro-batch in
flight), and `pipedp`, which does not recompute, still says `microbatches 1`. Since
2026-12-07 a training stage also holds a receive buffer per micro-batch of its input and of
its output's gradient (b3ce029), M x 1 MB on the first device whatever the schedule: the
chain's large activations grew from 4 to 10 MB and its devices from 7 to 20 MB (both plan
with `schedule 1f1b` or `microbatches 6`, recomputing)."""

from __future__ import annotations

import dataclasses

import pytest
from pipe_support import two_device_text

import planner
from planner.algorithms.exact import backends
from planner.errors import InfeasibleError

# two 20 MB devices, GPipe, 8 micro-batches: a stage of two units keeps 10.5 MB a
# micro-batch and sends 500 KB on (the last, the model's 500 KB output), so recomputing
# holds far less; and per micro-batch receive buffers of the 1 MB gradient (d0) or the
# 500 KB input (d1). No split fits even so (d0 recomputing: 10.5 + 8 x 0.5 + 8 x 1 = 22.5
# MB), but one does with 6 micro-batches (10.5 + 6 x 0.5 + 6 x 1 = 19.5 MB) or under 1F1B
# (2 in flight: 10.5 + 2 x 0.5 + 8 x 1 = 19.5 MB), and without recomputing only with 1
# (10.5 + 1 = 11.5 MB); the whole model on one device holds 21 MB
SPEC = two_device_text("20 MB", [10, 0.5, 10, 0.5], "microbatches 8; schedule gpipe")
FEWER = ("fewer micro-batches in flight hold fewer activations, and fewer micro-batches "
         "fewer receive buffers: a split fits with {}")


@pytest.mark.parametrize(("algorithm", "codes"), [
    ("auto", ["E707"]),
    pytest.param("pipeilp", ["E707", "E708"], marks=pytest.mark.skipif(
        not backends.available("highs"), reason="HiGHS (highspy) is not installed")),
])
def test_hints_name_the_changes_with_which_a_recomputing_split_fits(
        algorithm: str, codes: list[str]) -> None:
    problem = planner.loads(SPEC).plan("p")
    with pytest.raises(InfeasibleError) as err:
        planner.solve(problem, algorithm, time_limit_s=2)
    assert [d.code for d in err.value.diagnostics] == codes
    for d in err.value.diagnostics:
        assert d.hints[0].startswith(FEWER.format("`schedule 1f1b` or with `microbatches 6`"))
    for change in ({"schedule": "1f1b"}, {"microbatches": 6}):  # each claim holds
        changed = dataclasses.replace(problem, pipeline=dataclasses.replace(
            problem.pipeline, **change))
        result = planner.solve(changed, algorithm, time_limit_s=2)
        assert result.feasible and result.recompute, change


def test_pipedp_which_never_recomputes_keeps_its_own_hints() -> None:
    with pytest.raises(InfeasibleError) as err:
        planner.solve(planner.loads(SPEC).plan("p"), "pipedp")
    assert err.value.diagnostics[0].hints[0].startswith(FEWER.format("`microbatches 1`"))
