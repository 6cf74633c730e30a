"""The command line's one guard: every error becomes a diagnostic and an exit code here.

Every command runs its body inside `guard()`: a `PlannerError` is rendered on stderr
(file:line:col, source line, caret, hints; `planner.render.diagnostics`) and becomes its
exit code; any other exception is a bug, reported in one line (E999, exit 4), with a
traceback only under PLANNER_DEBUG. Under `--json` (or `--format github|sarif`) the same
diagnostics go into the one document on stdout instead (`JsonReport`). Ctrl-C is E607 and
exit 130. The exit codes are the constants below.

Standard output that fails is answered in one place, `stdout_failed`: while a command runs,
`sys.stdout` is `checked_stdout`'s stream, whose failed writes and flushes raise
`StdoutError`; `guard` lets it through, and the command group's `main` (`planner.cli`)
answers it: a reader that went away (EPIPE: `planner check --json x | true`) is a
quiet exit 141, as for other Unix tools; any other failure (`> /dev/full`, an I/O error,
a closed descriptor) is E623 on stderr and exit 4, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, cast

import typer

from ..errors import Diagnostic, PlannerError, render_all, tally
from ..files import unwritable_stdout
from ..render.diagnostics import eprint, source_texts
from ..render.formats import OutputFormat, github_annotations
from ..render.sarif import dumps_sarif
from ..signals import allowed, drop_pending
from ..strictjson import finite

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INFEASIBLE, EXIT_INTERNAL = 0, 1, 2, 3, 4
log = logging.getLogger("planner")


def debug_enabled() -> bool:
    """Whether PLANNER_DEBUG asks for tracebacks and debug logs."""
    return bool(os.environ.get("PLANNER_DEBUG"))


#: the `--json` envelope's version; bump on an incompatible change of its shape
JSON_FORMAT_VERSION = 1
EXIT_INTERRUPTED = 130
#: a reader that closed stdout early (`| head`): the shell's code for SIGPIPE
EXIT_PIPE = 141
#: a CI gate failed on valid input: `fmt --check`/`--diff` would reformat, `diff
#: --fail-if-slower` found the new plan too slow (1 stays "invalid input" everywhere)
EXIT_GATE = 5


#: the options that choose the output format (`--json` is `--format json`)
FORMAT_OPTIONS = ("--format", "--output-format")


def requested_format(argv: Sequence[str]) -> str:
    """The format asked for on a command line, read before the parser runs (so that a
    parse error is reported in it); `text` when none or an unknown one; `chosen_format`'s
    rule between `--format` and `--json`."""
    chosen = None
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if name in FORMAT_OPTIONS:
            value = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            if value in {f.value for f in OutputFormat}:
                chosen = value
    return chosen_format(chosen, "--json" in argv)


def chosen_format(output: str | None, as_json: bool) -> str:
    """The format of a command's `--format` value (None: not given) and `--json`: a machine
    format either names (`json`, `github`, `sarif`), the `--format` one where both do (the
    contradiction, E640, comes in it); `text` only where neither does. `--json --format
    text` is JSON: its contradiction, or `solve`'s unknown `--format`, went to stderr as
    text and stdout stayed empty, where `--json` promises one document on every outcome."""
    if output in (None, "text"):
        return "json" if as_json else "text"
    return output


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
        errors, warnings = tally(self.diagnostics)
        return {"format_version": JSON_FORMAT_VERSION, "command": self.command,
                "ok": exit_code == EXIT_OK, "exit_code": exit_code, "valid": errors == 0,
                "errors": errors, "warnings": warnings,
                "result": self.result,
                "diagnostics": [d.to_json() for d in self.diagnostics]}

    def write(self, exit_code: int) -> None:
        """Print the envelope (or the `github` / `sarif` rendering) on stdout."""
        if self.output == "github":
            text = github_annotations(self.diagnostics, self.subject)
        elif self.output == "sarif":
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


def interrupted_exit() -> NoReturn:
    """A stop outside every command's body (while the CLI was imported or parsed its
    arguments, or after the body): E607 on stderr, exit 130, as inside one."""
    eprint(render_all([Diagnostic("E607", "interrupted")]))
    raise SystemExit(EXIT_INTERRUPTED)


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
    if isinstance(err, StdoutError):
        return is_broken_pipe(err.cause)
    return isinstance(err, BrokenPipeError) or (
        isinstance(err, OSError) and err.errno == errno.EPIPE)


class StdoutError(OSError):
    """Writing to stdout failed; `cause` is the write's own error (EPIPE when the reader
    went away, ENOSPC, EIO, EBADF, or a `ValueError` for a closed file). It has no errno
    of its own: typer's runner would take an EPIPE for its own to answer (exit 1)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"cannot write to stdout: {cause}")
        self.cause = cause


