"""Hybrid data x pipeline parallelism (issue 39): replicated stages, their simulation, their
memory, and the DP that chooses them (`planner.pipeline.hybrid`, `planner.algorithms.pipehybrid`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pipe_support import run_doc_commands, tight_text, two_device_text

from planner import loads
from planner.algorithms import Options, pipehybrid
from planner.algorithms import run as run_algorithm
from planner.cost import allreduce_time, costs
from planner.errors import InfeasibleError, UsageError
from planner.model import Problem, Tie
from planner.pipeline import hybrid, schedule
from planner.pipeline.split import Split, fits, stage_bytes
from planner.pipeline.verdict import pipeline_breaks
from planner.plan import Plan
from planner.simulate import simulate

ROOT = Path(__file__).resolve().parents[2]


def _spec(forward_ms: list[float], backward_ms: list[float], params_mb: list[float], *,
          devices: int, microbatches: int, schedule_name: str = "1f1b",
          bandwidth: str = "1 GB/s", latency: str = "0 s", activation: str = "1 MB",
          speeds: list[float] | None = None, pins: str = "", memory: str = "64 GiB",
          data_parallel: str = "auto") -> Problem:
    """A chain of layers `f0 -> f1 -> ...` with backward ops and params, on `devices`
    devices joined all to all; `data_parallel` set on the problem (not in the text)."""
    speeds = speeds or [1.0] * devices
    lines = ["cluster c {"]
    lines += [f"  device d{k} {{ memory {memory}; speed {s} }}" for k, s in enumerate(speeds)]
    lines.append(f"  link d[0..{devices - 1}] <-> d[0..{devices - 1}] {{ bandwidth {bandwidth} "
                 f"latency {latency} }}")
    lines += ["}", "graph g {"]
    for k, (f, b, mb) in enumerate(zip(forward_ms, backward_ms, params_mb, strict=True)):
        lines.append(f"  op f{k} {{ time {f} ms; params {mb} MB; output {activation} }}")
        lines.append(f"  op f{k}.bwd {{ time {b} ms; backward_of f{k} }}")
        lines.append(f"  f{k} -> f{k}.bwd")
        lines.append(f"  colocate f{k}, f{k}.bwd")
    for k in range(len(forward_ms) - 1):
        lines.append(f"  f{k} -> f{k + 1}")
        lines.append(f"  f{k + 1}.bwd -> f{k}.bwd {{ bytes {activation} }}")
    lines += ["}", f"plan p {{ graph g; cluster c; objective pipeline; microbatches "
              f"{microbatches}; schedule {schedule_name}", pins, "}"]
    p = loads("\n".join(lines)).plan("p")
    assert p.pipeline is not None
    dp: int | str = data_parallel if data_parallel == "auto" else int(data_parallel)
    return dataclasses.replace(p, pipeline=dataclasses.replace(p.pipeline, data_parallel=dp))


def _run(p: Problem, lay: pipehybrid.Layout) -> schedule.PipelineRun:
    assert p.pipeline is not None
    return schedule.run(p, lay.split.placement(p), p.pipeline, (), lay.replicas)


def test_one_stage_on_two_replicas_by_hand() -> None:
    # one layer, 10 ms forward and 20 ms backward, 1 MB of params; 2 micro-batches on two
    # replicas: each runs one (30 ms), then the 1 MB gradient's ring all-reduce at 1 GB/s
    # (2 (r - 1) / r * bytes / bandwidth = 1 ms)
    p = _spec([10], [20], [1], devices=2, microbatches=2)
    lay = pipehybrid.Layout((0, 1), ((0, 1),))
    ran = _run(p, lay)
    assert ran.allreduce_s == pytest.approx(1e-3)
    assert ran.iteration_s == pytest.approx(0.031)
    assert ran.stages[0].devices == (0, 1) and ran.stages[0].allreduce_s == pytest.approx(1e-3)
    assert ran.throughput == pytest.approx(2 / 0.031)
    # each micro-batch ran on its replica, m mod 2
    assert {(t.microbatch, t.device) for t in ran.tasks} == {(0, 0), (1, 1)}
    # on one device: 2 x 30 ms, no all-reduce
    alone = schedule.run(p, (0, 0), p.pipeline)
    assert alone.iteration_s == pytest.approx(0.060) and alone.allreduce_s == 0.0


def test_the_dp_replicates_only_when_the_all_reduce_pays() -> None:
    cheap = _spec([10], [20], [1], devices=2, microbatches=2)
    dear = _spec([10], [20], [100], devices=2, microbatches=2)  # all-reduce 100 ms
    assert run_algorithm("hybrid", cheap, Options()).info["layout"] == [2]
    solution = run_algorithm("hybrid", dear, Options())
    assert solution.info["layout"] == [1]
    assert solution.info["iteration_s"] == pytest.approx(0.060)


def test_gradients_all_reduce_in_ddp_buckets_as_the_backward_pass_makes_them() -> None:
    # three layers of 20 MB each (DDP's buckets hold 25 MiB): the backward pass makes f2's
    # gradient first; buckets [f2, f1] (40 MB, full past 25 MiB) then [f0] (20 MB)
    p = _spec([1, 1, 1], [2, 2, 2], [20, 20, 20], devices=2, microbatches=2)
    ops = list(range(len(p.graph.ops)))
    buckets = hybrid.gradient_buckets(p, ops)
    names = [[p.graph.ops[i].name for i in b] for b, _ in buckets]
    assert names == [["f2.bwd", "f1.bwd"], ["f0.bwd"]]
    assert [size for _, size in buckets] == [40e6, 20e6]
    lay = pipehybrid.Layout((0, 3), ((0, 1),))
    ran = _run(p, lay)
    # one micro-batch per replica: the first bucket is ready when f1.bwd ends (3 x 1 ms +
    # 2 x 2 ms) and all-reduces while f0.bwd runs; the second follows it (one stream)
    c = costs(p)
    each = [allreduce_time(c, size, (0, 1)) for _, size in buckets]
    assert each == pytest.approx([0.040, 0.020])
    assert ran.allreduce_s == pytest.approx(sum(each))
    assert ran.iteration_s == pytest.approx(0.007 + each[0] + each[1], rel=1e-9)


def test_a_replica_holds_its_micro_batches_in_flight_and_one_bucket() -> None:
    # stages [f0 f1] x 2 replicas, [f2] x 1: under 1F1B the first stage's replicas hold
    # ceil(3 / 2) = 2 micro-batches each (of 6), the last 1; in training each also keeps a
    # receive buffer per micro-batch of its share ceil(6 / 2) = 3 (of 6 unreplicated)
    p = _spec([1, 1, 1], [2, 2, 2], [10, 10, 10], devices=3, microbatches=6)
    assert p.pipeline is not None
    split = Split((0, 2, 3), (0, 2))
    replicas = {0: (0, 1)}
    assert [hybrid.in_flight(p.pipeline, [2, 1], k, True) for k in (0, 1)] == [2, 1]
    held = stage_bytes(p, split, p.pipeline, (), replicas)
    pure = stage_bytes(p, split, p.pipeline)  # stage 0 holds min(2 - 0, 6) = 2 as well
    # + a 20 MB bucket, and 3 where the pure stage keeps 6 buffers of its output's 1 MB
    # gradient (the first stage receives no input)
    assert held[0] == held[1] == pytest.approx(pure[0] + 20e6 - (6 - 3) * 1e6)
    assert held[2] == pytest.approx(pure[2])  # 6 x its 1 MB input, as unreplicated
    gpipe = dataclasses.replace(p.pipeline, schedule="gpipe")
    assert hybrid.in_flight(gpipe, [2, 1], 0, True) == 3  # its share of 6


def _layouts(n: int, m: int, mb: int) -> list[pipehybrid.Layout]:
    """Every layout of n units on at most m devices: contiguous stages, r <= M replicas."""
    out = []
    for s in range(1, n + 1):
        for cuts in itertools.combinations(range(1, n), s - 1):
            bounds = (0, *cuts, n)
            for sizes in itertools.product(range(1, min(m, mb) + 1), repeat=s):
                if sum(sizes) > m:
                    continue
                start = itertools.accumulate((0, *sizes))
                firsts = list(start)
                groups = tuple(tuple(range(firsts[k], firsts[k] + sizes[k])) for k in range(s))
                out.append(pipehybrid.Layout(bounds, groups))
    return out


def test_the_dp_counts_the_round_trips_a_stage_ahead_of_replicas_waits_for() -> None:
    # d0 runs f0..f2 (36 ms a micro-batch, forward and backward), d1 and d2 replicas of
    # f3, f4 (75 ms). Under 1F1B d0 holds ceil(3 / 1) = 3 of the 4 micro-batches, so the
    # 4th starts once the 1st came back: two round trips of 36 + 75 ms and the transfers,
    # 226 ms simulated. The DP said 194 ms (d0's 4 x 36 ms and the way back), and chose
    # this layout over f0..f3 on d0, d1 and f4 on d2, which simulates at 203 ms; it now
    # counts the round trips, d0 having no stage before it to come back through: 226 ms.
    p = _spec([5, 2, 5, 20, 5], [10, 4, 10, 40, 10], [0.5, 5, 5, 0.5, 5], devices=3,
              microbatches=4)
    assert p.pipeline is not None
    ahead = pipehybrid.Layout((0, 3, 5), ((0,), (1, 2)))
    assert _run(p, ahead).iteration_s == pytest.approx(0.226)
    assert pipehybrid.layout_cost(p, p.pipeline, ahead) == pytest.approx(0.226)
    solution = run_algorithm("hybrid", p, Options())
    assert solution.info["layout"] == [2, 1]
    assert solution.info["iteration_s"] == pytest.approx(0.203)


def test_the_round_trips_come_back_through_the_stages_before_not_after() -> None:
    # f0 (1 + 2 ms) on d0, f1 (10 + 20 ms) and f2 (5 + 10 ms) on replicas d1, d2; 4
    # micro-batches under 1F1B. d0 holds 3 in flight, so its 4th starts once its 1st came
    # back: 2 round trips of 3 ms, 2 ms of transfers and the 45 ms after it, 100 ms, as
    # simulated. The old term added the backward after f0 (30 ms) once more, already in
    # the round trip, where the way back is the backward before f0 (none): 130 ms, above
    # f0, f1 on d0, d1 and f2 on d2 (126.5 ms by the DP, 145.5 simulated); hybrid chose
    # one device a stage, 132 ms.
    p = _spec([1, 10, 5], [2, 20, 10], [50, 0.5, 0.5], devices=3, microbatches=4)
    assert p.pipeline is not None
    ahead = pipehybrid.Layout((0, 1, 3), ((0,), (1, 2)))
    assert _run(p, ahead).iteration_s == pytest.approx(0.100)
    assert pipehybrid.layout_cost(p, p.pipeline, ahead) == pytest.approx(0.100)
    chain = pipehybrid.Layout((0, 1, 2, 3), ((0,), (1,), (2,)))
    assert _run(p, chain).iteration_s == pytest.approx(0.132)
    solution = run_algorithm("hybrid", p, Options())
    assert solution.info["layout"] == [1, 2]
    assert solution.plan.placement == ahead.split.placement(p)
    assert solution.info["iteration_s"] == pytest.approx(0.100)


@pytest.mark.parametrize("seed", range(12))
def test_the_dp_is_exact_for_its_cost_per_count_of_devices(seed: int) -> None:
    rng = random.Random(seed)
    n, m = rng.randint(2, 5), rng.randint(2, 4)
    p = _spec([rng.uniform(1, 20) for _ in range(n)], [rng.uniform(1, 40) for _ in range(n)],
              [rng.choice([0.5, 5, 50]) for _ in range(n)], devices=m,
              microbatches=rng.choice([2, 4, 8]), activation=rng.choice(["1 MB", "20 MB"]))
    assert p.pipeline is not None
    brute: dict[int, float] = {}
    for lay in _layouts(n, m, p.pipeline.microbatches):
        used = sum(map(len, lay.groups))
        brute[used] = min(brute.get(used, math.inf), pipehybrid.layout_cost(p, p.pipeline, lay))
    found = {sum(map(len, lay.groups)): pipehybrid.layout_cost(p, p.pipeline, lay)
             for lay in pipehybrid._dp(p, p.pipeline)}
    assert found.keys() == {k for k, v in brute.items() if v < math.inf}
    for used, cost in found.items():
        assert cost == pytest.approx(brute[used], rel=1e-12), used


@pytest.mark.parametrize("seed", range(8))
def test_auto_with_data_parallel_auto_never_loses_to_the_pure_pipeline(seed: int) -> None:
    rng = random.Random(100 + seed)
    n, m = rng.randint(3, 7), rng.randint(2, 4)
    p = _spec([rng.uniform(1, 20) for _ in range(n)], [rng.uniform(1, 40) for _ in range(n)],
              [rng.choice([0.5, 5, 50]) for _ in range(n)], devices=m,
              microbatches=rng.choice([4, 8]), bandwidth=rng.choice(["1 GB/s", "10 GB/s"]))
    assert p.pipeline is not None
    pure = dataclasses.replace(p, pipeline=dataclasses.replace(p.pipeline, data_parallel=1))
    mixed = run_algorithm("auto", p, Options(time_limit_s=5))
    alone = run_algorithm("auto", pure, Options(time_limit_s=5))
    ran = schedule.run_planned(p, mixed.plan.placement, p.pipeline, mixed.info)
    assert ran.iteration_s == pytest.approx(mixed.info["iteration_s"])
    assert ran.iteration_s <= alone.info["iteration_s"] * (1 + 1e-9)
    groups = hybrid.replica_groups(p, mixed.info)
    assert all(len(s.devices) == len(hybrid.group(groups, s.device)) for s in ran.stages)


def _iteration(p: Problem, algo: str) -> float:
    solved = run_algorithm(algo, p, Options(time_limit_s=5))
    assert p.pipeline is not None
    return schedule.run_planned(p, solved.plan.placement, p.pipeline, solved.info).iteration_s


@pytest.mark.parametrize("data_parallel", ["1", "auto"])
def test_hybrid_never_loses_to_pipedps_pure_pipeline(data_parallel: str) -> None:
    """Before: `--algo hybrid` took the devices in the cluster's order only, so with the
    last layer pinned to the last device it ran a pure pipeline through all four (242 ms
    under `data_parallel 1`) where pipedp's two devices ran in 96 ms; its plan is now never
    slower than pipedp's, a layout of one device per stage."""
    p = _spec([2, 2, 2, 2], [4, 4, 4, 4], [1, 1, 1, 1], devices=4, microbatches=4,
              activation="200 MB", bandwidth="10 GB/s", pins="pin f3 to d3",
              data_parallel=data_parallel)
    pure, mixed = _iteration(p, "pipedp"), _iteration(p, "hybrid")
    assert pure == pytest.approx(0.096)
    assert mixed == pytest.approx(0.096 if data_parallel == "1" else 0.0844)
    for seed in range(4):
        rng = random.Random(300 + seed)
        n, m = rng.randint(3, 7), rng.randint(2, 4)
        q = _spec([rng.uniform(1, 20) for _ in range(n)],
                  [rng.uniform(1, 40) for _ in range(n)],
                  [rng.choice([0.5, 5, 50]) for _ in range(n)], devices=m,
                  microbatches=rng.choice([4, 8]), activation=rng.choice(["1 MB", "50 MB"]),
                  bandwidth=rng.choice(["1 GB/s", "10 GB/s"]), data_parallel=data_parallel,
                  pins=f"pin f{n - 1} to d{m - 1}")
        assert _iteration(q, "hybrid") <= _iteration(q, "pipedp") * (1 + 1e-9), seed


