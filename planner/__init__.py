"""planner: declarative model-parallel placement.

Public API:

- `load(path)` / `loads(text)`: parse and lower a `.plan` spec into a `Spec`;
  `Spec.plan(name)` is the `Problem` of one plan. Its warnings, and a built problem's,
  are `PlannerWarning`s issued with `warnings.warn` (filter them as any warning).
- `ProblemBuilder`: a `Problem` by names in Python (or `ProblemBuilder.from_networkx`),
  checked with the language's diagnostics.
- `solve(problem, algorithm="auto", **options)`: place and schedule -> `Result` (a
  `Solution` with names: `placement_by_name`, `schedule`, `makespan_s`).
- `planner.simulate.simulate(problem, plan)`: re-execute and verify a plan -> `SimResult`
  (a function of the `planner.simulate` module: the module name is taken);
  `lower_bound(problem)` -> `Bounds`.
- `Result.write(path)` / `read_plan(problem, path)`: a plan file, as `solve --out` writes
  it (a pipeline's replicas and recompute included), and back to a `Result`.
- `compare`: `planner.compare.plan_sweep` / `run_sweep` (imported on use; see its docs).

    import planner
    problem = planner.load("specs/resnet.plan").plan()
    solution = planner.solve(problem, "msct")
    from planner.simulate import simulate
    print(simulate(problem, solution.plan).makespan_s)
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .version import __version__ as __version__

# Every `import planner.x` runs this module first, the CLI's included: what it imports at
# the top must stay cheap (`tests/cli/test_startup.py`), so the rest is imported on first
# use, each with its `TYPE_CHECKING` import for the types. Even the model and the errors:
# `planner` (the command) holds Ctrl-C off from its first line on (`planner.__main__`),
# and it runs only once this module is imported.
if TYPE_CHECKING:
    from .api import ProblemBuilder, Result, ScheduledOp
    from .bounds import Bounds
    from .errors import (
        Diagnostic,
        InfeasibleError,
        PlannerError,
        PlannerWarning,
        SpecError,
        UsageError,
    )
    from .model import Cluster, Device, Edge, Graph, Link, Op, Problem, Spec

__all__ = [
    "Cluster", "Device", "Diagnostic", "Edge", "Graph", "InfeasibleError", "Link", "Op",
    "PlannerError", "PlannerWarning", "Problem", "ProblemBuilder", "Result", "ScheduledOp",
    "Spec", "SpecError", "UsageError", "load", "loads", "lower_bound", "read_plan", "solve",
]
#: the module of each name imported on first use
_LAZY = {**dict.fromkeys(("ProblemBuilder", "Result", "ScheduledOp"), "api"),
         **dict.fromkeys(("Diagnostic", "InfeasibleError", "PlannerError", "PlannerWarning",
                          "SpecError", "UsageError"), "errors"),
         **dict.fromkeys(("Cluster", "Device", "Edge", "Graph", "Link", "Op", "Problem",
                          "Spec"), "model")}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module 'planner' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def load(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> Spec:
    """Load a spec file (and its imports, which stay inside `root`: by default the
    repository holding `path`, else its folder). Raises `SpecError` with diagnostics, and
    `TypeError` for a path that is no str or os.PathLike; issues the spec's warnings
    (those `planner check` prints) as `PlannerWarning`s."""
    from .errors import warn_user  # lazy: start-up
    from .spec.load import load_path  # lazy: start-up

    for label, value in (("path", path), ("root", root)):
        if not isinstance(value, (str, os.PathLike)) and (label == "path" or value is not None):
            hint = ": for spec text, planner.loads(text)" if isinstance(
                value, (bytes, bytearray)) else ""
            raise TypeError(f"planner.load: `{label}` must be a str or os.PathLike, not "
                            f"{type(value).__name__}{hint}")
    loaded = load_path(path, root)
    warn_user(loaded.warnings)
    return loaded.spec


def loads(text: str, file: str = "<string>", base: str | os.PathLike[str] = ".",
          root: str | os.PathLike[str] | None = None) -> Spec:
    """Load spec text; imports are relative to `base` and stay inside `root` (by default
    the repository holding `base`, else `base`). Raises `SpecError`; `TypeError` for text
    or a file name that is no `str` (as `tomllib.loads` does: bytes are for `load`); issues
    the spec's warnings as `PlannerWarning`s, as `load` does."""
    from .errors import warn_user  # lazy: start-up
    from .spec.load import load_text  # lazy: start-up

    for label, value in (("text", text), ("file", file)):
        if not isinstance(value, str):
            hint = "; decode it (specs are UTF-8) or give its path to `planner.load`" \
                if isinstance(value, (bytes, bytearray)) else ""
            raise TypeError(f"planner.loads: `{label}` must be a str, not "
                            f"{type(value).__name__}{hint}")
    loaded = load_text(text, file, base, root)
    warn_user(loaded.warnings)
    return loaded.spec


