"""`auto`: the fast heuristics and baselines, a search from the best of them, then CP-SAT
on small graphs.

1. `portfolio.rank`: run the registry's constructive algorithms (today `msct`, `metf`,
   `mtopo`, `heft`, `cpop`, `single` and `roundrobin`, in registry order), skipping any
   that raises `InfeasibleError`, plus `Options.warm_start` when one is given; each plan
   is simulated under the problem's own contention and memory model; the best feasible
   makespan wins, ties by registry order. With a time limit above 0, the candidates run
   are those whose expected times (`portfolio.estimated_seconds`, from the graph's size,
   m-SCT's LP at its worst) fit in the limit together, the fastest first
   (`portfolio.within`); the others are skipped, each reason in `info["skipped"]`; the
   fastest always runs,
   and where no candidate run found a plan, the skipped ones run, fastest first, until
   one does (a plan past the limit, not a false "nothing fits").
2. With more than one device and a time limit above 0: `search.improve` from that plan
   (name-prefix groups, then units; the simulator is the objective) for a budget of moves
   worth what the heuristics are expected to leave of the time limit (of `SEARCH_SHARE`
   of it when CP-SAT follows), stopping early once
   `min(STALL_MAX, max(STALL_MIN, budget // STALL_DIVISOR))` moves in a row found nothing
   better: a search
   that has stopped paying does not spend the user's time. On Baechi's GNMT graph, where
   every heuristic is slower than one GPU, this is what finds a faster multi-GPU plan.
   When a search stops early with moves left (stalled, or every neighbour seen), the
   next-best feasible plan whose placement no search has started from gets the moves
   left, with the same stall rule, and so on while moves and plans remain; the fastest
   result wins, ties to the earlier start. The first search is the one that ran alone
   before, so later starts can only make the search phase's plan faster (CP-SAT's share
   still follows whether that first search improved the plan; on graphs of at most
   `CPSAT_MAX_OPS` ops CP-SAT then starts from the faster plan, and what it finds from
   there is not bound to beat what it found from the old one). On Inception-v2 at 36% of small4's
   memory the search from cpop's plan (the best, 121.42 ms) stalls at 121.17 ms after
   4,379 of 38,752 moves; from m-SCT's (the fourth) the moves left reach 92.68 ms.
   Later starts run only where the stall rule has reached `STALL_MAX` (budgets from
   `STALL_MAX * STALL_DIVISOR` moves): below, a larger budget lets the first search stall
   later and could leave the next start fewer moves, so more time could give a worse plan.
3. When the graph has at most `CPSAT_MAX_OPS` ops, more than one device, and
   `Options.time_limit_s` is at least `CPSAT_MIN_S`, run `cpsat` warm-started from the
   best plan so far with the rest of the time limit (its work budget counts the
   preparation by the model's size, `exact/budget.py`); its plan replaces the best only
   when it simulates strictly faster (CP-SAT optimises contention `none`; the simulator
   has the last word).

4. Under `memory liveness`, when phases 1-3 found no plan and `planner.facts` proves
   nothing: `enumeration` (every placement and per-device order, judged by the
   simulator, in a budget of simulations set by the time limit). Every other phase checks
   static memory first, stricter than the liveness peaks, and on small instances all of
   them can miss the valid plans (5 of 95 tight seeded instances with a plan,
   `tests/algorithms/test_enumeration.py`, raised E818). Its fastest plan is returned,
   `optimal` when the enumeration covered every plan (its makespan is then a lower bound);
   having covered every plan and found none, `auto` raises E819, a proof; cut by the time
   limit first, E821 (exit 6: no proof, a longer limit tries more). It runs only where
   `auto` found no plan, so no plan `auto` returned before changes.

Nothing here depends on a clock: whether each phase runs and its budget are functions of
the problem and the options, so `auto` returns the same plan on every run. The budgets
are sized to half the time limit on an idle machine (`clock.LOAD_HEADROOM`), so that a
machine twice as slow or busy keeps both the limit and the plan; the wall clock stops the
search and CP-SAT at the limit itself (`clock.cap`), which a normal run never meets, and
`info["reason"]` says so when it does.

Thresholds (measured on this 2-core machine): CP-SAT proves 30-op instances optimal in
0.7-8 s (median 0.9 s) and improves the m-SCT plan by 11% on 100 ops within 60 s; on
ResNet-50 (177 ops) 10 s of it moved the plan by 0.03%, so larger graphs only search.

Under `objective pipeline` (`Problem.pipeline`): `autopipe` (pipedp, the uniform split, cut
moves, hybrid and their fallbacks; never slower than a uniform split that fits, nor, at
the default limit and at 0, than `pipedp` or `hybrid`).

`info`: `chosen` (the algorithm whose plan is returned), `candidates` (name -> simulated
makespan, None when infeasible or skipped; `search` and `cpsat` when they improved the
plan), `objective_s` (the returned plan's simulated makespan), `bound_s` and `gap` and the
status from `exact.verdict.judge` (the same judgement `cpsat` makes, so both print the
same status for the same plan), `why`, `search` (moves spent, or why it stopped or was
skipped; with later starts, each start's moves and why it stopped, and the start whose
search won, which the text output shows), `search_starts` (the starts searched, when more
than one), `reason` (where the wall clock cut the search) or `stopped` (where its one start
stalled: the text output shows both) and `cpsat` (its status, or why it was skipped).
"""

