"""Which `--solver` names planner knows, checked before any work.

A name is known when it has a profile (`solvers/profiles.toml`), is one of Pyomo's
registered solvers (`SolverFactory`, a `name:subsolver` form by its first part), or is a
program on PATH (Pyomo runs any other name as an AMPL solver binary). Anything else cannot
run anywhere: before, `--solver nosuch` warned and fell back to the heuristics' plan with
exit 0, so a misspelt solver in CI gave another algorithm's plan. A known solver that is
not installed here still falls back, as documented (`fallback`, the reason on stderr).
"""

from __future__ import annotations

import shutil

from ...errors import Diagnostic, UsageError, did_you_mean, quoted
from . import backends


def _pyomo_names() -> list[str]:
    """Pyomo's registered solver names (imports Pyomo: only for a name with no profile)."""
    return [n for n in backends.import_pyomo().SolverFactory if not n.startswith("_")]


def check_solver(name: str, option: str = "--solver") -> None:
    """Raise `UsageError` E820 when solver `name` is not one planner knows (above)."""
    profiled = list(backends.profiles())
    if name in profiled:
        return
    pyomo = _pyomo_names()
    if name.split(":", 1)[0] in pyomo or shutil.which(name) is not None:
        return
    raise UsageError(Diagnostic(
        "E820", f"{option}: {quoted(name)} is not a solver planner knows (no profile, no Pyomo "
        "solver of that name, no such program on PATH)", None,
        (*did_you_mean(name, [*profiled, *pyomo]),
         f"planner's solvers: {', '.join(n for n in profiled if n != 'cpsat')}, or any "
         "Pyomo solver name; run solvers/install.sh for cbc and glpk")))