def solve(problem: Problem, algorithm: str = "auto", **options: Any) -> Result:
    """Run a placement algorithm (`planner.algorithms.names()`); options as `Options` fields
    (`time_limit_s`, `seed`, `gap`, `solver`, `progress`, ...), with `planner solve`'s
    defaults (`time_limit_s`: 10 s for `auto`, 60 s for the others that take one).

    Returns a `Result`: the `Solution` (plan, status, info, planning_s) with the placement
    and schedule by name and the simulated makespan. Raises `SpecError` for a problem the
    language would reject (located at this call; see `ProblemBuilder`), `UsageError` for an
    unknown algorithm (E601), an option that is no option or has no valid value (E626) or
    that the algorithm does not take (E605: `time_limit_s`, `gap`, `solver`, `emit`,
    `threshold`; `planner.algorithms.taking(option)` lists those that do), a `solver` name
    planner does not know (E820),
    `InfeasibleError` when no plan fits, `TypeError` for a `problem` that is no `Problem`.
    Issues W626 as a `PlannerWarning` (as `solve` prints it) for a pipeline plan torch's
    schedule cannot run as placed.
    """
    from .algorithms import options_of, run  # lazy: start-up
    from .api import Result, check_problem  # lazy: start-up

    checked = options_of(algorithm, **options)  # E601, E626, E605, before any work
    check_problem(problem)
    return _warned(Result.of(problem, run(algorithm, problem, checked)))


def lower_bound(problem: Problem) -> Bounds:
    """The proven lower bounds of `problem` (`planner.bounds.lower_bound`); `SpecError` as
    for `solve`."""
    from .api import check_problem  # lazy: start-up
    from .bounds import lower_bound as _lower_bound  # lazy: start-up

    check_problem(problem)
    return _lower_bound(problem)


def read_plan(problem: Problem, source: str | os.PathLike[str] | Mapping[str, Any]) -> Result:
    """A plan file (`Result.write`, `planner solve --out`), a `--json` document or their
    parsed JSON, for `problem`, as a `Result` whose figures are `simulate --placement`'s
    (a hybrid plan's `replicas` and the devices that `recompute` included), and W626 as
    `simulate` prints it, a `PlannerWarning`. Raises `SpecError` for a file that holds no
    plan of `problem`, `TypeError` for JSON text (give `json.loads(text)`), a `Result` or a
    `Plan`."""
    from .api import check_problem  # lazy: start-up
    from .api import read_plan as _read_plan  # lazy: start-up

    check_problem(problem)
    return _warned(_read_plan(problem, source))


def _warned(result: Result) -> Result:
    """`result`, once the warning the command line prints about its plan is issued as a
    `PlannerWarning`: W626 for a pipeline plan torch's schedule cannot run as placed
    (`solve` and `simulate` print it; `export torch --pipeline` would refuse it, E947)."""
    if result.problem.pipeline is not None:
        from .errors import warn_user  # lazy: start-up
        from .pipeline.runnable import unrunnable  # lazy: numpy, pipeline plans only

        found = unrunnable(result.problem, result.plan.placement)
        warn_user([found] if found is not None else [])
    return result
