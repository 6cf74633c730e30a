"""Measured op times from a file, laid over an imported workload (`import ... --times FILE`).

Three formats, told apart by their content:

- CSV: one `name,seconds` row per op (quote names holding commas; a name given twice is
  E934); a first row whose second field is not a number is a header; blank lines and
  lines starting with `#` are skipped;
- JSON: an object `{"op name": seconds, ...}`, each time a JSON number (`"0.5"`, a string,
  is E934 at it: a CSV's times are text, a JSON file's are not; so is `-1`);
- a `torch.profiler` Chrome trace (JSON with `traceEvents`, as `prof.export_chrome_trace`
  writes it): the complete events (`"ph": "X"`) named like an op give its time, the median
  of their durations (one per profiled step). Events recorded with
  `torch.profiler.record_function(NAME)` are preferred (on the GPU's timeline when there is
  one); without any, every complete event counts. `planner.io.torch_import.run_annotated`
  runs a traced model with one such event per op. A `dur` that is no JSON number of
  microseconds (`"500"`, a string) is E934 at it, and so is a complete event without `dur`.

A time the spec cannot hold (above 0 but under 0.001 ns, or over 1000000 s: microseconds
in a file of seconds) is E934 at it, in the times file, not the model file.

Times replace the op's `time` (or `time[KIND]` with `--times-kind KIND`); ops the file does
not name keep their estimate. Names the file gives that are no op are a warning (W937); a
file naming no op at all is an error (E936).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import statistics
from pathlib import Path
from typing import Any

from ..errors import Diagnostic, JsonSpans, Severity, Span, SpecError, did_you_mean
from ..spec.load import read_source
from ..strictjson import loads as strict_loads
from ..units import range_side, range_text
from ..workload import Workload

#: Chrome-trace categories of `record_function` ranges, the GPU's timeline first
ANNOTATIONS = ("gpu_user_annotation", "user_annotation")


def read_times(path: str | os.PathLike[str]) -> dict[str, float]:
    """`{op name: seconds}` from a CSV, JSON or Chrome-trace file (see the module doc)."""
    shown = str(path)
    text = read_source(Path(path), shown, kind="times")
    if text.lstrip()[:1] in ("{", "["):
        try:
            data = strict_loads(text)
        except json.JSONDecodeError as err:  # no span: it may be no times file at all
            raise SpecError(Diagnostic(
                "E935", f"{shown} is not valid JSON (line {err.lineno}, column "
                f"{err.colno}): {err.msg}", None)) from None
        return _from_json(data, shown, text)
    return _from_csv(text, shown)


def _not_times(shown: str) -> SpecError:
    """E935 for a file whose first rows are no `name,seconds` rows: nothing of it is quoted
    (`--times /etc/passwd`, or a link to `/proc/self/environ`, must not print it)."""
    return SpecError(Diagnostic(  # no span: a caret line would show a line of it
        "E935", f"{shown} is not a times file: it holds no `name,seconds` row or op time",
        None, ("give a CSV of `name,seconds` rows, a JSON object {\"op\": seconds} or a "
               "torch.profiler Chrome trace",)))


def _bad(shown: str, line: int, message: str, *hints: str) -> SpecError:
    return SpecError(Diagnostic("E934", message, Span(shown, line, 1, line, 2), hints))


#: a CSV cell's number as a file writes one: ASCII digits, a point, an exponent (Python's
#: `float` reads `1_000`, Arabic-Indic digits, `infinity` and `nan` too)
_DECIMAL = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or (isinstance(value, str)
                                   and not _DECIMAL.fullmatch(value.strip(" \t"))):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return (x or 0.0) if math.isfinite(x) and x >= 0 else None  # -0.0 is 0


def _json_number(value: Any) -> bool:
    """Whether `value` is a JSON number (not a string, nor `true`)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_seconds(value: Any) -> float | None:
    """A JSON file's time: a number (not a string, nor `true`) finite and >= 0, else None."""
    return _seconds(value) if _json_number(value) else None


def _out_of_range(name: str, seconds: float, at: Span, given: str) -> SpecError | None:
    """E934 at `at` for a time the spec cannot hold (above 0 but under 0.001 ns, or over
    1000000 s), `given` as the file writes it; None for one it can. Found here, it is
    the times file's: the spec's lowering found it in the spec made from the model file,
    E260 or E223 at that file ("correct them there"), which holds no such time."""
    side = range_side(seconds, "time")
    if side is None:
        return None
    unit = ("times are in seconds (a Chrome trace's `dur`: microseconds)" if side == "above"
            else "write 0 for an op that takes no time")
    return SpecError(Diagnostic(
        "E934", f"the time of `{name}`, {given}, is {side} the valid range of a time", at,
        (f"a time is {range_text('time')}", unit)))


