"""The best heuristic plan by simulation: the one loop `auto` and the exact fallback share.

Each fast algorithm of `CANDIDATES` (registry order) runs once; an algorithm that proves
the problem infeasible is skipped. Every plan, and `Options.warm_start` when one is given,
is simulated under the problem's own contention and memory model, and ranked by simulated
makespan, ties by the order tried (the warm start first). Nothing here reads a clock, so
the ranking is the same on every run.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import InfeasibleError, PlannerError
from ..model import Problem
from ..plan import Plan
from .base import Interrupted, Options, Solution

log = logging.getLogger("planner")

#: the fast algorithms tried, in the registry's order
CANDIDATES = ("msct", "metf", "mtopo", "heft", "cpop", "single", "roundrobin")


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

    @property
    def best(self) -> tuple[str, float, Plan] | None:
        """(name, makespan, plan) of the best plan, or None when none is feasible."""
        return self.plans[0] if self.plans else None


def rank(problem: Problem, options: Options, *, progress_share: float = 1.0) -> Ranked:
    """Run and simulate every candidate (see the module docstring).

    `progress_share`: the fraction of `Options.progress` these runs account for.
    """
    from ..simulate import simulate
    from . import ALGORITHMS, run

    quiet = dataclasses.replace(options, progress=None, warm_start=None)
    tried: list[tuple[str, Plan | None]] = []
    if options.warm_start is not None:
        tried.append(("warm_start", options.warm_start))
    tried.extend((name, None) for name in ALGORITHMS if name in CANDIDATES)
    candidates: dict[str, float | None] = {}
    errors: list[PlannerError] = []
    found: list[tuple[float, int, str, Plan]] = []
    try:
        for k, (name, plan) in enumerate(tried):
            if options.progress:
                options.progress(progress_share * k / len(tried), f"heuristics: {name}")
            if plan is None:
                try:
                    plan = run(name, problem, quiet).plan
                except InfeasibleError as err:
                    errors.append(err)
                    candidates[name] = None
                    continue
                except ImportError as err:  # pragma: no cover - a module missing
                    log.debug("%s unavailable: %s", name, err)
                    candidates[name] = None
                    continue
            sim = simulate(problem, plan)
            candidates[name] = sim.makespan_s if sim.feasible else None
            if sim.feasible:
                found.append((sim.makespan_s, k, name,
                              plan.with_algorithm(plan.algorithm or name)))
    except KeyboardInterrupt:
        raise Interrupted(_so_far(found, candidates)) from None
    found.sort(key=lambda t: (t[0], t[1]))
    return Ranked(tuple((name, ms, plan) for ms, _, name, plan in found), candidates,
                  tuple(errors))


def _so_far(found: list[tuple[float, int, str, Plan]],
            candidates: dict[str, float | None]) -> Solution | None:
    """The best plan simulated before an interruption, as an `interrupted` solution."""
    if not found:
        return None
    makespan, _, name, plan = min(found, key=lambda t: (t[0], t[1]))
    return Solution(plan, "interrupted", MappingProxyType(
        {"chosen": name, "candidates": dict(candidates), "objective_s": makespan,
         "reason": "interrupted while running the heuristics"}))
