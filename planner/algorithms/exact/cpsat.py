"""`cpsat`: the ILP's problem with OR-Tools CP-SAT, hinted with the warm start.

The model, its integer ticks and its reproducible search are `cpsat_model.py`'s; this
module runs it: the warm start (`common.warm_start`: a given plan, else the best heuristic
plan by simulation), a work budget (`budget.py`) fitted to what is left of `--time-limit`,
one search, and `common.conclude`, which re-times the answer and judges it against the warm
start. Ctrl-C returns the better of CP-SAT's incumbent and the warm start.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from types import MappingProxyType
from typing import Any

from ...model import Problem
from .. import portfolio
from ..base import Interrupted, Options, Solution
from . import backends
from .budget import budget
from .common import Warm, conclude, empty_solution, lower_bound_s, warm_start
from .cpsat_model import CpsatModel
from .instance import Instance


def place(problem: Problem, options: Options) -> Solution:
    """Solve `problem` exactly with CP-SAT, warm-started; see the module docstring.

    `--time-limit` bounds the whole run, heuristics and model build included
    (`solve(hard_limit=True)`), OR-Tools' import not (`warm_up`)."""
    warm_up(problem, options)
    return solve(problem, options, hard_limit=True)


def warm_up(problem: Problem, options: Options) -> None:
    """Import the heuristics of the warm start (`portfolio.warm_up`) and OR-Tools before
    any clock starts (0.4 s idle, twice that on a loaded machine): the model's build
    imported it inside the time limit, whose wall clock then cut the search sooner."""
    if options.warm_start is None:
        portfolio.warm_up()
    with contextlib.suppress(ImportError):  # the build reports a missing OR-Tools itself
        # lazy: start-up (OR-Tools is slow to import; only cpsat needs it)
        import ortools.sat.python.cp_model  # noqa: F401


#: a hard time limit T ends the search by T * (1 + OVERSHOOT_FRACTION) + OVERSHOOT_S
#: since `solve` began, less FINISH_S for what follows the search (reading the answer,
#: simulating and judging the plan): the overshoot lets a search on a machine with a core
#: free reach its work limit (and so its reproducible plan) before the clock stops it
OVERSHOOT_FRACTION = 0.1
OVERSHOOT_S = 0.5
FINISH_S = 0.2


def solve(problem: Problem, options: Options, *, warn: bool = True,
          hard_limit: bool = False, deadline: float | None = None) -> Solution:
    """`place`, with the fallback warning optional (`auto` reports its own outcome).

    The search runs to a work limit derived from `Options.time_limit_s` and the model's
    size (`budget.py`), so the same problem, options and seed give the same plan on any
    load; Ctrl-C raises `Interrupted` with the better of CP-SAT's incumbent and the warm
    start. `hard_limit`: the wall clock since this call also stops the search at the time
    limit (with a small overshoot: `OVERSHOOT_FRACTION`, `OVERSHOOT_S`), and the model is
    not built when the heuristics have used the limit up; a plan cut short that way is
    marked in `info["reason"]`. Without it only the safety cap of `budget.py` applies,
    and `deadline` (a `time.monotonic` instant: `auto`'s own limit) when given.
    """
    t0 = time.perf_counter()
    trivial = empty_solution(problem, "cpsat")
    if trivial is not None:
        return trivial
    inst = Instance(problem)
    warm = warm_start(inst, options)  # `portfolio.rank` raises Interrupted itself
    lower = lower_bound_s(inst)
    bud = budget(inst, options.time_limit_s)
    extra: dict[str, Any] = {"work_limit": bud.work, "prep_estimate_s": bud.prep_s}
    common: dict[str, Any] = {"algorithm": "cpsat", "solver": "cpsat", "lower_s": lower,
                              "tolerance": options.gap, "warn": warn}
    try:
        # the build cannot be cut: it starts only when the whole preparation estimate
        # (heuristics and build, `budget.py`) still fits in what is left of the limit
        late = hard_limit and (time.perf_counter() - t0 + bud.prep_s > options.time_limit_s)
        if (not bud.enough or late) and not options.emit:
            why = (f"the heuristics took {time.perf_counter() - t0:.3g} s of it, and the "
                   f"model needs about {bud.prep_s:.3g} s more to build" if
                   bud.enough else f"the estimated preparation ({bud.prep_s:.3g} s for a "
                   "model of this size) uses it up")
            # a zero limit as `ilp` and `pipeilp` say it (docs/limits.md), not as if a
            # little more time would have run the search
            message = ("no solver time left in --time-limit 0 s: a zero limit runs no solver"
                       if bud.limit_s == 0 else
                       f"no search time left in --time-limit {bud.limit_s:g} s: {why}")
            return conclude(inst, warm, outcome="skipped", message=message,
                placement=None, key=None, solver_bound_s=None, build_s=0.0, solve_s=0.0,
                extra=extra, **common)
        t_build = time.perf_counter()
        cp = CpsatModel(inst, warm, lower, options.gap)
        cp.build(lower)
        build_s = time.perf_counter() - t_build
        if options.emit:
            cp.emit(options.emit)
        if options.progress:
            options.progress(0.05, "solving with CP-SAT")
        if hard_limit:
            left = (options.time_limit_s * (1 + OVERSHOOT_FRACTION) + OVERSHOOT_S - FINISH_S
                    - (time.perf_counter() - t0))
            bud = dataclasses.replace(bud, wall_cap_s=max(0.01, min(bud.wall_cap_s, left)))
        if deadline is not None:
            left = deadline - time.monotonic() - FINISH_S
            bud = dataclasses.replace(bud, wall_cap_s=max(0.01, min(bud.wall_cap_s, left)))
        t_solve = time.perf_counter()
        ans = cp.solve(bud, options.gap, backends.threads_for("cpsat"), options.seed,
                       options.progress)
        solve_s = time.perf_counter() - t_solve
    except KeyboardInterrupt:
        raise Interrupted(_interrupted(warm, extra)) from None
    if options.progress:
        options.progress(1.0, f"CP-SAT: {ans.outcome}")
    extra.update(tick_s=cp.tick, work_done=ans.work_done)
    if ans.capped:
        extra["reason"] = (f"the wall-clock safety cap ({bud.wall_cap_s:.3g} s of search) "
                           "ended the search before its work limit: another run may return "
                           "another plan")
    sol = conclude(
        inst, warm, outcome=ans.outcome, message=ans.message, placement=ans.placement,
        key=ans.start_s, solver_bound_s=ans.bound_s, build_s=build_s, solve_s=solve_s,
        proof_exact=cp.exact, extra=extra, **common)
    if ans.interrupted:
        raise Interrupted(dataclasses.replace(sol, status="interrupted"))
    return sol


def _interrupted(warm: Warm, info: dict[str, Any]) -> Solution | None:
    """The warm start as the interrupted answer, when there is one."""
    if warm.plan is None:
        return None
    return Solution(warm.plan, "interrupted", MappingProxyType(
        {**info, "reason": "interrupted before the search", "warm_start": warm.source}))
