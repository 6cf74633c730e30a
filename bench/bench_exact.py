"""Benchmarks of the exact placement back-ends; prints markdown tables.

    python bench/bench_exact.py            # everything (STG cap 10 s per instance)
    python bench/bench_exact.py --quick    # a small run (about a minute)
    python bench/bench_exact.py --cap 60   # the issue's 60 s per STG instance
    python bench/bench_exact.py --only build,cpsat30,cpsat-large,stg
    python bench/bench_exact.py --only stg --solvers cpsat --record   # README's figure

Sections:
- `build`: Pyomo build time of the ILP for 200 ops × 4 devices (target ≤ 2 s), wall and
  CPU (the CPU figure is what an idle machine would show), with rows and binaries.
- `cpsat30`: CP-SAT time to optimality on random 30-op × 4-device layered DAGs whose
  transfers are comparable to compute (target: median ≤ 5 s), 60 s cap.
- `cpsat-large`: how far CP-SAT gets in 60 s on 100 and 300 ops × 4 devices: the gap, and
  the makespan against its m-SCT warm start.
- `stg`: per back-end, how many Standard Task Graph Set instances (10 graphs of 50 tasks ×
  P ∈ {2, 4}, from ../shared/datasets/stg) reach the published optimum within the cap, and
  how many are proved optimal. Skipped when the dataset is absent.

Random instances come from `tests/exact/instances.py` (seeded, deterministic).
`--record` writes the sections' headline figures to bench/results/bench_exact.json.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from exact.instances import layered_problem, stg_optima, stg_path, stg_problem
from recording import Recording, value

from planner.algorithms import Options, run
from planner.algorithms.exact import backends

STG = ROOT / "../shared/datasets/stg"
SECTIONS = ("build", "cpsat30", "cpsat-large", "stg")


def keep(recording: Recording | None, name: str, figure: dict[str, object]) -> None:
    """Add a figure to the run's recording (`--record`), if there is one."""
    if recording is not None:
        recording.add(name, figure)


