"""Splits: contiguous stages of the pipeline units, each on a device, and their costs.

The model of time (one model for the split solvers, `planner.algorithms.pipedp` and
`pipeilp`, the simulator's pipeline runs, `planner.pipeline.schedule`, and the report): a
stage's boundaries carry, per micro-batch, the forward tensors that cross them left to
right and the gradients right to left, each `latency + bytes / bandwidth`; a tensor that
skips a stage is **relayed** by it under every schedule (the simulator runs those relays;
torch's interleaved schedule passes it so, its gpipe and 1f1b send it straight to its
readers: docs/pipelines.md). The simulator overlaps compute and transfers, so
in the steady state a micro-batch passes every **resource** once, and the period T is the
busiest resource's time for one micro-batch:

- a device's compute (its stages' forward and backward ops; its forward ops twice when it
  recomputes its activations);
- transfers, under the plan's `contention`: `link`, each directed link (the boundaries
  that send over it, summed); `device`, each device's one channel (every boundary it sits
  on, both directions); `none`, no resource (transfers only delay).

`resource_loads` gives every resource's load, per device (`device_s`, the device view),
per stage (`stage_s`: its compute or the busiest transfer resource its boundaries use) and
T (`period_s`, the largest of all; with one stage per device also the largest stage
load). The schedule adds the fill and drain that the simulator measures.

The model of memory (a bound the liveness simulation never exceeds, for the splits the
solvers make): a stage holds its units' params (gradients and optimizer state included,
once; a tied weight once per device that holds it, `cost.tied_duplicate_bytes`: the DP and
pipeilp count each holder's copy, exact when the holders' stages are on different devices
and an over-count otherwise), plus the activations of each micro-batch in flight (its
forward outputs and the forward tensors it receives), plus the largest transient. In
flight on stage k of S, with M micro-batches: GPipe M; 1F1B min(S - k, M); interleaved
(stage k of device d, D devices), Megatron's warm-up count plus one, min((D - d - 1) * 2 +
(K - 1) * D + 1, M * K), the activations of the device's largest stage each. Counts are
those of the schedule the split runs (`runs`): under `interleaved`, a split whose stages
are replicated or not K (or K' >= 2, run with K') per device in a repeating chain runs
as 1F1B and holds 1F1B's; a split whose order deadlocks under its schedule (its devices
not a chain of stages: `order.deadlocks`) runs in GPipe's order and holds GPipe's M, as
the simulator runs it.
In training a stage also holds, for every micro-batch, a receive buffer for its input
(every stage but the first) and one for its output's gradient (every stage but the last):
torch's stage makes them at its first step and keeps them; under `interleaved` (a schedule
that `keeps_sends`) also what it sent, each micro-batch's output and input gradient from
its backward task to the step's end, the device's peak found by walking its order.
Inference (no backward pass) has one micro-batch in flight, and a stage holds for each
other micro-batch what it receives and sends and the model's outputs it computes (torch
caches them for a backward pass that never runs), the last stage its outputs once more
merged (`hybrid.step_bytes`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from ..cost import INF, costs, stage_memory, tied_duplicate_bytes, transfer_seconds
from ..facts import facts
from ..model import Pipeline, Problem
from ..schedules import Schedule
from ..units import format_bytes, format_seconds
from . import hybrid
from .order import deadlocks
from .units import Units, units


@dataclass(frozen=True, slots=True)
class Split:
    """Stages as unit boundaries `0 = bounds[0] < ... < bounds[S] = units` and a device per
    stage (a device may run several, under `interleaved` or in a plan not made as a
    pipeline)."""

    bounds: tuple[int, ...]
    devices: tuple[int, ...]

    @property
    def stages(self) -> int:
        """How many stages there are."""
        return len(self.devices)

    def placement(self, problem: Problem) -> tuple[int, ...]:
        """Op -> device: each op on its unit's stage's device."""
        u = units(problem)
        device_of_unit = np.repeat(np.array(self.devices, dtype=np.int64),
                                   np.diff(np.array(self.bounds)))
        return tuple(device_of_unit[np.asarray(u.unit_of, dtype=np.int64)].tolist())


def split_of(problem: Problem, placement: Sequence[int]) -> Split:
    """The stages of any placement: maximal runs of consecutive units on one device (a
    unit split over devices is counted on its first op's device: no pipeline, which
    `units_split` finds and the report calls infeasible, E401)."""
    u = units(problem)
    bounds = [0]
    devices: list[int] = []
    for k, ops in enumerate(u.members):
        d = placement[ops[0]]
        if not devices or devices[-1] != d:
            if devices:
                bounds.append(k)
            devices.append(d)
    bounds.append(u.count)
    return Split(tuple(bounds), tuple(devices))


def units_split(problem: Problem, placement: Sequence[int]) -> list[tuple[int, int]]:
    """(op, op) pairs of one pipeline unit on two devices, one per unit: its first placed
    op and the first placed elsewhere (unplaced ops, -1, aside). A stage runs whole units
    (a forward op, its backward ops, their colocation groups): a one-pass plan that splits
    one is no pipeline, whose ops off the unit's stage would never run."""
    out = []
    for members in units(problem).members:
        placed = [i for i in members if placement[i] >= 0]
        other = next((i for i in placed if placement[i] != placement[placed[0]]), None)
        if other is not None:
            out.append((placed[0], other))
    return out


