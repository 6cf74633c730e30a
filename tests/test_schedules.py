"""The table of pipeline schedules (`planner.schedules`): each schedule's rules, the names
every reader derives from it, and every schedule of the table through check, solve,
simulate, fmt and the JSON interchange (so that a schedule added to the table alone is
tried end to end)."""

from __future__ import annotations

import json

import pytest

import planner
from planner import schedules
from planner.api.checks import check_problem
from planner.errors import SpecError
from planner.io.interchange import export_spec, parse_json, schema
from planner.io.torch_pipeline import SCHEDULE_CLASSES
from planner.model import SCHEDULES, Pipeline
from planner.pipeline.schedule import run
from planner.spec.format import format_source

GPIPE, ONE_F_ONE_B, INTERLEAVED = (schedules.of(n) for n in ("gpipe", "1f1b", "interleaved"))


def test_each_schedule_states_its_rules() -> None:
    assert [(s.name, s.torch_class) for s in schedules.TABLE] == [
        ("gpipe", "ScheduleGPipe"), ("1f1b", "Schedule1F1B"),
        ("interleaved", "ScheduleInterleaved1F1B")]
    assert (GPIPE.all_in_flight, GPIPE.task_per_stage, GPIPE.virtual_stages,
            GPIPE.stages_at_most_microbatches, GPIPE.torch_limited) == (
        True, True, False, False, False)
    assert GPIPE.fallback is None and GPIPE.deadlock_fallback is None
    assert (ONE_F_ONE_B.all_in_flight, ONE_F_ONE_B.task_per_stage,
            ONE_F_ONE_B.virtual_stages, ONE_F_ONE_B.stages_at_most_microbatches,
            ONE_F_ONE_B.torch_limited) == (False, False, False, True, True)
    assert ONE_F_ONE_B.fallback is None and ONE_F_ONE_B.deadlock_fallback == "gpipe"
    assert (INTERLEAVED.all_in_flight, INTERLEAVED.task_per_stage,
            INTERLEAVED.virtual_stages, INTERLEAVED.stages_at_most_microbatches,
            INTERLEAVED.torch_limited) == (False, True, True, False, True)
    assert INTERLEAVED.fallback == "1f1b" and INTERLEAVED.deadlock_fallback == "gpipe"
    # the fallbacks are schedules of the table
    assert {s.fallback for s in schedules.TABLE} - {None} <= set(schedules.NAMES)
    assert {s.deadlock_fallback for s in schedules.TABLE} - {None} <= set(schedules.NAMES)
    assert [s.per_device(3) for s in schedules.TABLE] == [1, 1, 3]
    assert Pipeline(4, "interleaved", 3).per_device == 3 and Pipeline(4, "gpipe", 3).per_device == 1
    assert Pipeline().schedule == schedules.DEFAULT == "1f1b"


def test_micro_batches_in_flight() -> None:
    # one device a stage, 4 stages, 6 micro-batches: GPipe M, 1F1B min(S - k, M)
    ones = [1, 1, 1, 1]
    assert [GPIPE.in_flight(6, ones, k, True) for k in range(4)] == [6] * 4
    assert [ONE_F_ONE_B.in_flight(6, ones, k, True) for k in range(4)] == [4, 3, 2, 1]
    assert ONE_F_ONE_B.in_flight(2, ones, 0, True) == 2
    assert GPIPE.in_flight(6, ones, 0, False) == ONE_F_ONE_B.in_flight(6, ones, 0, False) == 1
    # replicas: stage 0 on 2 replicas, stage 1 on one (`hybrid`)
    assert ONE_F_ONE_B.in_flight(6, [2, 1], 0, True) == 2
    assert GPIPE.in_flight(6, [2, 1], 0, True) == 3
    # Megatron's interleaved warm-up and the one it starts on: D = 2, K = 2, M = 4
    assert [INTERLEAVED.virtual_in_flight(4, 2, k, 2) for k in (0, 1)] == [5, 3]


def _names(tasks: list[tuple[bool, int, int]]) -> str:
    return " ".join(("F" if f else "B") + (f"{c}." if c else "") + str(m) for f, c, m in tasks)


