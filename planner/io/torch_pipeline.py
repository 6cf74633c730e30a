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
  k times would split k times; a function such as `x + y` has no path to name);
- the **ranks**: one per device, in stage order. `gpipe` (`ScheduleGPipe`) and `1f1b`
  (`Schedule1F1B`) run one stage per rank; `interleaved` (`ScheduleInterleaved1F1B`)
  runs stage k on rank k mod D, torch's loop order, which the plan must follow;
- the **schedule** class and the number of micro-batches, from the plan's settings. The
  spec's graph is one micro-batch (the traced inputs); a step feeds M of them.

When a stage boundary is not a module boundary, the export offers the **nearest split**
that is: the one, among splits whose stages are contiguous in `forward()`'s order and begin
at modules called once (never cutting a pipeline unit), that moves the fewest forward ops
(a backward op goes with its forward op) to another stage than the plan's; stages keep
their devices; a stage may be left out only when fewer boundaries exist than the plan has
stages (never under `interleaved`); ties go to the earlier boundary. Its cost under the
plan's own model (`planner.pipeline.schedule.run`: period and iteration) is given next to
the plan's, and `pipeline_error` turns it into diagnostic E946 unless the caller accepts it.
A plan that torch's schedules cannot run as placed (no `objective pipeline`, a device with
two stages outside `interleaved`'s loop order, fewer micro-batches than stages under
`1f1b`) is E947.

With `ranks` (`--ranks N`) the split runs on N processes where it allows (`_at_ranks`):
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

`pipeline_script` writes a runnable script: every rank builds the model (seeded),
`pipeline(module, mb_args=..., mb_kwargs=..., split_spec=...)`, `pipe.build_stage(...)` for
its stage(s), the schedule with a loss, and one `schedule.step(...)`; under `torchrun`
(env://) or, with `--spawn`, under `torch.multiprocessing.spawn` (gloo on the CPU with
`--cpu`). Keyword inputs go as keywords, with those the importer's capture adds
(`torch_capture.with_defaults`: `use_cache=False`); the last stage's flat tensors are
rebuilt into the model's output (`torch.utils._pytree`, a Hugging Face ModelOutput) for the
loss: the cross-entropy of its `logits`, or the user's `--loss`. `--check` compares the loss
and gradients with the unpipelined model's, in eval mode unless `--mode` says otherwise, and
prints what differs and by how much (exit status 1).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import schedules
from ..cost import costs
from ..errors import Diagnostic, Span, SpecError
from ..model import Problem
from ..pipeline.schedule import PipelineRun, run
from ..pipeline.split import Split, fits, split_of
from ..pipeline.units import units
from ..units import format_seconds
from .codegen import GeneratedCodeError, docstring_text, fill, literal
from .torch_capture import with_defaults
from .torch_export import check_placement, forward_placement
from .torch_import import Traced
from .torch_load import Example

#: the plan's `schedule` -> torch's class (`schedules.Schedule.torch_class`)
SCHEDULE_CLASSES: Mapping[str, str] = {s.name: s.torch_class for s in schedules.TABLE}
#: the DP's infinity, and the cost of an op on a device it may not use (below infinity)
_NEVER = 1 << 200
_FORBIDDEN = 1 << 190


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


@dataclass(frozen=True, slots=True)
class _Node:
    """A forward op of the traced model, in `forward()`'s order."""

    name: str
    op: int  # its index in the problem's graph
    placeholder: bool
    #: why no SplitPoint can begin a stage at it ("" when one can)
    unnameable: str


# complex: the export's steps (E947, the plan's stages, the nearest split when the plan's cuts
# cannot run, the result); most branches are the comprehensions that fill TorchPipeline
def pipeline_export(problem: Problem, traced: Traced, placement: Mapping[str, str],
                    devices: Mapping[str, str], where: Span | None = None,
                    ranks: int | None = None,
                    replicas: Mapping[int, tuple[int, ...]] | None = None) -> TorchPipeline:
    """The pipeline `placement` (op -> device, a plan of `problem`) makes of `traced`, or
    the nearest split at module boundaries (see the module docstring; `exact` says which);
    with `ranks`, run by that many processes where the split allows (`_at_ranks`); with
    `replicas` (a stage's device -> its group of devices holding replicas, itself first:
    a plan file's, `plan.load_replicas`), every stage replicated on the data dimension of a
    2-D mesh (`_mesh`).

    Raises E945 when the plan does not match the model, E947 when torch's schedules
    cannot run it and E950 when its replicas make no 2-D mesh; `where` locates those
    diagnostics (the placement file).
    """
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
    nodes = _nodes(problem, traced)
    u = units(problem)
    unit_stage = [0] * u.count
    for k in range(split.stages):
        for x in range(split.bounds[k], split.bounds[k + 1]):
            unit_stage[x] = k
    plan_stage = [unit_stage[u.unit_of[n.op]] for n in nodes]
    cuts = _valid_cuts(problem, nodes)
    names = [cluster[d] for d in split.devices]
    reason = _reason(nodes, plan_stage, cuts, names)
    groups = {d: tuple(g) for d, g in (replicas or {}).items() if len(g) > 1}
    plan_cost = _cost(problem, chosen, groups)
    stage_of = plan_stage
    if reason:
        nearest = _nearest(_moves(problem, nodes, plan_stage, split.devices), cuts,
                           not pipe.schedule_spec.virtual_stages)
        if nearest is None:
            raise _no_split(problem, reason, split.stages, where)
        stage_of = nearest
    moved = tuple(n.name for n, a, b in zip(nodes, plan_stage, stage_of, strict=True) if a != b)
    stage_devices, regrouped = list(split.devices), ""
    if ranks is not None:
        stage_of, stage_devices, regrouped = _at_ranks(problem, nodes, stage_of, stage_devices,
                                                       ranks, where)
    exported = _placement_of(problem, nodes, stage_of, stage_devices)
    result = TorchPipeline(
        problem.name, pipe.schedule, pipe.microbatches, u.training,
        _stages(nodes, stage_of, sorted(set(stage_of)), [cluster[d] for d in stage_devices],
                devices, pipe.schedule_spec), dict(devices),
        {o.name: cluster[d] for o, d in zip(g.ops, exported, strict=True)},
        _cost(problem, exported, groups) if reason or regrouped else plan_cost, not reason,
        reason,
        moved, plan_cost, tuple((names[k], next((n.name for n, s in zip(nodes, plan_stage,
                                                                         strict=True)
                                                 if s == k), "")) for k in range(split.stages)),
        regrouped, len(dict.fromkeys(names)))
    if groups:
        result = replace(result, replicas=_mesh(problem, result, split.devices, groups, ranks,
                                                where))
    _check_runnable(result, where)
    return result


def _mesh(problem: Problem, tp: TorchPipeline, planned: Sequence[int],
          groups: Mapping[int, tuple[int, ...]], ranks: int | None,
          where: Span | None) -> tuple[tuple[str, ...], ...]:
    """Per pipeline rank of `tp`, its device's group of replicas (names, its own device
    first; `groups` holds those of 2+ devices): the rows of a 2-D DeviceMesh (pipeline x
    data), which needs every stage replicated equally. E950 for groups of devices that run
    no stage, a device both a replica and a stage's, `--ranks`, stages replicated unequally
    and micro-batches that do not split evenly over the replicas."""
    cluster = problem.cluster.devices
    index = problem.cluster.device_index
    name = f"plan `{tp.plan}`"
    stray = [cluster[d].name for d in groups if d not in planned]
    if stray:
        raise _e950(where, f"{name} gives replicas to `{stray[0]}`, which runs none of its "
                    "stages", "key `replicas` by the device of each replicated stage")
    if ranks is not None:
        raise _e950(where, f"--ranks {ranks} regroups the stages of a pipeline, and {name} "
                    "replicates its stages", "export it without --ranks: it runs on a rank per "
                    "replica")
    chain = [next(s.device for s in tp.stages if s.rank == r) for r in range(tp.pipeline_ranks)]
    rows = tuple(tuple(cluster[e].name for e in groups.get(index[d], (index[d],)))
                 for d in chain)
    _check_rows(tp, rows, where)
    return rows


