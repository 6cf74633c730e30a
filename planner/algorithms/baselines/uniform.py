"""`uniform`: the pipeline split people use today: the same number of units per stage.

A baseline, not from a paper: torchtitan's and gpt-neox's default (`uniform`) gives each
stage the same number of layers; here each stage gets the same number of pipeline units
(`planner.pipeline.units`: a layer's forward and backward ops together), the first
`n mod S` stages one more, stage k on device k (under `interleaved`, device k mod D).
S is every device (times `stages_per_device`), or the number of units if smaller, and
under `1f1b` at most the micro-batches (torch's `Schedule1F1B` needs one per stage). It
reads neither costs nor memory: the simulator says whether the split fits.
"""

from __future__ import annotations

from ...model import Pipeline, Problem
from ...pipeline.split import Split
from ...pipeline.units import units
from ...plan import Plan
from ..base import Options, Solution


def place(problem: Problem, options: Options) -> Solution:
    """The uniform split of the plan's units over its devices, in device order."""
    pipeline = problem.pipeline or Pipeline()
    n = units(problem).count
    devices = len(problem.cluster.devices)
    stages = max(1, min(devices * pipeline.per_device, n))
    if pipeline.schedule_spec.stages_at_most_microbatches:
        stages = min(stages, pipeline.microbatches)
    size, extra = divmod(n, stages)
    bounds = [0]
    for k in range(stages):
        bounds.append(bounds[-1] + size + (1 if k < extra else 0))
    split = Split(tuple(bounds), tuple(k % devices for k in range(stages)))
    return Solution(Plan(split.placement(problem), algorithm="uniform"), "feasible",
                    {"stages": stages})
