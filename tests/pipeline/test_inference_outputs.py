"""An inference pipeline's stages hold every micro-batch's inputs and outputs, and the last
stage its outputs once more merged (`hybrid.step_bytes`). torch 2.13's stage receives
each micro-batch into its own buffers (`args_recv_info`, made at the first step, kept) and
caches its outputs and inputs in `fwd_cache`, which only a backward pass pops: without one
they stay until the next step clears them; the last stage also appends each output to
`output_chunks` (the same tensors) and `schedule.step` returns them concatenated. So at the
step's end stage k holds M times what it receives and sends, and the last stage 2M outputs.
Measured on `wide2.py` (a 32x250000 head, 4 micro-batches, 1F1B, CPU): torch's peak 519.78
MiB on the last rank, as planned now (92.51 MiB with one output); on `THREE` below
(`three_stages`), every rank's bytes as planned now. The split DPs (pipedp's,
pipeilp's recomputing DP and ILP, hybrid's) count what `stage_bytes` counts."""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner import loads, solve
from planner.algorithms import run
from planner.algorithms.exact import backends
from planner.cli import app
from planner.errors import InfeasibleError
from planner.model import Pipeline, Problem
from planner.pipeline import hybrid
from planner.pipeline.split import Split, fits, resource_loads, split_of, stage_bytes
from planner.pipeline.units import units

MB = 10**6


def two_ops(memory: str, microbatches: int = 4, extra: str = "") -> Problem:
    """f0 (1 MB out) -> f1 (10 MB out, the model's output), forward only, on 2 devices."""
    return loads(f"""
cluster c {{ device d[0..1] {{ memory {memory} }}
  link d[0..1] <-> d[0..1] {{ bandwidth 10 GB/s latency 10 us }} }}
graph g {{ op f0 {{ time 4 ms; output 1 MB }} op f1 {{ time 4 ms; output 10 MB }} f0 -> f1 }}
plan p {{ graph g; cluster c; objective pipeline; microbatches {microbatches}; schedule 1f1b
  {extra} }}""").plan("p")


def test_the_last_stage_holds_every_micro_batch_output_and_their_merged_copy() -> None:
    p = two_ops("1 GB")
    held = stage_bytes(p, Split((0, 1, 2), (0, 1)), p.pipeline or Pipeline())
    # d0: what it sends (1 MB) for 4 micro-batches; d1: what it receives for 4, and its
    # output for 4, twice (before 2026-12-06: 1 MB and 81 MB; before that, 1 and 11 MB)
    assert held == [4 * MB, 4 * 1 * MB + 2 * 4 * 10 * MB]
    one = stage_bytes(p, Split((0, 2), (0,)), p.pipeline or Pipeline())
    assert one[0] == 1 * MB + 2 * 4 * 10 * MB  # f0's once, the model's output 8 times


def test_a_split_that_fit_only_by_one_output_is_no_longer_planned() -> None:
    # 50 MB: the last stage holds 84 MB; before, 11 MB, and pipedp printed it as fitting
    p = two_ops("50 MB")
    assert not fits(p, stage_bytes(p, Split((0, 1, 2), (0, 1)), p.pipeline or Pipeline()))
    with pytest.raises(InfeasibleError) as caught:
        run("pipedp", p)
    assert caught.value.diagnostics[0].code == "E707"
    fewer = two_ops("50 MB", microbatches=2)  # 42 MB: fits, as E707's hint says
    s = run("pipedp", fewer)
    assert fits(fewer, stage_bytes(fewer, split_of(fewer, s.plan.placement),
                                   fewer.pipeline or Pipeline()))


def test_training_holds_one_output_in_flight_as_before() -> None:
    for count in (hybrid.returned_copies, hybrid.cached_copies):
        assert count(Pipeline(microbatches=4), 1, training=True) == 0
    # inference: M - 1 cached beyond the one in flight, M merged; a replica's share of M
    assert hybrid.cached_copies(Pipeline(microbatches=4), 1, training=False) == 3
    assert hybrid.returned_copies(Pipeline(microbatches=4), 1, training=False) == 4
    assert hybrid.cached_copies(Pipeline(microbatches=5), 2, training=False) == 2
    assert hybrid.returned_copies(Pipeline(microbatches=5), 2, training=False) == 3


