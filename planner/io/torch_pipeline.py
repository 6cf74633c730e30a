"""A pipeline plan out to PyTorch: what `torch.distributed.pipelining` reads, and a script.

`pipeline_export(problem, traced, placement, devices)` takes a plan made under `objective
pipeline` for a spec that `planner import torch` wrote (its op names are the traced
model's) and gives a `TorchPipeline`:

- the **split**: the plan's stages (`planner.pipeline.split.split_of`: maximal runs of
  consecutive pipeline units on one device) as `torch.distributed.pipelining.pipeline`'s
  `split_spec`, `{module path: SplitPoint.BEGINNING}` at the first op of every stage after
  the first. torch splits the graph `torch.export` records in the order `forward()` runs,
  so the plan's stages must be contiguous in that order (the order the traced graph lists
  the ops), and each stage after the first must begin at a call of a module that
  `forward()` calls once (a `SplitPoint` wraps the module's `forward`, so a module called
  k times would split k times; a function such as `x + y` has no path to name), after
  every op that reads a model input (torch gives the inputs to the first stage alone);
- the **ranks**: one per device, in stage order. `gpipe` (`ScheduleGPipe`) and `1f1b`
  (`Schedule1F1B`) run one stage per rank; `interleaved` (`ScheduleInterleaved1F1B`)
  runs stage k on rank k mod D, torch's loop order, which the plan must follow;
- the **schedule** class and the number of micro-batches, from the plan's settings. The
  spec's graph is one micro-batch (the traced inputs); a step feeds M of them.

When a stage boundary is not a module boundary, the export offers the **nearest split**
that is: the one, among splits whose stages are contiguous in `forward()`'s order and begin
at modules called once (never cutting a pipeline unit), that keeps every stage of the plan
it can, then moves the least compute, then the fewest forward ops (a backward op goes with
its forward op) to another stage than the plan's; stages keep their devices; a stage is
left out only when fewer boundaries exist than the plan has stages, or when every split
keeping it puts an op on a device it may not use (never under `interleaved`); ties go to
the earlier boundary. Its cost under the plan's own model (`planner.pipeline.schedule.run`:
period and iteration) is given next to the plan's, and `pipeline_error` turns it into
diagnostic E946 unless the caller accepts it.
A plan that torch's schedules cannot run as placed (no `objective pipeline`, a device with
two stages outside `interleaved`'s loop order, fewer micro-batches than stages under
`1f1b`) is E947.

With `ranks` (`--ranks N`) the split runs on N processes where it allows (`at_ranks`):
under `gpipe` and `1f1b` consecutive stages merge into N groups (the grouping whose busiest
group computes least), under `interleaved` the stages loop over N ranks; E947 otherwise,
naming the N that fit. The cost of the split exported is given next to the plan's.

With `replicas` (a hybrid plan: a stage's device -> its group of devices holding replicas,
itself first: a plan file's `replicas`, a solution's `info["replicas"]`) the
ranks make a 2-D DeviceMesh, pipeline x data (rank = pipeline rank x R + replica), as
torchtitan composes them: each stage is built on the mesh's "pp" group and wrapped in DDP
over its "dp" group, and each of the R replica pipelines runs M / R micro-batches of its
share of the batch (split over the replicas first). That needs every stage on R devices
and M a multiple of R (E950 otherwise, and with `ranks`).

With `recompute` (the devices that recompute their activations: a plan file's
`recompute`, as `pipeilp` chooses) the stages on those devices are **recomputing**
(`TorchPipeline.recompute`): the script runs each one's module under
`torch.utils.checkpoint`, as the plan's memory figures assume. Where `ranks` moves stages,
a rank recomputes when any op it runs was planned on a recomputing device (it then holds
no more activations than planned), and every stage of its device does (the plan's model is
per device). The costs given count the recomputation.

Where torch can cut and the nearest split are `torch_split_points`, the regrouping on
other ranks `torch_ranks`, and the script `torch_pipeline_script.pipeline_script`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .. import schedules
from ..cost import tied_duplicate_bytes
from ..errors import Diagnostic, DiagnosticSink, Span, SpecError
from ..model import Pipeline, Problem
from ..pipeline.schedule import PipelineRun, run
from ..pipeline.split import Split, fits, runs_as, split_of
from ..pipeline.units import units
from ..plan import check_recompute
from ..units import format_seconds
from ..workload.training import optimizer_of
from .torch_capture import keyword_named
from .torch_export import check_placement, forward_placement
from .torch_import import Traced
from .torch_mesh import mesh, refuse_ranks
from .torch_ranks import at_ranks
from .torch_split_points import (
    ForwardOp,
    forward_ops,
    move_costs,
    nearest_split,
    valid_cuts,
    why_not_a_split,
)

#: the learning rate of the script's optimizer step (its `LR`, `--lr` overrides it; the JSON's)
SCRIPT_LR = 0.001
#: the plan's `schedule` -> torch's class (`schedules.Schedule.torch_class`)
SCHEDULE_CLASSES: Mapping[str, str] = {s.name: s.torch_class for s in schedules.TABLE}


@dataclass(frozen=True, slots=True)
class Cost:
    """A split run as the plan's pipeline under its model (`pipeline.schedule.run`)."""

    period_s: float
    iteration_s: float
    #: the schedule the simulator ran (it may fall back; `note` says why)
    schedule: str
    note: str
    #: whether every device holds its stages' memory (the split model's)
    fits: bool

    def describe(self) -> str:
        """`period 33 ns, iteration 208 ns` (and what does not fit)."""
        text = (f"period {format_seconds(self.period_s)}, iteration "
                f"{format_seconds(self.iteration_s)}")
        return text if self.fits else text + ", over a device's memory"