def test_hybrid_plans_pipedps_split_where_its_own_layouts_do_not_fit() -> None:
    """Before: under `interleaved` (two stages per device), where only pipedp's interleaved
    split fits, `--algo hybrid` said E712 (no layout fits, exit 3) and pipedp planned a
    192 ms iteration (AlexNet's PipeDream profile, 8 GPUs of 2.36 GiB: E712 where pipedp
    ran 261.3 ms); the docs say hybrid is never slower than pipedp. Then hybrid planned
    pipedp's split; its own layouts run as 1F1B (not two stages per device in a chain) and
    were judged by the interleaved warm-up's micro-batches: now by 1F1B's, as they run,
    and its two stages fit (44 and 70 MB of 72; 40 and 30 MB before the receive buffers
    of 2026-12-07, when the devices had 60 MB) and run 122.2 ms."""
    p = loads(two_device_text("72 MB", [10, 10, 10, 10], "microbatches 4; "
                              "schedule interleaved; stages_per_device 2")).plan("p")
    assert p.pipeline is not None
    held = []
    for lay in pipehybrid.candidates(p, p.pipeline):  # each fits as it runs
        ran = schedule.run(p, lay.split.placement(p), p.pipeline, (), lay.replicas)
        assert ran.schedule == "1f1b" and fits(p, ran.memory_bytes)
        held.append(ran.memory_bytes)
    # [f0 f1] | [f2 f3]: 2 x 20 MB and 1 x (10 + 20) MB of micro-batches in flight, and a
    # receive buffer per micro-batch: 4 x f1's 1 MB gradient, 4 x f1's 10 MB output
    assert [pytest.approx([40e6 + 4 * 1e6, 30e6 + 4 * 10e6])] == [
        list(m) for m in held if min(m) > 0]
    assert _iteration(p, "hybrid") == pytest.approx(0.12224)
    # pipedp's interleaved split ran 0.192 s; it now keeps its split for 1F1B, as fast
    assert _iteration(p, "pipedp") == pytest.approx(0.12224)


