"""PipeDream's profiles: planner's pipeline plans against PipeDream's and torchgpipe's splits.

    python bench/bench_pipedream.py              # 8 profiles x 4 and 8 workers (4-5 min)
    python bench/bench_pipedream.py --quick      # the same without `search` (about 3 min)
    PIPEDREAM_SRC=path/to/pipedream python bench/bench_pipedream.py --record

The table issues 38 and 39 are judged by. Profiles: PipeDream's profiler outputs
(`../shared/datasets/pipedream/*/<model>/graph.txt`, or the folder in `$PIPEDREAM_PROFILES`;
skipped with a reason when absent), imported by planner's own `import pipedream --training`,
their `Input` layers' time zeroed first as PipeDream's optimizer zeroes it (`--keep-inputs`:
as profiled; alexnet's is 636 ms of an 85 ms model). Cluster: 4 or 8 identical workers,
every pair linked at 1 GB/s with no latency (PipeDream's flat `-b 1000000000`), 1 TiB each
so that memory shapes no split (PipeDream's optimizer runs without its memory
constraint), the profile's times as measured (`speed 1`). Plan: `objective pipeline`,
8 micro-batches, `schedule 1f1b`.

Every split is judged alike: `planner.pipeline.schedule.run` on its placement (the
simulated iteration of 8 micro-batches), so the columns differ only in where they cut.
A split's stages are counted as the judge counts them: maximal runs of consecutive
pipeline units on one device, so a split that is contiguous in PipeDream's order but not
in planner's unit order (parallel branches) shows more stages than workers.

- **PipeDream**: PipeDream's own optimizer (`optimizer/optimizer_graph_hierarchical.py`
  of github:msr-fiddle/pipedream, run from the checkout named by `$PIPEDREAM_SRC`, never
  copied here) with `--straight_pipeline -n N -b 1000000000
  --activation_compression_ratio 1 -o DIR` (without a ratio its DP ignores activation
  transfers; `--pipedream-compression none` runs it so); its stage of each layer
  (`stage_id=` in `DIR/gpus=N.txt`) is the device of the layer's forward and backward op.
  Layers its output leaves out (the `__getitem__` sinks it drops) go with their producers.
  inception_v3 is first compressed by its `Graph.compress_branches` (its README: the
  optimizer does not work on Inception's branches otherwise), and a compressed node's
  stage maps back to the layers it merged. With `--hybrid` the same run without
  `--straight_pipeline` gives its hybrid (replicated) configuration, printed per case
  and with `--record` written to `bench/results/hybrid/pipedream.json` (each stage's
  layers and replicas; issue 39; minutes more). The script runs under
  this Python with three shims: a `graphviz` module that draws nothing (`-o` draws the
  graph), `xrange = range` for its Python 2 remnants, and its layers hashed by name under
  `PYTHONHASHSEED=0` (they hash by address, which orders its float sums and so breaks its
  ties differently from run to run: resnet18/8 gave 3 different splits in 4 runs, from
  9.5% faster than pipedp to 17.7% slower). `--pipedream-seeds K` shows the best of its
  answers under seeds 0..K-1 (a note gives their range). Without `$PIPEDREAM_SRC` the
  column says why it is empty.
- **torchgpipe**: torchgpipe's `balance_by_time` idea on the layer sequence (planner's
  pipeline units in order, each its forward+backward time): the N contiguous blocks whose
  largest block time is the least (exact, by dynamic programming), ties broken by the
  least sum of squared block times (torchgpipe's own `blockpartition` minimises the
  variance, a heuristic).
- **uniform**, **pipedp**, **auto**, **search** (`--time-limit 10`, left out by `--quick`):
  planner's algorithms, with their wall time to plan.
- **best <= both**: whether the faster of pipedp and auto iterates no slower than both
  PipeDream's and torchgpipe's splits (`n/a` without PipeDream's column).

The summary line counts the cases where PipeDream's split iterates faster than planner's
best (pipedp, auto, search), and by how much (PipeDream's iteration against the best).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from recording import Recording, spread, value

import planner
from planner.algorithms import Options, run
from planner.model import Pipeline, Problem
from planner.pipeline import schedule
from planner.pipeline.units import units

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / ".." / "shared" / "datasets" / "pipedream"
MODELS = ("vgg16", "resnet18", "resnet50", "squeezenet1_0", "alexnet", "gnmt", "gnmt_large",
          "inception_v3")
WORKERS = (4, 8)
PIPELINE = Pipeline(8, "1f1b")
BANDWIDTH = 1e9  # bytes/s: PipeDream's `-b 1000000000`, planner's `1 GB/s`
#: PipeDream's `--activation_compression_ratio`: its DP counts the activation transfers
#: only when given one (1: uncompressed; `--pipedream-compression none` leaves it out)
COMPRESSION = "1"


@dataclass(frozen=True)
class Settings:
    """How the benchmark runs (its command-line options)."""

    quick: bool = False
    #: zero the `Input` layers' time, as PipeDream's optimizer does (else as profiled)
    zero_inputs: bool = True
    #: PipeDream's `--activation_compression_ratio`, or None to leave it out
    compression: str | None = COMPRESSION
    #: also run PipeDream's optimizer without `--straight_pipeline` (its hybrid layout)
    hybrid: bool = False
    #: PipeDream's column: the best of its answers under hash seeds 0 .. seeds - 1
    seeds: int = 1
SEARCH_LIMIT_S = 10.0
#: profiles whose branches PipeDream's optimizer needs compressed first (its README)
COMPRESSED = ("inception_v3",)
#: not a recording (bench/results/*.json are): one folder down
HYBRID_JSON = ROOT / "bench" / "results" / "hybrid" / "pipedream.json"

CLUSTER = """
cluster flat{n} {{
  device w[0..{last}] {{ memory 1 TiB; speed 1 }}
  link w[0..{last}] <-> w[0..{last}] {{ bandwidth 1 GB/s  latency 0 us }}
}}
plan {model}_{n} {{
  graph {model}
  cluster flat{n}
  objective pipeline
  microbatches {mb}
  schedule {schedule}
}}
"""

#: runs PipeDream's code from its checkout: argv = src, mode, args...; the shims are in
#: the module docstring; nothing of PipeDream's is copied here
DRIVER = textwrap.dedent('''
    import builtins, json, os, runpy, sys, types
    src, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    builtins.xrange = range  # Python 2 remnants
    stub = types.ModuleType("graphviz")

    class Digraph:
        def node(self, *a, **k): pass
        def edge(self, *a, **k): pass
        def render(self, *a, **k): pass

    stub.Digraph = Digraph
    sys.modules["graphviz"] = stub
    os.chdir(os.path.join(src, "optimizer"))
    sys.path[:0] = [os.path.join(src, "optimizer"), src]
    import graph
    # its sets of layers (hashed by address) order its float sums and so its ties: hashed
    # by name under a fixed PYTHONHASHSEED, one profile gives one answer
    graph.Node.__hash__ = lambda self: hash(self.node_id)
    if mode == "compress":  # args: graph.txt, out graph.txt, out members.json
        gr = graph.Graph.from_str(open(args[0]).read())
        helper = graph.Graph.compress_branch_helper
        merged = {}

        def recording(self, node, new_id):
            new, last = helper(self, node, new_id)
            if new is not None and new is not node:
                chain, at = [node.node_id], node
                while at is not last and at.node_id in self.edges:
                    at = self.edges[at.node_id][0]
                    chain.append(at.node_id)
                merged[new.node_id] = chain
            return new, last

        graph.Graph.compress_branch_helper = recording
        out = gr.compress_branches()
        open(args[1], "w").write(str(out))
        json.dump(merged, open(args[2], "w"))
    else:  # args: the optimizer's command line
        script = os.path.join(src, "optimizer", "optimizer_graph_hierarchical.py")
        sys.argv = [script] + args
        runpy.run_path(script, run_name="__main__")
''')
_STAGE = re.compile(r"^(\S+) -- .* -- stage_id=(\d+)\s*$")
_CONFIG = re.compile(r"^\((\d+), (\d+)\) (\S+) (\d+)\s*$")


@dataclass
class Case:
    """One row: a profile on N workers, and each column's figures."""

    model: str
    workers: int
    iteration_s: dict[str, float] = field(default_factory=dict)
    stages: dict[str, int] = field(default_factory=dict)
    planning_s: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    hybrid: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        return f"{self.model}/{self.workers}"


