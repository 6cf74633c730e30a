"""The best heuristic plan by simulation: the one loop `auto` and the exact fallback share.

Each constructive algorithm of the registry (`AlgorithmInfo.constructive`, in registry
order: `CANDIDATES`) runs once; an algorithm that proves the problem infeasible is
skipped. Every plan, and `Options.warm_start` when one is given, is simulated under the
problem's own contention and memory model, and ranked by simulated makespan, ties by the
order tried (the warm start first). Nothing here reads a clock, so the ranking is the same
on every run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import logging
import multiprocessing
import os
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import InfeasibleError, PlannerError
from ..model import Problem
from ..plan import Plan
from ..signals import interrupts_ignored
from ..simulate import simulate
from . import ALGORITHMS, constructive, run
from .base import Interrupted, Options, Solution

log = logging.getLogger("planner")

#: the fast algorithms tried: the registry's constructive ones, in its order
CANDIDATES: tuple[str, ...] = constructive()
#: seconds per op and edge a candidate takes, run and simulated, when its registry entry
#: declares none (m-ETF's figure)
DEFAULT_SECONDS_PER_ELEMENT = 1.6e-5
#: seconds per op and edge each candidate takes, run and simulated: the registry's
#: `seconds_per_element` (measured on this project's 2-core machine on a random
#: 100,000-op / 200,000-edge DAG over 8 devices; CPOP's insertion scans idle gaps, so it
#: grows faster than the others)
SECONDS_PER_ELEMENT: dict[str, float] = {
    name: DEFAULT_SECONDS_PER_ELEMENT if per is None else per
    for name in CANDIDATES for per in (ALGORITHMS[name].seconds_per_element,)}
#: graphs with at least this many ops run the candidates on two cores (`_outcomes`)
PARALLEL_MIN_OPS = 20_000


@dataclass(frozen=True)
class Ranked:
    """The plans found, best simulated makespan first.

    `plans`: (name, simulated makespan, plan) of every feasible plan, best first;
    `candidates`: name -> simulated makespan (None: infeasible, skipped or rejected by the
    simulator), in the order tried; `errors`: the infeasibility proofs met on the way.
    """

    plans: tuple[tuple[str, float, Plan], ...]
    candidates: dict[str, float | None]
    errors: tuple[PlannerError, ...] = field(default=())
    #: name -> why it did not run (its expected time did not fit in the limit: `within`)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def best(self) -> tuple[str, float, Plan] | None:
        """(name, makespan, plan) of the best plan, or None when none is feasible."""
        return self.plans[0] if self.plans else None


def warm_up() -> None:
    """Import every candidate's module before a clock that `rank` runs under starts
    (`search`, `auto`, the exact models' warm start): 0.1-0.35 s idle (m-SCT's imports
    HiGHS), twice that on a loaded machine, that was counted inside `--time-limit`."""
    for name in CANDIDATES:
        with contextlib.suppress(ImportError):  # `_evaluate` skips it, as before
            importlib.import_module(ALGORITHMS[name].module)


def estimated_seconds(problem: Problem, name: str) -> float:
    """What candidate `name` is expected to take here, running and simulated, from the
    problem alone (`SECONDS_PER_ELEMENT` per op and edge, plus its registry entry's
    `superlinear_seconds`: m-SCT's LP at its worst), so that skipping it is deterministic."""
    size = len(problem.graph.ops) + len(problem.graph.edges)
    info = ALGORITHMS.get(name)
    extra = info.superlinear_seconds if info is not None else None
    return (SECONDS_PER_ELEMENT.get(name, DEFAULT_SECONDS_PER_ELEMENT) * size
            + (extra(problem) if extra is not None else 0.0))


def within(problem: Problem, names: Sequence[str], limit_s: float) -> dict[str, str]:
    """The candidates of `names` left out under `limit_s`, each with why, in the order of
    `names`: the others run, the expected fastest first while their expected seconds
    together stay within the limit (ties by the order of `names`); the fastest always
    runs."""
    expected = {name: estimated_seconds(problem, name) for name in names}
    order = sorted(range(len(names)), key=lambda k: (expected[names[k]], k))
    total, left_out = 0.0, {}
    for k in order:
        name, est = names[k], expected[names[k]]
        if k == order[0] or total + est <= limit_s:
            total += est
        elif est > limit_s:
            left_out[name] = f"skipped: expected to take {est:.3g} s > the {limit_s:g} s limit"
        else:
            left_out[name] = (f"skipped: expected to take {est:.3g} s, more than the "
                              f"{limit_s - total:.3g} s the {limit_s:g} s limit leaves after "
                              f"the faster ones")
    return {name: left_out[name] for name in names if name in left_out}


def rank(problem: Problem, options: Options, *, progress_share: float = 1.0,
         limit_s: float | None = None, until_found: bool = False) -> Ranked:
    """Run and simulate every candidate (see the module docstring).

    `progress_share`: the fraction of `Options.progress` these runs account for.
    `limit_s`: the candidates run are those whose expected seconds (`estimated_seconds`)
    fit in it together, the fastest first (`within`); the others are skipped, their reason
    in `Ranked.skipped`; the fastest one always runs. `until_found`: where none of
    those run finds a plan, the skipped ones run too, fastest expected first, until one
    does: a limit is a target, and "no plan" is a claim about the problem (`auto` at
    `--time-limit 0.001` said E706, exit 3, of ResNet-50 when `single`, the fastest,
    could not hold it).
    """
    quiet = dataclasses.replace(options, progress=None, warm_start=None)
    tried: list[tuple[str, Plan | None]] = []
    if options.warm_start is not None:
        tried.append(("warm_start", options.warm_start))
    skipped = {} if limit_s is None else within(problem, CANDIDATES, limit_s)
    tried.extend((name, None) for name in CANDIDATES if name not in skipped)
    candidates: dict[str, float | None] = {}
    errors: list[PlannerError] = []
    found: list[tuple[float, int, str, Plan]] = []
    _run_candidates(problem, options, quiet, tried, progress_share,
                    (candidates, errors, found))
    if until_found and skipped:
        for name in sorted(skipped, key=lambda n: estimated_seconds(problem, n)):
            if found:
                break
            del skipped[name]
            _run_candidates(problem, options, quiet, [(name, None)], 0.0,
                            (candidates, errors, found))
    found.sort(key=lambda t: (t[0], t[1]))
    candidates.update(dict.fromkeys(skipped))
    return Ranked(tuple((name, ms, plan) for ms, _, name, plan in found), candidates,
                  tuple(errors), skipped)


Found = list[tuple[float, int, str, Plan]]


def _run_candidates(problem: Problem, options: Options, quiet: Options,
                    tried: list[tuple[str, Plan | None]], progress_share: float,
                    into: tuple[dict[str, float | None], list[PlannerError], Found]) -> None:
    """Run `tried` (`_outcomes`), adding each one's makespan, error and plan to `into`
    (candidates, errors, found: a plan's tie rank is the order it was run in)."""
    candidates, errors, found = into
    outcomes = _outcomes(problem, quiet, tried)
    try:
        for k, (name, outcome) in enumerate(outcomes):
            if options.progress and progress_share:
                options.progress(progress_share * k / len(tried), f"heuristics: {name}")
            plan, makespan, err = outcome()
            if err is not None:
                errors.append(err)
            candidates[name] = makespan
            if plan is not None and makespan is not None:
                found.append((makespan, len(candidates), name,
                              plan.with_algorithm(plan.algorithm or name)))
    except KeyboardInterrupt:
        outcomes.close()  # its workers end now, not when it is collected
        raise Interrupted(_so_far(found, candidates)) from None


Outcome = tuple[Plan | None, float | None, PlannerError | None]


def _evaluate(problem: Problem, options: Options, name: str, plan: Plan | None) -> Outcome:
    """(plan, simulated makespan or None, the infeasibility met) of one candidate."""
    if plan is None:
        try:
            plan = run(name, problem, options).plan
        except InfeasibleError as err:
            return None, None, err
        except ImportError as err:  # pragma: no cover - a module missing from an install
            log.debug("%s unavailable: %s", name, err)
            return None, None, None
    sim = simulate(problem, plan)
    return plan, (sim.makespan_s if sim.feasible else None), None


#: the problem and options the forked workers inherit (set only while a pool runs)
_SHARED: tuple[Problem, Options] | None = None


def _in_worker(name: str) -> Outcome:
    assert _SHARED is not None
    return _evaluate(_SHARED[0], _SHARED[1], name, None)


def _outcomes(problem: Problem, options: Options, tried: list[tuple[str, Plan | None]]
              ) -> Generator[tuple[str, Callable[[], Outcome]], None, None]:
    """Each candidate's outcome, in the order tried. Graphs of `PARALLEL_MIN_OPS` ops or
    more run the candidates in two forked processes (they inherit the problem, so nothing
    big is sent; the results are the same, only sooner); smaller ones run here, where a
    process would cost more than it saves."""
    global _SHARED
    parallel = (len(problem.graph.ops) >= PARALLEL_MIN_OPS and (os.cpu_count() or 1) >= 2
                and "fork" in multiprocessing.get_all_start_methods())
    if not parallel:
        for name, plan in tried:
            yield name, functools.partial(_evaluate, problem, options, name, plan)
        return
    _SHARED = (problem, options)
    try:
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
            try:
                with interrupts_ignored():  # by the workers forked now: Ctrl-C is ours
                    futures = {name: pool.submit(_in_worker, name) for name, plan in tried
                               if plan is None}
                for name, plan in tried:
                    yield name, (futures[name].result if plan is None else
                                 functools.partial(_evaluate, problem, options, name, plan))
            except BaseException:  # interrupted: no waiting for the candidates still running
                procs = list((getattr(pool, "_processes", None) or {}).values())
                pool.shutdown(wait=False, cancel_futures=True)
                for proc in procs:
                    proc.kill()
                raise
    finally:
        _SHARED = None


def _so_far(found: list[tuple[float, int, str, Plan]],
            candidates: dict[str, float | None]) -> Solution | None:
    """The best plan simulated before an interruption, as an `interrupted` solution."""
    if not found:
        return None
    makespan, _, name, plan = min(found, key=lambda t: (t[0], t[1]))
    return Solution(plan, "interrupted", MappingProxyType(
        {"chosen": name, "candidates": dict(candidates), "objective_s": makespan,
         "reason": "interrupted while running the heuristics"}))
