"""Run a plan as a pipeline: M micro-batches under GPipe, 1F1B or interleaved 1F1B.

The simulator (`planner.simulate`) is the judge here too: the graph is copied once per
micro-batch (the copies share nothing but the devices and links), every copy placed as
the plan places the graph, and each device runs its ops in the order the schedule gives
(`Plan.order`), so compute, transfers and the contention model are today's, unchanged.

A device's work for one micro-batch is a forward task (its forward ops, in topological
order) and, in training, a backward task. Devices are ranked by their first stage in
pipeline order (`split_of`), and each runs its tasks in its schedule's order
(`planner.schedules`: GPipe's, 1F1B's, interleaved 1F1B's). Under `gpipe` (a schedule
with every micro-batch in flight and a task per stage), a device with several stages (a
plan that is not a chain) runs them either stage by stage (all micro-batches of one
before the next forward, in reverse backward: its later stage waits on nobody while its
earlier one could run) or as one task per micro-batch, micro-batch first: whichever the
simulator finds shorter (on a 1-10-1 ms sandwich the first, on GPT-24's one-pass plan
the second).

A plan whose devices are not a chain of stages (a device's stage needing a later device's
work of the same micro-batch, as in many one-pass plans) can deadlock under 1F1B: the run
then falls back to GPipe's order (`Schedule.deadlock_fallback`) and says so in `note`.
Whether it deadlocks is `order.deadlocks`' verdict (the ops that would never start, found
without simulating), through `split.runs`, the one rule the memory model
(`split.stage_bytes`) counts micro-batches in flight by: GPipe's M there. Micro-batch
first never deadlocks (every device's order follows one global order: micro-batch, then
topological position); stage by stage can (units whose edges run against the pipeline
order, through colocation), and then loses to it.

A device that recomputes its activations runs each unit's forward ops again right before
the unit's first backward op (its compute is added to that op's).

Tied weights (`tie` of forward ops whose holders have backward ops, on two devices or
more): once every holder's backward ops of every micro-batch have run, the holders'
devices all-reduce the weight's gradient (`cost.allreduce_time`, Megatron's embedding
group), one all-reduce after another in the order they become ready; the iteration ends
when the last one does, if after the pipeline's last op. The links are idle by then in a
chain of stages (the first stage's backward ends the iteration), so the all-reduce is
timed after the simulation, not inside it.

A plan on one device is not simulated: that device never waits, so the iteration is its
work for M micro-batches (its tasks, for the timeline, back to back in the schedule's
order).

`PipelineRun.tasks` keeps when each task ran: per device, micro-batch and direction (and
stage, under `interleaved`), from its first op's start to its last op's end in the
simulation of the copies (op i of micro-batch m is op i + m * n there), for the HTML
report's micro-batch timeline.

Memory is the split model's (`split.stage_bytes`), not the simulator's: a copy of the
graph per micro-batch would count each copy's params.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from .. import fastsim
from ..cost import Costs, costs, repeated_problem, with_costs
from ..fastsim import FastResult
from ..model import Cluster, Pipeline, Problem, derived
from ..plan import Plan
from ..schedules import Schedule, rounds
from ..schedules import of as schedule_of
from ..simulate import SimResult, simulate
from . import hybrid
from .allreduce import AllReduce, gradient_allreduces
from .order import Relayed, orders, relayed, task_ops
from .split import (
    Split,
    fits,
    interleaves,
    off_devices,
    resource_loads,
    runs,
    runs_as,
    split_of,
    stage_bytes,
)
from .units import unit_arrays, units

#: a memory cap no copy of a graph reaches: the copies' memory is not the simulator's to judge
_UNBOUNDED = 2**62


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage of a run: its device, its ops, and its busy time over the iteration
    (all its replicas'); replicated (`planner.pipeline.hybrid`), the devices of its
    replicas (`device` first) and the seconds of its gradients' all-reduce."""

    device: int
    ops: tuple[int, ...]
    busy_s: float
    load_s: float
    replicas: tuple[int, ...] = ()
    allreduce_s: float = 0.0

    @property
    def devices(self) -> tuple[int, ...]:
        """The devices that run the stage: its replicas', or its one device."""
        return self.replicas or (self.device,)