from __future__ import annotations

import dataclasses
import logging
from types import MappingProxyType
from typing import Any

from ..bounds import lower_bound
from ..errors import InfeasibleError, PlannerError, SearchLimitError
from ..fastsim import ready as compiled_ready
from ..model import Problem
from ..plan import Plan
from ..simulate import simulate
from . import autopipe, search
from .base import Interrupted, Options, Solution
from .clock import CUT, LOAD_HEADROOM, NO_SEARCH, cap
from .enumeration import enumerate_plans, none_enumerated, simulation_budget
from .exact import cpsat
from .exact.verdict import judge
from .infeasible import diagnose, none_found
from .portfolio import CANDIDATES, Ranked, estimated_seconds, rank
from .search import STALLED, improve, move_budget, python_budget_note, search_seconds

__all__ = ["CANDIDATES", "CPSAT_MAX_OPS", "CPSAT_MIN_S", "place"]

log = logging.getLogger("planner")

#: graphs up to this many ops get the CP-SAT phase (where it can prove optima in seconds;
#: on ResNet-50's 177 ops 10 s of it moved the plan by 0.03%, so larger graphs only search)
CPSAT_MAX_OPS = 100
#: the share of the time limit the search gets when the CP-SAT phase follows
SEARCH_SHARE = 0.3
#: the search stops after min(STALL_MAX, max(STALL_MIN, budget // STALL_DIVISOR)) moves
#: without a better plan
STALL_MIN = 200
STALL_MAX = 2000
STALL_DIVISOR = 5
#: CP-SAT runs only when the time limit is at least this (seconds)
CPSAT_MIN_S = 0.5

#: (name, simulated makespan, plan) of the best plan so far, or None when none is feasible
Best = tuple[str, float, Plan] | None


def place(problem: Problem, options: Options) -> Solution:
    """Best of the heuristics, improved by CP-SAT on small graphs (module docstring); under
    `objective pipeline`, the best contiguous split (`pipedp`); under `memory liveness`,
    where they found none and nothing proves that none exists, the enumeration's plan."""
    if problem.pipeline is not None:
        return autopipe.place(problem, options)
    warm_up(problem, options)
    deadline = cap(options.time_limit_s)
    try:
        return _place(problem, options, deadline)
    except (InfeasibleError, SearchLimitError) as error:  # E811: CP-SAT out of time
        if problem.memory_model != "liveness" or diagnose(problem):
            raise
        return _enumerated(problem, options, error, deadline)


def warm_up(problem: Problem, options: Options) -> None:
    """What the phases that will run load once, before the clock starts: the compiled
    simulator for the search (`search.warm_up`), OR-Tools for CP-SAT (`cpsat.warm_up`).
    Under `objective pipeline` nothing: its phases import nothing more."""
    if problem.pipeline is not None:
        return
    if len(problem.cluster.devices) > 1 and options.time_limit_s > 0:
        search.warm_up(problem, options)
    if _cpsat_skipped(problem, options) is None:
        cpsat.warm_up(problem, options)


