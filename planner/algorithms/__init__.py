"""Placement algorithms, registered by name in one ordered table.

Every algorithm is one module exposing `place(problem, options) -> Plan | Solution` and an
`INFO = AlgorithmInfo(...)` that declares its capabilities as data. Modules are imported
lazily on first use, so `planner check` never pays for OR-Tools or Pyomo.
"""

from __future__ import annotations

import importlib
import time
from types import MappingProxyType

from ..errors import Diagnostic, UsageError, did_you_mean
from ..model import Problem
from .base import AlgorithmInfo, Options, Solution

__all__ = ["ALGORITHMS", "AlgorithmInfo", "Options", "Solution", "get", "names", "run"]

#: name -> module; the order is the order of `planner solve --help` and `compare`.
ALGORITHMS = MappingProxyType({
    "auto": "planner.algorithms.auto",
    "msct": "planner.algorithms.msct",
    "metf": "planner.algorithms.metf",
    "mtopo": "planner.algorithms.mtopo",
    "heft": "planner.algorithms.heft",
    "cpop": "planner.algorithms.cpop",
    "search": "planner.algorithms.search",
    "single": "planner.algorithms.baselines.single",
    "roundrobin": "planner.algorithms.baselines.roundrobin",
    "random": "planner.algorithms.baselines.random",
    "expert": "planner.algorithms.baselines.expert",
    "cpsat": "planner.algorithms.exact.cpsat",
    "ilp": "planner.algorithms.exact.ilp",
})


def names() -> tuple[str, ...]:
    """Every registered algorithm name, in registry order."""
    return tuple(ALGORITHMS)


def get(name: str) -> AlgorithmInfo:
    """The algorithm called `name` (its module imported on first use)."""
    module_name = ALGORITHMS.get(name)
    if module_name is None:
        raise UsageError(Diagnostic("E601", f"unknown algorithm `{name}`", None,
                                    (*did_you_mean(name, ALGORITHMS),
                                     "available: " + ", ".join(ALGORITHMS))))
    module = importlib.import_module(module_name)
    info: AlgorithmInfo = module.INFO
    return info


def run(name: str, problem: Problem, options: Options | None = None) -> Solution:
    """Run algorithm `name` on `problem`; `Solution.planning_s` is its wall time alone.

    Raises `InfeasibleError` when no plan satisfies the memory caps and pins.
    """
    info = get(name)
    options = options or Options()
    t0 = time.perf_counter()
    out = info.place(problem, options)
    elapsed = time.perf_counter() - t0
    solution = out if isinstance(out, Solution) else Solution(out)
    if not solution.plan.algorithm:
        solution = solution.with_plan(solution.plan.with_algorithm(name))
    return solution.timed(elapsed)
