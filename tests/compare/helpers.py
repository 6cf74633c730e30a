"""Plain helpers shared by the `planner compare` tests (their fixtures are in conftest.py):
two small specs and one standard grid, the rows without timings, the marks a report's line
charts should draw, `solve --html` run in-process, and the check of a bad sweep value."""

from __future__ import annotations

import importlib.util
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.compare import TIMING_FIELDS, Sweep, plan_sweep
from planner.compare.rows import is_ok
from planner.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SPECS = (FIXTURES / "fork.plan", FIXTURES / "chain.plan")
#: 2 specs × 3 bandwidths × 3 memory caps × 3 algorithms = 54 points
GRID: dict[str, str] = {"algorithms": "msct,heft,mtopo", "bandwidths": "1GB/s,5GB/s,50GB/s",
                        "memories": "25%,50%,100%"}
runner = CliRunner()


def standard_sweep() -> Sweep:
    """The standard grid on the two fixture specs."""
    return plan_sweep(list(SPECS), GRID["algorithms"], bandwidths=GRID["bandwidths"],
                      memories=GRID["memories"], time_limit_s=2.0)


def stable(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows without the fields that vary between identical runs."""
    return [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in rows]


def expected_marks(rows: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(points, failure marks) the standard grid's two line charts per spec should draw:
    makespan vs bandwidth at memory 100%, and vs memory at the largest bandwidth."""
    pts = fails = 0
    for r in rows:
        for on_chart in (r["memory"] == "100%", r["bandwidth"] == "50 GB/s"):
            if on_chart:
                pts += is_ok(r)
                fails += not is_ok(r)
    return pts, fails


def count(pattern: str, text: str) -> int:
    """Occurrences of a regular expression."""
    return len(re.findall(pattern, text))


def big_spec(n_ops: int, folder: Path) -> Path:
    """bench_parse's generated spec with `n_ops` ops, under the liveness memory model (the
    static model does not fit 10,000 ops on its eight GPUs)."""
    if str(ROOT / "bench") not in sys.path:  # bench_parse imports its sibling `recording`
        sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("bench_parse", ROOT / "bench" / "bench_parse.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.generate(n_ops).replace("  cluster dgx8\n", "  cluster dgx8\n  memory liveness\n")
    path = folder / f"big{n_ops}.plan"
    path.write_text(text, encoding="utf-8")
    return path


def solve_html(spec: Path, out: Path, algo: str) -> float:
    """`planner solve SPEC --algo ALGO --html OUT`; returns the seconds it took."""
    start = time.perf_counter()
    res = runner.invoke(app, ["solve", str(spec), "--algo", algo, "--html", str(out)])
    assert res.exit_code == 0, res.stderr
    return time.perf_counter() - start


def assert_names_the_option(parse: Callable[[str], object], option: str, value: str) -> None:
    """`parse(value)` is E611, naming `option` and `value`, with an example of a valid value
    as its hint."""
    with pytest.raises(UsageError) as err:
        parse(value)
    d = err.value.diagnostics[0]
    assert d.code == "E611" and option in d.message and value.strip() in d.message and d.hints