def test_e712_under_data_parallel_n_says_that_every_stage_is_replicated() -> None:
    """Before: 'no hybrid layout ... (stages on consecutive devices in the cluster's order,
    replicated or not) fits', under `data_parallel 2`, where only layouts of two replicas
    a stage were tried and `data_parallel auto` fits four stages of one device."""
    # 0.5 MB activations (1 MB before 2026-12-07's receive buffers): a device a stage holds
    # 4, 5, 4, 3 MB + receive buffers 4 x (input + output gradient) = 2, 4, 4, 2 MB, all
    # within 10 MB; two stages of two replicas each 10.5 to 11 MB
    p = _spec([5, 5, 5, 5], [10, 10, 10, 10], [2, 2, 2, 2], devices=4, microbatches=4,
              memory="10 MB", activation="0.5 MB", data_parallel="2")
    with pytest.raises(InfeasibleError) as caught:
        run_algorithm("hybrid", p, Options(time_limit_s=5))
    d = caught.value.diagnostics[0]
    assert d.code == "E712" and "replicated or not" not in d.message
    assert "each on 2 replicas, as `data_parallel 2` asks" in d.message
    # checked (test_e712_data_parallel.py): one pipeline of a device a stage fits
    assert "`data_parallel 1` fits: a layout of 4 stage(s), one device each" in d.hints[0]
    auto = _spec([5, 5, 5, 5], [10, 10, 10, 10], [2, 2, 2, 2], devices=4, microbatches=4,
                 memory="10 MB", activation="0.5 MB", data_parallel="auto")
    assert run_algorithm("hybrid", auto, Options(time_limit_s=5)).info["layout"] == [1] * 4


