"""Does `--time-limit` bound `planner solve`, and is the plan the same at any load?
Wall seconds of whole processes.

    python bench/bench_time_limit.py             # cpsat on gnmt8_small4 and gnmt8_dgx1, 10 s
    python bench/bench_time_limit.py --hogs 2    # next to 2 busy-looping processes
    python bench/bench_time_limit.py --algo auto --limit 3 --plans gnmt8_small4 --hogs 0,2

For each plan of specs/gnmt.plan and each number of hogs: `planner solve --algo ALGO
--time-limit L --json --out PLAN.json`, its wall seconds (start-up included), `planning_s`,
the simulated makespan, whether the wall clock cut the run (`reason`), and the first 12 hex
digits of the plan file's SHA-256: one plan per row group means the plan did not depend on
the load. Targets (issue 25): wall ≤ L + max(1 s, 10%) for `auto` and `search`; cpsat's
documented bound is 1.1 × L + 0.5 s plus start-up (`cpsat.OVERSHOOT_FRACTION`,
`OVERSHOOT_S`). Measured 2026-12-01 on the 2-core machine, cpsat, L = 10, 2 hogs: before
(main, safety cap 3 × L + 1 s) planning 22.6 s on gnmt8_dgx1; after 11.4 s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOG = "import time\nend = time.time() + 600\nwhile time.time() < end: pass\n"


def one(algo: str, plan: str, limit: float) -> str:
    """One solve as a table row's cells."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan.json"
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "planner", "solve", str(ROOT / "specs" / "gnmt.plan"),
             "--plan", plan, "--algo", algo, "--time-limit", str(limit), "--json",
             "--out", str(out)], capture_output=True, text=True, check=False, cwd=ROOT)
        wall = time.perf_counter() - t0
        result = json.loads(proc.stdout)["result"] or {}
        digest = hashlib.sha256(out.read_bytes()).hexdigest()[:12] if out.exists() else "-"
    cut = "yes" if result.get("reason") else "no"
    return (f"{wall:.2f} | {result.get('planning_s', float('nan')):.2f} | "
            f"{result.get('makespan_s', float('nan')) * 1e3:.3f} | {cut} | {digest}")


def main() -> None:
    """Print one row per plan and number of hogs."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--algo", default="cpsat")
    ap.add_argument("--limit", type=float, default=10.0)
    ap.add_argument("--hogs", default="0", help="busy processes running meanwhile, e.g. 0,2")
    ap.add_argument("--plans", default="gnmt8_small4,gnmt8_dgx1")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="one plan, a 3 s limit")
    args = ap.parse_args()
    if args.quick:
        args.limit, args.plans = 3.0, "gnmt8_small4"
    print(f"| plan | hogs | wall s | planning s | makespan ms | cut | plan sha256 "
          f"({args.algo}, limit {args.limit:g} s) |")
    print("|---|---|---|---|---|---|---|")
    for plan in args.plans.split(","):
        for hogs in (int(h) for h in args.hogs.split(",")):
            busy = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(hogs)]
            try:
                for _ in range(args.repeat):
                    print(f"| {plan} | {hogs} | {one(args.algo, plan, args.limit)} |",
                          flush=True)
            finally:
                for h in busy:
                    h.kill()
                    h.wait()


if __name__ == "__main__":
    main()