#: `three.py` of the measurement, as `planner import torch --capture fx` wrote it: a
#: widening linear (16 -> 16384), an elementwise double, a narrowing linear (16384 -> 16),
#: on 64x16 float32 inputs; its boundaries (4 MiB each) dwarf the rest
THREE = """
graph Three {
  op x { time 4.551 ns  output 4 KiB  type input }
  op a { time 5.903 us  flops 33.55 MFLOP  params 1088 KiB  output 4 MiB  type Linear }
  op b { time 9.321 us  output 4 MiB  type Twice }
  op c { time 5.83 us  flops 33.55 MFLOP  params 1048640 B  output 4 KiB  type Linear }
  x -> a  a -> b  b -> c
}
cluster c {
  device gpu[0..2] { kind gpu  memory %s  flops 10 TFLOPS }
  link gpu[0..2] <-> gpu[0..2] { bandwidth 1 TB/s }
}
plan p { graph Three  cluster c  objective pipeline  microbatches %d  schedule %s
  pin x, a to gpu0  pin b to gpu1  pin c to gpu2 }"""


def three_stages(memory: str = "4 GiB", microbatches: int = 4,
                 schedule: str = "1f1b") -> Problem:
    """`THREE`, a stage per device (pinned)."""
    return loads(THREE % (memory, microbatches, schedule)).plan("p")


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize("microbatches", [4, 8])
def test_every_stage_holds_every_micro_batch_s_inputs_and_outputs(schedule: str,
                                                                  microbatches: int) -> None:
    """torch's ranks at the step's end, measured (a dispatch mode tracking live storages,
    torch 2.13 on CPU, the exported script), M = 4 | 8, either schedule: 17,907,712 |
    34,701,312 B; 33,554,432 | 67,108,864 B; 17,858,624 | 34,668,608 B. Before, the plan
    counted one micro-batch (5,312,512; 8,388,608; 5,275,712 B at M = 4: 1F1B's in-flight
    count is not what inference holds). Rank 0's rest is the caller's batch (M x 4 KiB),
    which the plan counts once: the model's input, as in training."""
    m, mib, kib = microbatches, 2**20, 2**10
    p = three_stages(microbatches=m, schedule=schedule)
    result = solve(p, "pipedp")
    assert result.pipeline is not None
    held = list(result.pipeline.memory_bytes)  # what `solve` prints
    assert held == stage_bytes(p, split_of(p, result.plan.placement), p.pipeline or Pipeline())
    params_a, params_c = 1088 * kib, 1048640
    assert held == [params_a + 4 * kib + m * 4 * mib,  # x once, a's output M times
                    m * (4 + 4) * mib,  # what it receives and sends, M times
                    params_c + m * 4 * mib + 2 * m * 4 * kib]  # the output M times, merged
    measured = {4: [17907712, 33554432, 17858624], 8: [34701312, 67108864, 34668608]}[m]
    assert [a - b for a, b in zip(measured, held, strict=True)] == [(m - 1) * 4 * kib, 0, 0]


def test_each_virtual_stage_holds_every_micro_batch_s_inputs_and_outputs() -> None:
    """Interleaved, 2 stages a device: each of a device's stages keeps its own (torch's
    stage objects each have their `fwd_cache`). Before, a device counted its largest
    stage's one micro-batch, with the last stage's outputs: d0 5 MB, d1 35 MB."""
    p = loads("""
cluster c { device d[0..1] { memory 1 GB }
  link d[0..1] <-> d[0..1] { bandwidth 10 GB/s latency 10 us } }
graph g { op f0 { time 4 ms; output 1 MB } op f1 { time 4 ms; output 2 MB }
          op f2 { time 4 ms; output 3 MB } op f3 { time 4 ms; output 4 MB }
          f0 -> f1  f1 -> f2  f2 -> f3 }
plan p { graph g; cluster c; objective pipeline; microbatches 4; schedule interleaved
  stages_per_device 2 }""").plan("p")
    held = stage_bytes(p, Split((0, 1, 2, 3, 4), (0, 1, 0, 1)), p.pipeline or Pipeline())
    # d0: f0 (sends 1 MB) and f2 (receives 2, sends 3), 4 micro-batches each; d1: f1
    # (receives 1, sends 2) and f3 (receives 3; its 4 MB output 4 times and merged)
    assert held == [4 * (1 + 2 + 3) * MB, 4 * (1 + 2 + 3) * MB + 2 * 4 * 4 * MB]


