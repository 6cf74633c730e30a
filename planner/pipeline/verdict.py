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

from ..model import Problem
from ..simulate import SimResult, Violation
from .schedule import PipelineRun
from .split import fits, units_split

__all__ = ["NEVER_ENDS", "pipeline_breaks", "replicated_pins"]

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
        out.append("a device holds less than its stages' activations in flight need")
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
