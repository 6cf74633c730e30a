"""The resume file of `planner compare --resume FILE` (`ResumeLog`)."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import Diagnostic, Span, UsageError
from ..files import write_text_atomic
from .rows import FIELD_NAMES, Row, _parse_rows, dumps_rows, file_format

__all__ = ["ResumeLog"]


class ResumeLog:
    """An append-only results file (CSV or JSONL) that survives being killed mid-write.

    `open` reads the rows already there and cuts off a partial last line; `append` writes
    one row and flushes it to disk (flush + fsync) before returning.
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
        self._fh: io.TextIOWrapper | None = None

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
        if "\n" in text[good:]:
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
        # stays open across appends; `close` closes it
        self._fh = open(self.path, "a", encoding="utf-8", newline="")  # noqa: SIM115
        if self.fmt == "csv" and good == 0:
            self._fh.write(dumps_rows([], "csv", FIELD_NAMES))
            self._sync()
        return rows

    def append(self, row: Mapping[str, Any]) -> None:
        """Append one row durably."""
        assert self._fh is not None, "ResumeLog.open() first"
        text = dumps_rows([row], self.fmt, FIELD_NAMES)
        if self.fmt == "csv":
            text = text.split("\n", 1)[1]  # no header
        self._fh.write(text)
        self._sync()
        self.rows.append(dict(row))

    def _sync(self) -> None:
        assert self._fh is not None
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Close the file (rows already appended stay)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