def table(title: str, head: list[str], rows: list[list[object]]) -> None:
    """Print a markdown table."""
    print(f"\n### {title}\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        print("| " + " | ".join(_fmt(c) for c in r) + " |")
    sys.stdout.flush()


def _fmt(c: object) -> str:
    if isinstance(c, float):
        return f"{c:.3g}" if abs(c) < 1000 else f"{c:.0f}"
    return str(c)


def bench_build(quick: bool, recording: Recording | None) -> None:
    """Pyomo build time, 200 ops × 4 devices."""
    from planner.algorithms.exact.common import lower_bound_s, warm_start
    from planner.algorithms.exact.ilp_model import IlpModel
    from planner.algorithms.exact.instance import Instance

    backends.import_pyomo()
    rows: list[list[object]] = []
    cpus: list[float] = []
    for seed in range(1 if quick else 3):
        problem = layered_problem(seed, 200, 4)
        inst = Instance(problem)
        warm = warm_start(inst, Options())
        lower = lower_bound_s(inst)
        t, c = time.perf_counter(), time.process_time()
        model = IlpModel(inst, warm.makespan_s, lower)
        model.build()
        model.seed(warm)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        rows.append([f"layered seed {seed}", len(problem.graph.edges), model.n_rows,
                     len(model.x) + len(model.y), wall, cpu])
        cpus.append(cpu)
    keep(recording, "build_200_cpu_s", value(
        statistics.median(cpus), "s",
        f"ILP build, 200 ops x 4 devices, CPU s, median of {len(cpus)}", at_most=2.0))
    table("ILP build (Pyomo), 200 ops × 4 devices; target ≤ 2 s",
          ["instance", "edges", "rows", "binaries", "wall s", "CPU s"], rows)


def bench_cpsat30(quick: bool, recording: Recording | None) -> None:
    """CP-SAT time to optimality, 30 ops × 4 devices."""
    rows: list[list[object]] = []
    times: list[float] = []
    cap = 10.0 if quick else 60.0
    for seed in range(3 if quick else 10):
        problem = layered_problem(seed, 30, 4)
        t = time.perf_counter()
        sol = run("cpsat", problem, Options(time_limit_s=cap))
        wall = time.perf_counter() - t
        times.append(wall if sol.status == "optimal" else float("inf"))
        rows.append([seed, len(problem.graph.edges), sol.status, wall, sol.info["warm_start_s"],
                     sol.info["objective_s"], sol.info["gap"]])
    proved = sum(1 for t in times if t < float("inf"))
    rows.append(["median", "", f"{proved}/{len(times)} optimal", statistics.median(times),
                 "", "", ""])
    keep(recording, "cpsat30_median_s", value(
        statistics.median(times), "s", f"CP-SAT to optimality, 30 ops x 4 devices, median "
        f"of {len(times)} (cap {cap:g} s)", at_most=5.0, proved=proved, of=len(times)))
    table(f"CP-SAT, random layered DAGs, 30 ops × 4 devices (cap {cap:.0f} s); "
          "target median ≤ 5 s",
          ["seed", "edges", "status", "wall s", "m-SCT s", "result s", "gap"], rows)


def bench_cpsat_large(quick: bool) -> None:
    """How far CP-SAT gets on 100 and 300 ops."""
    cap = 10.0 if quick else 60.0
    rows: list[list[object]] = []
    for n in ((100,) if quick else (100, 300)):
        problem = layered_problem(0, n, 4)
        t = time.perf_counter()
        sol = run("cpsat", problem, Options(time_limit_s=cap))
        wall = time.perf_counter() - t
        warm = sol.info["warm_start_s"]
        rows.append([n, len(problem.graph.edges), sol.status, wall, warm,
                     sol.info["objective_s"], 1 - sol.info["objective_s"] / warm,
                     sol.info["gap"]])
    table(f"CP-SAT at the cap ({cap:.0f} s), layered DAGs × 4 devices",
          ["ops", "edges", "status", "wall s", "m-SCT s", "result s", "improvement", "gap"],
          rows)


def bench_stg(quick: bool, cap: float, solvers: list[str],
              recording: Recording | None) -> None:
    """Per back-end, STG instances solved to the published optimum within `cap`."""
    if not (STG / "optimal").is_dir():
        print(f"\n(stg: dataset not found at {STG.resolve()}; skipped)")
        return
    optima = stg_optima(STG)
    graphs = [f"50/rand{k:04d}.stg" for k in range(3 if quick else 10)]
    cases = [(g, p) for g in graphs for p in (2, 4) if (g, p) in optima and stg_path(STG, g)]
    rows: list[list[object]] = []
    for solver in solvers:
        if solver != "cpsat" and not backends.available(solver):
            rows.append([solver, "not installed", "", "", ""])
            continue
        reached = proved = 0
        walls: list[float] = []
        for g, p in cases:
            path = stg_path(STG, g)
            assert path is not None
            problem = stg_problem(path, p)
            algo = "cpsat" if solver == "cpsat" else "ilp"
            t = time.perf_counter()
            sol = run(algo, problem, Options(solver=solver, time_limit_s=cap))
            walls.append(time.perf_counter() - t)
            if sol.info.get("objective_s") == optima[(g, p)]:
                reached += 1
            if sol.status == "optimal":
                proved += 1
        rows.append([solver, f"{reached}/{len(cases)}", f"{proved}/{len(cases)}",
                     statistics.median(walls), max(walls)])
        how = f"STG 50-task graphs x P in {{2, 4}}, {solver}, cap {cap:g} s each"
        for name, figure in (
                ("proved", value(proved, "instances", f"{how}: proved optimal",
                                 of=len(cases))),
                ("reached", value(reached, "instances", f"{how}: published optimum reached",
                                  of=len(cases))),
                ("max_s", value(max(walls), "s", f"{how}: the longest, wall s")),
                ("median_s", value(statistics.median(walls), "s", f"{how}: median wall s"))):
            keep(recording, f"stg_{solver}_{name}", figure)
    table(f"STG 50-task graphs × P ∈ {{2, 4}}: published optimum reached / proved "
          f"(cap {cap:.0f} s each)",
          ["back-end", "optimum reached", "proved optimal", "median wall s", "max wall s"],
          rows)


def main() -> None:
    """Parse the flags and run the chosen sections."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small run")
    ap.add_argument("--cap", type=float, default=None,
                    help="seconds per STG instance (default 10; 5 with --quick)")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma-separated sections of {', '.join(SECTIONS)}")
    ap.add_argument("--solvers", default="cpsat,highs,cbc,glpk",
                    help="back-ends for the STG section")
    ap.add_argument("--record", action="store_true",
                    help="write the figures to bench/results/bench_exact.json")
    args = ap.parse_args()
    recording = Recording.start(__file__, args.quick) if args.record else None
    logging.basicConfig(level=logging.ERROR)  # fallbacks are figures here, not news
    cap = args.cap if args.cap is not None else (5.0 if args.quick else 10.0)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    jobs: dict[str, Callable[[], None]] = {
        "build": lambda: bench_build(args.quick, recording),
        "cpsat30": lambda: bench_cpsat30(args.quick, recording),
        "cpsat-large": lambda: bench_cpsat_large(args.quick),
        "stg": lambda: bench_stg(args.quick, cap, args.solvers.split(","), recording),
    }
    for name in only:
        if name not in jobs:
            ap.error(f"unknown section {name!r}; choose from {', '.join(SECTIONS)}")
        jobs[name]()
    if recording is not None:
        recording.context["sections"] = only
        recording.write()


if __name__ == "__main__":
    main()
