"""Helpers of the torch export tests: the CLI in-process where it must succeed, and a
generated script loaded as a module."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from planner.cli import app


def planner_ok(*args: str | Path) -> str:
    """`planner ARGS` in-process, which must exit 0: its output."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def load_script(path: Path) -> Any:
    """The generated script as a module (its functions, not its main)."""
    spec = importlib.util.spec_from_file_location(f"_script_{path.parent.name}_{path.stem}",
                                                  path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
