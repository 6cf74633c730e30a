"""`search` under `objective pipeline`: moves from pipedp's split, judged by the period.

`search` (`planner.algorithms.search`) hands a plan with `objective pipeline` here. It
starts from `pipedp`'s plan (the best contiguous split) and tries moving one pipeline unit
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

With `--time-limit 10`, on the issue's GPT-24 graph two of 1,701 moves lowered T but not
the simulated iteration, and on Baechi's GNMT none of 496 lowered T: both keep pipedp's
split (the issue's annealing on T from the same start found nothing better either). The
search is there for graphs whose best plan is not contiguous.
"""

from __future__ import annotations

import dataclasses
import random
import time
from types import MappingProxyType

from ..model import Pipeline, Problem
from ..pipeline.schedule import run as run_pipeline
from ..pipeline.split import fits, period_s, split_of, stage_bytes
from ..pipeline.units import units
from ..plan import Plan
from . import pipedp
from .base import Interrupted, Options, Solution
from .clock import CUT, LOAD_HEADROOM, cap

#: what one move costs on an idle machine: a fixed part, and per op and edge (it
#: recomputes the devices' loads)
SECONDS_PER_MOVE = 1e-4
SECONDS_PER_ELEMENT = 1.5e-6


def place(problem: Problem, options: Options) -> Solution:
    """Moves from pipedp's plan (module docstring)."""
    deadline = cap(options.time_limit_s)
    pipeline = problem.pipeline or Pipeline()
    start = pipedp.place(problem, options)
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
        mine = run_pipeline(problem, placement, pipeline).iteration_s
        theirs = run_pipeline(problem, start.plan.placement, pipeline).iteration_s
        if mine < theirs:
            info.update(period_s=best, iteration_s=mine, chosen="search")
            return Solution(Plan(tuple(placement), algorithm="search"), "feasible",
                            MappingProxyType(info))
        info["search"] += "; the simulated iteration was no shorter: pipedp's plan kept"
    return Solution(start.plan.with_algorithm("search"), "feasible", MappingProxyType(info))


def move_budget(problem: Problem, time_limit_s: float) -> int:
    """Moves for `time_limit_s`, from the graph's size alone."""
    size = len(problem.graph.ops) + len(problem.graph.edges)
    return int(LOAD_HEADROOM * time_limit_s / (SECONDS_PER_MOVE + SECONDS_PER_ELEMENT * size))


def _period(problem: Problem, placement: list[int]) -> float:
    return period_s(problem, placement)


def _fits(problem: Problem, placement: list[int], pipeline: Pipeline) -> bool:
    return fits(problem, stage_bytes(problem, split_of(problem, placement), pipeline))
