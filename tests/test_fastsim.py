"""The fast simulator gives `simulate`'s answers: random problems, every spec, Baechi's GNMT.

Each case compares `Evaluator.run` and `Evaluator.makespan` with `simulate` on makespan,
per-op start and end, per-device order, transfers, static and peak memory and the kinds
of rule broken (relative difference at most 1e-12; in practice they are bit-identical).
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import planner
from planner import algorithms, fastsim
from planner.cost import repeated_problem
from planner.errors import InfeasibleError
from planner.fastsim import Evaluator, FastResult, evaluator, prepare
from planner.model import (
    CONTENTIONS,
    MEMORY_MODELS,
    Cluster,
    Device,
    Edge,
    Graph,
    Link,
    Op,
    Problem,
)
from planner.plan import Plan
from planner.simulate import SimResult, simulate

ROOT = Path(__file__).resolve().parents[1]
GNMT = ROOT.parent / "shared" / "datasets" / "baechi-gnmt" / "gnmt_baechi.json"
MB = 1_000_000
REL = 1e-12
MODES = [(c, mm) for c in CONTENTIONS for mm in MEMORY_MODELS]


def close(a: float, b: float) -> bool:
    """Equal within a relative 1e-12 (inf equals inf)."""
    return a == b or abs(a - b) <= REL * max(abs(a), abs(b))


def assert_same(fast: FastResult, ref: SimResult, where: str = "") -> None:
    """Every figure `FastResult` shares with `SimResult` agrees."""
    assert close(fast.makespan_s, ref.makespan_s), where
    kinds = tuple(dict.fromkeys(v.kind for v in ref.violations))
    assert fast.violations == kinds, where
    assert fast.feasible == ref.feasible, where
    assert fast.placement.tolist() == list(ref.placement), where
    assert all(map(close, fast.start_s.tolist(), ref.start_s)), where
    assert all(map(close, fast.end_s.tolist(), ref.end_s)), where
    assert [s.tolist() for s in fast.order] == [list(s) for s in ref.order], where
    assert fast.transfers.tolist() == [[x.src_op, x.src_device, x.dst_device, x.bytes]
                                       for x in ref.transfers], where
    assert all(close(a, x.start_s) and close(b, x.end_s)
               for (a, b), x in zip(fast.transfer_times.tolist(), ref.transfers, strict=True)
               ), where
    assert fast.memory_static_bytes.tolist() == list(ref.memory_static_bytes), where
    assert fast.memory_peak_bytes.tolist() == list(ref.memory_peak_bytes), where
    assert fast.busy_s == ref.busy_s, where  # both `math.fsum`s of the same times


def check(ev: Evaluator, placement: object, order: object = None,
          priority: np.ndarray | None = None, where: str = "") -> SimResult:
    """Compare the evaluator with `simulate` on one plan; return the reference result."""
    p = ev.problem
    ref_order = order
    if priority is not None:
        place = [d if type(d) is int and 0 <= d < ev.m else -1
                 for d in placement]  # type: ignore[attr-defined]
        ref_order = tuple(tuple(int(i) for i in priority if place[i] == d)
                          for d in range(ev.m))
    ref = simulate(p, Plan(tuple(placement), ref_order))  # type: ignore[arg-type]
    fast = ev.run(placement, order, priority=priority)  # type: ignore[arg-type]
    assert_same(fast, ref, where)
    want = ref.makespan_s if ref.feasible else math.inf
    got = ev.makespan(placement, order, priority=priority)  # type: ignore[arg-type]
    assert close(got, want), where
    return ref


# -- random problems ------------------------------------------------------------------


def random_problem(rng: random.Random) -> Problem:
    """A random DAG with zero-time and unrunnable ops, pins, colocation, missing links."""
    n = rng.randint(1, 24)
    m = rng.randint(1, 4)
    kinds = ["gpu", "cpu"]

    def op(i: int) -> Op:
        size = [0, 0, MB, 2 * MB, 5 * MB]
        common = {"params_bytes": rng.choice(size), "output_bytes": rng.choice(size),
                  "temp_bytes": rng.choice(size)}
        r = rng.random()
        if r < 0.15:
            return Op(f"o{i}", time_s=0.0, **common)  # zero-time: ties everywhere
        if r < 0.22:  # runs on gpus only: unrunnable on a cpu
            return Op(f"o{i}", time_by_kind={"gpu": rng.choice([1e-3, 2e-3])}, **common)
        return Op(f"o{i}", time_s=rng.choice([0.25e-3, 0.5e-3, 1e-3, 3e-3]), **common)

    ops = tuple(op(i) for i in range(n))
    edges = tuple(Edge(a, b, rng.choice([0, MB, 3 * MB]))
                  for a in range(n) for b in range(a + 1, n) if rng.random() < 0.2)
    devices = tuple(Device(f"d{d}", rng.choice([4 * MB, 16 * MB, 1 << 40]),
                           rng.choice(kinds), rng.choice([0.5, 1.0, 2.0])) for d in range(m))
    links = tuple(Link(a, b, rng.choice([0.5e9, 1e9, 4e9]), rng.choice([0.0, 1e-4]))
                  for a in range(m) for b in range(m) if a != b and rng.random() < 0.9)
    groups: list[tuple[int, ...]] = []
    if n >= 4 and rng.random() < 0.3:
        groups.append(tuple(sorted(rng.sample(range(n), 2))))
    pins = {i: rng.randrange(m) for i in rng.sample(range(n), min(n, 2))
            if rng.random() < 0.3}
    return Problem("p", Graph("g", ops, edges, tuple(groups)), Cluster("c", devices, links),
                   rng.choice(MEMORY_MODELS), rng.choice(CONTENTIONS), pins)


def random_placement(rng: random.Random, n: int, m: int) -> list[object]:
    """Mostly valid device indices, sometimes unplaced, out of range, None or a float."""
    out: list[object] = []
    for _ in range(n):
        r = rng.random()
        out.append(None if r < 0.02 else -1 if r < 0.04 else m + 1 if r < 0.06
                   else 0.0 if r < 0.07 else rng.randrange(m))  # 0.0: not an index
    return out


def random_order(rng: random.Random, ref: SimResult, n: int) -> list[list[object]]:
    """The dispatch order, shuffled or broken in one of several ways."""
    order: list[list[object]] = [list(s) for s in ref.order]
    how = rng.randrange(6)
    if how == 1:  # any permutation per device: often deadlocks
        for s in order:
            rng.shuffle(s)
    elif how == 2 and any(order):  # an op left out (runs last)
        rng.choice([s for s in order if s]).pop()
    elif how == 3 and any(order):  # an op listed twice, or on the wrong device
        s = rng.choice([s for s in order if s])
        order[rng.randrange(len(order))].append(s[0])
    elif how == 4:  # entries that are not ops, and a device that does not exist
        order.append([0] if n else [])
        order[0].extend([n + 3, -2, "x", 0.0])
    return order


@pytest.mark.parametrize("seed", range(40))
def test_random_problems_match_simulate(seed: int) -> None:
    rng = random.Random(seed)
    for case in range(15):
        p = random_problem(rng)
        for contention, memory in MODES:
            q = dataclasses.replace(p, contention=contention, memory_model=memory)
            ev = Evaluator(q)
            n, m = len(q.graph.ops), len(q.cluster.devices)
            place = random_placement(rng, n, m)
            where = f"seed {seed} case {case} {contention}/{memory} {place}"
            ref = check(ev, place, where=where)
            check(ev, place, random_order(rng, ref, n), where=where + " order")
            perm = np.array(rng.sample(range(n), n), dtype=np.int64)
            check(ev, place, priority=perm, where=where + " priority")


#: the kernel's tables, as `Evaluator` holds them
TABLES = ("_topo", "_pos", "_compute", "_lat", "_inv", "_pred", "_succ_ptr", "_succ_dst",
          "_succ_bytes", "_tr_cap", "_mode", "_liveness", "_pins", "_grp_ptr", "_grp_ops",
          "_params", "_output", "_temp", "_caps")


@pytest.mark.parametrize("seed", range(8))
def test_repeated_tables_are_those_of_the_copies(seed: int) -> None:
    """`Evaluator.repeated` tiles one copy's tables: they equal those the evaluator of the
    copies' problem derives op by op (dispatch's ranks too), and its answers `simulate`'s
    on the copies under dispatch, a given order and a priority."""
    rng = random.Random(seed)
    for case in range(8):
        p = random_problem(rng)
        times = rng.randint(1, 4)
        ev, twin = Evaluator(p).repeated(times), Evaluator(repeated_problem(p, times))
        assert (ev.n, ev.m, ev.backend) == (twin.n, twin.m, twin.backend)
        for name in TABLES:
            assert np.array_equal(getattr(ev, name), getattr(twin, name)), name
        for mine, theirs in zip(ev._ranked(), twin._ranked(), strict=True):
            assert np.array_equal(mine, theirs)
        place = random_placement(rng, ev.n, ev.m)
        where = f"seed {seed} case {case} x{times} {place}"
        ref = check(ev, place, where=where)
        check(ev, place, random_order(rng, ref, ev.n), where=where + " order")
        perm = np.array(rng.sample(range(ev.n), ev.n), dtype=np.int64)
        check(ev, place, priority=perm, where=where + " priority")


def test_repeated_reference_evaluator_stays_reference() -> None:
    p = random_problem(random.Random(3))
    ev = Evaluator(p, backend="reference").repeated(3)
    assert ev.backend == "reference" and ev.n == 3 * len(p.graph.ops)
    place = [0] * ev.n
    assert_same(ev.run(place), simulate(repeated_problem(p, 3), Plan(tuple(place))))


def test_random_problems_reach_every_violation_kind() -> None:
    """The generator above exercises each rule (else the identity test proves little)."""
    seen: set[str] = set()
    rng = random.Random(0)
    for _ in range(300):
        p = random_problem(rng)
        ev = Evaluator(p)
        place = random_placement(rng, len(p.graph.ops), len(p.cluster.devices))
        ref = simulate(p, Plan(tuple(place)))  # type: ignore[arg-type]
        seen |= set(ev.run(place).violations)
        perm = [list(reversed(s)) for s in ref.order]
        seen |= set(ev.run(place, perm).violations)
    assert seen == {"unplaced", "order", "pin", "colocation", "unrunnable", "no_link",
                    "memory"}


def test_a_transfer_faster_than_instant_falls_back_to_the_reference() -> None:
    """A negative latency breaks the kernel's queue assumption; answers stay right."""
    ops = (Op("a", time_s=1.0), Op("b", time_s=1.0), Op("c", time_s=0.5))
    g = Graph("g", ops, (Edge(0, 1, 10), Edge(2, 1, 10)))
    devs = (Device("d0", 1 << 30), Device("d1", 1 << 30))
    links = (Link(0, 1, 1e9, -0.75), Link(1, 0, 1e9, -0.75))
    p = Problem("p", g, Cluster("c", devs, links), contention="none")
    check(Evaluator(p), [0, 1, 1])


