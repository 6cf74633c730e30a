"""Benchmark the fast simulator against `simulate` on Baechi's GNMT graph.

    python bench/bench_fastsim.py            # 300 placements per row
    python bench/bench_fastsim.py --quick    # 40 placements per row
    python bench/bench_fastsim.py --record   # also write README's figures (bench/results/)

Placements are m-ETF's plan with 1-8 colocation groups (or lone ops) moved to another
device, as a search would propose them. Each placement is timed with `simulate` and with
`Evaluator.makespan` (or `.run`), in alternating blocks of 20 so both see the same load;
cells are medians of CPU time per evaluation (wall-clock medians are printed too). Every pair is
checked for the same makespan. The compile time is measured in fresh processes: cold (an
empty numba cache) and warm (the cache filled). `--record` keeps every row's speed-up (and
their lowest and highest) and the two compile times.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from recording import Recording, spread, value

from planner import algorithms
from planner.fastsim import Evaluator, prepare
from planner.io.baechi import load_baechi
from planner.model import Problem
from planner.plan import Plan
from planner.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]
GNMT = ROOT.parent / "shared" / "datasets" / "baechi-gnmt" / "gnmt_baechi.json"
TARGET = 20.0
BLOCK = 20


def perturbations(problem: Problem, base: tuple[int, ...], count: int,
                  seed: int = 0) -> list[tuple[int, ...]]:
    """`count` copies of `base` with 1-8 colocation groups (or lone ops) moved."""
    rng = random.Random(seed)
    g = problem.graph
    m = len(problem.cluster.devices)
    units = [list(x) for x in g.colocations]
    units += [[i] for i in range(len(g.ops)) if g.colocation_of[i] < 0]
    out = []
    for _ in range(count):
        place = list(base)
        for unit in rng.sample(units, rng.randint(1, 8)):
            d = rng.randrange(m)
            for i in unit:
                place[i] = d
        out.append(tuple(place))
    return out


def timed(fn: Callable[[], object]) -> tuple[float, float, object]:
    """(CPU seconds, wall seconds, result) of one call."""
    c0, w0 = time.process_time(), time.perf_counter()
    r = fn()
    return time.process_time() - c0, time.perf_counter() - w0, r


def row(name: str, ref: Callable[[int], float], fast: Callable[[int], float],
        count: int) -> float:
    """Time both on every placement, print one table row, return the ratio.

    Blocks of `BLOCK` placements alternate between the two, so both see the same load
    but neither runs with the other's data in the CPU caches (a search loop does not).
    """
    cpu_r, wall_r, cpu_f, wall_f = [], [], [], []
    for lo in range(0, count, BLOCK):
        ks = range(lo, min(lo + BLOCK, count))
        want = []
        for k in ks:
            c, w, a = timed(lambda k=k: ref(k))
            cpu_r.append(c)
            wall_r.append(w)
            want.append(a)
        for k, a in zip(ks, want, strict=True):
            c, w, b = timed(lambda k=k: fast(k))
            cpu_f.append(c)
            wall_f.append(w)
            assert a == b, (name, k, a, b)
    r, f = statistics.median(cpu_r), statistics.median(cpu_f)
    wr, wf = statistics.median(wall_r), statistics.median(wall_f)
    print(f"| {name} | {1 / r:,.0f} | {1 / f:,.0f} | **{r / f:.0f}×** | "
          f"{r * 1e3:.2f} ms / {f * 1e6:.0f} µs | {wr * 1e3:.2f} ms / {wf * 1e6:.0f} µs |",
          flush=True)
    return r / f


def compile_times() -> tuple[float, float]:
    """Seconds `prepare()` takes in a fresh process: empty numba cache, then filled."""
    code = "from planner.fastsim import prepare; print(prepare())"
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        out = [float(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                    capture_output=True, text=True).stdout)
               for _ in range(2)]
    return out[0], out[1]


def main() -> int:
    """Run the benchmark and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 placements per row")
    parser.add_argument("--count", type=int, help="placements per row")
    parser.add_argument("--record", action="store_true",
                        help="write the figures to bench/results/bench_fastsim.json")
    args = parser.parse_args()
    count = args.count or (40 if args.quick else 300)
    if not GNMT.exists():
        print(f"skipped: Baechi's GNMT graph is not at {GNMT}")
        if args.record:
            print("nothing recorded: no graph to measure")
            return 1
        return 0
    recording = Recording.start(__file__, args.quick) if args.record else None
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    cold, warm = compile_times()
    print(f"compile: {cold:.1f} s cold (empty numba cache), {warm:.2f} s from the cache "
          "(each in a fresh process, numba's import included)")
    prepare()
    base = load_baechi(str(GNMT))
    metf = algorithms.run("metf", base).plan.placement
    places = perturbations(base, metf, count)
    arrays = [np.array(p, dtype=np.int64) for p in places]
    print(f"\nGNMT: {len(base.graph.ops):,} ops, {len(base.graph.edges):,} edges, "
          f"{len(base.cluster.devices)} devices; {count} placements per row\n")
    print("| evaluation | simulate /s | fast /s | speed-up | median CPU per call "
          "(simulate / fast) | median wall |")
    print("|---|---|---|---|---|---|")
    ratios: dict[str, float] = {}
    for contention, memory in [("device", "static"), ("device", "liveness"),
                               ("link", "static")]:
        p = dataclasses.replace(base, contention=contention, memory_model=memory)
        ev = Evaluator(p)

        def ref(k: int, p: Problem = p) -> float:
            r = simulate(p, Plan(places[k]))
            return r.makespan_s if r.feasible else math.inf

        label = f"{contention}, {memory}"
        name = f"makespan, dispatch ({label})"
        ratios[name] = row(name, ref, lambda k, ev=ev: ev.makespan(places[k]), count)
        if (contention, memory) != ("device", "static"):
            continue
        name = f"makespan, dispatch, int64 array ({label})"
        ratios[name] = row(name, ref, lambda k, ev=ev: ev.makespan(arrays[k]), count)
        orders = [tuple(tuple(s.tolist()) for s in ev.run(a).order) for a in arrays]

        def ref_order(k: int, p: Problem = p, orders: list[Any] = orders) -> float:
            r = simulate(p, Plan(places[k], orders[k]))
            return r.makespan_s if r.feasible else math.inf

        name = f"makespan, given order ({label})"
        ratios[name] = row(name, ref_order, lambda k, ev=ev, orders=orders: ev.makespan(
            places[k], orders[k]), count)
        name = f"full timing: `run` vs `simulate` ({label})"
        ratios[name] = row(name, lambda k, p=p: simulate(p, Plan(places[k])).makespan_s,
                           lambda k, ev=ev: ev.run(places[k]).makespan_s, count)
    headline = ratios["makespan, dispatch (device, static)"]
    print(f"\ntarget: ≥ {TARGET:.0f}× on `makespan, dispatch (device, static)`")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if recording is not None:
        how = f"GNMT, {count} placements per row, median CPU per evaluation"
        recording.add("speedup", spread(ratios, "×", f"simulate / fast, every row; {how}"))
        recording.add("speedup_dispatch", value(headline, "×", f"the target's row; {how}",
                                                at_least=TARGET))
        recording.add("compile_cold_s", value(cold, "s", "prepare() with an empty numba cache"))
        recording.add("compile_warm_s", value(warm, "s", "prepare() from numba's cache"))
        recording.write()
    return 0 if headline >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