# ---- the profiles and planner's problems ---------------------------------------------------


def profile_dir() -> Path:
    """Where the profiles are: `$PIPEDREAM_PROFILES`, else ../shared/datasets/pipedream."""
    given = os.environ.get("PIPEDREAM_PROFILES")
    return Path(given) if given else PROFILES


def profile(model: str, where: Path | None = None) -> Path | None:
    """`model`'s graph.txt (under any task folder), or None."""
    found = sorted((where or profile_dir()).glob(f"*/{model}/graph.txt"))
    return found[0] if found else None


def zero_inputs(graph: Path, tmp: Path) -> Path:
    """A copy of `graph` whose `Input` layers take no time, as PipeDream's optimizer
    treats them (it zeroes their time and sizes and puts them on the first stage)."""
    out = tmp / f"{graph.parent.name}_inputs_zeroed.txt"
    lines = []
    for line in graph.read_text().splitlines():
        parts = line.split(" -- ")
        if not line.startswith("\t") and len(parts) >= 3 and parts[1].startswith("Input"):
            parts[2] = re.sub(r"forward_compute_time=[^,]*", "forward_compute_time=0.000",
                              parts[2])
            line = " -- ".join(parts)
        lines.append(line)
    out.write_text("\n".join(lines) + "\n")
    return out


