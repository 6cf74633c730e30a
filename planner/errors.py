"""Diagnostics as values, and the one exception family that carries them.

Every problem the user can cause becomes a `Diagnostic` (code, severity, message, span,
hints). Rendering is separate (`render`), compiler style:

    tiny.plan:3:9: error[E201]: unknown device `gpu9`
      3 |   pin x to gpu9
        |            ^^^^
      = hint: did you mean `gpu0`?
"""

from __future__ import annotations

import difflib
import enum
import itertools
import json
import re
import sys
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import NamedTuple

from . import limits
from .strictjson import Locator, line_column


class Severity(str, enum.Enum):  # noqa: UP042 - a StrEnum would print members as values
    """How bad a diagnostic is."""

    ERROR = "error"
    WARNING = "warning"


class Span(NamedTuple):
    """A region of a source file; lines and columns are 1-based, offsets 0-based.

    A named tuple rather than a frozen dataclass: a 100k-op spec's tree holds 1.5M spans,
    and a tuple is built in a fifth of the time (`fastparse._span`); it is as immutable.
    """

    file: str
    line: int = 1
    column: int = 1
    end_line: int = 1
    end_column: int = 1
    start: int = 0
    end: int = 0

    @classmethod
    def start_of(cls, file: str) -> Span:
        """Line 1, column 1 of `file`: where a whole-file problem is reported."""
        return cls(file, 1, 1, 1, 2, 0, 0)

    @classmethod
    def of_path(cls, file: str) -> Span:
        """The path `file` itself, no place in it (line 0): a folder, or a file that cannot
        be read, has no line 1. Shown as `file: error[...]`, with null line and column in
        JSON; `in_text` is false."""
        return cls(file, 0, 0, 0, 0, 0, 0)

    @property
    def in_text(self) -> bool:
        """Whether the span is a place in the file's text (not `of_path`)."""
        return self.line >= 1

    @property
    def where(self) -> str:
        """`file:line:col`, or `file` alone for a path (`of_path`); newlines as they are."""
        return f"{self.file}:{self.line}:{self.column}" if self.in_text else self.file

    @classmethod
    def at_json_error(cls, file: str, err: json.JSONDecodeError) -> Span:
        """The character of `file` where `json` (or `strictjson`) stopped reading it (its
        line as `line_column` counts them: `json`'s own counts `\n` alone)."""
        line, col = line_column(err.doc, err.pos)
        return cls(file, line, col, line, col + 1, err.pos, err.pos + 1)


_JSON = json.JSONDecoder()


class JsonSpans:
    """Where the reports about one JSON file point: at the value of a path (object keys and
    list indices below `at`, where the data read lies in the file) when the file's text is
    known, else at the file's start. Past `sink`'s limit a report is only counted, so the
    text is not searched; `strictjson.Locator` reads each container once."""

    def __init__(self, file: str, text: str | None, at: Sequence[str | int] = (),
                 sink: DiagnosticSink | None = None) -> None:
        self.file = file
        self.locate = Locator(text) if text is not None else None
        self.at = tuple(at)
        self.sink = sink

    def __call__(self, *path: str | int, inside: str | None = None) -> Span:
        """The value at `path`; for an object or a list, the first text `inside` it (a name
        the message quotes) where it holds one, else its opening bracket."""
        if self.locate is None or (self.sink is not None and self.sink.full):
            return Span.start_of(self.file)
        start, end = self.locate((*self.at, *path))
        doc = self.locate.doc
        if inside and doc.startswith(("{", "["), start):
            try:
                stop = _JSON.raw_decode(doc, start)[1]
            except (ValueError, RecursionError):
                stop = len(doc)
            found = doc.find(inside, start, stop)
            if found >= 0:
                start, end = found, found + len(inside)
        line, col = line_column(doc, start)
        end_line, end_col = line_column(doc, end)
        return Span(self.file, line, col, end_line, end_col, start, end)

    def key(self, *path: str | int) -> Span:
        """The key of the member at `path` (an unknown name is the key's mistake, not its
        value's), else its value (`__call__`)."""
        if self.locate is None or (self.sink is not None and self.sink.full):
            return Span.start_of(self.file)
        found = self.locate.key((*self.at, *path))
        if found is None:
            return self(*path)
        doc = self.locate.doc
        (line, col), (end_line, end_col) = (line_column(doc, k) for k in found)
        return Span(self.file, line, col, end_line, end_col, *found)


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in the user's input."""

    code: str
    message: str
    span: Span | None = None
    hints: tuple[str, ...] = ()
    severity: Severity = Severity.ERROR
    #: related places, e.g. ("first defined here", span)
    notes: tuple[tuple[str, Span], ...] = ()

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (stable keys)."""
        span = self.span
        at = span if span and span.in_text else None  # a path (`Span.of_path`): no line
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "file": span.file if span else None,
            "line": at.line if at else None,
            "column": at.column if at else None,
            "end_line": at.end_line if at else None,
            "end_column": at.end_column if at else None,
            "hints": list(self.hints),
            "notes": [
                {"message": m, "file": s.file, "line": s.line if s.in_text else None,
                 "column": s.column if s.in_text else None}
                for m, s in self.notes
            ],
        }


@dataclass(frozen=True, slots=True)
class Unshown(Diagnostic):
    """E000: the diagnostics past the `diagnostics` limit, counted by severity, so that a
    count of a command's errors is theirs (`tally`), not one for E000 itself."""

    errors: int = 0
    warnings: int = 0