@dataclass(frozen=True, slots=True)
class Task:
    """When one task ran: a device's forward or backward ops of one micro-batch (of one of
    its stages under `interleaved`; of all its stages otherwise)."""

    device: int
    #: the index in `PipelineRun.stages` of the task's (first) stage
    stage: int
    microbatch: int
    forward: bool
    start_s: float
    end_s: float


@dataclass(frozen=True, slots=True)
class PipelineRun:
    """What running a plan as a pipeline gave (see the module docstring)."""

    schedule: str
    microbatches: int
    iteration_s: float
    stages: tuple[Stage, ...]
    #: per device: busy seconds over the iteration
    busy_s: tuple[float, ...]
    #: per device: the split model's peak bytes (`split.stage_bytes`)
    memory_bytes: tuple[float, ...]
    #: per device: its busiest resource for one micro-batch, compute or transfers
    #: (`split.resource_loads`); a replica its share, at its own pace (`_replica_loads`)
    loads_s: tuple[float, ...]
    note: str = ""
    #: when each task ran (module docstring), device by device in pipeline order; the
    #: tasks that never ran (a deadlock) left out
    tasks: tuple[Task, ...] = ()
    #: seconds of the gradient all-reduces (tied weights', module docstring; replicated
    #: stages', `hybrid`), in `iteration_s` where they end after the pipeline's last op
    allreduce_s: float = 0.0
    #: samples per micro-batch (`Pipeline.microbatch_size`)
    microbatch_size: int = 1
    #: each all-reduce behind `allreduce_s`, in the order it started
    allreduces: tuple[AllReduce, ...] = ()

    @property
    def throughput(self) -> float:
        """Samples per second: the iteration's micro-batches times their size, over it."""
        if not math.isfinite(self.iteration_s) or self.iteration_s <= 0:
            return 0.0
        return self.microbatches * self.microbatch_size / self.iteration_s

    @property
    def time_per_microbatch_s(self) -> float:
        """The iteration's time over its micro-batches."""
        return self.iteration_s / self.microbatches

    @property
    def period_s(self) -> float:
        """T: the busiest resource (a device's compute, a link or channel's transfers) for
        one micro-batch."""
        return max(self.loads_s, default=0.0)

    @property
    def bubble_fraction(self) -> float:
        """The share of the iteration the devices that hold stages are idle, on average."""
        used = sorted({d for s in self.stages for d in s.devices})
        if not used or not math.isfinite(self.iteration_s) or self.iteration_s <= 0:
            return 0.0
        busy = sum(self.busy_s[d] for d in used)
        return max(0.0, 1.0 - busy / (self.iteration_s * len(used)))


_NONE: Mapping[int, tuple[int, ...]] = MappingProxyType({})
_Key = tuple[tuple[int, ...], Pipeline, frozenset[int], tuple[tuple[int, tuple[int, ...]], ...]]
#: a simulation of the copies, as `run` reads it: makespan, busy, start and end times
_Timing = SimResult | FastResult
#: copied ops `simulate` runs in a process before the compiled simulator takes over, where
#: it is not loaded yet (rent or buy): loading it, 0.45 s of CPU (numba), costs what the
#: kernel saves on about 95,000 copied ops (GPT-24's: 5.9 us an op through `simulate`, the
#: copies' graph built, 1.0 us compiled), so a short command (a small graph, a few runs)
#: never pays it and a long one pays it once
FAST_AFTER_OPS = 100_000
_reference_ops = 0


def run(problem: Problem, placement: Sequence[int], pipeline: Pipeline,
        recompute: Collection[int] = (), replicas: Mapping[int, tuple[int, ...]] = _NONE,
        ) -> PipelineRun:
    """Simulate `placement` as a pipeline of `pipeline.microbatches` micro-batches, the
    devices in `recompute` running their forward ops again in each backward pass, and a
    device in `replicas` running its stages on its group of replicas (`hybrid`: the
    representative device -> its group, itself first). Once per problem, placement,
    pipeline, recomputation and replicas: the solver and the report ask for the same."""
    done: dict[_Key, PipelineRun] = derived(problem, "pipeline.runs", dict)
    groups = tuple(sorted((d, tuple(g)) for d, g in replicas.items() if len(g) > 1))
    key = (tuple(placement), pipeline, frozenset(recompute), groups)
    if key not in done:
        done[key] = _run(problem, key[0], pipeline, key[2], MappingProxyType(dict(groups)))
    return done[key]