def spec(model: str, graph: Path, tmp: Path, workers: Sequence[int] = WORKERS,
         zero: bool = True) -> Path:
    """planner's own import of `graph` (training; its `Input` layers zeroed with `zero`),
    with a flat cluster and a plan per N."""
    out = tmp / f"{model}.plan"
    if zero:
        graph = zero_inputs(graph, tmp)
    subprocess.run([sys.executable, "-m", "planner", "import", "pipedream", str(graph),
                    "--training", "--name", model, "-o", str(out)],
                   check=True, capture_output=True, cwd=ROOT)
    extra = "".join(CLUSTER.format(n=n, last=n - 1, model=model, mb=PIPELINE.microbatches,
                                   schedule=PIPELINE.schedule) for n in workers)
    out.write_text(out.read_text() + extra)
    return out


def problem(path: Path, model: str, workers: int) -> Problem:
    return planner.load(path).plan(f"{model}_{workers}")


def placement_of_layers(problem: Problem, stage_of: Mapping[str, int]) -> list[int]:
    """Each op on the device of its layer's stage (`nodeK` and `nodeK.bwd` alike)."""
    out = []
    for op in problem.graph.ops:
        layer = op.name.removesuffix(".bwd")
        if layer not in stage_of:
            raise KeyError(f"no stage for layer {layer}")
        out.append(stage_of[layer])
    return out


def iteration(problem: Problem, placement: Sequence[int]) -> tuple[float, int]:
    """The judge: the simulated iteration of `placement`, and its number of stages."""
    ran = schedule.run(problem, placement, problem.pipeline or PIPELINE)
    return ran.iteration_s, len(ran.stages)


# ---- torchgpipe's balance by time ------------------------------------------------------------


def block_partition(times: Sequence[float], blocks: int) -> list[int]:
    """The boundaries (`blocks + 1` indices, 0 first, len last) of the contiguous
    partition of `times` into `blocks` non-empty blocks whose largest sum is least; ties
    to the least sum of squared block sums. Exact, O(blocks * n^2)."""
    n = len(times)
    if not 1 <= blocks <= n:
        raise ValueError(f"cannot cut {n} items into {blocks} non-empty blocks")
    prefix = [0.0]
    for t in times:
        prefix.append(prefix[-1] + t)

    def size(i: int, j: int) -> float:
        return prefix[j] - prefix[i]

    inf = float("inf")
    # largest[k][j]: least largest block over partitions of times[:j] into k blocks
    largest = [[inf] * (n + 1) for _ in range(blocks + 1)]
    largest[0][0] = 0.0
    for k in range(1, blocks + 1):
        for j in range(k, n + 1):
            largest[k][j] = min(max(largest[k - 1][i], size(i, j)) for i in range(k - 1, j))
    cap = largest[blocks][n] * (1 + 1e-12)
    # squares[k][j]: least sum of squares with every block within the cap; cut[k][j] its i
    squares = [[inf] * (n + 1) for _ in range(blocks + 1)]
    cut = [[0] * (n + 1) for _ in range(blocks + 1)]
    squares[0][0] = 0.0
    for k in range(1, blocks + 1):
        for j in range(k, n + 1):
            for i in range(k - 1, j):
                s = size(i, j)
                if s <= cap and squares[k - 1][i] + s * s < squares[k][j]:
                    squares[k][j], cut[k][j] = squares[k - 1][i] + s * s, i
    bounds = [n]
    for k in range(blocks, 0, -1):
        bounds.append(cut[k][bounds[-1]])
    return bounds[::-1]


