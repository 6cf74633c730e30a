"""Diagnostics for the command line: one guard that turns errors into exit codes.

Every command runs its body inside `guard()`: a `PlannerError` is rendered on stderr
(file:line:col, source line, caret, hints) and becomes its exit code; any other exception
is a bug, reported in one line (E999, exit 4), with a traceback only under PLANNER_DEBUG.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NoReturn

import typer

from ..errors import Diagnostic, PlannerError, render_all

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INFEASIBLE, EXIT_INTERNAL = 0, 1, 2, 3, 4
log = logging.getLogger("planner")


def debug_enabled() -> bool:
    """Whether PLANNER_DEBUG asks for tracebacks and debug logs."""
    return bool(os.environ.get("PLANNER_DEBUG"))


def source_texts(diags: Iterable[Diagnostic]) -> dict[str, str]:
    """The text of the files diagnostics point at, for caret lines (binary files skipped)."""
    out: dict[str, str] = {}
    for d in diags:
        for span in [d.span, *(s for _, s in d.notes)]:
            if span is None or span.file in out:
                continue
            p = Path(span.file)
            try:
                if p.is_file() and p.stat().st_size < 64 * 1024 * 1024:
                    out[span.file] = p.read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                # show the valid prefix so a non-UTF-8 diagnostic still gets its line
                out[span.file] = p.read_bytes().decode("utf-8", errors="replace")
            except OSError:
                continue
    return out


def eprint(text: str) -> None:
    """Write a line to stderr."""
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()


def fail(err: PlannerError) -> NoReturn:
    """Render `err`'s diagnostics on stderr and exit with its code."""
    eprint(render_all(err.diagnostics, source_texts(err.diagnostics)))
    raise typer.Exit(err.exit_code)


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Turn every error into a diagnostic on stderr and a documented exit code."""
    try:
        yield
    except PlannerError as err:
        fail(err)
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except MemoryError:
        eprint("error[E990]: out of memory")
        raise typer.Exit(EXIT_INTERNAL) from None
    except RecursionError:
        eprint("error[E991]: input too deeply nested")
        raise typer.Exit(EXIT_INVALID) from None
    except Exception as err:  # a bug: say so briefly, never a traceback
        if debug_enabled():
            raise
        eprint(f"error[E999]: internal error: {type(err).__name__}: {err}\n"
               "  = hint: this is a bug in planner; rerun with PLANNER_DEBUG=1 for details")
        raise typer.Exit(EXIT_INTERNAL) from None


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send file descriptor 1 to stderr for the duration (native solver banners and logs).

    `--json` promises that stdout carries only the JSON; libraries such as HiGHS write to
    the C-level stdout directly, past `sys.stdout`.
    """
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):  # no real fd 1 (embedded use): nothing to protect
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        try:
            sys.stdout.flush()
        except ValueError:
            pass
        os.dup2(saved, 1)
        os.close(saved)