def run_fits(problem: Problem, placement: Sequence[int], pipeline: Pipeline) -> tuple[float, bool]:
    """`placement`'s simulated iteration (`run`) and whether it fits the memory as it runs
    with every op on a device it may use: how `auto` and `pipedp` judge a plan planned for
    another schedule (interleaved's fallback, 1F1B) or by another rule (the uniform split
    reads no pins)."""
    ran = run(problem, placement, pipeline)
    return ran.iteration_s, fits(problem, ran.memory_bytes) and not off_devices(problem,
                                                                                placement)


def run_planned(problem: Problem, placement: Sequence[int], pipeline: Pipeline,
                info: Mapping[str, Any]) -> PipelineRun:
    """`run` of a solution's plan, with what its `info` says: the devices that recompute
    (`info["recompute"]`, names) and the replicated stages' groups (`info["replicas"]`,
    `hybrid.replica_groups`)."""
    index = problem.cluster.device_index
    again = [index[n] for n in info.get("recompute") or () if n in index]
    return run(problem, placement, pipeline, again, hybrid.replica_groups(problem, info))


# complex: the schedule actually run: one device, or the simulator with its fallbacks
# (interleaved -> 1f1b, deadlock -> gpipe, stage- or micro-batch-first), then stage totals
def _run(problem: Problem, placement: Sequence[int], pipeline: Pipeline,
         recompute: frozenset[int], replicas: Mapping[int, tuple[int, ...]]) -> PipelineRun:
    split = split_of(problem, placement)
    groups = {d: g for d, g in replicas.items() if d in split.devices}
    schedule, note = _first_schedule(split, pipeline, bool(groups))
    c = costs(problem)
    allreduce = 0.0  # holders on one device share their weight
    by_group: dict[int, float] = {}
    spans: tuple[AllReduce, ...] = ()
    if split.stages == 1 and not groups:  # one device never waits: its work, one after another
        d = split.devices[0]
        again = d in recompute
        work = pipeline.microbatches * math.fsum(
            c.compute[i][d] * (2 if again and i not in problem.graph.backward_of else 1)
            for i in range(len(placement)))
        iteration = work
        busy = tuple(work if e == d else 0.0 for e in range(len(problem.cluster.devices)))
        tasks = _one_device_tasks(problem, d, pipeline, schedule, again)
    else:
        schedule, ran, result, deadlock = _executed(problem, placement, split, pipeline,
                                                    schedule, recompute, groups)
        note = deadlock or note
        iteration, busy = result.makespan_s, tuple(result.busy_s)
        tasks = _task_times(problem, split, ran, pipeline.microbatches, result, groups)
        iteration, allreduce, by_group, spans = gradient_allreduces(
            problem, placement, split, pipeline, result, iteration, groups)
    loads = resource_loads(problem, split, recompute, as_run=True)
    flat, start, _, backward = unit_arrays(problem)
    compute = _compute_array(problem)
    stages = []
    for k, d in enumerate(split.devices):
        ops = flat[start[split.bounds[k]]:start[split.bounds[k + 1]]]
        # fsum is exactly rounded: the same sum in any order
        rerun = math.fsum(compute[ops[~backward[ops]], d].tolist()) if d in recompute else 0.0
        share = len(hybrid.group(groups, d))
        stages.append(Stage(d, tuple(ops.tolist()), pipeline.microbatches * (
            math.fsum(compute[ops, d].tolist()) + rerun), loads.stage_s[k] / share,
            groups.get(d, ()), by_group.get(d, 0.0)))
    device_s = _replica_loads(problem, stages, loads.device_s, recompute)
    # memory as the schedule run holds it: GPipe's M in flight where it fell back to it on
    # a deadlock (`stage_bytes` applies the interleaved -> 1F1B fallback itself)
    counted = pipeline if schedule.name == pipeline.schedule else dataclasses.replace(
        pipeline, schedule=schedule.name)
    return PipelineRun(schedule.name, pipeline.microbatches, iteration, tuple(stages), busy,
                       tuple(stage_bytes(problem, split, counted, recompute, groups)),
                       tuple(device_s), note, tasks, allreduce, pipeline.microbatch_size,
                       spans)


