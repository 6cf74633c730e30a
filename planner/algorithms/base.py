"""The one interface every placement algorithm implements."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from ..model import OBJECTIVES, Problem
from ..plan import Plan
from ..units import RANGES

#: the largest time limit: the largest time a spec may state (about 11.6 days); far larger
#: ones overflowed the clocks and waits they reach (`1e10`: E999 in `compare`)
MAX_TIME_LIMIT_S = RANGES["time"][1]
#: the default time limit of `auto`, `planner solve`'s and `planner.solve`'s default
#: algorithm: it should answer a first-time user quickly; the other algorithms that take a
#: limit default to `EXACT_TIME_LIMIT_S` (`Options.time_limit_s`)
AUTO_TIME_LIMIT_S = 10.0
EXACT_TIME_LIMIT_S = 60.0
#: the largest seed: every solver takes the seed as it is (CP-SAT's `random_seed` is a
#: 32-bit integer, HiGHS's is 0 to 2**31 - 1), so a seed is never folded onto another one
MAX_SEED = 2**31 - 1

#: `optimal`: proved optimal for the simulator's own model (contention and memory);
#: `feasible`: a valid plan, with the gap to the best proven bound; `fallback`: the
#: algorithm could not finish its own method and returns another valid plan (its reason in
#: `info["reason"]`); `interrupted`: the best valid plan found before Ctrl-C or SIGTERM.
Status = Literal["feasible", "optimal", "fallback", "infeasible", "interrupted"]


@dataclass(frozen=True, slots=True)
class Options:
    """Knobs shared by the algorithms; each reads the ones it understands."""

    seed: int = 0
    time_limit_s: float = EXACT_TIME_LIMIT_S
    #: where exact solvers may stop (relative); `optimal` needs 1e-6 (`bounds.OPTIMAL_GAP`)
    gap: float = 1e-6
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


#: the `Options` fields a user tunes, which an `AlgorithmInfo` lists in `options` when the
#: algorithm takes them (`progress` and `warm_start` are the callers' business, not a user's)
TUNABLE: tuple[str, ...] = ("time_limit_s", "gap", "solver", "emit", "seed", "threshold")


@dataclass(frozen=True, slots=True)
class AlgorithmInfo:
    """One line of the algorithm registry (`planner.algorithms.ALGORITHMS`): the algorithm's
    name, its module and what it can do, declared as data.

    Everything here is read without importing `module`, so `planner check` and `--help`
    never pay for numpy, HiGHS or OR-Tools; `place` imports the module on first use. The
    module itself only defines `place(problem, options) -> Plan | Solution`.
    """

    name: str
    #: the dotted module that defines `place`
    module: str
    #: one line: what it does (`--algo`'s shell completion shows it)
    summary: str
    #: the name in prose (m-SCT, HEFT); empty: `name`
    display: str = ""
    #: the `TUNABLE` options it takes: `solve` rejects `--time-limit`, `--gap`, `--solver`
    #: and `--emit` for an algorithm that does not list them (E605), and the option's help
    #: names the algorithms that do; `seed` is listed by those that draw random numbers of
    #: their own (`--seed`'s help names them)
    options: tuple[str, ...] = ()
    #: proves optimality with a model of its own (`options` then has time_limit_s, gap, emit)
    exact: bool = False
    #: needs an external solver chosen by `--solver` (`options` then has `solver`)
    needs_solver: bool = False
    #: improves its plan for as long as `--time-limit` allows (and stops on Ctrl-C)
    anytime: bool = False
    #: respects the devices' memory caps by itself (`expert` takes the spec's word)
    memory_aware: bool = True
    #: a fast constructive heuristic or baseline: `portfolio.rank` runs it for `auto`,
    #: `search` and the exact solvers' warm start, and ranks its plan by simulation
    constructive: bool = False
    #: `portfolio.estimated_seconds`: seconds per op and edge it takes, run and simulated
    #: (None: the portfolio's default)
    seconds_per_element: float | None = None
    #: `portfolio.estimated_seconds`: the seconds its superlinear part may take on top, at
    #: most, from the problem alone (m-SCT: its LP, `lpsize.lp_seconds_at_most`)
    superlinear_seconds: Callable[[Problem], float] | None = None
    #: in `compare`'s default `--algos`
    compare_default: bool = False
    citation: str = ""
    #: the plan objectives (`planner.model.OBJECTIVES`) it may be run under; any other is
    #: refused before any work (E625, `planner.algorithms.check_objective`). A one-pass
    #: scheduler that lists `pipeline` plans one pass and its plan is judged as the pipeline
    #: (the pipeline's memory included); an exact solver of one pass does not list it, as
    #: its `optimal` and bound would be one pass's, not the pipeline's
    objectives: tuple[str, ...] = ("makespan", "pipeline")
    #: the endings of the model files it writes (`--emit`; `options` then has `emit`); any
    #: other is refused before any work (E814, `planner.algorithms.check_emit`)
    emits: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [o for o in self.options if o not in TUNABLE]
        needed = {"exact": ("time_limit_s", "gap", "emit") if self.exact else (),
                  "needs_solver": ("solver",) if self.needs_solver else (),
                  "anytime": ("time_limit_s",) if self.anytime else ()}
        missing = [f"{cap} needs {o}" for cap, opts in needed.items() for o in opts
                   if o not in self.options]
        if "solver" in self.options and not self.needs_solver:
            missing.append("solver is only for needs_solver")
        if ("emit" in self.options) != bool(self.emits):
            missing.append("emit and emits go together")
        if not self.objectives or not set(self.objectives) <= set(OBJECTIVES):
            missing.append(f"objectives {self.objectives} are not some of {OBJECTIVES}")
        if unknown or missing:
            raise ValueError(f"algorithm {self.name}: options {unknown} are not in TUNABLE"
                             if unknown else f"algorithm {self.name}: " + "; ".join(missing))

    @property
    def shown(self) -> str:
        """The name in prose: `display`, else `name`."""
        return self.display or self.name

    def takes(self, option: str) -> bool:
        """Whether the algorithm takes the `TUNABLE` option `option`."""
        return option in self.options

    def serves(self, objective: str) -> bool:
        """Whether the algorithm may plan for `objective` (`objectives`)."""
        return objective in self.objectives

    @property
    def place(self) -> Callable[[Problem, Options], Plan | Solution]:
        """The module's `place` (the module imported on first use)."""
        place: Callable[[Problem, Options], Plan | Solution] = importlib.import_module(
            self.module).place
        return place

    def warm_up(self, problem: Problem, options: Options) -> None:
        """Import the module and run its `warm_up(problem, options)`, when it has one: the
        one-time imports and loads (numba's kernels, OR-Tools, Pyomo) that a run on
        `problem` needs, so that no clock of the run (`--time-limit`, `planning_s`, the
        progress line) counts them. Its `place` calls it too, before its own clock."""
        warm: Callable[[Problem, Options], None] | None = getattr(
            importlib.import_module(self.module), "warm_up", None)
        if warm is not None:
            warm(problem, options)
