"""Benchmarks of the exact placement back-ends; prints markdown tables.

    python bench/bench_exact.py            # everything (STG cap 10 s per instance)
    python bench/bench_exact.py --quick    # a small run (about a minute)
    python bench/bench_exact.py --cap 60   # the issue's 60 s per STG instance
    python bench/bench_exact.py --only build,cpsat30,cpsat-large,stg
    python bench/bench_exact.py --only stg --solvers cpsat --record   # README's figure
    python bench/bench_exact.py --only handover   # handing the models to HiGHS (a minute)

Sections:
- `build`: Pyomo build time of the ILP for 200 ops × 4 devices (target ≤ 2 s), wall and
  CPU (the CPU figure is what an idle machine would show), with rows and binaries.
- `cpsat30`: CP-SAT time to optimality on random 30-op × 4-device layered DAGs whose
  transfers are comparable to compute (target: median ≤ 5 s), 60 s cap.
- `cpsat-large`: how far CP-SAT gets in 60 s on 100 and 300 ops × 4 devices: the gap, and
  the makespan against its m-SCT warm start.
- `handover`: handing a built model to HiGHS before it searches (inside `--time-limit`),
  appsi's row-by-row `add_constraints` against `highs_load`'s bulk hand-over, CPU and
  wall seconds, and whether HiGHS holds the same model after both: the ILP of 200 ops × 4
  devices and of specs/resnet.plan, and pipeilp's of PipeDream's ResNet-50 profile on a
  DGX-1 under 1F1B and interleaved (`$PIPEDREAM_PROFILES`, else
  ../shared/datasets/pipedream; skipped when absent).
- `stg`: per back-end, how many Standard Task Graph Set instances (10 graphs of 50 tasks ×
  P ∈ {2, 4}, from ../shared/datasets/stg) reach the published optimum within the cap, and
  how many are proved optimal. Skipped when the dataset is absent.

Random instances come from `tests/exact/instances.py` (seeded, deterministic).
`--record` writes the sections' headline figures to bench/results/bench_exact.json.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from exact.instances import layered_problem, stg_optima, stg_path, stg_problem
from recording import Recording, value

from planner.algorithms import Options, run
from planner.algorithms.exact import backends

STG = ROOT / "../shared/datasets/stg"
#: PipeDream's profiles: `$PIPEDREAM_PROFILES` (as bench_pipedream.py), else ../shared
PIPEDREAM_RESNET50 = Path(os.environ.get(
    "PIPEDREAM_PROFILES", ROOT / "../shared/datasets/pipedream")) / \
    "image_classification/resnet50/graph.txt"
SECTIONS = ("build", "cpsat30", "cpsat-large", "stg", "handover")
#: pipeilp's plans of the `handover` section: PipeDream's ResNet-50 on a DGX-1
PIPE_PLANS = """
plan p1f1b { graph resnet50  cluster dgx1  objective pipeline  microbatches 8  schedule 1f1b }
plan pinter { graph resnet50  cluster dgx1  objective pipeline  microbatches 8
              schedule interleaved  stages_per_device 2 }
"""


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


def _models_of(algo: str, problem: Any) -> list[Any]:
    """The Pyomo models `algo` hands to its solver on `problem` (the solver not run)."""
    got: list[Any] = []

    def stub(model: Any, *_: Any, **__: Any) -> backends.Outcome:
        got.append(model)
        return backends.Outcome("nosolution", "not solved: the benchmark times the hand-over")

    real = backends.solve_pyomo
    backends.solve_pyomo = stub
    try:
        run(algo, problem, Options(time_limit_s=600.0))
    finally:
        backends.solve_pyomo = real
    return got


def _handed(model: Any, bulk: bool) -> tuple[float, float, dict[str, list[float]]]:
    """Wall and CPU seconds to hand `model` to HiGHS (in bulk, or row by row through
    appsi's `add_constraints`), and the model HiGHS then holds."""
    from planner.algorithms.exact import highs_load

    real = highs_load.add_rows
    if not bulk:
        highs_load.add_rows = lambda opt, rows: opt.add_constraints(list(rows))
    opt = backends.import_pyomo().SolverFactory("appsi_highs")
    t, c = time.perf_counter(), time.process_time()
    try:
        backends._load_in_time(opt, model, float("inf"))
    finally:
        highs_load.add_rows = real
    return time.perf_counter() - t, time.process_time() - c, highs_load.held(opt)


def _pipedream_problems(quick: bool) -> list[tuple[str, Any]]:
    """PipeDream's ResNet-50 profile on a DGX-1 under 1F1B (and interleaved), planner's own
    import; none where the profile is absent."""
    import tempfile

    import planner

    if not PIPEDREAM_RESNET50.is_file():
        print(f"\n(handover: {PIPEDREAM_RESNET50.resolve()} not found; pipeilp rows skipped)")
        return []
    with tempfile.TemporaryDirectory(prefix="bench-handover-") as tmp:
        out = Path(tmp) / "resnet50.plan"
        subprocess.run([sys.executable, "-m", "planner", "import", "pipedream",
                        str(PIPEDREAM_RESNET50), "--training", "--name", "resnet50",
                        "--cluster", str(ROOT / "specs/clusters/dgx1.plan"), "-o", str(out)],
                       check=True, capture_output=True, cwd=ROOT)
        out.write_text(out.read_text() + PIPE_PLANS)
        spec = planner.load(out)
        return [(f"pipeilp resnet50 {p}", spec.plan(p))
                for p in (("pinter",) if quick else ("p1f1b", "pinter"))]


def bench_handover(quick: bool, recording: Recording | None) -> None:
    """Handing the models to HiGHS: appsi row by row against `highs_load` in bulk."""
    import planner

    if not backends.available("highs"):
        print("\n(handover: HiGHS (highspy) is not installed; skipped)")
        return
    cases: list[tuple[str, str, Any]] = [
        ("ilp layered 200x4", "ilp", layered_problem(0, 200, 4)),
        ("ilp specs/resnet.plan", "ilp", planner.load(ROOT / "specs/resnet.plan").plan(
            "resnet50_small4"))]
    cases += [(name, "pipeilp", p) for name, p in _pipedream_problems(quick)]
    rows: list[list[object]] = []
    for name, algo, problem in cases:
        model = _models_of(algo, problem)[-1]
        old_wall, old_cpu, old = _handed(model, bulk=False)
        new_wall, new_cpu, new = _handed(model, bulk=True)
        rows.append([name, len(old["row_lower"]), len(old["col_lower"]), old_wall, old_cpu,
                     new_wall, new_cpu, old_cpu / max(new_cpu, 1e-9),
                     "yes" if old == new else "NO"])
        keep(recording, f"handover_{name.replace(' ', '_')}_cpu_s", value(
            new_cpu, "s", f"handing {name}'s model to HiGHS in bulk, CPU s (appsi row by row: "
            f"{old_cpu:.3g} s)", same_model=old == new))
    table("Handing the model to HiGHS (inside --time-limit): appsi row by row vs in bulk",
          ["model", "rows", "columns", "appsi wall s", "appsi CPU s", "bulk wall s",
           "bulk CPU s", "CPU ratio", "same model"], rows)


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
        "handover": lambda: bench_handover(args.quick, recording),
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
