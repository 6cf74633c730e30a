"""Cut moves judged by the simulated iteration: the pipeline's last refinement.

pipedp minimises the period T exactly and proposes, per stage count, a split of each kind
(`splitdp.KINDS`); T bounds only the steady state, and the simulated iteration (the fill,
the drain, 1F1B's round trips) can prefer a split none of the kinds finds (on PipeDream's
resnet18 profile at 4 workers, PipeDream's own [43 | 25 | 2 | 1] units, T 201.6 ms, runs
1.73 s where the best candidate, two stages, runs 1.85 s). `refine` climbs from the best
candidates by the measure users run: a move shifts one cut by 1, 2, 4 or 8 units, merges
two neighbouring stages, or cuts a stage in two where its compute halves (the busiest
first), on a device not yet used; the first move that simulates a shorter iteration (and
fits the pipeline's memory, `split.stage_bytes`) is taken, until no move helps or the
budget of simulations ends.

The budget is a number of simulations set by the time limit and the graph's size alone
(`clock.simulation_budget`), so the same limit gives the same plan on any machine; the
wall clock stops it at the limit, and the result says so. A limit of 0 runs no cut moves
(`--time-limit 0` runs no search: the moves once ran unbudgeted there, until the wall
clock's `clock.CAP_MIN_S` cut them, so the plan changed from run to run). Splits run as the plan's
schedule runs them (`pipeline.schedule.run`); under `interleaved` only the shifts (a
device's stages repeat in a loop that merges and new cuts would break).

`refine_fallback`: under `interleaved`, `auto` also climbs from pipedp's split of one stage
per device, run under the fallback (1F1B) as `auto` climbs from a 1F1B plan's.

O(budget) simulations of M x (ops + relays) copied ops each.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ..model import Pipeline, Problem
from ..pipeline import splitdp
from ..pipeline.schedule import run as run_pipeline
from ..pipeline.split import Split, fits, resource_loads, split_of, stage_bytes
from ..pipeline.units import units
from ..plan import Plan
from . import clock, pipedp
from .base import Solution
from .clock import CUT

#: how far a cut moves in one step, in units
SHIFTS = (1, -1, 2, -2, 4, -4, 8, -8)


@dataclass(frozen=True, slots=True)
class Refined:
    """The best split found, its simulated iteration, the simulations run, and whether the
    wall clock cut the climb short."""

    split: Split
    iteration_s: float
    simulations: int
    cut: bool


def refine(problem: Problem, pipeline: Pipeline, starts: Sequence[Split], simulations: int,
           deadline: float = math.inf, most_stages: int | None = None) -> Refined | None:
    """Climb from each of `starts` in turn (module docstring) within `simulations` runs;
    None when no start fits."""
    seen: dict[Split, float] = {}
    cut = False

    def iteration(split: Split) -> float:
        if split not in seen:
            ok = (math.isfinite(resource_loads(problem, split).period_s)
                  and fits(problem, stage_bytes(problem, split, pipeline)))
            seen[split] = (run_pipeline(problem, split.placement(problem), pipeline).iteration_s
                           if ok else math.inf)
        return seen[split]

    best: tuple[float, Split] | None = None
    most = most_stages or len(problem.cluster.devices)
    for start in starts:
        current, now = start, iteration(start)
        moved = True
        while moved and math.isfinite(now):
            moved = False
            for other in _neighbours(problem, pipeline, current, most):
                if len(seen) >= simulations or time.monotonic() > deadline:
                    cut = time.monotonic() > deadline
                    break
                if other not in seen and iteration(other) < now:
                    current, now, moved = other, seen[other], True
                    break
        if math.isfinite(now) and (best is None or now < best[0]):
            best = (now, current)
        if len(seen) >= simulations or cut:
            break
    return None if best is None else Refined(best[1], best[0], len(seen), cut)


def _neighbours(problem: Problem, pipeline: Pipeline, split: Split,
                most: int) -> Iterator[Split]:
    """The moves of `split`, in a fixed order: shifts, then merges, then a new cut."""
    n = units(problem).count
    b, dev = split.bounds, split.devices
    for k in range(1, len(b) - 1):
        for step in SHIFTS:
            x = b[k] + step
            if b[k - 1] < x < b[k + 1]:
                yield Split((*b[:k], x, *b[k + 1:]), dev)
    if pipeline.schedule_spec.virtual_stages:  # merges and new cuts break the loop of chains
        return
    for k in range(1, len(b) - 1):  # stages k - 1 and k as one, on stage k - 1's device
        yield Split((*b[:k], *b[k + 1:]), (*dev[:k], *dev[k + 1:]))
    if len(dev) < min(most, n):
        yield from _new_cut(problem, split)


def _new_cut(problem: Problem, split: Split) -> Iterator[Split]:
    """Each stage, the busiest first, cut where its compute halves, its second half on the
    first device not in use (by index)."""
    u = units(problem)
    b, dev = split.bounds, split.devices
    free = [d for d in range(len(problem.cluster.devices)) if d not in dev]
    if not free:
        return
    load = [u.compute_prefix[dev[s], b[s + 1]] - u.compute_prefix[dev[s], b[s]]
            for s in range(len(dev))]
    for k in sorted(range(len(dev)), key=lambda s: (-load[s], s)):
        lo, hi = b[k], b[k + 1]
        if hi - lo < 2:
            continue
        half = (u.compute_prefix[dev[k], lo] + u.compute_prefix[dev[k], hi]) / 2
        x = min(range(lo + 1, hi), key=lambda x: (abs(u.compute_prefix[dev[k], x] - half), x))
        yield Split((*b[:k + 1], x, *b[k + 1:]), (*dev[:k + 1], free[0], *dev[k + 1:]))


def refine_pipedp(problem: Problem, pipeline: Pipeline, cells: float, time_limit_s: float,
                  share: float, deadline: float = math.inf, keep: int = 3) -> Refined | None:
    """`refine` from the `keep` best of pipedp's candidates (`splitdp.split_candidates` with
    `cells`, cached) by their simulated iteration, within `share` of the time limit's
    simulation budget (`clock.simulation_budget`; the candidates are simulated best
    estimate first, as pipedp does, and count in it); None where the graph's copies pass
    `pipedp.MAX_SIMULATED_OPS` (pipedp compared by the estimate), under a limit of 0 (no
    search: module docstring) or where nothing fits."""
    copies = pipeline.microbatches * len(problem.graph.ops)
    if copies > pipedp.MAX_SIMULATED_OPS or time_limit_s <= 0:
        return None
    sims = max(1, clock.simulations(share * clock.simulation_budget(time_limit_s), copies))
    found = sorted((f for fs in splitdp.split_candidates(problem, pipeline, cells=cells).values()
                    for f in fs),
                   key=lambda f: (pipedp.estimate(problem, pipeline, f.split), f.period_s,
                                  f.split.stages))
    runs = {f: run_pipeline(problem, f.split.placement(problem), pipeline).iteration_s
            for f in found[:max(keep, sims // 2)]}
    starts = [f.split for f in sorted(runs, key=lambda f: (runs[f], f.period_s,
                                                           f.split.stages))[:keep]]
    most = splitdp.most_stages(problem, pipeline, units(problem).count)
    return refine(problem, pipeline, starts, max(sims - len(runs), 1), deadline, most)


def refine_fallback(problem: Problem, found: Solution, time_limit_s: float, share: float,
                    deadline: float = math.inf) -> tuple[Solution | None, bool]:
    """`auto` under `interleaved`: pipedp's split of one stage per device for the schedule's
    fallback (`found`, `pipedp.fallback_split`) with its cuts moved under the fallback, as
    `auto` moves a 1F1B split's (`refine` from it, within `share` of the time limit's
    simulations), None where no move ran faster, or none ran (as `refine_pipedp`); and
    whether the wall clock cut the climb (then a faster split may have been missed, the
    plan `auto` keeps may differ from run to run, and `auto` says so, also where None)."""
    one = pipedp.fallback_pipeline(problem.pipeline or Pipeline())
    if one is None or time_limit_s <= 0:
        return None, False
    copies = one.microbatches * len(problem.graph.ops)
    if copies > pipedp.MAX_SIMULATED_OPS:
        return None, False
    sims = max(1, clock.simulations(share * clock.simulation_budget(time_limit_s), copies))
    start = split_of(problem, found.plan.placement)
    most = splitdp.most_stages(problem, one, units(problem).count)
    moved = refine(problem, one, [start], sims, deadline, most)
    if moved is None or moved.split == start:
        return None, moved is not None and moved.cut
    info = {**found.info, "period_s": resource_loads(problem, moved.split).period_s,
            "stages": moved.split.stages,
            "cut_moves": f"{moved.simulations} simulation(s) under {one.schedule}" + (
                f"; {CUT}: this plan may differ from run to run" if moved.cut else "")}
    return dataclasses.replace(found, plan=Plan(moved.split.placement(problem),
                                                algorithm="pipedp"),
                               info=MappingProxyType(info)), moved.cut
