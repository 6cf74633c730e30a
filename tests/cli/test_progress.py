"""`solve`'s live progress: the spinner's text follows the algorithm's reports (best
makespan so far, bound, elapsed); without a terminal, a plain line every few seconds."""

from __future__ import annotations

import functools
import importlib
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

import planner
from planner.render.terminal import (
    DEFAULT_PROGRESS_INTERVAL_S,
    PROGRESS_INTERVAL_ENV,
    SolveProgress,
)

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "resnet.plan"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _spinner_text(console: Console, progress: SolveProgress) -> str:
    """What the terminal shows at one refresh of `solve`'s spinner."""
    out = io.StringIO()
    console.file = out
    with console.status(progress) as status:
        console.print(status.renderable)
    return out.getvalue()


def test_the_spinner_text_follows_progress_and_the_clock() -> None:
    clock = Clock()
    progress = SolveProgress("auto", 177, 10.0, clock=clock)
    progress.bound_s = 0.0779
    console = Console(width=200, color_system=None, force_terminal=False)
    first = _spinner_text(console, progress)
    assert "auto · 0.0/10 s · placing 177 ops · bound 77.9 ms" in first
    clock.now += 1.5
    progress.update(0.1, "heuristics: metf")
    second = _spinner_text(console, progress)
    assert "auto · 1.5/10 s · heuristics: metf · bound" in second and "best" not in second
    progress.update(0.3, "search: from metf, best 87.960 ms")
    progress.update(0.4, "search: best 87.916 ms")
    progress.update(0.5, "cpsat incumbent 0.09 s")  # worse: the best so far stays
    third = _spinner_text(console, progress)
    assert "cpsat · best 87.92 ms · bound 77.9 ms · gap 12.9%" in third
    assert len(progress.line()) <= 76  # with the spinner, within 80 columns
    assert len({first, second, third}) == 3


