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
replicates every stage, a pin naming the device of the first of the N pipelines).
"""

from __future__ import annotations

import math

from ..cost import tied_duplicate_bytes
from ..model import Problem
from ..simulate import SimResult, Violation
from ..units import format_bytes, format_bytes_of
from .schedule import PipelineRun
from .split import fits, units_split
from .units import units

__all__ = ["NEVER_ENDS", "memory_words", "pipeline_breaks", "replicated_pins"]

#: why a pipeline whose simulated iteration is not finite does not run, in words
NEVER_ENDS = ("its simulated iteration never ends (ops that never start: its stages wait on "
              "each other)")


def pipeline_breaks(problem: Problem, result: SimResult, run: PipelineRun) -> list[str]:
    """What keeps the plan of `result` (its one pass) from running as `run`, its pipeline,
    in words; [] when nothing does."""
    out = [f"{v.kind}: {v.message}" for v in result.violations if v.kind != "memory"]
    if units_split(problem, result.placement):
        out.append("a pipeline unit is split over devices")
    if not fits(problem, run.memory_bytes):
        out.append(memory_words(problem, run))
    if not math.isfinite(run.iteration_s):
        out.append(f"the pipeline does not run: {NEVER_ENDS}")
    out += [f"{v.kind}: {v.message}" for v in replicated_pins(problem, run)]
    return out


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


def memory_words(problem: Problem, run: PipelineRun) -> str:
    """Why `run` does not fit its devices, in words, at the first device it overflows:
    the params its stages keep there alone, or those with the activations in flight, the
    receive buffers (training) and the largest transient that the pipeline's memory model
    adds."""
    devs = problem.cluster.devices
    held = _params_held(problem, run)
    d = next((d for d, (h, dev) in enumerate(zip(run.memory_bytes, devs, strict=True))
              if h > dev.memory_bytes), None)
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
