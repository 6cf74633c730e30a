"""`search` under `objective pipeline`: cut moves judged by the simulated iteration, then
unit moves judged by the period.

`search` (`planner.algorithms.search`) hands a plan with `objective pipeline` here. It
starts from `pipedp`'s plan, its DP's work sized to the time limit as `auto`'s
(`splitdp.cells_for`; the recomputing split's, where none fits without recomputing,
`pipeilp.contiguous.cells_for`), (the best of its candidates per stage count: the least period,
torchgpipe's compute-balanced kind, PipeDream's kind, ...) and first climbs from the best
few of those candidates by moving their cuts (`pipecuts`: shift a cut, merge two stages,
cut the busiest stage in two), each move judged by the simulated iteration, the measure
users run. Then it tries moving one pipeline unit
at a time to another device it may use, any unit to any device (a plan need not stay
contiguous), keeping a move when it lowers the period T (`split.period_s`: the busiest
resource, a device's compute or a link's transfers, for one micro-batch) and every device
still holds what the pipeline needs (`split.stage_bytes` over the plan's stages). The units and
devices are drawn from a generator seeded by `--seed`, for a budget of moves set by
`--time-limit` and the graph's size alone (`SECONDS_PER_MOVE`, `SECONDS_PER_ELEMENT`,
half the limit as `clock.LOAD_HEADROOM` says), so the same seed and limit give the same
plan on any machine; the wall clock stops it at the limit (`clock.cap`), and `reason`
says so. At the end the simulator is the judge: the plan found is kept only when its
simulated iteration is shorter than the start's.

The cut moves find splits the kinds miss: on PipeDream's resnet18 profile at 4 workers,
PipeDream's own split (its best of 5 tie-breaks) runs 1.73 s, pipedp's best candidate
1.85 s. The unit moves are there for graphs whose best plan is not contiguous.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..errors import InfeasibleError
from ..model import Pipeline, Problem
from ..pipeline import splitdp
from ..pipeline.schedule import run as run_pipeline
from ..pipeline.split import fits, period_s, resource_loads, split_of, stage_bytes
from ..pipeline.units import units
from ..plan import Plan
from . import pipecuts, pipedp, pipeilp
from .base import Interrupted, Options, Solution
from .clock import CUT, LOAD_HEADROOM, NO_SEARCH, cap
from .pipeilp import contiguous

#: what one move costs on an idle machine: a fixed part, and per op and edge (it
#: recomputes the devices' loads)
SECONDS_PER_MOVE = 1e-4
SECONDS_PER_ELEMENT = 1.5e-6
#: the share of the time limit's simulations (`pipedp.simulation_budget`) the cut moves
#: get (`pipecuts.refine_pipedp`); the unit moves have their own budget
CUT_SHARE = 1.0


def place(problem: Problem, options: Options) -> Solution:
    """Moves from pipedp's plan (module docstring)."""
    deadline = cap(options.time_limit_s)
    pipeline = problem.pipeline or Pipeline()
    cells = splitdp.cells_for(options.time_limit_s)  # pipedp's work, sized as auto's
    try:
        start = _cut_moves(problem, options, pipedp.place_within(problem, options, cells),
                           deadline, cells)
    except InfeasibleError as err:  # no split fits without recomputing: the moves' rule
        found = pipeilp.recomputing(problem, err, contiguous.cells_for(options.time_limit_s),
                                    cells)
        return dataclasses.replace(found, plan=found.plan.with_algorithm("search"), info=(
            MappingProxyType({**found.info, "chosen": "recomputing contiguous split",
                              "search": "skipped: its moves judge memory without "
                                        "recomputing, and no split fits so"})))
    placement = list(start.plan.placement)
    budget = move_budget(problem, options.time_limit_s)
    u = units(problem)
    rng = random.Random(options.seed)
    best = _period(problem, placement)
    moved = tried = 0
    try:
        for tried in range(1, budget + 1):  # noqa: B007 (`tried` is reported)
            if time.monotonic() > deadline:
                break
            k = rng.randrange(u.count)
            choices = [d for d in u.allowed[k] if d != placement[u.members[k][0]]]
            if not choices:
                continue
            target = choices[rng.randrange(len(choices))]
            before = placement[u.members[k][0]]
            for i in u.members[k]:
                placement[i] = target
            period = _period(problem, placement)
            if period < best and _fits(problem, placement, pipeline):
                best, moved = period, moved + 1
            else:
                for i in u.members[k]:
                    placement[i] = before
    except KeyboardInterrupt:
        raise Interrupted(dataclasses.replace(start, status="interrupted")) from None
    info = {**start.info, "search": f"{moved} of {tried} moves kept (budget {budget})"}
    if tried < budget:
        info["reason"] = (f"{CUT} after {tried} of {budget} moves (a slow or busy machine): "
                          "this plan may differ from run to run")
    if moved:
        ran = run_pipeline(problem, placement, pipeline)
        theirs = _iteration(problem, start, pipeline)
        # the moves judged memory in the order the plan runs (`split.runs`: GPipe's where
        # 1F1B would deadlock); the simulator's run has the last word
        if not fits(problem, ran.memory_bytes):
            info["search"] += ("; the moves' plan does not fit as it runs (under "
                               f"{ran.schedule}): the cut moves' plan kept")
        elif ran.iteration_s < theirs:
            info = _own_notes(info)
            info.update(period_s=best, iteration_s=ran.iteration_s, chosen="search")
            return Solution(Plan(tuple(placement), algorithm="search"), "feasible",
                            MappingProxyType(info))
        else:
            info["search"] += ("; the simulated iteration was no shorter: the cut moves' "
                               "plan kept")
    return Solution(start.plan.with_algorithm("search"), "feasible", MappingProxyType(info))


