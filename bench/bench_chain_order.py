"""Which device chains the split DP tries first, and what the plans gain by it.

    python bench/bench_chain_order.py                 # 6 seeds, pipedp and auto at 0.1, 0.5 s
    python bench/bench_chain_order.py --quick         # 2 seeds, auto at 0.1 s (a minute)

Under a time limit, `pipedp` (alone, at its default work, and inside `auto`) tries only the
first chains of devices per stage count (`splitdp.chains_within`, at most `MAX_CHAINS`).
They were ranked by their links alone (the least worst link, the least total, the first
permutation); now those that may respect the pins come first, then the least floor of the
period (`splitdp._period_floor`: the graph's compute at the devices' rates, or the
cheapest boundary on the slowest link), then the links as before. This runs both orders in
one process: `links` is today's code with the two new keys made neutral (every chain may
respect the pins, every floor 0), which is the old order exactly.

The specs: a training chain of 16 units with skip edges on 4 and 8 devices of random
speeds and memories, `rand` with links of random bandwidths, `unif` with one link type,
every second seed with its middle (rand) or last (unif) unit pinned to the last device;
under 1F1B, GPipe and `interleaved` (2 stages per device), 8 micro-batches. A row per
algorithm and limit: the geometric mean of the iteration (floor / links), how many plans
are faster, slower, and the extremes; E7xx where one order found no plan. `auto` at small
limits reads the wall clock (a climb it cuts says so): run it on an idle machine.

Measured 2026-12-07 (2-core machine, idle; 6 seeds, 72 specs), floor against links, the
geometric mean of the iteration: `pipedp` 0.888 (34 plans faster, none slower, at best
0.300), `auto --time-limit 0.1` 0.862 (38 faster, 4 slower, at worst 1.013; two specs the
links order planned none for, E707, now plan), `auto --time-limit 0.5` 0.866 (38 faster, 2
slower, at worst 1.021).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner import loads  # noqa: E402
from planner.algorithms import Options, run  # noqa: E402
from planner.errors import PlannerError  # noqa: E402
from planner.model import Problem  # noqa: E402
from planner.pipeline import splitdp  # noqa: E402

SCHEDULES = ("1f1b", "gpipe", "interleaved\n  stages_per_device 2")


def spec(seed: int, devices: int, schedule: str, uniform: bool) -> Problem:
    """The bench's spec (module docstring): a fresh problem, so no ranking is cached."""
    rng = random.Random(seed * 100 + devices)
    lines = ["cluster c {"]
    for d in range(devices):
        lines.append(f"  device d{d} {{ memory {rng.choice([400, 600, 2000])} MB  "
                     f"speed {rng.choice([0.5, 1.0, 2.0, 3.0])} }}")
    if uniform:
        lines.append("  link d[*] <-> d[*] { bandwidth 10 GB/s  latency 5 us }")
    else:
        lines += [f"  link d{a} -> d{b} {{ bandwidth {rng.choice([1, 5, 20])} GB/s  latency "
                  f"{rng.choice([0, 10])} us }}"
                  for a in range(devices) for b in range(devices) if a != b]
    lines += ["}", "graph g {"]
    units = 16
    for k in range(units):
        lines += [f"  op u{k} {{ time {rng.randint(1, 9)} ms  output {rng.randint(1, 8)} MB  "
                  f"params {rng.randint(0, 30)} MB }}",
                  f"  op u{k}.bwd {{ time {rng.randint(1, 18)} ms  output {rng.randint(0, 4)} "
                  f"MB  backward_of u{k} }}",
                  f"  u{k} -> u{k}.bwd", f"  colocate u{k}, u{k}.bwd"]
        for j in sorted(rng.sample(range(k), min(k, rng.choice([1, 1, 2])))):
            lines += [f"  u{j} -> u{k}", f"  u{k}.bwd -> u{j}.bwd {{ bytes 2 MB }}"]
    lines.append("}")
    pinned = units - 1 if uniform else units // 2
    pin = f"  pin u{pinned} to d{devices - 1}\n" if seed % 2 == 0 else ""
    lines.append(f"plan p {{\n  graph g\n  cluster c\n  objective pipeline\n  microbatches 8\n"
                 f"  schedule {schedule}\n{pin}}}")
    return loads("\n".join(lines)).plan()


def links_order() -> Callable[[], None]:
    """Make the two new keys neutral (the old order); returns the undo."""
    floor, holds = splitdp._period_floor, splitdp._may_hold_all
    splitdp._period_floor = lambda problem, chains, worst: np.zeros(len(chains))
    splitdp._may_hold_all = lambda problem, chains: np.ones(len(chains), dtype=bool)

    def undo() -> None:
        splitdp._period_floor, splitdp._may_hold_all = floor, holds
    return undo


def iteration(make: Callable[[], Problem], algo: str, limit: float | None) -> float | str:
    options = Options() if limit is None else Options(time_limit_s=limit)
    try:
        return float(run(algo, make(), options).info["iteration_s"])
    except PlannerError as err:
        return err.diagnostics[0].code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--limits", default="0.1,0.5", help="auto's --time-limit values")
    parser.add_argument("--quick", action="store_true", help="2 seeds, --limits 0.1")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.limits = 2, "0.1"
    runs: list[tuple[str, float | None]] = [("pipedp", None)] + [
        ("auto", float(x)) for x in args.limits.split(",")]
    cases = [(f"{'unif' if u else 'rand'}{s}-{d}-{sc[:5]}",
              lambda s=s, d=d, sc=sc, u=u: spec(s, d, sc, u))
             for s in range(args.seeds) for d in (4, 8) for sc in SCHEDULES
             for u in (False, True)]
    found: dict[str, dict[tuple[str, str, float | None], float | str]] = {}
    for order in ("links", "floor"):
        undo = links_order() if order == "links" else (lambda: None)
        try:
            found[order] = {(name, algo, limit): iteration(make, algo, limit)
                            for name, make in cases for algo, limit in runs}
        finally:
            undo()
    print(f"{'algorithm':<22}{'specs':>6}{'geo-mean':>10}{'faster':>8}{'slower':>8}"
          f"{'best':>8}{'worst':>8}  no plan in one order")
    for algo, limit in runs:
        keys = [k for k in found["floor"] if k[1:] == (algo, limit)]
        pairs = [(found["links"][k], found["floor"][k]) for k in keys]
        ratios = [b / a for a, b in pairs if isinstance(a, float) and isinstance(b, float)
                  and a > 0 and math.isfinite(a) and math.isfinite(b)]
        odd = [f"{k[0]}: {found['links'][k]} -> {found['floor'][k]}" for k in keys
               if isinstance(found["links"][k], str) != isinstance(found["floor"][k], str)]
        label = algo if limit is None else f"{algo} --time-limit {limit:g}"
        print(f"{label:<22}{len(ratios):>6}{statistics.geometric_mean(ratios):>10.3f}"
              f"{sum(r < 1 - 1e-9 for r in ratios):>8}{sum(r > 1 + 1e-9 for r in ratios):>8}"
              f"{min(ratios):>8.3f}{max(ratios):>8.3f}  {'; '.join(odd) or '-'}")


if __name__ == "__main__":
    main()
