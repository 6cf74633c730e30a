"""`auto` under `interleaved` also plans pipedp's split of one stage per device for the
schedule's fallback (1F1B), which the plan runs as 1F1B, and keeps it where it fits and its
simulated iteration under the plan's own schedule is the shortest, saying that it runs as
1f1b; where no interleaved split fits (E707), it keeps it where it fits. Here hybrid's
layout of one stage per device is that split, and since `stage_bytes` counts 1F1B's
micro-batches for a split that runs as 1F1B (it counted the interleaved warm-up's) it fits
and hybrid, tried first, plans it: the same plan, the same iteration."""

from __future__ import annotations

import pytest
from pipe_support import chain_text

from planner import loads
from planner.algorithms import Options
from planner.algorithms import run as run_algorithm
from planner.algorithms.autopipe import ONE_PER_DEVICE
from planner.model import Problem
from planner.pipeline import schedule
from planner.pipeline.split import fits, resource_loads, split_of

INTERLEAVED = "interleaved; stages_per_device 2"


def _plan(memory: str) -> Problem:
    """Six 4 ms layers with 4 MB activations on three devices, 2 stages per device."""
    return loads(chain_text(6, 3, outputs_mb=[4.0] * 6, memory=memory,
                            schedule=INTERLEAVED)).plan("p")


def test_interleaved_auto_keeps_pipedps_one_stage_per_device_split() -> None:
    """Before: auto kept pipedp's interleaved split at 324.82 ms (hybrid's plan, the
    fastest other that fits, the same); pipedp's split of one stage per device for 1F1B
    runs 244.92 ms (GNMT's PipeDream profile on four 2 GiB GPUs at 1 GB/s, 8
    micro-batches: 370.3 ms, now 363.9 ms). 144 MB (48 MB before the receive buffers): the
    best interleaved split (4 stages) held 136 MB, 204 and 208 MB since its sends count
    (torch keeps them to the step's end), so the interleaved split that fits is one device's
    (576 ms); the even 3-stage split for 1F1B holds 56, 88 and 44 MB, the uniform split
    168 MB on d0."""
    p = _plan("144 MB")
    assert p.pipeline is not None
    auto = run_algorithm("auto", p, Options(time_limit_s=5))
    # hybrid's layouts, judged by 1F1B's memory as they run, now find the same split first
    assert auto.info["chosen"] == "hybrid"
    ran = schedule.run(p, auto.plan.placement, p.pipeline)
    assert ran.schedule == "1f1b" and "run as 1f1b" in ran.note
    assert fits(p, ran.memory_bytes)
    assert split_of(p, auto.plan.placement).stages == 3
    assert ran.iteration_s == pytest.approx(0.24492) == auto.info["iteration_s"]
    others = auto.info["candidates"]
    # its interleaved split: 324.82 ms before the sends counted (4 stages: 136 MB, now 208)
    assert others["pipedp, interleaved"] == pytest.approx(0.576)
    assert others["hybrid"] == pytest.approx(0.24492)  # was 324.82 ms: its memory over-counted
    assert others["uniform"] == pytest.approx(0.21764)  # faster, but does not fit
    uniform = run_algorithm("uniform", p, Options(time_limit_s=5)).plan.placement
    assert not fits(p, schedule.run(p, uniform, p.pipeline).memory_bytes)
    assert auto.info["why"] == (
        "hybrid's split (no stage replicated) runs faster by the simulated iteration: "
        "244.920 ms, against 576.000 ms (the fastest of auto's other candidates that fit); "
        "it runs as 1f1b: its stages are not 2 per device in a repeating chain")


def test_interleaved_auto_keeps_it_where_no_interleaved_split_fits() -> None:
    """Before: with 24 MB per device (90 MB now, as the receive buffers count: the even
    3-stage split holds 56, 88 and 44 MB, 24, 24 and 12 without them) no interleaved split
    fits (its warm-up holds more micro-batches than 1F1B's), nor the uniform split, nor one
    recomputing, and auto said E707 (`no contiguous pipeline split ... fits`); pipedp's
    split of one stage per device fits as it runs, as 1F1B, in 244.92 ms."""
    p = _plan("90 MB")
    assert p.pipeline is not None
    auto = run_algorithm("auto", p, Options(time_limit_s=5))
    assert auto.info["candidates"][ONE_PER_DEVICE] == pytest.approx(0.24492)
    # hybrid's split, judged by 1F1B's memory as it runs, is the same and listed first
    assert auto.info["chosen"] == "hybrid"
    ran = schedule.run(p, auto.plan.placement, p.pipeline)
    assert ran.schedule == "1f1b" and fits(p, ran.memory_bytes)
    assert ran.iteration_s == pytest.approx(0.24492) == auto.info["iteration_s"]
    assert auto.info["why"] == (
        "pipedp found no split (no contiguous pipeline split of plan `p` into 2 stages per "
        "device, a chain of devices repeated 2 times, fits the devices' memory); hybrid's "
        "split (no stage replicated) fits; it runs as 1f1b: its stages "
        "are not 2 per device in a repeating chain")


def test_outside_interleaved_auto_plans_no_second_split() -> None:
    """Under 1F1B pipedp's own split is the one for one stage per device: no candidate of
    that name."""
    p = loads(chain_text(6, 3, outputs_mb=[4.0] * 6, memory="144 MB")).plan("p")
    auto = run_algorithm("auto", p, Options(time_limit_s=5))
    assert ONE_PER_DEVICE not in auto.info["candidates"]


def test_interleaved_auto_moves_the_cuts_of_its_one_stage_per_device_split() -> None:
    """Before: under `interleaved` auto's split of one stage per device got no cut moves, and
    auto kept the interleaved split with its cuts moved, 313.65 ms, where auto under 1F1B
    (the same chain, the same devices) moves that split's cuts to one that runs 312.04 ms;
    now auto under `interleaved` moves them too (GNMT's PipeDream profile on four 2 GiB
    GPUs at 1 GB/s: 363.9 -> 357.4 ms)."""
    def chain(schedule: str) -> Problem:
        return loads(chain_text(7, 4, forward_ms=[2.0, 1.0, 4.0, 6.0, 6.0, 4.0, 1.0],
                                outputs_mb=[4.0, 4.0, 1.0, 16.0, 0.5, 1.0, 16.0],
                                bandwidth="1 GB/s", schedule=schedule)).plan("p")

    p, one = chain(INTERLEAVED), chain("1f1b")
    assert p.pipeline is not None
    auto = run_algorithm("auto", p, Options(time_limit_s=2))
    under_1f1b = run_algorithm("auto", one, Options(time_limit_s=2))
    assert auto.info["iteration_s"] <= under_1f1b.info["iteration_s"]
    assert auto.info["iteration_s"] == pytest.approx(0.31204)
    assert auto.info["candidates"]["pipedp, cuts moved"] == pytest.approx(0.31365)
    assert auto.info["chosen"] == ONE_PER_DEVICE
    assert auto.info["cut_moves"].endswith("simulation(s) under 1f1b")
    assert auto.info["why"].startswith(
        "pipedp's split of one stage per device (planned for 1f1b, its cuts moved under it) "
        "runs faster by the simulated iteration: 312.040 ms, against 313.650 ms")
    ran = schedule.run(p, auto.plan.placement, p.pipeline)
    assert ran.schedule == "1f1b" and fits(p, ran.memory_bytes)
    assert ran.iteration_s == auto.info["iteration_s"]
    split = split_of(p, auto.plan.placement)
    assert auto.info["stages"] == split.stages == 4
    assert auto.info["period_s"] == resource_loads(p, split).period_s
