"""Output formats for CI: `--format text|json|github|sarif` (`--json` is `--format json`).

`text` is for people (diagnostics on stderr). The other three put every diagnostic on
stdout: `json` as the versioned envelope (`planner.cli.guard.JsonReport`), `github` as GitHub
Actions workflow commands (`::error file=...::message`, shown as annotations on the pull
request), `sarif` as one SARIF 2.1.0 log for GitHub code scanning (`sarif.py`).
Paths in `github` and `sarif` are relative to the repository root, as GitHub wants them;
a text that is no file (`fmt -` without `--stdin-filename`) has no path: its place,
`<stdin>:line:col`, is in the message.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import Diagnostic, Severity, Span
from ..roots import resolved


class OutputFormat(str, enum.Enum):  # noqa: UP042 - a StrEnum would print members as values
    """What a command prints: for people, or for a machine."""

    TEXT = "text"
    JSON = "json"
    GITHUB = "github"
    SARIF = "sarif"


def repository_root() -> Path:
    """Where GitHub's paths start: `$GITHUB_WORKSPACE` in Actions, else the nearest folder
    above the working directory that holds `.git`, else the working directory."""
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if workspace:
        return Path(workspace).resolve()
    here = Path.cwd().resolve()
    return next((p for p in (here, *here.parents) if (p / ".git").exists()), here)


def repo_path(file: str, root: Path) -> str | None:
    """`file` (as a diagnostic names it) relative to `root` in POSIX form, or None when it
    lies outside (or is not a path, e.g. `<stdin>`)."""
    if file.startswith("<"):
        return None
    try:
        real = resolved(file)
        if os.path.islink(file) and (not real.exists() or not real.is_relative_to(root)):
            # a dangling link, or one that leads out: the link itself is the repository's
            # file (before: its target, `nowhere.plan`, or no file at all)
            real = resolved(os.path.dirname(os.path.abspath(file))) / os.path.basename(file)
        return real.relative_to(root).as_posix()
    except (ValueError, OSError):
        return None


def locate(diag: Diagnostic, subject: str | None) -> Span | None:
    """Where a diagnostic is reported: its span, else the start of the command's main
    input (`subject`, e.g. the spec a violated plan came from), else nowhere."""
    if diag.span is not None:
        return diag.span
    return Span.start_of(subject) if subject else None


def full_message(diag: Diagnostic) -> str:
    """The message with its hints, one per line (annotations have no hint field)."""
    return "\n".join([diag.message, *(f"hint: {h}" for h in diag.hints)])


# ---- GitHub Actions workflow commands ------------------------------------------------------


def _escape_data(text: str) -> str:
    # GitHub's rules (actions/toolkit, command.ts: escapeData)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # command.ts: escapeProperty, which also escapes the separators of the properties
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(diag: Diagnostic, subject: str | None = None,
                      root: Path | None = None) -> str:
    """One workflow command: `::error file=F,line=L,col=C,endLine=..,endColumn=..,title=CODE::msg`.

    GitHub's `endColumn` is the last column of the region (ours is the one after it). A
    region over several lines has no columns: GitHub takes them only on one line ("omit
    this parameter if start_line and end_line have different values")."""
    level = "warning" if diag.severity is Severity.WARNING else "error"
    root = root or repository_root()
    span = locate(diag, subject)
    props: list[tuple[str, str]] = []
    # a text that is no file (`fmt -` without --stdin-filename: `<stdin>`) is named in the
    # message, as SARIF does: `file=<stdin>` was read as a file of the repository
    where = f"{span.where}: " if span and span.file[:1] == "<" else ""
    if span is not None and not where and not span.in_text:  # a path (a folder): no line
        props.append(("file", _shown_path(span.file, root)))
    elif span is not None and not where:
        path = _shown_path(span.file, root)
        end_line = max(span.end_line, span.line)
        one_line = end_line == span.line
        props += [("file", path), ("line", str(span.line)),
                  *([("col", str(span.column))] if one_line else []),
                  ("endLine", str(end_line)),
                  *([("endColumn", str(max(span.end_column - 1, span.column)))]
                    if one_line else [])]
    props.append(("title", diag.code))
    listed = ",".join(f"{k}={_escape_property(v)}" for k, v in props)
    # an annotation has one place: the notes (`first definition`) name theirs in the text,
    # as the text output does, where SARIF has related locations
    notes = [f"note: {m} at {s._replace(file=_shown_path(s.file, root)).where}"
             for m, s in diag.notes]
    text = "\n".join([where + full_message(diag), *notes])
    return f"::{level} {listed}::{_escape_data(text)}"


def _shown_path(file: str, root: Path) -> str:
    return repo_path(file, root) or os.path.normpath(file)


def github_annotations(diags: Sequence[Diagnostic], subject: str | None = None) -> str:
    """Every diagnostic as a workflow command, one per line (empty when none)."""
    root = repository_root()
    return "".join(github_annotation(d, subject, root) + "\n" for d in diags)
