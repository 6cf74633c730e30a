"""`auto` under `objective pipeline` (`Problem.pipeline`; `auto.place` hands it here): it
runs `pipedp` (its candidates per stage count, the least period exact for its model:
`planner.algorithms.pipedp`, its work and chains sized to the limit), the uniform split,
and the cut moves of `pipecuts` from pipedp's
best candidates (judged by the simulated iteration, within half the limit's simulations),
and `--algo hybrid`'s plan (its layouts on devices in the cluster's order, replicated
under `data_parallel auto`, and pipedp's split with hybrid's cut moves; on big graphs only
under `data_parallel auto`, as hybrid's estimate is another measure), and keeps the one
whose simulated (on big graphs: estimated, and no cut moves) iteration is shortest among
those that fit: never slower than a uniform split that fits, nor, at the default limit
and at 0, than `pipedp` or `hybrid` (below, their work is sized to the limit:
`splitdp.cells_for`, `HYBRID_SHARE`, `HYBRID_CUTS`; `--algo pipedp` and `--algo hybrid`
take no limit). Under
`interleaved`, where simulated, pipedp's split of one stage per device for the fallback
1F1B (`pipedp.fallback_split`, `FALLBACK_SHARE` of pipedp's work and simulations; its cuts
moved under 1F1B, `pipecuts.refine_fallback`; or, where faster, that split as `--algo
pipedp` plans it at the default limit: `fallback_work`) is a candidate, judged as the others; it and
hybrid's may run as 1F1B (`info["why"]`); `info["candidates"]` has their iterations (pipedp's
search's split there named `INTERLEAVED`: `--algo pipedp` may return the other). Where
pipedp finds no split (its E707), it keeps the fastest of the uniform split, where that fits
and keeps the pins, the best contiguous split that fits with its devices recomputing
(`pipeilp.recomputing`, no solver, its DP's work sized to the limit,
`pipeilp.contiguous.cells_for`: `info["recompute"]` names the devices that recompute),
hybrid's layouts, and under `interleaved` pipedp's split of one stage per device (1F1B holds
fewer micro-batches), or where none of those fits the best such split with its devices
recomputing (`pipeilp.recomputing_one_per_device`), and says E707 only where none fits.
Where the memory caps shaped pipedp's split (its `memory_note`), that recomputing split
is a candidate too, where it recomputes (`pipeilp.recomputing_candidate`). Under
`data_parallel N` it plans hybrid's N replicas a stage, or where hybrid's DP finds none
that fits, pipeilp's N identical pipelines recomputing (`_identical`).

Split from `auto` (its makespan phases) as the pipeline candidates grew; `auto.place`
calls `place` here, so `--algo auto` is one algorithm to users.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ..errors import InfeasibleError, PlannerError
from ..model import Pipeline, Problem
from ..pipeline import splitdp
from ..pipeline.schedule import run_fits
from ..pipeline.split import fits, off_devices, runs_as, split_of, stage_bytes
from ..plan import Plan
from ..units import format_seconds
from . import clock, pipecuts, pipedp, pipehybrid, pipeilp
from .base import Options, Solution
from .baselines.uniform import place as run_uniform
from .clock import CUT, NO_SEARCH, cap, cut_reason
from .pipeilp import contiguous

__all__ = ["ONE_PER_DEVICE", "RECOMPUTING", "climbs_cut", "clock_note", "place"]

log = logging.getLogger("planner")

#: the share of the time limit's simulations (`clock.simulation_budget`) that the cut
#: moves get under `objective pipeline` (pipedp's candidates take another)
CUT_SHARE = 0.5

#: `info["chosen"]` of the recomputing contiguous split under `objective pipeline`
RECOMPUTING = "recomputing contiguous split"
#: `info["chosen"]` under `interleaved` of pipedp's split of one stage per device (which
#: runs as 1F1B), and the share of pipedp's work and simulations it gets, its cut moves
#: that of theirs
ONE_PER_DEVICE = "pipedp, one stage per device"
FALLBACK_SHARE = 0.25
#: the limit, as a multiple of auto's, whose DP work (`splitdp.cells_for`) that split gets
#: a second time (`fallback_work`), as a candidate too: at the default limit `MAX_CELLS`,
#: what `--algo pipedp` plans it with, so that auto is no slower (with a quarter of the
#: limit's work alone, Inception-v3's PipeDream profile on a DGX-1, interleaved, ran
#: 1.563 s, pipedp's 1.504 s). A DP of one stage per device costs less a cell than the
#: interleaved search's: 5.6e8 cells in 2.0 s there, the search's 3e8 in 2.4 s
FALLBACK_WORK = 2.0
#: `info["chosen"]` under `interleaved` of pipedp's search's split (`searched_name`)
INTERLEAVED = "pipedp, interleaved"
#: how `info["reason"]` names the climbs the wall clock cut (`clock_note`)
FROM_CANDIDATES = "pipedp's candidates"
FROM_ONE_PER_DEVICE = "pipedp's split of one stage per device"
#: the share of the limit's simulations each of hybrid's cut moves get (`pipehybrid.refine`,
#: 30,000 copied ops at most: those at 10 s), and its DP's cuts a second (400 at most, at 2 s)
#: where a cut's work is `HYBRID_REFERENCE_WORK`, fewer where more (`_hybrid_work`)
HYBRID_SHARE, HYBRID_CUTS = 0.125, 200


def place(problem: Problem, options: Options, left_out: bool = False,
          climbs_cut: list[str] | None = None) -> Solution:
    """Under `objective pipeline`: pipedp's split (its work sized to the time limit,
    `splitdp.cells_for`), the uniform split, pipedp's best candidates with their cuts
    moved by the simulated iteration (`pipecuts`, a share of the limit's simulations), or
    hybrid's plan (`_hybrid`), whichever fits and runs fastest. Faster: by the simulated
    iteration; where the M copies of the graph pass `pipedp.MAX_SIMULATED_OPS` ops, by
    `pipedp.estimate` (and no cut moves), so that the time limit holds on big graphs too
    (a simulation of 800k ops takes seconds). The chains pipedp's work left out it
    searches only where no other plan fits (`left_out`), before E707. `climbs_cut`, where
    given, gains the climbs the wall clock cut, and `reason` leaves them to the caller
    (`search`, which says it once with its own cuts); else `reason` says them."""
    pipeline = problem.pipeline
    assert pipeline is not None
    if pipeline.data_parallel not in (1, "auto"):  # N identical pipelines: nothing to compare
        return _identical(problem, options)
    deadline = cap(options.time_limit_s)
    cells = splitdp.cells_for(options.time_limit_s)
    try:
        # its E707's hints are drawn where auto raises it (`_no_split`), not where it plans
        searched = pipedp.search_within(problem, options, cells, left_out, hints=_undrawn)
    except InfeasibleError as err:
        return _no_split(problem, options, err, (deadline, climbs_cut))
    best = searched.solution
    uniform = run_uniform(problem, options)
    simulated = pipeline.microbatches * len(problem.graph.ops) <= pipedp.MAX_SIMULATED_OPS
    refined = pipecuts.refine_pipedp(problem, pipeline, cells, options.time_limit_s,
                                     CUT_SHARE, deadline)
    cut = [FROM_CANDIDATES] if refined is not None and refined.cut else []
    plans = [(searched_name(pipeline), best), ("uniform", uniform)]
    if refined is not None:
        plans.append(("pipedp, cuts moved", dataclasses.replace(
            best, plan=Plan(refined.split.placement(problem), algorithm="pipedp"))))
        best = dataclasses.replace(best, info=MappingProxyType({
            **best.info, "cut_moves": f"{refined.simulations} simulation(s)" + (
                f"; {CUT}: this plan may differ from run to run" if refined.cut else "")}))
    elif options.time_limit_s <= 0:
        best = dataclasses.replace(best, info=MappingProxyType({**best.info,
                                                                "cut_moves": NO_SEARCH}))
    figures = {name: _iteration(problem, plan.plan.placement, pipeline, simulated)
               for name, plan in plans}
    chosen = searched_name(pipeline)
    for name, plan in plans[1:]:  # only a plan that fits and runs faster
        if figures[name][1] and figures[name][0] < figures[chosen][0]:
            best, chosen = dataclasses.replace(plan, info=best.info), name
    if simulated and "memory_note" in searched.solution.info:  # the caps shaped the split
        redo = pipeilp.recomputing_candidate(
            problem, contiguous.cells_for(options.time_limit_s))
        if redo is not None:
            figures[RECOMPUTING] = (redo.info["iteration_s"], True)
            if figures[RECOMPUTING][0] < figures[chosen][0]:
                best = dataclasses.replace(redo, plan=redo.plan.with_algorithm("auto"))
                chosen = RECOMPUTING
    if pipeline.data_parallel == "auto" or simulated:  # hybrid's layouts, if faster
        best, chosen = _with_hybrid(problem, options, searched, simulated, figures,
                                    (best, chosen))
    best, chosen = _one_per_device(problem, options, simulated, figures, (best, chosen),
                                   (deadline, cut))
    info = _chosen_info(problem, searched, best, chosen, figures, simulated)
    return dataclasses.replace(best, info=MappingProxyType(_clock_noted(info, cut, climbs_cut)))


def searched_name(pipeline: Pipeline) -> str:
    """The candidate name of pipedp's search's split: "pipedp", but under a schedule with
    a fallback (`interleaved`) `INTERLEAVED`, as `--algo pipedp` may return its split for
    the fallback there (`ONE_PER_DEVICE`, its own candidate): on a graph too small to
    interleave this split ran 1.64 s, `--algo pipedp`'s plan 1.385 s."""
    return "pipedp" if pipedp.fallback_pipeline(pipeline) is None else INTERLEAVED


def _with_hybrid(problem: Problem, options: Options, searched: pipedp.Searched,
                 simulated: bool, figures: dict[str, tuple[float, bool]],
                 kept: tuple[Solution, str]) -> tuple[Solution, str]:
    """`kept` (the plan so far, its name) or hybrid's plan (`_hybrid`), where it fits and
    runs faster, or `kept` does not fit. `figures` gains its iteration. Hybrid moves the
    cuts of the split `--algo pipedp` returns, as `--algo hybrid` does: under
    `interleaved`, pipedp's split of one stage per device where pipedp keeps it
    (`pipedp.kept_fallback`); it had the interleaved split, and at `--time-limit 0`, where
    auto moves no cuts, its plan was slower than `--algo hybrid`'s (84.86 against 83.79
    ms, `tests/pipeline/test_auto_never_loses.py`)."""
    split = pipedp.kept_fallback(problem, searched, splitdp.cells_for(options.time_limit_s))
    mixed = _hybrid(problem, options, split.plan.placement, simulated)
    figures["hybrid"] = (math.inf, False) if mixed is None else (
        mixed.info["iteration_s"], True)
    chosen = kept[1]
    if mixed is not None and (not figures[chosen][1]
                              or figures["hybrid"][0] < figures[chosen][0]):
        return mixed, "hybrid"
    return kept


def _one_per_device(problem: Problem, options: Options, simulated: bool,
                    figures: dict[str, tuple[float, bool]], kept: tuple[Solution, str],
                    clock: tuple[float, list[str]]) -> tuple[Solution, str]:
    """`kept` (the plan so far, its name) or, where it fits and runs faster by the simulated
    iteration than every other candidate that fits, pipedp's split of one stage per device
    (`_fallback_split`, its wall-clock `deadline` and list of cut climbs: `clock`).
    `figures` gains its iteration, unless it is `kept`'s plan."""
    found = _fallback_split(problem, options, *clock) if simulated else None
    if found is None or found[0].plan.placement == kept[0].plan.placement:  # the same plan
        return kept
    other = _fastest_other(figures, ONE_PER_DEVICE)
    figures[ONE_PER_DEVICE] = found[1:]
    if found[2] and (not other[1] or found[1] < other[0]):
        return found[0], ONE_PER_DEVICE
    return kept


def _fallback_split(problem: Problem, options: Options, deadline: float, cut: list[str],
                    ) -> tuple[Solution, float, bool] | None:
    """Under `interleaved`: pipedp's split of one stage per device for the fallback, 1F1B
    (`pipedp.fallback_split`, `FALLBACK_SHARE` of pipedp's work and simulations), its cuts
    moved under 1F1B (`pipecuts.refine_fallback`), or that split as `--algo pipedp` plans
    it (`fallback_work`), whichever fits and is fastest (ties: the first); its simulated
    iteration under the plan's schedule, and whether it fits; None where there is none.
    `cut` gains `FROM_ONE_PER_DEVICE` where the wall clock cut that climb."""
    pipeline = problem.pipeline or Pipeline()
    limit = options.time_limit_s
    found = pipedp.fallback_split(problem, FALLBACK_SHARE * splitdp.cells_for(limit),
                                  FALLBACK_SHARE * clock.simulation_budget(limit))
    theirs = pipedp.fallback_split(problem, *fallback_work(limit))
    moved = None
    if found is not None:
        moved, stopped = pipecuts.refine_fallback(problem, found, limit,
                                                  FALLBACK_SHARE * CUT_SHARE, deadline)
        if stopped:
            cut.append(FROM_ONE_PER_DEVICE)
    runs = [(plan, *_iteration(problem, plan.plan.placement, pipeline, True))
            for plan in (found, moved, theirs) if plan is not None]  # moved: if fits, faster
    return min(runs, key=lambda run: (not run[2], run[1]), default=None)


def fallback_work(time_limit_s: float) -> tuple[float, float]:
    """The DP work (`FALLBACK_WORK`) and simulations (the limit's, as `--algo pipedp` gives
    them where no interleaved split fits) of pipedp's split of one stage per device as
    `--algo pipedp` plans it at the default limit (and at 0)."""
    limit = FALLBACK_WORK * time_limit_s
    return splitdp.cells_for(limit), clock.simulation_budget(time_limit_s)


def _hybrid(problem: Problem, options: Options, split: tuple[int, ...] | None,
            simulated: bool) -> Solution | None:
    """`--algo hybrid`'s plan (None where no layout fits; its work sized to the limit): its
    layouts (replicated stages under `data_parallel auto`; one device a stage in the
    cluster's order, which under `interleaved` runs as 1F1B), and pipedp's `split` with
    hybrid's cut moves where both are simulated (pipedp's estimate, hybrid's DP cost differ)."""
    moves, cuts = _hybrid_work(problem, options.time_limit_s)
    pipeline = problem.pipeline or Pipeline()
    runs = clock.simulations(clock.simulation_budget(options.time_limit_s),
                              pipeline.microbatches * len(problem.graph.ops))
    try:
        return pipehybrid.place(problem, options, pure=simulated and split is not None,
                                split=split, moves=moves, cuts=cuts, runs=runs, explain=False)
    except InfeasibleError:  # no layout fits: the pure pipeline's verdict stands
        return None


def _hybrid_work(problem: Problem, limit: float) -> tuple[float, int]:
    """The copied ops each of hybrid's cut moves may simulate under `auto`'s limit, and its
    DP's cuts: `HYBRID_SHARE` and `HYBRID_CUTS` of it, fewer where the replica counts the
    DP tries make a cut's work (`hybrid_work_per_cut`) more than the
    `HYBRID_REFERENCE_WORK` those cuts were sized on; at most (and at 0) `hybrid`'s own."""
    cuts = pipehybrid.MAX_CUTS
    if limit > 0:
        pipeline = problem.pipeline or Pipeline()
        scale = min(1.0, HYBRID_REFERENCE_WORK / hybrid_work_per_cut(problem, pipeline))
        cuts = min(cuts, int(HYBRID_CUTS * limit * scale))
    return min(pipehybrid.REFINE_COPIED_OPS, HYBRID_SHARE * clock.simulation_budget(limit)), cuts


#: the hybrid DP's work per candidate cut where 8 devices of distinct links take one replica
#: a stage (8 passes, 36 stage costs: what `HYBRID_CUTS` was sized on); a stage cost of r > 1
#: replicas counts `REPLICATED_COST` (its all-reduce and DDP bucket: 86 us against 45 on
#: Inception-v3 on a DGX-1)
HYBRID_REFERENCE_WORK, REPLICATED_COST = 36.0, 2.0


def hybrid_work_per_cut(problem: Problem, pipeline: Pipeline) -> float:
    """The stage costs the hybrid DP evaluates per candidate cut (`pipehybrid._dp`: per pass,
    count of devices left and replica count it tries), a replicated one `REPLICATED_COST`."""
    m = len(problem.cluster.devices)
    passes = [m] if pipehybrid.one_pass(problem) else range(1, m + 1)
    return sum(1.0 if r == 1 else REPLICATED_COST for used in passes
               for p in range(1, used + 1) for r in pipehybrid.replica_counts(p, pipeline))


def _identical(problem: Problem, options: Options) -> Solution:
    """Under `data_parallel N`: hybrid's plan of N replicas a stage; where its DP finds
    none that fits (it recomputes nothing), pipeilp's N identical pipelines with their
    devices recomputing, from its warm starts alone (a limit of 0: no solver); else
    hybrid's E712 (before: E712 where that plan fits)."""
    try:
        fixed = pipehybrid.place(problem, options)
    except InfeasibleError as err:
        try:
            fixed = pipeilp.place(problem, dataclasses.replace(options, time_limit_s=0.0))
        except PlannerError:
            raise err from None
        return dataclasses.replace(fixed, status="feasible", info=MappingProxyType({
            **fixed.info, "chosen": RECOMPUTING, "compared_by": "simulated iteration",
            "candidates": {RECOMPUTING: fixed.info["iteration_s"]},
            "reason": f"hybrid's DP finds no layout that fits ({err.diagnostics[-1].code}; it "
                      "recomputes nothing): pipeilp's identical pipelines, their devices "
                      "recomputing, from its warm starts (no solver)"}))
    return dataclasses.replace(fixed, info=MappingProxyType({
        **fixed.info, "chosen": "hybrid", "compared_by": "simulated iteration",
        "candidates": {"hybrid": fixed.info["iteration_s"]}}))


def _no_split(problem: Problem, options: Options, err: InfeasibleError,
              clock: tuple[float, list[str] | None]) -> Solution:
    """Where pipedp finds no split (its E707): the uniform split where it fits and keeps
    the pins (one pipedp's chains can miss: under `interleaved`, stages that repeat no
    chain), or the best contiguous split that fits with its devices recomputing where
    that makes them fit (`pipeilp.recomputing`), or under `data_parallel auto` the hybrid
    layout, whichever simulates faster; under `interleaved`, where none of those fits and
    no chain holds a split, the recomputing split of one stage per device, run as 1F1B;
    else pipedp's diagnosis stands. `clock`: the wall clock's deadline, and `place`'s
    `climbs_cut`."""
    until, climbs_cut = clock
    pipeline = problem.pipeline or Pipeline()
    simulated = pipeline.microbatches * len(problem.graph.ops) <= pipedp.MAX_SIMULATED_OPS
    plans: dict[str, tuple[float, Solution]] = {}
    uniform = run_uniform(problem, options)
    iteration, ok = _iteration(problem, uniform.plan.placement, pipeline, simulated)
    if ok:
        plans["uniform"] = (iteration, dataclasses.replace(uniform, info=MappingProxyType({
            **uniform.info, "why": f"pipedp found no split ({err.diagnostics[0].message}); "
                                   "the uniform split fits"})))
    try:
        found = pipeilp.recomputing(problem, err, contiguous.cells_for(options.time_limit_s),
                                    splitdp.cells_for(options.time_limit_s))
    except InfeasibleError:
        pass
    else:  # no solver ran: auto's own plan, as where the memory shaped pipedp's split
        plans[RECOMPUTING] = (found.info["iteration_s"], dataclasses.replace(
            found, plan=found.plan.with_algorithm("auto")))
    if pipeline.data_parallel == "auto" or simulated:  # replicas hold fewer micro-batches
        mixed = _hybrid(problem, options, None, simulated)
        if mixed is not None:
            replicated = any(r > 1 for r in mixed.info.get("layout") or ())
            plans["hybrid"] = (mixed.info["iteration_s"], dataclasses.replace(
                mixed, info=MappingProxyType({**mixed.info, "why": (
                    f"pipedp found no split ({err.diagnostics[0].message}); "
                    + ("its replicated stages fit" if replicated else
                       "hybrid's split (no stage replicated) fits")
                    + _runs_as(problem, mixed.plan.placement, replicated))})))
    cut: list[str] = []
    one = _fallback_split(problem, options, until, cut) if simulated else None
    if one is not None and one[2]:  # 1F1B holds fewer micro-batches than `interleaved`
        plans[ONE_PER_DEVICE] = (one[1], dataclasses.replace(one[0], info=MappingProxyType({
            **one[0].info, "why": f"pipedp found no split ({err.diagnostics[0].message}); "
                                  "its split of one stage per device fits"
                                  + _runs_as(problem, one[0].plan.placement)})))
    if not plans:
        return _none_fits(problem, options, err, simulated, (cut, climbs_cut))
    return _chosen(plans, simulated, cut, climbs_cut)


def _chosen(plans: Mapping[str, tuple[float, Solution]], simulated: bool, cut: Sequence[str],
            climbs_cut: list[str] | None) -> Solution:
    """The fastest of `_no_split`'s candidates (name -> (iteration, plan)), its info saying
    which, how they were compared and what the wall clock cut."""
    chosen = min(plans, key=lambda name: plans[name][0])
    best = plans[chosen][1]
    return dataclasses.replace(best, info=MappingProxyType(_clock_noted({
        **best.info, "chosen": chosen, "iteration_s": plans[chosen][0],
        "compared_by": "simulated iteration" if simulated else "estimated iteration",
        "candidates": {name: plan[0] for name, plan in plans.items()}}, cut, climbs_cut)))


def _none_fits(problem: Problem, options: Options, err: InfeasibleError, simulated: bool,
               cuts: tuple[Sequence[str], list[str] | None]) -> Solution:
    """Where none of `_no_split`'s candidates fits: where pipedp's limited chains held no
    split (`ChainsLeftOut`), the others searched (their search derived once) and planned
    again where one holds a split; then, under `interleaved`, the recomputing split of one
    stage per device (`_recomputing_one_per_device`); else pipedp's E707, its hints drawn.
    `cuts`: the climbs the wall clock cut, and `place`'s `climbs_cut`."""
    cut, climbs_cut = cuts
    if isinstance(err, pipedp.ChainsLeftOut):  # the rest, before E707
        try:
            pipedp.search_within(problem, options, splitdp.cells_for(options.time_limit_s),
                                 hints=_undrawn)
        except InfeasibleError as every:  # no chain holds a split
            err = every
        else:
            return place(problem, options, True, climbs_cut)
    plans = _recomputing_one_per_device(problem, options, err) if simulated else {}
    if not plans:
        _drawn(problem, options)
        raise err  # a proof, drawn as it was
    return _chosen(plans, simulated, cut, climbs_cut)


def _recomputing_one_per_device(problem: Problem, options: Options, err: InfeasibleError
                                ) -> dict[str, tuple[float, Solution]]:
    """Under `interleaved`, where no other candidate fits: the recomputing split of one
    stage per device, run as 1F1B (`pipeilp.recomputing_one_per_device`), as auto's
    candidate; empty where none fits."""
    redo = pipeilp.recomputing_one_per_device(
        problem, f"pipedp found no split ({err.diagnostics[0].message}); its split of one "
        "stage per device fits recomputing activations", contiguous.cells_for(
            options.time_limit_s))
    if redo is None:
        return {}
    why = redo.info["why"] + _runs_as(problem, redo.plan.placement)
    return {RECOMPUTING: (redo.info["iteration_s"], dataclasses.replace(
        redo, plan=redo.plan.with_algorithm("auto"),
        info=MappingProxyType({**redo.info, "why": why})))}


def _undrawn() -> tuple[str, ...]:
    """pipedp's E707 without its hints, where `auto` may yet plan (`_drawn` draws them)."""
    return ()


def _drawn(problem: Problem, options: Options) -> None:
    """Raise pipedp's E707 (every chain searched, its search derived once), its hints
    drawn: no hint naming auto (auto compares that split itself), each change checked by
    the recomputing contiguous split too, which auto plans where it fits (`pipehints`)."""
    cells = contiguous.cells_for(options.time_limit_s)
    pipedp.search_within(problem, options, splitdp.cells_for(options.time_limit_s),
                         name_auto=False,
                         recomputing=lambda one: pipeilp.recomputing_stages(one, cells))


def _clock_noted(info: Mapping[str, Any], cut: Sequence[str],
                 climbs_cut: list[str] | None) -> Mapping[str, Any]:
    """`clock_note(info, cut)`, or, where the caller says the cuts itself (`climbs_cut`
    given), `info` as it is, `climbs_cut` gaining `cut`."""
    if climbs_cut is None:
        return clock_note(info, cut)
    climbs_cut.extend(cut)
    return info


def clock_note(info: Mapping[str, Any], cut: Sequence[str]) -> dict[str, Any]:
    """`info`, its `reason` beginning with `CUT` where the wall clock cut the climbs of
    `cut` (`FROM_CANDIDATES`, `FROM_ONE_PER_DEVICE`): a climb run to its budget might have
    found a faster candidate, so the plan kept (whichever) may differ from run to run. The
    text output shows `reason` (a climb's own `cut_moves` note only `--json`)."""
    if not cut:
        return dict(info)
    return {**info, "reason": cut_reason([climbs_cut(cut)], info.get("reason"))}


def climbs_cut(cut: Sequence[str]) -> str:
    """Where the wall clock cut the climbs of `cut`, in the words that follow `CUT`."""
    return f"in the cut moves from {' and from '.join(cut)}"


def _chosen_info(problem: Problem, searched: pipedp.Searched, best: Solution, chosen: str,
                 figures: dict[str, tuple[float, bool]], simulated: bool) -> dict[str, Any]:
    """`info` of the plan `_pipeline` chose: its own figures and pipedp's notes drawn again
    where it replaced pipedp's split (`pipedp.notes_for`), and why it won."""
    what = ("simulated iteration" if simulated else
            "estimated iteration, (M - 1) T plus each stage's load once")
    pipeline = problem.pipeline or Pipeline()
    searched_s = format_seconds(figures[searched_name(pipeline)][0])
    # under `interleaved` `--algo pipedp` may return its split for 1F1B: name the search's
    split = "pipedp's split" if searched_name(pipeline) == "pipedp" else (
        "pipedp's interleaved split")
    info = {**best.info, "chosen": chosen, "compared_by": what,
            "iteration_s": figures[chosen][0],
            "candidates": {name: f[0] for name, f in figures.items()}}
    if chosen in ("uniform", "pipedp, cuts moved"):  # pipedp's notes were on its own split
        info = {k: v for k, v in info.items() if k not in ("memory_note", "stages_note")}
        info.update(pipedp.notes_for(problem, searched, best.plan.placement,
                                     figures[chosen][0] if simulated else None))
    if chosen == "uniform":
        info["why"] = (f"the uniform split fits and runs faster by the {what} "
                       f"({format_seconds(figures['uniform'][0])}, {split} "
                       f"{searched_s})")
    if chosen == "hybrid":
        info["why"] = _why_hybrid(problem, best.plan.placement, info, figures, simulated)
    if chosen == ONE_PER_DEVICE:
        info["why"] = _why_one_per_device(problem, best.plan.placement, figures, info)
    if chosen == RECOMPUTING:
        info["why"] = (f"recomputing activations on {', '.join(info['recompute'])} runs "
                       f"faster by the {what} ({format_seconds(figures[chosen][0])}) than "
                       f"{split}, which the memory shaped ({searched_s})")
    return info


def _why_hybrid(problem: Problem, placement: tuple[int, ...], info: dict[str, Any],
                figures: dict[str, tuple[float, bool]], simulated: bool) -> str:
    """Why `auto` keeps `--algo hybrid`'s plan over its other candidates, and, under
    `interleaved`, where that plan runs as 1F1B (the schedule's fallback), that it does."""
    replicated = any(r > 1 for r in info.get("layout") or ())
    layout = (f"replicated stages ({info.get('layout')} replicas per stage)" if replicated
              else "hybrid's split (no stage replicated)")
    runs_as = _runs_as(problem, placement, replicated)
    pure = _fastest_other(figures, "hybrid")
    if not pure[1]:
        return (f"{layout} {'fit' if replicated else 'fits'} the memory, and no other split "
                f"does{runs_as}")
    how = ("the simulated iteration" if simulated else
           "estimates (the hybrid DP's cost, the pipeline's (M - 1) T plus each stage's load)")
    faster = "faster" if figures["hybrid"][0] < pure[0] else "as fast"  # a tie, kept first
    return (f"{layout} {'run' if replicated else 'runs'} {faster} by {how}: "
            f"{format_seconds(figures['hybrid'][0])}, against {format_seconds(pure[0])} (the "
            f"fastest of auto's other candidates that fit){runs_as}")


def _why_one_per_device(problem: Problem, placement: tuple[int, ...],
                        figures: dict[str, tuple[float, bool]], info: dict[str, Any]) -> str:
    """Why `auto` keeps pipedp's split of one stage per device, run as the fallback (1F1B)."""
    fallback = (problem.pipeline or Pipeline()).schedule_spec.fallback
    what = (f"pipedp's split of one stage per device (planned for {fallback}"
            f"{', its cuts moved under it' if 'cut_moves' in info else ''})")
    other = _fastest_other(figures, ONE_PER_DEVICE)
    if not other[1]:
        return f"{what} fits the memory, and no other split does{_runs_as(problem, placement)}"
    return (f"{what} runs faster by the simulated iteration: "
            f"{format_seconds(figures[ONE_PER_DEVICE][0])}, against "
            f"{format_seconds(other[0])} (the fastest of auto's other candidates that fit)"
            f"{_runs_as(problem, placement)}")


def _fastest_other(figures: dict[str, tuple[float, bool]], name: str) -> tuple[float, bool]:
    """The figures of the fastest candidate but `name` that fits (of the fastest of all,
    where none fits)."""
    return min((f for other, f in figures.items() if other != name),
               key=lambda f: (not f[1], f[0]), default=(math.inf, False))


def _runs_as(problem: Problem, placement: tuple[int, ...], replicated: bool = False) -> str:
    """'; it runs as 1f1b: ...' where the plan runs as its schedule's fallback (its stages
    replicated, or not K per device in a repeating chain), else ''."""
    pipeline = problem.pipeline or Pipeline()
    ran = runs_as(split_of(problem, placement), pipeline, replicated)
    if ran is pipeline:
        return ""
    if ran.schedule == pipeline.schedule:  # another count a device (`runs_as`)
        return (f"; it runs {ran.stages_per_device} stages per device, not "
                f"{pipeline.stages_per_device}")
    return f"; it runs as {ran.schedule}: its stages are " + (
        "replicated" if replicated else
        f"not {pipeline.per_device} per device in a repeating chain")


def _iteration(problem: Problem, placement: tuple[int, ...], pipeline: Pipeline,
               simulated: bool) -> tuple[float, bool]:
    """The plan's iteration (simulated, or estimated) and whether it fits the memory
    with every op on a device it may use (the uniform split reads no pins)."""
    if simulated:
        return run_fits(problem, placement, pipeline)
    split = split_of(problem, placement)
    held = stage_bytes(problem, split, pipeline)
    iteration = pipedp.estimate(problem, pipeline, split)
    return iteration, fits(problem, held) and not off_devices(problem, placement)