def test_the_task_orders() -> None:
    assert _names(GPIPE.order(0, 4, 1, 3, True)) == "F0 F1 F2 B0 B1 B2"
    # a device with two stages under gpipe: stage by stage, backward in reverse
    assert _names(GPIPE.order(0, 2, 2, 2, True)) == "F0 F1 F1.0 F1.1 B1.0 B1.1 B0 B1"
    assert _names(GPIPE.by_microbatch().order(0, 2, 1, 3, True)) == "F0 F1 F2 B0 B1 B2"
    assert GPIPE.by_microbatch().name == "gpipe by micro-batch"
    assert not GPIPE.by_microbatch().task_per_stage
    # 1F1B, rank 0 of 4: three forward passes before the first backward
    assert _names(ONE_F_ONE_B.order(0, 4, 1, 4, True)) == "F0 F1 F2 F3 B0 B1 B2 B3"
    assert _names(ONE_F_ONE_B.order(3, 4, 1, 4, True)) == "F0 B0 F1 B1 F2 B2 F3 B3"
    assert _names(ONE_F_ONE_B.order(0, 4, 1, 4, True, warm_up=1)) == (
        "F0 F1 B0 F2 B1 F3 B2 B3")
    # interleaved, D = 2, K = 2, M = 4, rank 1: warm-up (2 - 1 - 1) * 2 + (2 - 1) * 2 = 2
    assert _names(INTERLEAVED.order(1, 2, 2, 4, True)) == (
        "F0 F1 F1.0 B1.0 F1.1 B1.1 F2 B0 F3 B1 F1.2 B1.2 F1.3 B1.3 B2 B3")
    # without a backward pass: the forward tasks alone
    assert _names(ONE_F_ONE_B.order(0, 2, 1, 2, False)) == "F0 F1"


def test_the_estimate_is_m_minus_one_periods_plus_each_stage_once() -> None:
    for s in schedules.TABLE:
        assert s.estimate(8, 2.0, [1.0, 2.0, 1.5]) == 7 * 2.0 + 4.5


def test_every_reader_takes_the_names_from_the_table() -> None:
    assert SCHEDULES == schedules.NAMES == tuple(s.name for s in schedules.TABLE)
    assert schema()["$defs"]["plan"]["properties"]["schedule"]["enum"] == list(schedules.NAMES)
    assert dict(SCHEDULE_CLASSES) == {s.name: s.torch_class for s in schedules.TABLE}
    assert set(schedules.BY_NAME) == set(schedules.NAMES)
    assert schedules.find("nope") is None and schedules.find(["1f1b"]) is None
    assert schedules.find("1f1b") is ONE_F_ONE_B


SPEC = """cluster c {{ device d[0..1] {{ memory 64 GiB }}
  link d[0..1] <-> d[0..1] {{ bandwidth 10 GB/s }} }}
graph g {{
  op f0 {{ time 1 ms; output 1 MB }}
  op f1 {{ time 2 ms; output 1 MB }}
  op f2 {{ time 1 ms; output 1 MB }}
  op f3 {{ time 2 ms; output 1 MB }}
  f0 -> f1
  f1 -> f2
  f2 -> f3
}}
plan p {{ graph g cluster c objective pipeline microbatches 4 schedule {schedule}{more} }}
"""


def _spec(schedule: str, more: str = "") -> str:
    return SPEC.format(schedule=schedule, more=more)


def test_an_unknown_schedule_is_a_located_diagnostic() -> None:
    text = _spec("gpip")
    with pytest.raises(SpecError) as err:
        planner.loads(text, "x.plan")
    (d,) = err.value.diagnostics
    assert d.code == "E256" and d.message == "unknown schedule `gpip`"
    assert d.span is not None and d.span.file == "x.plan"
    line = text.splitlines()[d.span.line - 1]
    assert line[d.span.column - 1:].startswith("gpip")
    assert "one of: " + " | ".join(schedules.NAMES) in d.hints
    # a problem built in Python: E256 at the caller's line
    problem = planner.loads(_spec("gpipe"), "x.plan").plan("p")
    bad = problem.__class__(problem.name, problem.graph, problem.cluster,
                            pipeline=Pipeline(4, "zigzag"))
    with pytest.raises(SpecError) as err:
        check_problem(bad)
    (d,) = err.value.diagnostics
    assert (d.code, d.message) == ("E256", "`pipeline.schedule`: unknown schedule `zigzag`")
    assert d.hints == ("one of: " + ", ".join(schedules.NAMES),)
    assert d.span is not None and d.span.file == __file__


@pytest.mark.parametrize("rules", schedules.TABLE, ids=schedules.NAMES)
def test_every_schedule_of_the_table_checks_solves_simulates_formats_and_round_trips(
        rules: schedules.Schedule) -> None:
    more = " stages_per_device 2" if rules.virtual_stages else ""
    text = _spec(rules.name, more)
    spec = planner.loads(text, "x.plan")
    problem = spec.plan("p")
    assert problem.pipeline is not None and problem.pipeline.schedule_spec is rules
    result = planner.solve(problem, "pipedp")
    placement = result.plan.placement
    ran = run(problem, placement, problem.pipeline)
    assert ran.schedule in (rules.name, rules.fallback) and ran.iteration_s > 0
    formatted = format_source(text, "x.plan")
    assert [line.split() for line in formatted.splitlines() if "schedule" in line] == [
        ["schedule", rules.name]]
    assert planner.loads(formatted, "y.plan").plan("p").pipeline == problem.pipeline
    data = export_spec(spec)
    assert data["plan"]["schedule"] == rules.name
    back = planner.loads(parse_json(json.dumps(data), "x.json").to_spec(), "z.plan")
    assert back.plan().pipeline == problem.pipeline
