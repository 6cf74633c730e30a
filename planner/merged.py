"""The diagnostics of several loads as one command's (`planner check` over many files):
each once, errors before warnings up to the `diagnostics` limit, the rest counted."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from . import limits
from .errors import Diagnostic, Severity, Unshown, tally, unshown

__all__ = ["merge_capped"]


def merge_capped(groups: Iterable[Sequence[Diagnostic]],
                 cap: int | None = None) -> list[Diagnostic]:
    """The diagnostics of several loads (`check` over many files) as one command's: each
    once (a file imported by several reports its errors in each load, under any of its
    names: the first one is kept), the first `cap`
    (the `diagnostics` limit) shown and the rest, with those each load counted past its own
    limit, folded into one E000 at the end. A load whose shown diagnostics were all seen
    before is the same failing import again: its E000 counts the same ones, and is not
    added twice."""
    cap = limits.active().diagnostics if cap is None else cap
    seen: set[tuple[object, ...]] = set()
    shown: list[Diagnostic] = []
    errors = warnings = 0
    real: dict[str, str] = {}  # a file's name -> the file it names
    for group in groups:
        fresh = 0
        for d in group:
            key = (d.code, d.message, d.span and d.span._replace(
                file=_real_file(d.span.file, real)))
            if not isinstance(d, Unshown) and key not in seen:
                seen.add(key)
                shown.append(d)
                fresh += 1
        if fresh or all(isinstance(d, Unshown) for d in group):
            for d in group:
                if isinstance(d, Unshown):
                    errors, warnings = errors + d.errors, warnings + d.warnings
    kept = _errors_first(shown, cap)
    past_errors, past_warnings = tally(d for k, d in enumerate(shown) if k not in kept)
    errors, warnings = errors + past_errors, warnings + past_warnings
    return [d for k, d in enumerate(shown) if k in kept] + (
        [unshown(errors, warnings)] if errors + warnings else [])


def _errors_first(diags: Sequence[Diagnostic], cap: int) -> set[int]:
    """The positions of the `cap` diagnostics shown: the errors first, then the warnings
    (as `DiagnosticSink` keeps them: a file's warnings hid another's error)."""
    if len(diags) <= cap:
        return set(range(len(diags)))
    errors = [k for k, d in enumerate(diags) if d.severity is Severity.ERROR][:cap]
    others = [k for k, d in enumerate(diags) if d.severity is not Severity.ERROR]
    return set(errors) | set(others[:cap - len(errors)])


def _real_file(file: str, real: dict[str, str]) -> str:
    """The file that `file` names, links resolved (`check link.plan a.plan`, where a.plan
    imports the link's target: its errors were reported under both names), cached in
    `real`; a name that is no path (`<stdin>`) as it is."""
    if file not in real:
        real[file] = file if file.startswith("<") else os.path.realpath(file)
    return real[file]
