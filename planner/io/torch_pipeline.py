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

`pipeline_script` writes a runnable script: every rank builds the model (seeded),
`pipeline(module, mb_args=..., split_spec=...)`, `pipe.build_stage(...)` for its stage(s),
the schedule with a loss, and one `schedule.step(...)`; under `torchrun` (env://) or, with
`--spawn`, under `torch.multiprocessing.spawn` (gloo on the CPU with `--cpu`); `--check`
compares the loss and gradients with the unpipelined model's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cost import costs
from ..errors import Diagnostic, Span, SpecError
from ..model import Problem
from ..pipeline.schedule import PipelineRun, run
from ..pipeline.split import Split, fits, split_of
from ..pipeline.units import units
from ..units import format_seconds
from .codegen import docstring_text, fill, literal
from .torch_export import check_placement, forward_placement
from .torch_import import Traced

#: the plan's `schedule` -> torch's class
SCHEDULE_CLASSES: Mapping[str, str] = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
                                       "interleaved": "ScheduleInterleaved1F1B"}
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

    @property
    def split_spec(self) -> dict[str, str]:
        """`{module path: "BEGINNING"}`: a `SplitPoint.BEGINNING` per stage after the first."""
        return {s.begins_at: "BEGINNING" for s in self.stages if s.begins_at is not None}

    @property
    def schedule_class(self) -> str:
        """The name of torch's schedule class in `torch.distributed.pipelining`."""
        return SCHEDULE_CLASSES[self.schedule]

    @property
    def ranks(self) -> int:
        """How many processes run the pipeline (one per device)."""
        return len({s.rank for s in self.stages})


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
                    devices: Mapping[str, str], where: Span | None = None) -> TorchPipeline:
    """The pipeline `placement` (op -> device, a plan of `problem`) makes of `traced`, or
    the nearest split at module boundaries (see the module docstring; `exact` says which).

    Raises E945 when the plan does not match the model and E947 when torch's schedules
    cannot run it; `where` locates those diagnostics (the placement file).
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
    plan_cost = _cost(problem, chosen)
    stage_of = plan_stage
    if reason:
        nearest = _nearest(_moves(problem, nodes, plan_stage, split.devices), cuts,
                           pipe.schedule != "interleaved")
        if nearest is None:
            raise _no_split(problem, reason, split.stages, where)
        stage_of = nearest
    exported = _placement_of(problem, nodes, stage_of, split.devices)
    kept = sorted(set(stage_of))
    result = TorchPipeline(
        problem.name, pipe.schedule, pipe.microbatches, u.training,
        _stages(nodes, stage_of, kept, names, devices, pipe.schedule), dict(devices),
        {o.name: cluster[d] for o, d in zip(g.ops, exported, strict=True)},
        _cost(problem, exported) if reason else plan_cost, not reason, reason,
        tuple(n.name for n, a, b in zip(nodes, plan_stage, stage_of, strict=True) if a != b),
        plan_cost, tuple((names[k], next((n.name for n, s in zip(nodes, plan_stage, strict=True)
                                          if s == k), "")) for k in range(split.stages)))
    _check_runnable(result, where)
    return result


def _check_devices(problem: Problem, split: Split, where: Span | None) -> None:
    """E947 unless torch's schedule can run the plan's stages on its devices: one stage per
    device (gpipe, 1f1b), or stage k on the (k mod D)-th device (interleaved)."""
    assert problem.pipeline is not None
    names = [problem.cluster.devices[d].name for d in split.devices]
    chain = list(dict.fromkeys(names))
    schedule = problem.pipeline.schedule
    if schedule != "interleaved":
        if len(chain) == len(names):
            return
        twice = next(d for d in chain if names.count(d) > 1)
        stages = ", ".join(str(k) for k, d in enumerate(names) if d == twice)
        raise SpecError(Diagnostic(
            "E947", f"plan `{problem.name}` runs stages {stages} on `{twice}`; torch's "
            f"{SCHEDULE_CLASSES[schedule]} runs one stage per rank", where,
            ("solve the plan with `--algo pipedp` (what `auto` runs under objective pipeline)"
             ": its stages are a chain of devices",)))
    if all(names[k] == chain[k % len(chain)] for k in range(len(names))) \
            and len(names) % len(chain) == 0:
        return
    raise SpecError(Diagnostic(
        "E947", f"plan `{problem.name}`'s stages are on " + " -> ".join(names) + "; torch's "
        "ScheduleInterleaved1F1B runs stage k on rank k mod D (here the devices " +
        ", ".join(chain) + " repeated in that order)", where,
        ("solve the plan with `--algo pipedp`: under `schedule interleaved` its stages loop "
         "over one chain of devices",)))


def _check_runnable(tp: TorchPipeline, where: Span | None) -> None:
    """E947 for a split whose micro-batches torch's schedule refuses."""
    m, s, d = tp.microbatches, len(tp.stages), tp.ranks
    if tp.schedule == "1f1b" and m < s:
        raise SpecError(Diagnostic(
            "E947", f"plan `{tp.plan}`: Schedule1F1B needs at least as many micro-batches as "
            f"stages, and the split has {s} stages for {m} micro-batch(es)", where,
            (f"set `microbatches {s}` (or more) in the plan, or `schedule gpipe`",)))
    rounds = max(1, m // d)
    if tp.schedule == "interleaved" and m % rounds:
        raise SpecError(Diagnostic(
            "E947", f"plan `{tp.plan}`: ScheduleInterleaved1F1B needs the micro-batches ({m}) "
            f"to be a multiple of its rounds, max(1, {m} // {d} ranks) = {rounds}", where,
            (f"set `microbatches` to a multiple of {d} in the plan",)))


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


def _cost(problem: Problem, placement: Sequence[int]) -> Cost:
    assert problem.pipeline is not None
    r: PipelineRun = run(problem, placement, problem.pipeline)
    return Cost(r.period_s, r.iteration_s, r.schedule, r.note, fits(problem, r.memory_bytes))


def _stages(nodes: Sequence[_Node], stage: Sequence[int], kept: Sequence[int],
            names: Sequence[str], devices: Mapping[str, str],
            schedule: str) -> tuple[TorchStage, ...]:
    """The stages left, renumbered, with their ranks (one per device, in stage order)."""
    chain = list(dict.fromkeys(names[s] for s in kept))
    out = []
    for k, s in enumerate(kept):
        ops = tuple(n.name for n, t in zip(nodes, stage, strict=True) if t == s)
        begins = None if k == 0 else ops[0]
        rank = k % len(chain) if schedule == "interleaved" else chain.index(names[s])
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

    return {
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
        "devices": dict(tp.devices),
        "placement": dict(tp.placement),
        "exact": tp.exact,
        "reason": tp.reason,
        "moved": list(tp.moved),
        "plan_stages": [{"device": d, "first": op} for d, op in tp.plan_stages],
        "cost": cost(tp.cost),
        "plan_cost": cost(tp.plan_cost),
    }


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def summary(tp: TorchPipeline) -> str:
    """One line for stderr: stages, schedule, micro-batches and the cost."""
    head = (f"{len(tp.stages)} stage(s) on {tp.ranks} rank(s), {tp.schedule_class}, "
            f"{tp.microbatches} micro-batch(es); split_spec: "
            + (", ".join(tp.split_spec) or "none (one stage)"))
    if tp.exact:
        return f"{head}; {tp.cost.describe()}"
    return (f"{head}; the nearest split at module boundaries ({len(tp.moved)} op(s) moved): "
            f"{tp.cost.describe()}, against the plan's {tp.plan_cost.describe()}")


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
    values = {
        "__TARGET__": literal(target),
        "__INPUTS__": literal(list(shapes)),
        "__EXAMPLE__": literal(example),
        "__MICROBATCHES__": literal(tp.microbatches),
        "__SPLIT_SPEC__": "{" + split + ("\n}" if split else "}"),
        "__STAGES__": "[" + stages + "\n]",
        "__TRAINING__": literal(tp.training),
        "__OUTPUT_SHAPE__": literal(_output_shape(traced)),
        "__SCHEDULE__": SCHEDULE_CLASSES[tp.schedule],
        "__RANKS__": literal(tp.ranks),
        "__NSTAGES__": literal(len(tp.stages)),
        "__ABOUT__": docstring_text(f"`{target}`"),
        "__FROM__": docstring_text(f"plan `{tp.plan}`" + (f" of `{spec}`" if spec else "")),
        "__NAME__": docstring_text(name),
        "__NOTE__": note,
        "__TIED__": literal(tied_parameters(traced.model)),
    }
    # one pass: a name holding a placeholder (a device `__FROM__0`) stays that text
    return fill(_SCRIPT, values, name)


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


def _output_shape(traced: Traced) -> list[int] | None:
    """The shape of the model's output for one micro-batch, when it is one tensor."""
    output = next((n for n in traced.gm.graph.nodes if n.op == "output"), None)
    arg = output.args[0] if output is not None else None
    if isinstance(arg, (tuple, list)) and len(arg) == 1:  # an exported graph's flat outputs
        arg = arg[0]
    shape = traced.shapes.get(getattr(arg, "name", ""))
    return list(shape) if shape is not None else None


_SCRIPT = '''\
#!/usr/bin/env python3
"""One pipelined step of __ABOUT__ under torch.distributed.pipelining, as planned.

Written by `planner export torch --pipeline` from __FROM__: __NSTAGES__ stage(s) on
__RANKS__ rank(s), __SCHEDULE__, __MICROBATCHES__ micro-batch(es) of the traced inputs.
__NOTE__
    torchrun --nproc-per-node __RANKS__ __NAME__   # a process per rank (env:// rendezvous)
    python __NAME__ --spawn --cpu --check  # spawn the ranks here: gloo on the CPU

Every rank builds the model (seeded, so that the ranks agree), splits it with
`pipeline(module, mb_args, split_spec=SPLIT_SPEC)`, builds its stage(s) and runs one
`schedule.step`. `make_batch` and `loss_fn` are placeholders: put your data and loss there.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import tempfile
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.pipelining import __SCHEDULE__, SplitPoint, pipeline

#: the schedule: its class in torch.distributed.pipelining
SCHEDULE: Any = __SCHEDULE__

#: the model, as given to `planner import torch` (FILE.py:NAME or MODULE:NAME)
MODEL = __TARGET__
#: one micro-batch, as traced: `--input` shapes, or an `--example` expression
INPUTS = __INPUTS__
EXAMPLE = __EXAMPLE__
MICROBATCHES = __MICROBATCHES__
#: a stage begins at each of these modules (the first at the model's start)
SPLIT_SPEC = __SPLIT_SPEC__
#: per stage: (rank, planned device, torch device)
STAGES = __STAGES__
RANKS = __RANKS__
#: a training step (a loss, a backward pass) or inference
TRAINING = __TRAINING__
#: the model's output for one micro-batch (None: not one tensor)
OUTPUT_SHAPE = __OUTPUT_SHAPE__
#: tied weights: per parameter the model holds under several names (torch gives each stage
#: that uses it a copy), its names (the first as `named_parameters()` keeps it), shape, dtype
TIED = __TIED__


def load_model(target: str = MODEL) -> tuple[torch.nn.Module, dict[str, Any]]:
    """The module `target` names (an nn.Module or a function returning one) and the
    namespace it is defined in; weights seeded, the same on every rank."""
    where, sep, name = target.rpartition(":")
    if not sep or not name.isidentifier():
        where, name = target, "model"
    torch.manual_seed(0)
    if where.endswith(".py"):
        spec = importlib.util.spec_from_file_location("_pipelined_model", where)
        assert spec is not None and spec.loader is not None, where
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        sys.path.append(os.getcwd())
        module = importlib.import_module(where)
    found = getattr(module, name)
    if not isinstance(found, torch.nn.Module):
        found = found()
    return found, vars(module)


def microbatch(namespace: dict[str, Any], k: int) -> tuple[Any, ...]:
    """The inputs of micro-batch `k`: random with `INPUTS` (seeded by k), else `EXAMPLE`."""
    if EXAMPLE is not None:
        value = eval(EXAMPLE, {"torch": torch, **namespace})
        return tuple(value) if isinstance(value, (tuple, list)) else (value,)
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
    return tuple(out)


def make_batch(namespace: dict[str, Any]) -> tuple[tuple[Any, ...], torch.Tensor | None]:
    """The batch of one step (MICROBATCHES micro-batches along dim 0) and the loss's target."""
    parts = [microbatch(namespace, k) for k in range(MICROBATCHES)]
    args = tuple(torch.cat(xs) for xs in zip(*parts, strict=True))
    target = None
    if TRAINING and OUTPUT_SHAPE is not None:
        generator = torch.Generator().manual_seed(MICROBATCHES)
        shape = [OUTPUT_SHAPE[0] * MICROBATCHES, *OUTPUT_SHAPE[1:]]
        target = torch.randn(shape, generator=generator)
    return args, target


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def loss_fn(output: Any, target: torch.Tensor | None) -> torch.Tensor:
    """A micro-batch's loss (a placeholder): mean squared error against `target`, or the
    mean square of the outputs. A mean, as the schedule averages the micro-batches' gradients."""
    if target is not None:
        return torch.nn.functional.mse_loss(output, target)
    return sum(t.float().pow(2).mean() for t in _tensors(output))


def build(rank: int, device: torch.device, target: str = MODEL) -> tuple[Any, list[Any], Any]:
    """This rank's schedule and stage(s), and the batch."""
    model, namespace = load_model(target)
    args, label = make_batch(namespace)
    mb_args = tuple(a.tensor_split(MICROBATCHES)[0] for a in args)
    pipe = pipeline(model, mb_args=mb_args, split_spec=SPLIT_SPEC)
    if pipe.num_stages != len(STAGES):
        raise RuntimeError(f"torch split the model into {pipe.num_stages} stages, the plan "
                           f"into {len(STAGES)}")
    stages = [pipe.build_stage(s, device) for s, (r, _, _) in enumerate(STAGES) if r == rank]
    loss = loss_fn if TRAINING else None
    if SCHEDULE.__name__ == "ScheduleInterleaved1F1B":
        schedule = SCHEDULE(stages, n_microbatches=MICROBATCHES, loss_fn=loss)
    else:
        schedule = SCHEDULE(stages[0], n_microbatches=MICROBATCHES, loss_fn=loss)
    return schedule, stages, (args, label)


def step(rank: int, device: str | None = None, target: str = MODEL) -> dict[str, Any]:
    """One step on this rank (its process group is up): the losses of the micro-batches
    (on the last stage's rank), the output (there too) and its parameters' gradients."""
    dev = torch.device(device or STAGES[[r for r, _, _ in STAGES].index(rank)][2])
    schedule, stages, (args, label) = build(rank, dev, target)
    losses: list[torch.Tensor] = []
    inputs = tuple(a.to(dev) for a in args) if rank == STAGES[0][0] else ()
    options: dict[str, Any] = {}
    if rank == STAGES[-1][0] and TRAINING:
        options = {"target": None if label is None else label.to(dev), "losses": losses}
    if TRAINING:
        output = schedule.step(*inputs, **options)
        sum_tied_gradients(stages, dev)
    else:
        with torch.no_grad():
            output = schedule.step(*inputs, **options)
    first = {name: group[0] for group, _, _ in TIED for name in group}
    grads = {first.get(name, name): p.grad.detach().cpu() for s in stages
             for name, p in s.submod.named_parameters() if p.grad is not None}
    return {"rank": rank, "losses": [x.detach().cpu() for x in losses], "grads": grads,
            "output": output.detach().cpu() if isinstance(output, torch.Tensor) else None}


def sum_tied_gradients(stages: list[Any], device: torch.device) -> None:
    """Each tied weight's gradient summed across the ranks whose stages hold a copy, so
    that the copies stay equal after the optimizer step (Megatron's embedding group). Every
    rank joins each all-reduce, with zeros where it holds no copy."""
    for group, shape, dtype in TIED:
        held = {id(p): p for s in stages
                for name, p in s.submod.named_parameters(remove_duplicate=False)
                if name in group}
        total = torch.zeros(shape, dtype=getattr(torch, dtype), device=device)
        for p in held.values():
            if p.grad is not None:
                total += p.grad
        dist.all_reduce(total)
        for p in held.values():
            p.grad = total.clone()


def run(rank: int, world_size: int = RANKS, device: str | None = None,
        init_method: str = "env://", save: str | None = None,
        target: str = MODEL) -> dict[str, Any]:
    """Join the process group (gloo on the CPU, else nccl), run one step, leave; with
    `save`, write the result to SAVE/rankN.pt."""
    if world_size != RANKS:
        raise SystemExit(f"the plan has {RANKS} rank(s); this run has {world_size}")
    dev = torch.device(device or STAGES[[r for r, _, _ in STAGES].index(rank)][2])
    backend = "gloo" if dev.type == "cpu" else "nccl"
    dist.init_process_group(backend, init_method=init_method, rank=rank,
                            world_size=world_size)
    try:
        result = step(rank, device, target)
    finally:
        dist.destroy_process_group()
    if save is not None:
        torch.save(result, os.path.join(save, f"rank{rank}.pt"))
    return result


def unpipelined(target: str = MODEL) -> dict[str, Any]:
    """The same step on the whole model in this process: the loss and the gradients (the
    output, for inference)."""
    model, namespace = load_model(target)
    args, label = make_batch(namespace)
    if not TRAINING:
        with torch.no_grad():
            return {"output": model(*args)}
    loss = loss_fn(model(*args), label)
    loss.backward()
    return {"loss": loss.detach(), "grads": {name: p.grad.detach()
                                             for name, p in model.named_parameters()
                                             if p.grad is not None}}


def same(results: list[dict[str, Any]], expected: dict[str, Any],
         tolerance: float = 1e-5) -> bool:
    """Whether the ranks' loss (the mean of the micro-batches') and gradients equal the
    unpipelined step's (for inference: the last stage's output)."""
    def close(a: torch.Tensor, b: torch.Tensor) -> bool:
        return a.shape == b.shape and bool(torch.allclose(a, b, rtol=tolerance,
                                                          atol=tolerance))

    if not TRAINING:
        outputs = [r["output"] for r in results if r["output"] is not None]
        return len(outputs) == 1 and close(outputs[0], expected["output"])
    losses = [x for r in results for x in r["losses"]]
    grads = {name: g for r in results for name, g in r["grads"].items()}
    if not losses or grads.keys() != expected["grads"].keys():
        return False
    return close(torch.stack(losses).mean(), expected["loss"]) and all(
        close(g, expected["grads"][k]) for r in results for k, g in r["grads"].items())


def _spawned(rank: int, world_size: int, device: str | None, init_method: str, save: str,
             target: str) -> None:
    result = run(rank, world_size, device, init_method, save, target)
    _report(result)


def _report(result: dict[str, Any]) -> None:
    losses, output = result["losses"], result["output"]
    tail = f"; loss {torch.stack(losses).mean().item():.6g}" if losses else ""
    if output is not None:
        tail += "; output " + "x".join(map(str, output.shape))
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
                             "unpipelined model's")
    parser.add_argument("--save", metavar="DIR",
                        help="write each rank's losses and gradients to DIR/rankN.pt")
    parser.add_argument("--model", default=MODEL, help="the model (default: %(default)s)")
    options = parser.parse_args(argv)
    device = "cpu" if options.cpu else None
    if not options.spawn:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        _report(run(rank, world, device, "env://", options.save, options.model))
        return
    with tempfile.TemporaryDirectory() as tmp:
        save = options.save or tmp
        torch.multiprocessing.spawn(
            _spawned, args=(RANKS, device, "file://" + os.path.join(tmp, "rendezvous"), save,
                            options.model), nprocs=RANKS)
        if options.check:
            results = [torch.load(os.path.join(save, f"rank{r}.pt")) for r in range(RANKS)]
            what = "loss and gradients" if TRAINING else "outputs"
            print(f"{what} equal the unpipelined model's:",
                  same(results, unpipelined(options.model)))


if __name__ == "__main__":
    main()
'''
