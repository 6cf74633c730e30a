"""Lower bounds for a pipeline: on the period T and on the iteration.

Every device handles its share of each micro-batch, so the busiest one needs at least:

- **work**: the compute of one micro-batch spread over the devices at their speeds. When
  every op's time scales with the device alone (`time / speed`, `flops / rate`: related
  devices), that is the total at one device's pace times the fraction of the whole
  cluster's pace; otherwise the sum of each op's fastest time over the device count;
- **unit**: the largest unit (a layer's forward and backward ops, a colocation group)
  cannot be split: its fastest time on a device it may use (over the most replicas it may
  have, min(devices, M), under `data_parallel`: replicas take turns at micro-batches);
- **pins**: the units pinned to one device, on that device.

Transfers and memory only add, so T >= the largest of these. M micro-batches need at least
M times the work bound in all, and at least the one-pass lower bound of one micro-batch
(`planner.bounds`): the iteration bound is the larger.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..cost import INF, costs
from ..model import Problem
from .units import units


@dataclass(frozen=True, slots=True)
class PipelineBound:
    """The bounds (seconds) and which argument gave the period's."""

    period_s: float
    iteration_s: float
    reason: str


def pipeline_bound(problem: Problem, one_pass_s: float = 0.0) -> PipelineBound:
    """The period and iteration bounds of `problem` (module docstring); `one_pass_s` is the
    one-pass makespan bound (`bounds.lower_bound(problem).makespan_s`)."""
    c = costs(problem)
    u = units(problem)
    table = np.array(c.compute, dtype=np.float64).reshape(len(problem.graph.ops), -1)
    m = table.shape[1]
    candidates = {"work": _work(table), "unit": 0.0, "pins": 0.0}
    for k, ops in enumerate(u.members):
        allowed = u.allowed[k]
        if allowed:
            candidates["unit"] = max(candidates["unit"], min(
                float(table[list(ops), d].sum()) for d in allowed))
    pinned = [0.0] * m
    for k, ops in enumerate(u.members):
        if len(u.allowed[k]) == 1:
            pinned[u.allowed[k][0]] += float(table[list(ops), u.allowed[k][0]].sum())
    candidates["pins"] = max(pinned, default=0.0)
    pipe = problem.pipeline
    if pipe is not None and pipe.data_parallel != 1:
        candidates["unit"] /= max(1, min(m, pipe.microbatches))
    reason = max(candidates, key=lambda k: candidates[k])
    period = candidates[reason]
    microbatches = problem.pipeline.microbatches if problem.pipeline else 1
    iteration = max(microbatches * candidates["work"], one_pass_s)
    return PipelineBound(period, iteration, reason)


def _work(table: np.ndarray) -> float:
    """The work bound: related devices at the cluster's pace, else fastest times over m."""
    finite = np.isfinite(table)
    m = table.shape[1]
    if not table.size:
        return 0.0
    rows = finite.all(axis=1) & (table > 0).all(axis=1)
    if rows.any() and finite.all():
        ratio = table[rows] / table[rows][:, :1]  # per op, each device's time / device 0's
        if np.allclose(ratio, ratio[0], rtol=1e-9, atol=0.0):
            pace = 1.0 / ratio[0]  # device 0's time over each device's
            return float(table[:, 0].sum() / pace.sum())
    fastest = np.where(finite, table, INF).min(axis=1)
    fastest = np.where(np.isfinite(fastest), fastest, 0.0)
    return float(fastest.sum()) / m if m else math.inf
