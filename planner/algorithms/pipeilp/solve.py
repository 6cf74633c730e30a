"""The algorithm: warm starts, the model built, seeded and solved within its budget, the
answer checked exactly and judged."""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ...cost import INF
from ...errors import InfeasibleError, SearchLimitError
from ...model import Pipeline, Problem
from ...pipeline.bound import pipeline_bound
from ...pipeline.schedule import run_planned
from ...pipeline.split import runs, runs_as, split_of
from ...pipeline.splitdp import MAX_CELLS
from .. import pipeblocks, pipecheck, pipedp, pipehybrid
from ..base import Interrupted, Options, Solution
from ..exact import backends, solver_names
from ..exact.budget import WALL_CAP_EXTRA_S, WALL_CAP_FACTOR
from ..exact.common import Clock, empty_solution
from ..exact.ilp_model import OutOfTime
from ..pipehints import PlanTerms
from . import contiguous
from .check import evaluate
from .data import _Data, _data
from .model import _emit, _Model
from .orders import _Orders, _orders, _relabel, _relaxed
from .verdict import _judge, _none_found, _solution
from .warm import (
    WarmSearch,
    _as_warm,
    _placement,
    _Warm,
    _warm_starts,
    recomputing_fallback,
    recomputing_split,
    why_not_run,
)

log = logging.getLogger("planner")

#: HiGHS's node budget: this many rows times nodes per second of `--time-limit` (on a
#: 2-core machine, the fork-join spec's 547-row model ran about 320 nodes a second, 1.7e5
#: row-nodes; a third of that, so the budget ends well within the limit when a core is free)
NODE_ROWS_PER_S = 3e4
#: HiGHS's models up to this many rows stop at the node budget, with the clock as a safety
#: cap of `WALL_CAP_FACTOR` times the limit plus `WALL_CAP_EXTRA_S` (as CP-SAT's); larger
#: ones at the limit itself: their root node alone can take longer than any budget, so a
#: budget would not keep the time limit's promise. Other solvers get no node budget, so
#: the limit itself is theirs (CBC under `--time-limit 20` ran 81 s with the cap)
BUDGETED_ROWS = 4000
#: how the reasons no solver ran begin (`ilp`'s words)
NO_TIME = "no solver time left in --time-limit"
#: why no solver ran under `--time-limit 0`
ZERO_LIMIT = f"{NO_TIME} 0 s: a zero limit runs no solver"


def place(problem: Problem, options: Options) -> Solution:
    """The least period over every placement with per-device recomputation (module
    docstring), as a plan; the devices that recompute in `info["recompute"]`."""
    return _place(problem, options, None)


def _place(problem: Problem, options: Options, terms: PlanTerms | None) -> Solution:
    """`place`, where nothing fits speaking in `terms` (`pipeblocks`' of one of its N
    identical pipelines), else of one pipeline."""
    trivial = empty_solution(problem, "pipeilp")
    if trivial is not None:
        return trivial
    replicated = (problem.pipeline or Pipeline()).data_parallel
    if replicated not in (1, "auto"):  # N identical pipelines: one planned, replicated
        return pipeblocks.identical_pipelines(problem, options, _place, "pipeilp",
                                              _checks(options))
    pipecheck.check_units(problem, problem.pipeline or Pipeline())  # E258, E304, E259: the cause
    warm_up(problem, options)
    clock = Clock(options)
    warm, searched = _warm_starts(problem, options)
    searched = dataclasses.replace(searched, terms=terms)  # the words where nothing is found
    if options.time_limit_s <= 0 and not options.emit:  # no model to build: none is solved
        return _unsolved(problem, options, warm, searched)
    try:
        return _solve(problem, options, clock, warm, searched)
    except KeyboardInterrupt:
        if warm is None:
            raise Interrupted(None) from None
        # with its figures and the devices that recompute (before: the placement alone, so
        # a recomputing warm start was judged over its memory: E401, exit 3, no `--out`)
        raise Interrupted(_solution(problem, warm, "interrupted",
                                    pipeline_bound(problem).period_s, {
                                        "warm_start": warm.source,
                                        "reason": "interrupted before the solver answered"})
                          ) from None