def _cut_moves(problem: Problem, options: Options, start: Solution, deadline: float,
               cells: float) -> Solution:
    """pipedp's plan `start` (its DP's work `cells`), or the cut moves' plan where it runs
    faster, with what the cut moves spent (module docstring)."""
    pipeline = problem.pipeline or Pipeline()
    refined = pipecuts.refine_pipedp(problem, pipeline, cells,
                                     options.time_limit_s, CUT_SHARE, deadline)
    if refined is None:
        return start if options.time_limit_s > 0 else dataclasses.replace(
            start, info=MappingProxyType({**start.info, "cut_moves": NO_SEARCH}))
    if refined.iteration_s < _iteration(problem, start, pipeline):
        start = Solution(Plan(refined.split.placement(problem), algorithm="search"),
                         "feasible", MappingProxyType({
                             **_own_notes(start.info),
                             "period_s": resource_loads(problem, refined.split).period_s,
                             "iteration_s": refined.iteration_s, "stages": refined.split.stages,
                             "chosen": "search (cut moves)"}))
    return dataclasses.replace(start, info=MappingProxyType({
        **start.info, "cut_moves": f"{refined.simulations} simulation(s)" + (
            f"; {CUT}: this plan may differ from run to run" if refined.cut else "")}))


def _own_notes(info: Mapping[str, Any]) -> dict[str, Any]:
    """`info` less pipedp's notes on its own split (`memory_note`, `stages_note`), which
    would describe a plan search has replaced."""
    return {k: v for k, v in info.items() if k not in ("memory_note", "stages_note")}


def _iteration(problem: Problem, plan: Solution, pipeline: Pipeline) -> float:
    return run_pipeline(problem, plan.plan.placement, pipeline).iteration_s


def move_budget(problem: Problem, time_limit_s: float) -> int:
    """Moves for `time_limit_s`, from the graph's size alone."""
    size = len(problem.graph.ops) + len(problem.graph.edges)
    return int(LOAD_HEADROOM * time_limit_s / (SECONDS_PER_MOVE + SECONDS_PER_ELEMENT * size))


def _period(problem: Problem, placement: list[int]) -> float:
    return period_s(problem, placement)


def _fits(problem: Problem, placement: list[int], pipeline: Pipeline) -> bool:
    return fits(problem, stage_bytes(problem, split_of(problem, placement), pipeline))