def tally(diags: Iterable[Diagnostic]) -> tuple[int, int]:
    """The number of errors and warnings `diags` report, those an E000 stands for included."""
    errors = warnings = 0
    for d in diags:
        if isinstance(d, Unshown):
            errors, warnings = errors + d.errors, warnings + d.warnings
        elif d.severity is Severity.ERROR:
            errors += 1
        else:
            warnings += 1
    return errors, warnings


class PlannerError(Exception):
    """Base of every error `planner` raises on purpose; carries diagnostics."""

    exit_code = 1

    def __init__(self, diagnostics: Sequence[Diagnostic] | Diagnostic) -> None:
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))

    def __str__(self) -> str:
        """One line per diagnostic, located like the compiler output (`file:line:col: ...`),
        so that a traceback of a library call says where the mistake is."""
        return "\n".join(_located_line(d) for d in self.diagnostics)

    def __reduce__(self) -> tuple[type[PlannerError], tuple[tuple[Diagnostic, ...]]]:
        # rebuilt from the diagnostics (the default would pass the joined message back),
        # so the error crosses process boundaries (`auto`'s workers) intact
        return (type(self), (self.diagnostics,))


def _located_line(d: Diagnostic) -> str:
    """`file:line:col: error[CODE]: message (hint: ...)` on one line (newlines escaped)."""
    s = d.span
    where = f"{_one_line(s.where)}: " if s else ""
    hints = "".join(f" (hint: {_one_line(h)})" for h in d.hints)
    return f"{where}{d.severity.value}[{d.code}]: {_one_line(d.message)}{hints}"


class PlannerWarning(UserWarning):
    """A warning of planner's (a W-code of `planner.codes`, as the command line prints it)
    issued by the Python API with `warnings.warn` (`warn_user`), so that the standard
    filters decide what becomes of it: `warnings.simplefilter("error", PlannerWarning)`
    raises it.
    `diagnostic` is the `Diagnostic`; `str()` its one located line, as a `SpecError`'s."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        # `args` rebuild it (`cls(*args)`, as pytest-xdist passes warnings between processes)
        super().__init__(diagnostic)
        self.diagnostic = diagnostic

    def __str__(self) -> str:
        return _located_line(self.diagnostic)

    @property
    def code(self) -> str:
        return self.diagnostic.code

    @property
    def message(self) -> str:
        return self.diagnostic.message

    @property
    def span(self) -> Span | None:
        return self.diagnostic.span

    @property
    def hints(self) -> tuple[str, ...]:
        return self.diagnostic.hints

    def __reduce__(self) -> tuple[type[PlannerWarning], tuple[Diagnostic]]:
        return (type(self), (self.diagnostic,))  # rebuilt from the diagnostic, as errors are


def warn_user(diags: Iterable[Diagnostic]) -> None:
    """Issue each warning of `diags` as a `PlannerWarning` at the user's call into planner
    (the innermost frame outside the package, as `call_site` finds it), so that a filter
    by module or line, and the message Python prints, name the user's line."""
    import warnings  # lazy: start-up

    level, frame = 1, sys._getframe(0)
    while frame.f_back is not None and _in_planner(frame):
        level, frame = level + 1, frame.f_back
    for d in diags:
        if d.severity is Severity.WARNING:
            warnings.warn(PlannerWarning(d), stacklevel=level)


