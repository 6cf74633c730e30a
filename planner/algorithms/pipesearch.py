"""`search` under `objective pipeline`: `auto`'s plan, then cut moves judged by the
simulated iteration and unit moves judged by the period.

`search` (`planner.algorithms.search`) hands a plan with `objective pipeline` here. It
starts from the plan `auto` returns at the same `--time-limit` (`autopipe.place`, the same
call and work: pipedp's split, its cuts moved, the uniform split, hybrid's layouts, under
`interleaved` pipedp's split of one stage per device, the recomputing split; auto's E707
where none fits), so its plan never runs slower, by the simulated iteration, than auto's.
Where that plan replicates stages (hybrid's layouts) or recomputes activations, search's
moves do not apply (they move one device's stages, and judge memory without replicas or
recomputation): auto's plan is search's, and `info["search"]` says so. Else it climbs from
it by moving its cuts (`pipecuts.refine`: shift a cut, merge two stages, cut the busiest
stage in two; under `interleaved` shifts only), each move judged by the simulated
iteration under the schedule the split runs as (`split.runs_as`: one stage per device
runs as 1F1B), within `CUT_SHARE` of the limit's simulations (`auto`'s own cut moves from
pipedp's candidates took `autopipe.CUT_SHARE`). Then it tries moving one pipeline unit
at a time to another device it may use, any unit to any device (a plan need not stay
contiguous), keeping a move when it lowers the period T (`split.period_s`: the busiest
resource, a device's compute or a link's transfers, for one micro-batch) and every device
still holds what the pipeline needs (`split.stage_bytes` over the plan's stages). The units and
devices are drawn from a generator seeded by `--seed`, for a budget of moves set by
`--time-limit` and the graph's size alone (`SECONDS_PER_MOVE`, `SECONDS_PER_ELEMENT`,
`UNIT_SHARE` of half the limit as `clock.LOAD_HEADROOM` says: auto's work takes the
rest), so the same seed and limit give the same plan on any machine; the wall clock stops
it at the limit (`clock.cap`), and `reason` says so. At the end the simulator is the
judge: the plan found is kept only when it fits as it runs and its simulated iteration is
shorter than auto's.

`info["chosen"]` names the plan: `auto's <its choice>` (with ", no move improved it" where
moves ran, ", no move tried" where the limit left none), `search (cut moves)` or `search`
(the unit moves').

The cut moves find splits the kinds miss: on PipeDream's resnet18 profile at 4 workers,
PipeDream's own split (its best of 5 tie-breaks) runs 1.73 s, pipedp's best candidate
1.85 s. The unit moves are there for graphs whose best plan is not contiguous.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ..model import Pipeline, Problem
from ..pipeline import splitdp
from ..pipeline.schedule import run as run_pipeline
from ..pipeline.split import fits, period_s, resource_loads, runs_as, split_of, stage_bytes
from ..pipeline.units import units
from ..plan import Plan
from . import autopipe, clock, pipecuts, pipedp
from .base import Interrupted, Options, Solution
from .clock import CUT, LOAD_HEADROOM, NO_SEARCH, cap, cut_reason

#: what one move costs on an idle machine: a fixed part, and per op and edge (it
#: recomputes the devices' loads)
SECONDS_PER_MOVE = 1e-4
SECONDS_PER_ELEMENT = 1.5e-6
#: the share of the time limit's simulations (`clock.simulation_budget`) the cut moves
#: from auto's plan get (auto's own, from pipedp's candidates, took `autopipe.CUT_SHARE`:
#: together the whole of it, as search's cut moves had before they started from auto's plan)
CUT_SHARE = 1.0 - autopipe.CUT_SHARE
#: the share of `move_budget`'s moves (half the limit) the unit moves get: auto's work
#: (`autopipe.place`) takes the rest
UNIT_SHARE = 0.5
#: info keys of auto's plan that describe that plan alone, dropped where search replaces it
OWN_NOTES = ("memory_note", "stages_note", "why", "layout", "replicas", "recompute",
             "cut_moves")


def place(problem: Problem, options: Options) -> Solution:
    """Moves from auto's plan at the same limit (module docstring)."""
    deadline = cap(options.time_limit_s)
    pipeline = problem.pipeline or Pipeline()
    auto_cut: list[str] = []  # the climbs of auto's the clock cut: said once, with search's
    start = autopipe.place(problem, options, climbs_cut=auto_cut)  # auto's E707 if no plan
    theirs = f"auto's {start.info.get('chosen', 'pipedp')}"
    fixed = _fixed(start.info)
    if fixed:
        return _as_search(start, theirs, {"search": f"skipped: {fixed}",
                                          **_clock_reason(start.info, auto_cut)})
    try:
        moved, iteration, cut_tried = _cut_moves(problem, options, start, deadline)
        placement = list(moved.plan.placement)
        budget = move_budget(problem, options.time_limit_s)
        kept, tried = _unit_moves(problem, options, placement, budget, deadline)
    except KeyboardInterrupt:
        raise Interrupted(dataclasses.replace(
            _as_search(start, theirs, _clock_reason(start.info, auto_cut)),
            status="interrupted")) from None
    notes = {"cut_moves": moved.info["cut_moves"],
             "search": _unit_note(kept, tried, budget,
                                  moved.plan.placement != start.plan.placement)}
    notes.update(_clock_reason(start.info, auto_cut, [
        *(["in search's cut moves"] if CUT in str(moved.info["cut_moves"]) else []),
        *([_unit_cut(tried, budget)] if tried < budget else [])]))
    if kept:
        ran = run_pipeline(problem, tuple(placement), pipeline)
        if iteration is None:  # auto's plan, not simulated by the cut moves
            iteration = run_pipeline(problem, moved.plan.placement, pipeline).iteration_s
        # the moves judged memory in the order the plan runs (`split.runs`: GPipe's where
        # 1F1B would deadlock); the simulator's run has the last word
        if not fits(problem, ran.memory_bytes):
            notes["search"] += (f"; the moves' plan does not fit as it runs (under "
                                f"{ran.schedule}): the plan before them kept")
        elif ran.iteration_s < iteration:
            return _replaced(start, tuple(placement), "search", {
                **notes, "period_s": period_s(problem, placement),
                "iteration_s": ran.iteration_s})
        else:
            notes["search"] += ("; the simulated iteration was no shorter: the plan before "
                                "them kept")
    if moved.plan.placement != start.plan.placement:  # the cut moves' plan
        return _replaced(start, moved.plan.placement, "search (cut moves)",
                         {**moved.info, **notes})
    # a label is a claim: "no move improved it" only where some move was tried
    return _as_search(start, f"{theirs}, " + (
        "no move improved it" if tried or cut_tried else "no move tried"), notes)