def _enumerated(problem: Problem, options: Options,
                error: InfeasibleError | SearchLimitError, deadline: float) -> Solution:
    """Phase 4 (`memory liveness`, no plan found, no proof): the fastest plan of
    `enumeration`, judged as every other plan is; else E819, a proof, when it covered
    every plan, or `error` then E821 (exit 6) when the time limit cut it."""
    if options.progress:
        options.progress(0.9, "auto: enumeration")
    found = enumerate_plans(problem, simulation_budget(problem, options.time_limit_s),
                            deadline)
    if found.plan is None:
        raise none_enumerated(problem, error, found)
    # having simulated every plan, no valid plan runs faster than the fastest seen: its
    # makespan is a lower bound, valid for the problem's own model
    verdict = judge(problem, found.plan, lower_s=found.makespan_s if found.complete
                    else lower_bound(problem).makespan_s)
    covered = ("every placement and per-device order" if found.complete else
               f"the first {found.simulations} plans of the enumeration (not all of them)"
               + (f"; {CUT}: this plan may differ from run to run" if found.cut else ""))
    why = ("every placement and per-device order was simulated: no valid plan runs faster"
           if found.complete else verdict.why)
    info = {"candidates": {"enumeration": verdict.makespan_s}, "chosen": "enumeration",
            "objective_s": verdict.makespan_s, "bound_s": verdict.bound_s,
            "gap": verdict.gap, "why": why,
            "enumeration": f"{found.simulations} simulations, {covered}",
            "reason": (f"no heuristic, search or exact model found a plan whose liveness "
                       f"peaks fit ({error.diagnostics[0].code}); this is the fastest of "
                       f"{covered}")}
    log.info("auto: enumeration gives %.6g s", verdict.makespan_s)
    return Solution(found.plan, verdict.status, MappingProxyType(info))


def _place(problem: Problem, options: Options, deadline: float) -> Solution:
    """Phases 1-3 (module docstring)."""
    limit = options.time_limit_s if options.time_limit_s > 0 else None
    ranked = rank(problem, options, progress_share=0.3, limit_s=limit, until_found=True)
    candidates = dict(ranked.candidates)
    errors = list(ranked.errors)
    best = ranked.best
    cpsat_note: Any = _cpsat_skipped(problem, options)

    if best is None and cpsat_note is not None:
        raise none_found(problem, errors, tuple(ranked.skipped))

    search_note, best, searched, starts, python_budget = _search_phase(
        problem, options, ranked, candidates, best, cpsat_follows=cpsat_note is None,
        deadline=deadline)

    claims: dict[str, Any] = {"lower_s": lower_bound(problem).makespan_s,
                              "tolerance": options.gap}
    if cpsat_note is None:
        cpsat_note, best = _cpsat_phase(problem, options, candidates, errors, best, claims,
                                        deadline, searched=searched)
    assert best is not None
    name, makespan, plan = best
    verdict = judge(problem, plan, **claims)
    info = {"candidates": candidates, "skipped": dict(ranked.skipped), "chosen": name,
            "objective_s": makespan, "bound_s": verdict.bound_s, "gap": verdict.gap,
            "why": verdict.why,
            "search": search_note, "cpsat": cpsat_note}
    if isinstance(search_note, str) and search_note.startswith(CUT):
        info["reason"] = search_note  # the text output shows it, not only --json
    elif starts > 1:
        info["search_starts"] = starts  # the text output shows `search` then
    elif isinstance(search_note, str) and search_note.startswith(STALLED):
        info["stopped"] = search_note  # and this, as `search`'s own
    if python_budget:
        info["simulator"] = python_budget_note()
    log.info("auto: %s gives %.6g s", name, makespan)
    if options.progress:
        options.progress(1.0, f"auto: {name}")
    return Solution(plan, verdict.status, MappingProxyType(info))


def _cpsat_skipped(problem: Problem, options: Options) -> str | None:
    """Why the CP-SAT phase does not run here, or None when it does."""
    n, m = len(problem.graph.ops), len(problem.cluster.devices)
    if n > CPSAT_MAX_OPS:
        return f"skipped: {n} ops > {CPSAT_MAX_OPS}"
    if m < 2:
        return "skipped: one device"
    if options.time_limit_s < CPSAT_MIN_S:
        return f"skipped: a time limit of {options.time_limit_s:g} s < {CPSAT_MIN_S:g} s"
    return None