def _checks(options: Options) -> pipeblocks.Checks:
    """The checks of the hints where N identical pipelines fit not (`pipeblocks.Checks`):
    one pipeline's recomputing contiguous split within the limit's work (a warm start,
    kept where the solver finds no better), and hybrid's DP."""
    cells = contiguous.cells_for(options.time_limit_s)
    return pipeblocks.Checks(lambda one: recomputing_split(one, cells) is not None,
                             pipehybrid.fitting)


def recomputing(problem: Problem, err: InfeasibleError, cells: float = MAX_CELLS,
                searched: float = MAX_CELLS) -> Solution:
    """Where no contiguous split fits without recomputing (`err`, pipedp's E707): the best
    recomputing contiguous split (`warm.recomputing_split`) as a plan, with its period,
    bound, simulated iteration and the devices that recompute. No solver runs: it is what
    `auto` and `search` plan there. `err` is raised again where none fits either, or
    where it is not E707 (a proof that no placement exists at all, `planner.facts`).
    `cells`: the DP's work (`contiguous.cells_for`); `searched`: pipedp's, which drew `err`
    (`splitdp.cells_for`): its claim is "among those searched" where that left splits out."""
    best = recomputing_split(problem, cells) if any(
        d.code == "E707" for d in err.diagnostics) else None
    if best is None:
        raise err
    if isinstance(err, pipedp.ChainsLeftOut):  # it searched only the chains its limit allowed
        what = "pipedp found no split that fits without recomputing activations"
    else:
        left = pipedp.unsearched(problem, problem.pipeline or Pipeline(), searched)
        what = ("no contiguous split fits the memory without recomputing activations"
                + (f" among those searched ({left})" if left else ""))
    return _recomputing_plan(problem, best, f"{what} (pipedp: {err.diagnostics[0].message})")


def recomputing_one_per_device(problem: Problem, why: str,
                               cells: float = MAX_CELLS) -> Solution | None:
    """The recomputing split of one stage per device, run as the schedule's fallback
    (`warm.recomputing_fallback`), as a plan with `why`; None where none fits. What `auto`
    plans under `interleaved` where nothing else fits."""
    best = recomputing_fallback(problem, cells)
    return None if best is None else _recomputing_plan(problem, best, why)


def recomputing_candidate(problem: Problem, cells: float = MAX_CELLS) -> Solution | None:
    """The recomputing contiguous split (`warm.recomputing_split`, its DP within `cells`)
    as a plan where it recomputes (None where it does not, or none fits): `auto`'s
    candidate where the memory caps shaped pipedp's split."""
    best = recomputing_split(problem, cells)
    if best is None or not best.evaluation.recompute:
        return None
    return _recomputing_plan(problem, best, "")


def _recomputing_plan(problem: Problem, best: _Warm, why: str) -> Solution:
    """`best` as a plan, with its period, bound, simulated iteration and `why`."""
    found = _solution(problem, best, "feasible", pipeline_bound(problem).period_s,
                      {"warm_start": best.source})
    ran = run_planned(problem, best.placement, problem.pipeline or Pipeline(), found.info)
    return dataclasses.replace(found, info=MappingProxyType({
        **found.info, "iteration_s": ran.iteration_s, "why": why}))


def warm_up(problem: Problem, options: Options) -> None:
    """Import Pyomo and the solver's module before the clock starts (`backends.warm_up`):
    the model's build imported them inside the solver's wall-clock cap."""
    if problem.graph.ops:
        backends.warm_up(options.solver)


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One model built and solved: the model, the solver's outcome, and the figures."""

    ilp: _Model
    outcome: Any
    info: dict[str, Any]


