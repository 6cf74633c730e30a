"""The resume file of `planner compare --resume FILE`, and what a resumed sweep takes from it.

`ResumeLog` appends each finished row durably. `resumed` decides, point by point, what the
file's rows are worth: a row is reused only when it names the point (plan, algorithm,
setting, time limit) and was computed from the same spec content (`spec_sha256`, the
SHA-256 of the spec's sources, imports included, `spec_digest`), so the spec's name does not
matter (another working directory, another path to the same content) and an edited spec is
run again. A row of the point by name but of other content is stale and run again, and so
is a row without `spec_sha256` (written before rows carried it: what it was computed from
is unknown). A row computed by another version of planner (`planner_version`, or none
recorded: a file written before rows carried it) is run again too, since an upgrade may
change what an algorithm plans; `Resumed.versions` names those versions for the summary.
When the file holds several rows of a point, the later one wins. `rewritten`
is what the file holds once the sweep completes: this sweep's rows, one a point, and the
rows of other points it held.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Diagnostic, Span, UsageError
from ..files import append_failed, write_text_atomic
from ..version import __version__
from .rows import (
    FIELD_NAMES,
    RETRY_STATUSES,
    Row,
    _parse_rows,
    dumps_rows,
    file_format,
    row_key,
)
from .worker import Point, spec_digest

__all__ = ["ResumeLog", "Resumed", "content_key", "resumed", "rewritten", "spec_digest"]


def content_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The point a row was computed for, by the spec's content (`spec_sha256`), not its name."""
    return (row.get("spec_sha256"), *row_key(row)[1:])


@dataclass
class Resumed:
    """What to run and what to reuse (`resumed`)."""

    #: the points to run, in the sweep's order
    todo: list[Point]
    #: the rows reused, in the sweep's order, each under its point's spec name
    rows: list[Row]
    #: the points run again because the file's row of them is stale (module docstring)
    stale: int
    #: the points run again because the file's row of them, of the spec's current content,
    #: was computed by another version of planner
    other_version: int = 0
    #: those rows' versions (`None`: the row records none), sorted
    versions: tuple[str | None, ...] = ()


def resumed(points: Sequence[Point], before: Iterable[Row],
            version: str = __version__) -> Resumed:
    """The points of `points` that the rows `before` (a resume file's, in file order) leave
    to run, the rows they give the others, and how many were stale or of another planner
    version than `version` (this one's); a row with a status in `RETRY_STATUSES` is
    neither reused nor stale (run again as before)."""
    by_content: dict[tuple[Any, ...], Row] = {}
    by_name: dict[tuple[Any, ...], Row] = {}
    for r in before:
        if r.get("status") in RETRY_STATUSES:
            continue
        if r.get("spec_sha256"):
            by_content[content_key(r)] = r  # the later row wins
        by_name[row_key(r)] = r
    out = Resumed([], [], 0)
    versions: set[str | None] = set()
    for p in points:
        labels = p.labels()
        hit = by_content.get(content_key(labels)) if p.spec_sha256 else None
        if hit is not None and hit.get("planner_version") == version:
            out.rows.append({**hit, "spec": p.spec})  # its name here (another cwd)
            continue
        out.todo.append(p)
        if hit is not None:
            out.other_version += 1
            versions.add(hit.get("planner_version"))
        else:
            out.stale += row_key(labels) in by_name
    out.versions = tuple(sorted(versions, key=lambda v: (v is None, v or "")))
    return out


def rewritten(before: Iterable[Row], rows: Sequence[Row]) -> list[Row]:
    """A completed sweep's resume file: its `rows` (one a point), then the rows `before` of
    other points, one each (the later wins); a row of one of `rows`' points by name or by
    content (stale, or under another name) goes."""
    names = {row_key(r) for r in rows}
    contents = {content_key(r) for r in rows if r.get("spec_sha256")}
    others: dict[tuple[Any, ...], Row] = {}
    for r in before:
        if row_key(r) not in names and not (r.get("spec_sha256") and content_key(r) in contents):
            others[row_key(r)] = r
    return [*rows, *others.values()]


def _torn_row(text: str, good: int, fmt: str) -> bool:
    """Whether what follows the valid prefix `text[:good]` (no line break in it) may be cut
    as a row a killed writer left torn: nothing, blank, a torn line after rows of ours, or,
    in a file with none, the start of what `ResumeLog` writes first (the CSV header, a JSON
    row). A lone line of anything else is someone's data (`printf 'notes' > x.jsonl`)."""
    tail = text[good:]
    if good > 0 or not tail.strip():
        return True
    if fmt == "csv":
        return f"{','.join(FIELD_NAMES)}\n".startswith(tail)
    return _JSON_START.startswith(tail) or tail.startswith(_JSON_START)


