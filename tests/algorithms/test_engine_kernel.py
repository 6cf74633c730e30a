"""The compiled ETF engine (`listsched._engine_kernel`) is a twin of the Python engine:
the same placement, the same start times to the bit, the same dead end, and the `Placer`
left in the same state, on every spec, Baechi's GNMT and a few hundred random problems."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from algo_dags import training_problem
from algo_support import SPECS

import planner
from planner.algorithms import msct, run
from planner.algorithms.listsched import (
    Instance,
    Placer,
    Stuck,
    etf,
    etf_schedule,
    priority_positions,
    upward_rank,
)
from planner.io.baechi import load_baechi
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem

pytest.importorskip("numba", reason="numba is not installed: the Python engine runs alone")
# compiles the kernel on a machine whose numba cache lacks it (CI fills it first)
pytestmark = pytest.mark.slow

ROOT_SPECS = Path(__file__).resolve().parents[2] / "specs"
N_RANDOM = 300


@pytest.fixture(scope="module", autouse=True)
def _kernel_ready() -> None:
    # compiles once per machine (numba's cache), here rather than in the first test; each
    # test still starts with it unloaded (tests/conftest.py), and reloads it in microseconds
    etf.prepare()


def _outcome(inst: Instance, prank: Sequence[int], fav: Sequence[int] | None, engine: str,
             *, unbounded: bool = False) -> tuple[Any, ...]:
    """What one engine makes of one schedule: its result (or dead end) and the placer's
    state; start times as `float.hex`, so that even the sign of a zero counts."""
    saved = etf.ENGINE
    etf.ENGINE = engine
    placer = Placer(inst, unbounded=unbounded)
    if engine == "kernel":
        assert etf._kernel_case(inst, placer, prank, fav)
    try:
        placement, start = etf_schedule(inst, placer, prank, favourite=fav)
        result: tuple[Any, ...] = ("placed", placement, [x.hex() for x in start])
    except Stuck as s:
        result = ("stuck", s.op)
    finally:
        etf.ENGINE = saved
    tr = placer.tracker
    return (result, placer.device_of, tr.used, tr.temp, tr.copies, placer.group_dev,
            placer.group_po_left, placer.res_po, placer.res_temp)


def _same(inst: Instance, prank: Sequence[int], fav: Sequence[int] | None, *,
          unbounded: bool = False) -> str:
    """Assert both engines agree; return how the run ended ("placed" or "stuck")."""
    ref = _outcome(inst, prank, fav, "reference", unbounded=unbounded)
    got = _outcome(inst, prank, fav, "kernel", unbounded=unbounded)
    assert got == ref
    return str(ref[0][0])


def _msct_inputs(inst: Instance) -> tuple[list[int], list[int]]:
    """m-SCT's priorities and favourite children, as `msct.place` makes them."""
    rank = upward_rank(inst)
    prank = priority_positions(inst, rank)
    edges = inst.problem.graph.edges
    if inst.m > 1 and edges:
        try:
            if len(edges) > msct.LP_MAX_EDGES:
                raise msct._LpTooLarge
            x, _ = msct.lp_relaxation(inst)
        except msct._LpTooLarge:
            return prank, msct.critical_children(inst, rank)
        return prank, msct.favourite_children(inst, x, 0.5)
    return prank, [-1] * inst.n


def _check_both(inst: Instance) -> list[str]:
    """m-ETF and m-SCT, memory checked and unbounded: both engines agree on each."""
    prank, fav = _msct_inputs(inst)
    return [_same(inst, p, f, unbounded=u)
            for p, f in ((inst.topo_pos, None), (prank, fav)) for u in (False, True)]


def _spec_plans() -> Iterator[Any]:
    for path in (*sorted(ROOT_SPECS.glob("*.plan")), *sorted(SPECS.glob("*.plan"))):
        for name, problem in planner.load(path).plans.items():
            yield pytest.param(problem, id=f"{path.stem}:{name}")


@pytest.mark.parametrize("problem", list(_spec_plans()))
def test_every_spec(problem: Problem) -> None:
    _check_both(Instance(problem))


def test_baechi_gnmt(gnmt_path: Path) -> None:
    assert _check_both(Instance(load_baechi(gnmt_path))) == ["placed"] * 4