# -- real specs and data ----------------------------------------------------------------

HEURISTICS = ("metf", "msct", "mtopo", "heft", "cpop", "single", "roundrobin")


def spec_plans() -> list[tuple[Path, str]]:
    return [(path, name) for path in sorted((ROOT / "specs").glob("*.plan"))
            for name in planner.load(path).plans]


@pytest.mark.parametrize(("path", "name"), [
    pytest.param(path, name, marks=pytest.mark.slow) if path.name == "gnmt.plan" else (path, name)
    for path, name in spec_plans()], ids=lambda x: getattr(x, "name", x))
def test_every_spec_with_the_heuristics_plans(path: Path, name: str) -> None:
    problem = planner.load(path).plan(name)
    rng = random.Random(name)
    checked = 0
    for algo in HEURISTICS:
        try:
            plan = algorithms.run(algo, problem).plan
        except InfeasibleError:  # e.g. `single` when no device holds the model
            continue
        contention, memory = rng.choice(MODES)
        q = dataclasses.replace(problem, contention=contention, memory_model=memory)
        ev = Evaluator(q)
        where = f"{name} {algo} {contention}/{memory}"
        check(ev, plan.placement, where=where)
        check(ev, plan.placement, plan.order, where=where + " order")
        checked += 1
    assert checked >= len(HEURISTICS) - 1