def _in_planner(frame: FrameType) -> bool:
    module = frame.f_globals.get("__name__", "")
    return bool(module == "planner" or module.startswith("planner."))


class SpecError(PlannerError):
    """The input (a spec, a placement file) is invalid. Exit code 1."""


class UsageError(PlannerError):
    """The command line asks for something impossible (unknown plan, algorithm). Exit 2."""

    exit_code = 2


class PlanChoiceError(UsageError, LookupError):
    """E602: `Spec.plan(name)` names no plan of the spec, or names none where it has several
    (or none). A `LookupError` too, as `Spec.plan` always raised; `reason` is the message
    alone, for callers that report it in their own terms (the CLI's `--plan`)."""

    @property
    def reason(self) -> str:
        return self.diagnostics[0].message


class InfeasibleError(PlannerError):
    """No plan satisfies the constraints (memory caps, pins), or a given plan violates them.

    Exit code 3.
    """

    exit_code = 3


class OutputError(PlannerError):
    """An output file could not be written (a full disk, an I/O error). Exit code 4."""

    exit_code = 4


class SolverError(PlannerError):
    """An external solver failed in a way that left no plan. Exit code 4."""

    exit_code = 4


class SearchLimitError(SolverError):
    """A search ended (its time limit, or a search that covers only some plans) without
    finding a plan, and without a proof that none exists. Exit code 6 (a `SolverError`
    otherwise: whoever records solver failures records it)."""

    exit_code = 6


def did_you_mean(name: str, candidates: Iterable[str]) -> tuple[str, ...]:
    """A 'did you mean' hint for an unknown name, or nothing when no candidate is close.

    A candidate that differs in case alone wins (`HEFT` for `heft`: difflib's ratio, case
    sensitive, found nothing near); else the closest by difflib's ratio (at least 0.6);
    ties go to the first in the candidates' order (declaration order), not to the largest
    string.
    """
    best, best_score = None, 0.0
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(name)
    folded = name.casefold()
    for cand in candidates:
        if best_score <= 1.0 and cand.casefold() == folded and cand != name:
            best, best_score = cand, 2.0  # above any ratio: later candidates cannot win
            continue
        matcher.set_seq1(cand)
        floor = max(0.6, best_score + 1e-12)  # to win, a candidate must beat the best
        if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
            continue  # cheap upper bounds of ratio() already too low
        score = matcher.ratio()
        if score >= 0.6 and score > best_score:
            best, best_score = cand, score
    return (f"did you mean `{best}`?",) if best is not None else ()


def some(names: Sequence[str], limit: int) -> str:
    """The first `limit` of `names` in backticks, then how many more ("`a`, `b` and 3 more"):
    the names a message lists without drowning in them."""
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(f"`{n}`" for n in names[:limit]) + more


def quoted(value: object) -> str:
    """A value read from a JSON file as a message shows it: short, every control character
    escaped (JSON's own escapes), in backticks; a list or an object by its size only."""
    if isinstance(value, (list, dict)):
        return f"of {len(value)} item(s)"
    if isinstance(value, str):
        text = json.dumps(value[:81], ensure_ascii=False)[1:-1]
    else:
        text = json.dumps(value)
    return f"`{text[:80]}{'…' if len(text) > 80 else ''}`"


