"""planner against the saga scheduling library (PyPI `anrg-saga`) in saga's cost model.

    python bench/saga/compare_saga.py            # 30 instances + 5 SMT instances
    python bench/saga/compare_saga.py --quick    # 6 instances + 1 SMT instance
    python bench/saga/compare_saga.py --record   # also write README's figures (bench/results/)

Runs in planner's own virtual environment; saga (Python >= 3.12) runs in a separate one,
through `run_saga.py` in a subprocess. Without it, this prints how to create it and
exits 0. Where that venv lives: `--saga-python`, else `$SAGA_PYTHON`, else
`/tmp/saga-venv/bin/python`.

Instances (seeded) follow saga's own random conventions (`saga.schedulers.data.random`):
task costs, data sizes, node speeds and link strengths are `min(max(gauss(1, 1/3), 1e-9),
2)`; the graph families are saga's out-trees and in-trees (balanced trees plus a 1e-9
sink), parallel chains, and a random DAG (every task after the first has a random
earlier parent plus extra ones with probability 2/n); networks are complete graphs.
Each instance is written as a `.plan` spec (one device per node with its `speed`, op
`time` = cost in seconds, links `bandwidth` = strength GB/s and latency 0, edge `bytes`
= size GB, `memory static` with 1 TiB caps, `contention none`) and loaded with
`planner.load`; saga receives the very same numbers (seconds, bytes, bytes per second).

Data sizes: by default one size per task, carried by every edge out of it. planner models
a tensor that goes to another device once (the largest `bytes` among the edges to
consumers there), saga one transfer per edge; with one size per producer the two models
coincide exactly. `--per-edge-sizes` draws a size per edge (saga's convention); planner
then charges a consumer the largest size sent to its device, so check (a) may differ.

Checks:
(a) saga's HEFT schedule (placement and per-node order) re-simulated by
    `planner.simulate` reproduces saga's own makespan (max relative difference); every
    saga schedule is also checked (all tasks scheduled once; saga's start times obey
    precedence and no-overlap in planner's simulator) and invalid ones are not counted.
(b) planner `heft` vs saga `Heft`: simulated makespan ratio, mean and max (target: mean
    within 2%).
(c) planner `auto` (`time_limit_s=10`) vs the best valid saga schedule per instance:
    fraction of instances tied (within 1e-6 relative) or beaten (target >= 90%).
(d) saga's exact `SMT` scheduler (z3 via pysmt, capped at `--smt-cap-s`) vs planner
    `cpsat` (`time_limit_s=60`) on 15-18-task, 3-node random DAGs: time to an optimal
    schedule (target: cpsat 10x faster).
Times are wall times of the scheduling call alone (saga: `scheduler.schedule`; planner:
`Solution.planning_s`); the machine may be shared, so they are noisy. `--record` writes the
checks' figures to bench/results/compare_saga.json for README's table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import planner
from planner.algorithms import Options, run
from planner.model import Problem
from planner.plan import Plan
from planner.simulate import simulate

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench/, for its `recording` module
from recording import Recording, value  # noqa: E402 - after bench/ is on the path

RUN_SAGA = HERE / "run_saga.py"
DEFAULT_SAGA_PYTHON = "/tmp/saga-venv/bin/python"
PYENV_312 = "/root/.pyenv/versions/3.12.1/bin/python3.12"
#: unit scale: saga's unitless sizes and strengths become GB and GB/s
GIGA = 1e9
#: relative tolerance for "tie" and for "matches"
TIE_REL = 1e-6
SUPER = ("__super_source__", "__super_sink__")
#: saga's SMT needs finite self-links (pysmt makes every constant an exact rational); with
#: this strength a same-node transfer of <= 2 GB takes <= 2e-21 s
SMT_SELF_STRENGTH = 1e30
FAMILIES = ("out_tree", "in_tree", "chains", "random_dag")


# ---------------------------------------------------------------------------- instances

@dataclass(frozen=True)
class Instance:
    """One random instance, in base units: seconds, bytes, bytes per second."""

    name: str
    family: str
    tasks: tuple[tuple[str, float], ...]  # (name, cost s)
    edges: tuple[tuple[str, str, int], ...]  # (src, dst, bytes)
    nodes: tuple[tuple[str, float], ...]  # (name, speed)
    links: tuple[tuple[str, str, float], ...]  # (a, b, bandwidth B/s), a < b

    def to_saga(self) -> dict[str, Any]:
        """The instance as `run_saga.py` reads it (the same numbers)."""
        return {
            "name": self.name,
            "tasks": [{"name": t, "cost": c} for t, c in self.tasks],
            "edges": [{"src": a, "dst": b, "size": float(n)} for a, b, n in self.edges],
            "nodes": [{"name": n, "speed": s} for n, s in self.nodes],
            "links": [{"a": a, "b": b, "strength": bw} for a, b, bw in self.links],
        }

    def to_plan_text(self) -> str:
        """The instance as a planner spec (numbers as Python reprs: they parse back exactly)."""
        out = [f"# {self.name}: {self.family}, generated by bench/saga/compare_saga.py",
               "cluster net {"]
        out += [f"  device {n} {{ memory 1 TiB  speed {s!r} }}" for n, s in self.nodes]
        out += [f"  link {a} <-> {b} {{ bandwidth {bw!r} B/s  latency 0 s }}"
                for a, b, bw in self.links]
        out += ["}", "", "graph g {"]
        size_of: dict[str, int] = {}
        for a, _, n in self.edges:
            size_of[a] = max(size_of.get(a, 0), n)
        out += [f"  op {t} {{ time {c!r} s  output {size_of.get(t, 0)} B }}"
                for t, c in self.tasks]
        out += [f"  {a} -> {b} {{ bytes {n} B }}" for a, b, n in self.edges]
        out += ["}", "", "plan p {", "  graph g", "  cluster net", "  memory static",
                "  contention none", "}", ""]
        return "\n".join(out)


def saga_weight(rng: random.Random) -> float:
    """saga's default weight: a normal(1, 1/3) clipped to [1e-9, 2]."""
    return min(max(rng.gauss(1, 1 / 3), 1e-9), 2)