@dataclass(frozen=True, slots=True)
class TorchStage:
    """One stage: its rank, its devices, the module it begins at (None for the first) and
    its forward ops in `forward()`'s order."""

    index: int
    rank: int
    device: str
    torch_device: str
    begins_at: str | None
    ops: tuple[str, ...]


@dataclass(frozen=True)
class TorchPipeline:
    """A pipeline plan as `torch.distributed.pipelining` runs it (module docstring)."""

    plan: str
    #: the schedule the exported split runs as: the plan's, or its fallback (`interleaved`
    #: whose stages are not K per device in a repeating chain: `1f1b`, `split.runs_as`)
    schedule: str
    microbatches: int
    training: bool
    stages: tuple[TorchStage, ...]
    #: spec device -> torch device
    devices: Mapping[str, str]
    #: op -> spec device, the exported split's (the plan's when `exact`)
    placement: Mapping[str, str]
    cost: Cost
    #: whether the plan's stage boundaries are module boundaries (the split is the plan's)
    exact: bool
    #: why they are not ("" when exact)
    reason: str
    #: the forward ops the exported split puts on another stage than the plan's
    moved: tuple[str, ...]
    #: the plan's own cost (the same as `cost` when exact)
    plan_cost: Cost
    #: the plan's stages, as (device, first op in forward()'s order)
    plan_stages: tuple[tuple[str, str], ...]
    #: how the stages were mapped to other ranks than the plan's devices ("" when not)
    regrouped: str = ""
    #: how many ranks (devices) the plan's own stages take
    plan_ranks: int = 0
    #: per pipeline rank, the spec devices holding replicas of its stage(s), the planned
    #: one first (a 2-D DeviceMesh, pipeline x data); empty when no stage is replicated
    replicas: tuple[tuple[str, ...], ...] = ()
    #: the stages (indices) whose devices recompute their activations (`torch.utils.checkpoint`)
    recompute: tuple[int, ...] = ()
    #: the optimizer whose state the spec's backward ops hold (`training.optimizer_of`: the
    #: `--optimizer` of `planner import torch --training`); None where they say none
    optimizer: str | None = None
    #: per device of the exported stages, the optimizer state the plan's memory counts there
    #: (`optimizer_state`)
    optimizer_state: Mapping[str, int] = field(default_factory=dict)

    @property
    def script_optimizer(self) -> str | None:
        """The optimizer the script steps (its `OPTIMIZER`): the spec's, `sgd` where it
        says none; None for inference."""
        return (self.optimizer or "sgd") if self.training else None

    @property
    def split_spec(self) -> dict[str, str]:
        """`{module path: "BEGINNING"}`: a `SplitPoint.BEGINNING` per stage after the first."""
        return {s.begins_at: "BEGINNING" for s in self.stages if s.begins_at is not None}

    @property
    def schedule_class(self) -> str:
        """The name of torch's schedule class in `torch.distributed.pipelining`."""
        return SCHEDULE_CLASSES[self.schedule]

    @property
    def data_parallel(self) -> int:
        """How many replicas each stage has (1: one pipeline, no data dimension)."""
        return len(self.replicas[0]) if self.replicas else 1

    @property
    def pipeline_ranks(self) -> int:
        """How many ranks one pipeline takes (the mesh's pipeline dimension)."""
        return len({s.rank for s in self.stages})

    @property
    def ranks(self) -> int:
        """How many processes run the step (one per device): the pipeline's ranks times
        the replicas of each stage."""
        return self.pipeline_ranks * self.data_parallel


