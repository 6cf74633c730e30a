"""Warm start, fallback and the `Solution` both exact algorithms return.

The warm start is `Options.warm_start` when given, else the best heuristic plan by
simulation (`portfolio.rank`: m-SCT, m-ETF, m-TOPO, HEFT, CPOP, single, round-robin).
It serves three purposes: its placement and order become the MIP start / CP-SAT hints,
its makespan (under the models' own contention-`none` timing) is the upper bound `U`
that tightens the time windows and big-Ms, and it is the plan returned, with status
`fallback`, when the solver is missing, crashes, is killed, or finds nothing. The models
are seeded by the best-ranked plan that satisfies the static model (under `memory
liveness` the best simulated plan may not); with none, they start cold with `U` = the
serial horizon.

Whatever a solver answers, only its placement and the order of its start times are taken;
the plan is re-timed, checked exactly (pins, colocation, links, bytes against caps), and
judged by the simulator against the warm start (`verdict.judge`), so tolerances can never
make the result worse than the warm start or infeasible.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ...bounds import lower_bound
from ...codes import proves_none
from ...errors import (
    Diagnostic,
    InfeasibleError,
    PlannerError,
    SearchLimitError,
    SolverError,
)
from ...model import Problem
from ...plan import Plan
from ..base import Options, Solution
from ..enumeration import HINT as ENUMERATION_HINT
from ..infeasible import after_portfolio, diagnose, memory_figures
from ..portfolio import rank
from .instance import Instance
from .verdict import Verdict, judge

log = logging.getLogger("planner")


@dataclass(frozen=True)
class Warm:
    """The warm start: the plan to fall back to, and its data for the models.

    `placement`/`order`/`start_s` are None when the plan cannot seed the model (`note`
    says why); `placement` is relabelled to the symmetry-breaking representative.
    """

    plan: Plan | None
    source: str
    seed_source: str = ""
    placement: tuple[int, ...] | None = None
    order: tuple[int, ...] | None = None
    start_s: tuple[float, ...] | None = None
    makespan_s: float = math.inf
    error: PlannerError | None = None
    note: str = ""

    @property
    def usable(self) -> bool:
        """Whether the plan seeds the model (MIP start, hints, upper bound)."""
        return self.placement is not None


def warm_start(inst: Instance, options: Options) -> Warm:
    """The warm start of `options`, else the best heuristic plan (module docstring)."""
    if options.warm_start is not None:
        return _prepare(inst, options.warm_start, options.warm_start.algorithm or "given")
    ranked = rank(inst.problem, dataclasses.replace(options, warm_start=None, progress=None),
                  limit_s=options.time_limit_s or None, until_found=True)  # as auto's
    error = ranked.errors[0] if ranked.errors else None
    if ranked.best is None:
        return Warm(None, "heuristics", error=error, note="no heuristic found a plan")
    source, _, plan = ranked.best
    for name, _, seed in ranked.plans:
        warm = _prepare(inst, seed, name)
        if warm.usable:
            return dataclasses.replace(warm, plan=plan, source=source, error=error)
    return Warm(plan, source, error=error,
                note="no heuristic plan satisfies the static memory model")


def _prepare(inst: Instance, plan: Plan, source: str) -> Warm:
    if len(plan.placement) != inst.n or not inst.respects(plan.placement):
        return Warm(plan, source, note=f"the {source} plan breaks the static memory model, a "
                                       "pin, a colocation group or a link")
    order = plan_order(inst, plan)
    placement = inst.canonical(plan.placement)
    start, makespan = inst.timing(placement, order)
    return Warm(plan, source, source, tuple(placement), tuple(order), tuple(start), makespan)


def plan_order(inst: Instance, plan: Plan) -> list[int]:
    """A global topological order that keeps the plan's per-device order where it can.

    Ops are taken by the plan's start times (else their position on their device), ties by
    topological rank; when the plan's order contradicts precedence it is ignored.
    """
    n = inst.n
    pos = [0.0] * n
    chains: list[tuple[int, int]] = []
    if plan.order is not None:
        for seq in plan.order:
            for p, i in enumerate(seq):
                if 0 <= i < n:
                    pos[i] = float(p)
            chains.extend((a, b) for a, b in itertools.pairwise(seq) if 0 <= a < n and 0 <= b < n)
    key: Sequence[float] = plan.start_s if plan.start_s is not None and len(
        plan.start_s) == n else pos
    order = inst.priority_order(key, chains)
    return order if len(order) == n else inst.priority_order(key)


def lower_bound_s(inst: Instance) -> float:
    """The best lower bound we know: `planner.bounds` (valid under every contention)."""
    return max(inst.trivial_bound, lower_bound(inst.problem).makespan_s)


class Clock:
    """Wall time since the algorithm started, against `Options.time_limit_s`."""

    def __init__(self, options: Options) -> None:
        self.t0 = time.perf_counter()
        self.limit = options.time_limit_s

    def elapsed(self) -> float:
        """Seconds since start."""
        return time.perf_counter() - self.t0

    def remaining(self, floor: float = 0.05) -> float:
        """Seconds left for the solver (at least `floor`: the warm start answers anyway)."""
        return max(floor, self.limit - self.elapsed())


def empty_solution(problem: Problem, algorithm: str) -> Solution | None:
    """The trivially optimal answer when the graph has no ops, else None."""
    if problem.graph.ops:
        return None
    plan = Plan((), tuple(() for _ in problem.cluster.devices), (), algorithm)
    return Solution(plan, "optimal", MappingProxyType({
        "objective_s": 0.0, "bound_s": 0.0, "gap": 0.0, "solver": algorithm,
        "build_s": 0.0, "solve_s": 0.0}))


def settled(inst: Instance, warm: Warm, lower_s: float, *, algorithm: str, solver: str,
            build_s: float, extra: dict[str, Any] | None = None) -> Solution | None:
    """The warm start as `optimal` when it already simulates within `OPTIMAL_GAP` of the
    lower bound `lower_s` (`verdict.judge`'s one rule), else None: no solver can do better
    there, and one that takes no MIP start (GLPK) spent its whole time limit finding it.
    Not when no plan satisfies the static model (`Warm.usable`): the solver's answer then
    says so (under `memory liveness`, the static model's infeasibility is no proof)."""
    if warm.plan is None or not warm.usable:
        return None
    verdict = judge(inst.problem, warm.plan, lower_s=lower_s)
    if not verdict.feasible or verdict.status != "optimal":
        return None
    info: dict[str, Any] = {
        "solver": solver, "build_s": build_s, "solve_s": 0.0, "warm_start": warm.source,
        "warm_start_s": _num(warm.makespan_s), "solver_status": "skipped",
        "solver_bound_s": None, "proved": False, **(extra or {}),
        "objective_s": _num(warm.makespan_s) if warm.seed_source == warm.source else None,
        "bound_s": verdict.bound_s, "gap": verdict.gap,
        "why": f"{verdict.why}: the {warm.source} warm start; {solver} was not run"}
    return Solution(warm.plan.with_algorithm(algorithm), "optimal", MappingProxyType(info))


def make_plan(inst: Instance, placement: Sequence[int], order: Sequence[int],
              start: Sequence[float], algorithm: str) -> Plan:
    """A plan whose per-device order is the restriction of the global `order`.

    Built directly rather than by sorting start times, so zero-duration ops tied at one
    instant keep their precedence order (a sort by index could deadlock them).
    """
    seqs: list[list[int]] = [[] for _ in range(inst.m)]
    for i in order:
        seqs[placement[i]].append(i)
    return Plan(tuple(placement), tuple(map(tuple, seqs)), tuple(float(t) for t in start),
                algorithm)


def conclude(
    inst: Instance,
    warm: Warm,
    *,
    algorithm: str,
    solver: str,
    outcome: str,
    message: str,
    placement: Sequence[int] | None,
    key: Sequence[float] | None,
    solver_bound_s: float | None,
    lower_s: float,
    build_s: float,
    solve_s: float,
    proof_exact: bool = True,
    tolerance: float = 0.0,
    extra: dict[str, Any] | None = None,
    warn: bool = True,
) -> Solution:
    """Turn a solver's answer into the `Solution` (see the module docstring).

    `outcome` is the back-end's status (`optimal`, `feasible`, `infeasible`, `nosolution`,
    `error`, `skipped`); `placement`/`key` its answer (op -> device, start times as an
    order key); `proof_exact` false when the solved model only approximates the seconds
    (rounded ticks), so its optimality proof is not one; `tolerance`: `Options.gap`,
    within which a plan counts as optimal. Status, bound and gap come from
    `verdict.judge`. A fallback logs a warning on the `planner` logger unless `warn` is
    false.
    """
    problem = inst.problem
    info: dict[str, Any] = {"solver": solver, "build_s": build_s, "solve_s": solve_s,
                            "warm_start": warm.source, "warm_start_s": _num(warm.makespan_s),
                            "solver_status": outcome, "solver_bound_s": solver_bound_s}
    info.update(extra or {})

    plan: Plan | None = None
    makespan = model_s = math.inf
    if placement is not None and key is not None and inst.respects(placement):
        order = inst.priority_order(key)
        start, makespan = inst.timing(placement, order)
        plan = make_plan(inst, placement, order, start, algorithm)
        # the solver's own schedule ends here: its claim. The plan re-timed from its order
        # may end later (CP-SAT lets a zero-time op sit inside another op's interval: 7.5
        # ms solved, 9.0 re-timed), and that re-timed makespan, taken as the objective,
        # proved itself: a plan called optimal at 8 ms where 7.5 ms plans exist
        model_s = max((key[i] + inst.proc[i][placement[i]] for i in range(inst.n)),
                      default=0.0)
    elif placement is not None:
        # the solver's answer, wrong by its own model: a failure (E812), not a time limit
        message = f"{message}; its answer broke a constraint when checked exactly"
        outcome = "error"

    if outcome == "infeasible" and not warm.usable and warm.plan is None:
        raise _infeasible(inst, warm)

    claims: dict[str, Any] = {"solver_optimal": outcome == "optimal" and proof_exact,
                              "objective_s": model_s if plan is not None else None,
                              "solver_bound_s": solver_bound_s, "lower_s": lower_s,
                              "tolerance": tolerance}
    info["proved"] = claims["solver_optimal"]
    if plan is not None and outcome in ("optimal", "feasible"):
        verdict = judge(problem, plan, **claims)
        if verdict.feasible:
            if outcome == "feasible" and verdict.status == "feasible" and message:
                # a limit stopped the solver: say which, or a user cannot tell it from a proof
                said = message if message.startswith("CP-SAT") else f"{solver} stopped: {message}"
                verdict = dataclasses.replace(verdict, why=f"{verdict.why}; {said}")
            return _judged(problem, warm, plan, verdict, claims, info, algorithm, model_s)
        # the model and the judge disagree: more time gives the same plan (E812, exit 4)
        outcome, message = "error", f"{message}; the simulator rejected its plan"
    return _fallback(inst, warm, info, algorithm=algorithm, solver=solver, outcome=outcome,
                     message=message, solver_bound_s=solver_bound_s, lower_s=lower_s,
                     warn=warn)


def _judged(problem: Problem, warm: Warm, plan: Plan, verdict: Verdict,
            claims: dict[str, Any], info: dict[str, Any], algorithm: str,
            makespan: float) -> Solution:
    """The solver's plan, feasible in the simulator, against the warm start."""
    if warm.plan is not None:
        # the simulator, not the model's timing, decides against the warm start
        other = judge(problem, warm.plan, **claims)
        if other.feasible and other.makespan_s < verdict.makespan_s * (1 - 1e-12):
            plan, verdict = warm.plan.with_algorithm(algorithm), other
            info["kept"] = f"the {warm.source} warm start simulates faster"
    info.update(objective_s=makespan, bound_s=verdict.bound_s, gap=verdict.gap,
                why=verdict.why)
    return Solution(plan, verdict.status, MappingProxyType(info))


def _fallback(inst: Instance, warm: Warm, info: dict[str, Any], *, algorithm: str,
              solver: str, outcome: str, message: str, solver_bound_s: float | None,
              lower_s: float, warn: bool) -> Solution:
    """No usable answer: the warm start, with the reason (or the error when none)."""
    problem = inst.problem
    if outcome == "infeasible":
        reason = (f"{solver} proved the static memory model infeasible; keeping the "
                  f"{warm.source} plan" if problem.memory_model == "liveness" else
                  f"{solver} reported the model infeasible although the {warm.source} "
                  "plan satisfies it")
    elif outcome in ("error", "skipped"):
        reason = message
    else:
        reason = message or f"{solver} found no solution"  # the back-ends word it
    if warm.plan is None:
        raise _no_plan(problem, warm, outcome, reason)
    if warn:
        log.warning("%s: falling back to the %s plan: %s", algorithm, warm.source, reason)
    verdict = judge(problem, warm.plan, solver_bound_s=solver_bound_s, lower_s=lower_s)
    if info.get("reason"):
        reason = f"{reason}; {info['reason']}"
    info.update(reason=reason, objective_s=_num(warm.makespan_s)
                if warm.seed_source == warm.source else None,
                bound_s=verdict.bound_s, gap=verdict.gap)
    return Solution(warm.plan, "fallback", MappingProxyType(info))


def _no_plan(problem: Problem, warm: Warm, outcome: str, reason: str) -> PlannerError:
    """The error where neither the heuristics nor the solver left a plan: the heuristics'
    proofs when they hold one (exit 3); else, their errors then E811 when the solver ran
    out of time or found nothing (exit 6, `SearchLimitError`: no proof, a longer limit may
    find one), or E812 when it failed (exit 4), its answer included when the exact check
    or the simulator rejected it."""
    error = warm.error
    if isinstance(error, InfeasibleError) and any(proves_none(d.code)
                                                  for d in error.diagnostics):
        return error
    if isinstance(error, InfeasibleError) and outcome != "error":
        return SearchLimitError((*(after_portfolio(
            problem, d, advice="a longer --time-limit") for d in error.diagnostics),
            Diagnostic("E811", f"the exact solver found no plan either: {reason}", None,
                       ("neither is a proof that no plan exists",))))
    return SolverError(Diagnostic("E812", f"no plan: {reason}", None, tuple(
        d.message for d in (error.diagnostics if error else ())) + (
        (warm.note,) if warm.note else ())))


def _infeasible(inst: Instance, warm: Warm) -> InfeasibleError:
    if isinstance(warm.error, InfeasibleError) and warm.error.diagnostics and all(
            d.code != "E704" for d in warm.error.diagnostics):
        return warm.error  # the heuristic's proofs are proofs
    proofs = diagnose(inst.problem)
    if proofs:
        return InfeasibleError(proofs)
    if inst.problem.memory_model == "liveness":
        # the model counts static memory, stricter than liveness peaks: no proof here
        return InfeasibleError(Diagnostic(
            "E818", "no plan found: the exact model, which counts static memory (stricter "
                    "than `memory liveness`), is infeasible, and no heuristic found a plan "
                    "whose liveness peaks fit; one may still exist", None,
            (*memory_figures(inst.problem),
             ENUMERATION_HINT,
             "add memory or devices, or relax pins and colocation")))
    return InfeasibleError(Diagnostic(
        "E813", "no placement satisfies the memory caps, pins, colocation groups and links "
                "together: the exact model is infeasible", None,
        (*memory_figures(inst.problem), "add memory or devices, or relax pins and colocation")))


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None
