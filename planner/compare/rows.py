"""Result rows: the schema, derived columns, ordering, and CSV / JSON / JSONL files.

One row per run (spec × plan × algorithm × setting), tidy data for pandas. Every row has
every field of `FIELDS`, in that order; a missing value is `None` (an empty CSV cell,
`null` in JSON). Rows are deterministic except the fields in `TIMING_FIELDS`.

Files and `--json` hold the columns that apply (`columns`): a sweep of plans under the
makespan objective only, with `--objective` and `--microbatches` left at `spec`, has the
columns it had before those options existed, `spec_sha256` and `planner_version`. Rows read
from an older file get `spec` for the settings it lacks (`SETTING_DEFAULTS`), so resuming
one carries on where it stopped, and no `spec_sha256` or `planner_version` (what they were
computed from, or with, is unknown: a resumed sweep runs them again,
`planner.compare.resume`).

Under the pipeline objective a row has, besides the one-pass columns (makespan, bound,
peak memory), the plan run as the pipeline (`planner.pipeline.schedule.run`):
`iteration_s`, `time_per_microbatch_s`, `period_s`, `bubble_fraction`, the bounds
(`planner.pipeline.bound`), and `pipeline_fits` with the most loaded device's pipeline
memory; `status`, `feasible` and `violations` are then the pipeline's verdict (as `planner
solve` judges a pipeline plan: every one-pass rule but memory, and the pipeline's memory),
and "best" (`ratio_to_best`, wins) is the shortest iteration (`score`).

Statuses:

- `optimal`, `feasible`, `fallback` — the algorithm's own status, and the simulator found
  the plan valid: these rows have a makespan and count for `ratio_to_best` and wins.
- `infeasible` — no plan satisfies the memory caps and pins (`InfeasibleError` with a
  proof: an E3xx code, E813 or E819).
- `no_plan` — the algorithm found no plan and nothing proves that none exists
  (`InfeasibleError` without a proof: a heuristic's E704, E706, E818; `SearchLimitError`:
  E709, E811, E821, a search that ended at its limit).
- `violated` — the algorithm returned a plan the simulator rejects (see `reason`).
- `invalid` — the point cannot run: the setting does not apply (`--devices` larger than the
  cluster) or the spec or plan is unusable (`SpecError`, `UsageError`).
- `solver_error` — an external solver failed and left no plan (`SolverError` but
  `SearchLimitError`).
- `error` — any other exception (`reason` is `Type: message`): a bug, reported as data.
- `timeout` — the point ran past its hard limit (twice `time_limit_s` plus 30 s) and its
  worker was stopped.
- `crashed` — the worker process died twice running this point (a segfault, the OOM
  killer, a lost Ray node). A resumed sweep runs crashed points again.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..algorithms import names as algorithm_names
from ..errors import Diagnostic, UsageError
from ..files import write_text_atomic
from ..strictjson import dumps as strict_dumps
from ..strictjson import loads as strict_loads
from .settings import (
    DEFAULT_MICROBATCHES,
    DEFAULT_OBJECTIVE,
    Setting,
    bandwidth_key,
    devices_key,
    memory_key,
    microbatches_key,
    objective_key,
)

Row = dict[str, Any]

#: every column, in order, with its type (for reading CSV back)
FIELDS: tuple[tuple[str, type], ...] = (
    ("spec", str),
    ("plan", str),
    ("algorithm", str),
    ("bandwidth", str),
    ("memory", str),
    ("devices", str),
    ("objective", str),
    ("microbatches", str),
    ("time_limit_s", float),
    #: what the row was computed from: the SHA-256 of the spec's sources, imports included
    ("spec_sha256", str),
    #: the version of planner that computed the row (`planner.version.__version__`)
    ("planner_version", str),
    ("status", str),
    ("reason", str),
    ("makespan_s", float),
    ("lower_bound_s", float),
    ("ratio_to_best", float),
    ("ratio_to_bound", float),
    ("planning_s", float),
    ("wall_s", float),
    ("devices_used", int),
    ("n_devices", int),
    ("n_ops", int),
    ("n_edges", int),
    ("peak_memory_bytes", int),
    ("memory_cap_bytes", int),
    ("peak_memory_device", str),
    ("feasible", bool),
    ("violations", int),
    ("transfers", int),
    ("transfer_bytes", int),
    ("chosen", str),
    ("solver", str),
    #: `relative_gap(makespan_s, best bound)` for every valid plan, never an algorithm's own
    ("gap", float),
    ("objective_s", float),
    ("bound_s", float),
    # under the pipeline objective only (PIPELINE_FIELDS)
    ("schedule", str),
    ("n_microbatches", int),
    ("iteration_s", float),
    ("time_per_microbatch_s", float),
    ("period_s", float),
    ("bubble_fraction", float),
    ("period_bound_s", float),
    ("iteration_bound_s", float),
    ("period_gap", float),
    ("pipeline_fits", bool),
    ("pipeline_memory_bytes", int),
    ("pipeline_memory_cap_bytes", int),
    ("pipeline_memory_device", str),
)
FIELD_NAMES: tuple[str, ...] = tuple(name for name, _ in FIELDS)
_TYPES: dict[str, type] = dict(FIELDS)

#: fields that vary between identical runs (wall-clock measurements)
TIMING_FIELDS: frozenset[str] = frozenset({"planning_s", "wall_s"})
#: statuses of rows with a valid plan (these have a makespan)
OK_STATUSES: frozenset[str] = frozenset({"optimal", "feasible", "fallback"})
#: statuses a resumed sweep runs again (infrastructure failures, not results)
RETRY_STATUSES: frozenset[str] = frozenset({"crashed"})
#: the fields that name a point (`spec` as shown); a resumed sweep reuses a row only when
#: its `spec_sha256` is the spec's too (`content_key`)
KEY_FIELDS: tuple[str, ...] = ("spec", "plan", "algorithm", "bandwidth", "memory", "devices",
                               "objective", "microbatches", "time_limit_s")
#: the fields that identify a group of rows compared with each other (same problem)
GROUP_FIELDS: tuple[str, ...] = ("spec", "plan", "bandwidth", "memory", "devices",
                                 "objective", "microbatches", "time_limit_s")
#: the settings added after the first files were written, and their value in those files
SETTING_DEFAULTS: dict[str, str] = {"objective": DEFAULT_OBJECTIVE,
                                    "microbatches": DEFAULT_MICROBATCHES}
#: the columns of a run under the pipeline objective (empty for every other run)
PIPELINE_FIELDS: tuple[str, ...] = FIELD_NAMES[FIELD_NAMES.index("schedule"):]


def columns(rows: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The columns that apply to `rows` (module docstring): every field, less the settings
    `objective` and `microbatches` when every row has them at `spec`, and less
    `PIPELINE_FIELDS` when no row is a pipeline run or asked to be one."""
    settings = pipeline = False
    for r in rows:
        settings = settings or any(r.get(k) not in (None, v) for k, v in SETTING_DEFAULTS.items())
        pipeline = pipeline or r.get("objective") == "pipeline" or is_pipeline(r)
        if settings and pipeline:
            return FIELD_NAMES
    return tuple(k for k in FIELD_NAMES if (settings or k not in SETTING_DEFAULTS)
                 and (pipeline or k not in PIPELINE_FIELDS))