# complex: the export's steps (E947, the plan's stages, the nearest split when the plan's cuts
# cannot run, the result); most branches are the comprehensions that fill TorchPipeline
def pipeline_export(problem: Problem, traced: Traced, placement: Mapping[str, str],
                    devices: Mapping[str, str], where: Span | None = None,
                    ranks: int | None = None,
                    replicas: Mapping[int, tuple[int, ...]] | None = None,
                    recompute: str | Iterable[str] = ()) -> TorchPipeline:
    """The pipeline `placement` (op -> device, a plan of `problem`) makes of `traced`, or
    the nearest split at module boundaries (see the module docstring; `exact` says which);
    with `ranks`, run by that many processes where the split allows (`at_ranks`); with
    `replicas` (a stage's device -> its group of devices holding replicas, itself first:
    a plan file's, `plan.load_replicas`), every stage replicated on the data dimension of a
    2-D mesh (`_mesh`); with `recompute` (device names, a plan file's, or one name alone),
    the stages on those devices recomputing their activations (`_recomputing`).

    Raises E945 when the plan does not match the model, E947 when torch's schedules
    cannot run it, E950 when its replicas make no 2-D mesh and E504/E515 for a name in
    `recompute` the plan's model would ignore (`plan.check_recompute`); `where` locates
    those diagnostics (the placement file). A `recompute` that holds no names is a
    `TypeError`.
    """
    _check_names(traced, where)
    pipe = problem.pipeline
    if pipe is None:
        raise SpecError(Diagnostic(
            "E947", f"plan `{problem.name}` has `objective makespan`: it is no pipeline",
            where, ("add `objective pipeline` (with `microbatches N` and `schedule gpipe | "
                    "1f1b | interleaved`) to the plan and solve it again, or export without "
                    "--pipeline",)))
    check_placement(traced, forward_placement(traced, placement))
    g = problem.graph
    cluster = [d.name for d in problem.cluster.devices]
    device_of = {d: k for k, d in enumerate(cluster)}
    chosen = [device_of[placement[o.name]] if o.name in placement else -1 for o in g.ops]
    for b, f in g.backward_of.items():  # a backward op left out goes with its forward op
        chosen[b] = chosen[b] if chosen[b] >= 0 else chosen[f]
    split = split_of(problem, chosen)
    _check_devices(problem, split, where)
    nodes = forward_ops(problem, traced)
    plan_stage = _node_stages(problem, split, nodes)
    cuts = valid_cuts(problem, nodes)
    names = [cluster[d] for d in split.devices]
    reason = why_not_a_split(nodes, plan_stage, cuts, names)
    groups = {d: tuple(g) for d, g in (replicas or {}).items() if len(g) > 1}
    again = _recompute_checked(problem, recompute, chosen, groups, where)
    plan_cost = _cost(problem, chosen, groups, again)
    stage_of = plan_stage
    if reason:
        nearest = nearest_split(move_costs(problem, nodes, plan_stage, split.devices), cuts,
                           not pipe.schedule_spec.virtual_stages)
        if nearest is None:
            raise _no_split(problem, reason, split.stages, where)
        stage_of = nearest
    moved = tuple(n.name for n, a, b in zip(nodes, plan_stage, stage_of, strict=True) if a != b)
    planned_stage = stage_of  # each node's stage before --ranks regroups them
    stage_devices, regrouped = list(split.devices), ""
    if ranks is not None:
        refuse_ranks(problem.name, ranks, groups, where)
        stage_of, stage_devices, regrouped = at_ranks(problem, nodes, stage_of, stage_devices,
                                                       ranks, where)
    exported = _placement_of(problem, nodes, stage_of, stage_devices)
    ran = _run_as(problem, pipe, (stage_of, stage_devices), exported, bool(groups))
    redo, recomputing = _recomputing(stage_of, stage_devices,
                                     [split.devices[s] for s in planned_stage], again)
    result = TorchPipeline(
        problem.name, ran.schedule, pipe.microbatches, units(problem).training,
        _stages(nodes, stage_of, sorted(set(stage_of)), [cluster[d] for d in stage_devices],
                devices, ran.schedule_spec), dict(devices),
        {o.name: cluster[d] for o, d in zip(g.ops, exported, strict=True)},
        _cost(problem, exported, groups, redo) if reason or regrouped else plan_cost,
        not reason,
        reason,
        moved, plan_cost, tuple((names[k], next((n.name for n, s in zip(nodes, plan_stage,
                                                                         strict=True)
                                                 if s == k), "")) for k in range(split.stages)),
        regrouped, len(dict.fromkeys(names)), recompute=recomputing,
        optimizer=optimizer_of((g.ops[f].params_bytes, g.ops[b].params_bytes)
                               for b, f in g.backward_of.items()),
        optimizer_state=optimizer_state(problem, exported, sorted(set(stage_devices))))
    if groups:
        result = replace(result, replicas=mesh(problem, result, split.devices, groups, where))
    _check_runnable(result, where)
    return result