def split_words(problem: Problem, placement: Sequence[int], pair: tuple[int, int]) -> str:
    """`op `cb` is on `gpu0` and op `c` on `gpu1`, but they are one pipeline unit`: a pair
    of `units_split`, as `solve` (E401) and `compare` (its row's reason) say it."""
    ops, devs = problem.graph.ops, problem.cluster.devices
    a, b = pair
    return (f"op `{ops[b].name}` is on `{devs[placement[b]].name}` and op `{ops[a].name}` on "
            f"`{devs[placement[a]].name}`, but they are one pipeline unit")


def boundary_seconds(problem: Problem, x: int, left: int, right: int) -> tuple[float, float]:
    """Seconds of the transfers across boundary `x` between the devices of the stages on
    its two sides: (forward, left to right; backward, right to left); (0, 0) on one
    device."""
    if left == right:
        return 0.0, 0.0
    u, c = units(problem), costs(problem)
    return (float(transfer_seconds(c.latency[left][right], c.inv_bandwidth[left][right],
                                   u.forward_bytes[x], u.forward_count[x])),
            float(transfer_seconds(c.latency[right][left], c.inv_bandwidth[right][left],
                                   u.backward_bytes[x], u.backward_count[x])))


@dataclass(frozen=True, slots=True)
class Loads:
    """What one micro-batch costs each resource of a split, in seconds (module docstring):
    per device its compute (`compute_s`) and its busiest transfer resource (`transfer_s`:
    its channel under `device` contention, the busiest link into or out of it under
    `link`, 0 under `none`); per stage the same for its own compute and the resources
    its boundaries use (`stage_s`)."""

    compute_s: tuple[float, ...]
    transfer_s: tuple[float, ...]
    stage_s: tuple[float, ...]
    #: per directed pair of devices (a, b): the seconds its boundaries send a -> b
    sent_s: Mapping[tuple[int, int], float]

    @property
    def device_s(self) -> tuple[float, ...]:
        """Per device: its busiest resource (compute or transfers)."""
        return tuple(max(c, t) for c, t in zip(self.compute_s, self.transfer_s, strict=True))

    @property
    def period_s(self) -> float:
        """T: the busiest resource of all (every stage's resources are some device's)."""
        return max(self.device_s, default=0.0)


