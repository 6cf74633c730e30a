"""Which `solve` options apply to which algorithms, derived from the registry's
`AlgorithmInfo` capabilities, so that a new algorithm needs no edit here.

An option the user passes to an algorithm that ignores it is a usage error (E605): a
silently ignored `--solver cbc` would let a user believe CBC produced the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..algorithms import AlgorithmInfo, get, names
from ..errors import Diagnostic, UsageError

#: `auto` runs CP-SAT as its last phase and passes it --time-limit and --gap (not --emit).
#: AlgorithmInfo has no field for "runs an exact phase", so this one name stands for it.
_PORTFOLIO = frozenset({"auto"})


def _exact_phase(info: AlgorithmInfo) -> bool:
    return info.exact or info.name in _PORTFOLIO


#: option -> the capability an algorithm needs for the option to mean anything
APPLIES: dict[str, Callable[[AlgorithmInfo], bool]] = {
    "--time-limit": lambda info: _exact_phase(info) or info.anytime,
    "--gap": _exact_phase,
    "--emit": lambda info: info.exact,
    "--solver": lambda info: info.needs_solver,
}


def applicable_to(option: str) -> list[str]:
    """The registered algorithms `option` applies to, in registry order."""
    return [n for n in names() if APPLIES[option](get(n))]


def check_applicable(algo: str, given: Iterable[str]) -> None:
    """Raise `UsageError` E605 when options in `given` do not apply to algorithm `algo`."""
    info = get(algo)
    bad = [o for o in given if o in APPLIES and not APPLIES[o](info)]
    if not bad:
        return
    listed = bad[0] if len(bad) == 1 else ", ".join(bad[:-1]) + " and " + bad[-1]
    verb = "does" if len(bad) == 1 else "do"
    hints = tuple(f"{o} applies to: {', '.join(applicable_to(o))}" for o in bad)
    raise UsageError(Diagnostic("E605", f"{listed} {verb} not apply to --algo {algo}", None,
                                (*hints, f"drop {listed}, or choose one of those algorithms")))