def empty_row(**values: Any) -> Row:
    """A row with every field `None` except `values` (unknown names are a bug: KeyError)."""
    row: Row = dict.fromkeys(FIELD_NAMES)
    for k, v in values.items():
        if k not in row:
            raise KeyError(f"unknown row field {k!r}")
        row[k] = v
    return row


def row_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The point a row belongs to."""
    return tuple(_norm_limit(row[k]) if k == "time_limit_s" else row[k] for k in KEY_FIELDS)


def group_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The group (same problem under the same setting) a row is compared within."""
    return tuple(_norm_limit(row[k]) if k == "time_limit_s" else row[k] for k in GROUP_FIELDS)


def _norm_limit(v: Any) -> float | None:
    return None if v is None else float(v)


def row_setting(row: Mapping[str, Any]) -> Setting:
    """The setting of a row."""
    return Setting(row["bandwidth"], row["memory"], row["devices"],
                   row.get("objective") or DEFAULT_OBJECTIVE,
                   row.get("microbatches") or DEFAULT_MICROBATCHES)


def is_pipeline(row: Mapping[str, Any]) -> bool:
    """Whether the row was run as a pipeline (it has the pipeline's figures)."""
    return row.get("n_microbatches") is not None


def score(row: Mapping[str, Any]) -> float | None:
    """What "best" minimises: the simulated iteration under the pipeline objective, else
    the simulated makespan (None when the row has no such finite number)."""
    v = row.get("iteration_s") if is_pipeline(row) else row.get("makespan_s")
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def is_ok(row: Mapping[str, Any]) -> bool:
    """Whether the row has a valid plan and a finite makespan (and, under the pipeline
    objective, a finite iteration)."""
    ms = row.get("makespan_s")
    return (row.get("status") in OK_STATUSES and isinstance(ms, (int, float))
            and math.isfinite(ms) and score(row) is not None)