def resource_loads(problem: Problem, split: Split, recompute: Collection[int] = (),
                   as_run: bool = False) -> Loads:
    """The loads of `split` (module docstring); a device in `recompute` runs its forward
    ops twice. A stage on a device one of its units may not use (a pin elsewhere, or an op
    that cannot run there) loads it `inf`, which the split solvers read as "no such split";
    `as_run` (the report's) loads it with what the simulator runs instead, finite where
    only a pin is broken (the baseline `uniform` reads no pins)."""
    u = units(problem)
    m = len(problem.cluster.devices)
    b, dev = split.bounds, split.devices
    compute = [0.0] * m
    own: list[float] = []
    for k, d in enumerate(dev):
        i, j = b[k], b[k + 1]
        if u.banned_prefix[d, j] - u.banned_prefix[d, i] > 0:
            own.append(_run_seconds(problem, u.members[i:j], d, d in recompute)
                       if as_run else INF)
        else:
            own.append(float(u.compute_prefix[d, j] - u.compute_prefix[d, i]
                             + (u.forward_prefix[d, j] - u.forward_prefix[d, i]
                                if d in recompute else 0.0)))
        compute[d] += own[-1]
    sent: dict[tuple[int, int], float] = {}
    for k in range(1, len(dev)):
        a, c = dev[k - 1], dev[k]
        forward, backward = boundary_seconds(problem, b[k], a, c)
        sent[a, c] = sent.get((a, c), 0.0) + forward
        sent[c, a] = sent.get((c, a), 0.0) + backward
    channel = _channels(problem.contention, m, sent)
    stage = []
    for k, d in enumerate(dev):
        near = [channel[d]]
        if problem.contention == "link":  # the links of its own boundaries only
            near = [sent.get(pair, 0.0) for pair in _stage_pairs(dev, k)]
        stage.append(max([own[k], *near]))
    return Loads(tuple(compute), tuple(channel), tuple(stage), MappingProxyType(sent))


def _run_seconds(problem: Problem, members: Sequence[Sequence[int]], d: int,
                 recompute: bool) -> float:
    """The compute seconds of the ops of `members` on device `d` as the simulator runs
    them (`inf` only where one cannot run there), forward ops twice under `recompute`."""
    u, c = units(problem), costs(problem)
    ops = [i for unit in members for i in unit]
    again = [c.compute[i][d] for i in ops if not u.backward[i]] if recompute else []
    return math.fsum([c.compute[i][d] for i in ops] + again)


def _channels(contention: str, m: int, sent: Mapping[tuple[int, int], float]) -> list[float]:
    """Per device: its busiest transfer resource under `contention`."""
    out = [0.0] * m
    for (a, b), t in sent.items():
        if contention == "device":
            out[a] += t
            out[b] += t
        elif contention == "link":
            out[a] = max(out[a], t)
            out[b] = max(out[b], t)
    return out


def _stage_pairs(dev: Sequence[int], k: int) -> list[tuple[int, int]]:
    """The directed device pairs the boundaries of stage `k` send over."""
    out = []
    for n in (k - 1, k + 1):
        if 0 <= n < len(dev):
            out += [(dev[k], dev[n]), (dev[n], dev[k])]
    return out


def stage_loads(problem: Problem, split: Split) -> list[float]:
    """Each stage's load: its compute, or the busiest transfer resource its boundaries use,
    whichever is larger (the module docstring)."""
    return list(resource_loads(problem, split).stage_s)


def in_flight(pipeline: Pipeline, stages: int, k: int, training: bool,
              device_rank: int = 0, devices: int = 1) -> int:
    """Micro-batches whose activations stage `k` of `stages` holds at once (inference: one;
    the module docstring for training)."""
    schedule = pipeline.schedule_spec
    if training and schedule.virtual_stages:
        return schedule.virtual_in_flight(pipeline.microbatches, pipeline.stages_per_device,
                                          device_rank, devices)
    return hybrid.in_flight(pipeline, [1] * stages, k, training)  # one device a stage