def _check_names(traced: Traced, where: Span | None) -> None:
    """E947 for a model with a part named `self`: torch.distributed.pipelining's stage code
    binds the stage's module to `self` and the part's output to its name, then calls
    `self.torch.tanh(...)` (the helper's: AttributeError in stage 0, after export said
    nothing)."""
    named = keyword_named(traced.model, ("self",), first=True)  # (`a.self`: node `a_self`)
    if named is not None:
        raise SpecError(Diagnostic(
            "E947", f"the model's `{named}` takes the name `self`, which the stage code "
            "torch's pipelining generates gives its module: the stage would not run", where,
            ("rename it (`add_module` with another name), then import and plan again",)))


def _run_as(problem: Problem, pipe: Pipeline,
            stages: tuple[Sequence[int], Sequence[int]], exported: Sequence[int],
            replicated: bool) -> Pipeline:
    """The pipeline the exported split (`stages`: each node's stage, each stage's device)
    runs as: one stage per rank under `interleaved` runs as 1F1B, as the simulator and the
    memory model run it (`split.runs_as`; before, ScheduleInterleaved1F1B, with more
    micro-batches in flight than the plan counted); several per rank stay the plan's."""
    devices = [stages[1][k] for k in set(stages[0])]
    if len(set(devices)) < len(devices):
        return pipe
    return runs_as(split_of(problem, exported), pipe, replicated)


def optimizer_state(problem: Problem, placement: Sequence[int],
                    devices: Iterable[int]) -> dict[str, int]:
    """Per device of `devices`, the optimizer state the plan's memory counts there under
    `placement`: its backward ops' params (gradient and state, `training.add_backward`)
    less their forward ops' (the gradient's size), a tied weight's copies on one device
    once (as `cost.tied_duplicate_bytes` counts them); none without a backward pass."""
    g = problem.graph
    n = len(problem.cluster.devices)
    held = [0] * n
    for b, f in g.backward_of.items():
        held[placement[b]] += g.ops[b].params_bytes - g.ops[f].params_bytes
    # a tie of backward ops (gradient and state) and one of their forward ops (the weight,
    # subtracted above): the copies on one device once
    twice = tied_duplicate_bytes(g, placement, n, g.backward_of)
    once = tied_duplicate_bytes(g, placement, n, set(g.backward_of.values()))
    return {problem.cluster.devices[d].name: held[d] - twice[d] + once[d] for d in devices}


def _recompute_checked(problem: Problem, recompute: str | Iterable[str],
                       chosen: Sequence[int], groups: Mapping[int, tuple[int, ...]],
                       where: Span | None) -> list[int]:
    """The devices of `recompute` (names) as indices, checked as a plan file's are
    (`plan.check_recompute`: E504, E515 at `where`): a caller of `pipeline_export` may pass
    names no plan file held, and a name the model ignores would export no checkpoint."""
    names = _names(recompute)
    sink = DiagnosticSink()
    check_recompute(problem, names, sink, lambda _: where, groups, chosen)
    sink.raise_if_errors()
    index = problem.cluster.device_index
    return [index[n] for n in names]


