"""Helpers of the algorithm tests: fixture specs, the algorithm list, a simulator check."""

from __future__ import annotations

import math
from pathlib import Path

import planner
from planner.algorithms import constructive
from planner.bounds import lower_bound
from planner.model import Problem
from planner.plan import Plan
from planner.simulate import SimResult, simulate

SPECS = Path(__file__).resolve().parent / "specs"
DATASETS = Path(__file__).resolve().parents[2] / "../shared/datasets"

#: the one-pass algorithms, read from the registry: `auto`'s constructive candidates and
#: `random` (the exact solvers, `auto` and `search` are tested elsewhere)
HEURISTICS = (*constructive(), "random")
#: and `expert`, which needs a given placement
ALL = (*HEURISTICS, "expert")


def load_spec(name: str) -> Problem:
    """The only plan of `specs/NAME.plan`."""
    return planner.load(SPECS / f"{name}.plan").plan()


def check_plan(problem: Problem, plan: Plan) -> SimResult:
    """Simulate `plan`: it must be feasible, complete, and no faster than the lower bound."""
    result = simulate(problem, plan)
    assert result.feasible, [v.message for v in result.violations]
    assert len(plan.placement) == len(problem.graph.ops)
    assert plan.order is not None
    assert sorted(i for seq in plan.order for i in seq) == list(range(len(problem.graph.ops)))
    bound = lower_bound(problem).makespan_s
    assert math.isfinite(result.makespan_s)
    assert result.makespan_s >= bound * (1 - 1e-9) - 1e-12
    return result
