"""Solver output kept off the process's streams: what a solver prints goes to the
`planner.solver` log at DEBUG (`quiet_stdout`), so that the CLI's JSON on stdout stays
whole; and `sys.stderr` is given a file descriptor while a solver runs where the caller's
has none (`quiet_stdout` does both)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

solver_log = logging.getLogger("planner.solver")


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Capture everything written to stdout (Python and C level); replay it at DEBUG.

    The CLI prints JSON on stdout, so a solver banner there would corrupt it.
    """
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stdout.flush()
    fd = 1  # what native code writes to, whatever object sys.stdout is now
    try:
        os.fstat(fd)
    except OSError:
        fd = -1
    with tempfile.TemporaryFile(mode="w+b") as sink, _stderr_with_fileno():
        saved = -1
        if fd >= 0:
            saved = os.dup(fd)
            os.dup2(sink.fileno(), fd)
        old_stdout = sys.stdout
        buffer = _TextSink()
        sys.stdout = buffer
        try:
            yield
        finally:
            sys.stdout = old_stdout
            if saved >= 0:
                os.dup2(saved, fd)
                os.close(saved)
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace") + buffer.getvalue()
            if text.strip() and solver_log.isEnabledFor(logging.DEBUG):
                for line in text.splitlines():
                    solver_log.debug("%s", line)


@contextlib.contextmanager
def _stderr_with_fileno() -> Iterator[None]:
    """`sys.stderr` with a file descriptor while a solver runs: where it has none (pytest's
    capture, click's CliRunner, an IDE's console), the same stream whose `fileno` is the
    process's stderr (or /dev/null where that is closed). Pyomo asks
    `logging.lastResort.stream.fileno()` when HiGHS takes a model
    (`LogStream.redirect_streams`); before, `UnsupportedOperation` there was "highs failed:
    fileno", and `planner.solve(..., "ilp")` returned the fallback."""
    stream = sys.stderr
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        pass
    else:
        yield
        return
    with contextlib.ExitStack() as stack:
        try:
            os.fstat(2)
            fd = 2
        except OSError:
            fd = stack.enter_context(open(os.devnull, "w")).fileno()
        sys.stderr = _Described(stream, fd)
        try:
            yield
        finally:
            sys.stderr = stream


class _Described:
    """A text stream written through to `stream`, with the file descriptor `fd`."""

    def __init__(self, stream: Any, fd: int) -> None:
        self._stream, self._fd = stream, fd

    def write(self, s: str) -> int:
        """Write `s` to the stream."""
        return int(self._stream.write(s) or 0)

    def flush(self) -> None:
        """Flush the stream."""
        with contextlib.suppress(AttributeError, OSError, ValueError):
            self._stream.flush()

    def fileno(self) -> int:
        """The descriptor given."""
        return self._fd

    def isatty(self) -> bool:
        """Never a terminal."""
        return False


class _TextSink:
    """A write-only text stream that keeps what it is given."""

    def __init__(self) -> None:
        self._parts: list[str] = []

    def write(self, s: str) -> int:
        """Keep `s`."""
        self._parts.append(s)
        return len(s)

    def flush(self) -> None:
        """Nothing to flush."""

    def isatty(self) -> bool:
        """Never a terminal."""
        return False

    def getvalue(self) -> str:
        """Everything written so far."""
        return "".join(self._parts)
