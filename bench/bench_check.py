"""Benchmark: `planner check` of training chains under `memory liveness` and `static`.

    python bench/bench_check.py            # 10k, 40k and 100k ops
    python bench/bench_check.py --quick    # 10k and 40k

Each spec is a chain of forward ops and their backward ops (half the ops each), params and
outputs on every op, 8 GPUs, one plan. Under `liveness`, `check`'s proofs ask what each
unit holds with its inputs (`facts._live_need`): it read every edge per unit, quadratic (a
100,000-op chain took 296 s, its static twin 1 s); now each unit's input edges. Figures:
the median wall time of 3 runs of `python -m planner check` in a fresh process. Target:
liveness within 3x of static at every size (both linear).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def chain(ops: int, memory: str) -> str:
    half = ops // 2
    lines = ["cluster c { device gpu[0..7] { memory 80 GiB }",
             "  link gpu[*] <-> gpu[*] { bandwidth 100 GB/s } }", "graph g {"]
    lines += [f"  op f{k} {{ time 1 ms  params 1 MiB  output 1 MiB }}" for k in range(half)]
    lines += [f"  op b{k} {{ time 2 ms  output 1 MiB  backward_of f{k} }}" for k in range(half)]
    lines += [f"  f{k} -> f{k + 1}" for k in range(half - 1)]
    lines += [f"  f{half - 1} -> b{half - 1}"]
    lines += [f"  b{k + 1} -> b{k}" for k in range(half - 1)]
    lines += [f"  f{k} -> b{k}" for k in range(half - 1)]
    lines += ["}", f"plan p {{ graph g  cluster c  memory {memory} }}"]
    return "\n".join(lines) + "\n"


def timed(path: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "planner", "check", str(path)],
                              capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"check failed on {path}:\n{done.stdout}{done.stderr}")
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10k and 40k ops only")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per figure")
    args = ap.parse_args()
    sizes = (10_000, 40_000) if args.quick else (10_000, 40_000, 100_000)
    print("| ops | static (s) | liveness (s) | liveness / static |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            figures = []
            for memory in ("static", "liveness"):
                path = Path(tmp) / f"chain{n}_{memory}.plan"
                path.write_text(chain(n, memory))
                figures.append(timed(path, args.runs))
            print(f"| {n:,} | {figures[0]:.2f} | {figures[1]:.2f} | "
                  f"{figures[1] / figures[0]:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