def torchgpipe_placement(problem: Problem, workers: int) -> list[int]:
    """Block k of the units' balance by time on device k."""
    u = units(problem)
    prefix = u.compute_prefix[0]
    times = [float(prefix[x + 1] - prefix[x]) for x in range(u.count)]
    bounds = block_partition(times, min(workers, u.count))
    placement = [0] * len(problem.graph.ops)
    for k in range(len(bounds) - 1):
        for x in range(bounds[k], bounds[k + 1]):
            for op in u.members[x]:
                placement[op] = k
    return placement


# ---- PipeDream's optimizer -------------------------------------------------------------------


def pipedream_source() -> Path | None:
    given = os.environ.get("PIPEDREAM_SRC")
    return Path(given) if given else None


def _driver(src: Path, tmp: Path, mode: str, args: Sequence[str], seed: int = 0) -> str:
    script = tmp / "pipedream_driver.py"
    script.write_text(DRIVER)
    # its layers hash by name (DRIVER): the seed fixes how it breaks its ties
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run([sys.executable, str(script), str(src.resolve()), mode, *args],
                          capture_output=True, text=True, cwd=tmp, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"PipeDream's {mode} failed: {done.stderr.strip()[-800:]}")
    return done.stdout


def pipedream_graph(src: Path, model: str, graph: Path, tmp: Path
                    ) -> tuple[Path, dict[str, list[str]]]:
    """The graph PipeDream's optimizer reads (compressed for `COMPRESSED`) and, per
    compressed node, the layers it merged."""
    if model not in COMPRESSED:
        return graph, {}
    out, members = tmp / f"{model}_compressed.txt", tmp / f"{model}_members.json"
    _driver(src, tmp, "compress", [str(graph), str(out), str(members)])
    merged: dict[str, list[str]] = json.loads(members.read_text())
    return out, merged


def pipedream_split(src: Path, graph: Path, merged: Mapping[str, list[str]], workers: int,
                    tmp: Path, straight: bool = True, compression: str | None = COMPRESSION,
                    seed: int = 0) -> tuple[dict[str, int], str]:
    """PipeDream's stage of each of its layers (compressed nodes expanded), and what the
    optimizer printed (its ties broken as hash seed `seed` orders its sets)."""
    out = tmp / f"pd_{graph.stem}_{workers}_{'straight' if straight else 'hybrid'}"
    out.mkdir(exist_ok=True)
    args = ["-n", str(workers), "-f", str(graph.resolve()), "-b", f"{BANDWIDTH:.0f}",
            "-o", str(out), *(["--straight_pipeline"] if straight else []),
            *(["--activation_compression_ratio", compression] if compression else [])]
    printed = _driver(src, tmp, "optimize", args, seed)
    return read_stages(out / f"gpus={workers}.txt", merged), printed


def read_stages(path: Path, merged: Mapping[str, list[str]] = MappingProxyType({})
                ) -> dict[str, int]:
    """The `stage_id=` of each layer in PipeDream's output graph `path`, a compressed
    node's stage given to each layer it merged (`merged`)."""
    stage_of: dict[str, int] = {}
    for line in path.read_text().splitlines():
        m = _STAGE.match(line)
        if m:
            for layer in merged.get(m.group(1), [m.group(1)]):
                stage_of[layer] = int(m.group(2))
    return stage_of


def complete(stage_of: dict[str, int], graph: Path) -> dict[str, int]:
    """`stage_of` with each layer PipeDream left out on its producers' latest stage."""
    preds: dict[str, list[str]] = {}
    names: list[str] = []
    for line in graph.read_text().splitlines():
        if line.startswith("\t"):
            a, b = line.strip().split(" -- ")
            preds.setdefault(b, []).append(a)
        elif line.strip():
            names.append(line.split(" -- ")[0])
    out = dict(stage_of)
    pending = [n for n in names if n not in out]
    while pending:
        left = []
        for n in pending:
            ps = preds.get(n, [])
            if all(p in out for p in ps):
                out[n] = max((out[p] for p in ps), default=0)
            else:
                left.append(n)
        if len(left) == len(pending):
            raise ValueError(f"layers without a stage: {left[:5]}")
        pending = left
    return out


