"""Benchmark the simulator: seconds per `simulate` call on random DAGs.

    python bench/bench_simulate.py            # 10,000 and 100,000 ops, every mode
    python bench/bench_simulate.py --quick    # 2,000 ops, a smoke run
    python bench/bench_simulate.py --record   # also write README's figures (bench/results/)

Graphs have twice as many edges as ops (each op feeds 0-4 later ops within a window of
200, so depth and width look like a real model), random times, sizes and a random
placement on 8 devices linked all-to-all. `dynamic` simulates the placement alone (the
default priority); `given` replays it with that order. Cost tables (`cost.costs`) are
built once per problem and cached, as in every search loop; the time to build them is
printed apart. Each cell is the median of several runs, wall and CPU seconds: the machine
is shared, so the load average is printed too and CPU time is the steadier figure.
`--record` keeps, per size, the lowest and highest cell (wall and CPU) and the cost tables'
build time.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from dataclasses import replace

from recording import Recording, spread, value

from planner.cost import costs
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem
from planner.plan import Plan
from planner.simulate import simulate

TARGETS = {10_000: 0.3, 100_000: 3.0}


def make_problem(n_ops: int, n_devices: int = 8, seed: int = 0) -> tuple[Problem, Plan]:
    """A random graph with 2 * n_ops edges, on `n_devices` all-to-all devices."""
    rng = random.Random(seed)
    ops = tuple(
        Op(f"op{i}", time_s=rng.uniform(1e-5, 1e-3), params_bytes=rng.randrange(1 << 20),
           output_bytes=rng.randrange(1 << 24), temp_bytes=rng.randrange(1 << 22))
        for i in range(n_ops)
    )
    pairs: set[tuple[int, int]] = set()
    target = 2 * n_ops
    while len(pairs) < target:
        a = rng.randrange(n_ops - 1)
        b = rng.randrange(a + 1, min(n_ops, a + 200))
        pairs.add((a, b))
    edges = tuple(Edge(a, b, ops[a].output_bytes) for a, b in sorted(pairs))
    devices = tuple(Device(f"gpu{d}", 1 << 40, "gpu", 1.0) for d in range(n_devices))
    links = tuple(
        Link(a, b, 25e9 if (a < 4) == (b < 4) else 12.5e9, 2e-6)
        for a in range(n_devices) for b in range(n_devices) if a != b
    )
    problem = Problem("bench", Graph("g", ops, edges), Cluster("c", devices, links))
    placement = tuple(rng.randrange(n_devices) for _ in range(n_ops))
    return problem, Plan(placement)


def median_time(problem: Problem, plan: Plan, repeat: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of `repeat` simulations."""
    wall, cpu = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        simulate(problem, plan)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    """Run the benchmark and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 ops only")
    parser.add_argument("--repeat", type=int, default=5, help="runs per cell (median)")
    parser.add_argument("--record", action="store_true",
                        help="write the figures to bench/results/bench_simulate.json")
    args = parser.parse_args()
    recording = Recording.start(__file__, args.quick) if args.record else None
    sizes = [2_000] if args.quick else [10_000, 100_000]
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    print(f"{'ops':>8} {'edges':>8} {'devices':>7} {'contention':>10} {'memory':>9} "
          f"{'order':>7} {'median s':>9} {'cpu s':>7} {'target s':>8}")
    for n in sizes:
        base, plan = make_problem(n)
        t0 = time.perf_counter()
        costs(base)
        build = time.perf_counter() - t0
        fixed = Plan(plan.placement, simulate(base, plan).order)
        repeat = args.repeat if n <= 10_000 else max(3, args.repeat // 2)
        walls: dict[str, float] = {}
        cpus: dict[str, float] = {}
        for memory in ("static", "liveness"):
            for contention in ("none", "link", "device"):
                problem = replace(base, memory_model=memory, contention=contention)
                problem.__dict__["_costs"] = costs(base)  # same tables: share the cache
                for label, p in (("dynamic", plan), ("given", fixed)):
                    wall, cpu = median_time(problem, p, repeat)
                    walls[f"{contention} {memory} {label}"] = wall
                    cpus[f"{contention} {memory} {label}"] = cpu
                    target = TARGETS.get(n)
                    print(f"{n:>8} {len(base.graph.edges):>8} {len(base.cluster.devices):>7} "
                          f"{contention:>10} {memory:>9} {label:>7} {wall:>9.3f} {cpu:>7.3f} "
                          f"{target if target else '-':>8}")
        print(f"{n:>8} ops: building the cost tables once took {build:.3f} s")
        if recording is not None:
            how = (f"{n:,} ops, {len(walls)} contention x memory x order modes, "
                   f"median of {repeat} per mode")
            tag = f"{n // 1000}k" if n >= 1000 else str(n)
            recording.add(f"simulate_{tag}_s", spread(walls, "s", f"wall s per call, {how}",
                                                      at_most=TARGETS.get(n)))
            recording.add(f"simulate_{tag}_cpu_s", spread(cpus, "s", f"CPU s per call, {how}",
                                                          at_most=TARGETS.get(n)))
            recording.add(f"cost_tables_{tag}_s", value(build, "s", "building the cost "
                                                        "tables once, wall s"))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if recording is not None:
        recording.write()


if __name__ == "__main__":
    main()