def test_data_parallel_n_replicates_every_stage_n_times() -> None:
    p = _spec([5, 6, 7, 8], [10, 12, 14, 16], [1, 1, 1, 1], devices=4, microbatches=8,
              data_parallel="2")
    solution = run_algorithm("auto", p, Options(time_limit_s=5))
    assert solution.info["chosen"] == "hybrid"
    assert set(solution.info["layout"]) == {2}
    ran = schedule.run_planned(p, solution.plan.placement, p.pipeline, solution.info)
    assert all(len(s.devices) == 2 for s in ran.stages)
    assert len({d for s in ran.stages for d in s.devices}) == 2 * len(ran.stages)


def test_a_pinned_layer_is_never_replicated() -> None:
    p = _spec([10, 10], [20, 20], [0.1, 0.1], devices=4, microbatches=8,
              pins="  pin f0 to d0\n  pin f0.bwd to d0")
    solution = run_algorithm("hybrid", p, Options())
    ran = schedule.run_planned(p, solution.plan.placement, p.pipeline, solution.info)
    first = next(s for s in ran.stages if 0 in s.ops)
    assert first.devices == (0,)
    # without the pin both layers would take every device as one replicated stage
    free = _spec([10, 10], [20, 20], [0.1, 0.1], devices=4, microbatches=8)
    assert run_algorithm("hybrid", free, Options()).info["layout"] == [4]


