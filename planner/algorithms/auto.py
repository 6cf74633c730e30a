"""`auto`: the fast heuristics and baselines, then CP-SAT on the best plan when it can help.

1. Run `msct`, `metf`, `mtopo`, `heft`, `cpop`, `single` and `roundrobin` (registry order),
   skipping any that raises `InfeasibleError`, plus `Options.warm_start` when one is given.
   Each plan is simulated under the problem's own contention and memory model; the best
   feasible makespan wins, ties by registry order.
2. When the graph has at most `CPSAT_MAX_OPS` ops, more than one device, and at least
   `CPSAT_MIN_S` seconds of `Options.time_limit_s` remain, spend the rest on `cpsat`
   warm-started from the winner; its plan replaces the winner only when it simulates
   strictly faster (CP-SAT optimises contention `none`; the simulator has the last word).

Threshold (measured with `bench/bench_exact.py` on this 2-core machine, layered DAGs on 4
devices): CP-SAT proves 30-op instances optimal in 0.7-8 s (median 0.9 s), improves the
m-SCT plan by 11% on 100 ops and by 2% on 300 ops within 60 s, with the gap still open.
Beyond about 300 ops the gain no longer pays for the minute, so `auto` stays with the
heuristics (well under a second) there.

`info`: `chosen` (the algorithm whose plan is returned), `candidates` (name -> simulated
makespan, None when infeasible or skipped), `objective_s` (the returned plan's simulated
makespan), `bound_s` (the best lower bound: `planner.bounds`, or CP-SAT's bound, which
holds under every contention because contention only delays), `gap`, and `cpsat` (its
status, or why it was skipped). Status `optimal` only when CP-SAT proved its optimum and
the problem's contention is `none` (then the model is the simulator's semantics).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from types import MappingProxyType
from typing import Any

from ..errors import InfeasibleError, PlannerError
from ..model import Problem
from ..plan import Plan
from .base import AlgorithmInfo, Options, Solution, Status

log = logging.getLogger("planner")

#: the fast algorithms `auto` tries, in the registry's order
CANDIDATES = ("msct", "metf", "mtopo", "heft", "cpop", "single", "roundrobin")
#: graphs up to this many ops get the CP-SAT phase
CPSAT_MAX_OPS = 300
#: CP-SAT runs only with at least this much of the time limit left (seconds)
CPSAT_MIN_S = 0.5


def place(problem: Problem, options: Options) -> Solution:
    """Best of the heuristics, improved by CP-SAT on small graphs (module docstring)."""
    from ..bounds import lower_bound
    from ..simulate import simulate
    from . import ALGORITHMS, run

    t0 = time.perf_counter()
    quiet = dataclasses.replace(options, progress=None)
    candidates: dict[str, float | None] = {}
    errors: list[PlannerError] = []
    best: tuple[str, float, Plan] | None = None
    tried: list[tuple[str, Plan | None]] = []
    if options.warm_start is not None:
        tried.append(("warm_start", options.warm_start))
    tried.extend((name, None) for name in ALGORITHMS if name in CANDIDATES)
    for k, (name, plan) in enumerate(tried):
        if options.progress:
            options.progress(0.3 * k / len(tried), f"auto: {name}")
        if plan is None:
            try:
                plan = run(name, problem, quiet).plan
            except InfeasibleError as err:
                errors.append(err)
                candidates[name] = None
                continue
            except ImportError as err:  # pragma: no cover - a module missing from an install
                log.debug("auto: %s unavailable: %s", name, err)
                candidates[name] = None
                continue
        sim = simulate(problem, plan)
        if not sim.feasible:
            candidates[name] = None
            continue
        candidates[name] = sim.makespan_s
        if best is None or sim.makespan_s < best[1]:
            best = (name, sim.makespan_s, plan.with_algorithm(plan.algorithm or name))

    n, m = len(problem.graph.ops), len(problem.cluster.devices)
    remaining = options.time_limit_s - (time.perf_counter() - t0)
    cpsat_note: Any
    if n > CPSAT_MAX_OPS:
        cpsat_note = f"skipped: {n} ops > {CPSAT_MAX_OPS}"
    elif m < 2:
        cpsat_note = "skipped: one device"
    elif remaining < CPSAT_MIN_S:
        cpsat_note = f"skipped: {remaining:.2f} s left of the time limit"
    else:
        cpsat_note = None

    if best is None and cpsat_note is not None:
        raise _all_infeasible(problem, errors)

    info: dict[str, Any] = {"candidates": candidates}
    status: Status = "feasible"
    bound = lower_bound(problem).makespan_s
    if cpsat_note is None:
        from .exact import cpsat

        if options.progress:
            options.progress(0.3, f"auto: cpsat for {remaining:.1f} s")
        try:
            sol = cpsat.solve(problem, dataclasses.replace(
                options, time_limit_s=remaining, warm_start=best[2] if best else None,
                emit=None), warn=False)
        except InfeasibleError:
            if best is None:
                raise
            sol = None
        if sol is None:
            cpsat_note = "infeasible"
        else:
            cpsat_note = sol.status
            b = sol.info.get("bound_s")
            if b is not None:
                bound = max(bound, b)
            sim = simulate(problem, sol.plan)
            if sol.status != "fallback" and sim.feasible:
                candidates["cpsat"] = sim.makespan_s
                if best is None or sim.makespan_s < best[1] * (1 - 1e-12):
                    best = ("cpsat", sim.makespan_s, sol.plan.with_algorithm("cpsat"))
            if sol.status == "optimal" and problem.contention == "none" and best is not None:
                status = "optimal"
            if best is None:
                raise _all_infeasible(problem, errors)
    assert best is not None
    name, makespan, plan = best
    info.update(chosen=name, objective_s=makespan, bound_s=min(bound, makespan),
                gap=max(0.0, (makespan - bound) / makespan) if makespan > 0 else 0.0,
                cpsat=cpsat_note)
    log.info("auto: %s gives %.6g s", name, makespan)
    if options.progress:
        options.progress(1.0, f"auto: {name}")
    return Solution(plan, status, MappingProxyType(info))


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