@pytest.mark.skipif(not GNMT.exists(), reason=f"Baechi's GNMT graph is not at {GNMT} "
                    "(the shared datasets folder is not checked out next to the repo)")
def test_baechi_gnmt_perturbed_plans_in_every_mode() -> None:
    from planner.io.baechi import load_baechi

    base = load_baechi(str(GNMT))
    metf = algorithms.run("metf", base).plan
    rng = random.Random(12)
    n, m = len(base.graph.ops), len(base.cluster.devices)
    for contention, memory in MODES:
        p = dataclasses.replace(base, contention=contention, memory_model=memory)
        ev = Evaluator(p)
        check(ev, metf.placement, where=f"{contention}/{memory} metf")
        check(ev, metf.placement, metf.order, where=f"{contention}/{memory} metf order")
        for k in range(3):
            place = list(metf.placement)
            for i in rng.sample(range(n), 20):
                place[i] = rng.randrange(m)
            check(ev, place, where=f"{contention}/{memory} perturbed {k}")


# -- the API ------------------------------------------------------------------------------


def test_makespan_is_inf_exactly_when_infeasible_and_skips_the_run() -> None:
    ops = (Op("a", time_s=1.0, params_bytes=3 * MB), Op("b", time_s=2.0))
    g = Graph("g", ops, (Edge(0, 1, MB),))
    devs = (Device("d0", 2 * MB), Device("d1", 1 << 30))
    p = Problem("p", g, Cluster("c", devs, (Link(0, 1, 1e9), Link(1, 0, 1e9))),
                pins={1: 1})
    ev = Evaluator(p)
    assert ev.makespan([1, 1]) == 3.0
    assert ev.makespan([1, 0]) == math.inf  # pin
    assert ev.makespan([0, 1]) == math.inf  # memory: 3 MB on a 2 MB device
    r = ev.run([0, 1])
    assert r.violations == ("memory",) and r.makespan_s == pytest.approx(3.001)
    assert ev.makespan(np.array([1, 1], dtype=np.int32)) == 3.0  # any integer dtype