def _check_rows(tp: TorchPipeline, rows: Sequence[tuple[str, ...]], where: Span | None) -> None:
    """E950 unless `rows` (per pipeline rank, its group of devices) make a 2-D mesh: no
    device in two rows, every row as long, the micro-batches a multiple of that length."""
    name = f"plan `{tp.plan}`"
    doubled = next((n for n in (n for row in rows for n in row)
                    if sum(n in row for row in rows) > 1), None)
    if doubled is not None:
        raise _e950(where, f"{name} puts `{doubled}` in the replicas of a stage and runs "
                    "another stage on it", "give each device one stage or one replica")
    sizes = [len(row) for row in rows]
    if len(set(sizes)) > 1:
        shown = ", ".join(
            f"stage {', '.join(str(t.index) for t in tp.stages if t.rank == r)} ({row[0]}) "
            f"on {len(row)} device{'s' if len(row) > 1 else ''}" for r, row in enumerate(rows))
        raise _e950(where, f"{name} replicates its stages unequally ({shown}); the script "
                    "runs a 2-D DeviceMesh (pipeline x data), every stage on as many replicas",
                    "plan with `data_parallel N` (every stage replicated N times) to export "
                    "it to torch")
    if tp.microbatches % sizes[0]:
        raise _e950(where, f"{name}'s {tp.microbatches} micro-batch(es) do not split evenly "
                    f"over its {sizes[0]} replicas of each stage (each replica pipeline runs "
                    "its share of them)", f"set `microbatches` to a multiple of {sizes[0]}")


def _e950(where: Span | None, message: str, hint: str) -> SpecError:
    """E950: replicas that make no 2-D mesh."""
    return SpecError(Diagnostic("E950", message, where, (hint,)))


def _at_ranks(problem: Problem, nodes: Sequence[_Node], stage_of: Sequence[int],
              devices: Sequence[int], ranks: int,
              where: Span | None) -> tuple[list[int], list[int], str]:
    """The split run by `ranks` processes: (stage per node, device per stage, a note; ""
    when the split already takes that many). Under `interleaved` the stages loop over the
    ranks (stage k on rank k mod `ranks`, which must divide the stage count; ranks beyond the
    plan's devices take the cluster's other devices, in its order). Under `gpipe` and `1f1b`
    (one stage per rank) consecutive stages merge into `ranks` groups, the grouping whose
    busiest group computes least (`_merged`), each group on the device of one of its stages
    that runs it fastest. E947 when the split has fewer stages than `ranks` or the stages
    cannot loop over them."""
    assert problem.pipeline is not None
    kept = sorted(set(stage_of))
    renumber = {s: k for k, s in enumerate(kept)}
    stage_of = [renumber[s] for s in stage_of]
    devices = [devices[s] for s in kept]
    count, chain = len(kept), list(dict.fromkeys(devices))
    if ranks == len(chain):
        return stage_of, devices, ""
    if problem.pipeline.schedule_spec.virtual_stages:
        if ranks <= count and count % ranks == 0:
            looped = _looped(problem, nodes, stage_of, chain, ranks, where)
            return stage_of, looped, (f"the plan's {count} stages loop over {ranks} ranks "
                                      f"instead of {len(chain)}")
    elif ranks <= count:
        return _merge(problem, nodes, stage_of, devices, ranks, where)
    raise _refused(problem, count, ranks, where)


def _refused(problem: Problem, count: int, ranks: int, where: Span | None) -> SpecError:
    """E947: `ranks` processes cannot run the `count` stages (see `_at_ranks`)."""
    assert problem.pipeline is not None
    schedule = problem.pipeline.schedule_spec
    cls = schedule.torch_class
    fits_in = [r for r in range(1, count + 1) if not schedule.virtual_stages or count % r == 0]
    why = (f"{cls} runs stage k on rank k mod {ranks}, as many stages on each rank"
           if schedule.virtual_stages else f"{cls} runs one stage per rank")
    return SpecError(Diagnostic(
        "E947", f"plan `{problem.name}` cannot run on --ranks {ranks}: its split has "
        f"{count} stage(s), and {why}", where,
        (f"--ranks {_alternatives(fits_in)} runs this split; for more ranks, plan on a "
         "cluster of that many devices",)))


def _alternatives(values: Sequence[int]) -> str:
    """`1 to 4` for a run of numbers, else `1, 2 or 4`."""
    if len(values) > 2 and list(values) == list(range(values[0], values[-1] + 1)):
        return f"{values[0]} to {values[-1]}"
    return " or ".join(filter(None, (", ".join(map(str, values[:-1])), str(values[-1]))))


def _looped(problem: Problem, nodes: Sequence[_Node], stage_of: Sequence[int],
            chain: Sequence[int], ranks: int, where: Span | None) -> list[int]:
    """Device per stage when the stages loop over `ranks` ranks: the plan's devices in
    order, then the cluster's others; E947 when the cluster lacks devices or an op may not
    use its new device."""
    cluster = problem.cluster.devices
    pool = [*chain, *(d for d in range(len(cluster)) if d not in chain)]
    if ranks > len(pool):
        raise SpecError(Diagnostic(
            "E947", f"plan `{problem.name}` cannot run on --ranks {ranks}: its cluster has "
            f"{len(cluster)} device(s)", where, ("add devices to the cluster",)))
    looped = [pool[k % ranks] for k in range(max(stage_of) + 1)]
    u = units(problem)
    for n, k in zip(nodes, stage_of, strict=True):
        if looped[k] not in u.allowed[u.unit_of[n.op]]:
            raise SpecError(Diagnostic(
                "E947", f"plan `{problem.name}` cannot run on --ranks {ranks}: `{n.name}` "
                f"would run on `{cluster[looped[k]].name}`, which it may not use", where,
                (f"--ranks {len(chain)} runs the plan's own split",)))
    return looped


def _merge(problem: Problem, nodes: Sequence[_Node], stage_of: Sequence[int],
           devices: Sequence[int], ranks: int,
           where: Span | None) -> tuple[list[int], list[int], str]:
    """Consecutive stages merged into `ranks` groups (`_merged`), as `_at_ranks` returns."""
    count = len(devices)
    groups = _merged(problem, nodes, stage_of, devices, ranks)
    if groups is None:
        raise SpecError(Diagnostic(
            "E947", f"plan `{problem.name}` cannot run on --ranks {ranks}: every merge of its "
            f"{count} stages puts ops on a device they may not use", where,
            (f"--ranks {len(set(devices))} runs the plan's own split",)))
    group_of = [k for k, (a, b, _) in enumerate(groups) for _ in range(a, b)]
    spans = ", ".join(f"{a}" if b - a == 1 else f"{a}-{b - 1}" for a, b, _ in groups)
    return [group_of[s] for s in stage_of], [d for _, _, d in groups], (
        f"the plan's {count} stages merged into {ranks} (stages {spans}), the grouping whose "
        "busiest rank computes least")