def test_a_layout_that_replicates_a_pinned_layer_breaks_its_pin(tmp_path: Path) -> None:
    """Before: `simulate --stages` (and the API, compare) judged feasible a layout whose
    pinned layer ran on a replica too, a layout `hybrid` never plans."""
    from typer.testing import CliRunner

    from planner.cli import app
    from planner.pipeline.verdict import replicated_pins

    spec = tmp_path / "pinned.plan"
    spec.write_text(
        "cluster c { device d[0..3] { memory 1 GiB }  link d[0..3] <-> d[0..3] "
        "{ bandwidth 1 GB/s } }\ngraph g {\n"
        + "".join(f"  op {n} {{ time 4 ms  params 1 MB  output 1 MB }}\n"
                  f"  op {n}.bwd {{ time 8 ms  backward_of {n} }}\n" for n in "ab")
        + "  a -> b -> b.bwd -> a.bwd\n}\nplan p { graph g  cluster c  objective pipeline  "
        "microbatches 4  data_parallel auto  pin a to d0 }\n")
    stages = tmp_path / "stages.json"
    layout = [{"ops": ["a", "a.bwd"], "devices": ["d0", "d1"]},
              {"ops": ["b", "b.bwd"], "devices": ["d2", "d3"]}]
    stages.write_text(json.dumps(layout))
    done = CliRunner().invoke(app, ["simulate", str(spec), "--stages", str(stages)])
    assert done.exit_code == 3, done.output
    assert "pin: op `a` is pinned to `d0`, and its stage is replicated on `d1`" in done.stderr
    # the rule every command's pipeline verdict reads (the API's `breaks` included)
    p = loads(spec.read_text()).plan("p")
    assert p.pipeline is not None
    placement = [0, 0, 2, 2]  # a, a.bwd on d0; b, b.bwd on d2
    ran = schedule.run(p, placement, p.pipeline, (), {0: (0, 1), 2: (2, 3)})
    (broken,) = replicated_pins(p, ran)
    assert broken.kind == "pin" and broken.devices == (0, 1)
    assert any(b.startswith("pin: op `a`") for b in pipeline_breaks(
        p, simulate(p, Plan(tuple(placement))), ran))
    # the pinned layer alone, unreplicated: no pin broken
    layout[0]["devices"] = ["d0"]
    stages.write_text(json.dumps(layout))
    assert CliRunner().invoke(app, ["simulate", str(spec), "--stages",
                                    str(stages)]).exit_code == 0


def test_a_slow_replica_paces_its_stage() -> None:
    # the DP's cost of a stage is its slowest replica's: d1 at half speed
    p = _spec([10], [20], [0.001], devices=2, microbatches=2, speeds=[1.0, 0.5])
    assert p.pipeline is not None
    two = pipehybrid.Layout((0, 1), ((0, 1),))
    one = pipehybrid.Layout((0, 1), ((0,),))
    assert pipehybrid.layout_cost(p, p.pipeline, two) == pytest.approx(0.060, rel=1e-3)
    assert pipehybrid.layout_cost(p, p.pipeline, one) == pytest.approx(0.060)
    # and the simulator agrees: the slow replica's micro-batch takes 60 ms
    assert _run(p, two).iteration_s == pytest.approx(0.060, rel=1e-3)


def test_every_replica_of_a_recomputing_stage_recomputes() -> None:
    """Before: only the stage's own device ran its forward again in backward, its replica
    did not (30 ms where 40 ms run; with the replica at half speed, the iteration read
    60 ms where 80 ms run), while the memory and the exported script recompute on both."""
    p = _spec([10], [20], [0.001], devices=2, microbatches=2)
    assert p.pipeline is not None
    groups = {0: (0, 1)}
    ran = schedule.run(p, (0, 0), p.pipeline, (0,), groups)
    spans = {(t.device, t.forward): t.end_s - t.start_s for t in ran.tasks}
    assert spans[(0, False)] == pytest.approx(0.030) == spans[(1, False)]
    assert spans[(0, True)] == pytest.approx(0.010) == spans[(1, True)]
    slow = _spec([10], [20], [0.001], devices=2, microbatches=2, speeds=[1.0, 0.5])
    assert slow.pipeline is not None
    ran = schedule.run(slow, (0, 0), slow.pipeline, (0,), groups)
    assert ran.iteration_s == pytest.approx(0.080, rel=1e-3)
    # and its period charges the slow replica its recomputation: (10 + 20 + 10) ms at half
    # speed for each of its half of the micro-batches (before: 30 ms, without it)
    assert ran.period_s == pytest.approx(0.040)