def _names(recompute: str | Iterable[str]) -> list[str]:
    """`recompute` as a list of device names: a str alone is one name (not its letters,
    each an unknown device), and anything but names a `TypeError` that names the parameter."""
    items = [recompute] if isinstance(recompute, str) else recompute
    names = list(items) if isinstance(items, Iterable) and not isinstance(
        items, (bytes, bytearray, Mapping)) else None
    if names is None or not all(isinstance(n, str) for n in names):
        raise TypeError(f"pipeline_export: `recompute` takes device names (a str, or a list "
                        f"of str such as [\"gpu1\"]), not {recompute!r}")
    return names


def _node_stages(problem: Problem, split: Split, nodes: Sequence[ForwardOp]) -> list[int]:
    """Each node's stage in the plan's `split`."""
    u = units(problem)
    unit_stage = [0] * u.count
    for k in range(split.stages):
        for x in range(split.bounds[k], split.bounds[k + 1]):
            unit_stage[x] = k
    return [unit_stage[u.unit_of[n.op]] for n in nodes]


def _recomputing(stage_of: Sequence[int], devices: Sequence[int], planned: Sequence[int],
                 recompute: Collection[int]) -> tuple[list[int], tuple[int, ...]]:
    """The devices of the exported split that recompute, and its stages (renumbered as
    `_stages` numbers them) on those: each device that runs a node (`stage_of`, its stage's
    device in `devices`) planned on a device in `recompute` (`planned`, per node). Without
    --ranks these are the planned recomputing devices that hold a stage."""
    again = set(recompute)
    redo = sorted({devices[s] for s, d in zip(stage_of, planned, strict=True) if d in again})
    return redo, tuple(k for k, s in enumerate(sorted(set(stage_of))) if devices[s] in redo)


def _check_devices(problem: Problem, split: Split, where: Span | None) -> None:
    """E947 unless torch's schedule can run the plan's stages on its devices: one stage per
    device (gpipe, 1f1b), or stage k on the (k mod D)-th device (interleaved)."""
    assert problem.pipeline is not None
    names = [problem.cluster.devices[d].name for d in split.devices]
    chain = list(dict.fromkeys(names))
    schedule = problem.pipeline.schedule_spec
    if not schedule.virtual_stages:
        if len(chain) == len(names):
            return
        twice = next(d for d in chain if names.count(d) > 1)
        stages = ", ".join(str(k) for k, d in enumerate(names) if d == twice)
        raise SpecError(Diagnostic(
            "E947", f"plan `{problem.name}` runs stages {stages} on `{twice}`; torch's "
            f"{schedule.torch_class} runs one stage per rank", where,
            ("solve the plan with `--algo pipedp` (what `auto` runs under objective pipeline)"
             ": its stages are a chain of devices",)))
    if all(names[k] == chain[k % len(chain)] for k in range(len(names))) \
            and len(names) % len(chain) == 0:
        return
    raise SpecError(Diagnostic(
        "E947", f"plan `{problem.name}`'s stages are on " + " -> ".join(names) + "; torch's "
        f"{schedule.torch_class} runs stage k on rank k mod D (here the devices " +
        ", ".join(chain) + " repeated in that order)", where,
        (f"solve the plan with `--algo pipedp`: under `schedule {schedule.name}` its stages "
         "loop over one chain of devices",)))


