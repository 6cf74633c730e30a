"""`--json` prints exactly one JSON document, the same envelope for every command and
every outcome: success, usage error, invalid spec, infeasible."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .helpers import PLACED, invoke

#: a's 8 MB and b's 24 MB cannot share one 20 MB device, nor fit 40 MB of two, once the
#: transfer copy of a's output is counted: every algorithm proves it, `check` too
TIGHT = PLACED.replace("memory 64 MB", "memory 12 MB")
BROKEN = PLACED.replace("memory 64 MB", "memory 64")
KEYS = ["format_version", "command", "ok", "exit_code", "valid", "errors", "warnings",
        "result", "diagnostics"]


def _doc(code: int, out: str, command: str) -> dict[str, Any]:
    doc = json.loads(out)  # the whole of stdout: one document
    assert list(doc) == KEYS
    assert doc["format_version"] == 1 and doc["command"] == command
    assert doc["exit_code"] == code and doc["ok"] is (code == 0)
    for d in doc["diagnostics"]:
        assert {"code", "severity", "message", "file", "line", "hints"} <= set(d)
    errors = [d for d in doc["diagnostics"] if d["severity"] == "error"]
    assert (doc["errors"], doc["warnings"]) == (len(errors), len(doc["diagnostics"]) - len(errors))
    assert doc["valid"] is not errors
    return doc


def _codes(doc: dict[str, Any]) -> list[str]:
    return [d["code"] for d in doc["diagnostics"]]


# one row per command: how to run it on s.plan
COMMANDS = {
    "check": ["check", "s.plan", "--json"],
    "simulate": ["simulate", "s.plan", "--json"],
    "solve": ["solve", "s.plan", "--algo", "heft", "--json"],
    "compare": ["compare", "s.plan", "--algos", "heft", "--jobs", "1", "--json"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_success(tmp_path: Path, command: str) -> None:
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, err = invoke(COMMANDS[command], tmp_path)
    doc = _doc(code, out, command)
    assert code == 0, err
    if command == "check":
        assert doc["result"] == {"files": ["s.plan"], "errors": 0, "warnings": 0}
    elif command == "compare":
        # a, then b, on one device: 3 ms, the critical path: a plan that meets its bound
        assert [r["status"] for r in doc["result"]] == ["optimal"]
    else:
        # a: 1 ms, b: 2 ms on gpu0 (placed there, or heft keeps the chain together)
        assert doc["result"]["makespan_s"] == pytest.approx(3e-3)
        assert doc["result"]["feasible"] is True


@pytest.mark.parametrize(("command", "extra", "expected"), [
    ("check", ["--no-such-option"], "E606"),
    ("simulate", ["--plan", "q"], "E602"),
    ("solve", ["--solver", "cbc"], "E605"),
    ("solve", ["--time-limit", "soon"], "E606"),
    ("compare", ["--bandwidth", "fast"], "E611"),
])
def test_usage_error(tmp_path: Path, command: str, extra: list[str], expected: str) -> None:
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, _ = invoke([*COMMANDS[command], *extra], tmp_path)
    doc = _doc(code, out, command)
    assert code == 2 and doc["result"] is None
    assert _codes(doc) == [expected]


@pytest.mark.parametrize("command", COMMANDS)
def test_invalid_spec(tmp_path: Path, command: str) -> None:
    (tmp_path / "s.plan").write_text(BROKEN)
    code, out, _ = invoke(COMMANDS[command], tmp_path)
    doc = _doc(code, out, command)
    assert code == 1 and _codes(doc) == ["E220"]
    # check reports what it checked; the others have no result
    assert doc["result"] == ({"files": ["s.plan"], "errors": 1, "warnings": 0}
                             if command == "check" else None)
    assert (doc["diagnostics"][0]["line"], doc["diagnostics"][0]["column"]) == (2, 39)


@pytest.mark.parametrize("command", COMMANDS)
def test_infeasible(tmp_path: Path, command: str) -> None:
    (tmp_path / "s.plan").write_text(TIGHT)
    code, out, _ = invoke(COMMANDS[command], tmp_path)
    doc = _doc(code, out, command)
    if command == "check":
        assert code == 1 and doc["result"]["errors"] >= 1
        assert _codes(doc) == ["E301", "E303"]
    elif command == "simulate":  # the given placement is simulated and its violations listed
        assert code == 3 and _codes(doc) == ["E401"]
        assert doc["result"]["feasible"] is False and doc["result"]["violations"]
    elif command == "solve":  # no plan at all
        assert code == 3 and doc["result"] is None
        # the proofs `check` gives (E30x), with the same codes
        assert _codes(doc) == ["E301", "E303"]
    else:  # a sweep records the point as data and succeeds
        assert code == 0 and [r["status"] for r in doc["result"]] == ["infeasible"]
