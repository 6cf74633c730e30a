"""Shared by the hardening tests: the CLI run in-process in a folder."""

from __future__ import annotations

import os
from pathlib import Path

from typer.testing import CliRunner

from planner.cli import app

runner = CliRunner()


def invoke(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run the CLI in-process in `cwd`; return (exit code, stdout, stderr)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        res = runner.invoke(app, args)
    finally:
        os.chdir(old)
    return res.exit_code, res.stdout, res.stderr