class _CheckedStdout:
    """`sys.stdout` while a command runs: the same stream (None when the process started
    with descriptor 1 closed). Its first failed write or flush is kept (`failed`) and what
    follows is dropped, so that the command goes on to write the files it was asked for
    (`--out`, `--html`, `--trace`, a sweep's rows): they were lost when the first failed
    write ended it (`compare ... --out r.csv | head -5`, exit 141, no r.csv). The command's
    end raises the failure (`raise_if_failed`), which decides its exit status."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.failed: StdoutError | None = None

    def _open(self) -> TextIO:
        if self.stream is None:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        return self.stream

    def write(self, text: str) -> int:
        """Write `text`; after a failed write or flush, drop it."""
        if self.failed is not None:
            return len(text)
        try:
            return self._open().write(text)
        except UnicodeError:
            raise
        except (OSError, ValueError) as err:  # ValueError: a closed file object
            self.failed = StdoutError(err)
            return len(text)

    def raise_if_failed(self) -> None:
        """`StdoutError` where a write or flush failed."""
        if self.failed is not None:
            raise self.failed

    def writelines(self, lines: Any) -> None:
        """Write each of `lines`."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Flush; kept as `failed` when stdout cannot take what is buffered."""
        if self.stream is None or self.failed is not None:
            return  # nothing was buffered, or what was is dropped
        try:
            self.stream.flush()
        except (OSError, ValueError) as err:
            self.failed = StdoutError(err)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...
        if self.stream is None:
            raise AttributeError(name)
        return getattr(self.stream, name)


@contextlib.contextmanager
def checked_stdout() -> Iterator[_CheckedStdout]:
    """Run a command with `sys.stdout` a `_CheckedStdout` (restored after), which it
    yields. A process started with descriptor 1 closed gets /dev/null there, so that no
    file it opens takes that number (and native code's output along with it)."""
    real = sys.stdout
    if real is None:
        try:
            os.fstat(1)
        except OSError:  # closed: hold the number with /dev/null
            with contextlib.suppress(OSError):
                fd = os.open(os.devnull, os.O_WRONLY)
                if fd != 1:
                    os.dup2(fd, 1)
                    os.close(fd)
    checked = _CheckedStdout(real)
    sys.stdout = cast(TextIO, checked)
    try:
        yield checked
    finally:
        sys.stdout = real


def stdout_failed(err: StdoutError) -> int:
    """The one answer to stdout failing, and the exit status: a reader that went away
    (EPIPE) is a quiet exit 141; anything else (a full disk, an I/O error, a closed
    descriptor) is E623 on stderr, exit 4. Either way fd 1 then points at /dev/null, so
    the interpreter's last flush of what is still buffered cannot fail again."""
    _discard_stdout()
    if is_broken_pipe(err):
        return EXIT_PIPE
    eprint(render_all([unwritable_stdout(err.cause)]))
    return EXIT_INTERNAL


def _discard_stdout() -> None:
    """Point fd 1 at /dev/null (as the Python docs advise after EPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass  # no real fd 1 (in-process use, or it is closed): nothing will flush to it


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
        with allowed():  # a stop held off while the CLI parsed: now, and at once
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
    except (typer.Abort, StdoutError):
        raise  # stdout that fails: answered once, by the command group (`stdout_failed`)
    except KeyboardInterrupt:
        diag = Diagnostic("E607", "interrupted")
        if not as_json:
            eprint(render_all([diag]))
            raise typer.Exit(EXIT_INTERRUPTED) from None
        report.diagnostics.append(diag)
        code = EXIT_INTERRUPTED
    except Exception as err:
        if debug_enabled() and not isinstance(err, (MemoryError, RecursionError)):
            raise
        diag = _internal(err)
        code = EXIT_INVALID if isinstance(err, RecursionError) else EXIT_INTERNAL
        if not as_json:
            eprint(render_all([diag]))
            raise typer.Exit(code) from None
        report.diagnostics.append(diag)
    if as_json:
        report.write(code)  # a `StdoutError` here too goes to the command group
        drop_pending()  # the document states the exit code: a stop now does not change it
    if code != EXIT_OK:
        raise typer.Exit(code)


def stdout_console() -> Console:
    """A rich console on stdout that treats a closed pipe like every other write to stdout
    (`stdout_failed`; rich's own handler exits 1)."""
    from rich.console import Console  # lazy: start-up (`check` and `fmt` print no tables)

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise StdoutError(BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE)))

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
        with contextlib.suppress(ValueError):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
