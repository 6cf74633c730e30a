"""The pipeline simulator against hand-derived figures (issue 26, item 2).

Chains of S stages, one op per stage (and its backward op), stage k on device k: with no
communication, GPipe and 1F1B both take (M + S - 1)(t_f + t_b); a slow stage sets the
steady state; transfers follow the contention model; 1F1B holds min(S - k, M) activation
sets on stage k, GPipe M, each stage beside them a receive buffer per micro-batch for its
input and its output's gradient.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pipe_support import chain_spec, chain_text
from typer.testing import CliRunner

from planner import algorithms, loads, schedules
from planner.algorithms.base import Options
from planner.cli import app
from planner.model import Pipeline
from planner.pipeline.schedule import run
from planner.pipeline.split import Split, split_of
from planner.pipeline.units import units

MS = 1e-3
MB = 1e6


def _chain_run(problem, pipeline=None):  # type: ignore[no-untyped-def]
    n = units(problem).count
    placement = Split(tuple(range(n + 1)), tuple(range(n))).placement(problem)
    return run(problem, placement, pipeline or problem.pipeline)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize(("stages", "microbatches"), [(2, 1), (3, 4), (4, 8), (4, 3)])
def test_uniform_stages_take_m_plus_s_minus_1_slots(schedule: str, stages: int,
                                                   microbatches: int) -> None:
    p = chain_spec([2.0] * stages, [3.0] * stages, microbatches=microbatches,
                   schedule=schedule)
    r = _chain_run(p)
    assert r.schedule == schedule and r.note == ""
    assert r.iteration_s == pytest.approx((microbatches + stages - 1) * 5 * MS, rel=1e-6)
    assert r.time_per_microbatch_s == pytest.approx(r.iteration_s / microbatches)
    assert r.bubble_fraction == pytest.approx((stages - 1) / (microbatches + stages - 1),
                                              rel=1e-5)
    assert r.period_s == pytest.approx(5 * MS, rel=1e-6)
    assert [s.busy_s for s in r.stages] == pytest.approx([microbatches * 5 * MS] * stages)


def test_inference_pipelines_its_forward_ops() -> None:
    p = chain_spec([2.0, 2.0, 2.0], None, microbatches=5)
    r = _chain_run(p)
    assert r.iteration_s == pytest.approx((5 + 3 - 1) * 2 * MS, rel=1e-6)


def test_a_slow_stage_sets_the_steady_state() -> None:
    fwd, bwd, m = [1.0, 3.0, 1.0, 1.0], [2.0, 6.0, 2.0, 2.0], 6
    p = chain_spec(fwd, bwd, microbatches=m, schedule="gpipe")
    r = _chain_run(p)
    # the forward wave leaves the slow stage every 3 ms, the backward every 6 ms
    expected = sum(fwd) + (m - 1) * 3.0 + sum(bwd) + (m - 1) * 6.0
    assert r.iteration_s == pytest.approx(expected * MS, rel=1e-6)
    assert r.period_s == pytest.approx(9 * MS, rel=1e-6)
    one = _chain_run(p, Pipeline(m, "1f1b"))
    assert m * 9 * MS <= one.iteration_s <= (m * 9 + sum(fwd) + sum(bwd)) * MS


@pytest.mark.parametrize(("contention", "expected_ms", "period_ms"), [
    ("none", (4 + 1) * 2 + 5, 2),  # transfers overlap: the last arrives 5 ms after it is sent
    ("link", 2 + 4 * 5 + 2, 5),    # one link, one transfer at a time: 5 ms each
    ("device", 2 + 4 * 5 + 2, 5),  # each device's one channel: the same on a 2-device chain
])
def test_transfers_follow_the_contention_model(contention: str, expected_ms: float,
                                               period_ms: float) -> None:
    # 5 MB over 1 GB/s: 5 ms per micro-batch, more than a stage's 2 ms
    p = chain_spec([2.0, 2.0], None, microbatches=4, activation="5 MB",
                   bandwidth="1 GB/s", contention=contention)
    r = _chain_run(p)
    assert r.iteration_s == pytest.approx(expected_ms * MS, rel=1e-6)
    # T is the busiest resource: compute (2 ms) overlaps the transfers, which occupy the
    # link (or the devices' channels) 5 ms per micro-batch, and nothing under `none`; the
    # iteration is M periods of the busiest resource plus the fill and drain
    assert r.period_s == pytest.approx(period_ms * MS, rel=1e-6)


@pytest.mark.parametrize(("schedule", "microbatches"), [("1f1b", 8), ("1f1b", 2), ("gpipe", 3)])
def test_activations_in_flight(schedule: str, microbatches: int) -> None:
    stages = 4
    p = chain_spec([1.0] * stages, [2.0] * stages, microbatches=microbatches,
                   schedule=schedule, activation="1 MB")
    r = _chain_run(p)
    for k in range(stages):
        flight = min(stages - k, microbatches) if schedule == "1f1b" else microbatches
        # its own output, and (after the first stage) the activation it received
        per_microbatch = MB * (1 if k == 0 else 2)
        # receive buffers, every micro-batch's: M x (input + output gradient), 1 MB each
        # but the first stage's input and the last's output gradient
        buffers = microbatches * MB * ((k > 0) + (k < stages - 1))
        assert r.memory_bytes[k] == pytest.approx(flight * per_microbatch + buffers), k


def test_a_plan_that_is_not_a_chain_runs_in_gpipe_order_and_says_so() -> None:
    # f0 and f3 on d0, f1 and f2 on d1: d0 needs d1's work of the same micro-batch twice
    p = chain_spec([1.0] * 4, [1.0] * 4, microbatches=4, schedule="1f1b")
    u = units(p)
    split = Split((0, 1, 3, 4), (0, 1, 0))
    placement = split.placement(p)
    assert split_of(p, placement) == split
    r = run(p, placement, p.pipeline)
    assert r.schedule == "gpipe" and "deadlock" in r.note
    assert r.iteration_s < float("inf")
    assert len(r.stages) == 3 and u.count == 4


def test_interleaved_runs_virtual_stages_round_robin() -> None:
    p = chain_spec([1.0] * 4, [2.0] * 4, microbatches=4, schedule="1f1b")
    inter = Pipeline(4, "interleaved", 2)
    placement = Split((0, 1, 2, 3, 4), (0, 1, 0, 1)).placement(p)
    r = run(p, placement, inter)
    assert r.schedule == "interleaved" and r.note == ""
    # each device does 2 stages' work for 4 micro-batches: 24 ms busy
    assert [r.busy_s[0], r.busy_s[1]] == pytest.approx([24 * MS, 24 * MS])
    flat = run(p, Split((0, 2, 4), (0, 1)).placement(p), Pipeline(4, "1f1b"))
    # smaller chunks, a smaller bubble than the same devices with one stage each
    assert r.iteration_s < flat.iteration_s


def _deadlocks(orders: list[list[schedules.Task]], devices: int) -> bool:
    """Whether devices running `orders` (stage c * D + d on device d) ever all wait: a
    forward task waits on the stage before's, a backward task on its forward and the
    stage after's backward."""
    last = devices * max(c for o in orders for _, c, _ in o)  + devices - 1
    done: set[tuple[bool, int, int]] = set()
    at = [0] * devices
    moved = True
    while moved:
        moved = False
        for d, order in enumerate(orders):
            while at[d] < len(order):
                forward, c, m = order[at[d]]
                s = c * devices + d
                ready = (s == 0 or (True, s - 1, m) in done) if forward else (
                    (True, s, m) in done and (s == last or (False, s + 1, m) in done))
                if not ready:
                    break
                done.add((forward, s, m))
                at[d] += 1
                moved = True
    return any(at[d] < len(o) for d, o in enumerate(orders))