def _check_runnable(tp: TorchPipeline, where: Span | None) -> None:
    """E947 for a split whose micro-batches torch's schedule refuses."""
    r = tp.data_parallel
    m, s, d = tp.microbatches // r, len(tp.stages), tp.pipeline_ranks
    each = f" (each of its {r} replica pipelines runs {m})" if r > 1 else ""
    schedule = schedules.of(tp.schedule)
    if schedule.stages_at_most_microbatches and m < s:
        raise SpecError(Diagnostic(
            "E947", f"plan `{tp.plan}`: {tp.schedule_class} needs at least as many "
            f"micro-batches as stages, and the split has {s} stages for {tp.microbatches} "
            "micro-batch(es)" + each, where,
            (f"set `microbatches {s * r}` (or more) in the plan, or `schedule gpipe`",)))
    if schedule.virtual_stages and d == 1 < s:  # stage k sends to stage k + 1: to itself
        more = [k for k in range(2, min(s, len(tp.devices)) + 1) if s % k == 0]
        raise SpecError(Diagnostic(
            "E947", f"plan `{tp.plan}`: {tp.schedule_class} would run its {s} stages on one "
            "rank, and torch sends each stage's activations to the next through the process "
            "group, which connects no rank to itself", where,
            (f"`--ranks {more[0]}` loops the stages over {more[0]} ranks" if more else
             "plan on a cluster of two devices or more",)))
    rounds = max(1, m // d)
    if schedule.virtual_stages and m % rounds:
        raise SpecError(Diagnostic(
            "E947", f"plan `{tp.plan}`: {tp.schedule_class} needs the micro-batches ({m}"
            + (" per replica pipeline" if r > 1 else "") + ") to be a multiple of its rounds, "
            f"max(1, {m} // {d} ranks) = {rounds}", where,
            (f"set `microbatches` to a multiple of {d * r} in the plan",)))


def _placement_of(problem: Problem, nodes: Sequence[ForwardOp], stage: Sequence[int],
                  devices: Sequence[int]) -> list[int]:
    """Op -> device: each forward op on its stage's device, each backward op with its
    forward op."""
    g = problem.graph
    out = [0] * len(g.ops)
    for n, s in zip(nodes, stage, strict=True):
        out[n.op] = devices[s]
    for b, f in g.backward_of.items():
        out[b] = out[f]
    return out


def _cost(problem: Problem, placement: Sequence[int],
          groups: Mapping[int, tuple[int, ...]] | None = None,
          recompute: Collection[int] = ()) -> Cost:
    assert problem.pipeline is not None
    r: PipelineRun = run(problem, placement, problem.pipeline, recompute, groups or {})
    return Cost(r.period_s, r.iteration_s, r.schedule, r.note, fits(problem, r.memory_bytes))


def _stages(nodes: Sequence[ForwardOp], stage: Sequence[int], kept: Sequence[int],
            names: Sequence[str], devices: Mapping[str, str],
            schedule: schedules.Schedule) -> tuple[TorchStage, ...]:
    """The stages left, renumbered, with their ranks (one per device, in stage order)."""
    chain = list(dict.fromkeys(names[s] for s in kept))
    out = []
    for k, s in enumerate(kept):
        ops = tuple(n.name for n, t in zip(nodes, stage, strict=True) if t == s)
        begins = None if k == 0 else ops[0]
        rank = k % len(chain) if schedule.virtual_stages else chain.index(names[s])
        out.append(TorchStage(k, rank, names[s], devices[names[s]], begins, ops))
    return tuple(out)


def _no_split(problem: Problem, reason: str, count: int, where: Span | None) -> SpecError:
    return SpecError(Diagnostic(
        "E946", f"plan `{problem.name}`'s stages are not at module boundaries: {reason}; and "
        f"the model has no split into {count} stages at module boundaries", where,
        ("plan with fewer stages (or devices), or wrap the ops of each stage in a module "
         "that forward() calls once",)))


def pipeline_error(tp: TorchPipeline, where: Span | None = None) -> SpecError:
    """E946: the plan's stage boundaries are not module boundaries; the hints offer the
    nearest split that is, with its cost next to the plan's."""
    stages = ", ".join(f"{s.device} from `{s.begins_at or s.ops[0]}`" for s in tp.stages)
    moved = ", ".join(f"`{op}`" for op in tp.moved[:6]) + (", ..." if len(tp.moved) > 6
                                                            else "")
    return SpecError(Diagnostic(
        "E946", f"plan `{tp.plan}`'s stages are not at module boundaries: {tp.reason}", where,
        (f"the nearest split at module boundaries: {stages} (moves {len(tp.moved)} op(s): "
         f"{moved}); {tp.cost.describe()}, against the plan's {tp.plan_cost.describe()}",
         "export it with --nearest, or plan with the ops of each stage in modules")))


def pipeline_document(tp: TorchPipeline) -> dict[str, Any]:
    """What `planner export torch --pipeline` writes as JSON (`-o`)."""

    def cost(c: Cost) -> dict[str, Any]:
        return {"period_s": c.period_s, "iteration_s": _finite(c.iteration_s),
                "schedule_run": c.schedule, "note": c.note, "fits": c.fits}

    doc: dict[str, Any] = {
        "format": "planner-torch-pipeline",
        "version": 1,
        "plan": tp.plan,
        "schedule": tp.schedule,
        "schedule_class": tp.schedule_class,
        "microbatches": tp.microbatches,
        "training": tp.training,
        "split_spec": tp.split_spec,
        "stages": [{"stage": s.index, "rank": s.rank, "device": s.device,
                    "torch_device": s.torch_device, "begins_at": s.begins_at,
                    "ops": list(s.ops)} for s in tp.stages],
        "ranks": tp.ranks,
        "plan_ranks": tp.plan_ranks,
        "regrouped": tp.regrouped,
        "devices": dict(tp.devices),
        "placement": dict(tp.placement),
        "exact": tp.exact,
        "reason": tp.reason,
        "moved": list(tp.moved),
        "plan_stages": [{"device": d, "first": op} for d, op in tp.plan_stages],
        "cost": cost(tp.cost),
        "plan_cost": cost(tp.plan_cost),
        # what the script steps (`--optimizer`, `--lr` override it) and the state the plan's
        # memory counts per device (`counted`: the spec's optimizer; null where it says none)
        "optimizer": {"name": tp.script_optimizer, "lr": SCRIPT_LR if tp.training else None,
                      "counted": tp.optimizer, "state_bytes": dict(tp.optimizer_state)},
    }
    if tp.replicas:  # a 2-D mesh: rank = pipeline rank x data_parallel + replica
        doc["data_parallel"] = tp.data_parallel
        doc["mesh"] = {"shape": [tp.pipeline_ranks, tp.data_parallel], "dims": ["pp", "dp"],
                       "ranks": mesh_ranks(tp)}
        for stage in doc["stages"]:
            stage["replicas"] = list(tp.replicas[stage["rank"]])
    if tp.recompute:  # keys only where a stage recomputes: other plans' documents as before
        doc["recompute"] = recompute_devices(tp)
        for stage in doc["stages"]:
            stage["recompute"] = stage["stage"] in tp.recompute
    return doc


def recompute_devices(tp: TorchPipeline) -> list[str]:
    """The devices of the recomputing stages, in stage order."""
    return list(dict.fromkeys(tp.stages[k].device for k in tp.recompute))


def mesh_ranks(tp: TorchPipeline) -> list[dict[str, Any]]:
    """Each rank of the 2-D mesh: its coordinates (pipeline rank, replica), device and
    torch device."""
    return [{"rank": p * tp.data_parallel + j, "pp": p, "dp": j, "device": name,
             "torch_device": tp.devices[name]}
            for p, row in enumerate(tp.replicas) for j, name in enumerate(row)]


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def summary(tp: TorchPipeline) -> str:
    """One line for stderr: stages, schedule, micro-batches and the cost."""
    replicated = (f" x {tp.data_parallel} replicas (a {tp.pipeline_ranks} x "
                  f"{tp.data_parallel} DeviceMesh, pipeline x data)" if tp.replicas else "")
    head = (f"{len(tp.stages)} stage(s){replicated} on {tp.ranks} rank(s), {tp.schedule_class}, "
            f"{tp.microbatches} micro-batch(es); split_spec: "
            + (", ".join(tp.split_spec) or "none (one stage)"))
    if tp.regrouped:
        head += f"; {tp.regrouped}"
    if tp.recompute:
        head += (f"; stage(s) {', '.join(map(str, tp.recompute))} recompute their activations "
                 f"(torch.utils.checkpoint, on {', '.join(recompute_devices(tp))})")
    if tp.exact and not tp.regrouped:
        return f"{head}; {tp.cost.describe()}"
    what = "" if tp.exact else (f"the nearest split at module boundaries ({len(tp.moved)} "
                                "op(s) moved): ")
    return f"{head}; {what}{tp.cost.describe()}, against the plan's {tp.plan_cost.describe()}"
