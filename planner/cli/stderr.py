"""stderr as the commands use it: for diagnostics and progress, at best effort.

A closed stderr (`2>&-`: `sys.stderr` is None) or a full one (`2>/dev/full`) loses what
would be written there, not the command: before, `solve` ended with an AttributeError
(exit 1, no `--out` written) and `check` of a valid spec with exit 1. Where the writing
fails, nothing else can say so; the exit status stays the command's own.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

__all__ = ["best_effort_stderr"]


class _BestEffort:
    """A text stream whose writes and flushes never raise: the first failure sends the
    rest to the null device."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except (OSError, ValueError):
            self._stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for good
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            self._stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for good

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding: the stream's
        return getattr(self._stream, name)


def best_effort_stderr() -> None:
    """Make `sys.stderr` a stream that never fails the command (module docstring)."""
    if isinstance(sys.stderr, _BestEffort):
        return
    stream = sys.stderr if sys.stderr is not None else open(  # noqa: SIM115 - for good
        os.devnull, "w", encoding="utf-8")
    sys.stderr = _BestEffort(stream)
