"""A split whose 1F1B order deadlocks runs in GPipe's order, and every memory figure counts
GPipe's micro-batches in flight: the one rule of `split.runs`.

Before: the simulator ran such a split (a device holding two stages that are not
neighbours, a sandwich) in GPipe's order and its report held GPipe's M micro-batches
(98 MiB on gpu0 here), while `split.stage_bytes`, which every algorithm decides that a split
fits by, counted 1F1B's (22 MiB): `pipeilp`'s check called the sandwich a fit of a 40 MiB
cap, and `search` kept a unit move to it, then found at the end that its plan did not fit
as it runs. Since 2026-12-07 a training stage also holds a receive buffer per micro-batch
for its input and its output's gradient (c's: 8 x 4 MiB), so 130 and 54 MiB, and the cap is
64 MiB: the sandwich still fits by 1F1B's count alone, and [a | b c] (gpu1 46 MiB) fits."""

from __future__ import annotations

import math
import random

import pytest
from pipe_support import chain_spec, random_spec

from planner import loads
from planner.algorithms import Options, run
from planner.algorithms.pipeilp.check import evaluate
from planner.model import Pipeline, Problem
from planner.pipeline import schedule
from planner.pipeline.order import deadlocks
from planner.pipeline.schedule import run_planned
from planner.pipeline.split import Split, fits, runs, runs_as, split_of, stage_bytes
from planner.pipeline.units import units

MIB = 2**20

#: three layers on two devices: `b` is ten times `a` and `c`, so that `a` and `c` on one
#: device and `b` on the other (a sandwich, not a chain) has the least period
SANDWICH = """cluster c {
  device gpu[0..1] { memory 64 MiB }
  link gpu[*] <-> gpu[*] { bandwidth 100 GB/s  latency 1 us }
}
graph g {
  op a { time 1 ms  output 4 MiB  params 1 MiB }
  op b { time 10 ms  output 4 MiB  params 1 MiB }
  op c { time 1 ms  output 4 MiB  params 1 MiB }
  op ab { time 2 ms  backward_of a }
  op bb { time 20 ms  backward_of b }
  op cb { time 2 ms  backward_of c }
  a -> b -> c -> cb -> bb -> ab
}
plan p { graph g  cluster c  objective pipeline  microbatches 8  schedule 1f1b }
"""
#: a, b, c on gpu0, gpu1, gpu0
SPLIT = Split((0, 1, 2, 3), (0, 1, 0))


def _sandwich() -> Problem:
    return loads(SANDWICH).plan("p")


def test_the_memory_counted_is_the_memory_of_the_order_run() -> None:
    p = _sandwich()
    assert p.pipeline is not None
    ran = schedule.run(p, SPLIT.placement(p), p.pipeline)
    assert ran.schedule == "gpipe"
    assert ran.note == ("its devices are not a chain of stages, and 1f1b would deadlock: "
                        "run in gpipe's order")
    # gpu0: params 2 MiB, a's and c's outputs and b's received by c, 8 micro-batches, and
    # c's receive buffers for b's output, 8 x 4 MiB (the gradients a's and c's outputs
    # receive are 0 bytes: the backward ops declare no output)
    assert ran.memory_bytes[0] == (2 + 8 * 12 + 8 * 4) * MIB
    assert stage_bytes(p, SPLIT, p.pipeline) == list(ran.memory_bytes)
    assert runs(p, SPLIT, p.pipeline).schedule == "gpipe"
    assert not fits(p, stage_bytes(p, SPLIT, p.pipeline))


def test_pipeilps_check_says_the_sandwich_does_not_fit() -> None:
    """pipeilp's exact check of a placement (its warm starts', its answer's) by
    `stage_bytes`: its held bytes are the run's, recomputation included."""
    p = _sandwich()
    assert p.pipeline is not None
    checked = evaluate(p, SPLIT.placement(p))
    assert not checked.fits
    names = [p.cluster.devices[d].name for d in checked.recompute]
    ran = run_planned(p, SPLIT.placement(p), p.pipeline, {"recompute": names})
    assert list(checked.held_bytes) == list(ran.memory_bytes)
    assert not fits(p, ran.memory_bytes)