def _algo_position(name: str) -> tuple[int, str]:
    known = algorithm_names()
    return (known.index(name), "") if name in known else (len(known), name)


def sort_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """Deterministic order: spec, plan, objective, micro-batches, devices, memory,
    bandwidth, time limit, algorithm."""
    return (row["spec"], row["plan"],
            objective_key(row.get("objective") or DEFAULT_OBJECTIVE),
            microbatches_key(row.get("microbatches") or DEFAULT_MICROBATCHES),
            devices_key(row["devices"]), memory_key(row["memory"]),
            bandwidth_key(row["bandwidth"]), _norm_limit(row["time_limit_s"]) or 0.0,
            _algo_position(row["algorithm"]))


def finalize(rows: Iterable[Row]) -> list[Row]:
    """Sorted copies of `rows` with `ratio_to_best` filled in per group.

    The best row of a group is the one with the smallest `score` (simulated makespan, or
    iteration under the pipeline objective) among the rows with a valid plan; other rows
    get `None`, as do those with a positive score where the best is 0 (no finite ratio:
    `1.0` there read as a tie with the best).
    """
    out = [dict(r) for r in rows]
    best: dict[tuple[Any, ...], float] = {}
    for r in out:
        v = score(r)
        if is_ok(r) and v is not None:
            k = group_key(r)
            best[k] = min(best.get(k, math.inf), v)
    for r in out:
        b = best.get(group_key(r))
        v = score(r) if is_ok(r) else None
        r["ratio_to_best"] = (v / b if v is not None and b is not None and b > 0
                              else (1.0 if v == 0 and b == 0 else None))
    out.sort(key=sort_key)
    return out


def wins(rows: Sequence[Mapping[str, Any]], rel_tol: float = 1e-9) -> dict[str, dict[str, int]]:
    """Per algorithm: `wins` (groups where it had the best `score`, ties all win),
    `groups` (groups it ran in), `ok` and `failed` row counts. Algorithms in registry order.
    """
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(group_key(r), []).append(r)
    stats: dict[str, dict[str, int]] = {}
    for members in groups.values():
        ok = [r for r in members if is_ok(r)]
        best = min((score(r) or 0.0 for r in ok), default=None)
        for r in members:
            s = stats.setdefault(r["algorithm"], {"wins": 0, "groups": 0, "ok": 0, "failed": 0})
            s["groups"] += 1
            if is_ok(r):
                s["ok"] += 1
                if best is not None and (score(r) or 0.0) <= best * (1 + rel_tol):
                    s["wins"] += 1
            else:
                s["failed"] += 1
    return {k: stats[k] for k in sorted(stats, key=_algo_position)}


# -- values -------------------------------------------------------------------------------


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def to_json_row(row: Mapping[str, Any],
                fields: Sequence[str] = FIELD_NAMES) -> dict[str, Any]:
    """The row with `fields` (default every field), in order, non-finite floats as `None`."""
    return {k: _json_value(row.get(k)) for k in fields}


class BadCell(ValueError):
    """A cell whose value is not of its column's type (`column`, and `why` in words that
    quote nothing of the file)."""

    def __init__(self, column: str, why: str) -> None:
        super().__init__(f"column `{column}`: {why}")
        self.column = column
        self.why = why