def json_type(value: object) -> str:
    """`value`'s JSON type as a message names it: `a string`, `a number`, `null`..."""
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "a list", dict: "an object", type(None): "null"}
    return kinds.get(type(value), "a value")


#: where a Python call was made: its code object and instruction offset (`frame.f_lasti`)
CallSite = tuple[CodeType, int]


def call_site() -> CallSite | None:
    """The innermost call outside the `planner` package on the stack: the line of the
    user's code that called into the library (a builder method, a model constructor).

    Cheap (no source is read): the `Span` is made by `site_span` only when reported.
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if not _in_planner(frame):
            return (frame.f_code, frame.f_lasti)
        frame = frame.f_back
    return None


def site_span(site: CallSite | None) -> Span | None:
    """The file, line and columns of a call site (Python 3.11 keeps columns per
    instruction), or None for no site."""
    if site is None:
        return None
    code, lasti = site
    pos = next(itertools.islice(code.co_positions(), lasti // 2, None), None)
    line, end_line, col, end_col = pos or (None, None, None, None)
    line = line or code.co_firstlineno
    column = (col or 0) + 1
    return Span(code.co_filename, line, column, end_line or line,
                end_col + 1 if end_col is not None else column + 1)


@dataclass
class DiagnosticSink:
    """Collects diagnostics during a pass; `raise_if_errors` raises them all at once.

    After the `diagnostics` limit (`planner.limits`) it only counts (`dropped`): a
    generated file with one mistake repeated 100,000 times needs the first few reports,
    not all of them. Callers test `full` before building costly hints (did you mean).
    """

    items: list[Diagnostic] = field(default_factory=list)
    dropped: int = 0
    dropped_errors: int = 0
    cap: int = field(default_factory=lambda: limits.active().diagnostics)

    @property
    def full(self) -> bool:
        """Whether the next diagnostic would only be counted."""
        return len(self.items) >= self.cap

    def _add(self, diag: Diagnostic) -> None:
        if len(self.items) < self.cap:
            self.items.append(diag)
            return
        self.dropped += 1
        if diag.severity is not Severity.ERROR:
            return
        # an error is shown before a warning: the load fails on it (before: past 100
        # warnings it was only counted, and no one asked for the count: `check` said ok)
        last = next((k for k in range(len(self.items) - 1, -1, -1)
                     if self.items[k].severity is not Severity.ERROR), None)
        if last is None:
            self.dropped_errors += 1
        else:
            del self.items[last]
            self.items.append(diag)

    def error(
        self,
        code: str,
        message: str,
        span: Span | None,
        *hints: str,
        notes: tuple[tuple[str, Span], ...] = (),
    ) -> None:
        """Record an error."""
        self._add(Diagnostic(code, message, span, tuple(h for h in hints if h), notes=notes))

    def warning(self, code: str, message: str, span: Span | None, *hints: str) -> None:
        """Record a warning."""
        self._add(Diagnostic(code, message, span, tuple(hints), severity=Severity.WARNING))

    @property
    def has_errors(self) -> bool:
        """Whether any error (not warning) was recorded, shown or counted."""
        return self.dropped_errors > 0 or any(d.severity is Severity.ERROR
                                              for d in self.items)

    def reported(self, ordered: bool = True) -> list[Diagnostic]:
        """The diagnostics shown (in source order, unless not `ordered`), and an E000 that
        counts the rest, where the limit left any out."""
        items = sorted(self.items, key=_order) if ordered else list(self.items)
        if self.dropped:
            items.append(unshown(self.dropped_errors, self.dropped - self.dropped_errors))
        return items

    def raise_if_errors(self, cls: type[PlannerError] = SpecError) -> None:
        """Raise `cls` with every diagnostic so far if any of them is an error."""
        if self.has_errors:
            raise cls(self.reported())


def unshown(errors: int, warnings: int) -> Unshown:
    """E000; W000 where it counts warnings alone (it fails nothing)."""
    return Unshown("E000" if errors else "W000",
                   f"{errors + warnings} more diagnostic(s) not shown", None,
                   ("fix the ones above and run again",),
                   severity=Severity.ERROR if errors else Severity.WARNING,
                   errors=errors, warnings=warnings)


def _order(d: Diagnostic) -> tuple[str, int, int]:
    s = d.span
    return (s.file, s.line, s.column) if s else ("", 0, 0)


class _Lines:
    """Source lines per file, split once (rendering many diagnostics of one big file)."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self.sources = sources
        self.cache: dict[str, list[str]] = {}

    def get(self, file: str) -> list[str] | None:
        if file not in self.cache:
            text = self.sources.get(file)
            if text is None:
                return None
            self.cache[file] = text.split("\n")
        return self.cache[file]