def test_searchs_moves_judge_memory_as_the_plan_runs() -> None:
    """Before: `1 of 4291 moves kept (budget 4291); the moves' plan does not fit as it runs
    (under gpipe): the cut moves' plan kept` (the move to the sandwich, judged by 1F1B's
    memory)."""
    p = _sandwich()
    found = run("search", p, Options(time_limit_s=1))
    assert "does not fit as it runs" not in found.info["search"]
    assert found.info["search"].startswith("0 of ")
    assert p.pipeline is not None
    assert fits(p, schedule.run(p, found.plan.placement, p.pipeline).memory_bytes)


#: a chain whose first op is colocated with its fourth (tests/compare): units whose edges
#: run against the pipeline, on a chain of devices
TIED = ("cluster c { device gpu[0..2] { memory 1 GiB }\n"
        "  link gpu[*] <-> gpu[*] { bandwidth 10 GB/s  latency 5 us } }\ngraph g {\n"
        + "".join(f"  op {n} {{ time {t} ms  output 1 MiB }}\n"
                  f"  op {n}b {{ time {2 * t} ms  backward_of {n} }}\n"
                  for n, t in {"a": 1, "b": 3, "c": 3, "d": 1, "e": 1}.items())
        + "  a -> b -> c -> d -> e -> eb -> db -> cb -> bb -> ab\n  colocate a, d\n}\n"
        "plan p { graph g  cluster c  objective pipeline  microbatches 4  schedule 1f1b }\n")


def _cases() -> list[tuple[Problem, Split, Pipeline]]:
    """Random splits of random graphs (chains of devices and not), under 1F1B and
    interleaved, the colocated chain's splits, and virtual stages in rounds that do not
    divide the micro-batches."""
    rng = random.Random(7)
    out = []
    for seed in range(24):
        p = random_spec(seed, 8, 3, training=True, microbatches=rng.choice([1, 2, 4, 9]))
        assert p.pipeline is not None
        count = units(p).count
        for _ in range(4):
            s = rng.randint(2, min(6, count))
            devices = tuple(rng.randrange(3) for _ in range(s))
            split = split_of(p, Split((0, *sorted(rng.sample(range(1, count), s - 1)), count),
                                      devices).placement(p))  # neighbours on one device: one
            pipe = p.pipeline if seed % 2 else Pipeline(p.pipeline.microbatches,
                                                         "interleaved", 2)
            out.append((p, split, pipe))
    tied = loads(TIED).plan("p")
    assert tied.pipeline is not None
    for bounds in ((0, 1, 2, 4), (0, 2, 3, 4), (0, 1, 3, 4)):
        out.append((tied, Split(bounds, (0, 1, 2)), tied.pipeline))
    chain = chain_spec([1.0] * 12, [2.0] * 12, microbatches=9)
    for per_device in (2, 3):  # rounds of 2 do not divide 9: 3 deadlock, 2 do not
        out.append((chain, Split((*range(4 * per_device), 12),
                                 tuple(k % 4 for k in range(4 * per_device))),
                    Pipeline(9, "interleaved", per_device)))
    return out


@pytest.mark.parametrize("case", range(len(_cases())))
def test_the_deadlock_verdict_is_the_simulators(case: int) -> None:
    """`order.deadlocks` (no simulation) says what the simulator finds: ops that never
    start under the order of the schedule the split runs as."""
    p, split, pipe = _cases()[case]
    pipe = runs_as(split, pipe)
    simulated = schedule._simulate(p, split.placement(p), split, pipe, pipe.schedule_spec)
    assert deadlocks(p, split, pipe) == (not math.isfinite(simulated.makespan_s))
    ran = schedule.run(p, split.placement(p), pipe)
    assert stage_bytes(p, split, pipe) == list(ran.memory_bytes)
