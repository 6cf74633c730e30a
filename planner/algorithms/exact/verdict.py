"""The one judgement of an exact solver's plan: its status, best valid bound and gap.

`cpsat`, `ilp` and `auto` (for whatever plan it returns after its CP-SAT phase) all call
`judge`, so the same plan with the same solver answer gets the same status everywhere.

The exact models schedule under contention `none` and static memory. The plan is
simulated under the problem's own model, and:

- The best valid bound is `planner.bounds.lower_bound`, raised to the solver's proven
  bound when the solved model is a relaxation of the problem's. Contention `none` relaxes
  `link` and `device` (contention only delays, so no plan simulates faster than its
  contention-free timing), and static memory is the problem's own model under `static`.
  Under `memory liveness` the static model is a *restriction* (static accounting charges
  at least the liveness peak), so its optimum can exceed the liveness optimum and the
  solver's bound is not valid there.
- `optimal` when the gap to the best valid bound is at most `OPTIMAL_GAP` (1e-6), the
  one rule for every plan: a plan called optimal is within (1 + 1e-6) of the bound printed
  beside it. A solver that proved its model optimal, where that model is the simulator's
  (contention `none`, memory `static`) and the plan simulates at no more than its
  objective, proves the bound objective x (1 - `--gap`) when it reports no better one:
  CP-SAT, HiGHS, CBC and GLPK measure their gap against the incumbent, (O - B) / O, so
  stopping within it proves B >= O (1 - gap) (O / (1 + gap) printed a bound of 6.087 ms
  over 5 jobs whose optimum is 6 ms, at `--gap 0.15`). A plan within `--gap` but not within 1e-6
  is `feasible`, and its `why` says the solver stopped at `--gap`.
- The gap is `relative_gap(simulated makespan, best valid bound)`.

`--gap` (default 1e-6) is where the MIP solvers and CP-SAT may stop; the printed gap shows
what remains (0 when the bound meets the makespan).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...bounds import OPTIMAL_GAP, lower_bound, relative_gap
from ...model import Problem
from ...plan import Plan
from ...simulate import simulate
from ..base import Status

#: relative tolerance when comparing a simulated makespan with an objective or a bound
_TOL = 1e-9


@dataclass(frozen=True, slots=True)
class Verdict:
    """A judged plan: `feasible` is the simulator's; the rest is None when it is false."""

    feasible: bool
    status: Status = "feasible"
    makespan_s: float = 0.0
    bound_s: float = 0.0
    gap: float | None = None
    why: str = ""


def exact_model(problem: Problem) -> bool:
    """Whether the exact models are the simulator's own model for `problem`."""
    return problem.contention == "none" and problem.memory_model == "static"


def judge(problem: Problem, plan: Plan, *, solver_optimal: bool = False,
          objective_s: float | None = None, solver_bound_s: float | None = None,
          lower_s: float | None = None, tolerance: float = 0.0) -> Verdict:
    """Simulate `plan` and state what is proved about it (see the module docstring).

    `solver_optimal`/`objective_s`/`solver_bound_s`: what the solver claims about its
    model (its optimum proved, its objective in seconds, its bound in seconds); `lower_s`:
    `lower_bound(problem).makespan_s` when the caller has it; `tolerance`: the relative
    gap within which a plan counts as optimal (`Options.gap`).
    """
    sim = simulate(problem, plan)
    if not sim.feasible:
        return Verdict(False)
    makespan = sim.makespan_s
    bound = lower_s if lower_s is not None else lower_bound(problem).makespan_s
    if solver_bound_s is not None and problem.memory_model == "static":
        bound = max(bound, solver_bound_s)
    proved = solver_optimal and exact_model(problem) and objective_s is not None \
        and makespan <= objective_s * (1 + _TOL)
    if proved and objective_s is not None:  # its optimum is within the tolerance
        bound = max(bound, objective_s * (1 - tolerance))
    bound = min(bound, makespan)
    gap = relative_gap(makespan, bound)
    status: Status = "feasible"
    if gap is not None and gap <= OPTIMAL_GAP:
        status, why = "optimal", (
            "the solver proved its model optimal, and that model is the simulator's "
            "(contention none, memory static)" if proved else
            "the simulated makespan meets a valid lower bound" if gap == 0 else
            "the simulated makespan is within 1e-6 of a valid lower bound")
    elif proved or (gap is not None and gap <= tolerance):  # the gap left: up to g / (1 - g)
        why = ("the solver stopped within --gap, its own measure: (objective - bound) / "
               "objective, against the incumbent; `optimal` is kept for a gap of at most 1e-6")
    elif solver_optimal and not exact_model(problem):
        why = (f"the solver proved optimal a model with contention none and static memory; "
               f"this plan runs under contention {problem.contention}, memory "
               f"{problem.memory_model}")
    elif solver_optimal:
        why = "the plan simulates slower than the solver's proved objective"
    else:
        why = "no proof of optimality"
    return Verdict(True, status, makespan, bound, gap, why)


def plan_bound(bound_s: float, info: Mapping[str, Any]) -> float:
    """The one lower bound a plan is shown with, everywhere (terminal, JSON, HTML, compare
    rows, the API): planner's `bound_s`, raised to the bound its algorithm proved valid for
    the problem's own model (`info["bound_s"]`, set by `judge`), when there is one."""
    proven = info.get("bound_s")
    if isinstance(proven, (int, float)) and not isinstance(proven, bool) \
            and math.isfinite(proven):
        return max(bound_s, float(proven))
    return bound_s


def pipeline_standing(status: Status, period_gap: float | None) -> Status:
    """A pipeline plan's status as shown, whatever algorithm made it, from its period's gap
    to the pipeline bound (`PipelineBound.gap`): `optimal` for a `feasible` or `fallback`
    plan that fits and meets it within `OPTIMAL_GAP` (before: pipeilp's alone, where
    pipedp, hybrid, auto and search said `feasible` of the same plan at the same bound);
    never a downgrade (pipeilp's `optimal` may rest on its solver's proof)."""
    if status in ("feasible", "fallback") and period_gap is not None \
            and period_gap <= OPTIMAL_GAP:
        return "optimal"
    return status


def standing(status: Status, gap: float | None) -> Status:
    """A plan's status as shown, whatever algorithm made it: `optimal` for a `feasible` or
    `fallback` plan within `OPTIMAL_GAP` of its bound (the fallback's `reason` still says
    what the algorithm could not do: `cpsat` and `auto` show one plan alike), `feasible`
    for an `optimal` one that is not (a gap from a bound other than the one `judge` saw),
    else the algorithm's own (`fallback`, `interrupted`, ...)."""
    within = gap is not None and gap <= OPTIMAL_GAP
    if status in ("feasible", "optimal"):
        return "optimal" if within else "feasible"
    return "optimal" if status == "fallback" and within else status