def _numeric(text: str) -> bool:
    """Whether a cell is meant as a number: a header's (`seconds`, `time_s`) holds no digit;
    `1_000` or `١٢` is a number written wrong, not a header to skip."""
    return any(c.isdigit() for c in text)


def _from_csv(text: str, shown: str) -> dict[str, float]:
    out: dict[str, float] = {}
    lines: dict[str, int] = {}  # name -> the line of its time
    rows = csv.reader(io.StringIO(text))
    first = True
    header = False  # a `name,seconds` header makes it a times file as a first row does
    try:
        for row in rows:
            first, header = _csv_row(row, rows.line_num, shown, (out, lines), first, header)
    except csv.Error:  # a stray carriage return or NUL outside quotes
        if not out and not header:  # not (yet) a times file: quote none of it
            raise _not_times(shown) from None
        raise _bad(shown, rows.line_num, "a carriage return or NUL character outside quotes",
                   "save the file with plain line ends") from None
    if not out:
        raise _not_times(shown)
    return out


def _csv_row(row: list[str], line: int, shown: str,
             found: tuple[dict[str, float], dict[str, int]], first: bool,
             header: bool) -> tuple[bool, bool]:
    """Add one row's time to `found` (times, and the line of each); returns the new
    (first, header)."""
    out, lines = found
    if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
        return first, header
    if len(row) != 2:
        if not out and not header:  # not (yet) a times file: say so, quoting none of it
            raise _not_times(shown)
        raise _bad(shown, line, f"expected `name,seconds`, found {len(row)} field(s)",
                   "quote a name that holds a comma: \"a,b\",0.001")
    name, raw = row[0].strip(), row[1].strip()
    seconds = _seconds(raw)
    if seconds is None:
        if first and not _numeric(raw):  # a header row
            return False, True
        if not out and not header:
            raise _not_times(shown)
        raise _bad(shown, line, f"`{raw}` is not a number of seconds (finite, >= 0)")
    wrong = _out_of_range(name, seconds, Span(shown, line, 1, line, 2), f"{raw} s")
    if wrong is not None:
        raise wrong
    if name in out:  # the last used to win without a word
        raise _bad(shown, line, f"`{name}` is given a time twice, first on line {lines[name]}",
                   "give one row per op (for several runs, one time: their median, say)")
    out[name] = seconds
    lines[name] = line
    return False, header


def _from_json(data: Any, shown: str, text: str) -> dict[str, float]:
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if isinstance(events, list):
        return _from_trace(events, JsonSpans(shown, text, () if events is data else
                                             ("traceEvents",)))
    if not isinstance(data, dict) or not data:
        raise SpecError(Diagnostic(
            "E935", f"{shown} is neither an object of op times nor a Chrome trace",
            Span.start_of(shown), ('expected {"op": seconds, ...} or {"traceEvents": [...]}',)))
    values = data.values()
    # no time in it (a credentials file?): quote none of it. Times written wrong are located
    # only where every value is a number: a JSON number (`{"a": -1}`, which was E935 "no op
    # time" beside a file's one bad time located) or a string of one (`{"a": "0.5"}`): a
    # secret is rarely all digits
    if not any(_json_seconds(v) is not None for v in values) and not all(
            _seconds(v) is not None or _json_number(v) for v in values):
        raise _not_times(shown)
    out: dict[str, float] = {}
    where = JsonSpans(shown, text)
    for name, value in data.items():
        seconds = _json_seconds(value)
        if seconds is None:
            at = where(name)
            raise SpecError(Diagnostic(
                "E934", f"the time of `{name}` is not a number of seconds (finite, >= 0): "
                f"{_written(where, at, value)}", at, _unquote_hint(value)))
        at = where(name)
        wrong = _out_of_range(name, seconds, at, f"{_written(where, at, value)} s")
        if wrong is not None:
            raise wrong
        out[name] = seconds
    return out


