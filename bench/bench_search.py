"""Benchmark of `search` and `auto` against the constructive algorithms: one table.

    python bench/bench_search.py            # every graph: search at 10 s and 60 s
    python bench/bench_search.py --quick    # every graph: search at 2 s
    python bench/bench_search.py --graphs baechi_gnmt --record   # README's figure (~2 min)

Per graph and plan: the best constructive plan (`portfolio.rank`: m-SCT, m-ETF, m-TOPO,
HEFT, CPOP, single, round robin; simulated under the plan's own model), `auto` at its
default 10 s and `search` at the given limits, with their simulated makespans, the gain
over the best constructive plan, the gap to the lower bound ((M - LB) / LB) and the
planning time. Graphs: every plan of `specs/*.plan`, Baechi's GNMT
(../shared/datasets/baechi-gnmt, contention `device`: 134 us + 0.0001754 us/B per transfer,
4 x 8 GiB), PipeDream's profiles as training graphs on specs/clusters/small4.plan
(`import pipedream --training`) and the dnn-partitioning GNMT training layer graph
(`import json`, contention `link`), each skipped with a reason when its data is absent.
`--graphs` runs only the named graphs; `--record` keeps each graph's makespans (ms) and
planning times (`bench/results/bench_search.json`).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from recording import Recording, value

import planner
from planner.algorithms import Options, run
from planner.algorithms.portfolio import rank
from planner.bounds import lower_bound, relative_gap
from planner.facts import proofs as proofs_of
from planner.io.baechi import load_baechi
from planner.model import Problem
from planner.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT / "../shared/datasets"


def _imported(args: list[str]) -> Problem:
    """The only plan of a spec made by `planner import ARGS -o TMP.plan`."""
    from planner.cli import main as cli

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "imported.plan"
        argv = sys.argv
        sys.argv = ["planner", "import", *args, "-o", str(out)]
        try:
            cli()
        except SystemExit:
            pass
        finally:
            sys.argv = argv
        # the spec imports its cluster from this repository, outside the temporary folder
        return planner.load(out, root="/").plan()


def _same(problem: Problem) -> Problem:
    return problem


def graphs() -> Iterator[tuple[str, Callable[[], Problem] | str]]:
    """(name, a loader of its problem) per benchmark graph, or (name, why it is skipped);
    loaders, so that a graph left out by `--graphs` is never imported."""
    for spec in sorted((ROOT / "specs").glob("*.plan")):
        for name, problem in planner.load(spec).plans.items():
            yield name, functools.partial(_same, problem)
    gnmt = DATASETS / "baechi-gnmt" / "gnmt_baechi.json"
    yield ("baechi_gnmt", (lambda: load_baechi(gnmt)) if gnmt.is_file() else f"absent: {gnmt}")
    pipedream = sorted((DATASETS / "pipedream").glob("*/*/graph.txt"))
    if not pipedream:
        yield "pipedream", f"absent: {DATASETS / 'pipedream'}"
    small4 = str(ROOT / "specs" / "clusters" / "small4.plan")
    for graph in pipedream:  # training graphs (backward ops, Adam state) on small4
        yield (f"pipedream_{graph.parent.name}_training",
               functools.partial(_imported, ["pipedream", str(graph), "--training",
                                             "--memory", "static", "--cluster", small4]))
    training = DATASETS / "dnn-partitioning/throughput-inputs/LayerGraphs/gnmt_training.json"
    if training.is_file():
        yield "msr_gnmt_training", lambda: dataclasses.replace(
            _imported(["json", str(training)]), contention="link")
    else:
        yield "msr_gnmt_training", f"absent: {training}"


def row(name: str, problem: Problem, limits: tuple[float, ...],
        recording: Recording | None) -> list[str]:
    """One table row: best constructive, auto, search at each limit."""
    bound = lower_bound(problem).makespan_s
    t0 = time.perf_counter()
    best = rank(problem, Options()).best
    t_rank = time.perf_counter() - t0
    if best is None:
        proofs = [p.code for p in proofs_of(problem)]
        why = f"proved infeasible ({', '.join(proofs)})" if proofs else "no heuristic plan fits"
        return [name, why, *([""] * (1 + len(limits)))]
    cells = [name, f"{best[1] * 1e3:.2f} ({best[0]}, {t_rank:.1f} s)"]
    if recording is not None:
        recording.add(f"{name}_best_constructive_ms", value(
            best[1] * 1e3, "ms", f"{name}: the best constructive plan's makespan",
            algorithm=best[0]))
    for algo, limit in (("auto", 10.0), *(("search", x) for x in limits)):
        t0 = time.perf_counter()
        sol = run(algo, problem, Options(time_limit_s=limit))
        took = time.perf_counter() - t0
        ms = simulate(problem, sol.plan).makespan_s
        gap = relative_gap(ms, bound)
        cells.append(f"{ms * 1e3:.2f} ({(ms / best[1] - 1) * 100:+.1f}%, "
                     f"gap {'-' if gap is None else f'{gap * 100:.1f}%'}, {took:.1f} s)")
        if recording is not None:
            tag = f"{name}_{algo}_{limit:g}s"
            recording.add(f"{tag}_makespan_ms", value(
                ms * 1e3, "ms", f"{name}: {algo} with a {limit:g} s limit, simulated makespan",
                planning_s=took, gap=gap))
    return cells


def main() -> None:
    """Parse the flags, run the chosen graphs, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="search at 2 s; GNMT at 10 s")
    ap.add_argument("--graphs", help="comma-separated graph names (default: every graph)")
    ap.add_argument("--record", action="store_true",
                    help="write the figures to bench/results/bench_search.json")
    args = ap.parse_args()
    chosen = set(args.graphs.split(",")) if args.graphs else None
    recording = Recording.start(__file__, args.quick) if args.record else None
    limits = (2.0,) if args.quick else (10.0, 60.0)
    header = ["graph", "best constructive ms", "auto (10 s)",
              *(f"search --time-limit {x:g}" for x in limits)]
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    seen: set[str] = set()
    for name, load in graphs():
        seen.add(name)
        if chosen is not None and name not in chosen:
            continue
        if isinstance(load, str):
            print(f"{name} | skipped: {load}")
            continue
        print(" | ".join(row(name, load(), limits, recording)), flush=True)
    if chosen is not None and chosen - seen:
        ap.error(f"no graph named {', '.join(sorted(chosen - seen))}; "
                 f"the graphs: {', '.join(sorted(seen))}")
    if recording is not None:
        recording.write()


if __name__ == "__main__":
    main()
