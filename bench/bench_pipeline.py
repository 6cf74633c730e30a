"""Pipeline plans against what users run today: one table.

    python bench/bench_pipeline.py            # every model below, 3 planning runs each
    python bench/bench_pipeline.py --quick    # the GPT-24 rows, one run

Per model and cluster (objective pipeline, 8 micro-batches, 1F1B): the period T (the
busiest device's compute and transfers for one micro-batch) and the simulated iteration
of one device, the uniform split (the same number of units per stage), the makespan plan
(the best heuristic `auto` starts from) and the pipeline plan (`auto`, which is `pipedp`
under `objective pipeline`), and the median wall time to plan. Rows whose plan does not
fit the devices' memory under the pipeline's model are marked `*`.

Models: a 24-layer GPT training step (`planner generate transformer ... --training`) on
`small4` (4 x 8 GiB), on `small4` with 32 GiB GPUs, and on `dgx1` (8 x 16 GiB, NVLink);
Baechi's GNMT (forward only, 4 GPUs, ../shared/datasets/baechi-gnmt, skipped with a
reason when absent); the big Transformer of specs/transformer.plan (forward) on dgx1.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import planner
from planner.algorithms import run
from planner.errors import InfeasibleError
from planner.io.baechi import load_baechi
from planner.model import Pipeline, Problem
from planner.report.pipecompare import rows

ROOT = Path(__file__).resolve().parents[1]
GNMT = ROOT / "../shared/datasets/baechi-gnmt/gnmt_baechi.json"
PIPELINE = Pipeline(8, "1f1b")
BIG_GPUS = """
cluster small4_32 {
  device gpu[0..3] { kind rtx2080; memory 32 GiB; flops 10 TFLOPS; speed 0.6 }
  link gpu[0..3] <-> gpu[0..3] { bandwidth 12 GB/s latency 5 us }
}
plan gpt24_small4_32 { graph gpt24; cluster small4_32 }
"""


def gpt24(where: Path) -> Path:
    """The issue's 24-layer GPT training graph, with plans on small4, small4_32 and dgx1."""
    out = where / "gpt24.plan"
    clusters = ROOT / "specs" / "clusters"
    subprocess.run([sys.executable, "-m", "planner", "generate", "transformer", "--layers",
                    "24", "--hidden", "1024", "--heads", "16", "--seq", "512", "--batch", "4",
                    "--vocab", "50257", "--training", "--memory", "static",  # the figures' model
                    "--name", "gpt24", "--cluster",
                    str(clusters / "small4.plan"), "--cluster", str(clusters / "dgx1.plan"),
                    "-o", str(out)], check=True, capture_output=True, cwd=where)
    out.write_text(out.read_text() + BIG_GPUS)
    return out


def problems(where: Path, quick: bool) -> Iterator[tuple[str, Problem | str]]:
    spec = planner.load(gpt24(where), root=where)
    for plan in ("gpt24_small4", "gpt24_small4_32", *(() if quick else ("gpt24_dgx1",))):
        yield f"GPT-24 training, {plan.removeprefix('gpt24_')}", spec.plan(plan)
    if quick:
        return
    if GNMT.is_file():
        yield "Baechi's GNMT, 4 GPUs", load_baechi(GNMT)
    else:
        yield "Baechi's GNMT, 4 GPUs", f"skipped: {GNMT} is absent (../shared)"
    yield ("Transformer (big), dgx1",
           planner.load(ROOT / "specs" / "transformer.plan").plan("transformer_big_dgx1"))


def fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the GPT-24 rows, one planning run")
    args = ap.parse_args()
    repeat = 1 if args.quick else 3
    print(f"objective pipeline, {PIPELINE.microbatches} micro-batches, {PIPELINE.schedule}; "
          "T and iteration in ms (simulated); * = does not fit the memory")
    print()
    print("| model, cluster | one device T / iter | uniform T / iter | makespan plan T / iter "
          "| pipeline plan T / iter | stages | vs uniform | time to plan (s) |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for label, given in problems(Path(tmp), args.quick):
            if isinstance(given, str):
                print(f"| {label} | {given} | | | | | | |")
                continue
            problem = dataclasses.replace(given, pipeline=PIPELINE)
            times = []
            try:
                for _ in range(repeat):
                    fresh = dataclasses.replace(problem)  # nothing cached from the last run
                    t0 = time.perf_counter()
                    sol = run("auto", fresh)
                    times.append(time.perf_counter() - t0)
            except InfeasibleError as err:  # a row that says so, not the table's end
                first = err.diagnostics[0]
                print(f"| {label} | no plan: {first.code}, {first.message} | | | | | | |")
                continue
            compared, _, _ = rows(problem, sol.plan.placement, "auto")
            cells = {r.label: r for r in compared}

            def cell(name: str, cells: dict = cells) -> str:  # type: ignore[type-arg]
                r = cells.get(name)
                if r is None:
                    return "n/a"
                mark = "" if r.fits else " *"
                return f"{fmt(r.run.period_s)} / {fmt(r.run.iteration_s)}{mark}"

            mine, uniform = cells["this plan"].run, cells["uniform split"].run
            print(f"| {label} | {cell('one device')} | {cell('uniform split')} | "
                  f"{cell('makespan plan')} | {cell('this plan')} | {len(mine.stages)} | "
                  f"{uniform.iteration_s / mine.iteration_s:.2f}x | "
                  f"{statistics.median(times):.2f} |", flush=True)


if __name__ == "__main__":
    main()