#: the words for each column type, in the reasons of `BadCell`
_KIND_WORDS = {float: "a number", int: "a whole number", bool: "true or false", str: "text"}
#: how a bool column may be written in CSV (what `_csv_cell` writes, and older spellings)
_CSV_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _from_text(name: str, text: str) -> Any:
    """A CSV cell as its column's type (`BadCell` when it is not one)."""
    if text == "":
        return None
    kind = _TYPES.get(name, str)
    if kind is str:
        return text
    if kind is bool:
        value = _CSV_BOOLS.get(text.strip().lower())
        if value is None:
            raise BadCell(name, "text where true or false is expected")
        return value
    try:
        number = float(text)
    except ValueError:
        raise BadCell(name, f"text where {_KIND_WORDS[kind]} is expected") from None
    return _number(name, kind, number)


def _number(name: str, kind: type, number: float) -> Any:
    """`number` as column `name`'s type `kind` (`float` or `int`); compare writes no
    infinity (null is "no finite value"), so one read (`1e400`, an integer of 310 digits)
    is refused."""
    if math.isinf(number):
        raise BadCell(name, "a number too large for a 64-bit float")
    if kind is float:
        return number
    if not (math.isfinite(number) and number == int(number)):
        raise BadCell(name, "a number that is not whole where a whole number is expected")
    return int(number)


def _coerce(name: str, value: Any) -> Any:
    """A JSON value as column `name`'s type (`BadCell` when it is not one: a number where
    text is expected, text where a number is, a list or an object anywhere)."""
    if value is None:
        return None
    kind = _TYPES.get(name, str)
    if isinstance(value, str):
        return value if kind is str else _from_text(name, value)
    if isinstance(value, bool):
        if kind is not bool:
            raise BadCell(name, f"true or false where {_KIND_WORDS[kind]} is expected")
        return value
    if isinstance(value, (int, float)) and kind in (int, float):
        try:
            return _number(name, kind, float(value))
        except OverflowError:
            raise BadCell(name, "a number too large for a 64-bit float") from None
    what = ("a number" if isinstance(value, (int, float))
            else "a list" if isinstance(value, list) else "an object")
    raise BadCell(name, f"{what} where {_KIND_WORDS[kind]} is expected")


def _with_defaults(row: Row) -> Row:
    for k, v in SETTING_DEFAULTS.items():
        if row.get(k) is None:
            row[k] = v
    return row


def from_json_row(obj: Mapping[str, Any]) -> Row:
    """A row from a JSON object (missing fields `None`, missing settings `spec`, unknown
    fields dropped)."""
    return _with_defaults({k: _coerce(k, obj.get(k)) for k in FIELD_NAMES})


#: what a spreadsheet takes a cell starting with for a formula (OWASP's "CSV injection"):
#: such a text cell is written after a `'`, which spreadsheets show as text, and a text
#: starting with `'` gets one more, so that reading a cell back drops exactly one
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


def _csv_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ""
    if isinstance(v, int):
        return str(v)
    text = " ".join(str(v).splitlines())
    return f"'{text}" if text.startswith(_FORMULA_STARTS) else text


def _csv_text(cell: str) -> str:
    """A CSV cell as `_csv_cell` was given it (one leading `'` of a text cell dropped)."""
    return cell[1:] if cell.startswith("'") else cell


# -- files --------------------------------------------------------------------------------


#: a rows file's suffix -> its format
ROW_FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl"}


def file_format(path: str | os.PathLike[str], option: str = "rows file") -> str:
    """`csv`, `json` (one array) or `jsonl` (one object per line), from the suffix; E614
    for any other, naming `option` (`rows.xlsx` was JSON lines under a spreadsheet's name)."""
    suffix = Path(path).suffix.lower()
    if suffix not in ROW_FORMATS:
        why = f"`{suffix}` is no rows format" if suffix else "no suffix names its format"
        raise UsageError(Diagnostic(
            "E614", f"{option} {path}: {why}", None,
            ("name the file .csv, .json (one array) or .jsonl (one row per line)",)))
    return ROW_FORMATS[suffix]