def _attempt(problem: Problem, orders: _Orders, warm: _Warm | None, options: Options,
             clock: Clock) -> _Attempt:
    """Build the model for `orders`, seed it with `warm`, solve it within the budget."""
    ilp, late = _built(problem, orders, warm, options, clock)
    build_s = time.perf_counter() - ilp.t0
    if options.emit:
        _emit(ilp, options.emit)
    if options.progress and not late:
        options.progress(0.1, f"solving with {options.solver}")
    t1 = time.perf_counter()
    nodes = 0 if late else node_budget(options.time_limit_s, ilp.rows)
    # only HiGHS takes the node budget: for any other solver the clock is the limit itself
    budgeted = _takes_nodes(options.solver) and ilp.rows <= BUDGETED_ROWS
    cap_s = options.time_limit_s
    if budgeted:  # the budget ends the search; the clock is a safety cap
        cap_s = WALL_CAP_FACTOR * options.time_limit_s + WALL_CAP_EXTRA_S
    if late:  # the warm start answers, as `ilp`'s does
        outcome = backends.Outcome("nosolution", late)
    elif ilp.contradiction:
        outcome = backends.Outcome("infeasible", "the model is infeasible as built")
    elif options.time_limit_s <= 0:  # `--emit` built the model; a zero limit solves none
        outcome, nodes = backends.Outcome("nosolution", ZERO_LIMIT), 0
    else:
        wall_s = max(0.05, cap_s - clock.elapsed())
        outcome = _run_solver(ilp.model, options, wall_s, nodes, warm is not None,
                              _deadline(options, clock))
    ran = not outcome.message.startswith(NO_TIME)
    info: dict[str, Any] = {"solver": options.solver,
                            "solver_status": outcome.status if ran else "skipped",
                            "build_s": build_s, "solve_s": time.perf_counter() - t1,
                            "rows": ilp.rows, "nodes": nodes}
    if "time limit" in outcome.message:
        info["reason"] = (f"the clock ({cap_s:.3g} s) ended the search before its budget of "
                          f"{nodes} nodes: another run may give another plan" if budgeted else
                          f"the time limit ({cap_s:.3g} s) ended the search: another run may "
                          "give another plan")
    if options.progress:
        options.progress(1.0, f"{options.solver}: {outcome.status}")
    return _Attempt(ilp, outcome, info)


def _built(problem: Problem, orders: _Orders, warm: _Warm | None, options: Options,
           clock: Clock) -> tuple[_Model, str]:
    """The model for `orders`, seeded with `warm`, and '' where it was built; else why it
    was not: as `ilp`'s, the limit bounds the build past the watchdog's grace
    (`backends.overrun_grace_s`: a build that ends a little late still gets the solver;
    `--emit` asks for the whole model)."""
    data = _data(problem)
    upper = warm.evaluation.period_s if warm else None
    if options.progress:
        options.progress(0.05, "building the pipeline ILP")
    ilp = _Model(problem, data, orders, upper, pipeline_bound(problem).period_s,
                 upper if upper else _horizon(problem, data))
    by = _deadline(options, clock)
    try:
        ilp.build(None if options.emit or by is None else by[0])
    except OutOfTime as late:
        return ilp, (f"{NO_TIME} {options.time_limit_s:g} s: the model was still being "
                     f"built ({late.rows:,} rows) {by[1] if by else 0:.3g} s after it ran out")
    if warm is not None:
        ilp.seed(warm)
    return ilp, ""


def _deadline(options: Options, clock: Clock) -> tuple[float, float] | None:
    """When the build and handing the model to the solver must end (`time.perf_counter()`)
    and the grace past the limit it allows (`backends.overrun_grace_s`); None at 0."""
    if options.time_limit_s <= 0:
        return None
    grace = backends.overrun_grace_s(options.time_limit_s)
    return clock.t0 + options.time_limit_s + grace, grace


