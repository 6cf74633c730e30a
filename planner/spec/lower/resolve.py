"""Op names and glob patterns resolved against a graph, within the load's budget of
glob work.
"""

from __future__ import annotations

import bisect
import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ... import limits
from ...errors import DiagnosticSink
from .. import ast
from .attrs import hints

_GLOB = re.compile(r"[*?\[]")


def resolve_op(sink: DiagnosticSink, n: ast.Name, index: Mapping[str, int],
               g: str) -> int | None:
    """The index of op `n` in graph `g` (`index`), or None (E203, with the nearest names)."""
    i = index.get(n.text)
    if i is None:
        sink.error("E203", f"unknown op `{n.text}` in graph `{g}`", n.span,
                   *hints(sink, n.text, index), "declare it with `op NAME { ... }`")
    return i


@dataclass
class Budget:
    """What is left of the limits that all the declarations of one load share
    (`limits.py`): counted across clusters and graphs, so that many small declarations
    cannot add up to what one may not ask for (200 clusters of `gpu[0..1023]` in 10 KB)."""

    devices: int
    link_pairs: int
    glob_names: int
    glob_reported: bool = False  # E015 is said once; later patterns are not matched
    devices_written: int = 0  # every device the load's clusters declare: E246's hint

    @classmethod
    def active(cls) -> Budget:
        lim = limits.active()
        return cls(lim.devices, lim.link_pairs, lim.glob_names)


class Globs:
    """Glob patterns over the op names of one graph: each pattern is matched once, and
    only against the names that start with its literal prefix (found by bisection), so
    `colocate "layer12/*"` on a 100,000-op graph does not scan every name. A pattern that
    starts with `*` does scan every name, and every use of a pattern hands its ops over,
    so both are charged to the load's `glob_names` budget before they are done."""

    def __init__(self, index: Mapping[str, int]) -> None:
        self.names = sorted(index)
        self.index = index
        self.done: dict[str, list[int]] = {}
        #: names E204's hints may still test ignoring case (bounds the work of many misses)
        self.case_budget = 1_000_000

    def match(self, pattern: str, budget: Budget) -> list[int] | None:
        """The indices of the ops whose name matches `pattern`; None when the budget
        cannot pay for it."""
        hits = self.done.get(pattern)
        if hits is None:
            m = _GLOB.search(pattern)
            prefix = pattern[: m.start()] if m else pattern
            lo = bisect.bisect_left(self.names, prefix)
            hi = bisect.bisect_left(self.names, prefix + "\U0010ffff", lo)
            if hi - lo > budget.glob_names:
                return None
            budget.glob_names -= hi - lo
            test = re.compile(fnmatch.translate(pattern)).match
            hits = [self.index[n] for n in self.names[lo:hi] if test(n)]
            self.done[pattern] = hits
        if len(hits) > budget.glob_names:
            return None
        budget.glob_names -= len(hits)
        return hits


class GlobTable(dict[str, Globs]):
    """Graph name -> its `Globs`, with the load's budget they draw on."""

    def __init__(self, budget: Budget) -> None:
        super().__init__()
        self.budget = budget


def _pattern_hints(sink: DiagnosticSink, pattern: str, globs: Globs) -> tuple[str, ...]:
    """E204's hints: the op a pattern would match but for case (the first), and the rule."""
    rule = ("a pattern matches whole op names, case-sensitively (`*` any characters, `?` "
            "one); fix it, or remove it")
    if sink.full or len(globs.names) > globs.case_budget:
        return (rule,)
    globs.case_budget -= len(globs.names)
    test = re.compile(fnmatch.translate(pattern), re.IGNORECASE).match
    near = next((name for name in globs.names if test(name)), None)
    return ((f"it would match `{near}` but for case",) if near is not None else ()) + (rule,)


def resolve_ops(sink: DiagnosticSink, names: Iterable[ast.Name], index: Mapping[str, int],
                g: str, globs: GlobTable) -> list[int]:
    """Op names or glob patterns -> sorted unique op indices (unknowns reported)."""
    out: set[int] = set()
    budget = globs.budget
    for n in names:
        if n.text in index:
            out.add(index[n.text])
        elif _GLOB.search(n.text):
            if budget.glob_reported:
                continue
            if g not in globs:
                globs[g] = Globs(index)
            hits = globs[g].match(n.text, budget)
            if hits is None:
                budget.glob_reported = True
                lim = limits.active().glob_names
                sink.error("E015", f"glob patterns would test more than {lim:_} op names",
                           n.span, "name the ops, give patterns a literal prefix (`layer1/*`), "
                           "or " + limits.raise_hint("glob_names", lim + 1, 2 * lim))
                continue
            if not hits:
                sink.error("E204", f"pattern `{n.text}` matches no op of graph `{g}`", n.span,
                           *_pattern_hints(sink, n.text, globs[g]))
            out.update(hits)
        else:
            resolve_op(sink, n, index, g)
    return sorted(out)