def test_a_plan_that_fit_by_one_micro_batch_s_boundaries_no_longer_fits() -> None:
    """On 20 MiB devices gpu1 holds 32 MiB at 4 micro-batches; before it was planned at 8
    MiB, "fits". E707 now, and its hint the micro-batches that fit (GPipe, 2: 16 MiB;
    1F1B would need 3 for 3 stages)."""
    p = three_stages("20 MiB", schedule="gpipe")
    split = Split((0, 2, 3, 4), (0, 1, 2))
    assert stage_bytes(p, split, p.pipeline or Pipeline())[1] == 32 * 2**20
    assert not fits(p, stage_bytes(p, split, p.pipeline or Pipeline()))
    with pytest.raises(InfeasibleError) as caught:
        run("pipedp", p)
    assert caught.value.diagnostics[0].code == "E707"
    hints = caught.value.diagnostics[0].hints
    assert any("a split fits with `microbatches 2`" in h for h in hints), hints
    assert hints[0].startswith("fewer micro-batches hold fewer stage inputs and outputs "
                               "(inference keeps every micro-batch's): "), hints


def test_the_report_says_what_an_inference_stage_holds(tmp_path: Path) -> None:
    """`simulate` of the pinned split on 20 MiB devices: it does not fit, and the words say
    what fills the rest, which is no longer activations in flight (one micro-batch's)."""
    spec = tmp_path / "three.plan"
    spec.write_text(THREE % ("20 MiB", 4, "gpipe"), encoding="utf-8")
    res = CliRunner().invoke(app, ["simulate", str(spec)], env={"COLUMNS": "400"})
    out = " ".join(res.output.split())
    assert ("device `gpu1` holds 20.00 MiB, less than the 32.00 MiB its stages need: params "
            "0 B, the rest every micro-batch's stage inputs and outputs (inference keeps "
            "them), one's activations and workspace") in out, out
    assert ("pipeline memory (params once, every micro-batch's stage inputs and outputs, "
            "one's activations: inference)") in out


def tiny_inference(seed: int, n: int, schedule: str, devices: int = 3,
                   extra: str = "") -> Problem:
    """A random forward-only chain with skip edges of `n` ops on `devices` devices of
    different speeds and memories; the last op's output (the model's) is held 2M times."""
    rng = random.Random(seed)
    lines = ["cluster c {"]
    for d in range(devices):
        lines.append(f"  device d{d} {{ memory {rng.choice([20, 30, 45, 60])} MB; speed "
                     f"{rng.choice([0.5, 1.0, 2.0])} }}")
    for a, b in itertools.permutations(range(devices), 2):
        lines.append(f"  link d{a} -> d{b} {{ bandwidth {rng.choice([1, 5, 20])} GB/s }}")
    lines += ["}", "graph g {"]
    for k in range(n):
        lines.append(f"  op u{k} {{ time {rng.randint(1, 9)} ms; output {rng.randint(1, 6)} "
                     f"MB; params {rng.randint(0, 4)} MB }}")
    for k in range(1, n):
        lines += [f"  u{j} -> u{k}" for j in {k - 1, rng.randrange(k)}]
    lines += ["}", f"plan p {{ graph g; cluster c; objective pipeline; microbatches 3; "
                   f"schedule {schedule}{extra} }}"]
    return loads("\n".join(lines)).plan("p")


def least_period(problem: Problem) -> float:
    """The least period over the placements with one stage per device that fit."""
    u, pipe = units(problem), problem.pipeline or Pipeline()
    best = math.inf
    for dev in itertools.product(range(3), repeat=u.count):
        split = split_of(problem, tuple(dev[k] for k in u.unit_of))
        if len(set(split.devices)) == split.stages and fits(
                problem, stage_bytes(problem, split, pipe)):
            best = min(best, resource_loads(problem, split).period_s)
    return best


@pytest.mark.skipif(not backends.available("highs"), reason="HiGHS (highspy) is not installed")
@pytest.mark.parametrize(("seed", "schedule"), [(s, ("gpipe", "1f1b")[s % 2])
                                                for s in range(9)])
def test_pipeilp_and_pipedp_count_the_outputs_as_the_rule_does(seed: int,
                                                               schedule: str) -> None:
    p = tiny_inference(seed, 4, schedule)
    best = least_period(p)
    for algo in ("pipeilp", "pipedp"):
        try:
            s = run(algo, p)
        except InfeasibleError:
            assert algo == "pipedp" or best == math.inf
            continue
        split = split_of(p, s.plan.placement)
        assert fits(p, stage_bytes(p, split, p.pipeline or Pipeline()))
        if algo == "pipeilp":
            assert resource_loads(p, split).period_s == pytest.approx(best, rel=1e-6)