def _unsolved(problem: Problem, options: Options, warm: _Warm | None,
              searched: WarmSearch) -> Solution:
    """Under `--time-limit 0`, as `ilp` and `cpsat`: no solver runs, the warm start is the
    answer (`fallback`); with none, E709 (no proof: a limit above 0 may find one)."""
    if warm is None:
        raise _none_found(problem, backends.Outcome("nosolution", ZERO_LIMIT), False, "",
                          searched)
    return _solution(problem, warm, "fallback", pipeline_bound(problem).period_s, {
        "solver": options.solver, "solver_status": "skipped", "warm_start": warm.source,
        "warm_start_period_s": warm.evaluation.period_s, "reason": ZERO_LIMIT})


def _answer(problem: Problem, attempt: _Attempt, source: str = "pipeilp") -> _Warm | None:
    """The solver's placement, if it fits when checked exactly."""
    dev = attempt.ilp.answer() if attempt.outcome.loaded else None
    found = None if dev is None else _as_warm(problem, _placement(problem, dev), source)
    if dev is not None and found is None:
        attempt.info["note"] = (f"{attempt.info['solver']}'s answer broke a constraint when "
                                f"checked exactly{_order_run(problem, dev)}; it was not used")
    elif found is not None and (why := why_not_run(problem, found)):
        attempt.info["note"] = f"{attempt.info['solver']}'s answer is {why}; it was not used"
        return None
    return found


def _order_run(problem: Problem, dev: Sequence[int]) -> str:
    """' (its memory counted in GPipe's order, ...)' where units on devices `dev` run in
    another order than the plan's schedule, as that one would deadlock (`split.runs`: the
    model counts the schedule's own micro-batches in flight), else ''."""
    pipeline = problem.pipeline or Pipeline()
    split = split_of(problem, _placement(problem, dev))
    asked, ran = runs_as(split, pipeline), runs(problem, split, pipeline)
    if ran.schedule == asked.schedule:
        return ""
    return (f" (its memory, counted in {ran.schedule}'s order as it runs, every micro-batch "
            f"in flight: {asked.schedule}'s would deadlock)")


def _runs_in(problem: Problem, placement: Sequence[int]) -> str:
    """'; it runs in gpipe's order, not interleaved's ...' where the plan `placement` runs
    in another order than the schedule asked (`split.runs`), else ''."""
    pipeline = problem.pipeline or Pipeline()
    ran = runs(problem, split_of(problem, placement), pipeline)
    if ran.schedule == pipeline.schedule:
        return ""
    return (f"; it runs in {ran.schedule}'s order, not {pipeline.schedule}'s (the plan's "
            f"note says why)")


def _first_order(problem: Problem, options: Options, clock: Clock,
                 searched: WarmSearch) -> tuple[tuple[int, ...] | None, _Warm | None]:
    """Without a warm start where the order of the devices matters: solve the relaxation
    (`_relaxed`) first. Infeasible, it proves that nothing fits (E708; not under
    `interleaved`, whose rule takes a device's largest stage, not the sum, nor with tied
    weights, which the rule keeps once per device, not per holder); else its plan
    is a warm start when it fits, and its devices by first unit the order."""
    data = _data(problem)
    relaxed = _relaxed(problem, data)
    first = _attempt(problem, relaxed, None, options, clock)
    if first.outcome.status == "infeasible":  # a proof where the rows relax `stage_bytes`
        raise _none_found(problem, first.outcome, relaxed.proves, relaxed.scope, searched)
    dev = first.ilp.answer() if first.outcome.loaded else None
    if dev is None:
        return None, None
    return tuple(dev), _answer(problem, first, "pipeilp (relaxed)")


