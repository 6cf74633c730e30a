"""PyTorch in and out on the test models: trace, measure, solve on two devices, apply.

    python bench/bench_torch.py [--repeat 10] [--threads 1] [--time-limit 5]
    python bench/bench_torch.py --quick     # 3 timed runs, `auto` for 1 s

For each model of `tests/io/torch_models.py` (an MLP, a CNN with BatchNorm and residuals,
a Transformer block, an LSTM cell unrolled over 4 steps): ops and edges of the imported
graph, tracing time (torch.fx + ShapeProp + FLOP counting), measuring time on the CPU
(3 warm-up runs, then `--repeat` timed ones), the simulated makespan of `auto`'s plan on
two CPU devices (kind `cpu`, so the measured times count; 10 GB/s, 2 us) whose memory is
the least share (60%, 70%, ...) of the model's params + outputs that still admits a plan,
the sum of all op times (one device's makespan, were there room), the `.to()` copies the
placed model gets, and whether it computes what eager mode does. Needs torch (without
it, says so and exits 0, so that `run_all.py` goes on).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

try:
    import torch
except ImportError:  # pragma: no cover - run_all.py on a machine without the torch extra
    print("torch not installed (pip install -e '.[torch]'): nothing to measure")
    sys.exit(0)

from planner.io.torch_export import apply_plan
from planner.io.torch_import import measure, to_workload, trace
from planner.simulate import simulate
from planner.workload.roofline import PROFILES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "io"))
from torch_models import MODELS
from two_cpus import solve_on_two_cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=5.0)
    parser.add_argument("--quick", action="store_true", help="3 timed runs, auto for 1 s")
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.time_limit = 3, 1.0
    print(f"torch {torch.__version__}; measured on cpu, {args.threads} thread(s), median of "
          f"{args.repeat} runs")
    make, inputs = MODELS["mlp"]
    first = trace(make(), inputs()).trace_s  # torch's one-time set-up, not the model's
    print(f"first trace in this process (torch's set-up included): {first * 1e3:.0f} ms")
    print("| model | ops | edges | trace | measure | memory per device | algorithm | makespan "
          "| sum of op times | copies | equal to eager |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, (make, inputs) in MODELS.items():
        model, x = make(), inputs()
        traced = trace(model, x)
        start = time.perf_counter()
        times = measure(traced, "cpu", 3, args.repeat, threads=args.threads)
        measure_s = time.perf_counter() - start
        w = to_workload(traced, name, PROFILES["v100"], times, "cpu")
        problem, solution, share, need = solve_on_two_cpus(
            w, name, (0.6, 0.7, 0.8, 0.9, 1.0), "auto", time_limit_s=args.time_limit)
        makespan = simulate(problem, solution.plan).makespan_s
        serial = sum(op.time_by_kind.get("cpu", op.time_s or 0.0) for op in problem.graph.ops)
        placement = solution.plan.to_json(problem)["placement"]
        placed = apply_plan(traced, placement, {"cpu0": "cpu", "cpu1": "cpu"})
        with torch.no_grad():
            equal = torch.equal(placed.module(*x), model(*x))
        print(f"| {name} | {len(w.ops)} | {len(w.edges)} | {traced.trace_s * 1e3:.0f} ms "
              f"| {measure_s * 1e3:.0f} ms | {share:.0%} of {need / 1024:.1f} KiB "
              f"| {solution.plan.algorithm} | {makespan * 1e6:.1f} us | {serial * 1e6:.1f} us "
              f"| {len(placed.copies)} | {equal} |")


if __name__ == "__main__":
    main()
