"""Run saga's DAG schedulers on instances from a JSON file; write their schedules as JSON.

This script runs INSIDE the saga virtual environment (Python >= 3.12, `pip install
anrg-saga`), never in planner's own: it imports saga only, not planner. The comparison
driver `compare_saga.py` writes the instances and reads the results.

    python run_saga.py INSTANCES.json RESULTS.json [--schedulers all,HeftPairMean]
                       [--timeout-s 60] [--self-strength 1e30]

Input (`INSTANCES.json`)::

    {"instances": [{"name": "i0",
                    "tasks": [{"name": "T0", "cost": 1.2}, ...],
                    "edges": [{"src": "T0", "dst": "T1", "size": 1.3e9}, ...],
                    "nodes": [{"name": "N0", "speed": 0.9}, ...],
                    "links": [{"a": "N0", "b": "N1", "strength": 1.1e9}, ...]}]}

Saga's cost model: task `t` takes `cost / speed` on a node; an edge's data arrives
`size / strength` after its producer ends when producer and consumer are on different
nodes (links are undirected; one strength per unordered pair), and at once on the same
node (saga's self-link strength is infinite when not given; `--self-strength S` sets it to
`S` instead: saga's SMT scheduler needs a finite one, because pysmt turns every constant into
an exact rational, and saga's own random networks use 1e9). Tasks are built with saga's
own `TaskGraph.create` / `Network.create`, which add zero-cost `__super_source__` /
`__super_sink__` tasks with zero-size edges to graphs with several sources or sinks; they
are reported like any other task (the driver ignores them).

Output (`RESULTS.json`)::

    {"saga_version": "2.1.0", "python": "3.12.1",
     "excluded": {...}, "variants": {...},
     "results": [{"instance": "i0", "scheduler": "Heft", "variant": false,
                  "ok": true, "error": null,
                  "makespan": 9.81, "runtime_s": 0.003,
                  "schedule": [{"task": "T0", "node": "N1", "start": 0.0, "end": 1.2}, ...]}]}

`runtime_s` is the wall time of `scheduler.schedule(network, task_graph)` alone (no
interpreter start-up, imports or instance building). Each run is capped at `--timeout-s`
with SIGALRM (a scheduler stuck inside native code, e.g. the SMT solver, is interrupted
only when it returns to Python: the driver also caps the whole process). Saga's set
iteration order follows string hashing, so run with a fixed `PYTHONHASHSEED` (the driver
sets 0) for reproducible tie-breaks.

Schedulers: `all` is every class in `saga.schedulers.__all__` minus those in `EXCLUDED`;
names are class names without the `Scheduler` suffix (`Heft`, `Cpop`, `ETF`, `SMT`, ...).
`--schedulers all,HeftPairMean` adds the diagnostic variants of `VARIANTS` (not saga's;
their results carry `"variant": true`).
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import signal
import sys
import time
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import Any

#: schedulers `all` leaves out, and why
EXCLUDED = {
    "BruteForce": "enumerates every schedule: exponential in the number of tasks",
    "SMT": "the exact SMT scheduler: request it by name (it may run for minutes)",
    "Hybrid": "a combinator that needs a list of other schedulers",
}


#: diagnostic variants of saga's schedulers (not part of saga), and what they change
VARIANTS = {
    "HeftPairMean": "saga's Heft ranking edges by their mean transfer time over ordered pairs "
                    "of distinct nodes, as planner's heft does (saga's upward_rank averages "
                    "over every network edge, each node's link to itself included)",
}


class RunTimeout(Exception):
    """A scheduler ran past `--timeout-s`."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise RunTimeout


def scheduler_classes() -> dict[str, type]:
    """Saga's scheduler classes by short name (class name without `Scheduler`)."""
    from saga import schedulers

    out: dict[str, type] = {}
    for cls_name in schedulers.__all__:
        short = cls_name.removesuffix("Scheduler")
        out[short] = getattr(schedulers, cls_name)
    return out