def _merged(problem: Problem, nodes: Sequence[_Node], stage_of: Sequence[int],
            devices: Sequence[int], ranks: int) -> list[tuple[int, int, int]] | None:
    """Stages [0, S) in `ranks` runs of consecutive stages, as (first, end, device), that
    minimise the largest run's compute (forward and backward ops, on the run's device: the
    one of its stages' devices, allowed for all its ops, that computes it fastest; ties to
    the earlier device and the earlier cuts); None when no grouping can run."""
    c, u = costs(problem), units(problem)
    count = len(devices)
    backward: dict[int, list[int]] = {}
    for b, f in problem.graph.backward_of.items():
        backward.setdefault(f, []).append(b)
    load = [[0.0] * len(problem.cluster.devices) for _ in range(count)]
    banned = [[False] * len(problem.cluster.devices) for _ in range(count)]
    for n, s in zip(nodes, stage_of, strict=True):
        allowed = set(u.allowed[u.unit_of[n.op]])
        for d in range(len(problem.cluster.devices)):
            load[s][d] += sum(c.compute[i][d] for i in (n.op, *backward.get(n.op, ())))
            banned[s][d] = banned[s][d] or d not in allowed

    def run_of(a: int, b: int) -> tuple[float, int]:
        options = [(sum(load[s][d] for s in range(a, b)), k, d)
                   for k, d in enumerate(devices[a:b])
                   if not any(banned[s][d] for s in range(a, b))]
        best = min(options, default=(math.inf, 0, -1))
        return best[0], best[2]

    best = [[math.inf] * (count + 1) for _ in range(ranks + 1)]
    cut = [[0] * (count + 1) for _ in range(ranks + 1)]
    best[0][0] = 0.0
    for g in range(1, ranks + 1):
        for b in range(g, count + 1):
            for a in range(g - 1, b):
                value = max(best[g - 1][a], run_of(a, b)[0])
                if value < best[g][b]:
                    best[g][b], cut[g][b] = value, a
    if not math.isfinite(best[ranks][count]):
        return None
    out, b = [], count
    for g in range(ranks, 0, -1):
        a = cut[g][b]
        out.append((a, b, run_of(a, b)[1]))
        b = a
    return out[::-1]


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
    rounds = max(1, m // d)
    if schedule.virtual_stages and m % rounds:
        raise SpecError(Diagnostic(
            "E947", f"plan `{tp.plan}`: {tp.schedule_class} needs the micro-batches ({m}"
            + (" per replica pipeline" if r > 1 else "") + ") to be a multiple of its rounds, "
            f"max(1, {m} // {d} ranks) = {rounds}", where,
            (f"set `microbatches` to a multiple of {d * r} in the plan",)))


def _nodes(problem: Problem, traced: Traced) -> list[_Node]:
    """The traced model's ops in `forward()`'s order, and whether a SplitPoint can name
    each (a whole call of a module called once)."""
    out = []
    index = problem.graph.op_index
    for u in traced.units:
        if u.is_input:
            why = "an input of the model"
        elif u.module and u.calls == 1:
            why = ""
        elif u.module:
            why = (f"a call of module `{u.module}`, which forward() calls {u.calls} times: a "
                   f"SplitPoint at `{u.module}` splits before every call")
        else:
            first = u.nodes[0]
            what = (f"Tensor.{first.target}" if first.op == "call_method"
                    else getattr(first.target, "__name__", str(first.target)))
            why = f"a call of `{what}`, a function, not a module: no SplitPoint can name it"
        out.append(_Node(u.name, index[u.name], u.is_input, why))
    return out


def _valid_cuts(problem: Problem, nodes: Sequence[_Node]) -> list[int]:
    """Positions p (a stage begins at `nodes[p]`) where torch can split and planner can
    place: a module called once, after at least one op that is not an input, and no
    pipeline unit (a module's calls, an attribute's users, a tuple's consumers) on both
    sides."""
    u = units(problem)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for p, n in enumerate(nodes):
        unit = u.unit_of[n.op]
        first.setdefault(unit, p)
        last[unit] = p
    blocked = [0] * (len(nodes) + 1)
    for unit, a in first.items():
        if last[unit] > a:  # a unit spread over [a, last]: no cut inside
            blocked[a + 1] += 1
            blocked[last[unit] + 1] -= 1
    out, inside, computed = [], 0, False
    for p, n in enumerate(nodes):
        inside += blocked[p]
        if computed and not inside and not n.unnameable:
            out.append(p)
        computed = computed or not n.placeholder
    return out


def _reason(nodes: Sequence[_Node], stage: Sequence[int], cuts: Sequence[int],
            devices: Sequence[str]) -> str:
    """Why the plan's stages are not a split torch can make ("" when they are)."""
    valid = set(cuts)
    current = 0
    for p, (n, s) in enumerate(zip(nodes, stage, strict=True)):
        if s == current:
            continue
        first = next(m.name for m, t in zip(nodes, stage, strict=True) if t == current)
        if s < current:
            return (f"`{n.name}` (stage {s}, on {devices[s]}) runs after `{first}` begins "
                    f"stage {current} in forward(); torch's stages follow the order the "
                    "ops run in")
        if s > current + 1:
            return (f"`{n.name}` of stage {s} (on {devices[s]}) runs before any op of stage "
                    f"{current + 1} in forward(); torch's stages follow the order the ops "
                    "run in")
        if p not in valid:
            why = n.unnameable or ("only the model's inputs come before it" if all(
                m.placeholder for m in nodes[:p]) else "a pipeline unit runs on both sides")
            return f"stage {s} (on {devices[s]}) begins at `{n.name}`, {why}"
        current = s
    return ""


def _nearest(moves: Sequence[Sequence[int]], cuts: Sequence[int],
             may_drop: bool) -> list[int] | None:
    """Stage per node of the split at `cuts` nearest the plan's: `moves[s][p]` is what
    putting node p in stage s costs (0 in its plan's stage); then the fewest stages left
    out; None when no split of every stage exists and none may be left out, or when every
    split puts an op where it cannot run.

    Stage s spans positions [P[i], P[j]) of P = [0, *cuts, n], at the cost
    `A[j] - A[i]` with `A[k]` the cost of nodes [0, P[k]) in stage s: each stage is one
    pass with a running minimum."""
    count, n = len(moves), len(moves[0]) if moves else 0
    pos = [0, *cuts, n]
    best = [0] + [_NEVER] * (len(pos) - 1)
    choice: list[list[int]] = []
    for s in range(count):
        total, prefix = 0, [0] * (n + 1)
        for p in range(n):
            total += moves[s][p]
            prefix[p + 1] = total
        a = [prefix[x] for x in pos]
        nxt, arg = [_NEVER] * len(pos), [-1] * len(pos)
        low, low_at = _NEVER, -1
        for j in range(len(pos)):
            if low < _NEVER and low + a[j] < nxt[j]:
                nxt[j], arg[j] = low + a[j], low_at
            if may_drop and best[j] < _NEVER and best[j] + 1 < nxt[j]:
                nxt[j], arg[j] = best[j] + 1, j  # stage s left out
            if best[j] < _NEVER and best[j] - a[j] < low:
                low, low_at = best[j] - a[j], j
        best = nxt
        choice.append(arg)
    if best[-1] >= _FORBIDDEN:
        return None
    out = [0] * n
    j = len(pos) - 1
    for s in reversed(range(count)):
        i = choice[s][j]
        for p in range(pos[i], pos[j]):
            out[p] = s
        j = i
    return out


def _moves(problem: Problem, nodes: Sequence[_Node], stage: Sequence[int],
           devices: Sequence[int]) -> list[list[int]]:
    """`[s][p]`: the distance from the plan of putting node p in stage s (module
    docstring): its compute (forward and backward, picoseconds on the plan's device),
    then one per op moved, then one per stage left out; an op's stage on a device it may
    not use is forbidden."""
    c = costs(problem)
    u = units(problem)
    n, count = len(nodes), len(devices)
    backward: dict[int, list[int]] = {}
    for b, f in problem.graph.backward_of.items():
        backward.setdefault(f, []).append(b)
    per_op, per_ps = count + 1, (n + 1) * (count + 1)
    out = [[0] * n for _ in range(count)]
    for p, node in enumerate(nodes):
        here = devices[stage[p]]
        seconds = sum(c.compute[i][here] for i in (node.op, *backward.get(node.op, ())))
        moved = (round(seconds * 1e12) if math.isfinite(seconds) else 0) * per_ps + per_op
        allowed = u.allowed[u.unit_of[node.op]]
        for s in range(count):
            if s != stage[p]:
                out[s][p] = moved if devices[s] in allowed else _FORBIDDEN
    return out


def _placement_of(problem: Problem, nodes: Sequence[_Node], stage: Sequence[int],
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
          groups: Mapping[int, tuple[int, ...]] | None = None) -> Cost:
    assert problem.pipeline is not None
    r: PipelineRun = run(problem, placement, problem.pipeline, (), groups or {})
    return Cost(r.period_s, r.iteration_s, r.schedule, r.note, fits(problem, r.memory_bytes))


def _stages(nodes: Sequence[_Node], stage: Sequence[int], kept: Sequence[int],
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
    }
    if tp.replicas:  # a 2-D mesh: rank = pipeline rank x data_parallel + replica
        doc["data_parallel"] = tp.data_parallel
        doc["mesh"] = {"shape": [tp.pipeline_ranks, tp.data_parallel], "dims": ["pp", "dp"],
                       "ranks": _mesh_ranks(tp)}
        for stage in doc["stages"]:
            stage["replicas"] = list(tp.replicas[stage["rank"]])
    return doc


def _mesh_ranks(tp: TorchPipeline) -> list[dict[str, Any]]:
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
    if tp.exact and not tp.regrouped:
        return f"{head}; {tp.cost.describe()}"
    what = "" if tp.exact else (f"the nearest split at module boundaries ({len(tp.moved)} "
                                "op(s) moved): ")
    return f"{head}; {what}{tp.cost.describe()}, against the plan's {tp.plan_cost.describe()}"


# ---- the script -----------------------------------------------------------------------------


def pipeline_script(tp: TorchPipeline, traced: Traced, target: str,
                    shapes: Sequence[str] = (), example: str | None = None,
                    spec: str = "", name: str = "pipeline_step.py") -> str:
    """A runnable script (file `name`) for one pipelined step of `target`, the model as
    given to `planner import torch` with its `shapes` (`--input`) or `example` (the module
    docstring; the script's own says how to run it)."""
    stages = "".join(f"\n    {literal((s.rank, s.device, s.torch_device))},"
                     for s in tp.stages)
    split = "".join(f"\n    {literal(path)}: SplitPoint.BEGINNING," for path in tp.split_spec)
    note = "" if tp.exact else (
        "\nThe plan's own stages do not begin at modules; this is the nearest split that does "
        f"({len(tp.moved)} op(s)\nmoved; `planner export torch --pipeline` says which).\n")
    if tp.regrouped:
        note += f"\nOn {tp.ranks} rank(s), not the plan's {tp.plan_ranks}: " + docstring_text(
            tp.regrouped) + ".\n"
    outputs = _outputs(traced)
    values = {
        "__TARGET__": literal(target),
        "__INPUTS__": literal(list(shapes)),
        "__EXAMPLE__": literal(example),
        "__MICROBATCHES__": literal(tp.microbatches),
        "__SPLIT_SPEC__": "{" + split + ("\n}" if split else "}"),
        "__STAGES__": "[" + stages + "\n]",
        "__TRAINING__": literal(tp.training),
        "__OUTPUT_SHAPES__": literal(outputs.shapes),
        "__OUTPUT_SPEC__": literal(outputs.spec),
        "__LOGITS__": literal(outputs.logits),
        "__CAPTURE_KWARGS__": literal(_capture_kwargs(traced)),
        "__SCHEDULE__": SCHEDULE_CLASSES[tp.schedule],
        "__RANKS__": literal(tp.ranks),
        "__NSTAGES__": literal(len(tp.stages)),
        "__ABOUT__": docstring_text(f"`{target}`"),
        "__FROM__": docstring_text(f"plan `{tp.plan}`" + (f" of `{spec}`" if spec else "")),
        "__NAME__": docstring_text(name),
        "__NOTE__": note,
        "__TIED__": literal(tied_parameters(traced.model)),
        "__FLAT_TENSORS__": _flat_tensors_source(),
    }
    if not tp.replicas:
        # one pass: a name holding a placeholder (a device `__FROM__0`) stays that text
        return fill(_script(hybrid=False), values, name)
    mesh = "".join(f"\n    {literal((r['pp'], r['dp'], r['device'], r['torch_device']))},"
                   for r in _mesh_ranks(tp))
    values.update({"__DATA_PARALLEL__": literal(tp.data_parallel),
                   "__MESH__": "[" + mesh + "\n]"})
    return fill(_script(hybrid=True), values, name)


def _flat_tensors_source() -> str:
    """`torch_values.flat_tensors`'s source, for the script (which imports torch and `Any`
    itself), read from its file: importing the module would import torch, which writing a
    script does not need."""
    path = Path(__file__).with_name("torch_values.py")
    text = path.read_text(encoding="utf-8")
    found = next(node for node in ast.parse(text).body
                 if isinstance(node, ast.FunctionDef) and node.name == "flat_tensors")
    source = ast.get_source_segment(text, found)
    assert source is not None  # the node came from this text
    return source + "\n"


def tied_parameters(model: Any) -> list[tuple[list[str], list[int], str]]:
    """Per parameter that `model` reaches under several names (tied weights: GPT-2's
    `transformer.wte.weight` and `lm_head.weight`): the names, the one `named_parameters()`
    keeps first, its shape and dtype; empty for a model that is not an `nn.Module` (a saved
    program)."""
    named = getattr(model, "named_parameters", None)
    if named is None:
        return []
    names: dict[int, tuple[list[str], Any]] = {}
    for name, p in named(remove_duplicate=False):
        names.setdefault(id(p), ([], p))[0].append(name)
    return [(group, list(p.shape), str(p.dtype).removeprefix("torch."))
            for group, p in names.values() if len(group) > 1]


def _capture_kwargs(traced: Traced) -> dict[str, Any]:
    """The keyword inputs the importer's capture adds where the example leaves them out
    (`torch_capture.with_defaults`: `use_cache=False` for a Hugging Face model), which the
    script passes the same way. None under fx, which takes positional inputs only."""
    if traced.method != "export":
        return {}
    # lazy: optional (the torch extra), and only for an exported graph: an fx one's script
    # is written without torch (tests/hardening/test_generated_names.py)
    import torch

    if not isinstance(traced.model, torch.nn.Module):
        return {}
    added = with_defaults(traced.model, Example()).kwargs
    return {k: v for k, v in added.items() if isinstance(v, (bool, int, float, str))}


@dataclass(frozen=True, slots=True)
class _Outputs:
    """The model's output as the last stage returns it: flat tensors, their shapes, how
    they make the model's output and which is `logits`."""

    shapes: list[list[int] | None]
    #: `torch.utils._pytree.treespec_dumps` of the output's structure (None: one tensor, or
    #: a structure that does not serialise)
    spec: str | None
    logits: int | None


def _outputs(traced: Traced) -> _Outputs:
    """The model's outputs for one micro-batch (`_Outputs`): an exported graph returns its
    flat outputs and keeps their structure in `_out_spec` (a ModelOutput's); an fx graph
    returns the structure itself."""
    output = next((n for n in traced.gm.graph.nodes if n.op == "output"), None)
    if output is None:
        return _Outputs([], None, None)
    # lazy: optional (the torch extra), and only for an output: a script of a graph that
    # has none is written without torch (tests/hardening/test_generated_names.py)
    from torch.utils import _pytree

    leaves, structure = _pytree.tree_flatten(output.args[0])
    spec = getattr(traced.gm, "_out_spec", None) if traced.method == "export" else structure
    if spec is None or spec.num_leaves != len(leaves):
        spec = structure
    names = [getattr(leaf, "name", "") for leaf in leaves]
    shapes = [list(traced.shapes[n]) if n in traced.shapes else None for n in names]
    try:
        text = None if spec.is_leaf() else _pytree.treespec_dumps(spec)
    except Exception:  # noqa: BLE001 - a type that pytree cannot serialise
        text = None
    return _Outputs(shapes, text, _logits_index(spec))


def _logits_index(spec: Any) -> int | None:
    """Where `logits` is among the flat outputs of a dict-like output (a ModelOutput)."""
    if spec.is_leaf() or not issubclass(spec.type, dict) or "logits" not in (spec.context
                                                                             or ()):
        return None
    at = 0
    children = spec.children() if hasattr(spec, "children") else spec.children_specs
    for key, child in zip(spec.context, children, strict=True):
        if key == "logits":
            return at if child.is_leaf() else None
        at += child.num_leaves
    return None


#: the script; where a plan with replicas gets other lines (`_HYBRID`), a region is marked
#: (`_REGION`), and `_script` takes the markers out: a plan without replicas gets the
#: region's own lines, byte for byte as they stand here
_SCRIPT = '''\
#!/usr/bin/env python3
"""One pipelined step of __ABOUT__ under torch.distributed.pipelining, as planned.

#<about>
Written by `planner export torch --pipeline` from __FROM__: __NSTAGES__ stage(s) on
__RANKS__ rank(s), __SCHEDULE__, __MICROBATCHES__ micro-batch(es) of the traced inputs.
#</about>
__NOTE__
    torchrun --nproc-per-node __RANKS__ __NAME__   # a process per rank (env:// rendezvous)
    python __NAME__ --spawn --cpu --check  # spawn the ranks here: gloo on the CPU

Every rank builds the model (seeded, so that the ranks agree), splits it with
`pipeline(module, mb_args, mb_kwargs, split_spec=SPLIT_SPEC)`, builds its stage(s) and runs
one `schedule.step`. The inputs are the traced ones, positional and keyword, plus the
keywords the importer's capture added (CAPTURE_KWARGS: a Hugging Face model's
`use_cache=False`). `make_batch` is a placeholder: put your data there. The loss is
`loss_fn` (cross-entropy of the output's `logits`, a Hugging Face ModelOutput's, against
integer labels; else mean squared error), or yours: `--loss FILE.py:NAME` (or
MODULE:NAME), a function (output, target) -> scalar tensor that gets the model's own
output (a ModelOutput is rebuilt from the last stage's tensors by OUTPUT_SPEC).
#<mesh_about/>

`--check` compares the loss and gradients with the unpipelined model's and says what
differs and by how much. It runs both in eval mode unless `--mode` says otherwise: in train
mode, dropout draws other random numbers on each rank and batch norm takes statistics per
micro-batch, so a pipelined step cannot equal one process.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
#<imports>
from torch.distributed.pipelining import __SCHEDULE__, SplitPoint, pipeline
#</imports>

#: the schedule: its class in torch.distributed.pipelining
SCHEDULE: Any = __SCHEDULE__

#: the model, as given to `planner import torch` (FILE.py:NAME or MODULE:NAME)
MODEL = __TARGET__
#: one micro-batch, as traced: `--input` shapes, or an `--example` expression (a tensor, a
#: tuple of positional inputs or a dict of keyword inputs)
INPUTS = __INPUTS__
EXAMPLE = __EXAMPLE__
#: keyword inputs the importer's capture added (forward() takes them, the example leaves
#: them out): `use_cache=False` turns off a Hugging Face model's generation cache
CAPTURE_KWARGS = __CAPTURE_KWARGS__
MICROBATCHES = __MICROBATCHES__
#: a stage begins at each of these modules (the first at the model's start)
SPLIT_SPEC = __SPLIT_SPEC__
#<stages_doc>
#: per stage: (rank, planned device, torch device)
#</stages_doc>
STAGES = __STAGES__
RANKS = __RANKS__
#<mesh_constants/>
#: a training step (a loss, a backward pass) or inference
TRAINING = __TRAINING__
#: the shapes of the model's output tensors for one micro-batch, in torch.export's flat
#: order (what the last stage returns; None where the value is no tensor)
OUTPUT_SHAPES = __OUTPUT_SHAPES__
#: how those tensors make the model's output (torch.utils._pytree.treespec_dumps, e.g. a
#: Hugging Face ModelOutput); None: the tensors as they are
OUTPUT_SPEC = __OUTPUT_SPEC__
#: the index among them of the output's `logits` (a ModelOutput's), or None
LOGITS = __LOGITS__
#: the loss: None for `loss_fn` below, or FILE.py:NAME / MODULE:NAME (`--loss`)
LOSS: str | None = None
#: how `--mode` sets the model before it is split (`model`: as its code leaves it)
MODES = ("model", "train", "eval")
#: tied weights: per parameter the model holds under several names (torch gives each stage
#: that uses it a copy), its names (the first as `named_parameters()` keeps it), shape, dtype
TIED = __TIED__


def _load(target: str, default: str) -> tuple[Any, dict[str, Any]]:
    """What `target` (FILE.py:NAME or MODULE:NAME, NAME defaulting to `default`) names, and
    the namespace of the module defining it."""
    where, sep, name = target.rpartition(":")
    if not sep or not name.isidentifier():
        where, name = target, default
    if where.endswith(".py"):
        spec = importlib.util.spec_from_file_location(f"_pipelined_{default}", where)
        assert spec is not None and spec.loader is not None, where
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        sys.path.append(os.getcwd())
        module = importlib.import_module(where)
    return getattr(module, name), vars(module)


def load_model(target: str = MODEL, mode: str = "model") -> tuple[torch.nn.Module,
                                                                  dict[str, Any]]:
    """The module `target` names (an nn.Module or a function returning one) and the
    namespace it is defined in; weights seeded, the same on every rank; in `mode`."""
    torch.manual_seed(0)
    found, namespace = _load(target, "model")
    if not isinstance(found, torch.nn.Module):
        found = found()
    if mode == "eval":
        found.eval()
    elif mode == "train":
        found.train()
    return found, namespace


def microbatch(namespace: dict[str, Any], k: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The positional and keyword inputs of micro-batch `k`: random with `INPUTS` (seeded
    by k), else `EXAMPLE`."""
    if EXAMPLE is not None:
        value = eval(EXAMPLE, {"torch": torch, **namespace})
        if isinstance(value, dict):
            return (), dict(value)
        return (tuple(value) if isinstance(value, (tuple, list)) else (value,)), {}
    generator = torch.Generator().manual_seed(k)
    out = []
    for text in INPUTS:
        dims_text, _, dtype_text = text.partition(":")
        dims = [int(d) for d in dims_text.replace(",", "x").split("x")]
        dtype = getattr(torch, dtype_text or "float32")
        if dtype.is_floating_point:
            out.append(torch.randn(dims, generator=generator).to(dtype))
        else:
            out.append(torch.zeros(dims, dtype=dtype))
    return tuple(out), {}


def _joined(values: list[Any]) -> Any:
    """Micro-batches' values of one input: tensors joined along dim 0, else the first."""
    return torch.cat(values) if isinstance(values[0], torch.Tensor) else values[0]


def make_batch(namespace: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any],
                                                   torch.Tensor | None]:
    """The batch of one step (MICROBATCHES micro-batches along dim 0), positional and
    keyword, with CAPTURE_KWARGS, and the loss's target: random labels for `logits`,
    else a random tensor of the output's shape (None for inference or several outputs)."""
    parts = [microbatch(namespace, k) for k in range(MICROBATCHES)]
    args = tuple(_joined(list(xs)) for xs in zip(*(a for a, _ in parts), strict=True))
    kwargs = {**CAPTURE_KWARGS, **{key: _joined([kw[key] for _, kw in parts])
                                   for key in parts[0][1]}}
    target = None
    generator = torch.Generator().manual_seed(MICROBATCHES)
    if TRAINING and LOGITS is not None and OUTPUT_SHAPES[LOGITS] is not None:
        *dims, vocab = OUTPUT_SHAPES[LOGITS]
        target = torch.randint(vocab, [dims[0] * MICROBATCHES, *dims[1:]], generator=generator)
    elif TRAINING and len(OUTPUT_SHAPES) == 1 and OUTPUT_SHAPES[0] is not None:
        shape = OUTPUT_SHAPES[0]
        target = torch.randn([shape[0] * MICROBATCHES, *shape[1:]], generator=generator)
    return args, kwargs, target


__FLAT_TENSORS__

def model_output(value: Any) -> Any:
    """The last stage's output (a tensor, or a tuple of them in torch.export's flat order)
    as the model returns it: rebuilt by OUTPUT_SPEC (a ModelOutput, a dict, a tuple)."""
    from torch.utils import _pytree  # torch's own structures of outputs (and ModelOutput's)

    if OUTPUT_SPEC is None:
        return value
    leaves = [value] if isinstance(value, torch.Tensor) else list(value)
    return _pytree.tree_unflatten(leaves, _pytree.treespec_loads(OUTPUT_SPEC))


def loss_fn(output: Any, target: torch.Tensor | None) -> torch.Tensor:
    """A micro-batch's loss (the default; `--loss` gives yours), the model's output in:
    with `logits` (a Hugging Face ModelOutput's) and integer labels, their cross-entropy;
    else mean squared error against `target`, or the mean square of the outputs. A mean,
    as the schedule averages the micro-batches' gradients."""
    logits = output.get("logits") if isinstance(output, dict) else None
    if isinstance(logits, torch.Tensor) and target is not None \\
            and not target.is_floating_point():
        return torch.nn.functional.cross_entropy(logits.flatten(0, -2).float(),
                                                 target.flatten())
    if target is not None:
        return torch.nn.functional.mse_loss(flat_tensors(output)[0], target)
    return sum(t.float().pow(2).mean() for t in flat_tensors(output))


def the_loss(loss: str | None = LOSS) -> Callable[[Any, Any], torch.Tensor]:
    """The loss function: `loss_fn`, or the one `loss` (FILE.py:NAME, MODULE:NAME) names."""
    if loss is None:
        return loss_fn
    found, _ = _load(loss, "loss")
    if not callable(found):
        raise SystemExit(f"--loss {loss}: a {type(found).__name__}, not a function")
    fn: Callable[[Any, Any], torch.Tensor] = found
    return fn


def _first(value: Any) -> Any:
    return value.tensor_split(MICROBATCHES)[0] if isinstance(value, torch.Tensor) else value


#<build_head>
def build(rank: int, device: torch.device, target: str = MODEL, mode: str = "model",
          loss: str | None = LOSS) -> tuple[Any, list[Any], Any]:
    """This rank's schedule and stage(s), and the batch."""
#</build_head>
    model, namespace = load_model(target, mode)
    args, kwargs, label = make_batch(namespace)
    pipe = pipeline(model, mb_args=tuple(_first(a) for a in args),
                    mb_kwargs={k: _first(v) for k, v in kwargs.items()}, split_spec=SPLIT_SPEC)
    if pipe.num_stages != len(STAGES):
        raise RuntimeError(f"torch split the model into {pipe.num_stages} stages, the plan "
                           f"into {len(STAGES)}")
#<build_stages>
    stages = [pipe.build_stage(s, device) for s, (r, _, _) in enumerate(STAGES) if r == rank]
#</build_stages>
    fn = the_loss(loss)

    def micro_loss(output: Any, target: Any) -> torch.Tensor:
        return fn(model_output(output), target)

    loss_of = micro_loss if TRAINING else None
#<schedule>
    if SCHEDULE.__name__ == "ScheduleInterleaved1F1B":
        schedule = SCHEDULE(stages, n_microbatches=MICROBATCHES, loss_fn=loss_of)
    else:
        schedule = SCHEDULE(stages[0], n_microbatches=MICROBATCHES, loss_fn=loss_of)
#</schedule>
    return schedule, stages, (args, kwargs, label)


def step(rank: int, device: str | None = None, target: str = MODEL, mode: str = "model",
         loss: str | None = LOSS) -> dict[str, Any]:
#<step>
    """One step on this rank (its process group is up): the losses of the micro-batches
    (on the last stage's rank), the output tensors (there too) and its parameters'
    gradients. Keyword inputs that are no tensors (`use_cache=False`) were fixed when the
    model was split; the first stage takes the tensors."""
    dev = torch.device(device or STAGES[[r for r, _, _ in STAGES].index(rank)][2])
    schedule, stages, (args, kwargs, label) = build(rank, dev, target, mode, loss)
#</step>
    losses: list[torch.Tensor] = []
    options: dict[str, Any] = {}
#<step_ranks>
    if rank == STAGES[0][0]:
        options = {k: v.to(dev) for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
    inputs = tuple(a.to(dev) for a in args) if rank == STAGES[0][0] else ()
    if rank == STAGES[-1][0] and TRAINING:
#</step_ranks>
        options.update(target=None if label is None else label.to(dev), losses=losses)
    if TRAINING:
        output = schedule.step(*inputs, **options)
#<tied_call>
        sum_tied_gradients(stages, dev)
#</tied_call>
    else:
        with torch.no_grad():
            output = schedule.step(*inputs, **options)
    first = {name: group[0] for group, _, _ in TIED for name in group}
    grads = {first.get(name, name): p.grad.detach().cpu() for s in stages
#<grads>
             for name, p in s.submod.named_parameters() if p.grad is not None}
#</grads>
    return {"rank": rank, "losses": [x.detach().cpu() for x in losses], "grads": grads,
            "output": [t.detach().cpu() for t in flat_tensors(output)] if output is not None
            else None}


#<tied_head>
def sum_tied_gradients(stages: list[Any], device: torch.device) -> None:
    """Each tied weight's gradient summed across the ranks whose stages hold a copy, so
    that the copies stay equal after the optimizer step (Megatron's embedding group). Every
    rank joins each all-reduce, with zeros where it holds no copy."""
#</tied_head>
    for group, shape, dtype in TIED:
        held = {id(p): p for s in stages
#<tied_params>
                for name, p in s.submod.named_parameters(remove_duplicate=False)
#</tied_params>
                if name in group}
        total = torch.zeros(shape, dtype=getattr(torch, dtype), device=device)
        for p in held.values():
            if p.grad is not None:
                total += p.grad
#<all_reduce>
        dist.all_reduce(total)
#</all_reduce>
        for p in held.values():
            p.grad = total.clone()


def run(rank: int, world_size: int = RANKS, device: str | None = None,
        init_method: str = "env://", save: str | None = None, target: str = MODEL,
        mode: str = "model", loss: str | None = LOSS) -> dict[str, Any]:
    """Join the process group (gloo on the CPU, else nccl), run one step, leave; with
    `save`, write the result to SAVE/rankN.pt."""
    if world_size != RANKS:
        raise SystemExit(f"this export runs on {RANKS} rank(s); this run has {world_size} "
                         "(`planner export torch --pipeline --ranks N` exports the plan for "
                         "N ranks where its split allows)")
#<run_device>
    dev = torch.device(device or STAGES[[r for r, _, _ in STAGES].index(rank)][2])
#</run_device>
    backend = "gloo" if dev.type == "cpu" else "nccl"
    dist.init_process_group(backend, init_method=init_method, rank=rank,
                            world_size=world_size)
    try:
        result = step(rank, device, target, mode, loss)
    finally:
        dist.destroy_process_group()
    if save is not None:
        torch.save(result, os.path.join(save, f"rank{rank}.pt"))
    return result


def _random_modules(model: torch.nn.Module) -> list[str]:
    """Modules in train mode whose result a pipelined step changes: dropout (each rank
    draws its own random numbers) and batch norm (statistics of a micro-batch)."""
    kinds = (torch.nn.modules.dropout._DropoutNd, torch.nn.modules.batchnorm._BatchNorm)
    return [name for name, m in model.named_modules() if m.training and isinstance(m, kinds)]


def unpipelined(target: str = MODEL, mode: str = "model",
                loss: str | None = LOSS) -> dict[str, Any]:
    """The same step on the whole model in this process: the loss and the gradients (the
    output tensors, for inference), and the modules in train mode that draw random numbers
    or take batch statistics."""
    model, namespace = load_model(target, mode)
    args, kwargs, label = make_batch(namespace)
    random = _random_modules(model)
    if not TRAINING:
        with torch.no_grad():
            return {"output": flat_tensors(model(*args, **kwargs)), "random": random}
    value = the_loss(loss)(model(*args, **kwargs), label)
    value.backward()
    return {"loss": value.detach(), "random": random,
            "grads": {name: p.grad.detach() for name, p in model.named_parameters()
                      if p.grad is not None}}


def _gap(a: torch.Tensor, b: torch.Tensor, tolerance: float) -> float | None:
    """The largest difference of `a` and `b` when they are not close (inf for shapes that
    differ), else None."""
    if a.shape != b.shape:
        return float("inf")
    if torch.allclose(a, b, rtol=tolerance, atol=tolerance):
        return None
    return float((a.double() - b.double()).abs().max())


def _outputs_differ(results: list[dict[str, Any]], expected: dict[str, Any],
                    tolerance: float) -> list[str]:
    outputs = [r["output"] for r in results if r["output"] is not None]
#<outputs>
    if len(outputs) != 1:
        return [f"{len(outputs)} rank(s) returned outputs; the last stage's rank alone should"]
    got, want = outputs[0], expected["output"]
#</outputs>
    if len(got) != len(want):
        return [f"{len(got)} output tensor(s) against the model's {len(want)}"]
    gaps = [(k, _gap(a, b, tolerance)) for k, (a, b) in enumerate(zip(got, want, strict=True))]
    return [f"output {k} ({'x'.join(map(str, want[k].shape))}) differs by up to {g:.3g}"
            for k, g in gaps if g is not None]


def differences(results: list[dict[str, Any]], expected: dict[str, Any],
                tolerance: float = 1e-5) -> list[str]:
    """What differs between the ranks' step and the unpipelined one, and by how much: the
    loss (the mean of the micro-batches'), the gradients (those missing or extra, those not
    within `tolerance`), or for inference the last stage's outputs. Empty when equal."""
    if not TRAINING:
        return _outputs_differ(results, expected, tolerance)
    out = []
    losses = [x for r in results for x in r["losses"]]
    if len(losses) != MICROBATCHES:
        out.append(f"{len(losses)} micro-batch loss(es) came back, not {MICROBATCHES}")
    else:
        loss, want = torch.stack(losses).mean(), expected["loss"]
        gap = _gap(loss, want, tolerance)
        if gap is not None:
            out.append(f"loss {loss.item():.8g} against {want.item():.8g} (by {gap:.3g})")
    grads = {name: g for r in results for name, g in r["grads"].items()}
    for what, names in (("missing on every rank", expected["grads"].keys() - grads.keys()),
                        ("on a rank but not in the model", grads.keys() - expected["grads"])):
        if names:
            listed = sorted(names)
            out.append(f"{len(listed)} gradient(s) {what}: " + ", ".join(listed[:3])
                       + (", ..." if len(listed) > 3 else ""))
    worst: dict[str, float] = {}
    for r in results:  # every rank's copy (of a tied weight, on each rank holding it)
        for name, got in r["grads"].items():
            want = expected["grads"].get(name)
            g = None if want is None else _gap(got, want, tolerance)
            if g is not None:
                worst[name] = max(g, worst.get(name, 0.0))
    gaps = sorted(((g, name) for name, g in worst.items()), reverse=True)
    if gaps:
        out.append(f"{len(gaps)} of {len(expected['grads'])} gradients differ, the most: "
                   + ", ".join(f"{name} by {g:.3g}" for g, name in gaps[:3]))
    return out


def same(results: list[dict[str, Any]], expected: dict[str, Any],
         tolerance: float = 1e-5) -> bool:
    """Whether the ranks' loss and gradients (for inference: the last stage's outputs)
    equal the unpipelined step's within `tolerance` (`differences` says how they differ)."""
    return not differences(results, expected, tolerance)


def check(results: list[dict[str, Any]], expected: dict[str, Any], mode: str,
          tolerance: float = 1e-5) -> bool:
    """Print the comparison: the verdict, each difference and its likely cause."""
    what = "loss and gradients" if TRAINING else "outputs"
    how = {"eval": "in eval mode (dropout off, batch norm on its running statistics)",
           "train": "in train mode", "model": "in the modes the model's code left"}[mode]
    print(f"compared {how}, within {tolerance:g}")
    found = differences(results, expected, tolerance)
    print(f"{what} equal the unpipelined model's: {not found}")
    for line in found:
        print(f"  {line}")
    if found and expected["random"]:
        names = expected["random"]
        print(f"  {len(names)} module(s) in train mode draw random numbers or take batch "
              f"statistics ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}): each "
              "rank draws its own and a micro-batch is not the batch; compare with --mode eval")
    return not found


def _spawned(rank: int, world_size: int, device: str | None, init_method: str, save: str,
             target: str, mode: str, loss: str | None) -> None:
    result = run(rank, world_size, device, init_method, save, target, mode, loss)
    _report(result)


def _report(result: dict[str, Any]) -> None:
    losses, output = result["losses"], result["output"]
    tail = f"; loss {torch.stack(losses).mean().item():.6g}" if losses else ""
    if output:
        tail += "; output " + ", ".join("x".join(map(str, t.shape)) for t in output)
    print(f"rank {result['rank']}: {len(result['grads'])} gradient(s){tail}", flush=True)


def main(argv: list[str] | None = None) -> None:
    """`--spawn` starts the ranks here; otherwise this process is one rank of `torchrun`."""
    parser = argparse.ArgumentParser(  # `%` doubled: argparse formats `%(prog)s`
        description=__doc__.splitlines()[0].replace("%", "%%"))
    parser.add_argument("--spawn", action="store_true",
                        help="start the ranks here (torch.multiprocessing.spawn)")
    parser.add_argument("--cpu", action="store_true",
                        help="run every rank on the CPU (gloo), whatever the planned devices")
    parser.add_argument("--check", action="store_true",
                        help="with --spawn: compare the loss and gradients with the "
                             "unpipelined model's (exit status 1 when they differ)")
    parser.add_argument("--mode", choices=MODES,
                        help="set the model to train or eval mode before it is split "
                             "(default: eval with --check, else as the model's code leaves it)")
    parser.add_argument("--loss", default=LOSS, metavar="FILE.py:NAME",
                        help="the loss: a function (output, target) -> scalar tensor "
                             "(default: loss_fn in this script)")
    parser.add_argument("--save", metavar="DIR",
                        help="write each rank's losses and gradients to DIR/rankN.pt")
    parser.add_argument("--model", default=MODEL, help="the model (default: %(default)s)")
    options = parser.parse_args(argv)
    device = "cpu" if options.cpu else None
    mode = options.mode or ("eval" if options.check else "model")
    if not options.spawn:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        _report(run(rank, world, device, "env://", options.save, options.model, mode,
                    options.loss))
        return
    with tempfile.TemporaryDirectory() as tmp:
        save = options.save or tmp
        torch.multiprocessing.spawn(
            _spawned, args=(RANKS, device, "file://" + os.path.join(tmp, "rendezvous"), save,
                            options.model, mode, options.loss), nprocs=RANKS)
        if options.check:
            results = [torch.load(os.path.join(save, f"rank{r}.pt")) for r in range(RANKS)]
            if not check(results, unpipelined(options.model, mode, options.loss), mode):
                sys.exit(1)


if __name__ == "__main__":
    main()
'''

#: the script of a plan whose stages are replicated: per region of `_SCRIPT`, its text there.
#: Constant code, no names: those come in as the placeholders `__DATA_PARALLEL__` and
#: `__MESH__` (literals), as every other
_HYBRID: dict[str, str] = {
    "about": '''\
Written by `planner export torch --pipeline` from __FROM__: __NSTAGES__ stage(s), each
replicated on __DATA_PARALLEL__ ranks: __RANKS__ rank(s) in a 2-D DeviceMesh (pipeline x data),
__SCHEDULE__, __MICROBATCHES__ micro-batch(es) of the traced inputs in all.
''',
    "mesh_about": '''\

The ranks make a 2-D DeviceMesh (`init_device_mesh`, dimensions "pp" x "dp"; rank =
pipeline rank x DATA_PARALLEL + replica, MESH): the stages of one replica pipeline talk
over its "pp" group, and each replica's stage module is wrapped in DistributedDataParallel
over its "dp" group, as torchtitan composes them. The batch is split over the replicas
first (along dim 0), then each replica pipeline runs MICROBATCHES / DATA_PARALLEL
micro-batches of its share: the schedule accumulates its gradients (no_sync) and DDP
averages them across the replicas on the last backward pass, so the step equals one
process on the whole batch.
''',
    "imports": '''\
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.pipelining import __SCHEDULE__, SplitPoint, pipeline
from torch.nn.parallel import DistributedDataParallel
''',
    "stages_doc": '''\
#: per stage: (pipeline rank, planned device of its first replica, torch device)
''',
    "mesh_constants": '''\
#: replicas of each stage: the mesh's data dimension (its pipeline one: RANKS // DATA_PARALLEL)
DATA_PARALLEL = __DATA_PARALLEL__
#: per rank: (pipeline rank, replica, planned device, torch device); rank = pipeline rank x
#: DATA_PARALLEL + replica, as init_device_mesh numbers a 2-D mesh
MESH = __MESH__
''',
    "build_head": '''\
class StageDDP(DistributedDataParallel):
    """DistributedDataParallel of a stage's traced module: torch's stage reads the module's
    `graph` when its first step begins, and DDP holds the module as `module`. A stage may
    hold parameters that its ops do not use (the copy of a tied weight that another stage
    uses): `find_unused_parameters=True`, without which DDP would wait for their gradients
    and leave their buckets (and those after) unreduced."""

    @property
    def graph(self) -> Any:
        return self.module.graph


def device_mesh(device: torch.device) -> DeviceMesh:
    """The ranks' 2-D mesh, pipeline x data (the process group is up)."""
    return init_device_mesh(device.type, (RANKS // DATA_PARALLEL, DATA_PARALLEL),
                            mesh_dim_names=("pp", "dp"))


def share(value: Any, replica: int) -> Any:
    """A replica's share of a batch's value: its part along dim 0 (tensors; else the value)."""
    if isinstance(value, torch.Tensor):
        return value.tensor_split(DATA_PARALLEL)[replica]
    return value


def build(rank: int, device: torch.device, target: str = MODEL, mode: str = "model",
          loss: str | None = LOSS,
          mesh: DeviceMesh | None = None) -> tuple[Any, list[Any], Any]:
    """This rank's schedule and stage(s), and the (whole) batch. The stages talk over the
    mesh's "pp" group; each is wrapped in DDP over its "dp" group (its replicas)."""
    mesh = mesh if mesh is not None else device_mesh(device)
''',
    "build_stages": '''\
    stages = [pipe.build_stage(s, device, group=mesh["pp"].get_group())
              for s, (r, _, _) in enumerate(STAGES) if r == MESH[rank][0]]
    for stage in stages:  # gradients averaged over the replicas on the last backward pass
        stage.submod = StageDDP(stage.submod, process_group=mesh["dp"].get_group(),
                                find_unused_parameters=True)
''',
    "schedule": '''\
    each = MICROBATCHES // DATA_PARALLEL  # a replica pipeline's micro-batches
    if SCHEDULE.__name__ == "ScheduleInterleaved1F1B":
        schedule = SCHEDULE(stages, n_microbatches=each, loss_fn=loss_of)
    else:
        schedule = SCHEDULE(stages[0], n_microbatches=each, loss_fn=loss_of)
''',
    "step": '''\
    """One step on this rank (its process group is up), on its replica's share of the
    batch: the losses of its micro-batches (on the last stage's ranks), the output tensors
    (there too) and its parameters' gradients (averaged over the replicas). Keyword inputs
    that are no tensors (`use_cache=False`) were fixed when the model was split; the first
    stage takes the tensors."""
    dev = torch.device(device or MESH[rank][3])
    mesh = device_mesh(dev)
    schedule, stages, (args, kwargs, label) = build(rank, dev, target, mode, loss, mesh)
    pipeline_rank, replica = MESH[rank][0], MESH[rank][1]
    args = tuple(share(a, replica) for a in args)
    kwargs = {k: share(v, replica) for k, v in kwargs.items()}
    label = share(label, replica)
''',
    "step_ranks": '''\
    if pipeline_rank == STAGES[0][0]:
        options = {k: v.to(dev) for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
    inputs = tuple(a.to(dev) for a in args) if pipeline_rank == STAGES[0][0] else ()
    if pipeline_rank == STAGES[-1][0] and TRAINING:
''',
    "tied_call": '''\
        sum_tied_gradients(stages, dev, mesh["pp"].get_group())
''',
    "grads": '''\
             for name, p in s.submod.module.named_parameters() if p.grad is not None}
''',
    "tied_head": '''\
def sum_tied_gradients(stages: list[Any], device: torch.device, pipeline: Any) -> None:
    """Each tied weight's gradient summed across the ranks of one replica pipeline (the
    process group `pipeline`, the mesh's "pp") whose stages hold a copy, so that the copies
    stay equal after the optimizer step (Megatron's embedding group); DDP has averaged each
    copy over its replicas. Every rank joins each all-reduce, with zeros where it holds no
    copy."""
''',
    "tied_params": '''\
                for name, p in s.submod.module.named_parameters(remove_duplicate=False)
''',
    "all_reduce": '''\
        dist.all_reduce(total, group=pipeline)
''',
    "run_device": '''\
    dev = torch.device(device or MESH[rank][3])
''',
    "outputs": '''\
    if len(outputs) != DATA_PARALLEL:
        return [f"{len(outputs)} rank(s) returned outputs; the last stage's {DATA_PARALLEL} "
                "replicas alone should"]
    # the replicas' shares of the batch, in rank order: the batch's outputs
    got, want = [torch.cat(parts) for parts in zip(*outputs)], expected["output"]
''',
}


#: a region of `_SCRIPT` that the hybrid script replaces: lines between `#<name>` and
#: `#</name>`, or the point `#<name/>` where it adds lines
_REGION = re.compile(r"^#<(\w+)>\n(.*?)^#</\1>\n|^#<(\w+)/>\n", re.MULTILINE | re.DOTALL)


def _script(hybrid: bool) -> str:
    """`_SCRIPT` with each region's own lines (a plan without replicas) or its `_HYBRID`
    text, the markers gone (GeneratedCodeError when the regions and `_HYBRID` do not name
    the same texts, each once: the template changed under them)."""
    names = sorted(m.group(1) or m.group(3) for m in _REGION.finditer(_SCRIPT))
    if names != sorted(_HYBRID) or re.search(r"^#</?\w+/?>$", _REGION.sub("", _SCRIPT),
                                             re.MULTILINE):
        raise GeneratedCodeError(f"the pipeline script's regions {names} are not the hybrid "
                                 f"script's {sorted(_HYBRID)}, each once")
    if hybrid:
        return _REGION.sub(lambda m: _HYBRID[m.group(1) or m.group(3)], _SCRIPT)
    return _REGION.sub(lambda m: m.group(2) or "", _SCRIPT)