def dumps_rows(rows: Sequence[Mapping[str, Any]], fmt: str,
               fields: Sequence[str] | None = None) -> str:
    """Rows as CSV (with a header), a JSON array, or JSON lines, with `fields` (default:
    the `columns` that apply to them)."""
    fields = columns(rows) if fields is None else fields
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(fields)
        for r in rows:
            w.writerow([_csv_cell(r.get(k)) for k in fields])
        return buf.getvalue()
    if fmt == "json":
        return strict_dumps([to_json_row(r, fields) for r in rows], indent=2) + "\n"
    return "".join(strict_dumps(to_json_row(r, fields)) + "\n" for r in rows)


def write_rows(path: str | os.PathLike[str], rows: Sequence[Mapping[str, Any]]) -> None:
    """Write rows atomically, in the format the suffix names (`file_format`), with the
    columns that apply to them (`columns`)."""
    write_text_atomic(path, dumps_rows(rows, file_format(path)))


def parse_rows(text: str, fmt: str) -> tuple[list[Row], int]:
    """Rows of a CSV / JSON / JSONL text and the length of its valid prefix (in characters).

    A last line cut short (a killed writer) or a malformed line ends the valid prefix:
    what follows it is ignored, so `append` can truncate there and carry on. A line with a
    value of the wrong type for its column (`BadCell`) is malformed too.
    """
    rows, pos, _ = _parse_rows(text, fmt)
    return rows, pos


# complex: one pass over the lines of either format, each way a line can end the prefix
def _parse_rows(text: str, fmt: str) -> tuple[list[Row], int, BadCell | None]:
    """`parse_rows`, and the bad cell that ended the valid prefix (None when none did)."""
    rows: list[Row] = []
    if fmt == "json":
        try:
            data = strict_loads(text) if text.strip() else []
            if not isinstance(data, list):
                return [], 0, None
            return ([_result_row(from_json_row(o)) for o in data if isinstance(o, dict)],
                    len(text), None)
        except json.JSONDecodeError:
            return [], 0, None
        except BadCell as bad:
            return [], 0, bad
    pos = 0
    header: list[str] | None = None
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break  # cut short
        body = line.rstrip("\r\n")
        try:
            if fmt == "csv":
                try:
                    cells = next(csv.reader([body]))
                except (csv.Error, StopIteration):
                    break
                if header is None:
                    header = cells
                    if "spec" not in header or "status" not in header:
                        return [], 0, None
                else:
                    if len(cells) != len(header):
                        break
                    obj = dict(zip(header, map(_csv_text, cells), strict=True))
                    rows.append(_result_row(_with_defaults(
                        {k: _from_text(k, obj.get(k, "")) for k in FIELD_NAMES})))
            elif body.strip():
                try:
                    obj = strict_loads(body)
                except json.JSONDecodeError:
                    break
                if not isinstance(obj, dict):
                    break
                rows.append(_result_row(from_json_row(obj)))
        except BadCell as bad:
            return rows, pos, bad
        pos += len(line)
    return rows, pos, None


#: the text fields of a result row: its point (`KEY_FIELDS` but the time limit) and status,
#: by which a resumed sweep matches and sorts rows (`{}` crashed it after the whole sweep)
_NAMED = (*(k for k in KEY_FIELDS if k != "time_limit_s"), "status")


def _result_row(row: Row) -> Row:
    """`row`, or `BadCell` when it lacks a key field or a setting is no setting's label."""
    missing = [k for k in _NAMED if not isinstance(row.get(k), str) or not row[k]]
    if missing:
        raise BadCell(missing[0], "missing, and every result row names it")
    try:
        sort_key(row)
    except (ValueError, KeyError, TypeError, ArithmeticError):
        raise BadCell("devices`, `memory` or `bandwidth",
                      "not a setting `compare` writes (such as `all`, `100%`, `1x`)") from None
    return row


def read_rows(path: str | os.PathLike[str]) -> list[Row]:
    """The valid rows of a results file (see `parse_rows`); `[]` when it does not exist."""
    p = Path(path)
    if not p.exists():
        return []
    # as `ResumeLog` reads it: a byte that is not UTF-8 is U+FFFD, not a UnicodeDecodeError
    rows, _ = parse_rows(p.read_bytes().decode("utf-8", errors="replace"), file_format(p))
    return rows
