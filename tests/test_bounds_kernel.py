"""The compiled bounds passes (`planner.bounds._kernel`) are a twin of the numpy passes:
every bound the same to the bit, on every spec, Baechi's GNMT, a generated deep graph and
a few hundred random problems (memory-bound ones included, so that the heaviest paths
count), and "auto" picks them only from `KERNEL_MIN_OPS`."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from exact.instances import layered_problem, random_problem
from test_fastsim import random_problem as hostile_problem

import planner.bounds as bounds
from planner.bounds import lower_bound
from planner.model import Problem
from planner.spec.load import load_path

pytest.importorskip("numba", reason="numba is not installed: the numpy passes run alone")
# compiles the kernel on a machine whose numba cache lacks it (CI fills it first)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
GNMT = ROOT.parent / "shared" / "datasets" / "baechi-gnmt" / "gnmt_baechi.json"


@pytest.fixture(scope="module", autouse=True)
def _kernel_ready() -> None:
    # compiles once per machine (numba's cache), here rather than in the first test; each
    # test still starts with it unloaded (tests/conftest.py), and reloads it in microseconds
    bounds.prepare()


def both(problem: Problem, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The bounds of `problem` by each engine, as the hex of every float (so that even the
    sign of a zero counts)."""
    out = []
    for engine in ("reference", "kernel"):
        monkeypatch.setattr(bounds, "ENGINE", engine)
        # a fresh problem each time: nothing cached on it from the other engine
        b = lower_bound(dataclasses.replace(problem))
        out.append(repr({k: v.hex() if isinstance(v, float) else v
                         for k, v in dataclasses.asdict(b).items()}))
    return out[0], out[1]


def test_every_spec_gets_the_same_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = 0
    for path in sorted((ROOT / "specs").rglob("*.plan")):
        for problem in load_path(path).spec.plans.values():
            ref, fast = both(problem, monkeypatch)
            assert ref == fast, path
            seen += 1
    assert seen >= 7


def test_random_problems_get_the_same_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pins, colocation, missing links, zero-time and unrunnable ops, memory caps that
    force the memory path (`memory_path_s` > 0 on some)."""
    memory_bound = 0
    for s in range(120):
        rng = random.Random(s)
        for problem in (
                random_problem(s, 3 + s % 20, 1 + s % 4, memory=0.3 if s % 2 else None,
                               pins=s % 3, colocate=s % 5 == 0, missing_link=s % 7 == 0),
                layered_problem(s, 10 + s, 2 + s % 3), hostile_problem(rng)):
            ref, fast = both(problem, monkeypatch)
            assert ref == fast, problem.name
            monkeypatch.setattr(bounds, "ENGINE", "reference")
            memory_bound += lower_bound(problem).memory_path_s > 0
    assert memory_bound >= 20, memory_bound


def test_a_deep_graph_gets_the_same_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """About a thousand levels (the shape the kernel is for), with caps small enough that
    the memory path counts."""
    problem = layered_problem(5, 2000, 4, width=3)
    small = tuple(dataclasses.replace(d, memory_bytes=300 * 10**6)
                  for d in problem.cluster.devices)
    problem = dataclasses.replace(problem, cluster=dataclasses.replace(problem.cluster,
                                                                       devices=small))
    ref, fast = both(problem, monkeypatch)
    assert ref == fast
    monkeypatch.setattr(bounds, "ENGINE", "reference")
    assert lower_bound(problem).memory_path_s > lower_bound(problem).critical_path_s


@pytest.mark.skipif(not GNMT.exists(), reason=f"{GNMT} is absent (../shared)")
def test_baechi_gnmt_gets_the_same_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.io.baechi import load_baechi

    ref, fast = both(load_baechi(GNMT), monkeypatch)
    assert ref == fast


def test_auto_compiles_from_the_threshold_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a process that has not loaded the compiled passes, "auto" keeps numpy's below
    `KERNEL_MIN_OPS` (`_levels` runs) and loads them from it; once loaded, they run for
    every graph."""
    calls = []
    levels = bounds._levels
    monkeypatch.setattr(bounds, "_levels", lambda p: calls.append(1) or levels(p))
    # the threshold's decision, not numba's cache: a background build (the one the first
    # `planner solve` of a fresh clone starts, for a minute) made the load say "not now"
    monkeypatch.setattr(bounds, "_load_cached", lambda: bounds.prepare() >= 0.0)
    monkeypatch.setattr(bounds, "ENGINE", "auto")
    monkeypatch.setattr(bounds, "_passes", None)
    problem = layered_problem(1, 40, 3)
    monkeypatch.setattr(bounds, "KERNEL_MIN_OPS", (41, 41))
    lower_bound(dataclasses.replace(problem))
    assert calls == [1] and bounds._passes is None
    monkeypatch.setattr(bounds, "KERNEL_MIN_OPS", (40, 40))
    lower_bound(dataclasses.replace(problem))
    assert calls == [1] and bounds._passes is not None
    lower_bound(layered_problem(2, 5, 2))
    assert calls == [1]
