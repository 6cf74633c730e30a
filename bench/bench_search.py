"""Benchmark of `search` and `auto` against the constructive algorithms: one table.

    python bench/bench_search.py            # every graph: search at 10 s and 60 s
    python bench/bench_search.py --quick    # every graph: search at 2 s

Per graph and plan: the best constructive plan (`portfolio.rank`: m-SCT, m-ETF, m-TOPO,
HEFT, CPOP, single, round robin; simulated under the plan's own model), `auto` at its
default 10 s and `search` at the given limits, with their simulated makespans, the gain
over the best constructive plan, the gap to the lower bound ((M - LB) / LB) and the
planning time. Graphs: every plan of `specs/*.plan`, Baechi's GNMT
(../shared/datasets/baechi-gnmt, contention `device`: 134 us + 0.0001754 us/B per transfer,
4 x 8 GiB), PipeDream's profiles as training graphs on specs/clusters/small4.plan
(`import pipedream --training`) and the dnn-partitioning GNMT training layer graph
(`import json`, contention `link`), each skipped with a reason when its data is absent.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

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


def graphs(quick: bool) -> Iterator[tuple[str, Problem | str]]:
    """(name, problem) per benchmark graph, or (name, why it is skipped)."""
    for spec in sorted((ROOT / "specs").glob("*.plan")):
        for name, problem in planner.load(spec).plans.items():
            yield name, problem
    gnmt = DATASETS / "baechi-gnmt" / "gnmt_baechi.json"
    yield ("baechi_gnmt", load_baechi(gnmt) if gnmt.is_file() else f"absent: {gnmt}")
    pipedream = sorted((DATASETS / "pipedream").glob("*/*/graph.txt"))
    if not pipedream:
        yield "pipedream", f"absent: {DATASETS / 'pipedream'}"
    for graph in pipedream:  # training graphs (backward ops, Adam state) on small4
        yield (f"pipedream_{graph.parent.name}_training",
               _imported(["pipedream", str(graph), "--training", "--memory", "static",
                          "--cluster",
                          str(ROOT / "specs" / "clusters" / "small4.plan")]))
    training = DATASETS / "dnn-partitioning/throughput-inputs/LayerGraphs/gnmt_training.json"
    if training.is_file():
        problem = _imported(["json", str(training)])
        yield "msr_gnmt_training", dataclasses.replace(problem, contention="link")
    else:
        yield "msr_gnmt_training", f"absent: {training}"


def row(name: str, problem: Problem, limits: tuple[float, ...]) -> list[str]:
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
    for algo, limit in (("auto", 10.0), *(("search", x) for x in limits)):
        t0 = time.perf_counter()
        sol = run(algo, problem, Options(time_limit_s=limit))
        took = time.perf_counter() - t0
        ms = simulate(problem, sol.plan).makespan_s
        gap = relative_gap(ms, bound)
        cells.append(f"{ms * 1e3:.2f} ({(ms / best[1] - 1) * 100:+.1f}%, "
                     f"gap {'-' if gap is None else f'{gap * 100:.1f}%'}, {took:.1f} s)")
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="search at 2 s; GNMT at 10 s")
    args = ap.parse_args()
    limits = (2.0,) if args.quick else (10.0, 60.0)
    header = ["graph", "best constructive ms", "auto (10 s)",
              *(f"search --time-limit {x:g}" for x in limits)]
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for name, problem in graphs(args.quick):
        if isinstance(problem, str):
            print(f"{name} | skipped: {problem}")
            continue
        print(" | ".join(row(name, problem, limits)), flush=True)


if __name__ == "__main__":
    main()