def _tree(branching: int, levels: int) -> tuple[int, list[tuple[int, int]]]:
    """A balanced out-tree (networkx's labels: children of i are b*i+1..b*i+b) plus a sink
    fed by every leaf; returns (task count, edges)."""
    n_tree = sum(branching**k for k in range(levels + 1))
    edges = [(i, c) for i in range(n_tree) for c in range(branching * i + 1,
                                                            branching * i + branching + 1)
             if c < n_tree]
    parents = {a for a, _ in edges}
    edges += [(leaf, n_tree) for leaf in range(n_tree) if leaf not in parents]
    return n_tree + 1, edges


def _shape(family: str, rng: random.Random, n_range: tuple[int, int]
           ) -> tuple[int, list[tuple[int, int]], set[int]]:
    """(task count, edges, tasks of weight 1e-9 with 1e-9 edges) of one family."""
    lo, hi = n_range
    if family in ("out_tree", "in_tree"):
        shapes = [(b, L) for b in range(2, 6) for L in range(1, 6)
                  if lo <= sum(b**k for k in range(L + 1)) + 1 <= hi]
        b, levels = rng.choice(shapes)
        n, edges = _tree(b, levels)
        tiny = {n - 1}  # saga's sink: weight 1e-9, edges 1e-9
        if family == "in_tree":
            edges = [(n - 1 - d, n - 1 - s) for s, d in edges]  # reversed, relabelled
            tiny = {0}
        return n, sorted(edges), tiny
    if family == "chains":
        shapes = [(c, ln) for c in range(2, 7) for ln in range(2, 10)
                  if lo <= 2 + c * ln <= hi]
        c, ln = rng.choice(shapes)
        edges = []
        for k in range(c):
            first = 1 + k * ln
            edges.append((0, first))
            edges += [(first + j, first + j + 1) for j in range(ln - 1)]
            edges.append((first + ln - 1, 1 + c * ln))
        return 2 + c * ln, edges, set()
    n = rng.randint(lo, hi)
    es: set[tuple[int, int]] = set()
    for j in range(1, n):
        es.add((rng.randrange(j), j))
        es.update((i, j) for i in range(j) if rng.random() < 2 / n)
    return n, sorted(es), set()


