"""The one interface every placement algorithm implements."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from ..model import Problem
from ..plan import Plan

#: `optimal`: proved optimal for the simulator's own model (contention and memory);
#: `feasible`: a valid plan, with the gap to the best proven bound; `fallback`: the
#: algorithm could not finish its own method and returns another valid plan (its reason in
#: `info["reason"]`); `interrupted`: the best valid plan found before Ctrl-C or SIGTERM.
Status = Literal["feasible", "optimal", "fallback", "infeasible", "interrupted"]


@dataclass(frozen=True, slots=True)
class Options:
    """Knobs shared by the algorithms; each reads the ones it understands."""

    seed: int = 0
    time_limit_s: float = 60.0
    gap: float = 1e-4
    solver: str = "highs"
    #: m-SCT: LP values below this make an edge a favourite
    threshold: float = 0.5
    #: exact solvers: write the model to this path (.lp or .mps) before solving
    emit: str | None = None
    #: called with (fraction done 0..1, message) by long-running algorithms
    progress: Callable[[float, str], None] | None = None
    #: a plan to warm-start exact solvers from (else they run m-SCT)
    warm_start: Plan | None = None


@dataclass(frozen=True, slots=True)
class Solution:
    """What an algorithm returns: a plan, its status, and algorithm-specific figures.

    `info` holds e.g. `objective_s`, `bound_s`, `gap`, `solver`, `build_s`, `solve_s`,
    `reason` (for fallbacks), `chosen` (for `auto`). The makespan users see is always
    the simulator's, never an algorithm's own estimate.
    """

    plan: Plan
    status: Status = "feasible"
    info: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    planning_s: float = 0.0

    def timed(self, seconds: float) -> Solution:
        """A copy with `planning_s` set."""
        return dataclasses.replace(self, planning_s=seconds)

    def with_plan(self, plan: Plan) -> Solution:
        """A copy with another plan."""
        return dataclasses.replace(self, plan=plan)


class Interrupted(Exception):
    """Raised instead of `KeyboardInterrupt` by an algorithm that holds a plan when the user
    interrupts it: `solution` is the best valid plan so far (status `interrupted`), or None.
    The CLI prints and writes it, and exits 130."""

    def __init__(self, solution: Solution | None) -> None:
        super().__init__("interrupted")
        self.solution = solution


@dataclass(frozen=True, slots=True)
class AlgorithmInfo:
    """An algorithm and its capabilities, declared as data."""

    name: str
    place: Callable[[Problem, Options], Plan | Solution]
    summary: str
    memory_aware: bool = True
    exact: bool = False
    needs_solver: bool = False
    citation: str = ""
    #: improves its plan for as long as `--time-limit` allows (and stops on Ctrl-C)
    anytime: bool = False