def test_the_kernel_holds_an_output_until_its_transfer_ends() -> None:
    # a [0,1] on d0 feeds b [1,2] there and c on d1 over [1,4]; d [2,3] on d0 allocates
    # 3 MB while a's 3 MB are still being sent: 6 MB on d0 (`simulate`'s hand case,
    # tests/test_simulate.py), and a 5 MB device does not hold it.
    ops = (Op("a", time_s=1e-3, output_bytes=3 * MB), Op("b", time_s=1e-3),
           Op("c", time_s=1e-3), Op("d", time_s=1e-3, output_bytes=3 * MB),
           Op("e", time_s=1e-3))
    g = Graph("g", ops, (Edge(0, 1, 3 * MB), Edge(0, 2, 3 * MB), Edge(1, 3, 0),
                         Edge(3, 4, 3 * MB)))
    devs = (Device("d0", 5 * MB), Device("d1", 1 << 30))
    p = Problem("p", g, Cluster("c", devs, (Link(0, 1, 1e9), Link(1, 0, 1e9))),
                memory_model="liveness")
    ev = Evaluator(p, backend="numba" if fastsim.numba_available() else "reference")
    ref = check(ev, [0, 0, 1, 0, 0])
    assert ref.memory_peak_bytes[0] == 6 * MB
    r = ev.run([0, 0, 1, 0, 0])
    assert r.memory_peak_bytes.tolist() == [6 * MB, 3 * MB] and r.violations == ("memory",)
    assert ev.makespan([0, 0, 1, 0, 0]) == math.inf


def test_the_kernel_frees_an_output_read_only_elsewhere_when_its_transfer_ends() -> None:
    # a [0,1] on d0 feeds only c on d1 (3 MB over [1,4]); c [4,5] feeds d [5,6] on d0,
    # which allocates 3 MB: a's output is freed at 4, so d0 peaks at 3 MB and a 5 MB
    # device holds it (`simulate`'s hand case, tests/test_simulate.py; 6 MB before). With
    # x on d2, which d0 cannot reach, a's output is owed there and never freed: 6 MB.
    ops = (Op("a", time_s=1e-3, output_bytes=3 * MB), Op("c", time_s=1e-3),
           Op("d", time_s=1e-3, output_bytes=3 * MB), Op("e", time_s=1e-3),
           Op("x", time_s=1e-3))
    g = Graph("g", ops, (Edge(0, 1, 3 * MB), Edge(1, 2, 0), Edge(2, 3, 3 * MB),
                         Edge(0, 4, 3 * MB)))
    devs = (Device("d0", 5 * MB), Device("d1", 1 << 30), Device("d2", 1 << 30))
    links = (Link(0, 1, 1e9), Link(1, 0, 1e9), Link(1, 2, 1e9), Link(2, 1, 1e9))
    p = Problem("p", g, Cluster("c", devs, links), memory_model="liveness")
    ev = Evaluator(p, backend="numba" if fastsim.numba_available() else "reference")
    for place, peak in (([0, 1, 0, 0, 1], 3 * MB), ([0, 1, 0, 0, 2], 6 * MB)):
        ref = check(ev, place)
        assert ref.memory_peak_bytes[0] == peak
        r = ev.run(place)
        assert r.memory_peak_bytes[0] == peak and (r.feasible == (peak == 3 * MB))