def hybrid_layout(printed: str, stage_of: Mapping[str, int]) -> dict[str, Any]:
    """PipeDream's hybrid configuration: per stage its layers' count, replicas and
    compute time (its own figures), and its predicted time per stage."""
    stages = [{"states": [int(m.group(1)), int(m.group(2))], "compute_s": float(m.group(3)),
               "replicas": int(m.group(4))}
              for m in map(_CONFIG.match, printed.splitlines()) if m]
    counts: dict[int, int] = {}
    for s in stage_of.values():
        counts[s] = counts.get(s, 0) + 1
    for k, stage in enumerate(stages):
        stage["layers"] = counts.get(k, 0)
        stage["layer_names"] = sorted((n for n, s in stage_of.items() if s == k),
                                      key=lambda n: (len(n), n))
    m = re.search(r"Time per stage in pipeline: (\S+)", printed)
    return {"stages": stages, "time_per_stage_s": float(m.group(1)) if m else None}


def describe(hybrid: Mapping[str, Any]) -> str:
    """One line: a hybrid layout's stages (layers x replicas) and PipeDream's period."""
    stages = ", ".join(f"{st['layers']} layers x {st['replicas']}" for st in hybrid["stages"])
    period = hybrid["time_per_stage_s"]
    return (f"[{stages}], {period * 1e3:.1f} ms per stage by its formula"
            if period is not None else f"[{stages}]")


# ---- one case --------------------------------------------------------------------------------


def _timed(case: Case, name: str, prob: Problem, algo: str,
           options: Options | None = None) -> None:
    fresh = dataclasses.replace(prob)  # nothing cached from another column
    sol = run(algo, fresh, options)
    case.planning_s[name] = sol.planning_s
    case.iteration_s[name], case.stages[name] = iteration(prob, sol.plan.placement)


def measure(case: Case, prob: Problem, settings: Settings,
            pipedream: Callable[[int], dict[str, int]] | str) -> Case:
    """Fill `case`'s columns (`pipedream`: its split's layer stages under a hash seed, or
    why there is none)."""
    if isinstance(pipedream, str):
        case.notes.append(f"PipeDream: {pipedream}")
    else:
        _measure_pipedream(case, prob, settings, pipedream)
    case.iteration_s["torchgpipe"], case.stages["torchgpipe"] = iteration(
        prob, torchgpipe_placement(prob, case.workers))
    for algo in ("uniform", "pipedp", "auto"):
        _timed(case, algo, prob, algo)
    if not settings.quick:
        _timed(case, "search", prob, "search", Options(time_limit_s=SEARCH_LIMIT_S))
    return case


def _measure_pipedream(case: Case, prob: Problem, settings: Settings,
                       pipedream: Callable[[int], dict[str, int]]) -> None:
    """PipeDream's column: the best of its answers under `settings.seeds` hash seeds."""
    runs = []
    for seed in range(settings.seeds):
        try:
            placement = placement_of_layers(prob, pipedream(seed))
        except (RuntimeError, KeyError, ValueError, OSError) as err:
            case.notes.append(f"PipeDream (seed {seed}): {err}")
            continue
        runs.append(schedule.run(prob, placement, prob.pipeline or PIPELINE))
    if not runs:
        return
    ran = min(runs, key=lambda r: r.iteration_s)
    case.iteration_s["pipedream"], case.stages["pipedream"] = ran.iteration_s, len(ran.stages)
    if ran.note:
        case.notes.append(f"PipeDream's split: {ran.note}")
    if len(runs) > 1:
        got = sorted({round(r.iteration_s * 1e3, 1) for r in runs})
        case.notes.append(f"PipeDream over {len(runs)} hash seeds: {len(got)} distinct "
                          f"iterations, {got[0]}-{got[-1]} ms (the best is shown)")


def best(case: Case, names: Sequence[str] = ("pipedp", "auto", "search")) -> float:
    return min(case.iteration_s[n] for n in names if n in case.iteration_s)


def verdict(case: Case) -> str:
    """Whether planner's best of pipedp and auto is <= both PipeDream's and torchgpipe's."""
    if "pipedream" not in case.iteration_s:
        return "n/a"
    mine = best(case, ("pipedp", "auto"))
    rivals = (case.iteration_s["pipedream"], case.iteration_s["torchgpipe"])
    return "yes" if all(mine <= r * (1 + 1e-9) for r in rivals) else "no"


# ---- the table -------------------------------------------------------------------------------