def _solve(args: list[str], interval: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != PROGRESS_INTERVAL_ENV}
    if interval is not None:
        env[PROGRESS_INTERVAL_ENV] = interval
    return subprocess.run([sys.executable, "-m", "planner", "solve", str(SPEC), *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
                          check=False)


@pytest.mark.slow
def test_without_a_terminal_a_plain_line_comes_every_interval() -> None:
    # 8 s: the heuristics `search` starts from take a fixed amount of work, about 0.3 s on
    # an idle machine; at load 12 on two cores they took the whole of a 3 s limit, and the
    # search never reported a best plan to show (this failed there, issue 40)
    run = _solve(["--algo", "search", "--time-limit", "8", "--json"], "0.05")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["ok"] is True  # stdout keeps only the document
    lines = [line for line in run.stderr.splitlines() if line.startswith("planner: search · ")]
    elapsed = [float(re.search(r" · ([0-9.]+)/8 s · ", line).group(1))  # type: ignore[union-attr]
               for line in lines]
    # the elapsed time is the algorithm's: it restarts once, when the algorithm starts
    # after the lower bound. On an idle machine the bound is done before the first line;
    # on a loaded one lines can come while it is computed (this test failed there, issue
    # 40): those come first, and before any best plan
    drops = [k for k in range(1, len(elapsed)) if elapsed[k] < elapsed[k - 1]]
    assert len(drops) <= 1, lines
    start = drops[0] if drops else 0
    assert all("best" not in line for line in lines[:start]), lines
    assert len(elapsed) - start >= 3 and elapsed[-1] > elapsed[start], run.stderr
    bound_ms = planner.lower_bound(planner.load(SPEC).plan()).makespan_s * 1e3
    # the bound is shown from when it is known: on a loaded machine, lines can come while
    # it is still computed, without one (this failed there, issue 40); once shown it is
    # the right one, on every line after
    shown = [f"bound {bound_ms:.4g} ms" in line for line in lines]
    assert any(shown) and all(shown[shown.index(True):]), lines
    assert all(" · bound " not in line for line, ok in zip(lines, shown, strict=True)
               if not ok), lines
    with_best = [line for line in lines if re.search(r" · best [0-9.]+ ms · ", line)]
    assert all(re.search(r" · best [0-9.]+ ms · bound .* · gap [0-9.]+%$", line)
               for line in with_best), with_best
    if doc["result"]["moves"] > 0:  # the search ran: the lines showed its best plan
        assert with_best, lines
    else:  # the heuristics took the whole limit (only on a very busy machine), and say so
        assert "the time limit ran out before the first of" in doc["result"]["reason"], doc


@pytest.mark.parametrize(("args", "interval"), [
    (["--algo", "metf"], None),
    pytest.param(["--algo", "search", "--time-limit", "3"], "0", marks=pytest.mark.slow)])
def test_a_quick_run_or_a_zero_interval_prints_no_progress(args: list[str],
                                                           interval: str | None) -> None:
    t0 = time.monotonic()
    run = _solve(args, interval)  # metf: well under the default 5 s on an idle machine
    wall = time.monotonic() - t0
    assert run.returncode == 0, run.stderr
    lines = re.findall(r"^planner: \w+ · [0-9.]+(?:/[0-9.]+)? s · ", run.stderr, re.MULTILINE)
    if interval == "0":
        assert not lines, run.stderr  # off, however long the run
    else:
        # the first line comes after one interval: none in a run shorter than it, at most
        # one per interval in a longer one (a loaded machine can stretch a quick run past
        # 5 s; that run was not a quick one, and failed here, issue 40)
        assert len(lines) <= int(wall / DEFAULT_PROGRESS_INTERVAL_S), (wall, run.stderr)
    assert "makespan (simulated)" in run.stdout


@pytest.mark.slow
def test_compare_without_a_terminal_prints_plain_progress_lines() -> None:
    fork = ROOT / "tests" / "compare" / "fixtures" / "fork.plan"
    env = {**os.environ, PROGRESS_INTERVAL_ENV: "0.05"}
    run = subprocess.run([sys.executable, "-m", "planner", "compare", str(fork), "--algos",
                          "cpsat,metf", "--time-limit", "1", "--jobs", "1"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
                          check=False)
    assert run.returncode == 0, run.stderr
    lines = re.findall(r"^planner: compare · (\d+)/2 runs · ([0-9.]+) s", run.stderr, re.MULTILINE)
    assert len(lines) >= 3, run.stderr
    assert [float(t) for _, t in lines] == sorted(float(t) for _, t in lines)
    assert "×bound" in run.stdout and "planner: compare" not in run.stdout


def test_the_elapsed_time_shown_is_the_algorithms_as_planning_time_is(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # the lower bound comes first (GNMT: 0.1-0.3 s); counted in the elapsed time shown but
    # not in `planning time`, an interrupted `auto` printed 1.4 s of progress and 1.247 s
    # of planning
    import planner.cli as cli
    from planner.cli import runs
    from planner.render import terminal

    clock = Clock()
    monkeypatch.setattr(terminal, "SolveProgress", functools.partial(SolveProgress, clock=clock))
    bounds = runs.bounds_of

    def slow_bounds(problem: planner.Problem) -> object:
        clock.now += 5.0  # the bound takes 5 s on this clock
        return bounds(problem)

    # and so does the algorithm's module, imported on first use: `auto`'s takes 0.09 s idle
    imported: set[str] = set()
    import_module = importlib.import_module

    def slow_import(name: str, package: str | None = None) -> object:
        if name.startswith("planner.algorithms.") and name not in imported:
            imported.add(name)
            clock.now += 5.0
        return import_module(name, package)

    shown: list[str] = []
    run = cli.algorithms.run

    def watched(name: str, problem: planner.Problem, options: object) -> object:
        out = run(name, problem, options)  # type: ignore[arg-type]
        shown.append(options.progress.__self__.line())  # type: ignore[attr-defined]
        return out

    monkeypatch.setattr(importlib, "import_module", slow_import)
    monkeypatch.setattr(runs, "bounds_of", slow_bounds)
    monkeypatch.setattr(cli.algorithms, "run", watched)
    monkeypatch.chdir(tmp_path)
    from typer.testing import CliRunner

    res = CliRunner().invoke(cli.app, ["solve", str(SPEC), "--algo", "metf"])
    assert res.exit_code == 0, res.output
    assert len(shown) == 1 and " 0.0 s " in f"{shown[0]} ", shown
