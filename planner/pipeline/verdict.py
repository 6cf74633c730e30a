"""Whether a pipeline plan runs, for `planner.Result` (`status`, `feasible`, `breaks`): the
rules `planner solve` and `simulate` judge it by (`cli.runs.pipeline_verdict`, exit 3).

A pipeline plan breaks a rule when its one pass does, memory aside (the pipeline's memory
model judges memory: activations in flight, recomputation, replicas), when a pipeline unit
(a forward op, its backward ops and their colocation groups) is split over devices, or
when a device holds less than its stages need as the pipeline runs them (`split.fits` of
`PipelineRun.memory_bytes`), or when its iteration never ends (`NEVER_ENDS`: stages that
wait on each other, which even the fallback schedule cannot order), or when, under
`data_parallel auto`, a stage holding a pinned op is replicated (`replicated_pins`: the
pinned op would run on other devices too, which `hybrid` never plans; `data_parallel N`
replicates every stage, a pin naming the device of the first of the N pipelines), or
when, under `data_parallel N`, a stage does not run on N devices (`unreplicated`).
"""

from __future__ import annotations

import math

from ..cost import tied_duplicate_bytes
from ..model import Problem
from ..simulate import SimResult, Violation
from ..units import format_bytes, format_bytes_of
from .schedule import PipelineRun
from .split import fits, split_words, units_split
from .units import units

__all__ = ["NEVER_ENDS", "memory_words", "overflowing", "pipeline_breaks",
           "pipeline_violations", "replica_rules", "replicated_pins", "unreplicated"]

#: why a pipeline whose simulated iteration is not finite does not run, in words
NEVER_ENDS = ("its simulated iteration never ends (ops that never start: its stages wait on "
              "each other)")


def pipeline_breaks(problem: Problem, result: SimResult, run: PipelineRun) -> list[str]:
    """What keeps the plan of `result` (its one pass) from running as `run`, its pipeline,
    in words (`pipeline_violations`' messages, their kind before those of a rule the one
    pass judges too); [] when nothing does."""
    return [v.message if v.kind in ("memory", "pipeline") else f"{v.kind}: {v.message}"
            for v in pipeline_violations(problem, result, run)]


def pipeline_violations(problem: Problem, result: SimResult, run: PipelineRun
                        ) -> list[Violation]:
    """Every rule the plan of `result` breaks as `run`, its pipeline (module docstring):
    the one pass's but memory; each unit split over devices (`unit`); each device over its
    memory as the pipeline runs (`memory`, with its stages' ops); an iteration that never
    ends (`pipeline`); the pins replicated stages break, and stages without the N replicas
    `data_parallel N` fixes (`replica_rules`). What `--json` lists as
    `violations` (before: the one pass's, memory included, beside the pipeline's verdict)."""
    place = result.placement
    out = [v for v in result.violations if v.kind != "memory"]
    out += [Violation("unit", split_words(problem, place, pair), pair,
                      (place[pair[0]], place[pair[1]]))
            for pair in units_split(problem, place)]
    if not fits(problem, run.memory_bytes):
        out += [Violation("memory", memory_words(problem, run, d),
                          tuple(sorted(i for st in run.stages if d in st.devices
                                       for i in st.ops)), (d,))
                for d in overflowing(problem, run)]
    if not math.isfinite(run.iteration_s):
        out.append(Violation("pipeline", f"the pipeline does not run: {NEVER_ENDS}", (), ()))
    return out + replica_rules(problem, run)


def replica_rules(problem: Problem, run: PipelineRun) -> list[Violation]:
    """The rules of `data_parallel` the stages of `run` break: `replicated_pins` and
    `unreplicated`."""
    return replicated_pins(problem, run) + unreplicated(problem, run)


