"""Run every benchmark, one after another, and print their tables.

    python bench/run_all.py            # the full runs (several minutes)
    python bench/run_all.py --quick    # small runs of each (about a minute)

`bench_baechi.py` runs Baechi's own placers side by side when BAECHI_SRC names a checkout
of github.com/beomyeol/baechi (and says so when it does not).
Each benchmark is also runnable alone (`python bench/bench_parse.py --help`). Figures are
wall-clock medians on a shared machine: compare ratios, not absolute times.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = ["bench_parse.py", "bench_simulate.py", "bench_fastsim.py", "bench_twins.py",
           "bench_algorithms.py", "bench_baechi.py", "bench_search.py", "bench_process.py",
           "bench_exact.py", "bench_torch.py", "saga/compare_saga.py"]


def main(argv: list[str]) -> int:
    """Run each benchmark with the given flags; return the number that failed."""
    failed = 0
    for name in BENCHES:
        print(f"\n=== {name} {' '.join(argv)}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, str(HERE / name), *argv])
        print(f"=== {name}: exit {rc}, {time.perf_counter() - t0:.0f} s", flush=True)
        failed += rc != 0
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
