"""hybrid's E712 and pipeilp's E708 give pipedp's checked hints on the micro-batches in
flight (`pipehints.in_flight_hints`), as E707 does: a change is suggested only where a split
fits with it, and under 1f1b the micro-batches' cap on the stages is named."""

from __future__ import annotations

import dataclasses
import re

import pytest
from pipe_support import chain_text

from planner import loads
from planner.algorithms import Options
from planner.algorithms import run as run_algorithm
from planner.errors import Diagnostic, InfeasibleError
from planner.model import Problem

FEWER = ("fewer micro-batches in flight hold fewer activations, and fewer micro-batches "
         "fewer receive buffers: a split fits with {}; or give the devices more `memory`")
MORE = "`microbatches 2` allows 2 stages, and a split into 2 stages fits: each holds less"
CAP = " in at most 1 stage(s) (`1f1b` runs no more stages than micro-batches)"


def _plan(memory: str, schedule: str, microbatches: int = 8,
          outputs_mb: tuple[float, ...] = (4.0,) * 6, params_mb: int = 0) -> Problem:
    text = chain_text(6, 3, outputs_mb=list(outputs_mb), memory=memory, schedule=schedule,
                      microbatches=microbatches)
    if params_mb:  # on each forward op
        text = re.sub(r"(op f\d+ \{ time [\d.]+ ms;)", rf"\1 params {params_mb} MB;", text)
    return loads(text).plan("p")


def _error(algorithm: str, problem: Problem, code: str) -> Diagnostic:
    with pytest.raises(InfeasibleError) as err:
        run_algorithm(algorithm, problem, Options(time_limit_s=5))
    d = err.value.diagnostics[-1]
    assert d.code == code
    return d


def _fits_with(algorithm: str, problem: Problem, change: str) -> None:
    key, value = change.replace("`", "").split()
    pipe = dataclasses.replace(problem.pipeline,
                               **{key: int(value) if value.isdigit() else value})
    solved = run_algorithm(algorithm, dataclasses.replace(problem, pipeline=pipe),
                           Options(time_limit_s=5))
    assert solved.status == "feasible"


@pytest.mark.parametrize(("algorithm", "code"), [("hybrid", "E712"), ("pipeilp", "E708")])
def test_no_fewer_micro_batches_where_none_fit(algorithm: str, code: str) -> None:
    # 8 MB under 1f1b: no split fits with one micro-batch either, and 1f1b is the plan's
    # own; before, "fewer micro-batches in flight (`schedule 1f1b`, fewer `microbatches`)"
    d = _error(algorithm, _plan("8 MB", "1f1b"), code)
    assert d.hints[0] == "give the devices more `memory`"
    assert not any("1f1b" in h or "microbatches" in h for h in d.hints)


@pytest.mark.parametrize(("memory", "schedule", "params_mb", "fewer"), [
    # GPipe, 3 micro-batches: [f0 f1 f2] holds 3 x 12 + 3 x 4 (its output's gradient
    # buffers) = 48 MB, [f3] 3 x (4 + 4) + 3 x (4 + 4) = 48, [f4 f5] 3 x 12 + 3 x 4 = 48; 4
    # hold more (40 MB devices before 2026-12-07's receive buffers)
    ("48 MB", "gpipe", 0, "`schedule 1f1b` or with `microbatches 3`"),
    # interleaved, one micro-batch: a stage a unit, the second device's [f1] and [f4]
    # 2 x (8 + (4 + 4) + (4 + 4)) = 48 MB of 56 (each within 56 / 2); all the params on one
    # device, 6 x 8 + 24 = 72. (16 MB and no params before 2026-12-07's receive buffers,
    # which put 8 MB more on such a stage, where one device held the whole model's 24 MB.)
    ("56 MB", "interleaved; stages_per_device 2", 8, "`microbatches 1`"),
])
def test_hybrid_names_the_changes_with_which_a_layout_fits(memory: str, schedule: str,
                                                           params_mb: int, fewer: str) -> None:
    p = _plan(memory, schedule, params_mb=params_mb)
    assert _error("hybrid", p, "E712").hints[0] == FEWER.format(fewer)
    for change in fewer.split(" or with "):
        _fits_with("hybrid", p, change)


@pytest.mark.parametrize(("algorithm", "code", "cap"), [
    ("hybrid", "E712", CAP),
    ("pipeilp", "E708", CAP),  # was "in at most 1 stages"
])
def test_under_1f1b_one_micro_batch_names_its_cap_and_the_micro_batches_that_fit(
        algorithm: str, code: str, cap: str) -> None:
    # one micro-batch under 1f1b: one stage, which 24 MB does not hold; two, with
    # `microbatches 2`, fit (before, hybrid named no cap and hinted at 1f1b, its own)
    p = _plan("24 MB", "1f1b", 1, (1, 1, 1, 1, 1, 20))
    d = _error(algorithm, p, code)
    assert cap in d.message
    assert d.hints[0] == MORE
    _fits_with(algorithm, p, "microbatches 2")


def test_auto_builds_no_hints_for_the_hybrid_error_it_drops(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`auto` tries hybrid's layouts and drops its E712 where none fits: the hints' split
    searches (half of a 1 s run on this spec) are not run for it; `--algo hybrid`, whose
    E712 is shown, still runs them."""
    from pipe_support import random_spec

    from planner.algorithms import pipehints

    calls: list[object] = []
    real = pipehints.in_flight_hints

    def counted(*args: object, **kwargs: object) -> tuple[str, ...]:
        calls.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipehints, "in_flight_hints", counted)
    # (350 MB before 2026-12-07's receive buffers, where auto's recomputing split now fits
    # from 540 MB; seed 3 at 300 MB before a recomputing stage held the model's inputs and
    # outputs per micro-batch in flight; there, now, no plan of auto's fits either)
    problem = random_spec(10, 24, 8, training=True, microbatches=8, schedule="gpipe",
                          memories=(600,))
    solution = run_algorithm("auto", problem, Options(time_limit_s=1))
    assert solution.info["iteration_s"] > 0 and calls == []
    with pytest.raises(InfeasibleError) as err:
        run_algorithm("hybrid", problem, Options())
    assert err.value.diagnostics[-1].code == "E712" and calls