def interleaves(split: Split, per_device: int) -> bool:
    """Whether the stages are D devices repeated `per_device` times in one order."""
    s = split.stages
    if s % per_device:
        return False
    d = s // per_device
    chain = split.devices[:d]
    return len(set(chain)) == d and all(split.devices[k] == chain[k % d] for k in range(s))


def runs_as(split: Split, pipeline: Pipeline, replicated: bool = False) -> Pipeline:
    """`pipeline` as `split` runs it: as it is where the stages are `stages_per_device`
    per device in a repeating chain; with K' stages per device where they are K' >= 2 in
    such a chain; else (`replicated`, one per device, no repeating chain) under its
    schedule's fallback (interleaved -> 1F1B). The one rule of the simulator
    (`schedule.run`) and the memory model (`stage_bytes`)."""
    fallback = pipeline.schedule_spec.fallback
    if fallback is None or not (replicated or not interleaves(split,
                                                              pipeline.stages_per_device)):
        return pipeline
    per = split.stages // max(1, len(set(split.devices)))
    if not replicated and per > 1 and interleaves(split, per):
        # another count a device in a repeating chain: torch's class runs a rank's stages,
        # however many (`export torch --ranks` loops a plan's stages over fewer ranks)
        return dataclasses.replace(pipeline, stages_per_device=per)
    return dataclasses.replace(pipeline, schedule=fallback)


def runs(problem: Problem, split: Split, pipeline: Pipeline,
         groups: Mapping[int, tuple[int, ...]] | None = None) -> Pipeline:
    """`pipeline` as `split` runs it, its stages' devices in `groups` replicated: its
    schedule's fallback where it applies (`runs_as`), then GPipe's order (the schedule's
    `deadlock_fallback`) where that order deadlocks (`order.deadlocks`: a split whose devices
    are not a chain of stages, or whose edges run against it). The one rule of the simulator
    (`schedule.run`) and the memory model (`stage_bytes`)."""
    mine = {d: g for d, g in (groups or {}).items() if d in split.devices}
    ran = runs_as(split, pipeline, bool(mine))
    fallback = ran.schedule_spec.deadlock_fallback
    if fallback is not None and deadlocks(problem, split, ran, mine):
        return dataclasses.replace(ran, schedule=fallback)
    return ran


def stage_bytes(problem: Problem, split: Split, pipeline: Pipeline,
                recompute: Collection[int] = (),
                replicas: Mapping[int, tuple[int, ...]] | None = None) -> list[float]:
    """Per device, the bytes its stages hold at the peak (the module docstring's model). A
    device in `recompute` keeps only the forward tensors its stages receive and send per
    micro-batch in flight, the model's data inputs and outputs among them (torch's stage
    holds its inputs and outputs until the micro-batch's backward), and one stage's
    activations for one micro-batch (rebuilt for its backward pass, its data inputs
    aside): the rule's home, which pipeilp's recomputing DP and its ILP rows restate. A
    device in `replicas` runs its stages on its group (`hybrid`): each replica holds them
    with its own micro-batches in flight, plus one DDP bucket. Micro-batches in flight are
    those of the schedule the split runs (`runs`). In training a stage also holds a receive
    buffer per micro-batch for its input and for its output's gradient; in inference what
    it receives and sends and the model's outputs it computes for every micro-batch, and
    the last stage those outputs once more merged (`hybrid.step_bytes`), as torch's does."""
    pipeline = runs(problem, split, pipeline, replicas)
    u = units(problem)
    held = [0.0] * len(problem.cluster.devices)
    # holders of one tied weight on one device keep one copy (`cost.tied_duplicate_bytes`)
    twice = tied_duplicate_bytes(problem.graph, split.placement(problem), len(held)) \
        if problem.graph.ties else [0] * len(held)
    by_device: dict[int, list[int]] = {}
    for k, d in enumerate(split.devices):
        by_device.setdefault(d, []).append(k)
    order = list(by_device)
    sizes = [len(hybrid.group(replicas or {}, e)) for e in split.devices]
    for rank, d in enumerate(order):
        stages = by_device[d]
        params = sum(_span(u.params_prefix, split, k) for k in stages) - twice[d]
        acts, transient = _activations(u, split, stages, d in recompute)
        # training: each stage's receive buffers; inference: its inputs and outputs of its
        # other micro-batches, and the last stage's outputs merged
        beyond = sum(float(hybrid.step_bytes(
            u, split.bounds[k], split.bounds[k + 1], pipeline, sizes[k],
            k == split.stages - 1)) for k in stages)
        if pipeline.schedule_spec.virtual_stages and u.training:
            sent = [0.0 if not pipeline.schedule_spec.keeps_sends else
                    _sent(u, split, k, d) for k in stages]
            held[d] = float(stage_memory(params, 1, _in_flight_peak(
                pipeline, rank, len(order), max(acts), sent), transient)) + beyond
        else:  # `hybrid.in_flight`: with one device a stage, GPipe M, 1F1B min(S - k, M);
            # each of its stages with its own micro-batches in flight (inference: one,
            # every virtual stage's too, beside the others it keeps)
            held[d] = float(stage_memory(params, 1, sum(
                hybrid.in_flight(pipeline, sizes, k, u.training) * a
                for k, a in zip(stages, acts, strict=True)), transient)) + beyond
    _replicate(problem, split, held, replicas or {})
    return held