def test_priority_keeps_an_order_valid_when_ops_move() -> None:
    p = planner.load(ROOT / "specs" / "resnet.plan").plan()
    ev = evaluator(p)
    assert evaluator(p) is ev  # cached on the problem
    sol = algorithms.run("metf", p).plan
    first = ev.run(sol.placement)
    prio = ev.priority_from(first.start_s)
    # the order each device ran in, replayed from start times
    assert ev.makespan(sol.placement, priority=prio) == pytest.approx(first.makespan_s)
    moved = list(sol.placement)
    moved[len(moved) // 2] = (moved[len(moved) // 2] + 1) % ev.m
    assert ev.makespan(moved, sol.order) == math.inf  # the old order lists a moved op
    assert math.isfinite(ev.makespan(moved, priority=prio))
    with pytest.raises(ValueError, match="every op exactly once"):
        ev.makespan(moved, priority=np.zeros(ev.n, np.int64))


def test_threads_evaluate_in_parallel_with_the_same_answers() -> None:
    p = planner.load(ROOT / "specs" / "inception.plan").plan("inception_v2_small4")
    ev = evaluator(p)
    rng = random.Random(5)
    base = algorithms.run("metf", p).plan.placement
    places = [[d if rng.random() > 0.05 else rng.randrange(ev.m) for d in base]
              for _ in range(40)]
    alone = [ev.makespan(x) for x in places]
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(ev.makespan, places)) == alone


def test_reference_backend_gives_the_same_answers() -> None:
    rng = random.Random(7)
    for _ in range(20):
        p = random_problem(rng)
        place = random_placement(rng, len(p.graph.ops), len(p.cluster.devices))
        fast, ref = Evaluator(p), Evaluator(p, backend="reference")
        assert ref.backend == "reference"
        assert_same(ref.run(place), simulate(p, Plan(tuple(place))))  # type: ignore[arg-type]
        assert close(fast.makespan(place), ref.makespan(place))


def test_kernel_is_prepared_once_and_planner_does_not_import_numba() -> None:
    prepare()
    assert prepare() == 0.0
    p = random_problem(random.Random(3))
    ev = Evaluator(p)
    n = len(p.graph.ops)
    for place in ([0] * n, (0,) * n, np.zeros(n, np.int32), np.zeros(n, np.uint8)):
        ev.makespan(place)
        ev.makespan(place, [list(range(n))])
        ev.makespan(place, priority=np.arange(n))
        ev.run(place)
    # every input form reaches the one compiled specialisation: no recompiling
    assert len(fastsim._compiled.signatures) == 1
    code = ("import sys, planner, planner.fastsim, planner.algorithms, planner.cli; "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_a_cold_cache_is_built_in_the_background_never_on_the_clock(tmp_path: Path) -> None:
    """With nothing in numba's cache, evaluations answer through `simulate` and a detached
    child compiles the kernel; once it is done, the kernel is loaded from the cache (a
    cache hit, no compile in this process) and gives the same answers."""
    code = """
import sys
import planner
from planner import algorithms, compiled, fastsim
from planner.fastsim import _kernel
from planner.plan import Plan
from planner.simulate import simulate
compiled.BUILD_ARGS = ("--only", "fastsim")
p = planner.load(sys.argv[1]).plan()
place = algorithms.run("metf", p).plan.placement
ev = fastsim.Evaluator(p)
first = ev.makespan(place)
print(fastsim._compiled is None, compiled._child is not None, compiled.building())
print(len(_kernel.evaluate.signatures) == 0)  # nothing compiled in this process
compiled._child.wait(timeout=600)
print(compiled._child.returncode == 0, compiled.building())
fastsim._next_look = 0.0
second = ev.makespan(place)
print(fastsim._compiled is not None, sum(_kernel.evaluate.stats.cache_misses.values()) == 0)
print(first == second == simulate(p, Plan(place)).makespan_s)
"""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "specs" / "resnet.plan")],
                         env=env, capture_output=True, text=True, check=True, timeout=900)
    assert out.stdout.split() == ["True", "True", "True", "True", "True", "False", "True",
                                  "True", "True"], out.stderr
    assert list((tmp_path / "cache").rglob("*.nbi")), "the child left nothing in numba's cache"
    assert not list(tmp_path.glob("planner-build-*.lock")), "the child left its lock"