def _search_phase(problem: Problem, options: Options, ranked: Ranked,
                  candidates: dict[str, float | None], best: Best, *,
                  cpsat_follows: bool, deadline: float
                  ) -> tuple[Any, Best, bool, int, bool]:
    """Phase 2: the search from the best plan, then from the next distinct ones while a
    search stalls with moves left (`_later_starts`); (its note for `info`, the best plan
    after it, whether the first start's search improved on the heuristics: CP-SAT's share
    depends on that alone, as before later starts were searched; the starts searched;
    whether its budget was sized for `planner.simulate`, `search.python_budget_note`).

    Adds `candidates["search"]` when the search found a strictly faster plan."""
    m = len(problem.cluster.devices)
    # the limit bounds auto as a whole: the heuristics' expected time comes off first
    share = SEARCH_SHARE if cpsat_follows else 1.0
    spent = sum(estimated_seconds(problem, name) for name in ranked.candidates
                if name not in ranked.skipped and name != "warm_start")
    left = search_seconds(problem, ranked, share * options.time_limit_s)
    search_note: Any = "skipped: one device" if m < 2 else (
        NO_SEARCH if options.time_limit_s <= 0 else (
            f"skipped: the heuristics are expected to take {spent:.3g} s of the "
            f"{options.time_limit_s:g} s limit" if left <= 0 else None))
    first_improved, starts, python_budget = False, 0, False
    if best is not None and search_note is None:
        python_budget = not compiled_ready()  # one look, for the budget and the note
        budget = move_budget(problem, left, compiled=not python_budget)
        if options.progress:
            options.progress(0.3, "auto: search")
        stall = min(STALL_MAX, max(STALL_MIN, budget // STALL_DIVISOR))
        # later starts only where the stall rule no longer grows with the budget: there a
        # larger budget repeats the first search's moves and leaves the next start more
        # (more time never gives a worse plan); below, the first search alone, as before
        runs = _search_starts(problem, ranked, options, budget, stall, deadline,
                              later=stall >= STALL_MAX, python_budget=python_budget)
        winner = runs[0]
        for run in runs[1:]:  # a later start wins only when strictly faster
            if run[1].info["objective_s"] < winner[1].info["objective_s"] * (1 - 1e-12):
                winner = run
        search_note, starts = _starts_note(runs, winner, stall), len(runs)
        first = _faster(problem, runs[0][1].plan, best[1])
        faster = first if winner is runs[0] else _faster(problem, winner[1].plan, best[1])
        first_improved = first is not None
        if faster is not None:
            candidates["search"] = faster
            best = ("search", faster, winner[1].plan)
    return search_note, best, first_improved, starts, python_budget


def _faster(problem: Problem, plan: Plan, than_s: float) -> float | None:
    """`plan`'s simulated makespan when it is feasible and strictly below `than_s`."""
    sim = simulate(problem, plan)
    return sim.makespan_s if sim.feasible and sim.makespan_s < than_s * (1 - 1e-12) else None


#: (the start's name, its search's solution) per start searched, in the order searched
Runs = list[tuple[str, Solution]]


def _search_starts(problem: Problem, ranked: Ranked, options: Options, budget: int,
                   stall: int, deadline: float, *, later: bool,
                   python_budget: bool = False) -> Runs:
    """`search.improve` from the best plan for `budget` moves; while a search stops early
    (stalled, or its neighbourhood seen) with moves left, the next start of `_later_starts`
    gets the moves left, with the same stall rule. The first search is the one `auto` ran
    alone before: later starts can only add a faster plan. Ctrl-C raises `Interrupted`
    with the best plan of every start so far; `python_budget` as `improve`'s."""
    runs: Runs = []
    starts = _later_starts(ranked) if later else []
    name = ranked.plans[0][0]
    only = ranked
    while True:
        try:
            found = improve(problem, only, options if not runs else dataclasses.replace(
                options, progress=None), budget, deadline=deadline, stall=stall,
                python_budget=python_budget)
        except Interrupted as stop:
            so_far = [found for _, found in runs]
            if stop.solution is not None:
                so_far.append(stop.solution)
            kept = min(so_far, key=lambda sol: sol.info["objective_s"], default=None)
            # an earlier start's finished search may hold the best plan: still, the run was
            # stopped (it was labelled `feasible`, a run that did not end so)
            raise Interrupted(None if kept is None else dataclasses.replace(
                kept, status="interrupted")) from None
        runs.append((name, found))
        budget -= found.info["moves"]
        if budget <= 0 or not starts or "reason" in found.info or not found.info["moves"]:
            return runs  # spent, no start left, cut by the clock, or nothing movable
        name, makespan, plan = starts.pop(0)
        only = dataclasses.replace(ranked, plans=((name, makespan, plan),))
        if options.progress:
            options.progress(0.3, f"auto: search from {name}, {budget} moves left")


def _later_starts(ranked: Ranked) -> list[tuple[str, float, Plan]]:
    """The feasible plans after the best, best first, each with a placement no start
    before it had (the search moves placements; the first search also descends from
    `single`'s, so that one is taken)."""
    seen = {ranked.plans[0][2].placement}
    seen.update(plan.placement for name, _, plan in ranked.plans if name == "single")
    starts = []
    for entry in ranked.plans[1:]:
        if entry[2].placement not in seen:
            seen.add(entry[2].placement)
            starts.append(entry)
    return starts


def _note(found: Solution) -> str:
    """One search's note: the clock's cut, its stall, or its moves."""
    return str(found.info.get("reason") or _stall(found) or f"{found.info['moves']} moves")


def _stall(found: Solution) -> str:
    """The search's `stopped` where it stalled, else '' (`search.REVISITED`, its other
    early stop, is said as the moves it made)."""
    stopped = str(found.info.get("stopped", ""))
    return stopped if stopped.startswith(STALLED) else ""


def _starts_note(runs: Runs, winner: tuple[str, Solution], stall: int) -> str:
    """`info["search"]`: one start's note as before; with later starts, each start's moves
    (and why it stopped, where not by the stall rule) and the start whose search won. A
    cut by the clock leads, so that `reason` shows it, and is said there alone."""
    if len(runs) == 1:
        return _note(runs[0][1])
    parts = [f"{name} {found.info['moves']}" + (" moves" if not k else "") + (
        # a clock's cut is said once, in the lead
        "" if _stall(found) or "reason" in found.info
        else " (its budget)" if found.info["moves"] >= found.info["budget_moves"]
        else " (no new placement left)") for k, (name, found) in enumerate(runs)]
    cut = runs[-1][1].info.get("reason")
    return (f"{cut} (from {runs[-1][0]}); " if cut else "") + (
        f"from {len(runs)} starts, each until {stall} moves in a row found no better plan: "
        f"{', '.join(parts)}; the best from {winner[0]} "
        f"({winner[1].info['objective_s'] * 1e3:.3f} ms)")


def _cpsat_phase(problem: Problem, options: Options, candidates: dict[str, float | None],
                 errors: list[PlannerError], best: Best,
                 claims: dict[str, Any], deadline: float, *,
                 searched: bool) -> tuple[Any, Best]:
    """Phase 3: CP-SAT warm-started from the best plan; (its note for `info`, the best plan
    after it).

    Adds `candidates["cpsat"]` when its plan is feasible and the solver's claims to
    `claims`; raises `none_found` when neither the heuristics nor CP-SAT found a plan."""
    if options.progress:
        options.progress(0.3, "auto: cpsat")
    try:
        # its work is sized, as the search's, to half of its share on an idle machine, so
        # that a busy one still finishes it; the wall clock stops it at auto's limit
        share = 1 - SEARCH_SHARE if searched else 1
        left = LOAD_HEADROOM * share * options.time_limit_s
        sol = cpsat.solve(problem, dataclasses.replace(
            options, warm_start=best[2] if best else None, emit=None, time_limit_s=left),
            warn=False, deadline=deadline)
    except (InfeasibleError, SearchLimitError):  # no proof, or E811: out of time
        if best is None:
            raise
        sol = None
    except Interrupted as stop:
        raise Interrupted(_relabel(stop.solution, candidates)) from None
    if sol is None:
        return "infeasible", best
    cpsat_note: Any = sol.status
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
        raise none_found(problem, errors)
    return cpsat_note, best


def _relabel(sol: Solution | None, candidates: dict[str, float | None]) -> Solution | None:
    """CP-SAT's interrupted answer (the better of its incumbent and auto's best)."""
    if sol is None:
        return None
    chosen = sol.info.get("warm_start") if "kept" in sol.info else sol.plan.algorithm
    return dataclasses.replace(sol, info=MappingProxyType(
        {**sol.info, "candidates": candidates, "chosen": chosen or "cpsat"}))
