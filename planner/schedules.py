"""The pipeline schedules: one frozen object each, in one table.

Everything else reads a schedule through its object (`Pipeline.schedule_spec`, `of`): the
language and the JSON schema take their names from `NAMES`, the planners their stage
caps and memory rules, the simulator (`planner.pipeline.schedule`) its task order, the
torch export its class. Adding a schedule is one entry of `TABLE` (and its tests).

Per device of rank k among D running M micro-batches (`order`):

- `gpipe`: every forward task, then every backward task (all M micro-batches in flight);
  a device's stages are tasks of their own, run stage by stage;
- `1f1b`: min(D - k - 1, M) forward tasks, then one forward and one backward in turn,
  then the backward tasks left (PipeDream-flush, torch's `Schedule1F1B`, which needs at
  least as many micro-batches as stages);
- `interleaved`: each device runs K = `stages_per_device` virtual stages (stage k on
  device k mod D); tasks (stage, micro-batch) go in rounds of G = M // max(1, M // D)
  micro-batches (D where D divides M), stages ascending forward and descending backward,
  after a warm-up of min((D - k - 1) * 2 + (K - 1) * G, M * K) forward tasks, as torch's
  `ScheduleInterleaved1F1B` runs them (Megatron's order where D divides M). Groups of D
  deadlocked where D does not divide M (8 micro-batches on 6 devices), a plan torch runs.

Imports nothing of planner's: the model derives its names from it.

Two limits of "one entry": a name is read as a plain name of the language (a letter
first); `1f1b`, the one that starts with a digit, has a terminal of its own in
`grammar/plan.lark` (`SCHEDULE_1F1B`), which another such name would need too (or be
written quoted). And the script `export torch --pipeline` writes gives torch's
`ScheduleInterleaved1F1B` a rank's stages, any other class its one stage: a schedule of
virtual stages run by another torch class needs that test (`io/pipeline_step.py-tpl`,
the script's template) widened.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

#: a task of a device: (forward?, its chunk (stage of the device), micro-batch)
Task = tuple[bool, int, int]


@dataclass(frozen=True, slots=True)
class Schedule:
    """One pipeline schedule: its name and every rule that depends on it."""

    #: the name a plan writes (`schedule NAME`), in JSON and in `Pipeline.schedule`
    name: str
    #: the class of `torch.distributed.pipelining` that runs it (`export torch --pipeline`)
    torch_class: str
    #: several stages per device (`stages_per_device`, Megatron's virtual stages): stage k
    #: on device k mod D, a task per stage, micro-batches in rounds of D; torch's class
    #: needs the micro-batches a multiple of its rounds, and replicated stages cannot run it
    virtual_stages: bool = False
    #: every micro-batch's forward before any backward (GPipe): all M in flight; no stage
    #: cap and no refusal of torch's; its order never waits on a later backward
    all_in_flight: bool = False
    #: a device's stages run as a task each (else one task for all of them per micro-batch)
    task_per_stage: bool = False
    #: torch's class needs at least as many micro-batches as stages: the planners make at
    #: most M stages
    stages_at_most_microbatches: bool = False
    #: what runs when the stages are replicated or do not loop over one chain of devices
    #: (`virtual_stages`), else None
    fallback: str | None = None
    #: what runs when the devices are not a chain of stages and this order would deadlock,
    #: else None (an order that cannot wait on a later backward)
    deadlock_fallback: str | None = None
    #: torch's class waits on every send it fires only when the step ends (its runtime's
    #: `send_ops`), so in training a stage holds each micro-batch's output and its input's
    #: gradient from that micro-batch's backward task to the step's end
    keeps_sends: bool = False

    @property
    def torch_limited(self) -> bool:
        """Whether torch's class refuses some splits that planner runs (too few
        micro-batches for the stages, or for the rounds of virtual stages)."""
        return self.stages_at_most_microbatches or self.virtual_stages

    def per_device(self, stages_per_device: int) -> int:
        """Stages a device runs: `stages_per_device` with virtual stages, else one."""
        return stages_per_device if self.virtual_stages else 1

    def in_flight(self, microbatches: int, sizes: Sequence[int], k: int, training: bool) -> int:
        """Micro-batches a replica of stage `k` holds at once, the stages' replica counts
        `sizes` in pipeline order (one device a stage: all ones): its share of the
        micro-batches when all are in flight, else (1F1B) the replicas from it to the last
        stage over its own, at most its share; one without a backward pass."""
        r = sizes[k]
        share = -(-microbatches // r)
        if not training:
            return 1
        if self.all_in_flight:
            return share
        return min(-(-sum(sizes[k:]) // r), share)

    def virtual_in_flight(self, microbatches: int, per_device: int, rank: int,
                          devices: int) -> int:
        """Micro-batches whose activations each stage of the device of `rank` among
        `devices` holds at once, with `per_device` virtual stages (training): Megatron's
        warm-up and the one it starts on."""
        return min(_virtual_warm_up(rank, devices, per_device, microbatches) + 1,
                   microbatches * per_device)

    def order(self, rank: int, devices: int, chunks: int, microbatches: int, training: bool,
              warm_up: int | None = None) -> list[Task]:
        """The tasks of the device of `rank` among `devices`, its `chunks` tasks per
        micro-batch, in the schedule's order (the module docstring); `warm_up` forward
        tasks first when given and not all are in flight (a replica's, `hybrid`)."""
        mb = microbatches
        if self.virtual_stages:
            g = round_size(devices, mb)
            fwd = [(True, c, m) for g0 in range(0, mb, g) for c in range(chunks)
                   for m in range(g0, min(g0 + g, mb))]
            bwd = [(False, c, m) for g0 in range(0, mb, g)
                   for c in reversed(range(chunks)) for m in range(g0, min(g0 + g, mb))]
            warm = _virtual_warm_up(rank, devices, chunks, mb)
        else:  # chunk after chunk: a device's later stage waits for no one
            fwd = [(True, c, m) for c in range(chunks) for m in range(mb)]
            bwd = [(False, c, m) for c in reversed(range(chunks)) for m in range(mb)]
            warm = (mb * chunks if self.all_in_flight else
                    min(devices - rank - 1, mb) if warm_up is None else warm_up)
        return _in_turn(fwd, bwd, warm) if training else fwd

    def by_microbatch(self) -> Schedule:
        """The order with a device's stages as one task per micro-batch (micro-batch
        first): under an all-in-flight schedule, one that never deadlocks."""
        return dataclasses.replace(self, name=f"{self.name} by micro-batch",
                                   task_per_stage=False)

    def estimate(self, microbatches: int, period_s: float, stage_s: Sequence[float]) -> float:
        """The iteration without simulating: M - 1 periods of the busiest resource, plus
        each stage's load once (the fill and drain pass every stage)."""
        return (microbatches - 1) * period_s + math.fsum(stage_s)


def rounds(devices: int, microbatches: int) -> int:
    """The rounds of interleaved 1F1B on `devices` devices, as torch's
    `ScheduleInterleaved1F1B` counts them: max(1, M // D); torch refuses M that they do
    not divide (`pipeline.runnable`)."""
    return max(1, microbatches // devices)


def round_size(devices: int, microbatches: int) -> int:
    """The micro-batches of one round of interleaved 1F1B: M // its `rounds` (D where D
    divides M; at least one)."""
    return max(1, microbatches // rounds(devices, microbatches))


def _virtual_warm_up(rank: int, devices: int, chunks: int, microbatches: int) -> int:
    """The warm-up of interleaved 1F1B (torch's; Megatron's where D divides M): the forward
    tasks the device of `rank` among `devices`, with `chunks` virtual stages, runs before
    its first backward task."""
    return min((devices - rank - 1) * 2 + (chunks - 1) * round_size(devices, microbatches),
               microbatches * chunks)


def _in_turn(fwd: list[Task], bwd: list[Task], warm: int) -> list[Task]:
    """`warm` forward tasks, then one forward and one backward in turn, then the rest."""
    out = fwd[:warm]
    f = warm
    for task in bwd:
        if f < len(fwd):
            out.append(fwd[f])
            f += 1
        out.append(task)
    return out


#: every schedule, in the order the language lists them
TABLE: tuple[Schedule, ...] = (
    Schedule("gpipe", "ScheduleGPipe", all_in_flight=True, task_per_stage=True),
    Schedule("1f1b", "Schedule1F1B", stages_at_most_microbatches=True,
             deadlock_fallback="gpipe"),
    Schedule("interleaved", "ScheduleInterleaved1F1B", virtual_stages=True,
             task_per_stage=True, fallback="1f1b", deadlock_fallback="gpipe", keeps_sends=True),
)
#: the schedules' names, in `TABLE`'s order
NAMES: tuple[str, ...] = tuple(s.name for s in TABLE)
#: name -> schedule
BY_NAME: Mapping[str, Schedule] = MappingProxyType({s.name: s for s in TABLE})
#: a plan's schedule when it names none
DEFAULT = "1f1b"


def of(name: str) -> Schedule:
    """The schedule named `name` (KeyError for a name not in `TABLE`: the language and
    `api.checks` report those first)."""
    return BY_NAME[name]


def find(name: object) -> Schedule | None:
    """The schedule named `name`, or None for anything else (a model built in Python may
    hold any value)."""
    return BY_NAME.get(name) if isinstance(name, str) else None
