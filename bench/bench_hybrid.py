"""PipeDream's profiles: planner's hybrid (replicated-stage) plans against PipeDream's own.

    python bench/bench_hybrid.py                     # 8 profiles x 4 and 8 workers (2-4 min)
    python bench/bench_hybrid.py --record            # also bench/results/bench_hybrid.json
    python bench/bench_hybrid.py --quick             # alexnet and resnet18 on 4 workers
    PIPEDREAM_SRC=path/to/pipedream python bench/bench_hybrid.py --live

The table issue 39 is judged by. Profiles, cluster and pipeline as `bench_pipedream.py`'s
(PipeDream's profiler outputs imported by `planner import pipedream --training`, their
`Input` layers' time zeroed as PipeDream's optimizer zeroes it; 4 or 8 identical workers,
every pair at 1 GB/s with no latency, 1 TiB each; 8 micro-batches under 1F1B). Columns, each
the simulated iteration (`planner.pipeline.schedule.run`, replicas and all-reduces included)
in ms:

- **one device**: everything on one worker (M micro-batches one after another);
- **all replicas**: pure data parallelism, the whole model on min(N, M) workers, each
  taking its share of the micro-batches, its gradients all-reduced once per iteration;
- **pure**: `auto` with one device per stage (`data_parallel 1`, today's default), and its
  wall time to plan (`--time-limit 10`);
- **hybrid**: `--algo hybrid` (`data_parallel auto`: replicas chosen per stage), its
  layout (replicas per stage) and wall time to plan;
- **PipeDream**: PipeDream's optimizer's own hybrid configuration (its replicated stages),
  judged by `planner simulate SPEC --stages FILE` (a subprocess: the command a user runs on
  their own layout), each stage on consecutive workers. The layouts are those its
  optimizer (`optimizer/optimizer_graph_hierarchical.py` of github:msr-fiddle/pipedream,
  without `--straight_pipeline`) printed, recorded by `bench_pipedream.py --hybrid --record`
  in `bench/results/hybrid/pipedream.json`; with `--live` and `$PIPEDREAM_SRC` (a fetched
  checkout, never copied here) its optimizer runs again now. A layout contiguous in
  PipeDream's order but not in planner's unit order (the branches of gnmt and inception)
  shows more stages than PipeDream printed: the simulator runs each maximal run of units
  on one device as a stage, relaying what skips it;
- **vs PipeDream**, **vs pure**: PipeDream's (pure's) iteration over hybrid's: how many
  times the hybrid plan's throughput the other's is; at least 1 is the issue's bar.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import bench_pipedream as pd
from recording import Recording, spread, value

from planner.algorithms import Options, pipehybrid, run
from planner.model import Problem
from planner.pipeline import schedule
from planner.pipeline.units import units

ROOT = pd.ROOT
TIME_LIMIT_S = 10.0


def with_replicas(problem: Problem) -> Problem:
    """`problem` with `data_parallel auto`."""
    assert problem.pipeline is not None
    return dataclasses.replace(problem, pipeline=dataclasses.replace(problem.pipeline,
                                                                     data_parallel="auto"))


def timed(algo: str, problem: Problem) -> tuple[float, float, Any]:
    """(the plan's simulated iteration, wall seconds to plan, its solution)."""
    t = time.perf_counter()
    solution = run(algo, problem, Options(time_limit_s=TIME_LIMIT_S))
    took = time.perf_counter() - t
    assert problem.pipeline is not None
    ran = schedule.run_planned(problem, solution.plan.placement, problem.pipeline,
                               solution.info)
    return ran.iteration_s, took, solution


def baselines(problem: Problem) -> tuple[float, float]:
    """(one device, all replicas) iterations."""
    assert problem.pipeline is not None
    n_ops, m = len(problem.graph.ops), len(problem.cluster.devices)
    one = schedule.run(problem, (0,) * n_ops, problem.pipeline).iteration_s
    width = min(m, problem.pipeline.microbatches)
    every = pipehybrid.Layout((0, units(problem).count), (tuple(range(width)),))
    allrep = schedule.run(problem, every.split.placement(problem), problem.pipeline, (),
                          every.replicas).iteration_s
    return one, allrep


def stages_file(problem: Problem, layout: Mapping[str, Any], stage_of: Mapping[str, int],
                path: Path) -> Path:
    """PipeDream's layout as a `--stages` file: each stage's ops (a layer's forward and
    backward op) on consecutive workers, as many as its replicas."""
    devs = [d.name for d in problem.cluster.devices]
    out: list[dict[str, list[str]]] = []
    first = 0
    for k, stage in enumerate(layout["stages"]):
        ops = [op.name for op in problem.graph.ops if stage_of[op.name.removesuffix(".bwd")] == k]
        out.append({"ops": ops, "devices": devs[first:first + stage["replicas"]]})
        first += stage["replicas"]
    path.write_text(json.dumps({"stages": out}, indent=1) + "\n")
    return path


def judged(spec: Path, plan: str, stages: Path) -> float:
    """`planner simulate SPEC --plan PLAN --stages FILE --json`'s simulated iteration."""
    done = subprocess.run([sys.executable, "-m", "planner", "simulate", str(spec), "--plan",
                           plan, "--stages", str(stages), "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode not in (0, 3):
        raise RuntimeError(f"simulate --stages failed ({done.returncode}): {done.stderr}")
    return float(json.loads(done.stdout)["result"]["pipeline"]["iteration_s"])


def pipedream_layout(model: str, workers: int, graph: Path, tmp: Path, live: bool
                     ) -> tuple[dict[str, Any] | None, str]:
    """PipeDream's hybrid layout (per stage its layers and replicas) and where it is from."""
    key = f"{model}/{workers}"
    if live:
        src = pd.pipedream_source()
        if src is None:
            return None, "no $PIPEDREAM_SRC"
        pd_graph, merged = pd.pipedream_graph(src, model, graph, tmp)
        stage_of, printed = pd.pipedream_split(src, pd_graph, merged, workers, tmp,
                                               straight=False)
        return pd.hybrid_layout(printed, pd.complete(stage_of, graph)), "live"
    recorded = json.loads(pd.HYBRID_JSON.read_text()) if pd.HYBRID_JSON.is_file() else {}
    return recorded.get(key), "recorded"


def layer_stages(layout: Mapping[str, Any], graph: Path) -> dict[str, int]:
    """Each layer's stage in `layout` (the layers PipeDream's output leaves out with their
    producers, as `bench_pipedream.complete`)."""
    stage_of = {name: k for k, stage in enumerate(layout["stages"])
                for name in stage["layer_names"]}
    return pd.complete(stage_of, graph)


def case(model: str, workers: int, spec: Path, graph: Path, tmp: Path, live: bool
         ) -> dict[str, Any]:
    problem = with_replicas(pd.problem(spec, model, workers))
    pure_problem = pd.problem(spec, model, workers)
    row: dict[str, Any] = {"case": f"{model}/{workers}"}
    row["one"], row["allrep"] = baselines(problem)
    row["pure"], row["pure_s"], _ = timed("auto", pure_problem)
    row["hybrid"], row["hybrid_s"], solution = timed("hybrid", problem)
    row["layout"] = solution.info["layout"]
    layout, source = pipedream_layout(model, workers, graph, tmp, live)
    row["pipedream_from"] = source
    if layout is not None:
        path = stages_file(problem, layout, layer_stages(layout, graph),
                           tmp / f"{model}_{workers}.stages.json")
        row["pipedream"] = judged(spec, f"{model}_{workers}", path)
        row["pipedream_layout"] = [s["replicas"] for s in layout["stages"]]
    return row


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.1f}"


def line(row: Mapping[str, Any]) -> str:
    pdr = row.get("pipedream")
    cells = [row["case"], _ms(row["one"]), _ms(row["allrep"]),
             f"{_ms(row['pure'])} ({row['pure_s']:.2f} s)",
             f"{_ms(row['hybrid'])} {row['layout']} ({row['hybrid_s']:.2f} s)",
             f"{_ms(pdr)} {row.get('pipedream_layout', '')}",
             "-" if pdr is None else f"{pdr / row['hybrid']:.2f}",
             f"{row['pure'] / row['hybrid']:.2f}"]
    return "| " + " | ".join(cells) + " |"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", action="store_true", help="write bench/results/bench_hybrid.json")
    ap.add_argument("--live", action="store_true",
                    help="run PipeDream's optimizer now (needs $PIPEDREAM_SRC) instead of "
                         "reading its recorded layouts")
    ap.add_argument("--models", nargs="+", default=list(pd.MODELS), choices=pd.MODELS,
                    metavar="MODEL")
    ap.add_argument("--workers", nargs="+", type=int, default=list(pd.WORKERS))
    ap.add_argument("--quick", action="store_true",
                    help="alexnet and resnet18 on 4 workers (`--models alexnet resnet18 "
                         "--workers 4`)")
    args = ap.parse_args(argv)
    if args.quick:
        args.models, args.workers = ["alexnet", "resnet18"], [4]
    rec = Recording.start(__file__, args.quick, argv)
    print(f"objective pipeline, {pd.PIPELINE.microbatches} micro-batches, "
          f"{pd.PIPELINE.schedule}; flat workers at 1 GB/s; simulated iteration in ms")
    cols = ["case", "one device", "all replicas", "pure (plan s)", "hybrid [replicas] (plan s)",
            "PipeDream [replicas]", "vs PipeDream", "vs pure"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    rows = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for model in args.models:
            graph = pd.profile(model)
            if graph is None:
                print(f"| {model} | skipped: no profile under {pd.profile_dir()} |")
                continue
            spec = pd.spec(model, graph, tmp, args.workers)
            for n in args.workers:
                row = case(model, n, spec, graph, tmp, args.live)
                rows.append(row)
                print(line(row), flush=True)
    if not rows:
        return
    versus = {r["case"]: r["pipedream"] / r["hybrid"] for r in rows if "pipedream" in r}
    gains = {r["case"]: r["pure"] / r["hybrid"] for r in rows}
    plan_s = {r["case"]: r["hybrid_s"] for r in rows}
    print(f"\nhybrid vs PipeDream's hybrid: {sum(v >= 1 for v in versus.values())} of "
          f"{len(versus)} at least as fast (min {min(versus.values(), default=0):.2f}x); vs "
          f"the pure pipeline: median {statistics.median(gains.values()):.2f}x; time to plan "
          f"median {statistics.median(plan_s.values()):.2f} s, max {max(plan_s.values()):.2f} s")
    if args.record:
        if versus:
            rec.add("hybrid_vs_pipedream", spread(versus, "x", "PipeDream's hybrid iteration "
                                                  "over planner's hybrid, per profile/workers",
                                                  at_least=1.0))
        rec.add("hybrid_vs_pure", spread(gains, "x", "planner's pure pipeline iteration over "
                                         "its hybrid, per profile/workers"))
        rec.add("hybrid_plan_s", spread(plan_s, "s", "wall time of --algo hybrid, per "
                                        "profile/workers", at_most=2.0))
        rec.add("hybrid_plan_s_median", value(statistics.median(plan_s.values()), "s",
                                              "median wall time of --algo hybrid"))
        rec.context["rows"] = rows
        rec.context["pipedream_source"] = os.environ.get("PIPEDREAM_SRC", "recorded layouts")
        rec.write()


if __name__ == "__main__":
    main()
