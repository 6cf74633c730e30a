"""`planner fmt`: rewrite specs in the canonical layout, check it (`--check`), show it as a
unified diff (`--diff`), or format standard input (`fmt -`, `--stdin-filename NAME`).

Exit codes: 2 or 4 when a file cannot be rewritten (E622, E623: the others still are),
else 1 when an input is invalid (it cannot be parsed: the same 1 as every command gives
invalid input), else 5 when `--check` or `--diff` finds a file to reformat (a CI gate that
failed on valid input), else 0.

A file is rewritten atomically (a temporary file renamed over it: a symlink is followed and
kept, the mode kept), but for a file with several hard links, which a rename would split
from its other names: it is written in place, after a backup (`files.write_text_keeping_links`).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

import typer

from ..errors import (
    Diagnostic,
    PlannerError,
    Severity,
    Span,
    SpecError,
    UsageError,
    _one_line,
    render_all,
)
from ..files import write_text_keeping_links
from ..render.diagnostics import eprint, printable, source_texts
from ..roots import default_root, display_path, outside_root, resolved
from ..spec.format import format_source
from ..spec.lex import line_ends
from ..spec.load import not_utf8, read_source
from . import linediff
from .guard import EXIT_GATE, EXIT_INVALID, JsonReport

STDIN = "-"
STDIN_SHOWN = "<stdin>"  # the name of standard input without --stdin-filename


@dataclass
class Formatted:
    """One input and its canonical form."""

    shown: str  # the name diagnostics and diffs use
    text: str
    new: str
    path: Path | None = None  # None: standard input

    @property
    def changed(self) -> bool:
        return self.new != self.text


@dataclass
class FmtRun:
    """What `fmt` found over all its inputs."""

    names: list[str] = field(default_factory=list)  # every input, valid or not
    stdin_text: dict[str, str] = field(default_factory=dict)  # for caret lines
    done: list[Formatted] = field(default_factory=list)
    errors: list[Diagnostic] = field(default_factory=list)


def read_stdin(shown: str) -> str:
    """Standard input as UTF-8 text; E641 at the first bad byte otherwise."""
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise not_utf8("E641", shown, data, err) from None


def check_inputs(paths: list[Path], stdin_filename: str | None) -> bool:
    """Whether the input is standard input; E640 when `-` is mixed with paths, or
    `--stdin-filename` is given without `-`."""
    stdin = [p for p in paths if str(p) == STDIN]
    if stdin and len(paths) > 1:
        raise UsageError(Diagnostic("E640", "`-` (standard input) cannot be mixed with paths",
                                    None, ("format standard input alone: planner fmt -",)))
    if stdin_filename is not None and not stdin:
        raise UsageError(Diagnostic("E640", "--stdin-filename applies only to `fmt -`", None,
                                    ("add `-` to read the spec from standard input",)))
    return bool(stdin)


def format_inputs(files: list[Path], stdin_name: str | None) -> FmtRun:
    """Format every file (or standard input when `stdin_name` is given), collecting the
    diagnostics of those that do not parse."""
    run = FmtRun()
    inputs: list[tuple[Path | None, str]] = (
        [(None, stdin_name)] if stdin_name is not None
        else [(f, display_path(Path(os.path.abspath(f)))) for f in files])  # as given
    for path, shown in inputs:
        run.names.append(shown)
        try:
            if path is not None:
                refuse_outside_root(path)
            text = read_stdin(shown) if path is None else read_source(path, shown)
            if path is None:
                run.stdin_text[shown] = text
            run.done.append(Formatted(shown, text, format_source(text, shown), path))
        except SpecError as err:
            run.errors.extend(err.diagnostics)
    return run


def refuse_outside_root(path: Path) -> None:
    """E008 for a file that is, or whose symlink leads, outside its root (`--root`, else
    the repository holding it): `fmt` neither reads nor rewrites it, as `check` would not
    read it."""
    root = default_root(path)
    if outside_root(resolved(path), root):
        shown = display_path(Path(os.path.abspath(path)))
        raise SpecError(Diagnostic(
            "E008", f"{printable(_one_line(shown))} leads outside the root "
            f"`{display_path(root)}`", None,
            ("the file, or a symlink's target, is neither read nor rewritten outside the root; "
             "choose another with `--root FOLDER`",)))


def _lines(text: str) -> list[str]:
    """`text`'s lines as `diff` and `patch` read them: each ends at `\n`, kept, so that
    `\r\n` and a missing last newline are changes (`str.splitlines` also ends a line at
    `\r`, a form feed or U+2028, and drops the ends: a change of line ends alone was none)."""
    *whole, last = text.split("\n")
    return [x + "\n" for x in whole] + ([last] if last else [])


def unified_diff(item: Formatted) -> str:
    """The change `fmt` would make, as a unified diff (`patch -p0` applies it). A name with
    a space ends with a tab, as `git diff` writes it: `patch` reads a name up to a tab, else
    up to the first space (`--- my spec.plan` named the file `my`)."""
    name = printable(_one_line(item.shown))  # a file name cannot fake a line
    name += "\t" if " " in name else ""
    lines = linediff.unified_diff(_lines(item.text), _lines(item.new), name)
    return "".join(x if x.endswith("\n") else x + "\n\\ No newline at end of file\n"
                   for x in lines)


def not_canonical(item: Formatted) -> Diagnostic:
    """W640 at the first lines that would change (where an annotation is useful), lines
    and columns as diagnostics count them (`line_ends`); a change of `\r\n` line ends or
    of the last newline is one of the lines that hold them, and one of lone `\r` line ends
    or of a byte order mark alone, which `line_ends` does not show, is at line 1."""
    old, new = _lines(line_ends(item.text)), _lines(item.new)
    ops = linediff.Matcher(old, new, autojunk=False).get_opcodes()
    _, i1, i2, _, _ = next((op for op in ops if op[0] != "equal"), ("", 0, 1, 0, 0))
    first = min(i1, max(len(old) - 1, 0)) + 1
    last = max(first, min(i2, max(len(old), 1)))
    end_col = len(old[last - 1].rstrip("\r\n")) + 1 if 0 < last <= len(old) else 1
    return Diagnostic("W640", f"{item.shown} is not in the canonical layout",
                      Span(item.shown, first, 1, last, max(end_col, 2)),
                      (_reformat_hint(item),), Severity.WARNING)


def _reformat_hint(item: Formatted) -> str:
    """How to reformat `item`: `planner fmt FILE`, and for standard input (where that hint
    was `planner fmt <stdin>`, no command) the filter `planner fmt -`, with its name."""
    if item.path is not None:
        return f"run `planner fmt {shlex.quote(item.shown)}`"
    if item.shown == STDIN_SHOWN:
        return "run `planner fmt -` on the same input: it writes the canonical layout to stdout"
    name = shlex.quote(item.shown)
    return (f"run `planner fmt --stdin-filename {name} -` on the same input (it writes the "
            f"canonical layout to stdout), or `planner fmt {name}` on the file")


def run_fmt(paths: list[Path], files: list[Path], report: JsonReport, *, check: bool,
            diff: bool, stdin_filename: str | None) -> None:
    """The `fmt` command's body (inside its guard); raises `typer.Exit` for 1 and 5, and
    E622 or E623 for a file it could not rewrite (`_stop`)."""
    stdin = check_inputs(paths, stdin_filename)
    run = format_inputs(files, (stdin_filename or STDIN_SHOWN) if stdin else None)
    gate = check or diff  # nothing is written: say what would change
    changed = [x for x in run.done if x.changed]
    report.diagnostics.extend(run.errors)
    if gate:
        report.diagnostics.extend(not_canonical(x) for x in changed)
    if run.errors and not report.enabled:
        eprint(render_all(run.errors, {**source_texts(run.errors), **run.stdin_text}))
    failed = {} if gate else _write(changed)
    changed = [x for x in changed if x.path not in failed]
    diffs = "".join(unified_diff(x) for x in changed) if diff else ""
    _print_outputs(run, changed, diffs, report.output == "text", stdin=stdin, gate=gate,
                   diff=diff)
    _fill_report(report, run, changed, diffs, stdin=stdin, gate=gate, diff=diff)
    _stop(failed, invalid=bool(run.errors), gate_failed=gate and bool(changed))


def _stop(failed: dict[Path | None, PlannerError], *, invalid: bool, gate_failed: bool) -> None:
    """The exit: a file that could not be written (E622: 2, E623: 4; each one's diagnostic,
    once the others are written and said), else 1 for an input that does not parse, else
    5 for a gate that found a file to reformat."""
    if failed:
        worst = max(failed.values(), key=lambda err: err.exit_code)
        raise type(worst)([d for err in failed.values() for d in err.diagnostics])
    if invalid:
        raise typer.Exit(EXIT_INVALID)
    if gate_failed:
        raise typer.Exit(EXIT_GATE)


def _write(changed: list[Formatted]) -> dict[Path | None, PlannerError]:
    """Rewrite each file of `changed` (atomically, but for one with several hard links:
    `write_text_keeping_links`); the files that could not be, with
    why. One that fails does not stop the others, which are written and said to be: a
    failure half-way used to leave the files before it rewritten unannounced, those after
    it untried."""
    failed: dict[Path | None, PlannerError] = {}
    for x in changed:
        if x.path is not None:
            try:
                write_text_keeping_links(x.path, x.new)
            except PlannerError as err:  # E622, E623: the file is left as it was
                failed[x.path] = err
    return failed


def _print_outputs(run: FmtRun, changed: list[Formatted], diffs: str, text: bool, *,
                   stdin: bool, gate: bool, diff: bool) -> None:
    """Text output: the formatted text (a filter), the diff, and which files changed (on
    stdout for `--check` and a rewrite, else on stderr, next to the log)."""
    filtering = stdin and not gate  # `fmt -`: formatted text out
    if text and filtering:
        sys.stdout.write("".join(x.new for x in run.done))
    elif text and diff:
        sys.stdout.write(diffs)
    if filtering:
        return
    say = sys.stdout if text and not diff else sys.stderr
    for x in changed:
        say.write(f"{'would reformat' if gate else 'reformatted'} "
                  f"{printable(_one_line(x.shown))}\n")  # a file name from the PR


def _fill_report(report: JsonReport, run: FmtRun, changed: list[Formatted], diffs: str, *,
                 stdin: bool, gate: bool, diff: bool) -> None:
    """The JSON result: inputs, changes, and the formatted text or diff when asked for."""
    report.subject = run.done[0].shown if stdin and run.done else None
    report.result = {"files": run.names, "changed": [x.shown for x in changed],
                     "written": not gate and not stdin}
    if stdin and not gate and report.enabled:
        report.result["formatted"] = "".join(x.new for x in run.done)
    if diff and report.enabled:
        report.result["diff"] = diffs