def _from_trace(events: list[Any], at: JsonSpans) -> dict[str, float]:
    shown = at.file
    spans: dict[str, dict[str, list[float]]] = {}
    first: dict[str, int] = {}  # an op name -> its first complete event, where E934 points
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X" or not isinstance(e.get("name"), str):
            continue
        if "dur" not in e:  # was skipped without a word
            raise SpecError(Diagnostic(
                "E934", f"complete event `{e['name']}` has no `dur`", at(i),
                ('a `"ph": "X"` event gives its duration in `dur`, in microseconds',)))
        spans.setdefault(str(e.get("cat", "")), {}).setdefault(e["name"], []).append(
            _trace_dur(e["dur"], e["name"], at, i))
        first.setdefault(e["name"], i)
    chosen: dict[str, list[float]] = {}
    for cat in (*ANNOTATIONS, None):
        if cat is None:
            if not chosen:
                for by_name in spans.values():
                    for name, durs in by_name.items():
                        chosen.setdefault(name, []).extend(durs)
            break
        for name, durs in spans.get(cat, {}).items():
            chosen.setdefault(name, durs)
    if not chosen:
        raise SpecError(Diagnostic("E935", f"{shown}: a Chrome trace without complete "
                                   "(`\"ph\": \"X\"`) events", Span.start_of(shown)))
    out = {name: statistics.median(durs) * 1e-6 for name, durs in chosen.items()}
    for name, seconds in out.items():
        wrong = _out_of_range(name, seconds, at(first[name], "dur"),
                              f"a median `dur` of {seconds * 1e6:g} us")
        if wrong is not None:
            raise wrong
    return out


def _trace_dur(value: Any, name: str, at: JsonSpans, i: int) -> float:
    """A complete event's `dur`, in microseconds: a JSON number, finite and >= 0, else E934
    at it (`"dur": "500"` was read as 500 us without a word)."""
    dur = _json_seconds(value)
    if dur is None:
        span = at(i, "dur")
        raise SpecError(Diagnostic(
            "E934", f"the duration of event `{name}` is not a number of microseconds (finite, "
            f">= 0): {_written(at, span, value)}", span, _unquote_hint(value)))
    return dur


def _written(where: JsonSpans, at: Span, value: Any, cap: int = 60) -> str:
    """`value` as the file writes it (`1e400`, which Python reads as inf and `json.dumps`
    writes `Infinity`), at most `cap` characters; `json.dumps(value)` without its text."""
    doc = where.locate.doc if where.locate is not None else None
    shown = doc[at.start:at.end] if doc is not None and at.end > at.start else json.dumps(value)
    return shown if len(shown) <= cap else shown[:cap - 3] + "..."


def _unquote_hint(value: Any) -> tuple[str, ...]:
    """For a time written as a string of a number (`"0.5"`), how to write it."""
    if isinstance(value, str) and _seconds(value) is not None:
        return (f"write it as a JSON number, without quotes: {json.dumps(_seconds(value))}",)
    return ()


def overlay_times(w: Workload, times: dict[str, float], file: str,
                  kind: str | None = None) -> tuple[int, list[Diagnostic]]:
    """Set the time (or `time[kind]`) of every op of `w` that `times` names.

    Returns how many ops got a time, and warnings (W937) for names that are no op. Raises
    `SpecError` (E936) when no name is an op's.
    """
    ops = {o.name: o for o in w.ops}
    hit = 0
    for name, seconds in times.items():
        op = ops.get(name)
        if op is None:
            continue
        hit += 1
        if kind is None:
            op.time_s = seconds
        else:
            op.time_by_kind[kind] = seconds
    strays = [n for n in times if n not in ops]
    where = Span.start_of(file)
    if not hit:
        first = next(iter(times), "")
        raise SpecError(Diagnostic(
            "E936", f"no name in {file} is an op of graph `{w.name}` ({len(times)} names, "
            f"for example `{first}`)", where,
            did_you_mean(first, ops) or (f"op names look like `{next(iter(ops), '')}`",)))
    warnings: list[Diagnostic] = []
    if strays:
        shown = ", ".join(f"`{n}`" for n in strays[:5])
        more = f" and {len(strays) - 5} more" if len(strays) > 5 else ""
        warnings.append(Diagnostic(
            "W937", f"{len(strays)} name(s) in {file} are no op of graph `{w.name}`: "
            f"{shown}{more}; ignored", where, did_you_mean(strays[0], ops),
            severity=Severity.WARNING))
    return hit, warnings
