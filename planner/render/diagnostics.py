"""Diagnostics for the command line: one guard that turns errors into exit codes.

Every command runs its body inside `guard()`: a `PlannerError` is rendered on stderr
(file:line:col, source line, caret, hints) and becomes its exit code; any other exception
is a bug, reported in one line (E999, exit 4), with a traceback only under PLANNER_DEBUG.
Under `--json` the same diagnostics go into the one JSON document on stdout instead
(`JsonReport`). Ctrl-C is E607 and exit 130; a closed stdout pipe is a quiet exit 141.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import os
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from ..errors import Diagnostic, PlannerError, render_all
from ..strictjson import finite

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INFEASIBLE, EXIT_INTERNAL = 0, 1, 2, 3, 4
log = logging.getLogger("planner")


def debug_enabled() -> bool:
    """Whether PLANNER_DEBUG asks for tracebacks and debug logs."""
    return bool(os.environ.get("PLANNER_DEBUG"))


def source_texts(diags: Iterable[Diagnostic]) -> dict[str, str]:
    """The text of the files diagnostics point at, for caret lines.

    A spec's diagnostic may point at any file an import or a symlink named
    (`.git-credentials`), and its lines must not reach a CI log: a file is shown only if
    it starts as a spec does, or, for a placement file's diagnostic (E5xx), as a placement
    JSON object. An importer's diagnostic (E9xx, W9xx) shows the file the user asked to
    import as that format. Lone `\r` end lines, as for the parser.
    """
    from ..limits import active
    from ..spec.fastparse import line_ends
    from ..spec.parse import looks_like_spec

    cap = active().file_bytes
    out: dict[str, str] = {}
    for d in diags:
        layer = d.code[1:2]
        for span in [d.span, *(s for _, s in d.notes)]:
            if span is None or span.file in out:
                continue
            p = Path(span.file)
            try:
                if not p.is_file() or p.stat().st_size > cap:
                    continue
                # show the valid prefix so a non-UTF-8 diagnostic still gets its line
                text = p.read_bytes().decode("utf-8", errors="replace")
            except OSError:
                continue
            if layer == "9" or looks_like_spec(text) or (
                    layer == "5" and _looks_like_placement(text)):
                out[span.file] = line_ends(text)
    return out


def _looks_like_placement(text: str) -> bool:
    return text.lstrip()[:1] == "{" and '"placement"' in text


#: characters never written raw to a terminal: C0 and C1 controls but tab and newline,
#: bidi and zero-width formatting, line separators and lone surrogates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e"
                     "\u2060-\u2069\ufeff\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with every character of `_UNSAFE` written as `\\uXXXX`: a name from a
    placement file cannot recolour the terminal, reorder a line or fake one."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def eprint(text: str) -> None:
    """Write a line to stderr (unsafe characters escaped, see `printable`)."""
    text = printable(text)
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()


#: the `--json` envelope's version; bump on an incompatible change of its shape
JSON_FORMAT_VERSION = 1
EXIT_INTERRUPTED = 130
#: a reader that closed stdout early (`| head`): the shell's code for SIGPIPE
EXIT_PIPE = 141


class JsonReport:
    """The one JSON document a `--json` command prints, on every outcome:

        {"format_version": 1, "command": "solve", "ok": true, "exit_code": 0,
         "result": {...} or null, "diagnostics": [...]}

    The command sets `result` (its successful output, or what it has on a failure, e.g. the
    simulated report of an infeasible plan) and adds `diagnostics`; `guard` writes it.
    """

    def __init__(self, command: str | None, enabled: bool, output: str = "json") -> None:
        self.command = command
        self.enabled = enabled
        #: `json`, `github` or `sarif` when enabled (`render/formats.py`), else `text`
        self.output = output if enabled else "text"
        #: the command's main input: where `github`/`sarif` put diagnostics without a place
        self.subject: str | None = None
        self.result: Any = None
        self.diagnostics: list[Diagnostic] = []

    def document(self, exit_code: int) -> dict[str, Any]:
        """The envelope for `exit_code`; `valid`: no diagnostic is an error."""
        errors = sum(d.severity.value == "error" for d in self.diagnostics)
        return {"format_version": JSON_FORMAT_VERSION, "command": self.command,
                "ok": exit_code == EXIT_OK, "exit_code": exit_code, "valid": errors == 0,
                "errors": errors, "warnings": len(self.diagnostics) - errors,
                "result": self.result,
                "diagnostics": [d.to_json() for d in self.diagnostics]}

    def write(self, exit_code: int) -> None:
        """Print the envelope (or the `github` / `sarif` rendering) on stdout."""
        if self.output == "github":
            from .formats import github_annotations

            text = github_annotations(self.diagnostics, self.subject)
        elif self.output == "sarif":
            from .sarif import dumps_sarif

            text = dumps_sarif(self.diagnostics, exit_code, self.subject)
        else:
            text = json.dumps(finite(self.document(exit_code)), indent=2, ensure_ascii=False,
                              allow_nan=False) + "\n"
        sys.stdout.write(text)
        sys.stdout.flush()


def interrupted_diagnostic(kept: str | None) -> Diagnostic:
    """E607: the user interrupted the command; `kept` says what was kept, if anything."""
    if kept is None:
        return Diagnostic("E607", "interrupted before any plan was found")
    return Diagnostic("E607", f"interrupted: {kept}")  # exit 130 either way: an error


def fail(err: PlannerError) -> NoReturn:
    """Render `err`'s diagnostics on stderr and exit with its code."""
    eprint(render_all(err.diagnostics, source_texts(err.diagnostics)))
    raise typer.Exit(err.exit_code)