COLUMNS = ("pipedream", "torchgpipe", "uniform", "pipedp", "auto", "search")
TIMED = ("pipedp", "auto", "search")


def header(quick: bool) -> list[str]:
    cols = [c for c in COLUMNS if not (quick and c == "search")]
    timed = [c for c in TIMED if c in cols]
    return ["profile/N", *(f"{c} ms (stages)" for c in cols),
            *(f"{c} plan s" for c in timed), "best <= both"]


def row(case: Case, quick: bool) -> list[str]:
    cols = [c for c in COLUMNS if not (quick and c == "search")]
    cells = [case.label]
    for c in cols:
        t = case.iteration_s.get(c)
        cells.append("n/a" if t is None else f"{t * 1e3:.1f} ({case.stages[c]})")
    cells += [f"{case.planning_s[c]:.2f}" for c in TIMED if c in cols]
    cells.append(verdict(case))
    return cells


def summary(cases: Sequence[Case]) -> str:
    """In how many cases PipeDream's straight split iterates faster than planner's best,
    and by how much (PipeDream's iteration against planner's best, %)."""
    delta = gains(cases)
    if not cases:
        return "summary: no cases"
    if not delta:
        return "summary: no PipeDream column (the notes above say why)"
    searched = any("search" in c.iteration_s for c in cases)
    lost = {k: v for k, v in delta.items() if v < -1e-7}
    line = (f"summary: PipeDream's straight split iterates faster than planner's best "
            f"(pipedp, auto{', search' if searched else ''}) in {len(lost)} of {len(delta)} "
            "cases")
    if lost:
        line += (f", by {min(-v for v in lost.values()):.1f}-"
                 f"{max(-v for v in lost.values()):.1f}% ("
                 + ", ".join(f"{k} {v:+.1f}%" for k, v in lost.items()) + ")")
    return line


def gains(cases: Sequence[Case]) -> dict[str, float]:
    """Per case: PipeDream's iteration against planner's best, in % (negative where
    PipeDream's is shorter)."""
    return {c.label: (c.iteration_s["pipedream"] / best(c) - 1) * 100 for c in cases
            if "pipedream" in c.iteration_s}


# ---- main ------------------------------------------------------------------------------------


def _pipedream_why(src: Path | None) -> str | None:
    """Why PipeDream's column is empty, or None when its optimizer can run."""
    if src is None:
        return ("not run: set PIPEDREAM_SRC to a checkout of github:msr-fiddle/pipedream "
                "(fetched at benchmark time, never copied here)")
    if not (src / "optimizer" / "optimizer_graph_hierarchical.py").is_file():
        return f"not run: {src} holds no optimizer/optimizer_graph_hierarchical.py"
    return None


def model_cases(model: str, graph: Path, workers: Sequence[int], settings: Settings,
                tmp: Path) -> list[Case]:
    """`model`'s rows, one per worker count."""
    path = spec(model, graph, tmp, workers, settings.zero_inputs)
    src = pipedream_source()
    why = _pipedream_why(src)
    pd_graph, merged = graph, {}
    if src is not None and why is None:
        try:
            pd_graph, merged = pipedream_graph(src, model, graph, tmp)
        except RuntimeError as err:
            why = str(err)
    out = []
    for n in workers:
        case = Case(model, n)
        prob = problem(path, model, n)

        def straight(seed: int, n: int = n) -> dict[str, int]:
            assert src is not None
            return complete(pipedream_split(src, pd_graph, merged, n, tmp,
                                            compression=settings.compression, seed=seed)[0],
                            graph)

        measure(case, prob, settings, why if why is not None else straight)
        if settings.hybrid and src is not None and why is None:
            stage_of, printed = pipedream_split(src, pd_graph, merged, n, tmp, straight=False,
                                                compression=settings.compression)
            case.hybrid = hybrid_layout(printed, complete(stage_of, graph))
            case.notes.append("PipeDream's hybrid: " + describe(case.hybrid))
        out.append(case)
    return out


def cases(models: Sequence[str], workers: Sequence[int], settings: Settings,
          tmp: Path) -> list[Case]:
    """Every row, printed as it is measured."""
    where = profile_dir()
    if not where.is_dir():
        print(f"skipped: {where} is absent (PipeDream's profiles: ../shared/datasets/pipedream "
              "next to the repository, or set PIPEDREAM_PROFILES)")
        return []
    out = []
    for model in models:
        graph = profile(model, where)
        if graph is None:
            print(f"{model}: skipped, no {where}/*/{model}/graph.txt")
            continue
        for case in model_cases(model, graph, workers, settings, tmp):
            out.append(case)
            print("| " + " | ".join(row(case, settings.quick)) + " |", flush=True)
            for note in case.notes:
                print(f"  {case.label}: {note}")
    return out


