"""What each compiled twin buys: the reference (Python, numpy) against its numba twin on the
largest shipped spec and on a generated graph of about 100,000 ops.

    python bench/bench_twins.py            # GNMT (2,674 ops) and a 100k-op GNMT-8 (seq 1,890)
    python bench/bench_twins.py --quick    # GNMT and a 20k-op one (seq 380)

Rows: the simulator (`simulate` against `fastsim.Evaluator.makespan`, m-ETF's placement run
by dispatch), the ETF engine (m-ETF's first pass, `etf.ENGINE` "reference" against "kernel")
and the bounds' graph passes (all of `bounds.lower_bound`, its engine set by
`bounds.ENGINE`). Each cell is the median wall-clock time of `--repeat` runs after one warm-
up run (the kernels are loaded, or compiled once, before timing); every pair is checked for
the same answer. `default` says which engine a one-shot command uses on that graph
(`KERNEL_MIN_OPS` and the search's loop). Decision and figures: docs/twins.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import planner
from planner import bounds
from planner.algorithms import Options, run
from planner.algorithms.listsched import etf
from planner.fastsim import Evaluator, prepare
from planner.model import Problem
from planner.plan import Plan
from planner.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]


def _median(call: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    answer = call()  # warm-up, and the answer compared
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), answer


def _generated(seq: int, folder: Path) -> Problem:
    path = folder / f"gnmt_{seq}.plan"
    subprocess.run([sys.executable, "-m", "planner", "generate", "gnmt", "--layers", "8",
                    "--seq", str(seq), "--batch", "16", "--memory", "static",
                    "--cluster", str(ROOT / "specs" / "clusters" / "small4.plan"),
                    "-o", str(path)], check=True, capture_output=True)
    spec = planner.load(path)
    return spec.plan(next(iter(spec.plans)))


def _rows(name: str, problem: Problem, repeat: int) -> list[list[str]]:
    n = len(problem.graph.ops)
    rows = []
    def metf(engine: str) -> Any:
        etf.ENGINE = engine
        return run("metf", problem, Options()).plan

    ref_s, ref_plan = _median(lambda: metf("reference"), repeat)
    ker_s, ker_plan = _median(lambda: metf("kernel"), repeat)
    etf.ENGINE = "auto"
    assert ref_plan == ker_plan, "the ETF twins disagree"
    rows.append(["ETF engine (m-ETF)", name, f"{n:,}", f"{ref_s * 1e3:,.1f}",
                 f"{ker_s * 1e3:,.1f}", f"{ref_s / ker_s:.1f}x",
                 "kernel" if n >= etf.KERNEL_MIN_OPS else "reference"])

    plan = Plan(tuple(ref_plan.placement))  # run by dispatch, as a search evaluates
    evaluator = Evaluator(problem, backend="numba")
    ref_s, ref_ms = _median(lambda: simulate(problem, plan).makespan_s, repeat)
    ker_s, ker_ms = _median(lambda: evaluator.makespan(plan.placement), repeat)
    assert ref_ms == ker_ms, "the simulator twins disagree"
    rows.append(["simulator (one plan)", name, f"{n:,}", f"{ref_s * 1e3:,.1f}",
                 f"{ker_s * 1e3:,.1f}", f"{ref_s / ker_s:.1f}x", "kernel in search loops"])

    def bound(engine: str) -> float:
        bounds.ENGINE = engine
        return bounds._lower_bound(problem).makespan_s  # not `lower_bound`: it caches

    ref_s, ref_b = _median(lambda: bound("reference"), repeat)
    ker_s, ker_b = _median(lambda: bound("kernel"), repeat)
    bounds.ENGINE = "auto"
    assert ref_b == ker_b, "the bounds twins disagree"
    # a one-shot `solve` computes the bound before any kernel has imported numba
    auto = "kernel" if n >= bounds.KERNEL_MIN_OPS[0] else "reference"
    rows.append(["bounds (lower_bound)", name, f"{n:,}", f"{ref_s * 1e3:,.1f}",
                 f"{ker_s * 1e3:,.1f}", f"{ref_s / ker_s:.1f}x", auto])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 20k-op graph, not 100k")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per cell")
    args = parser.parse_args()
    etf.prepare()  # the three kernels loaded (or compiled once) before any timing
    bounds.prepare()
    prepare()
    gnmt = planner.load(ROOT / "specs" / "gnmt.plan").plan("gnmt8_small4")
    rows = _rows("gnmt8_small4", gnmt, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        seq = 380 if args.quick else 1890
        big = _generated(seq, Path(tmp))
        rows += _rows(f"GNMT-8, seq {seq}", big, args.repeat)
    head = ["twin", "graph", "ops", "reference ms", "compiled ms", "ratio", "default"]
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]
    for r in [head, ["-" * w for w in widths], *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