def _random_problem(seed: int) -> Problem:
    """A small random DAG with everything the engine has rules for: colocation groups (with
    constants that float), pins, devices of two kinds and several speeds, ops that cannot
    run on one kind, missing links, zero-time ops, equal times (ties), 0-byte and duplicate
    edges, and memory from ample to so tight that ops are dropped and runs dead-end."""
    rng = random.Random(seed)
    n = rng.randint(1, 36)
    m = rng.randint(1, 4)
    kinds = ["gpu", *(rng.choice(("gpu", "cpu")) for _ in range(m - 1))]
    ops = []
    for i in range(n):
        t = rng.choice((0.0, 1e-3, 2e-3, 1e-3, rng.uniform(0, 3e-3)))
        big = rng.random() < 0.2
        nbytes = {k: rng.choice((0, rng.randrange(1, 64) * 1_000_000 if big else
                                 rng.randrange(1, 4_000_000)))
                  for k in ("params_bytes", "output_bytes", "temp_bytes")}
        if rng.random() < 0.15:  # runs on gpus only (no time for a cpu)
            ops.append(Op(f"o{i}", time_by_kind=MappingProxyType({"gpu": t}), **nbytes))
        else:
            ops.append(Op(f"o{i}", t, **nbytes))
    edges = []
    for j in range(1, n):
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            i = rng.randrange(j)
            b = rng.choice((0, ops[i].output_bytes, ops[i].output_bytes, rng.randrange(1 << 22)))
            edges.append(Edge(i, j, b))
    rng.shuffle(edges)
    members = list(range(n))
    rng.shuffle(members)
    groups = []
    for _ in range(rng.randint(0, n // 3)):
        size = rng.choice((2, 2, 3, 4))
        if len(members) < size:
            break
        groups.append(tuple(sorted(members[:size])))
        del members[:size]
    pins = {i: rng.randrange(m) for i in range(n) if rng.random() < 0.05}
    total = sum(o.params_bytes + o.output_bytes + o.temp_bytes for o in ops)
    slack = rng.choice((0.3, 0.6, 0.9, 1.2, 2.0, 10.0))
    cap = max(1, int(slack * total / m))
    devices = tuple(Device(f"d{d}", rng.choice((cap, cap, cap // 2 + 1, 2 * cap)), kinds[d],
                           rng.choice((1.0, 1.0, 2.0, 0.5))) for d in range(m))
    links = tuple(Link(a, b, rng.choice((1e9, 1e10, 4e9)), rng.choice((0.0, 1e-5, 1e-3)))
                  for a in range(m) for b in range(m) if a != b and rng.random() < 0.9)
    graph = Graph(f"r{seed}", tuple(ops), tuple(edges), tuple(sorted(groups)))
    return Problem(f"r{seed}", graph, Cluster("c", devices, links),
                   pins=MappingProxyType(pins))


def _random_favourites(inst: Instance, rng: random.Random) -> list[int]:
    fav = [-1] * inst.n
    for i in range(inst.n):
        if inst.succ[i] and rng.random() < 0.7:
            fav[i] = rng.choice(inst.succ[i])[0]
    return fav


def test_random_problems() -> None:
    ends: dict[str, int] = {}
    floated = 0
    for seed in range(N_RANDOM):
        inst = Instance(_random_problem(seed))
        rng = random.Random(seed)
        floated += any(inst.floating)
        ranks = [inst.topo_pos, list(range(inst.n))[::-1],
                 [rng.randrange(max(1, inst.n // 3)) for _ in range(inst.n)]]  # with ties
        for prank in ranks:
            for fav in (None, _random_favourites(inst, rng)):
                end = _same(inst, prank, fav, unbounded=seed % 5 == 0)
                ends[end] = ends.get(end, 0) + 1
        for end in _check_both(inst):
            ends[end] = ends.get(end, 0) + 1
    # the problems cover both endings and floating members
    assert ends.get("stuck", 0) > 50 and ends.get("placed", 0) > 500, ends
    assert floated > 30


@pytest.mark.parametrize("algorithm", ["metf", "msct"])
def test_run_gives_the_same_plans(algorithm: str, monkeypatch: pytest.MonkeyPatch) -> None:
    problems = [_random_problem(seed) for seed in range(0, N_RANDOM, 7)]
    # memory-tight training graphs: dead ends, budget passes and m-TOPO's fallback
    problems += [training_problem(layers, 4, seed, slack=slack)
                 for layers, seed, slack in ((16, 2, 2.0), (16, 3, 1.5), (12, 1, 1.5),
                                             (12, 4, 1.3), (20, 5, 1.2))]
    problems += [planner.load(p).plan() for p in sorted(SPECS.glob("*.plan"))]
    problems.append(planner.load(ROOT_SPECS / "resnet.plan").plan())
    for problem in problems:
        out = []
        for engine in ("reference", "kernel"):
            monkeypatch.setattr(etf, "ENGINE", engine)
            fresh = dataclasses.replace(problem)  # nothing cached from the other engine
            try:
                sol = run(algorithm, fresh)
            except planner.InfeasibleError as e:
                out.append(("infeasible", str(e)))
                continue
            out.append((sol.plan.dumps(fresh), sol.status, dict(sol.info)))
        assert out[0] == out[1], problem.name


def test_small_graphs_stay_in_python_unless_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    inst = Instance(_random_problem(3))
    prank, fav = _msct_inputs(inst)

    def compiled(placer: Placer) -> bool:
        return etf._kernel_case(inst, placer, prank, fav)

    monkeypatch.setattr(etf, "ENGINE", "auto")
    etf.prepare()  # each test starts without it loaded (tests/conftest.py)
    assert compiled(Placer(inst))  # loaded in this process: used
    monkeypatch.setattr(etf, "_kernel", None)
    assert inst.n < etf._min_ops(True) and not compiled(Placer(inst))
    monkeypatch.setattr(etf, "ENGINE", "reference")
    assert not compiled(Placer(inst))
    monkeypatch.setattr(etf, "ENGINE", "kernel")
    assert not compiled(Placer(inst, [1 << 30] * inst.m))  # budget passes run in Python
    placer = Placer(inst)
    placer.commit(0, 0)
    assert not compiled(placer)  # a placer that holds ops already
    assert not etf._kernel_case(inst, Placer(inst), prank, [inst.n] * inst.n)  # no such op
