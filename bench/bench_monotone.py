"""Does more `--time-limit` ever give `search` or `auto` a worse plan? One table.

    python bench/bench_monotone.py                  # limits 5, 10, 20, 40 s
    python bench/bench_monotone.py --limits 1,2,4   # other limits
    python bench/bench_monotone.py --quick          # limits 1 and 2 s

Per graph (specs/inception.plan's inception_v2_small4, Baechi's fused GNMT from
../shared/datasets/baechi-gnmt, skipped with a reason when absent) and algorithm (`search`,
`auto`): the simulated makespan at each limit, the planning wall time, and whether the
makespans never increase with the limit (issue 25's target: they never do). A run cut by
the wall clock is marked `cut`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

import planner
from planner.algorithms import Options, run
from planner.io.baechi import load_baechi
from planner.model import Problem
from planner.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]
FUSED = ROOT / "../shared/datasets/baechi-gnmt/gnmt_baechi_fused.json"


def graphs() -> Iterator[tuple[str, Problem | str]]:
    """(name, problem), or (name, why it is skipped)."""
    yield "inception_v2_small4", planner.load(ROOT / "specs" / "inception.plan").plans[
        "inception_v2_small4"]
    yield "baechi_gnmt_fused", load_baechi(FUSED) if FUSED.is_file() else f"absent: {FUSED}"


def main() -> None:
    """Print one row per graph and algorithm."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limits", default="5,10,20,40")
    ap.add_argument("--algos", default="search,auto")
    ap.add_argument("--quick", action="store_true", help="limits 1 and 2 s (`--limits 1,2`)")
    args = ap.parse_args()
    if args.quick:
        args.limits = "1,2"
    limits = [float(x) for x in args.limits.split(",")]
    print("| graph | algorithm | " + " | ".join(f"{x:g} s: ms (wall s)" for x in limits)
          + " | never worse |")
    print("|---" * (len(limits) + 3) + "|")
    for name, problem in graphs():
        if isinstance(problem, str):
            print(f"| {name} | skipped: {problem} |")
            continue
        for algo in args.algos.split(","):
            cells, spans = [], []
            for limit in limits:
                t0 = time.perf_counter()
                sol = run(algo, problem, Options(time_limit_s=limit))
                took = time.perf_counter() - t0
                ms = simulate(problem, sol.plan).makespan_s * 1e3
                cut = " cut" if "reason" in sol.info or "cut" in str(sol.info.get("search")) \
                    else ""
                spans.append(ms)
                cells.append(f"{ms:.3f} ({took:.1f}{cut})")
            ok = all(b <= a for a, b in zip(spans, spans[1:], strict=False))
            print(f"| {name} | {algo} | " + " | ".join(cells) + f" | {'yes' if ok else 'NO'} |",
                  flush=True)


if __name__ == "__main__":
    main()