def make_instance(name: str, family: str, seed: int, n_range: tuple[int, int],
                  node_range: tuple[int, int], per_edge_sizes: bool) -> Instance:
    """A seeded random instance of `family` with saga's weight distribution."""
    rng = random.Random(seed)
    n, edges, tiny = _shape(family, rng, n_range)
    names = [f"T{i}" for i in range(n)]
    tasks = tuple((names[i], 1e-9 if i in tiny else saga_weight(rng)) for i in range(n))
    per_task = [saga_weight(rng) for _ in range(n)]
    sized = []
    for a, b in edges:
        size = 1e-9 if (a in tiny or b in tiny) else (
            saga_weight(rng) if per_edge_sizes else per_task[a])
        sized.append((names[a], names[b], max(0, round(size * GIGA))))
    m = rng.randint(*node_range)
    nodes = tuple((f"N{k}", saga_weight(rng)) for k in range(m))
    links = tuple((f"N{a}", f"N{b}", saga_weight(rng) * GIGA)
                  for a in range(m) for b in range(a + 1, m))
    return Instance(name, family, tasks, tuple(sized), nodes, links)


# ---------------------------------------------------------------------------- saga side

def find_saga_python(explicit: str | None) -> str | None:
    """The saga venv's python when it exists and imports saga, else None."""
    path = explicit or os.environ.get("SAGA_PYTHON") or DEFAULT_SAGA_PYTHON
    if not Path(path).exists():
        return None
    probe = subprocess.run([path, "-c", "import saga.schedulers"], capture_output=True,
                           timeout=120, check=False)
    return path if probe.returncode == 0 else None


def setup_hint() -> str:
    """How to create the saga venv (two commands)."""
    py = PYENV_312 if Path(PYENV_312).exists() else (shutil.which("python3.12") or "python3.12")
    return ("saga is not installed; this benchmark runs it in its own Python >= 3.12 venv.\n"
            "Create it with:\n"
            f"  {py} -m venv /tmp/saga-venv\n"
            "  /tmp/saga-venv/bin/pip install anrg-saga\n"
            "then run this again (or point --saga-python / $SAGA_PYTHON at its python).")


class SagaFailed(Exception):
    """run_saga.py exited with an error."""


def run_saga(python: str, instances: Sequence[Instance], workdir: Path, tag: str,
             schedulers: str, timeout_s: float, wall_s: float, extra: Sequence[str] = ()
             ) -> list[dict[str, Any]]:
    """Run `run_saga.py` on `instances`; its results, or [] when killed at `wall_s`."""
    src = workdir / f"{tag}.instances.json"
    dst = workdir / f"{tag}.results.json"
    src.write_text(json.dumps({"instances": [i.to_saga() for i in instances]}))
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # saga's set order decides its tie-breaks
    try:
        proc = subprocess.run(
            [python, str(RUN_SAGA), str(src), str(dst), "--schedulers", schedulers,
             "--timeout-s", str(timeout_s), *extra],
            capture_output=True, text=True, timeout=wall_s, env=env, check=False)
    except subprocess.TimeoutExpired:
        return []
    if proc.returncode != 0:
        raise SagaFailed(proc.stderr.strip()[-2000:] or f"exit status {proc.returncode}")
    results: list[dict[str, Any]] = json.loads(dst.read_text())["results"]
    return results


# ---------------------------------------------------------------------------- planner side

@dataclass
class Loaded:
    """An instance loaded as a planner Problem."""

    inst: Instance
    problem: Problem


def load_problem(inst: Instance, workdir: Path) -> Loaded:
    """Write the instance's `.plan` file and load it with `planner.load`."""
    path = workdir / f"{inst.name}.plan"
    path.write_text(inst.to_plan_text())
    return Loaded(inst, planner.load(path).plan())


@dataclass(frozen=True)
class Check:
    """A saga schedule checked in planner's simulator."""

    valid: bool
    why: str
    saga_makespan: float
    sim_makespan: float  # planner's re-simulation of saga's placement and order


