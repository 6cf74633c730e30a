"""Start-up: each command imports only what it needs (issue 16: a lint-like `check` in CI
must not pay for `compare`'s process pools, numpy or the solvers)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("planner.cli.compare", "planner.compare", "planner.compare.sweep", "multiprocessing",
         "numpy", "ortools", "pyomo", "highspy", "onnx", "pydantic")

PROBE = """
import json, sys
from planner.cli import main
sys.argv = ["planner", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
heavy = {heavy!r}
sys.__stdout__.write("\\n" + json.dumps(sorted(m for m in heavy if m in sys.modules)) + "\\n")
"""


def _imported(*args: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=heavy), *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=False).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [["--help"], ["check", "specs/resnet.plan"],
                                  ["fmt", "--check", "specs/resnet.plan"]])
def test_light_commands_import_nothing_heavy(args: list[str]) -> None:
    assert _imported(*args) == []


def test_help_does_not_load_the_parser() -> None:
    """`--help` (and shell completion, which runs the same start-up) reads no spec: Lark and
    the parser's modules stay unloaded (the `# lazy: start-up` imports in `planner.cli`)."""
    assert _imported("--help", heavy=("lark", "planner.spec.parse", "planner.spec.load")) == []


def test_a_spec_the_fast_path_reads_does_not_load_lark() -> None:
    """Lark (`planner.spec.larkparse`) is loaded only for a text the fast path hands on:
    the specs in the repository need none of it; a syntax error does."""
    lark = ("lark", "planner.spec.larkparse")
    assert _imported("check", "specs/resnet.plan", heavy=lark) == []
    assert _imported("check", "tests/spec/broken/arrow_without_spaces.plan",
                     heavy=lark) == sorted(lark)


def test_compare_is_loaded_when_it_runs() -> None:
    assert "planner.cli.compare" in _imported("compare", "--help")
