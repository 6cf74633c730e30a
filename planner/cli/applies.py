"""Which `solve` options apply to which algorithms: the registry's `AlgorithmInfo.options`,
so that a new algorithm needs no edit here. Nothing here imports an algorithm module.

An option the user passes to an algorithm that ignores it is a usage error (E605): a
silently ignored `--solver cbc` would let a user believe CBC produced the plan.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..algorithms import get, taking
from ..errors import Diagnostic, UsageError

#: `solve` option -> the `Options` field it sets, for the options an algorithm may not take
#: (`--seed` is never rejected: every run has a seed)
APPLIES: dict[str, str] = {
    "--time-limit": "time_limit_s",
    "--gap": "gap",
    "--emit": "emit",
    "--solver": "solver",
}


def applicable_to(option: str) -> list[str]:
    """The registered algorithms `option` (a key of `APPLIES`) applies to, in registry
    order."""
    return list(taking(APPLIES[option]))


def check_applicable(algo: str, given: Iterable[str]) -> None:
    """Raise `UsageError` E605 when options in `given` do not apply to algorithm `algo`
    (E601 when `algo` is not registered)."""
    info = get(algo)
    bad = [o for o in given if o in APPLIES and not info.takes(APPLIES[o])]
    if not bad:
        return
    listed = bad[0] if len(bad) == 1 else ", ".join(bad[:-1]) + " and " + bad[-1]
    verb = "does" if len(bad) == 1 else "do"
    hints = tuple(f"{o} applies to: {', '.join(applicable_to(o))}" for o in bad)
    raise UsageError(Diagnostic("E605", f"{listed} {verb} not apply to --algo {algo}", None,
                                (*hints, f"drop {listed}, or choose one of those algorithms")))