def _iteration_ms(spec: Path, plan: str, cwd: Path, *algo: str
                  ) -> tuple[float, dict[str, object]]:
    done = subprocess.run([sys.executable, "-m", "planner", "solve", str(spec), "--plan", plan,
                           "--json", *algo], cwd=cwd, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    pipeline = json.loads(done.stdout)["result"]["pipeline"]
    return round(pipeline["iteration_s"] * 1e3, 1), pipeline


@pytest.mark.slow
def test_the_readmes_hybrid_example_runs_as_written_and_says_what_it_gives(
        tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n### Hybrid parallelism\n", 1)[1].split("\n## ", 1)[0]
    proc = run_doc_commands("README.md", "\n### Hybrid parallelism\n", tmp_path)
    assert "(+7 replicas" in proc.stdout and "samples/s" in proc.stdout
    # the figures the prose quotes: the hybrid plan, the pure pipeline, two pipelines
    spec = tmp_path / "gpt24n.plan"
    with spec.open("a") as f:
        for name, dp in (("pure", 1), ("two", 2)):
            f.write(f"plan gpt24_{name} {{\n  graph gpt24\n  cluster two-nodes\n  objective "
                    f"pipeline\n  microbatches 8\n  schedule 1f1b\n  data_parallel {dp}\n}}\n")
    shown = {name: _ms(proc.stdout, pattern) for name, pattern in (
        ("iteration", r"iteration \(simulated\)\s+([0-9.]+ m?s)"),
        ("allreduce", r"all-reduce\s+([0-9.]+ m?s) per iteration"))}
    throughput = float(re.search(r"throughput\s+([0-9.]+) samples/s", proc.stdout)[1])
    # (pipedp: auto's cut moves stop at the wall clock on a loaded machine)
    pure_ms, _ = _iteration_ms(spec, "gpt24_pure", tmp_path, "--algo", "pipedp")
    two_ms, two = _iteration_ms(spec, "gpt24_two", tmp_path)
    said = re.sub(r"\s+", " ", section)
    assert f"(`data_parallel 1`, `--algo pipedp`) iterates in {pure_ms} ms" in said
    hybrid_ms = shown["iteration"]
    assert f"iterate in {hybrid_ms} ms, {pure_ms / hybrid_ms:.2f}x faster" in said
    assert f"({throughput:.1f} samples per second)" in said
    assert f"then {shown['allreduce']} ms of all-reduce" in said
    assert f"(`data_parallel 2`) take {two_ms} ms" in said
    assert {len(s["devices"]) for s in two["stages"]} == {2}  # type: ignore[index]


def _ms(text: str, pattern: str) -> float:
    """The figure `pattern` finds in a terminal report, in ms to 0.1."""
    number, unit = re.search(pattern, text)[1].split()  # type: ignore[index]
    return round(float(number) * (1e3 if unit == "s" else 1.0), 1)


def test_the_report_and_the_timeline_show_every_replica() -> None:
    from planner.render.pipeline import pipeline_json
    from planner.render.pipeline_html import timeline_svg
    from planner.report.pipeline import pipeline_view

    p = _spec([10, 10], [20, 20], [0.1, 0.1], devices=3, microbatches=4)
    lay = pipehybrid.Layout((0, 1, 2), ((0, 1), (2,)))
    names = hybrid.replica_names(p, lay.replicas)
    assert names == {"d0": ["d0", "d1"]}
    view = pipeline_view(p, lay.split.placement(p), "hybrid", 0.0, (), "", names)
    ran = view.rows[-1].run
    assert ran.iteration_s == _run(p, lay).iteration_s
    stages = pipeline_json(p, view.rows, view.bound)["stages"]
    assert [s["devices"] for s in stages] == [["d0", "d1"], ["d2"]]
    assert [s["replicas"] for s in stages] == [2, 1]
    svg = timeline_svg(p, ran)
    for name in ("d0", "d1", "d2"):  # a lane per device that ran tasks, replicas included
        assert f">{name} <tspan" in svg
    assert {t.device for t in ran.tasks if t.stage == 0} == {0, 1}


def test_pipeilp_plans_n_identical_pipelines_as_one_and_says_it_proves_nothing_more() -> None:
    pytest.importorskip("pyomo")
    p = _spec([5, 6, 7, 8], [10, 12, 14, 16], [1, 1, 1, 1], devices=4, microbatches=8,
              data_parallel="2")
    solution = run_algorithm("pipeilp", p, Options(time_limit_s=20))
    assert solution.status == "feasible"  # the all-reduce is outside its model
    # and its words say so (before: 'the period meets a valid lower bound' beside it)
    assert solution.info["why"].startswith("for one of the 2 pipelines alone")
    assert solution.info["why"].endswith("so its proof makes no plan `optimal` (its period "
                                         "meeting the bound does)")
    groups = hybrid.replica_groups(p, solution.info)
    assert groups and all(g == (d, d + 1) and d % 2 == 0 for d, g in groups.items())
    ran = schedule.run_planned(p, solution.plan.placement, p.pipeline, solution.info)
    assert ran.iteration_s == pytest.approx(solution.info["iteration_s"])
    assert all(len(s.devices) == 2 for s in ran.stages)
    # a pin to a device that starts no block of two is refused with its reason
    pinned = _spec([5, 6], [10, 12], [1, 1], devices=4, microbatches=8, data_parallel="2",
                   pins="  pin f0 to d1\n  pin f0.bwd to d1")
    with pytest.raises(InfeasibleError) as caught:
        run_algorithm("pipeilp", pinned, Options(time_limit_s=20))
    assert caught.value.diagnostics[0].code == "E712"
    assert "`d1` is pinned to but starts no block" in caught.value.diagnostics[0].message


@pytest.mark.parametrize("algorithm", ["hybrid", "auto"])
def test_under_data_parallel_n_a_pin_names_the_first_pipelines_device(algorithm: str) -> None:
    """`data_parallel 2` with a layer pinned to d0: the pin names the device of the first
    of the 2 pipelines, as pipeilp's identical pipelines and `simulate --stages` read it
    (before: `hybrid`, and so `auto`, the default, refused it with E712, as if a pinned
    unit could not be replicated when every stage is)."""
    p = _spec([5, 6, 7, 8], [10, 12, 14, 16], [1, 1, 1, 1], devices=4, microbatches=8,
              data_parallel="2", pins="  pin f0 to d0\n  pin f0.bwd to d0")
    solution = run_algorithm(algorithm, p, Options())
    assert solution.plan.placement[0] == 0
    ran = schedule.run_planned(p, solution.plan.placement, p.pipeline, solution.info)
    first = next(s for s in ran.stages if 0 in s.ops)
    assert first.devices == (0, 1) and all(len(s.devices) == 2 for s in ran.stages)
    assert pipeline_breaks(p, simulate(p, solution.plan), ran) == []
    free = _spec([5, 6, 7, 8], [10, 12, 14, 16], [1, 1, 1, 1], devices=4, microbatches=8,
                 data_parallel="2")  # d0 starts the first block anyway: the same plan
    assert ran.iteration_s == pytest.approx(run_algorithm(algorithm, free, Options()).info[
        "iteration_s"])
    # a pin to d1, which starts no block of two, is refused with pipeilp's reason and hint
    pinned = _spec([5, 6], [10, 12], [1, 1], devices=4, microbatches=8, data_parallel="2",
                   pins="  pin f0 to d1\n  pin f0.bwd to d1")
    with pytest.raises(InfeasibleError) as caught:
        run_algorithm(algorithm, pinned, Options())
    (diag,) = caught.value.diagnostics
    assert diag.code == "E712" and "`d1` is pinned to but starts no block" in diag.message
    assert diag.hints == ("pin to the first device of a block of 2 (d0, d2), or remove the "
                          "pins",)


def test_big_graphs_compare_layouts_by_the_dps_cost_and_say_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    p = _spec([10, 12, 14], [20, 24, 28], [1, 1, 1], devices=4, microbatches=8)
    assert p.pipeline is not None
    monkeypatch.setattr(pipehybrid, "MAX_SIMULATED_OPS", 10)  # 8 x 6 ops pass it
    solution = run_algorithm("hybrid", p, Options())
    assert solution.info["candidates_compared_by"].startswith("estimate")
    groups = hybrid.replica_groups(p, solution.info)
    split = schedule.split_of(p, solution.plan.placement)
    lay = pipehybrid.Layout(split.bounds, tuple(hybrid.group(groups, d) for d in split.devices))
    assert solution.info["iteration_s"] == pipehybrid.layout_cost(p, p.pipeline, lay)
    assert solution.info["iteration_s"] == min(
        pipehybrid.layout_cost(p, p.pipeline, other) for other in pipehybrid.candidates(
            p, p.pipeline))


def test_an_algorithm_that_plans_no_replicas_says_so_under_data_parallel() -> None:
    p = _spec([5, 6, 7, 8], [10, 12, 14, 16], [1, 1, 1, 1], devices=4, microbatches=8,
              data_parallel="2")
    # under `data_parallel 2`, refused before any work (before: a plan of one pipeline,
    # `feasible`, with the note "`pipedp` gives each stage one device", faster than any
    # plan that runs the 2 replicas asked for)
    with pytest.raises(UsageError) as err:
        run_algorithm("pipedp", p, Options())
    assert err.value.diagnostics[0].code == "E625"
    assert "plans one pipeline" in err.value.diagnostics[0].message
    assert "data_parallel" not in run_algorithm("hybrid", p, Options()).info
    # under `auto`, pipeilp plans one pipeline too, and the notes say who chooses replicas
    # (before: pipeilp said nothing, and pipedp's note named pipeilp among them)
    auto = dataclasses.replace(p, pipeline=dataclasses.replace(p.pipeline,
                                                               data_parallel="auto"))
    ilp = run_algorithm("pipeilp", auto, Options())
    assert not hybrid.replica_groups(auto, ilp.info)
    # (search too, which starts from auto's plan)
    assert ilp.info["data_parallel"].endswith(
        "`data_parallel auto` is planned by auto, hybrid, search")
    assert run_algorithm("pipedp", auto, Options()).info["data_parallel"].endswith(
        "is planned by auto, hybrid, search")


def test_the_cut_moves_bring_a_misplaced_cut_back_and_never_lose() -> None:
    # two devices, four equal layers: the even cut (2 | 2) beats (1 | 3) and (3 | 1)
    p = _spec([5, 5, 5, 5], [10, 10, 10, 10], [0.1] * 4, devices=2, microbatches=8,
              data_parallel="1")
    assert p.pipeline is not None
    off = pipehybrid.Layout((0, 1, 4), ((0,), (1,)))
    even = pipehybrid.Layout((0, 2, 4), ((0,), (1,)))
    figures = {off: pipehybrid.iteration(p, p.pipeline, off)}
    assert pipehybrid.refine(p, p.pipeline, off, figures) == even
    assert figures[even] < figures[off]
    for seed in range(6):  # and on random chains the chosen layout only gets faster
        rng = random.Random(300 + seed)
        n = rng.randint(3, 7)
        q = _spec([rng.uniform(1, 20) for _ in range(n)], [rng.uniform(1, 40) for _ in range(n)],
                  [rng.choice([0.5, 5, 50]) for _ in range(n)], devices=rng.randint(2, 4),
                  microbatches=8)
        assert q.pipeline is not None
        chosen, seen = pipehybrid.best(q, q.pipeline, pipehybrid.candidates(q, q.pipeline))
        before = seen[chosen]
        moved = pipehybrid.refine(q, q.pipeline, chosen, seen)
        assert seen[moved] <= before
        # the plan: that layout, or pipedp's pure pipeline where it runs faster
        assert run_algorithm("hybrid", q, Options()).info["iteration_s"] <= seen[moved]


def test_auto_says_why_it_keeps_the_replicated_stages() -> None:
    p = _spec([10, 10], [20, 20], [0.1, 0.1], devices=4, microbatches=8)
    solution = run_algorithm("auto", p, Options(time_limit_s=5))
    assert solution.info["chosen"] == "hybrid"
    candidates = solution.info["candidates"]
    assert candidates["hybrid"] < min(v for k, v in candidates.items() if k != "hybrid")
    assert solution.info["why"].startswith("replicated stages ([4] replicas per stage) run "
                                           "faster by the simulated iteration")



def test_the_cut_moves_never_break_a_pin() -> None:
    # moving the cut left would put f1, pinned to d0, on the replicated stage (d1, d2): a
    # shorter iteration, and not a plan
    p = _spec([5, 20, 5], [10, 40, 10], [0.1] * 3, devices=3, microbatches=8,
              pins="  pin f1 to d0\n  pin f1.bwd to d0")
    assert p.pipeline is not None
    lay = pipehybrid.Layout((0, 2, 3), ((0,), (1, 2)))
    left = pipehybrid.Layout((0, 1, 3), ((0,), (1, 2)))
    free = _spec([5, 20, 5], [10, 40, 10], [0.1] * 3, devices=3, microbatches=8)
    assert free.pipeline is not None
    assert pipehybrid.iteration(free, free.pipeline, left) < pipehybrid.iteration(
        free, free.pipeline, lay)
    assert pipehybrid.iteration(p, p.pipeline, left) == math.inf
    figures = {lay: pipehybrid.iteration(p, p.pipeline, lay)}
    assert pipehybrid.refine(p, p.pipeline, lay, figures) == lay


def test_a_tied_weight_on_one_replicated_stage_is_all_reduced_once() -> None:
    """DDP reduces a shared parameter once, and memory counts it once; before, its bucket
    counted it per holder: `tie f0, f1` on one stage of 4 replicas all-reduced 100 MB, as
    two weights did (15.12 ms where one weight takes 7.56 ms)."""
    def all_reduce(params_mb: list[float], tie: bool) -> list[float]:
        p = _spec([4, 6, 3], [0.1, 12, 6], params_mb, devices=4, microbatches=8,
                  bandwidth="10 GB/s", data_parallel="4")
        if tie:
            index = p.graph.op_index
            p = dataclasses.replace(p, graph=dataclasses.replace(
                p.graph, ties=(Tie((index["f0"], index["f1"]), 50_000_000),)))
        assert p.pipeline is not None
        solution = run_algorithm("hybrid", p, Options())
        ran = schedule.run_planned(p, solution.plan.placement, p.pipeline, solution.info)
        assert [len(s.devices) for s in ran.stages] == [4]  # one stage on all four
        return [s.allreduce_s for s in ran.stages]

    tied, one_weight = all_reduce([50, 50, 0], True), all_reduce([50, 0, 0], False)
    assert tied == pytest.approx(one_weight) and tied[0] > 0
    assert all_reduce([50, 50, 0], False)[0] > 1.9 * tied[0]  # two weights: twice the bytes


def test_e712_blames_pins_only_where_the_spec_has_pins() -> None:
    """Before: every E712 hinted that "pins that do not follow the cluster's device order
    leave the hybrid DP no layout", on specs without a pin too (here memory: only a
    recomputing split fits)."""
    hint = "pins that follow neither the cluster's device order nor its rotations"
    p = loads(tight_text("34 MB")).plan("p")
    with pytest.raises(InfeasibleError) as err:
        run_algorithm("hybrid", p, Options())
    (d,) = err.value.diagnostics
    assert d.code == "E712" and not any(hint in h for h in d.hints), d.hints
    pinned = loads(tight_text("34 MB").replace("schedule 1f1b", "schedule 1f1b; pin f3 to d0")
                   ).plan("p")
    with pytest.raises(InfeasibleError) as err:
        run_algorithm("hybrid", pinned, Options())
    assert any(hint in h for d in err.value.diagnostics for h in d.hints)


def test_the_dps_gradient_bytes_count_a_tied_weight_once_per_stage_as_the_run_does() -> None:
    """The DP's stage figures (`hybridstage.Start.grads`) and the simulated run's buckets
    (`hybrid.gradient_bytes`) agree on a stage holding both holders of a tie, and on one
    holding one (before: the DP counted the weight per holder)."""
    from planner.algorithms.hybridstage import Start
    from planner.pipeline.units import units

    p = _spec([4, 6, 3], [0.1, 12, 6], [50, 50, 0], devices=4, microbatches=8,
              data_parallel="4")
    index = p.graph.op_index
    p = dataclasses.replace(p, graph=dataclasses.replace(
        p.graph, ties=(Tie((index["f0"], index["f1"]), 50_000_000),)))
    u, tables = units(p), pipehybrid._tables(p)
    for i, end in ((0, 3), (0, 2), (1, 3)):
        grads = Start(p, u, tables.grad_prefix, i, np.array([end]), tables.ties).grads
        ops = [o for k in range(i, end) for o in u.members[k]]
        assert grads[0] == pytest.approx(hybrid.gradient_bytes(p, ops)), (i, end)
    assert hybrid.gradient_bytes(p, range(len(p.graph.ops))) == pytest.approx(50_000_000)
