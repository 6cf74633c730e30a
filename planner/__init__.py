"""planner: declarative model-parallel placement.

Public API:

- `load(path)` / `loads(text)`: parse and lower a `.plan` spec into a `Spec`;
  `Spec.plan(name)` is the `Problem` of one plan.
- `solve(problem, algorithm="auto", **options)`: place and schedule -> `Solution`.
- `planner.simulate.simulate(problem, plan)`: re-execute and verify a plan -> `SimResult`
  (a function of the `planner.simulate` module: the module name is taken);
  `lower_bound(problem)` -> `Bounds`.
- `compare`: `planner.compare.plan_sweep` / `run_sweep` (imported on use; see its docs).

    import planner
    problem = planner.load("specs/resnet.plan").plan()
    solution = planner.solve(problem, "msct")
    from planner.simulate import simulate
    print(simulate(problem, solution.plan).makespan_s)
"""

from __future__ import annotations

import os
from typing import Any

from .errors import Diagnostic, PlannerError, SpecError
from .model import Cluster, Device, Edge, Graph, Link, Op, Problem, Spec

__all__ = [
    "Cluster", "Device", "Diagnostic", "Edge", "Graph", "Link", "Op", "PlannerError",
    "Problem", "Spec", "SpecError", "load", "loads", "lower_bound", "solve",
]
__version__ = "0.1.0"


def load(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> Spec:
    """Load a spec file (and its imports, which stay inside `root`: by default the
    repository holding `path`, else its folder). Raises `SpecError` with diagnostics."""
    from .spec.load import load_path

    return load_path(path, root).spec


def loads(text: str, file: str = "<string>", base: str | os.PathLike[str] = ".",
          root: str | os.PathLike[str] | None = None) -> Spec:
    """Load spec text; imports are relative to `base` and stay inside `root` (by default
    the repository holding `base`, else `base`). Raises `SpecError`."""
    from .spec.load import load_text

    return load_text(text, file, base, root).spec


def solve(problem: Problem, algorithm: str = "auto", **options: Any) -> Any:
    """Run a placement algorithm (`planner.algorithms.names()`); options as `Options` fields.

    Returns a `Solution` (plan, status, info, planning_s); raises `InfeasibleError` when no
    plan fits.
    """
    from .algorithms import Options, run

    return run(algorithm, problem, Options(**options))


def lower_bound(problem: Problem) -> Any:
    """The proven lower bounds of `problem` (`planner.bounds.lower_bound`)."""
    from .bounds import lower_bound as _lower_bound

    return _lower_bound(problem)