def _internal(err: BaseException) -> Diagnostic:
    if isinstance(err, MemoryError):
        return Diagnostic("E990", "out of memory")
    if isinstance(err, RecursionError):
        return Diagnostic("E991", "input too deeply nested")
    return Diagnostic("E999", f"internal error: {type(err).__name__}: {err}", None,
                      ("this is a bug in planner; rerun with PLANNER_DEBUG=1 for details",))


def is_broken_pipe(err: BaseException) -> bool:
    """Whether `err` says that the reader of stdout went away."""
    return isinstance(err, BrokenPipeError) or (
        isinstance(err, OSError) and err.errno == errno.EPIPE)


def quiet_pipe_exit() -> NoReturn:
    """Exit quietly after stdout's reader went away: point fd 1 at /dev/null first so that
    the interpreter's final flush does not complain (as the Python docs advise)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass  # no real fd 1 (in-process use): nothing will flush to it
    raise typer.Exit(EXIT_PIPE)


@contextlib.contextmanager
def guard(command: str | None = None, as_json: bool | str = False) -> Iterator[JsonReport]:
    """Turn every error into a diagnostic and a documented exit code.

    Without `as_json`, diagnostics go to stderr. With it (True, or an output format other
    than `text`), the `JsonReport` the body fills is printed on every outcome, its
    diagnostics included, and stderr keeps only logs and summaries.
    """
    output = as_json if isinstance(as_json, str) else ("json" if as_json else "text")
    as_json = output != "text"
    report = JsonReport(command, as_json, output)
    code = EXIT_OK
    try:
        try:
            yield report
        except PlannerError as err:
            if not as_json:
                fail(err)
            report.diagnostics.extend(err.diagnostics)
            code = err.exit_code
        except typer.Exit as err:
            code = err.exit_code
            if not as_json:
                raise
        except typer.Abort:
            raise
        except KeyboardInterrupt:
            diag = Diagnostic("E607", "interrupted")
            if not as_json:
                eprint(render_all([diag]))
                raise typer.Exit(EXIT_INTERRUPTED) from None
            report.diagnostics.append(diag)
            code = EXIT_INTERRUPTED
        except Exception as err:
            if is_broken_pipe(err):
                quiet_pipe_exit()
            if debug_enabled() and not isinstance(err, (MemoryError, RecursionError)):
                raise
            diag = _internal(err)
            code = EXIT_INVALID if isinstance(err, RecursionError) else EXIT_INTERNAL
            if not as_json:
                eprint(render_all([diag]))
                raise typer.Exit(code) from None
            report.diagnostics.append(diag)
        if as_json:
            report.write(code)
    except Exception as err:  # writing the report itself can meet a closed pipe
        if is_broken_pipe(err):
            quiet_pipe_exit()
        raise
    if code != EXIT_OK:
        raise typer.Exit(code)


def stdout_console() -> Console:
    """A rich console on stdout that treats a closed pipe like every other command does
    (rich's own handler exits 1)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            quiet_pipe_exit()

    return _Console(soft_wrap=False)


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