def record(rec: Recording, found: Sequence[Case], settings: Settings) -> None:
    for name in COLUMNS:
        values = {c.label: c.iteration_s[name] for c in found if name in c.iteration_s}
        if values:
            rec.add(f"iteration_{name}", spread(values, "s", f"simulated iteration of the "
                                                f"{name} split, per profile/workers"))
    for name in TIMED:
        values = {c.label: c.planning_s[name] for c in found if name in c.planning_s}
        if values:
            rec.add(f"plan_time_{name}", spread(values, "s", f"wall time to plan ({name})"))
    judged = gains(found)
    if judged:
        rec.add("pipedream_faster", value(sum(v < -1e-7 for v in judged.values()), "cases",
                                          f"cases (of {len(judged)}) where PipeDream's "
                                          "straight split iterates faster than planner's "
                                          "best", at_most=0))
        rec.add("pipedream_vs_best", spread(judged, "%", "PipeDream's straight split's "
                                            "iteration against planner's best (negative: "
                                            "PipeDream's is shorter)"))
    rec.context.update({"microbatches": PIPELINE.microbatches, "schedule": PIPELINE.schedule,
                        "bandwidth_bytes_per_s": BANDWIDTH,
                        "search_time_limit_s": None if settings.quick else SEARCH_LIMIT_S,
                        "inputs_zeroed": settings.zero_inputs,
                        "pipedream_compression": settings.compression,
                        "pipedream_seeds": settings.seeds,
                        "notes": {c.label: c.notes for c in found if c.notes}})
    rec.write()


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="leave out `search`")
    ap.add_argument("--record", action="store_true",
                    help="write bench/results/bench_pipedream.json")
    ap.add_argument("--hybrid", action="store_true",
                    help="also run PipeDream's optimizer with replication and print its "
                         "layouts (with --record, also to bench/results/hybrid/"
                         "pipedream.json; minutes more)")
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS,
                    metavar="MODEL", help="profiles to run (default: all eight)")
    ap.add_argument("--workers", nargs="+", type=int, default=list(WORKERS),
                    help="worker counts (default: 4 8)")
    ap.add_argument("--keep-inputs", action="store_true",
                    help="keep the `Input` layers' profiled time in planner's graph "
                         "(default: zeroed, as PipeDream's optimizer does)")
    ap.add_argument("--pipedream-compression", default=COMPRESSION, metavar="RATIO",
                    help="PipeDream's --activation_compression_ratio (default 1: its DP "
                         "counts the activation transfers; `none`: left out, it then "
                         "ignores them)")
    ap.add_argument("--pipedream-seeds", type=int, default=1, metavar="K",
                    help="PipeDream's column: the best of its answers under hash seeds "
                         "0..K-1 (its ties; default 1: seed 0 alone)")
    args = ap.parse_args(argv)
    settings = Settings(args.quick, not args.keep_inputs,
                        None if args.pipedream_compression == "none"
                        else args.pipedream_compression, args.hybrid, args.pipedream_seeds)
    rec = Recording.start(__file__, args.quick, argv)
    print(f"objective pipeline, {PIPELINE.microbatches} micro-batches, {PIPELINE.schedule}; "
          f"flat workers at 1 GB/s; Input layers "
          f"{'zeroed' if settings.zero_inputs else 'as profiled'}; PipeDream's "
          f"activation_compression_ratio {settings.compression}; simulated iteration in ms "
          "(stages); plan s = wall time to plan")
    cols = header(args.quick)
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    with tempfile.TemporaryDirectory() as tmp:
        found = cases(args.models, args.workers, settings, Path(tmp))
    print(summary(found))
    if args.record and found:
        record(rec, found, settings)
    hybrids = {c.label: c.hybrid for c in found if c.hybrid is not None}
    if hybrids and args.record:
        HYBRID_JSON.parent.mkdir(parents=True, exist_ok=True)
        HYBRID_JSON.write_text(json.dumps(hybrids, indent=1) + "\n")
        print(f"wrote PipeDream's hybrid configurations to {HYBRID_JSON.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