def unreplicated(problem: Problem, run: PipelineRun) -> list[Violation]:
    """Under `data_parallel N`, each stage that does not run on N devices (a placement
    without its `replicas`: before, it ran as one pipeline, reported under the setting)."""
    pipeline = problem.pipeline
    n = None if pipeline is None else pipeline.data_parallel
    if not isinstance(n, int) or n < 2:
        return []
    ops, devs = problem.graph.ops, problem.cluster.devices
    out = []
    for k, stage in enumerate(run.stages):
        if len(stage.devices) == n:
            continue
        names = ", ".join(f"`{ops[i].name}`" for i in stage.ops[:3]) + (
            f" and {len(stage.ops) - 3} more" if len(stage.ops) > 3 else "")
        held = ", ".join(f"`{devs[d].name}`" for d in stage.devices)
        out.append(Violation("replicas", (
            f"stage {k} ({names}) runs on {len(stage.devices)} device(s) ({held}), and "
            f"`data_parallel {n}` runs {n} replicas of every stage"), stage.ops,
            stage.devices))
    return out


def overflowing(problem: Problem, run: PipelineRun) -> list[int]:
    """The devices that hold less than `run` needs of them."""
    return [d for d, (need, dev) in enumerate(zip(run.memory_bytes, problem.cluster.devices,
                                                  strict=True)) if need > dev.memory_bytes]


def replicated_pins(problem: Problem, run: PipelineRun) -> list[Violation]:
    """Under `data_parallel auto`, a pin broken by a replicated stage: its pinned op runs
    on the stage's replicas too (one violation per stage, naming its first pinned op)."""
    pipeline = problem.pipeline
    if pipeline is None or pipeline.data_parallel != "auto" or not problem.pins:
        return []
    ops, devs = problem.graph.ops, problem.cluster.devices
    out = []
    for stage in run.stages:
        pinned = [i for i in stage.ops if i in problem.pins]
        if len(stage.devices) < 2 or not pinned:
            continue
        i, d = pinned[0], problem.pins[pinned[0]]
        others = [e for e in stage.devices if e != d]
        out.append(Violation("pin", (
            f"op `{ops[i].name}` is pinned to `{devs[d].name}`, and its stage is replicated "
            f"on {', '.join(f'`{devs[e].name}`' for e in others)} (under `data_parallel "
            "auto` a pinned op runs on its device alone)"), (i,), (d, *others)))
    return out


def memory_words(problem: Problem, run: PipelineRun, device: int | None = None) -> str:
    """Why `run` does not fit `device` (default: the first it overflows), in words: the
    params its stages keep there alone, or those with the activations in flight, the
    receive buffers (training) and the largest transient that the pipeline's memory model
    adds."""
    devs = problem.cluster.devices
    held = _params_held(problem, run)
    d = next(iter(overflowing(problem, run)), None) if device is None else device
    if d is None:  # (a caller's guard) no device overflows
        return "every device holds what its stages need"
    cap = devs[d].memory_bytes
    if held[d] > cap:
        params, holds = format_bytes_of(held[d], cap)
        return (f"device `{devs[d].name}` holds {holds}, less than the params of its stages "
                f"alone ({params})")
    needs, holds = format_bytes_of(run.memory_bytes[d], cap)
    rest = ("activations in flight, receive buffers" if units(problem).training else
            "every micro-batch's stage inputs and outputs (inference keeps them), one's "
            "activations")
    return (f"device `{devs[d].name}` holds {holds}, less than the {needs} its stages need: "
            f"params {format_bytes(held[d])}, the rest {rest} and workspace")


def _params_held(problem: Problem, run: PipelineRun) -> list[float]:
    """Per device, the params its stages keep (a replica its stage's; a tied weight once
    per device, as the memory model counts them)."""
    ops, m = problem.graph.ops, len(problem.cluster.devices)
    place = [-1] * len(ops)
    group: dict[int, set[int]] = {}
    out = [0.0] * m
    for stage in run.stages:
        own = sum(ops[i].params_bytes for i in stage.ops)
        for i in stage.ops:
            place[i] = stage.device
        group.setdefault(stage.device, set()).update(stage.devices)
        for e in stage.devices:
            out[e] += own
    if problem.graph.ties:
        twice = tied_duplicate_bytes(problem.graph, place, m)
        for d, devices in group.items():
            for e in devices:
                out[e] -= twice[d]
    return out