def _activations(u: Units, split: Split, stages: Sequence[int], recomputes: bool
                 ) -> tuple[list[float], float]:
    """Per stage of a device (`stages`), the activations one micro-batch in flight holds (its
    forward outputs kept and what it receives), and the device's largest transient. A
    device that `recomputes` keeps per micro-batch only what torch's stage caches until the
    backward (`fwd_cache`): what it receives and sends, the model's data inputs and
    outputs; its backward rebuilds one stage's activations at a time, its data inputs
    aside (a transient)."""
    kept = [_span(u.kept_prefix, split, k) for k in stages]
    received = [float(u.forward_bytes[split.bounds[k]]) for k in stages]
    transient = max(float(u.transient[split.bounds[k]:split.bounds[k + 1]].max(initial=0))
                    for k in stages)
    if recomputes:
        ends = [_span(u.input_prefix, split, k) for k in stages]
        transient += max(a - b for a, b in zip(kept, ends, strict=True))
        kept = [float(u.forward_bytes[split.bounds[k + 1]]) + e
                + _span(u.output_prefix, split, k) for k, e in zip(stages, ends, strict=True)]
    return [a + b for a, b in zip(kept, received, strict=True)], transient


def _sent(u: Units, split: Split, k: int, d: int) -> float:
    """What stage k (on device d) sends another device per micro-batch: its output forward,
    its input's gradient back (`hybrid.kept_sends`' terms)."""
    devices = split.devices
    ahead = k + 1 < split.stages and devices[k + 1] != d
    behind = k > 0 and devices[k - 1] != d
    return (float(u.forward_bytes[split.bounds[k + 1]]) if ahead else 0.0) + (
        float(u.backward_bytes[split.bounds[k]]) if behind else 0.0)


def _in_flight_peak(pipeline: Pipeline, rank: int, devices: int, acts: float,
                    sent: Sequence[float]) -> float:
    """The most the device of `rank` holds at once of its micro-batches, walking its order
    (its stages' `sent` per micro-batch): `acts` for each forward task whose backward task
    has not run (Megatron's warm-up count plus one at most), and what each backward task's
    stage sent, kept to the step's end where the schedule keeps its sends (all zero
    otherwise). Before 2026-12-07 the sends were not counted: `act` (2 MiB boundaries) on
    two ranks, two stages each, was planned at 81.06 MiB on rank 0 at 8 micro-batches and
    129.06 MiB at 16, where torch held 105.09 and 201.12 MiB."""
    in_flight, finished = _walk(pipeline.schedule_spec, rank, devices, len(sent),
                                pipeline.microbatches)
    return float(np.max(in_flight * acts + finished @ np.asarray(sent, dtype=np.float64)))