# complex: solve's steps in order, each reading the ones before: orders and warm start, the
# attempt, the better of warm start and answer, fallback on a failed solve, else the judgement
def _solve(problem: Problem, options: Options, clock: Clock, warm: _Warm | None,
           searched: WarmSearch) -> Solution:
    """Build, seed and solve the model; check its answer exactly; judge (package docstring)."""
    split = _fallback_split(problem, options)  # before the solver: its clock counts the DP
    try:
        orders, warm = _ordered(problem, options, clock, warm, searched)
    except SearchLimitError:  # the relaxed model (interleaved's) had no placement: no proof
        if split is None:
            raise
        # (before: E709, where pipedp and auto plan this split)
        return _solution(problem, split, "fallback", pipeline_bound(problem).period_s, {
            "kept": _kept(split, None, False),
            "reason": f"no placement its model covers fits; the {split.source}, outside "
                      "it, is kept"})
    admitted = warm if warm is None or not orders.runs or len(
        split_of(problem, warm.placement).devices) == len(warm.evaluation.ranks) else None
    attempt = _attempt(problem, orders, admitted, options, clock)
    outcome, info = attempt.outcome, attempt.info
    info.update(warm_start=warm.source if warm else None,
                warm_start_period_s=warm.evaluation.period_s if warm else None)
    if orders.ranked is not None:
        info["order"] = [problem.cluster.devices[d].name for d in orders.ranked]
    if orders.scope:
        info["scope"] = orders.scope
    found = _answer(problem, attempt)
    best = warm
    if found is not None and _faster(found, best):
        best = found
    if found is not None and warm is not None and best is warm:
        info["kept"] = f"the {best.source} warm start is as good as the solver's answer"
    if split is not None and _faster(split, best):
        info["kept"] = _kept(split, best, found is not None and best is found)
        best = split
    if best is None:
        raise _none_found(problem, outcome, orders.proves, orders.scope, searched,
                          attempt.info.get("note", ""))
    bound = pipeline_bound(problem).period_s
    if outcome.status not in ("optimal", "feasible"):
        reason = _why_unsolved(outcome, options, orders, admitted, best)
        log.warning("pipeilp: falling back to the %s plan: %s%s", best.source, reason,
                    _runs_in(problem, best.placement))
        info["reason"] = reason
        return _solution(problem, best, "fallback", bound, info)
    # the solver's objective speaks for its answer and the plan it was seeded with alone
    objective = attempt.ilp.objective_s() if found is not None and best is not split else None
    scale = attempt.ilp.time_unit
    solver_bound = outcome.bound * scale if outcome.bound is not None else None
    status, valid = _judge(best.evaluation.period_s, bound, solver_bound, objective,
                           outcome.status == "optimal", orders, options, info)
    return _solution(problem, best, status, valid, info)


def _ordered(problem: Problem, options: Options, clock: Clock, warm: _Warm | None,
             searched: WarmSearch) -> tuple[_Orders, _Warm | None]:
    """The device orders the model covers and the warm start in their labels: without a
    warm start and a complete set of orders, the first order found by a search gives both
    (`_first_order`); a warm start's devices are relabelled to the orders' classes."""
    data = _data(problem)
    orders = _orders(problem, data, warm.dev if warm else None)
    if warm is None and not orders.complete:
        order, warm = _first_order(problem, options, clock, searched)
        if order is not None:
            orders = _orders(problem, data, order)
    if warm is not None and orders.classes:
        dev = _relabel(warm.dev, orders.classes)
        placement = _placement(problem, dev)
        warm = _Warm(tuple(dev), placement, evaluate(problem, placement), warm.source)
    return orders, warm


def _why_unsolved(outcome: backends.Outcome, options: Options, orders: _Orders,
                  admitted: _Warm | None, best: _Warm) -> str:
    """Why the solver's run gave no plan, `best` kept instead (the fallback's reason)."""
    if outcome.status != "infeasible":
        return outcome.message or f"{options.solver} found no solution"
    # T is at most the seeded plan's period, so infeasible says only that no placement
    # the model covers is faster (test_pipeilp_more_memory: one of 0.16 s fits, not 0.155 s)
    if admitted is None:
        return (f"the model ({orders.scope}) is infeasible; the {best.source} plan, "
                "outside it, is kept")
    if orders.exact:
        return (f"{options.solver} reported the model infeasible although the "
                f"{best.source} plan satisfies it")
    return (f"the model ({orders.scope}) has no placement of period at most "
            f"{admitted.evaluation.period_s:.4g} s, the {admitted.source} plan's; "
            f"the {best.source} plan, outside it, is kept")