def _clock_reason(auto: Mapping[str, Any], auto_cut: Sequence[str],
                  own: Sequence[str] = ()) -> dict[str, str]:
    """`reason` where the wall clock cut auto's climbs (`auto_cut`, which auto's `reason`,
    in `auto`, left to search) or search's phases (`own`, in the words that follow `CUT`),
    said once for them all, then the rest of auto's `reason`: {} where the clock cut
    nothing (auto's `reason`, if any, stands)."""
    where = [*([autopipe.climbs_cut(auto_cut)] if auto_cut else []), *own]
    reason = cut_reason(where, auto.get("reason"))
    return {"reason": reason} if where and reason else {}


def _unit_note(kept: int, tried: int, budget: int, cuts_moved: bool) -> str:
    """`info["search"]`: the unit moves kept of those tried; where the clock (`tried <
    budget`: only the clock stops them short) ended them before their first, that and the
    plan they would have started from, kept (not "0 of 0 moves kept")."""
    if tried or not budget:
        return f"{kept} of {tried} moves kept (budget {budget})"
    start = "the cut moves' plan" if cuts_moved else "auto's plan"
    return (f"no unit move tried: the time limit ran out before the first of {budget}; "
            f"the plan they start from, {start}, kept")


def _unit_cut(tried: int, budget: int) -> str:
    """Where the clock cut the unit moves, in the words that follow `CUT`."""
    if tried:
        return f"in search's unit moves after {tried} of their {budget}"
    return f"before the first of search's {budget} unit moves"


def _fixed(info: Mapping[str, Any]) -> str:
    """Why search's moves do not apply to auto's plan of `info`, or ''."""
    if info.get("replicas"):
        return ("auto's plan replicates stages, and search's moves move one device's "
                "stages: auto's plan kept")
    if info.get("recompute"):
        return ("its moves judge memory without recomputing, and auto's plan recomputes: "
                "auto's plan kept")
    return ""