def _compute_array(problem: Problem) -> np.ndarray:
    """`costs(problem).compute` as an array (op, device), once per problem."""
    return derived(problem, "pipeline.compute", lambda: np.array(costs(problem).compute,
                                                                  dtype=np.float64))


def _replica_loads(problem: Problem, stages: Sequence[Stage], device_s: Sequence[float],
                   recompute: Collection[int]) -> list[float]:
    """Per device, its busiest resource for one micro-batch (`device_s`), where a replica of
    a replicated stage takes its share of the micro-batches, each at its own pace, as the
    simulation runs them: the larger of the stage's device's load and its own compute of
    the stage (its forward ops again where the stage recomputes), over the replicas (a
    slower replica is charged its own time)."""
    out = list(device_s)
    u = units(problem)
    compute = costs(problem).compute
    for stage in stages:
        again = stage.device in recompute
        for e in stage.replicas:  # pins aside: a pinned stage's replicas run it too (`hybrid`)
            own = math.fsum(compute[i][e] * (2 if again and not u.backward[i] else 1)
                            for i in stage.ops)
            out[e] = max(device_s[stage.device], own) / len(stage.replicas)
    return out


def _first_schedule(split: Split, pipeline: Pipeline, grouped: bool) -> tuple[Schedule, str]:
    """The plan's schedule, or its fallback (interleaved -> 1F1B) where its stages are
    replicated or not `stages_per_device` per device in a repeating chain, with a note."""
    schedule = pipeline.schedule_spec
    ran = runs_as(split, pipeline, grouped)
    if ran is pipeline:
        return schedule, ""
    fallback = ran.schedule_spec
    if fallback is schedule:  # another count a device (`runs_as`)
        return schedule, (f"its stages are {ran.stages_per_device} per device in a repeating "
                          f"chain, not {pipeline.stages_per_device}: run so")
    return fallback, (f"its stages are replicated: run as {fallback.name}" if grouped else
                      f"its stages are not {pipeline.stages_per_device} per device in a "
                      f"repeating chain: run as {fallback.name}")


def _executed(problem: Problem, placement: Sequence[int], split: Split, pipeline: Pipeline,
              schedule: Schedule, recompute: Collection[int],
              groups: Mapping[int, tuple[int, ...]]
              ) -> tuple[Schedule, Schedule, _Timing, str]:
    """The copies simulated under `schedule` or its fallbacks: (the schedule run, the order
    run, its simulation, a note where it deadlocked and fell back)."""
    # the one rule `stage_bytes` counts by: an order that deadlocks is not simulated
    stuck = runs(problem, split, pipeline, groups).schedule != schedule.name
    result = None if stuck else _timed(problem, placement, split, pipeline, schedule,
                                       recompute, groups)
    note = ""
    if result is None or (not math.isfinite(result.makespan_s)
                          and schedule.deadlock_fallback is not None):
        fallback = schedule_of(schedule.deadlock_fallback or schedule.name)
        note = (f"{_deadlock_cause(split, pipeline, schedule)}, and {schedule.name} would "
                f"deadlock: run in {fallback.name}'s order")
        schedule = fallback
        result = _timed(problem, placement, split, pipeline, schedule, recompute, groups)
    ran = schedule  # the order run (micro-batch first: under the schedule's name)
    if (schedule.all_in_flight and schedule.task_per_stage
            and len(set(split.devices)) < split.stages):
        # a device with several stages: stage by stage, or micro-batch first, whichever
        # the simulator finds shorter (neither wins everywhere; the first can deadlock)
        first = schedule.by_microbatch()
        other = _timed(problem, placement, split, pipeline, first, recompute, groups)
        if not other.makespan_s >= result.makespan_s:
            ran, result = first, other
    return schedule, ran, result, note


@dataclass(frozen=True, slots=True)
class Simulation:
    """The simulation behind a `PipelineRun`, op by op (for `--trace`): the graph copied
    once per micro-batch with its relays (op i of micro-batch m is op i + m * `width`; ops
    `n_ops` and on of a copy are relays, relay r of stage `relay_stage[r]`), as run."""

    problem: Problem
    result: SimResult
    run: PipelineRun
    width: int
    n_ops: int
    relay_stage: tuple[int, ...]


