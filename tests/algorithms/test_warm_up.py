"""`--time-limit` counts planning work, not imports or one-time kernel loads (`warm_up`).

A colleague's `solve diamond.plan --algo search --time-limit 1` on a loaded machine said
"the time limit ran out after 0 of 9889 moves": importing numba and loading the compiled
simulator (about 0.9 s there) ran on the search's clock. Here an import takes 5 s on a
fake clock that stands still otherwise, so nothing depends on this machine's speed or
load: each algorithm must do, and hand its solver, what it does when imports are free.
"""

from __future__ import annotations

import builtins
import importlib
import types
from collections.abc import Iterator
from typing import Any

import pytest
from algo_support import load_spec
from pipeline.pipe_support import chain_text  # tests/ is on the path (conftest)

import planner
from planner import algorithms
from planner.algorithms import Options, clock, run, search
from planner.algorithms.exact import backends, common, cpsat, ilp, ilp_model
from planner.algorithms.pipeilp import model as pipeilp_model
from planner.algorithms.pipeilp import solve as pipeilp_solve

#: the modules whose clocks the fake one replaces
CLOCKED = (clock, search, cpsat, common, ilp, ilp_model, backends, pipeilp_solve,
           pipeilp_model, algorithms)
SLOW_S = 5.0


class FakeClock:
    """`time.monotonic` and `time.perf_counter` that move only when a slow import runs."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slow: tuple[str, ...] = ()
        self.seen: set[str] = set()

    def time(self) -> types.SimpleNamespace:
        return types.SimpleNamespace(monotonic=lambda: self.now,
                                     perf_counter=lambda: self.now)

    def imported(self, name: str) -> None:
        """The first import of a module under one of `slow` takes `SLOW_S`."""
        hit = next((p for p in self.slow if name == p or name.startswith(p + ".")), None)
        if hit is not None and hit not in self.seen:
            self.seen.add(hit)
            self.now += SLOW_S


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    fc = FakeClock()
    for module in CLOCKED:
        monkeypatch.setattr(module, "time", fc.time())
    real_import, real_import_module = builtins.__import__, importlib.import_module

    def slow_import(name: str, *args: Any, **kwargs: Any) -> Any:
        level = args[3] if len(args) > 3 else kwargs.get("level", 0)
        if not level:
            fc.imported(name)
        return real_import(name, *args, **kwargs)

    def slow_import_module(name: str, package: str | None = None) -> Any:
        fc.imported(name)
        return real_import_module(name, package)

    monkeypatch.setattr(builtins, "__import__", slow_import)
    monkeypatch.setattr(importlib, "import_module", slow_import_module)
    # the compiled simulator is loaded (or found missing) on its first look: that look
    # imports numba, slow too; its answer stays False, so both runs size one budget
    looks: list[int] = []

    def compiled_ready() -> bool:
        if not looks and "numba" in fc.slow:
            fc.now += SLOW_S
        looks.append(1)
        return False

    monkeypatch.setattr(search, "compiled_ready", compiled_ready)
    yield fc


DIAMOND = "diamond"


def test_a_slow_simulator_load_leaves_the_search_every_move(fake: FakeClock) -> None:
    problem = load_spec(DIAMOND)
    fake.slow = ("numba", "planner.algorithms.msct")
    slow = run("search", problem, Options(time_limit_s=1))
    assert "reason" not in slow.info, slow.info["reason"]  # was: ran out after 0 moves
    assert slow.planning_s == 0.0  # the fake clock moved only during the imports
    fake.slow = ()
    free = run("search", problem, Options(time_limit_s=1))
    assert slow.info["moves"] == free.info["moves"] > 0
    assert slow.plan == free.plan


@pytest.fixture
def caps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The wall-clock cap of each CP-SAT search, as handed to the solver."""
    seen: list[float] = []
    solve = cpsat.CpsatModel.solve

    def watched(self: Any, bud: Any, *args: Any) -> Any:
        seen.append(bud.wall_cap_s)
        return solve(self, bud, *args)

    monkeypatch.setattr(cpsat.CpsatModel, "solve", watched)
    return seen


def test_auto_spends_its_limit_on_the_search_and_cpsat(fake: FakeClock,
                                                       caps: list[float]) -> None:
    problem = load_spec(DIAMOND)
    fake.slow = ("numba", "ortools", "planner.algorithms.msct")
    slow = run("auto", problem, Options(time_limit_s=2))
    fake.slow = ()
    free = run("auto", problem, Options(time_limit_s=2))
    assert "reason" not in slow.info, slow.info["reason"]
    assert slow.info["search"] == free.info["search"]
    assert len(caps) == 2 and caps[0] == caps[1] > 0.5  # was 0.01 s after the slow imports
    assert slow.plan == free.plan


def test_cpsat_gets_the_same_search_time_after_a_slow_ortools_import(
        fake: FakeClock, caps: list[float]) -> None:
    problem = load_spec(DIAMOND)
    fake.slow = ("ortools",)
    run("cpsat", problem, Options(time_limit_s=1))
    fake.slow = ()
    run("cpsat", problem, Options(time_limit_s=1))
    assert len(caps) == 2 and caps[0] == caps[1] > 1.0  # was 0.01 s


@pytest.mark.skipif(not backends.available("highs"), reason="HiGHS (highspy) is not installed")
def test_the_ilps_solver_gets_the_same_time_after_a_slow_pyomo_import(
        fake: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    limits: list[tuple[float, float | None]] = []
    solve_pyomo = backends.solve_pyomo

    def watched(model: Any, name: str, **kwargs: Any) -> Any:
        limits.append((kwargs["time_limit_s"], kwargs.get("load_by")))
        return solve_pyomo(model, name, **kwargs)

    monkeypatch.setattr(backends, "solve_pyomo", watched)
    # diamond's warm start meets its lower bound, where no solver runs: make this one run
    monkeypatch.setattr(ilp, "settled", lambda *a, **k: None)
    problem = load_spec(DIAMOND)
    fake.slow = ("pyomo", "highspy")
    run("ilp", problem, Options(time_limit_s=1))
    fake.slow = ()
    run("ilp", problem, Options(time_limit_s=1))
    assert len(limits) == 2
    (slow_s, slow_by), (free_s, free_by) = limits
    assert slow_s == free_s == 1.0  # was 0.05 s: the import had used the limit up
    assert slow_by == free_by is not None  # the build's and hand-over's deadline, 5 s sooner


@pytest.mark.skipif(not backends.available("highs"), reason="HiGHS (highspy) is not installed")
def test_the_pipeline_ilps_solver_gets_the_same_time_after_a_slow_pyomo_import(
        fake: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    wall: list[float] = []
    run_solver = pipeilp_solve._run_solver

    def watched(model: Any, options: Options, wall_s: float, *args: Any) -> Any:
        wall.append(wall_s)
        return run_solver(model, options, wall_s, *args)

    monkeypatch.setattr(pipeilp_solve, "_run_solver", watched)
    problem = planner.loads(chain_text(6, 2)).plan("p")
    fake.slow = ("pyomo", "highspy")
    run("pipeilp", problem, Options(time_limit_s=1))
    fake.slow = ()
    run("pipeilp", problem, Options(time_limit_s=1))
    assert len(wall) == 2 and wall[0] == wall[1]  # was 5 s shorter
