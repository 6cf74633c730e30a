"""What planner makes of a `--solver` name: one judgement (`judged`), read by every caller.

A name is known when it has a profile (`solvers/profiles.toml`), is one of Pyomo's
registered solvers (`SolverFactory`), or is a program on PATH (Pyomo runs any other name as
an AMPL solver binary). Of Pyomo's `NAME:SUBSOLVER` forms (it passes `solver=SUBSOLVER` to
NAME) two are known: `asl:NAME`, the AMPL solver library's, runs the program NAME and is
known when NAME is on PATH (before, `asl:` passed whatever followed, and `--solver
asl:nosuch` fell back with exit 0); `gams:NAME` runs GAMS's solver NAME, which GAMS alone
can check. Any other (`highs:foo`) is not: before, it was known by its first part and ran
without the profile's options (its time limit, gap and threads), or fell back. Anything
else cannot run anywhere: before, `--solver nosuch` warned and fell back to the heuristics'
plan with exit 0, so a misspelt solver in CI gave another algorithm's plan. A known solver
that is not installed here still falls back, as documented (`fallback`, the reason on
stderr).

`check_solver` (E820, before any work) and `unusable` (the fallback's reason, in `ilp` and
`pipeilp`) both read `judged`: before, the command line's check and the back-ends'
availability were two rules, and `solve --solver NAME` resolved the name in both.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ...errors import Diagnostic, UsageError, did_you_mean, quoted
from . import backends

#: Pyomo's AMPL solver library prefix: `asl:NAME` runs the program NAME
ASL = "asl:"
#: GAMS's prefix: `gams:NAME` runs GAMS's solver NAME (GAMS checks the name)
GAMS = "gams:"


@dataclass(frozen=True, slots=True)
class Judged:
    """What solver `name` is here: `unknown`, why planner does not know it (E820's words,
    with its `hints`), "" when it does; `unusable`, why it cannot solve the ILP here (the
    fallback's reason), "" when it can."""

    name: str
    unknown: str = ""
    hints: tuple[str, ...] = ()
    unusable: str = ""


def judged(name: str) -> Judged:
    """The judgement of solver `name`, made once per name and PATH in a process:
    `solve --solver NAME` checks the name before any work and the ILP reads the same
    judgement. Pyomo's `Executable` registry, too, keeps what it found until `rehash()`: a
    solver installed into a folder already on PATH is seen by the next process."""
    return _judged(name, os.environ.get("PATH", ""))


@lru_cache(maxsize=64)
def _judged(name: str, path: str) -> Judged:  # `path` keys the cache alone
    profiled = list(backends.profiles())
    if name in profiled:
        return Judged(name, unusable=_not_here(name))
    pyomo = _pyomo_names()
    unknown = _unknown(name, pyomo)
    if not unknown:
        return Judged(name, unusable=_not_here(name))
    return Judged(name, unknown, (
        *_hints(name, profiled, pyomo),
        f"planner's solvers: {', '.join(n for n in profiled if n != 'cpsat')}, or any Pyomo "
        f"solver name, `{ASL}PROGRAM` or `{GAMS}SOLVER`; run solvers/install.sh for cbc and "
        "glpk"), _missing(name))


def _hints(name: str, profiled: list[str], pyomo: list[str]) -> tuple[str, ...]:
    """What to give instead of unknown solver `name` (before the list of solvers)."""
    head, colon, tail = name.partition(":")
    if not colon:
        return did_you_mean(name, [*profiled, *pyomo])
    if f"{head}:" == ASL:
        return ((f"install the AMPL solver program {quoted(tail)}, or put its folder on PATH",)
                if tail else ())
    if f"{head}:" == GAMS:
        return ()
    if head in profiled or head in pyomo:
        return (f"give {quoted(head)} alone",)
    return did_you_mean(head, [*profiled, *pyomo])


def _unknown(name: str, pyomo: list[str]) -> str:
    """Why a name with no profile is no solver planner knows, else ""."""
    if name.startswith(ASL):
        program = name.removeprefix(ASL)
        if not program:
            return f"`{ASL}` names no program: give `{ASL}NAME`, NAME an AMPL solver on PATH"
        if shutil.which(program) is not None:
            return ""
        return (f"Pyomo runs `{ASL}NAME` as the program NAME, and there is no program "
                f"{quoted(program)} on PATH")
    head, colon, tail = name.partition(":")
    if not colon:
        return "" if name in pyomo or shutil.which(name) is not None else (
            "no profile, no Pyomo solver of that name, no such program on PATH")
    if f"{head}:" == GAMS and tail:
        return ""
    if f"{head}:" == GAMS:
        return f"`{GAMS}` names no GAMS solver: give `{GAMS}NAME`"
    form = f"Pyomo's `NAME:SUBSOLVER` form is for `{ASL}` and `{GAMS}` alone"
    if head in backends.profiles():
        return (f"{form}; planner gives {quoted(head)} its profile's options (time limit, gap, "
                "threads) under that name")
    return form if head in pyomo else f"no profile and no Pyomo solver {quoted(head)}"


def _not_here(name: str) -> str:
    """Why known solver `name` cannot solve the ILP here (not a MIP solver, or not
    installed), else ""; `backends.available`'s caveat holds."""
    if not backends.profile(name).pyomo:
        return f"`{name}` is not a MIP solver for the ILP; use --algo {name}"
    return "" if backends.available(name) else _missing(name)


def _missing(name: str) -> str:
    known = ", ".join(n for n in backends.profiles() if n != "cpsat")
    return (f"solver `{name}` is not available here (known: {known}; "
            "run solvers/install.sh for cbc and glpk)")


def _pyomo_names() -> list[str]:
    """Pyomo's registered solver names (imports Pyomo: only for a name with no profile)."""
    return [n for n in backends.import_pyomo().SolverFactory if not n.startswith("_")]


def check_solver(name: str, option: str = "--solver") -> None:
    """Raise `UsageError` E820 when solver `name` is not one planner knows (`judged`)."""
    judgement = judged(name)
    if judgement.unknown:
        raise UsageError(Diagnostic(
            "E820", f"{option}: {quoted(name)} is not a solver planner knows "
            f"({judgement.unknown})", None, judgement.hints))


def unusable(name: str) -> str | None:
    """Why solver `name` cannot solve the ILP here (not a MIP solver, not installed, or a
    name planner does not know, reached without `check_solver`), else None (`judged`)."""
    return judged(name).unusable or None


def solve_pyomo(model: Any, name: str, **kwargs: Any) -> backends.Outcome:
    """`backends.solve_pyomo(model, name, **kwargs)` when solver `name` can solve the ILP
    here, else the `error` outcome with the reason (`unusable`): no model is handed over."""
    why = unusable(name)
    return backends.Outcome("error", why) if why else backends.solve_pyomo(model, name,
                                                                            **kwargs)