@functools.lru_cache(maxsize=256)
def _walk(schedule: Schedule, rank: int, devices: int, chunks: int, microbatches: int
          ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """After each task of the device's order (training): the micro-batches in flight, and
    per stage of the device the backward tasks run so far."""
    tasks = schedule.order(rank, devices, chunks, microbatches, True)
    step = np.array([1.0 if forward else -1.0 for forward, _, _ in tasks])
    done = np.zeros((len(tasks), chunks))
    for t, (forward, c, _) in enumerate(tasks):
        if not forward:
            done[t, c] = 1.0
    return np.cumsum(step), np.cumsum(done, axis=0)


def _replicate(problem: Problem, split: Split, held: list[float],
               replicas: Mapping[int, tuple[int, ...]]) -> None:
    """Each replica of a replicated device's stages holds what it holds, plus one DDP
    bucket (`hybrid`); `held` per device, updated in place."""
    u = units(problem)
    for d, members in replicas.items():
        mine = [i for k, e in enumerate(split.devices) if e == d
                for unit in u.members[split.bounds[k]:split.bounds[k + 1]] for i in unit]
        if mine:
            each = held[d] + hybrid.bucket_bytes(hybrid.gradient_bytes(problem, mine),
                                                 len(members))
            for e in members:
                held[e] = each


def off_devices(problem: Problem, placement: Sequence[int]) -> list[int]:
    """The ops that `placement` puts on a device they may not use (pinned elsewhere, or a
    device that cannot run them): a plan that does so runs nowhere, whatever its memory."""
    allowed = facts(problem).allowed
    return [i for i, d in enumerate(placement) if d not in allowed[i]]


def fits(problem: Problem, held: Sequence[float]) -> bool:
    """Whether every device holds what `held` (per device, `stage_bytes`) says it needs."""
    return all(h <= d.memory_bytes for h, d in zip(held, problem.cluster.devices, strict=True))


def _span(prefix: np.ndarray, split: Split, k: int) -> float:
    return float(prefix[split.bounds[k + 1]] - prefix[split.bounds[k]])


def period_s(problem: Problem, placement: Sequence[int],
             recompute: Collection[int] = ()) -> float:
    """T of any placement: the busiest resource of its stages (`split_of`) for one
    micro-batch, tensors relayed stage to stage (module docstring)."""
    return resource_loads(problem, split_of(problem, placement), recompute).period_s


def recompute_note(problem: Problem, placement: Sequence[int], recompute: Sequence[int],
                   held: Sequence[float]) -> str:
    """The note on the devices in `recompute` (empty where none): each one's forward ops
    run again per micro-batch, and what it holds (`held`, per device), as `solve`
    (pipeilp's plans, auto's) and `simulate` print it."""
    if not recompute:
        return ""
    c, u = costs(problem), units(problem)
    names = [d.name for d in problem.cluster.devices]
    # per unit, then over the units, the order pipeilp's figures sum in (`pipeilp.data`)
    extra = [sum(sum(c.compute[i][d] for i in ops if not u.backward[i])
                 for ops in u.members if placement[ops[0]] == d) for d in recompute]
    said = ", ".join(f"{names[d]} (+{format_seconds(t)} per micro-batch, holds "
                     f"{format_bytes(int(held[d]))})"
                     for d, t in zip(recompute, extra, strict=True))
    return (f"recomputes activations on {said}: these devices keep, for each micro-batch in "
            "flight, only the tensors their stages receive and send, and run their forward "
            "ops again in each backward pass (their own activations exist for one "
            "micro-batch at a time)")