@pytest.mark.skipif(not backends.available("highs"), reason="HiGHS (highspy) is not installed")
@pytest.mark.parametrize(("seed", "old", "period_s"), [
    (0, Split((0, 2, 3, 4), (0, 1, 2)), 0.011), (8, Split((0, 1, 3, 4), (0, 2, 1)), 0.038)])
def test_pipeilp_plans_around_every_micro_batch_s_inputs_and_outputs(
        seed: int, old: Split, period_s: float) -> None:
    """Before, pipeilp's optimum (seed 0: 9 ms, seed 8: 10 ms) was `old`, whose second
    device holds 47 MB (20 MB device; 15 MB counted) and 54 MB (60 MB device; 34 MB
    counted; its third holds 53 MB of 30 MB) with the inputs and outputs torch caches."""
    p = tiny_inference(seed, 4, "gpipe")
    assert not fits(p, stage_bytes(p, old, p.pipeline or Pipeline()))
    s = run("pipeilp", p)
    assert resource_loads(p, split_of(p, s.plan.placement)).period_s == pytest.approx(
        period_s, rel=1e-6)


@pytest.mark.parametrize("seed", [1, 20, 54])
def test_hybrid_counts_a_replica_s_share_of_the_outputs_as_the_rule_does(seed: int) -> None:
    """A replica of the last stage of r holds ceil(M / r) outputs twice. Before hybrid's DP
    counted them, the exact rule rejected the replicated layouts it chose, and it fell
    back to a slower unreplicated pipeline (seed 1: 13.15 ms an iteration, now 11 ms)."""
    p = tiny_inference(seed, 4, "1f1b", devices=4, extra="; data_parallel auto")
    s = run("hybrid", p)
    groups = hybrid.replica_groups(p, s.info)
    assert groups
    assert fits(p, stage_bytes(p, split_of(p, s.plan.placement), p.pipeline or Pipeline(),
                               replicas=groups))


def test_hybrid_plans_around_a_replica_s_inputs_and_outputs() -> None:
    """Seed 20: before, hybrid's layout was units 0-2 on d0 and d1, unit 3 on d2 and d3,
    counted at 28 MB a replica on d2 and d3; with what each replica's stage receives and
    its share of the outputs (2 micro-batches of 3) it is 35 MB on the 30 MB d2."""
    p = tiny_inference(20, 4, "1f1b", devices=4, extra="; data_parallel auto")
    old = stage_bytes(p, Split((0, 3, 4), (0, 2)), p.pipeline or Pipeline(),
                      replicas={0: (0, 1), 2: (2, 3)})
    assert old[2] == 35 * MB and not fits(p, old)
    s = run("hybrid", p)
    groups = hybrid.replica_groups(p, s.info)
    assert fits(p, stage_bytes(p, split_of(p, s.plan.placement), p.pipeline or Pipeline(),
                               replicas=groups))


def test_e707_hints_the_micro_batches_that_fit_and_no_recomputation_for_inference() -> None:
    """f0 and f1 hold 40 MB of params each: one micro-batch allows one stage under 1F1B,
    which holds 80 MB; two stages fit with 2 micro-batches (f1's stage: 40 + 1 + 2 x 2 x
    2 MB), not with 3. Before, the hint bisected from one micro-batch, found none and
    said only "more memory"; and it offered pipeilp's recomputation, which inference never
    does."""
    p = loads("""
cluster c { device d[0..1] { memory 50 MB }
  link d[0..1] <-> d[0..1] { bandwidth 10 GB/s latency 10 us } }
graph g { op f0 { time 4 ms; output 1 MB; params 40 MB }
          op f1 { time 4 ms; output 2 MB; params 40 MB } f0 -> f1 }
plan p { graph g; cluster c; objective pipeline; microbatches 3; schedule 1f1b }""").plan("p")
    with pytest.raises(InfeasibleError) as caught:
        run("pipedp", p)
    hints = caught.value.diagnostics[0].hints
    assert any("a split fits with `microbatches 2`" in h for h in hints), hints
    assert "`--algo pipeilp` places each unit on any device it may use" in hints
    assert not [h for h in hints if "recomputes" in h]