def _faster(candidate: _Warm, than: _Warm | None) -> bool:
    """Whether `candidate`'s period is less than `than`'s (None: any is)."""
    return than is None or (candidate.evaluation.period_s
                            < than.evaluation.period_s * (1 - 1e-12))


def _fallback_split(problem: Problem, options: Options) -> _Warm | None:
    """The recomputing contiguous split planned for the schedule's fallback (interleaved:
    1F1B, `warm.recomputing_fallback`), as it runs; None where there is none. A candidate
    beside the warm start and the answer: where the model's answer does not fit as it runs
    it is set aside, and the warm starts, planned for the schedule asked, may all be slower
    (at 30 MB 0.205 s a micro-batch, where 25 MB gave this split's 0.155 s)."""
    found = recomputing_fallback(problem, contiguous.cells_for(options.time_limit_s))
    if found is None:
        return None
    ran = (problem.pipeline or Pipeline()).schedule_spec.fallback
    return dataclasses.replace(found, source=f"{ran} {found.source}")


def _kept(split: _Warm, best: _Warm | None, answer: bool) -> str:
    """Why `split` is returned in place of `best` (the solver's `answer`, else a warm
    start, else nothing)."""
    mine = f"the {split.source} runs faster ({split.evaluation.period_s:.4g} s a micro-batch)"
    if best is None:
        return f"{mine}: nothing else found fits as it runs"
    other = "the solver's answer" if answer else f"the {best.source} warm start"
    return f"{mine} than {other} ({best.evaluation.period_s:.4g} s)"


def node_budget(limit_s: float, rows: int) -> int:
    """HiGHS's branch-and-bound nodes for `--time-limit` `limit_s` on a model of `rows`
    rows: a deterministic function of the two, so that where HiGHS stops does not depend on
    the machine's load (`budget.py` does the same for CP-SAT)."""
    return max(1, math.floor(NODE_ROWS_PER_S * limit_s / max(rows, 1)))


def _takes_nodes(name: str) -> bool:
    """Whether solver `name` is given the node budget (HiGHS: `mip_max_nodes`)."""
    return backends.profile(name).pyomo == "appsi_highs"


def _run_solver(model: Any, options: Options, wall_s: float, nodes: int,
                warm: bool, by: tuple[float, float] | None = None) -> Any:
    """Solve with `options.solver`; HiGHS also stops at `nodes` nodes (`node_budget`).
    Handing the rows to an in-process solver (HiGHS: about as long as building them) ends
    at `by`'s deadline, as the build does (`_deadline`): past it, no solver runs."""
    name = options.solver
    try:
        return solver_names.solve_pyomo(model, name, time_limit_s=wall_s, gap=options.gap,
                                        threads=backends.threads_for(name), warm_start=warm,
                                        seed=options.seed,
                                        options={"mip_max_nodes": nodes} if _takes_nodes(name)
                                        else None, load_by=by[0] if by else None)
    except backends.LoadOverrun as late:
        return backends.Outcome("nosolution", (
            f"{NO_TIME} {options.time_limit_s:g} s: the model was still being handed to "
            f"{name} ({late.rows:,} of {late.total:,} rows) {by[1] if by else 0:.3g} s after "
            "it ran out"))


def _horizon(problem: Problem, data: _Data) -> float:
    """A period of the size of the model's (it only scales the model's time unit when
    there is no warm start): all compute on one device plus every boundary crossed once."""
    work = max((sum(row[d] for row in data.compute if row[d] < INF)
                for d in range(data.m)), default=0.0)
    moves = sum(max((t for a in range(data.m) for b in range(data.m)
                     if (t := data.forward_s(x, a, b) + data.backward_s(x, a, b)) < INF),
                    default=0.0) for x in range(1, data.n))
    return work + moves