def simulation(problem: Problem, placement: Sequence[int], pipeline: Pipeline,
               recompute: Collection[int] = (), replicas: Mapping[int, tuple[int, ...]] = _NONE,
               ) -> Simulation:
    """The copies' simulation of `run` (same arguments), under the schedule and order that
    `run` ran; a plan on one device is simulated too (`run` adds up its work instead: the
    same times, to rounding)."""
    the_run = run(problem, placement, pipeline, recompute, replicas)
    split = split_of(problem, placement)
    groups = {d: g for d, g in replicas.items() if d in split.devices and len(g) > 1}
    schedule, _ = _first_schedule(split, pipeline, bool(groups))
    again = frozenset(recompute)
    _, ran, _, _ = _executed(problem, placement, split, pipeline, schedule, again, groups)
    # the reference's full result (`_executed` may have timed it with the compiled twin)
    expanded, plan, relay = _expanded(problem, placement, split, pipeline, ran, again, groups)
    return Simulation(expanded, simulate(expanded, plan), the_run, len(relay.graph.ops),
                      len(problem.graph.ops), relay.stage)


def _deadlock_cause(split: Split, pipeline: Pipeline, schedule: Schedule) -> str:
    """Why `schedule`'s order deadlocked: virtual stages in a repeating chain whose
    micro-batches its rounds do not divide (what torch refuses too), else a plan whose
    devices are not a chain of stages."""
    m, d = pipeline.microbatches, len(set(split.devices))
    if schedule.virtual_stages and interleaves(split, pipeline.stages_per_device):
        r = rounds(d, m)
        if m % r:
            return (f"its {m} micro-batches are not a multiple of {schedule.name}'s rounds "
                    f"on {d} devices, max(1, {m} // {d}) = {r}")
    return "its devices are not a chain of stages"


def _simulate(problem: Problem, placement: Sequence[int], split: Split, pipeline: Pipeline,
              schedule: Schedule, recompute: Collection[int] = (),
              groups: Mapping[int, tuple[int, ...]] = _NONE) -> SimResult:
    """The reference simulator's run of the copies under `schedule`."""
    expanded, plan, _ = _expanded(problem, placement, split, pipeline, schedule, recompute,
                                  groups)
    return simulate(expanded, plan)


def _timed(problem: Problem, placement: Sequence[int], split: Split, pipeline: Pipeline,
           schedule: Schedule, recompute: Collection[int] = (),
           groups: Mapping[int, tuple[int, ...]] = _NONE) -> _Timing:
    """`_simulate`, through the compiled simulator where its kernel is loaded: the same
    makespan, busy, start and end times to the bit (tests/pipeline/test_fast_copies.py),
    its tables tiled from one copy's (`fastsim.Evaluator.repeated`) instead of the copies'
    graph built and read op by op (6x less CPU on GPT-24's 5,448 copied ops), once the kernel
    is loaded or this process has simulated `FAST_AFTER_OPS` copied ops. Where the kernel
    cannot answer exactly, the evaluator asks `simulate`."""
    global _reference_ops
    if not (fastsim.loaded() or _reference_ops >= FAST_AFTER_OPS) or not fastsim.ready():
        result = _simulate(problem, placement, split, pipeline, schedule, recompute, groups)
        _reference_ops += len(result.start_s)
        return result
    one, where, order, _ = _one_copy(problem, placement, split, pipeline, schedule, recompute,
                                     groups)
    copies = fastsim.Evaluator(one).repeated(pipeline.microbatches)
    return copies.run(where, order)


def _expanded(problem: Problem, placement: Sequence[int], split: Split, pipeline: Pipeline,
              schedule: Schedule, recompute: Collection[int],
              groups: Mapping[int, tuple[int, ...]]) -> tuple[Problem, Plan, Relayed]:
    """The copies' problem (a copy of the relayed graph per micro-batch), their plan under
    `schedule`, and the relayed graph copied."""
    one, where, order, relay = _one_copy(problem, placement, split, pipeline, schedule,
                                         recompute, groups)
    plan = Plan(tuple(where.tolist()), tuple(tuple(o.tolist()) for o in order))
    return repeated_problem(one, pipeline.microbatches), plan, relay