#: how every JSON line `ResumeLog` writes starts (its first field is the spec's name)
_JSON_START = dumps_rows([{"spec": ""}], "jsonl", FIELD_NAMES[:1])[:-3]


class ResumeLog:
    """An append-only results file (CSV or JSONL) that survives being killed mid-write.

    `open` reads the rows already there and cuts off a partial last line; `append` writes
    one row and flushes it to disk (fsync) before returning, or, when the write fails (a
    full disk), cuts what it wrote back off and raises `OutputError` (E623).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        fmt = file_format(self.path)
        if fmt == "json":
            raise UsageError(Diagnostic(
                "E614", f"--resume: {path} is a .json file; rows are appended one per line",
                None, ("use a .csv or .jsonl file for --resume (and --out for .json)",)))
        self.fmt = fmt
        self.rows: list[Row] = []
        self._fh: io.FileIO | None = None

    def open(self) -> list[Row]:
        """Read existing rows, cut off a partial last line, and open for appending.

        Raises `UsageError` when the file holds something other than result rows (a bad
        line before the last), rather than truncating what may be someone's data.
        """
        text, raw = "", b""
        if self.path.exists():
            raw = self.path.read_bytes()
            text = raw.decode("utf-8", errors="replace")
        rows, good, bad = _parse_rows(text, self.fmt)
        if "\n" in text[good:] or not _torn_row(text, good, self.fmt):
            line = text[:good].count("\n") + 1
            if bad is not None:
                raise UsageError(Diagnostic(
                    "E615", f"--resume: line {line} of {self.path} is not a result row of "
                    f"`planner compare`: {bad}; not touching the file",
                    Span(str(self.path), line, 1),
                    (f"correct or delete line {line} (a point without its row is run "
                     "again), or give a new file",)))
            raise UsageError(Diagnostic(
                "E615", f"--resume: line {line} of {self.path} is not a result row of "
                "`planner compare`; not touching the file", Span(str(self.path), line, 1),
                ("give a new file, or a CSV / JSONL file an earlier sweep wrote",)))
        self.rows = rows
        if self.fmt == "csv" and good > 0 and text.split("\n", 1)[0] != ",".join(FIELD_NAMES):
            # another set of columns (an older version's, or those `columns` kept): the
            # rows appended now have every column, so the file gets them all first
            write_text_atomic(self.path, dumps_rows(rows, "csv", FIELD_NAMES))
        elif self.path.exists() and good < len(text):
            # the valid prefix is whole lines: cut after as many of the file's own (an
            # invalid byte is a 3-byte U+FFFD once decoded: a cut from the text fell late)
            cut = 0
            for _ in range(text[:good].count("\n")):
                cut = raw.index(b"\n", cut) + 1
            with open(self.path, "r+b") as fh:
                fh.truncate(cut)
        # stays open across appends; `close` closes it. Unbuffered: a failed write leaves
        # nothing queued that `close` would try again (an OSError out of the clean-up)
        self._fh = open(self.path, "ab", buffering=0)  # noqa: SIM115
        if self.fmt == "csv" and good == 0:
            self._write(dumps_rows([], "csv", FIELD_NAMES))
        return rows

    def append(self, row: Mapping[str, Any]) -> None:
        """Append one row durably."""
        assert self._fh is not None, "ResumeLog.open() first"
        text = dumps_rows([row], self.fmt, FIELD_NAMES)
        if self.fmt == "csv":
            text = text.split("\n", 1)[1]  # no header
        self._write(text)
        self.rows.append(dict(row))

    def _write(self, text: str) -> None:
        """Append `text` and sync it to disk; a failed write is cut back off, so that the
        file still ends with its last whole row, and is E623."""
        assert self._fh is not None
        fd = self._fh.fileno()
        end = os.fstat(fd).st_size
        data = memoryview(text.encode("utf-8"))
        try:
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        except OSError as err:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, end)
            n = len(self.rows)
            kept = (f"it holds the {n} row{'s' * (n != 1)} finished before" if n
                    else "it holds no row yet")
            raise append_failed(self.path, err, kept) from None

    def close(self) -> None:
        """Close the file (rows already appended stay)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