def check_saga(loaded: Loaded, res: dict[str, Any], check_times: bool = True) -> Check:
    """Re-simulate a saga schedule (placement, order and, with `check_times`, its start
    times, which the simulator checks for precedence and overlap) in planner.

    Without `check_times` only completeness and the order are checked: with per-edge
    sizes saga's times are right in saga's model but may be early in planner's.
    """
    nan = float("nan")
    if not res["ok"]:
        return Check(False, res["error"] or "failed", nan, nan)
    g = loaded.problem.graph
    devs = loaded.problem.cluster.device_index
    placement = [-1] * len(g.ops)
    start = [0.0] * len(g.ops)
    seen = 0
    for row in res["schedule"]:
        if row["task"] in SUPER:
            continue
        i = g.op_index[row["task"]]
        if placement[i] != -1:
            return Check(False, f"task {row['task']} scheduled twice", res["makespan"], nan)
        placement[i] = devs[row["node"]]
        start[i] = row["start"]
        seen += 1
    if seen != len(g.ops):
        return Check(False, f"{len(g.ops) - seen} task(s) not scheduled", res["makespan"], nan)
    plan = Plan.from_schedule(placement, start, len(devs), res["scheduler"], graph=g)
    if not check_times:
        plan = Plan(plan.placement, plan.order, None, plan.algorithm)
    sim = simulate(loaded.problem, plan)
    if not sim.feasible:
        kinds = sorted({v.kind for v in sim.violations})
        return Check(False, "violates " + ", ".join(kinds), res["makespan"], sim.makespan_s)
    return Check(True, "", res["makespan"], sim.makespan_s)


def run_planner(algorithm: str, problem: Problem, time_limit_s: float
                ) -> tuple[float, float, str]:
    """(simulated makespan, planning_s, status) of one planner algorithm."""
    sol = run(algorithm, problem, Options(time_limit_s=time_limit_s))
    sim = simulate(problem, sol.plan)
    makespan = sim.makespan_s if sim.feasible else float("inf")
    return makespan, sol.planning_s, sol.status


# ---------------------------------------------------------------------------- reporting

