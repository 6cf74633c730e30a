"""Lower bounds for a pipeline: on the period T and on the iteration.

Every device handles its share of each micro-batch, so the busiest one needs at least:

- **work**: the compute of one micro-batch spread over the devices at their speeds. When
  every op's time scales with the device alone (`time / speed`, `flops / rate`: related
  devices), that is the total at one device's pace times the fraction of the whole
  cluster's pace; otherwise the sum of each op's fastest time over the device count;
- **unit**: the largest unit (a layer's forward and backward ops, a colocation group)
  cannot be split: its fastest time on a device it may use;
- **pins**: the units pinned to one device, on that device.

Replicated stages (`data_parallel`) take turns at micro-batches, and the period charges
each replica of a stage at least the stage's load over the number of replicas, whatever M
(`schedule.PipelineRun.loads_s`; a replica slower than the stage's device its own time,
so the work bound holds), so under `data_parallel` the unit and pins bounds are
divided by the most replicas a stage may have: N under `data_parallel N` (every stage
has N, a pinned one included: its block's), every device under `auto` (a layout given to
`simulate --stages` may replicate any stage, pinned or not, on more devices than M).

Transfers and memory only add, so T >= the largest of these. M micro-batches need at least
M times that bound in all (each is a bound on one device's compute per micro-batch, and a
device runs its share of every micro-batch, one after another: the largest unit's device
runs it M times, or a replica its ceil(M / r) share), and at least the one-pass lower bound
of one micro-batch (`planner.bounds`): the iteration bound is the larger. Of the one-pass
bound, only its parts that read neither memory nor transfers count (`one_pass_compute`:
the critical path, the work, the load and the ramp). The first micro-batch runs on the
plan's own devices (its pins, colocation groups and runnable devices: a replicated stage's
micro-batch 0 runs on the stage's own device), each op for at least its one-pass time,
after its inputs, so those hold for it. The others do not: the constrained and arrival
paths charge a tensor the direct link between two devices, and a pipeline relays a tensor
that skips stages through the stages between (`order.relayed`), which can be faster
than a slow direct link; the memory path and forced colocation ask which devices hold ops under the
one-pass memory model, and a pipeline's memory is the split model's
(`split.stage_bytes`), which may hold on one device what one pass could not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..bounds import lower_bound
from ..cost import INF, costs
from ..model import Problem
from ..stagefacts import proven_none
from .units import units


@dataclass(frozen=True, slots=True)
class PipelineBound:
    """The bounds (seconds) and which argument gave the period's; `no_plan`: where a proof
    says no plan of the problem fits (`stagefacts.proofs`), its code and message, e.g.
    `E301: op `a` needs ...` (no best period, so no gap to it; "" otherwise)."""

    period_s: float
    iteration_s: float
    reason: str
    no_plan: str = ""

    def gap(self, period_s: float) -> float | None:
        """`(T - bound) / bound` for a plan of period `period_s`: T is at most that far above
        the best period, whether or not the plan fits (the best, a plan that fits, is at
        least the bound). None where a proof says no plan fits (there is no best period),
        for a period that never ends, or with no bound above 0."""
        if self.no_plan or not (math.isfinite(period_s) and self.period_s > 0):
            return None
        return max(0.0, period_s - self.period_s) / self.period_s


def pipeline_bound(problem: Problem, one_pass_s: float = 0.0, *,
                   replicated: bool = False) -> PipelineBound:
    """The period and iteration bounds of `problem` (module docstring); `one_pass_s` is the
    one-pass makespan bound (`bounds.lower_bound(problem).makespan_s`, 0 to leave it out),
    of which at most `one_pass_compute` counts. `replicated`: the bound of a plan that
    replicates stages whatever `data_parallel` says (a plan file's `replicas`, a stages
    file's), which allows them as `auto` does."""
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
    replicas = _most_replicas(problem, m, replicated)
    candidates["unit"] /= replicas
    candidates["pins"] /= replicas
    reason = max(candidates, key=lambda k: candidates[k])
    period = candidates[reason]
    microbatches = problem.pipeline.microbatches if problem.pipeline else 1
    one_pass = min(one_pass_s, one_pass_compute(problem)) if one_pass_s > 0 else 0.0
    iteration = max(microbatches * period, one_pass)
    return PipelineBound(period, iteration, reason, proven_none(problem))


def one_pass_compute(problem: Problem) -> float:
    """The largest one-pass makespan bound of `problem` that reads neither memory nor
    transfers (module docstring): the critical path, the work, the load and the ramp."""
    b = lower_bound(problem)
    return max(b.critical_path_s, b.work_s, b.load_s, b.ramp_s)


def _most_replicas(problem: Problem, m: int, replicated: bool = False) -> int:
    """The most replicas a stage of `problem` may run on (module docstring); any stage on
    every device where the plan is `replicated` whatever `data_parallel` says."""
    pipe = problem.pipeline
    if pipe is None:
        return 1
    if pipe.data_parallel == "auto" or (replicated and pipe.data_parallel == 1):
        return max(1, m)
    return max(1, pipe.data_parallel)


def _work(table: np.ndarray) -> float:
    """The work bound: related devices at the cluster's pace, else fastest times over m.
    An op that takes no time somewhere and some elsewhere (`time[gpu] 0 ms`) makes them
    unrelated (before: left out of the test, it was charged device 0's time, which could
    be above the optimum)."""
    finite = np.isfinite(table)
    m = table.shape[1]
    if not table.size:
        return 0.0
    rows = (table > 0).all(axis=1)
    if rows.any() and finite.all() and (rows | (table == 0).all(axis=1)).all():
        ratio = table[rows] / table[rows][:, :1]  # per op, each device's time / device 0's
        if np.allclose(ratio, ratio[0], rtol=1e-9, atol=0.0):
            pace = 1.0 / ratio[0]  # device 0's time over each device's
            return float(table[:, 0].sum() / pace.sum())
    fastest = np.where(finite, table, INF).min(axis=1)
    fastest = np.where(np.isfinite(fastest), fastest, 0.0)
    return float(fastest.sum()) / m if m else math.inf
