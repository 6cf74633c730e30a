"""Run every benchmark, one after another, and print their tables.

    python bench/run_all.py            # the full runs (over a quarter of an hour)
    python bench/run_all.py --quick    # small runs of each (minutes: bench_pipedream.py's
                                       # alone takes about 3)

Every benchmark of `bench/` but those in `LEFT_OUT`, each with the reason it is left out
(tests/test_bench_run_all.py keeps both lists complete).
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
BENCHES = ["bench_parse.py", "bench_parse_memory.py", "bench_check.py", "bench_simulate.py",
           "bench_fastsim.py", "bench_twins.py", "bench_algorithms.py", "bench_baechi.py",
           "bench_search.py",
           "bench_monotone.py", "bench_time_limit.py", "bench_process.py", "bench_exact.py",
           "bench_pipeline.py", "bench_pipedream.py", "bench_hybrid.py", "bench_torch.py",
           "bench_chain_order.py", "saga/compare_saga.py"]
#: the benchmarks not run here, and why
LEFT_OUT = {
    "bench_ctrlc.py": "a check, not a figure: it interrupts `planner solve` at given seconds "
                      "and reports whether the plan was kept",
    "bench_torch_models.py": "six real PyTorch models through the CLI (3 to 5 minutes; needs "
                             "torch, torchvision and transformers): run it alone, `--only` "
                             "picks models",
}


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