def test_interleaved_never_deadlocks_where_torch_runs_it() -> None:
    """Interleaved 1F1B in torch's rounds (`ScheduleInterleaved1F1B`: M // max(1, M // D)
    micro-batches a round) runs every M torch accepts on a chain of virtual stages. Before:
    rounds of D deadlocked wherever D did not divide M (8 micro-batches on 6 devices), and
    the plan ran in GPipe's order, said to be no chain of stages."""
    inter = schedules.of("interleaved")
    for devices in range(2, 9):
        for chunks in (2, 3):
            for mb in range(1, 25):
                if mb % max(1, mb // devices):
                    continue  # torch refuses it (W626 says so)
                orders = [inter.order(k, devices, chunks, mb, True) for k in range(devices)]
                assert not _deadlocks(orders, devices), (devices, chunks, mb)


def test_interleaved_runs_eight_micro_batches_on_six_devices() -> None:
    p = chain_spec([1.0] * 12, [2.0] * 12, microbatches=8, schedule="1f1b")
    placement = Split(tuple(range(13)), tuple(k % 6 for k in range(12))).placement(p)
    r = run(p, placement, Pipeline(8, "interleaved", 2))
    assert r.schedule == "interleaved" and r.note == ""
    # two stages of 3 ms each for 8 micro-batches on each device
    assert r.busy_s[:6] == pytest.approx([48 * MS] * 6)


def test_a_deadlock_of_virtual_stages_says_why() -> None:
    """9 micro-batches on 4 devices, 3 stages each: torch's rounds (2) do not divide them;
    the note says so. Before: `its devices are not a chain of stages`, of a chain."""
    p = chain_spec([1.0] * 12, [2.0] * 12, microbatches=9, schedule="1f1b")
    placement = Split(tuple(range(13)), tuple(k % 4 for k in range(12))).placement(p)
    r = run(p, placement, Pipeline(9, "interleaved", 3))
    assert r.schedule == "gpipe" and r.iteration_s < float("inf")
    assert r.note == ("its 9 micro-batches are not a multiple of interleaved's rounds on 4 "
                      "devices, max(1, 9 // 4) = 2, and interleaved would deadlock: run in "
                      "gpipe's order")


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_one_device_is_its_work_micro_batch_after_micro_batch(schedule: str) -> None:
    p = chain_spec([1.0, 2.0, 3.0], [2.0, 4.0, 6.0], microbatches=5, schedule=schedule)
    placement = Split((0, 3), (1,)).placement(p)
    r = run(p, placement, p.pipeline)
    assert r.iteration_s == pytest.approx(5 * 18 * MS)
    assert r.busy_s[1] == pytest.approx(5 * 18 * MS) and r.busy_s[0] == 0.0
    assert r.bubble_fraction == 0.0 and r.period_s == pytest.approx(18 * MS)
    # the simulator agrees: the same plan on one device, simulated as a two-stage split
    # that happens to use one device (split_of merges them), equals it
    from planner.pipeline.schedule import _simulate

    simulated = _simulate(p, placement, Split((0, 3), (1,)), p.pipeline,
                          schedules.of(schedule))
    assert simulated.makespan_s == pytest.approx(r.iteration_s, rel=1e-12)


def test_gpipe_takes_the_shorter_of_its_two_orders_for_a_plan_that_is_not_a_chain() -> None:
    from planner.pipeline.schedule import _simulate

    p = chain_spec([1.0, 3.0, 1.0, 2.0], [2.0, 1.0, 3.0, 1.0], microbatches=4,
                   schedule="gpipe")
    split = Split((0, 1, 3, 4), (0, 1, 0))
    placement = split.placement(p)
    r = run(p, placement, p.pipeline)
    gpipe = schedules.of("gpipe")
    by_stage = _simulate(p, placement, split, p.pipeline, gpipe).makespan_s
    by_microbatch = _simulate(p, placement, split, p.pipeline, gpipe.by_microbatch()).makespan_s
    assert r.iteration_s == min(by_stage, by_microbatch)
    assert by_stage != by_microbatch  # the two orders differ here: the choice matters
    assert r.schedule == "gpipe"


def test_a_pin_the_uniform_split_breaks_leaves_its_figures_finite() -> None:
    # uniform reads no pins: f0 pinned to d1 runs on d0, 2 x 4 ms there; the report said
    # period T `inf s` and stage 0's load `inf` beside a finite simulated iteration
    text = chain_text(4, 2, training=False, microbatches=4, bandwidth="1000000 GB/s",
                      latency="0 s").replace("objective pipeline", "pin f0 to d1; "
                                                                    "objective pipeline")
    p = loads(text).plan("p")
    assert p.pins
    solution = algorithms.run("uniform", p, Options())
    ran = run(p, solution.plan.placement, p.pipeline)
    assert [s.load_s for s in ran.stages] == pytest.approx([8e-3, 8e-3])
    assert ran.period_s == pytest.approx(8e-3)
    assert math.isfinite(ran.iteration_s)


def test_the_report_names_the_receive_buffers_of_a_training_stage(tmp_path: Path) -> None:
    """`simulate` of a 2-stage training pipeline on 10 MB devices: d1 holds 4 MB kept and 4
    MB received (1 in flight) and 4 x 4 MB buffers of f0's output (24 MB); the words and
    the memory table name the buffers (before: "the rest activations in flight and
    workspace", "activations per micro-batch in flight")."""
    spec = tmp_path / "two.plan"
    spec.write_text(chain_text(2, 2, outputs_mb=[4.0, 4.0], microbatches=4, memory="10 MB")
                    .replace("schedule 1f1b }",
                             "schedule 1f1b; pin f0, f0.bwd to d0; pin f1, f1.bwd to d1 }"),
                    encoding="utf-8")
    res = CliRunner().invoke(app, ["simulate", str(spec)], env={"COLUMNS": "400"})
    out = " ".join(res.output.split())
    assert "the rest activations in flight, receive buffers and workspace" in out, out
    assert ("pipeline memory (params once, activations per micro-batch in flight, a receive "
            "buffer per micro-batch)") in out, out