def render(diag: Diagnostic, sources: Mapping[str, str] | _Lines | None = None) -> str:
    """Render one diagnostic like a compiler: location, message, source line, caret, hints."""
    sources = sources if isinstance(sources, _Lines) else _Lines(sources or {})
    span = diag.span
    head = f"{diag.severity.value}[{diag.code}]: {_one_line(diag.message)}"
    lines = [f"{_one_line(span.where)}: {head}" if span else head]
    if span is not None:
        lines.extend(_excerpt(span, sources.get(span.file)))
    for message, where in diag.notes:
        lines.append(f"  = note: {_one_line(message)} at {_one_line(where.where)}")
        lines.extend(_excerpt(where, sources.get(where.file)))
    lines.extend(f"  = hint: {_one_line(h)}" for h in diag.hints)
    return "\n".join(lines)


def _one_line(text: str) -> str:
    """A message or a file name on one line, whatever names it quotes (a name may come from
    JSON, a file name from the pull request)."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


# Control characters of the source (NUL, ESC, ...) are shown as U+FFFD, one column each:
# echoed raw, they would garble the terminal.
_VISIBLE = {i: "\ufffd" for i in (*range(0x20), 0x7F) if i != 0x09}


#: characters never written raw to a terminal (`render.diagnostics.printable` escapes them):
#: C0 and C1 controls but tab and newline, bidi and zero-width formatting, line separators,
#: lone surrogates, and the other invisible ones W265 warns about (invisible operators, the
#: tag block U+E0000-U+E007F)
UNSAFE_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e"
                          "\u2060-\u2069\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]")


def escape_char(char: str) -> str:
    """`char` as `\\uXXXX` (`\\UXXXXXXXX` above U+FFFF)."""
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _cells(text: str) -> int:
    """The terminal columns `text` takes once printed: an unsafe character its escape, a
    wide (East Asian) one two, a combining mark none (a caret counted in characters stood
    left of its token after `"层1"` or `"日本"`)."""
    if text.isascii() and text.isprintable():
        return len(text)
    return sum(len(escape_char(c)) if UNSAFE_CHARS.match(c) else 0 if unicodedata.combining(c)
               else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _excerpt(span: Span, all_lines: list[str] | None) -> list[str]:
    if all_lines is None:
        return []
    if not 1 <= span.line <= len(all_lines):
        return []
    src = all_lines[span.line - 1].rstrip("\r")
    if len(src) > 200:  # generated one-line specs: show a window around the column
        lo = max(0, span.column - 60)
        shown, col = src[lo : lo + 160], span.column - lo
    else:
        shown, col = src, span.column
    width = span.end_column - span.column if span.end_line == span.line else len(shown) - col + 1
    width = max(1, min(width, len(shown) - col + 1))
    gutter = str(span.line)
    pad = " " * len(gutter)
    shown = shown.expandtabs(1).translate(_VISIBLE)
    before, under = _cells(shown[: col - 1]), max(_cells(shown[col - 1 : col - 1 + width]), 1)
    return [
        f" {gutter} | {shown}",
        f" {pad} | {' ' * before}{'^' * under}",
    ]


def render_all(diags: Iterable[Diagnostic], sources: Mapping[str, str] | None = None) -> str:
    """Render several diagnostics, separated by blank lines."""
    lines = _Lines(sources or {})
    return "\n\n".join(render(d, lines) for d in diags)