def _one_copy(problem: Problem, placement: Sequence[int], split: Split, pipeline: Pipeline,
              schedule: Schedule, recompute: Collection[int],
              groups: Mapping[int, tuple[int, ...]]
              ) -> tuple[Problem, np.ndarray, tuple[np.ndarray, ...], Relayed]:
    """What `_expanded` copies: one micro-batch's problem (the relayed graph, on devices of
    unbounded memory), the copies' placement and order under `schedule` (int64 arrays, as
    the compiled simulator reads them), and the relayed graph."""
    relay = relayed(problem, placement, split)
    mb = pipeline.microbatches
    cluster = problem.cluster
    roomy = Cluster(cluster.name, tuple(dataclasses.replace(d, memory_bytes=_UNBOUNDED)
                                        for d in cluster.devices), cluster.links)
    c = costs(problem)
    compute = c.compute
    if recompute:  # a unit's first backward op runs the unit's forward ops again first
        compute = _with_recompute(problem, placement, recompute, groups)
    compute = compute + ((0.0,) * len(cluster.devices),) * len(relay.stage)
    one = with_costs(Problem(problem.name, relay.graph, roomy, "static", problem.contention),
                     Costs(compute, c.latency, c.inv_bandwidth))
    order = orders(problem, relay, split, pipeline, schedule, groups)
    # micro-batch m of a replicated stage on its replica m mod r (`hybrid`)
    where = np.tile(np.array(relay.placement, dtype=np.int64), mb) if not groups else np.array(
        [hybrid.group(groups, d)[m % len(hybrid.group(groups, d))]
         for m in range(mb) for d in relay.placement], dtype=np.int64)
    return one, where, order, relay


def _with_recompute(problem: Problem, placement: Sequence[int], recompute: Collection[int],
                    groups: Mapping[int, tuple[int, ...]] = _NONE
                    ) -> tuple[tuple[float, ...], ...]:
    """The compute table with each recomputing unit's forward compute added to its first
    backward op (in topological order), on the unit's device and on each of its replicas
    (`groups`: a replicated stage recomputes on every replica, as its memory and the
    exported script have it), at each device's own pace."""
    c = costs(problem)
    u = units(problem)
    table = [list(row) for row in c.compute]
    for ops in u.members:
        d = placement[ops[0]]
        backward = [i for i in ops if u.backward[i]]
        if d in recompute and backward:
            for e in hybrid.group(groups, d):
                table[backward[0]][e] += sum(c.compute[i][e] for i in ops
                                             if not u.backward[i])
    return tuple(map(tuple, table))


def _task_times(problem: Problem, split: Split, schedule: Schedule, mb: int,
                result: _Timing, groups: Mapping[int, tuple[int, ...]] = _NONE,
                ) -> tuple[Task, ...]:
    """When each task ran in `result` (the copies' simulation): its first op's start to
    its last op's end, on the replica that ran it; a task with an op that never ran is
    left out."""
    n = len(result.start_s) // mb  # the graph's ops and its relays, per micro-batch
    start = np.asarray(result.start_s, dtype=np.float64).reshape(mb, n)
    end = np.asarray(result.end_s, dtype=np.float64).reshape(mb, n)
    out = []
    for d, chunks in task_ops(problem, split, schedule):
        for stage, fwd, bwd in chunks:
            for forward, ops in ((True, fwd), (False, bwd)):
                if not len(ops):
                    continue
                first, last = start[:, ops].min(axis=1), end[:, ops].max(axis=1)
                members = hybrid.group(groups, d)
                out += [Task(members[m % len(members)], stage, m, forward, float(first[m]),
                             float(last[m]))
                        for m in range(mb)
                        if math.isfinite(first[m]) and math.isfinite(last[m])]
    return tuple(out)


def _one_device_tasks(problem: Problem, d: int, pipeline: Pipeline, schedule: Schedule,
                      again: bool) -> tuple[Task, ...]:
    """The tasks of a plan on device `d` alone: back to back in the schedule's order."""
    c = costs(problem)
    u = units(problem)
    n = len(problem.graph.ops)
    fwd = math.fsum(c.compute[i][d] for i in range(n) if not u.backward[i])
    bwd = math.fsum(c.compute[i][d] for i in range(n) if u.backward[i]) + (fwd if again else 0)
    out, t = [], 0.0
    for forward, _, m in schedule.order(0, 1, 1, pipeline.microbatches, u.training):
        took = fwd if forward else bwd
        out.append(Task(d, 0, m, forward, t, t + took))
        t += took
    return tuple(out)