def variant_classes() -> dict[str, type]:
    """The classes of `VARIANTS`, by name."""
    import numpy as np
    import saga.schedulers.heft as heft_module
    from saga.schedulers import HeftScheduler

    def pair_mean_rank(network: Any, task_graph: Any) -> dict[str, float]:
        pairs = [e for e in network.edges if e.source != e.target]
        ranks: dict[str, float] = {}
        for task in reversed(task_graph.topological_sort()):
            comp = float(np.mean([task.cost / node.speed for node in network.nodes]))
            tail = 0.0
            for dep in task_graph.out_edges(task.name):
                comm = float(np.mean([dep.size / e.speed for e in pairs])) if pairs else 0.0
                tail = max(tail, ranks[dep.target] + comm)
            ranks[task.name] = comp + tail
        return ranks

    class HeftPairMeanScheduler(HeftScheduler):  # type: ignore[misc,valid-type]
        """saga's HEFT with `pair_mean_rank` swapped in for the duration of one call."""

        def schedule(self, network: Any, task_graph: Any, schedule: Any = None,
                     min_start_time: float = 0.0) -> Any:
            saved = heft_module.upward_rank
            heft_module.upward_rank = pair_mean_rank
            try:
                return super().schedule(network, task_graph, schedule, min_start_time)
            finally:
                heft_module.upward_rank = saved

    return {"HeftPairMean": HeftPairMeanScheduler}


def build(instance: dict[str, Any], self_strength: float | None = None) -> tuple[Any, Any]:
    """Saga's (Network, TaskGraph) of one instance, built with saga's own constructors.

    `self_strength`: the strength of each node's link to itself (None: saga's default, inf).
    """
    from saga import Network, TaskGraph

    links = [(lk["a"], lk["b"], float(lk["strength"])) for lk in instance["links"]]
    if self_strength is not None:
        links += [(n["name"], n["name"], self_strength) for n in instance["nodes"]]

    task_graph = TaskGraph.create(
        [(t["name"], float(t["cost"])) for t in instance["tasks"]],
        [(e["src"], e["dst"], float(e["size"])) for e in instance["edges"]],
    )
    network = Network.create(
        [(n["name"], float(n["speed"])) for n in instance["nodes"]],
        links,
    )
    return network, task_graph


def run_one(cls: type, network: Any, task_graph: Any, timeout_s: float) -> dict[str, Any]:
    """Run one scheduler on one instance; never raises (errors are reported)."""
    out: dict[str, Any] = {"ok": False, "error": None, "makespan": None, "runtime_s": None,
                           "schedule": []}
    try:
        scheduler = cls()
    except Exception as exc:  # noqa: BLE001 (a peer's constructor: report, go on)
        out["error"] = f"constructor: {type(exc).__name__}: {exc}"
        return out
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    t0 = time.perf_counter()
    try:
        schedule = scheduler.schedule(network, task_graph)
        elapsed = time.perf_counter() - t0
    except RunTimeout:
        out["error"] = f"timeout after {timeout_s:g} s"
        out["runtime_s"] = time.perf_counter() - t0
        return out
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        out["runtime_s"] = time.perf_counter() - t0
        return out
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    out["ok"] = True
    out["runtime_s"] = elapsed
    out["makespan"] = float(schedule.makespan)
    out["schedule"] = [
        {"task": t.name, "node": t.node, "start": float(t.start), "end": float(t.end)}
        for node in sorted(schedule.mapping)
        for t in schedule.mapping[node]
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("instances", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("--schedulers", default="all",
                        help="comma-separated: `all` and/or short names "
                        "(Heft,Cpop,SMT,HeftPairMean)")
    parser.add_argument("--timeout-s", type=float, default=60.0,
                        help="cap per scheduler run (seconds)")
    parser.add_argument("--self-strength", type=float, default=None,
                        help="a node's link to itself (default: saga's, infinite)")
    args = parser.parse_args(argv)

    logging.disable(logging.WARNING)  # saga warns about every super source/sink it adds
    classes = {**scheduler_classes(), **variant_classes()}
    chosen: list[str] = []
    for token in (t.strip() for t in args.schedulers.split(",")):
        if token == "all":
            chosen += [n for n in scheduler_classes() if n not in EXCLUDED]
        elif token:
            chosen.append(token)
    unknown = [s for s in chosen if s not in classes]
    if unknown:
        print(f"unknown saga scheduler(s): {', '.join(unknown)}; "
              f"available: {', '.join(classes)}", file=sys.stderr)
        return 2

    data = json.loads(args.instances.read_text())
    signal.signal(signal.SIGALRM, _on_alarm)
    results: list[dict[str, Any]] = []
    for instance in data["instances"]:
        network, task_graph = build(instance, args.self_strength)
        for name in chosen:
            res = run_one(classes[name], network, task_graph, args.timeout_s)
            results.append({"instance": instance["name"], "scheduler": name,
                            "variant": name in VARIANTS, **res})

    out = {
        "saga_version": metadata.version("anrg-saga"),
        "python": platform.python_version(),
        "excluded": EXCLUDED,
        "variants": {n: VARIANTS[n] for n in chosen if n in VARIANTS},
        "results": results,
    }
    tmp = args.results.with_name(args.results.name + ".tmp")
    tmp.write_text(json.dumps(out))
    tmp.replace(args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