def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table, right-aligned columns (markdown-compatible)."""
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h)
              for k, h in enumerate(header)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) + " |"
            for r in rows]
    return "\n".join([line, sep, *body])


def _f(x: float, digits: int = 4) -> str:
    return "-" if math.isnan(x) else f"{x:.{digits}f}"


def _mean(xs: Sequence[float]) -> float:
    return statistics.fmean(xs) if xs else math.nan


def _median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else math.nan


def rel(a: float, b: float) -> float:
    """|a - b| / |b|."""
    return abs(a - b) / abs(b) if b else abs(a - b)


# ---------------------------------------------------------------------------- the benchmark

# long: checks (a)-(c) share one pass over the instances, and print from its lists
def bench_heuristics(saga_py: str, args: argparse.Namespace, workdir: Path,
                     log: Callable[[str], None]) -> dict[str, Any]:
    """Checks (a), (b), (c) on `args.instances` random instances; prints their tables."""
    insts = [make_instance(f"i{k:02d}", FAMILIES[k % len(FAMILIES)], args.seed * 100_003 + k,
                           (10, 30), (3, 5), args.per_edge_sizes)
             for k in range(args.instances)]
    loaded = {i.name: load_problem(i, workdir) for i in insts}
    log(f"saga: {len(insts)} instances x all heuristics ...")
    t0 = time.perf_counter()
    results = run_saga(saga_py, insts, workdir, "heuristics", "all,HeftPairMean", 60.0,
                       1800.0)
    log(f"saga done in {time.perf_counter() - t0:.0f} s")
    if not results:
        raise SagaFailed("saga's heuristics ran past 30 minutes")
    by_inst: dict[str, dict[str, Check]] = {i.name: {} for i in insts}
    runtimes: dict[str, list[float]] = {}
    errors: dict[str, str] = {}
    variant: dict[str, Check] = {}
    exact = not args.per_edge_sizes  # the two cost models coincide
    for res in results:
        if res["variant"]:
            variant[res["instance"]] = check_saga(loaded[res["instance"]], res, exact)
            continue
        by_inst[res["instance"]][res["scheduler"]] = check_saga(loaded[res["instance"]], res,
                                                                exact)
        if res["runtime_s"] is not None:
            runtimes.setdefault(res["scheduler"], []).append(res["runtime_s"])
    scheds = list(dict.fromkeys(r["scheduler"] for r in results if not r["variant"]))

    # (a) + (b) + (c), per instance
    rows, heft_ratio, heft_diff, auto_ratio, wins, ties = [], [], [], [], 0, 0
    same_as_pair_mean = 0
    ours: dict[str, float] = {}
    auto_s: list[float] = []
    chosen: dict[str, int] = {}
    for inst in insts:
        problem = loaded[inst.name].problem
        checks = by_inst[inst.name]
        sh = checks.get("Heft")
        heft_ms, _, _ = run_planner("heft", problem, 60.0)
        log(f"{inst.name}: auto ...")
        sol = run("auto", problem, Options(time_limit_s=args.time_limit))
        auto_ms = simulate(problem, sol.plan).makespan_s
        auto_s.append(sol.planning_s)
        chosen[sol.info.get("chosen", "?")] = chosen.get(sol.info.get("chosen", "?"), 0) + 1
        ours[inst.name] = auto_ms
        valid = {s: c for s, c in checks.items() if c.valid}
        best_name = min(valid, key=lambda s: (valid[s].saga_makespan, s)) if valid else "-"
        best = valid[best_name].saga_makespan if valid else float("inf")
        if sh is not None and sh.valid:
            heft_diff.append(rel(sh.sim_makespan, sh.saga_makespan))
            heft_ratio.append(heft_ms / sh.saga_makespan)
        pm = variant.get(inst.name)
        same_as_pair_mean += pm is not None and pm.valid and rel(heft_ms, pm.saga_makespan) \
            <= TIE_REL
        r = auto_ms / best
        auto_ratio.append(r)
        if auto_ms < best * (1 - TIE_REL):
            wins += 1
        elif auto_ms <= best * (1 + TIE_REL):
            ties += 1
        rows.append([inst.name, inst.family, str(len(inst.tasks)), str(len(inst.nodes)),
                     _f(sh.saga_makespan if sh else float("nan")),
                     _f(sh.sim_makespan if sh else float("nan")), _f(heft_ms),
                     best_name, _f(best), _f(auto_ms), sol.info.get("chosen", "?"),
                     sol.status, f"{r:.4f}"])
    print(f"\nPer instance (times in s of simulated schedule; auto time limit "
          f"{args.time_limit:g} s)")
    print(table(["inst", "family", "tasks", "nodes", "saga HEFT", "HEFT re-sim",
                 "our heft", "best saga", "its makespan", "our auto", "chosen", "status",
                 "auto/best"], rows))

    n = len(insts)
    print("\n(a) saga HEFT schedule re-simulated by planner.simulate vs saga's own makespan: "
          f"max relative difference {max(heft_diff, default=float('nan')):.2e} "
          f"over {len(heft_diff)} instances" + (
              "" if exact else " (per-edge sizes: planner charges a consumer the largest "
              "tensor its producer sends to its device, so differences are expected)"))
    all_checks = [(i, s, c) for i, checks in by_inst.items() for s, c in checks.items()]
    mism = [(i, s, rel(c.sim_makespan, c.saga_makespan)) for i, s, c in all_checks
            if c.valid and rel(c.sim_makespan, c.saga_makespan) > TIE_REL]
    print(f"    all saga schedulers: {sum(c.valid for _, _, c in all_checks)}"
          f" valid schedules; {len(mism)} re-simulate to a different makespan "
          "(re-timing as early as the order allows)" + (
              ": " + ", ".join(f"{s}@{i} {d:.1e}" for i, s, d in mism[:6]) if mism else ""))
    print(f"(b) our heft / saga Heft makespan: mean {_mean(heft_ratio):.4f}, "
          f"median {_median(heft_ratio):.4f}, max {max(heft_ratio, default=math.nan):.4f}, "
          f"min {min(heft_ratio, default=math.nan):.4f}; ours better on "
          f"{sum(x < 1 - TIE_REL for x in heft_ratio)}, equal on "
          f"{sum(abs(x - 1) <= TIE_REL for x in heft_ratio)}, worse on "
          f"{sum(x > 1 + TIE_REL for x in heft_ratio)} (target: mean <= 1.02)")
    print(f"    saga's Heft ranking by planner's mean transfer time (over ordered pairs of "
          f"distinct nodes; saga's upward_rank averages over every network edge, free "
          f"self-links included) equals our heft on {same_as_pair_mean}/{n} instances")
    print(f"(c) our auto vs best saga schedule: ties or beats on {wins + ties}/{n} "
          f"= {(wins + ties) / n:.0%} (beats {wins}, ties {ties}; target >= 90%); "
          f"auto/best mean {_mean(auto_ratio):.4f}, max {max(auto_ratio):.4f}; "
          f"auto planning_s median {_median(auto_s):.2f}, max {max(auto_s):.2f}; "
          "auto chose " + ", ".join(f"{k} x{v}" for k, v in sorted(chosen.items())))

    srows = []
    for s in scheds:
        runs = [(i.name, by_inst[i.name][s]) for i in insts if s in by_inst[i.name]]
        ratios = [c.saga_makespan / ours[name] for name, c in runs if c.valid]
        bad = [c.why for _, c in runs if not c.valid]
        if bad:
            kinds = sorted(set(bad), key=lambda w: (-bad.count(w), w))
            errors[s] = (f"{len(bad)}/{len(runs)} invalid: " + "; ".join(kinds[:3])
                         + ("; ..." if len(kinds) > 3 else ""))
        srows.append([s, f"{len(ratios)}/{len(runs)}",
                      _f(_mean(ratios)),
                      _f(min(ratios)) if ratios else "-",
                      str(sum(r < 1 - TIE_REL for r in ratios)),
                      _f(_median(runtimes.get(s, [])))])
    # schedulers with invalid schedules last: their mean covers only the valid ones
    srows.sort(key=lambda r: (r[0] in errors, float(r[2]) if r[2] != "-" else math.inf))
    print("\nsaga schedulers vs our auto (makespan ratio saga/ours: > 1 means ours is faster)")
    print(table(["saga scheduler", "valid", "mean ratio", "min ratio", "beats auto",
                 "median runtime_s"], srows))
    for s, why in errors.items():
        print(f"  {s}: {why}")
    return {
        "saga_heft_resimulated": value(
            max(heft_diff, default=math.nan), "relative",
            f"(a) saga's HEFT schedule re-simulated by planner: the largest relative "
            f"difference from saga's makespan, over {len(heft_diff)} instances"),
        "heft_ratio_mean": value(_mean(heft_ratio), "ratio",
                                 "(b) our heft / saga's Heft makespan, mean", at_most=1.02,
                                 max=max(heft_ratio, default=math.nan)),
        "auto_ties_or_beats": value(
            wins + ties, "instances", f"(c) our auto ties or beats the best valid schedule "
            f"of {len(scheds)} saga heuristics (auto's limit {args.time_limit:g} s)",
            of=n, beats=wins, ties=ties, heuristics=len(scheds), at_least=0.9 * n),
        "auto_over_best_mean": value(_mean(auto_ratio), "ratio",
                                     "(c) our auto's makespan / the best saga schedule's, mean",
                                     max=max(auto_ratio)),
    }


def bench_smt(saga_py: str, args: argparse.Namespace, workdir: Path,
              log: Callable[[str], None]) -> dict[str, Any]:
    """Check (d): saga's SMT scheduler vs our cpsat on small 3-node random DAGs."""
    insts = [make_instance(f"smt{k}", "random_dag", args.seed * 100_003 + 7919 + k,
                           (15, 18), (3, 3), args.per_edge_sizes)
             for k in range(args.smt)]
    rows, speedups, solved = [], [], 0
    for inst in insts:
        loaded = load_problem(inst, workdir)
        log(f"{inst.name}: saga SMT (cap {args.smt_cap_s:g} s) ...")
        t0 = time.perf_counter()
        res = run_saga(saga_py, [inst], workdir, inst.name, "SMT", args.smt_cap_s,
                       args.smt_cap_s + 60, ("--self-strength", repr(SMT_SELF_STRENGTH)))
        wall = time.perf_counter() - t0
        if res and res[0]["ok"]:
            chk = check_saga(loaded, res[0])
            smt_s, smt_ms = res[0]["runtime_s"], res[0]["makespan"]
            smt_note = "ok" if chk.valid else chk.why
        else:
            smt_s = res[0]["runtime_s"] if res and res[0]["runtime_s"] else wall
            smt_ms = float("nan")
            smt_note = (res[0]["error"] if res else f"killed after {wall:.0f} s") or "failed"
        log(f"{inst.name}: cpsat ...")
        ms, secs, status = run_planner("cpsat", loaded.problem, 60.0)
        solved += status == "optimal"
        capped = math.isnan(smt_ms)
        speedup = smt_s / secs
        speedups.append(speedup)
        rows.append([inst.name, str(len(inst.tasks)), str(len(inst.edges)),
                     ("> " if capped else "") + f"{smt_s:.2f}", _f(smt_ms), smt_note,
                     f"{secs:.3f}", status, _f(ms),
                     ("> " if capped else "") + f"{speedup:.0f}x"])
    print(f"\n(d) saga SMT (epsilon 1e-3, capped at {args.smt_cap_s:g} s) vs our cpsat "
          "(time limit 60 s), 3 nodes")
    print(table(["inst", "tasks", "edges", "SMT s", "SMT makespan", "SMT", "cpsat s",
                 "cpsat status", "cpsat makespan", "speedup"], rows))
    if not speedups:
        return {}
    print(f"cpsat proved {solved}/{len(insts)} optimal; speedup median "
          f"{statistics.median(speedups):.0f}x, min {min(speedups):.0f}x (target >= 10x)")
    return {"smt_speedup": value(
        statistics.median(speedups), "×", f"(d) saga SMT s / our cpsat s, median over "
        f"{len(insts)} instances (SMT capped at {args.smt_cap_s:g} s: a lower bound where "
        "capped)", at_least=10.0, min=min(speedups), cpsat_optimal=solved, of=len(insts))}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="6 instances, 1 SMT instance")
    parser.add_argument("--instances", type=int, default=30)
    parser.add_argument("--smt", type=int, default=5, help="SMT instances (0: skip)")
    parser.add_argument("--smt-cap-s", type=float, default=120.0)
    parser.add_argument("--time-limit", type=float, default=10.0, help="auto's time limit")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-edge-sizes", action="store_true",
                        help="a data size per edge (saga's convention) instead of per task")
    parser.add_argument("--saga-python", help="python of the saga venv")
    parser.add_argument("--keep", type=Path, help="write instances and saga results here")
    parser.add_argument("--verbose", action="store_true", help="progress on stderr")
    parser.add_argument("--record", action="store_true",
                        help="write the figures to bench/results/compare_saga.json")
    args = parser.parse_args(argv)
    recording = Recording.start(__file__, args.quick, argv) if args.record else None
    if args.quick:
        args.instances, args.smt = min(args.instances, 6), min(args.smt, 1)

    saga_py = find_saga_python(args.saga_python)
    if saga_py is None:
        print(setup_hint())
        return 0

    def log(msg: str) -> None:
        if args.verbose:
            print(msg, file=sys.stderr, flush=True)

    print(f"planner vs saga: {platform.node()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M')}; seed {args.seed}; "
          f"data sizes per {'edge' if args.per_edge_sizes else 'task'}")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="saga-bench-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            figures = bench_heuristics(saga_py, args, workdir, log) if args.instances else {}
            if args.smt > 0:
                figures.update(bench_smt(saga_py, args, workdir, log))
        except SagaFailed as err:
            print(f"error: saga failed: {err}", file=sys.stderr)
            return 1
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")
    if recording is not None:
        for name, figure in figures.items():
            recording.add(name, figure)
        recording.context["saga"] = saga_version(saga_py)
        recording.write()
    return 0


def saga_version(python: str) -> str:
    """saga's version and its Python's, as the saga venv reports them."""
    code = ("import platform; from importlib.metadata import version; "
            "print(f\"anrg-saga {version('anrg-saga')} on Python {platform.python_version()}\")")
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip() or f"unknown ({done.stderr.strip()[-200:]})"


if __name__ == "__main__":
    raise SystemExit(main())
