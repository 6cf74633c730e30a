"""SARIF 2.1.0 for GitHub code scanning: one run of tool `planner`, its rules from the
code registry (`planner/codes.py`), one result per located diagnostic.

GitHub needs each result's location as a file of the repository and a start line, so a
diagnostic without a place (a usage error, an internal error) becomes a notification of
the invocation instead, which records the exit code as well; so does one in a text that is
no file (`fmt -` without `--stdin-filename`: `<stdin>`), its line and column in its text
(an artifact `stdin` read as a file of the repository).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..codes import TABLE, layer
from ..errors import Diagnostic, Severity, Span
from ..roots import resolved
from .formats import full_message, locate, repo_path, repository_root

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: exit codes after which the results are complete (ok, invalid input, infeasible, a gate)
_COMPLETE = frozenset({0, 1, 3, 5})


def _level(diag: Diagnostic) -> str:
    return "warning" if diag.severity is Severity.WARNING else "error"


def _rules(used: set[str]) -> list[dict[str, Any]]:
    """The registry's entries of the codes `used` (in its order): GitHub shows a rule's
    description next to each of its results."""
    return [{
        "id": c.code,
        "shortDescription": {"text": c.meaning},
        "fullDescription": {"text": f"{c.meaning} ({layer(c.code)})"},
        "defaultConfiguration": {"level": "warning" if c.code.startswith("W") else "error"},
        "help": {"text": f"planner explain {c.code}"},
    } for c in TABLE if c.code in used]


def _physical(span: Span, root: Path) -> dict[str, Any]:
    rel = repo_path(span.file, root)
    if rel is not None:
        artifact = {"uri": quote(rel), "uriBaseId": "%SRCROOT%"}
    else:
        artifact = {"uri": resolved(span.file).as_uri()}
    if not span.in_text:  # a path (a folder): the artifact, no region in it
        return {"artifactLocation": artifact}
    region: dict[str, int] = {"startLine": max(span.line, 1), "startColumn": max(span.column, 1)}
    if span.end_line >= span.line:
        region["endLine"] = span.end_line
        if span.end_column > span.column or span.end_line > span.line:
            region["endColumn"] = max(span.end_column, 1)
    return {"artifactLocation": artifact, "region": region}


def _in_file(span: Span | None) -> Span | None:
    """`span` when it lies in a file, None in a text that is none (`<stdin>`)."""
    return None if span is None or span.file.startswith("<") else span


def sarif_log(diags: Sequence[Diagnostic], exit_code: int, subject: str | None = None,
              version: str = "") -> dict[str, Any]:
    """The SARIF log of one command's diagnostics and exit code."""
    root = repository_root()
    rules = _rules({d.code for d in diags if _in_file(locate(d, subject)) is not None})
    index = {r["id"]: i for i, r in enumerate(rules)}
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    for d in diags:
        at = locate(d, subject)
        span = _in_file(at)
        if span is None:
            where = f"{at.where}: " if at is not None else ""
            notifications.append({"level": _level(d),
                                  "message": {"text": where + full_message(d)},
                                  "descriptor": {"id": d.code}})
            continue
        result: dict[str, Any] = {"ruleId": d.code, "level": _level(d),
                                  "message": {"text": full_message(d)},
                                  "locations": [{"physicalLocation": _physical(span, root)}]}
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        related = [{"id": k, "message": {"text": m}, "physicalLocation": _physical(s, root)}
                   for k, (m, s) in enumerate(d.notes, start=1) if _in_file(s) is not None]
        if related:
            result["relatedLocations"] = related
        results.append(result)
    driver: dict[str, Any] = {"name": "planner", "rules": rules}
    if version:
        driver.update(version=version, semanticVersion=version)
    invocation: dict[str, Any] = {"executionSuccessful": exit_code in _COMPLETE,
                                  "exitCode": exit_code}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    # columns count characters (code points), as every diagnostic does; said, as a
    # consumer that finds no `columnKind` may count UTF-16 code units (Microsoft's SARIF
    # SDK does) and put a region after an emoji one column off
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [{
        "tool": {"driver": driver}, "columnKind": "unicodeCodePoints",
        "invocations": [invocation], "results": results}]}


def dumps_sarif(diags: Sequence[Diagnostic], exit_code: int, subject: str | None = None) -> str:
    """The SARIF log as deterministic JSON text."""
    # lazy: start-up (only `--format sarif` needs the version)
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("planner")
    except PackageNotFoundError:  # pragma: no cover - run from a bare source tree
        ours = ""
    return json.dumps(sarif_log(diags, exit_code, subject, ours), indent=2,
                      ensure_ascii=False) + "\n"
