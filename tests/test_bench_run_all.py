"""`python bench/run_all.py` runs every benchmark, as README.md and docs/performance.md say
(it left out six of seventeen: the pipeline, hybrid, PipeDream, time-limit, monotony and
torch-models benchmarks), and its `--quick` reaches each as a flag it takes."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _run_all() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_all", BENCH / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _flags(path: Path) -> set[str]:
    """The options a benchmark's argument parser declares (`add_argument("--x", ...)`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {arg.value for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
            for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)}


def test_run_all_runs_every_benchmark_or_says_why_not() -> None:
    run_all = _run_all()
    found = {p.relative_to(BENCH).as_posix() for p in BENCH.glob("bench_*.py")}
    found |= {p.relative_to(BENCH).as_posix() for p in BENCH.glob("*/compare_*.py")}
    listed = set(run_all.BENCHES) | set(run_all.LEFT_OUT)
    assert found == listed, (sorted(found - listed), sorted(listed - found))
    assert not set(run_all.BENCHES) & set(run_all.LEFT_OUT)
    assert all(len(why) > 20 for why in run_all.LEFT_OUT.values())


def test_every_benchmark_run_all_runs_takes_quick() -> None:
    run_all = _run_all()
    lacking = [name for name in run_all.BENCHES if "--quick" not in _flags(BENCH / name)]
    assert not lacking, f"run_all.py --quick would stop these with a usage error: {lacking}"


def test_the_pages_say_what_run_all_leaves_out() -> None:
    run_all = _run_all()
    root = BENCH.parent
    for page in ("README.md", "docs/performance.md"):
        text = " ".join((root / page).read_text(encoding="utf-8").split())
        assert "`python bench/run_all.py` runs them all" not in text, page
        for name in run_all.LEFT_OUT:
            assert f"`{name}`" in text, (page, name)