def _cut_moves(problem: Problem, options: Options, start: Solution,
               deadline: float) -> tuple[Solution, float | None, int]:
    """`start` (auto's plan), or its cuts moved (`pipecuts.refine` under the schedule its
    split runs as, `CUT_SHARE` of the limit's simulations) where that runs faster, its
    `info["cut_moves"]` saying what they did; its simulated iteration where they ran; and
    the moves they simulated (the start's simulation not counted)."""
    pipeline = problem.pipeline or Pipeline()
    copies = pipeline.microbatches * len(problem.graph.ops)
    if options.time_limit_s <= 0 or copies > pipedp.MAX_SIMULATED_OPS:
        why = NO_SEARCH if options.time_limit_s <= 0 else (
            "skipped: the graph's copies pass those pipedp simulates")
        return dataclasses.replace(start, info=MappingProxyType({
            **start.info, "cut_moves": why})), None, 0
    split = split_of(problem, start.plan.placement)
    ran = runs_as(split, pipeline)
    sims = clock.simulations(CUT_SHARE * clock.simulation_budget(options.time_limit_s), copies)
    most = splitdp.most_stages(problem, ran, units(problem).count)
    refined = pipecuts.refine(problem, ran, [split], max(sims, 1), deadline, most)
    if refined is None:  # auto's plan does not fit by the pipeline's model: no move to judge
        return dataclasses.replace(start, info=MappingProxyType({
            **start.info, "cut_moves": "skipped: auto's plan does not fit the memory as "
                                       "its split is modelled"})), None, 0
    note = f"{refined.simulations} simulation(s)" + (
        f"; {CUT}: this plan may differ from run to run" if refined.cut else "")
    if refined.split == split:  # no move ran faster: `refined` is auto's split, simulated
        return dataclasses.replace(start, info=MappingProxyType({
            **start.info, "cut_moves": note})), refined.iteration_s, refined.simulations - 1
    found = Solution(Plan(refined.split.placement(problem), algorithm="search"), "feasible",
                     MappingProxyType({"cut_moves": note, "iteration_s": refined.iteration_s,
                                       "period_s": resource_loads(problem, refined.split).period_s,
                                       "stages": refined.split.stages}))
    return found, refined.iteration_s, refined.simulations - 1


def _unit_moves(problem: Problem, options: Options, placement: list[int], budget: int,
                deadline: float) -> tuple[int, int]:
    """Unit moves on `placement` (in place) that lower the period and fit (module
    docstring), within `budget` and the wall clock: the moves kept and tried."""
    pipeline = problem.pipeline or Pipeline()
    u = units(problem)
    rng = random.Random(options.seed)
    best = period_s(problem, placement)
    moved = tried = 0
    for tried in range(1, budget + 1):  # noqa: B007 (`tried` is reported)
        if time.monotonic() > deadline:
            return moved, tried - 1
        k = rng.randrange(u.count)
        choices = [d for d in u.allowed[k] if d != placement[u.members[k][0]]]
        if not choices:
            continue
        target = choices[rng.randrange(len(choices))]
        before = placement[u.members[k][0]]
        for i in u.members[k]:
            placement[i] = target
        period = period_s(problem, placement)
        if period < best and _fits(problem, placement, pipeline):
            best, moved = period, moved + 1
        else:
            for i in u.members[k]:
                placement[i] = before
    return moved, tried


def _as_search(start: Solution, chosen: str, notes: Mapping[str, Any]) -> Solution:
    """auto's plan `start` as search's, `chosen` naming it."""
    return dataclasses.replace(start, plan=start.plan.with_algorithm("search"),
                               info=MappingProxyType({**start.info, **notes, "chosen": chosen}))


def _replaced(start: Solution, placement: tuple[int, ...], chosen: str,
              notes: Mapping[str, Any]) -> Solution:
    """The moves' plan `placement`: auto's notes less those on auto's own plan
    (`OWN_NOTES`, which would describe a plan search has replaced), and the moves'."""
    info = {k: v for k, v in start.info.items() if k not in OWN_NOTES}
    info.update(notes, chosen=chosen, start=f"auto's {start.info.get('chosen', 'pipedp')}")
    return Solution(Plan(placement, algorithm="search"), "feasible", MappingProxyType(info))


def move_budget(problem: Problem, time_limit_s: float) -> int:
    """Moves for `time_limit_s`, from the graph's size alone."""
    size = len(problem.graph.ops) + len(problem.graph.edges)
    return int(UNIT_SHARE * LOAD_HEADROOM * time_limit_s
               / (SECONDS_PER_MOVE + SECONDS_PER_ELEMENT * size))


def _fits(problem: Problem, placement: list[int], pipeline: Pipeline) -> bool:
    return fits(problem, stage_bytes(problem, split_of(problem, placement), pipeline))
