"""`ilp`: placement and scheduling as a mixed-integer linear program, built with Pyomo.

The model, its rows and its units are `ilp_model.py`'s; this module runs it. The warm start
(`common.warm_start`: a given plan, else the best heuristic plan by simulation) bounds `C`
and the windows and seeds the solver; the build and the solve share
`Options.time_limit_s`; `common.conclude` re-times and checks the solver's answer, judges
it against the warm start, and returns the warm start when the solver has nothing better.
A warm start that already meets the lower bound (`common.settled`) is returned as
`optimal` without a solver: GLPK, which takes no MIP start, ran its whole limit there.

Back-ends (`Options.solver`, `backends.py`, `solvers/profiles.toml`): `highs` (embedded,
`appsi_highs`, takes the MIP start), `cbc` (binary, takes the MIP start), `glpk` (binary,
no MIP start: the warm start still bounds `C` and the windows), and any other Pyomo solver
by name (`scip`, `gurobi`, `cplex`). `Options.emit` writes the model as `.lp` or `.mps`.
"""

from __future__ import annotations

import logging
import time
from types import MappingProxyType

from ...model import Problem
from .. import portfolio
from ..base import Interrupted, Options, Solution
from . import backends, solver_names
from .common import Clock, Warm, conclude, empty_solution, lower_bound_s, settled, warm_start
from .ilp_model import IlpModel, OutOfTime
from .instance import Instance

log = logging.getLogger("planner")


def place(problem: Problem, options: Options) -> Solution:
    """Solve `problem` with the ILP and `options.solver`; see the module docstring.

    The model's build counts inside `Options.time_limit_s` (measured: the MIP solvers'
    limits are wall-clock anyway, so a run is reproducible only when the solver ends by
    itself before its limit); Pyomo's import does not (`warm_up`). Ctrl-C kills a
    child-process solver and raises `Interrupted` with the warm start.
    """
    trivial = empty_solution(problem, "ilp")
    if trivial is not None:
        return trivial
    warm_up(problem, options)
    clock = Clock(options)
    inst = Instance(problem)
    warm = warm_start(inst, options)  # `portfolio.rank` raises Interrupted itself
    try:
        return _solve(inst, warm, clock, options)
    except KeyboardInterrupt:
        if warm.plan is None:
            raise Interrupted(None) from None
        raise Interrupted(Solution(warm.plan, "interrupted", MappingProxyType(
            {"solver": options.solver, "warm_start": warm.source,
             "reason": "interrupted before the solver answered"}))) from None


def warm_up(problem: Problem, options: Options) -> None:
    """Import the heuristics of the warm start (`portfolio.warm_up`), Pyomo and the
    solver's module (`backends.warm_up`) before the clock starts."""
    if problem.graph.ops:
        if options.warm_start is None:
            portfolio.warm_up()
        backends.warm_up(options.solver)


def _no_time(inst: Instance, warm: Warm, options: Options, lower: float, build_s: float,
             why: str, rows: int, solve_s: float = 0.0) -> Solution:
    """The warm start, the solver skipped: the build, or handing the model to the solver
    (`solve_s`, as in a solve), ran past the time limit's grace."""
    return conclude(
        inst, warm, algorithm="ilp", solver=options.solver, outcome="skipped",
        message=f"no solver time left in --time-limit {options.time_limit_s:g} s: {why}",
        placement=None, key=None, solver_bound_s=None, lower_s=lower, build_s=build_s,
        solve_s=solve_s, tolerance=options.gap, extra={"rows": rows})


def _without_solver(inst: Instance, warm: Warm, options: Options, lower: float,
             build_s: float = 0.0, rows: int | None = None) -> Solution | None:
    """The answer when no solver is to run, else None: under `--time-limit 0` the warm
    start, skipped (`fallback`, as `cpsat` does); else the warm start as `optimal` when it
    meets the lower bound (`common.settled`) and the solver named could run (a wrong
    `--solver` still says so)."""
    if options.time_limit_s <= 0:
        return _no_time(inst, warm, options, lower, build_s, "a zero limit runs no solver",
                        rows or 0)
    if solver_names.unusable(options.solver) is not None:
        return None
    done = settled(inst, warm, lower, algorithm="ilp", solver=options.solver,
                   build_s=build_s, extra=None if rows is None else {"rows": rows})
    if done is not None and options.progress:
        options.progress(1.0, "the warm start meets the lower bound: no solver needed")
    return done


def _solve(inst: Instance, warm: Warm, clock: Clock, options: Options) -> Solution:
    progress = options.progress
    lower = lower_bound_s(inst)
    done = None if options.emit else _without_solver(inst, warm, options, lower)
    if done is not None:  # a zero limit, or a warm start at the bound
        return done
    upper = warm.makespan_s if warm.usable else inst.horizon
    if progress:
        progress(0.05, "building the ILP")
    t_build = time.perf_counter()
    ilp = IlpModel(inst, upper, lower)
    # the limit bounds the build as well, past the watchdog's grace: a build that ends a
    # little late (a busy machine) still gets the solver (`--emit` asks for the whole model)
    grace = backends.overrun_grace_s(clock.limit)
    deadline = clock.t0 + clock.limit + grace
    try:
        ilp.build(None if options.emit else deadline)
    except OutOfTime as late:
        return _no_time(inst, warm, options, lower, time.perf_counter() - t_build,
                        f"the model was still being built ({late.rows:,} rows) {grace:.3g} s "
                        "after it ran out", late.rows)
    if warm.usable:
        ilp.seed(warm)
    build_s = time.perf_counter() - t_build
    if options.emit:
        ilp.emit(options.emit)
        done = _without_solver(inst, warm, options, lower, build_s, ilp.n_rows)
        if done is not None:
            return done
    log.info("ilp: %d ops, %d devices: %d rows built in %.2f s", inst.n, inst.m, ilp.n_rows,
             build_s)
    if progress:
        progress(0.1, f"solving with {options.solver}")
    t_solve = time.perf_counter()
    try:  # handing the rows to HiGHS takes about as long as building them: the same deadline
        outcome = solver_names.solve_pyomo(
            ilp.model, options.solver, time_limit_s=clock.remaining(), gap=options.gap,
            threads=backends.threads_for(options.solver), warm_start=warm.usable,
            seed=options.seed, load_by=deadline)
    except backends.LoadOverrun as late:
        return _no_time(inst, warm, options, lower, build_s,
                        f"the model was still being handed to {options.solver} ({late.rows:,} "
                        f"of {late.total:,} rows) {grace:.3g} s after it ran out", ilp.n_rows,
                        time.perf_counter() - t_solve)
    solve_s = time.perf_counter() - t_solve
    if progress:
        progress(1.0, f"{options.solver}: {outcome.status}")
    ans = ilp.answer() if outcome.loaded else None
    if outcome.loaded and ans is None:  # a claim without a whole, integral solution
        outcome = backends.Outcome("nosolution", (
            f"{options.solver} said {outcome.message}, but its solution leaves variables "
            "without a value or fractional; it was not used"))
    bound = outcome.bound * ilp.time_unit if outcome.bound is not None else None
    return conclude(
        inst, warm, algorithm="ilp", solver=options.solver, outcome=outcome.status,
        message=outcome.message, placement=ans[0] if ans else None,
        key=ans[1] if ans else None, solver_bound_s=bound, lower_s=lower,
        build_s=build_s, solve_s=solve_s, tolerance=options.gap,
        extra={"rows": ilp.n_rows})
