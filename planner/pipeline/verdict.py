"""Whether a pipeline plan runs, for `planner.Result` (`status`, `feasible`, `breaks`): the
rules `planner solve` and `simulate` judge it by (`cli.runs.pipeline_verdict`, exit 3).

A pipeline plan breaks a rule when its one pass does, memory aside (the pipeline's memory
model judges memory: activations in flight, recomputation, replicas), when a pipeline unit
(a forward op, its backward ops and their colocation groups) is split over devices, or
when a device holds less than its stages need as the pipeline runs them (`split.fits` of
`PipelineRun.memory_bytes`).
"""

from __future__ import annotations

from ..model import Problem
from ..simulate import SimResult
from .schedule import PipelineRun
from .split import fits, units_split

__all__ = ["pipeline_breaks"]


def pipeline_breaks(problem: Problem, result: SimResult, run: PipelineRun) -> list[str]:
    """What keeps the plan of `result` (its one pass) from running as `run`, its pipeline,
    in words; [] when nothing does."""
    out = [f"{v.kind}: {v.message}" for v in result.violations if v.kind != "memory"]
    if units_split(problem, result.placement):
        out.append("a pipeline unit is split over devices")
    if not fits(problem, run.memory_bytes):
        out.append("a device holds less than its stages' activations in flight need")
    return out
