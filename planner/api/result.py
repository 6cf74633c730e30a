"""`Result`: what `planner.solve` returns, by names.

A `Solution` (so `.plan`, `.status`, `.info`, `.planning_s` keep their meaning, indices
included) that also knows its `Problem`: the placement and the schedule by op and device
names, and the simulator's verdict (computed on first use, then kept).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from ..algorithms.base import Solution
from ..algorithms.exact.verdict import pipeline_standing, plan_bound, standing
from ..bounds import Bounds, lower_bound, relative_gap
from ..errors import Diagnostic, Span, SpecError
from ..files import check_outputs, write_text_atomic
from ..model import Problem
from ..pipeline.bound import PipelineBound, pipeline_bound
from ..pipeline.hybrid import replica_groups, replica_names
from ..pipeline.schedule import PipelineRun, run_planned
from ..pipeline.verdict import pipeline_breaks
from ..plan import Plan, in_envelope, load_plan, load_recompute, load_replicas
from ..simulate import SimResult, simulate
from ..strictjson import loads as strict_loads


class ScheduledOp(NamedTuple):
    """One op of the simulated schedule."""

    op: str
    device: str
    start_s: float
    end_s: float


@dataclass(frozen=True, kw_only=True)
class Result(Solution):
    """A `Solution` with its `Problem`: names instead of indices, and the simulation."""

    problem: Problem

    @classmethod
    def of(cls, problem: Problem, solution: Solution) -> Result:
        """`solution` of `problem`, as a `Result`; its `status` as the command line shows
        it (`verdict.standing`: under `objective makespan`, `optimal` when a feasible plan
        meets its bound; `infeasible` when the simulator finds it breaks a rule, under
        `objective pipeline` as the pipeline runs it: `pipeline.verdict`, and `optimal`
        where a plan that runs meets its period's bound: `verdict.pipeline_standing`)."""
        result = cls(problem=problem,
                     **{f.name: getattr(solution, f.name) for f in fields(Solution)})
        status = result.status
        if problem.pipeline is None:  # (a pipeline's gap is not one pass's)
            status = standing(result.status, result.gap)
        if status in ("feasible", "optimal") and not result.feasible:  # `expert` checks none
            status = "infeasible"
        elif problem.pipeline is not None and result.feasible:
            status = pipeline_standing(status, result.period_gap)
        if status == result.status:
            return result
        again = dataclasses.replace(result, status=status)
        # (kept, not redone)
        for cached in ("simulation", "bounds", "pipeline", "breaks", "pipeline_bound"):
            if cached in result.__dict__:
                again.__dict__[cached] = result.__dict__[cached]
        return again

    @property
    def placement_by_name(self) -> dict[str, str]:
        """Op name -> device name, in graph order."""
        ops, devs = self.problem.graph.ops, self.problem.cluster.devices
        return {ops[i].name: devs[d].name for i, d in enumerate(self.plan.placement)}

    @cached_property
    def simulation(self) -> SimResult:
        """The simulator's re-execution of the plan (the judge of every figure)."""
        return simulate(self.problem, self.plan)

    @cached_property
    def pipeline(self) -> PipelineRun | None:
        """Under `objective pipeline`: the plan run as its pipeline (`pipeline.schedule.run`:
        M micro-batches under the plan's schedule, the devices the algorithm says recompute
        doing so, the stages it replicates on their groups): iteration, per micro-batch,
        period T, bubble, stages, memory. None under `objective makespan`."""
        if self.problem.pipeline is None:
            return None
        return run_planned(self.problem, self.plan.placement, self.problem.pipeline,
                           self.info)

    @cached_property
    def bounds(self) -> Bounds:
        """The problem's proven lower bounds."""
        return lower_bound(self.problem)

    @property
    def makespan_s(self) -> float:
        """The simulated makespan, in seconds: `inf` for a plan that cannot finish (a
        deadlock, an op on a device that cannot run it); a plan over a memory cap still has
        one (`feasible` says whether the plan breaks a rule)."""
        return self.simulation.makespan_s

    @property
    def feasible(self) -> bool:
        """Whether the simulated plan breaks no rule (memory caps, pins, colocation); under
        `objective pipeline`, whether it runs as its pipeline (`breaks` says why not)."""
        return not self.breaks if self.pipeline is not None else self.simulation.feasible

    @cached_property
    def breaks(self) -> tuple[str, ...]:
        """The rules the plan breaks, in words: the simulation's violations; under
        `objective pipeline`, as the pipeline runs (`pipeline.verdict.pipeline_breaks`:
        its memory is the pipeline's, and a pipeline unit runs on one device)."""
        if self.pipeline is None:
            return tuple(f"{v.kind}: {v.message}" for v in self.simulation.violations)
        return tuple(pipeline_breaks(self.problem, self.simulation, self.pipeline))

    @cached_property
    def pipeline_bound(self) -> PipelineBound | None:
        """Under `objective pipeline`: the lower bounds on the period T and on the
        iteration (`pipeline.bound`; `period_s`, `iteration_s`, `reason`), the figures
        `solve --json` gives as `period_bound_s` and `iteration_bound_s`. None under
        `objective makespan`."""
        if self.problem.pipeline is None:
            return None
        return pipeline_bound(self.problem, self.bounds.makespan_s,
                              replicated=bool(replica_groups(self.problem, self.info)))

    @property
    def period_gap(self) -> float | None:
        """Under `objective pipeline`: `(T - bound) / bound`, T the plan's period: it is at
        most `1 + period_gap` times the best period, whether or not the plan fits, as
        `solve` prints and `solve --json` gives it (None under `objective makespan`, where a
        proof says no plan fits: `pipeline_bound.no_plan`, or with no finite gap). `gap`
        is one pass's, None for a plan that breaks a rule."""
        run, bound = self.pipeline, self.pipeline_bound
        return None if run is None or bound is None else bound.gap(run.period_s)

    @property
    def bound_s(self) -> float:
        """The plan's one lower bound (`verdict.plan_bound`): planner's, raised to one its
        algorithm proved; what the command line prints beside it."""
        return plan_bound(self.bounds.makespan_s, self.info)

    @property
    def gap(self) -> float | None:
        """`(makespan - bound_s) / bound_s`: the plan is within `1 + gap` of the optimum
        (None when no finite gap is proved), one pass's (a pipeline's period: `period_gap`)."""
        if not self.feasible:
            return None
        return relative_gap(self.makespan_s, self.bound_s)

    @property
    def order_by_name(self) -> dict[str, list[str]]:
        """Device name -> the names of its ops, in the order they ran."""
        ops, devs = self.problem.graph.ops, self.problem.cluster.devices
        return {devs[d].name: [ops[i].name for i in seq]
                for d, seq in enumerate(self.simulation.order)}

    @property
    def schedule(self) -> list[ScheduledOp]:
        """Every op with its device and simulated start and end, by start time (ties by
        device, then op, in declaration order)."""
        sim, ops, devs = self.simulation, self.problem.graph.ops, self.problem.cluster.devices
        order = sorted(range(len(ops)), key=lambda i: (sim.start_s[i], sim.placement[i], i))
        return [ScheduledOp(ops[i].name, devs[sim.placement[i]].name if sim.placement[i] >= 0
                            else "", sim.start_s[i], sim.end_s[i]) for i in order]

    @property
    def replicas(self) -> dict[str, list[str]]:
        """A hybrid pipeline's replicated stages: the device of each stage with 2+ replicas
        -> its group's devices, itself first ({} when no stage is replicated)."""
        return replica_names(self.problem, replica_groups(self.problem, self.info))

    @property
    def recompute(self) -> tuple[str, ...]:
        """The devices that run their forward ops again in the backward pass (`pipeilp`)."""
        return tuple(self.info.get("recompute") or ())

    def to_json(self) -> dict[str, Any]:
        """The plan file `planner solve --out` writes: placement, order, start times, and
        a pipeline's `replicas` and `recompute` (`plan.dumps(problem)` alone has neither,
        and a hybrid or recomputing plan read back from it runs as another plan)."""
        return self.plan.to_json(self.problem, replica_groups(self.problem, self.info),
                                 self.recompute)

    def dumps(self) -> str:
        """`to_json` as the text `solve --out` writes, byte for byte."""
        return self.plan.dumps(self.problem, replica_groups(self.problem, self.info),
                               self.recompute)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write `dumps()` to `path`, atomically; `read_plan(problem, path)` reads it back.
        A path that cannot be written is E604 (`UsageError`), as `solve --out`'s is (before:
        E623, "free some space", for a folder that does not exist)."""
        check_outputs({"path": path})
        write_text_atomic(os.fspath(path), self.dumps())


def read_plan(problem: Problem, source: str | os.PathLike[str] | Mapping[str, Any]) -> Result:
    """The plan of a plan file (`Result.write`, `solve --out`), of a `solve --json` or
    `simulate --json` document, or of their parsed JSON (`Result.to_json()`), for
    `problem`, as a `Result`: its replicas and recompute run too, as `simulate
    --placement` runs them. Raises `SpecError` (E500-E515) for a file that holds no plan
    of `problem`."""
    _check_source(source)
    shown, text = "<plan>", None
    data: Any = source
    if isinstance(source, (str, os.PathLike)):
        from ..spec.load import read_source  # lazy: the parser's imports

        shown = os.fspath(source)
        text = read_source(Path(source), shown, kind="plan")
        try:
            data = strict_loads(text)
        except json.JSONDecodeError as err:
            raise SpecError(Diagnostic("E500", f"invalid JSON: {err.msg}",
                                       Span.at_json_error(shown, err))) from None
    body, at = in_envelope(data)
    plan = load_plan(problem, body, shown, text, at)
    groups = load_replicas(problem, body, plan.placement, shown, text, at)
    info = {"replicas": replica_names(problem, groups),
            "recompute": list(load_recompute(problem, body, shown, text, at, groups,
                                             plan.placement))}
    return Result.of(problem, Solution(plan, "feasible",
                                       {k: v for k, v in info.items() if v}))


def _check_source(source: object) -> None:
    """`TypeError` for what a user may take for a plan's file and is none: its JSON text
    (before: an OSError, "File name too long", or E001 "no such file: {...}") and a
    `Result` or `Plan` (before: E501, "a placement file must be a JSON object")."""
    if isinstance(source, str) and source.lstrip().startswith("{") \
            and not os.path.isfile(source):
        raise TypeError("planner.read_plan: `source` is JSON text, not a path: give "
                        "json.loads(text), or the path of its file")
    if isinstance(source, (Solution, Plan)):
        raise TypeError(f"planner.read_plan: `source` must be a path or a plan's JSON "
                        f"object, not a {type(source).__name__}: give "
                        + ("source.to_json()" if isinstance(source, Solution)
                           else "source.to_json(problem)"))
