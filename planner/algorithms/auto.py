"""`auto`: the fast heuristics and baselines, then CP-SAT on the best plan when it can help.

1. `portfolio.rank`: run `msct`, `metf`, `mtopo`, `heft`, `cpop`, `single` and
   `roundrobin` (registry order), skipping any that raises `InfeasibleError`, plus
   `Options.warm_start` when one is given; each plan is simulated under the problem's own
   contention and memory model; the best feasible makespan wins, ties by registry order.
2. When the graph has at most `CPSAT_MAX_OPS` ops, more than one device, and
   `Options.time_limit_s` is at least `CPSAT_MIN_S`, run `cpsat` warm-started from the
   winner with the same time limit (its work budget counts the preparation by the model's
   size, `exact/budget.py`); its plan replaces the winner only when it simulates strictly
   faster (CP-SAT optimises contention `none`; the simulator has the last word).

Nothing here depends on a clock: whether CP-SAT runs and its budget are functions of the
problem and the options, so `auto` returns the same plan on every run.

Threshold (measured with `bench/bench_exact.py` on this 2-core machine, layered DAGs on 4
devices): CP-SAT proves 30-op instances optimal in 0.7-8 s (median 0.9 s), improves the
m-SCT plan by 11% on 100 ops and by 2% on 300 ops within 60 s, with the gap still open.
Beyond about 300 ops the gain no longer pays for the minute, so `auto` stays with the
heuristics (well under a second) there.

`info`: `chosen` (the algorithm whose plan is returned), `candidates` (name -> simulated
makespan, None when infeasible or skipped), `objective_s` (the returned plan's simulated
makespan), `bound_s` and `gap` and the status from `exact.verdict.judge` (the same
judgement `cpsat` makes, so both print the same status for the same plan), `why`, and
`cpsat` (its status, or why it was skipped).
"""

from __future__ import annotations

import dataclasses
import logging
from types import MappingProxyType
from typing import Any

from ..errors import InfeasibleError, PlannerError
from ..model import Problem
from .base import AlgorithmInfo, Interrupted, Options, Solution
from .portfolio import CANDIDATES, rank

__all__ = ["CANDIDATES", "CPSAT_MAX_OPS", "CPSAT_MIN_S", "INFO", "place"]

log = logging.getLogger("planner")

#: graphs up to this many ops get the CP-SAT phase
CPSAT_MAX_OPS = 300
#: CP-SAT runs only when the time limit is at least this (seconds)
CPSAT_MIN_S = 0.5


def place(problem: Problem, options: Options) -> Solution:
    """Best of the heuristics, improved by CP-SAT on small graphs (module docstring)."""
    from ..bounds import lower_bound
    from ..simulate import simulate
    from .exact.verdict import judge

    ranked = rank(problem, options, progress_share=0.3)
    candidates = dict(ranked.candidates)
    errors = list(ranked.errors)
    best = ranked.best
    n, m = len(problem.graph.ops), len(problem.cluster.devices)
    cpsat_note: Any
    if n > CPSAT_MAX_OPS:
        cpsat_note = f"skipped: {n} ops > {CPSAT_MAX_OPS}"
    elif m < 2:
        cpsat_note = "skipped: one device"
    elif options.time_limit_s < CPSAT_MIN_S:
        cpsat_note = f"skipped: a time limit of {options.time_limit_s:g} s < {CPSAT_MIN_S:g} s"
    else:
        cpsat_note = None

    if best is None and cpsat_note is not None:
        raise _all_infeasible(problem, errors)

    claims: dict[str, Any] = {"lower_s": lower_bound(problem).makespan_s,
                              "tolerance": options.gap}
    if cpsat_note is None:
        from .exact import cpsat

        if options.progress:
            options.progress(0.3, "auto: cpsat")
        try:
            sol = cpsat.solve(problem, dataclasses.replace(
                options, warm_start=best[2] if best else None, emit=None), warn=False)
        except InfeasibleError:
            if best is None:
                raise
            sol = None
        except Interrupted as stop:
            raise Interrupted(_relabel(stop.solution, candidates)) from None
        if sol is None:
            cpsat_note = "infeasible"
        else:
            cpsat_note = sol.status
            if sol.status != "fallback" and sol.info.get("reason"):
                cpsat_note = f"{sol.status} ({sol.info['reason']})"  # e.g. the safety cap
            claims.update(solver_optimal=bool(sol.info.get("proved")),
                          objective_s=sol.info.get("objective_s"),
                          solver_bound_s=sol.info.get("solver_bound_s"))
            sim = simulate(problem, sol.plan)
            if sol.status != "fallback" and sim.feasible:
                candidates["cpsat"] = sim.makespan_s
                if best is None or sim.makespan_s < best[1] * (1 - 1e-12):
                    best = ("cpsat", sim.makespan_s, sol.plan.with_algorithm("cpsat"))
            if best is None:
                raise _all_infeasible(problem, errors)
    assert best is not None
    name, makespan, plan = best
    verdict = judge(problem, plan, **claims)
    info = {"candidates": candidates, "chosen": name, "objective_s": makespan,
            "bound_s": verdict.bound_s, "gap": verdict.gap, "why": verdict.why,
            "cpsat": cpsat_note}
    log.info("auto: %s gives %.6g s", name, makespan)
    if options.progress:
        options.progress(1.0, f"auto: {name}")
    return Solution(plan, verdict.status, MappingProxyType(info))


def _relabel(sol: Solution | None, candidates: dict[str, float | None]) -> Solution | None:
    """CP-SAT's interrupted answer (the better of its incumbent and auto's best)."""
    if sol is None:
        return None
    chosen = sol.info.get("warm_start") if "kept" in sol.info else sol.plan.algorithm
    return dataclasses.replace(sol, info=MappingProxyType(
        {**sol.info, "candidates": candidates, "chosen": chosen or "cpsat"}))


def _all_infeasible(problem: Problem, errors: list[PlannerError]) -> InfeasibleError:
    from .infeasible import diagnose

    proofs = diagnose(problem)
    if proofs:
        return InfeasibleError(proofs)
    if errors:
        return InfeasibleError(errors[0].diagnostics)
    from ..errors import Diagnostic

    return InfeasibleError(Diagnostic(
        "E816", "no algorithm found a plan that the simulator accepts", None,
        ("try --algo cpsat with a longer --time-limit",)))


INFO = AlgorithmInfo(
    name="auto",
    place=place,
    summary="best simulated plan of the heuristics and baselines, then CP-SAT on small graphs",
    memory_aware=True,
    exact=False,
    needs_solver=False,
    citation="see msct, metf, mtopo, heft, cpop and cpsat",
)
