"""planner's m-ETF and m-SCT against Baechi's own, side by side on Baechi's GNMT graph.

    python bench/bench_baechi.py --baechi PATH      # 3 interleaved rounds (about 2 minutes)
    BAECHI_SRC=PATH python bench/bench_baechi.py --quick   # one round
    python bench/bench_baechi.py                    # no Baechi: planner's figures only
    python bench/bench_baechi.py --baechi PATH --record   # also write README's figures

PATH is a checkout of Baechi (github.com/beomyeol/baechi; the directory holding `placer/`
and `utils/`). Baechi's code is never copied into this repository: the benchmark imports it
from PATH (`--baechi`, else the environment variable `BAECHI_SRC`) and, without it, prints
"Baechi not available (set BAECHI_SRC ...)" and planner's figures alone.

The graph: ../shared/datasets/baechi-gnmt/gnmt_baechi.json (2,494 ops, 4,150 edges), the
GNMT graph Baechi's `PlacementGraphGenerator` built from its profile, under Baechi's own cost
model: 4 GPUs of 8 GiB, a tensor costs `int(round(0.0001754 * bytes + 134))` µs, one
channel per device. planner reads it with `planner.io.baechi.load_baechi` (4 x 8 GiB,
contention `device`, colocation groups kept). Baechi gets the same JSON as the networkx
graph its placers read, built here the way `placer_lib.create_placement_graph` and the
default `tf` grouper leave it: node `i` = the JSON's op `i` with `id`, `name`, `weight`
(µs), `temporary_memory`, `persistent_memory` (the JSON's `params_bytes`), `output_memory`
(`[output_bytes]`), `colocation_group` (the JSON's TF colocation group, else `loc:@NAME` as
TensorFlow names an op's own group) and `topo_order`; edge `k` with `id`, `tensor` (one
entry per tensor, each costed by `get_comm_cost`) and `weight` (their sum); the device graph
as `placer_lib.create_device_graph` makes it (`memory_limit` 8 GiB). The placers run as
Baechi's `DefaultPlacer` calls them: `m_etf(g, d, colocation=True)` and
`m_sct(g, d, threshold=0.1, colocation=True)` (0.1 is Baechi's `--sct_threshold` default).

What is timed: CPU seconds (`time.process_time`) of Baechi's placement call alone
(`m_etf(...)` / `m_sct(...)`, which deep-copy their input and run the placer; building the
graph is not timed) against CPU seconds of `planner.algorithms.run(name, problem)` (the
`Solution.planning_s` wall time is shown too); each planner run gets a freshly loaded
`Problem` so that nothing cached by an earlier run is reused. One round runs planner metf,
Baechi m-ETF, planner msct, Baechi m-SCT, in that order; `gc.collect()` before every timed
call keeps one side's garbage off the other's clock. Reported: medians over rounds and the
median of the per-round ratios (Baechi CPU s / planner CPU s), against the target of
150x. planner's algorithm modules are imported and run once, untimed, before the first round;
Baechi's are imported before it but not run (a run costs seconds).

planner runs with its compiled ETF engine (`listsched._engine_kernel`, a numba twin of the
Python engine: the same plans to the bit) loaded before the first round, untimed, as in
any process that plans more than once (`etf.prepare`; loading costs 0.2-0.5 s, so a
one-shot process loads it only for graphs from `etf.KERNEL_MIN_OPS` ops, and GNMT's 2,494
ops run on the Python engine there). Each round also times the same planner run on the
Python engine (`etf.ENGINE = "reference"`), shown in its own columns.

How Baechi is imported, without TensorFlow and without changing Baechi:
- `placer/m_etf.py` and `placer/m_sct.py` are imported directly (not `placer_lib`, which
  imports TensorFlow's grappler and defines TF flags at import). They import
  `placer/placer_utils.py`, which imports `matplotlib.pyplot` and
  `tensorflow.core.framework.attr_value_pb2` at top level, used only by its plotting and TF
  graph helpers (`save_placement_graph`, `transfer_colocation_group`), never by the placers.
  When those packages are not installed, empty stand-in modules are registered under those
  exact names for the duration of the import and removed afterwards (the output says so).
- m-SCT needs `cvxopt` (`pip install cvxopt`); without it only m-ETF runs against Baechi.
  Baechi asks `cvxopt.solvers.lp` for MOSEK (`solver='mosek'`), a commercial solver that
  needs a licence. When MOSEK is not importable, the benchmark routes that call, during the
  m-SCT call only, to cvxopt's own LP solver (`conelp`, the default of `cvxopt.solvers.lp`,
  with its progress printing off) and says so: the same LP, a different solver, so Baechi's
  m-SCT time includes cvxopt's interior-point solve (about 4 of its 12 s here) where
  Baechi's own runs used MOSEK (likely faster: the ratio would be lower with it), and the
  rounded favourite-child edges may differ from MOSEK's.
- Baechi's placer modules log to stderr at INFO; their loggers are set to WARNING.
So a CI job needs: a Baechi checkout (BAECHI_SRC), networkx (in planner's `test` extra) and
`cvxopt` for m-SCT; nothing else.

`--record` writes the table's figures to bench/results/bench_baechi.json for README's
table (only with Baechi: without it there is no comparison to record), with Baechi's
commit and the notes above (stand-ins, the LP solver).

Each placement is also re-timed in planner's simulator (`planner.simulate.simulate` with
`Plan(placement)`, Baechi's op -> device map taken by op name, the simulator choosing the
order): the makespan columns compare the placements under one set of rules.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import importlib.util
import json
import logging
import os
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_algorithms import table  # this folder is the script's first sys.path entry
from recording import Recording, value

from planner.algorithms import Options, get, run
from planner.algorithms.listsched import etf
from planner.io.baechi import load_baechi
from planner.model import Problem
from planner.plan import Plan
from planner.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT / "../shared/datasets/baechi-gnmt/gnmt_baechi.json"
TARGET = 150.0
GIB = 1024**3
DEVICES = 4
MEMORY_BYTES = 8 * GIB
#: Baechi's GNMT cost model (train.py's --comm_cost_coeffs default): µs = coef * B + intercept
COMM_COEF, COMM_INTERCEPT = 0.0001754, 134
#: Baechi's --sct_threshold default (placer_lib.py)
SCT_THRESHOLD = 0.1
#: (planner algorithm, Baechi placer, label)
PAIRS = (("metf", "m_etf", "m-ETF"), ("msct", "m_sct", "m-SCT"))
#: modules placer_utils imports at top level but the placers never use
STAND_INS = ("matplotlib", "matplotlib.pyplot", "tensorflow", "tensorflow.core",
             "tensorflow.core.framework", "tensorflow.core.framework.attr_value_pb2")
#: Baechi's module loggers (utils/logger.py names them after the file)
BAECHI_LOGGERS = ("m_etf", "m_sct", "placer_utils", "device")


# --------------------------------------------------------------------------- Baechi's side

@dataclass
class Baechi:
    """Baechi's placers, imported from a checkout, and what it took to import them."""

    src: Path
    placers: dict[str, Callable[..., Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # placer -> why it cannot run
    mosek: bool = False


def baechi_source(arg: str | None) -> Path | None:
    """The Baechi checkout from `--baechi` or BAECHI_SRC, or None when neither is set."""
    value = arg or os.environ.get("BAECHI_SRC")
    return Path(value).expanduser().resolve() if value else None


@contextlib.contextmanager
def _stand_ins(names: Sequence[str]) -> Iterator[list[str]]:
    """Register empty modules for those of `names` whose top-level package is not
    installed; remove them afterwards. Yields the names registered."""
    absent = {n.split(".")[0] for n in names
              if n.split(".")[0] not in sys.modules
              and importlib.util.find_spec(n.split(".")[0]) is None}
    added = [n for n in names if n.split(".")[0] in absent]
    for name in added:
        module = types.ModuleType(name)
        module.__doc__ = "stand-in registered by bench/bench_baechi.py while importing Baechi"
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
    try:
        yield added
    finally:
        for name in added:
            if sys.modules.get(name) is not None and getattr(
                    sys.modules[name], "__doc__", "").startswith("stand-in registered"):
                del sys.modules[name]


def load_placers(src: Path) -> Baechi:
    """Import Baechi's m-ETF and m-SCT from the checkout `src` (see the module doc).

    Raises ImportError with the reason when m-ETF itself cannot be imported."""
    if not (src / "placer" / "m_etf.py").is_file():
        raise ImportError(f"{src} is not a Baechi checkout (no placer/m_etf.py)")
    out = Baechi(src)
    if str(src) not in sys.path:
        sys.path.insert(0, str(src))
    with _stand_ins(STAND_INS) as added:
        module = importlib.import_module("placer.m_etf")
        if not Path(module.__file__ or "").resolve().is_relative_to(src):
            raise ImportError(f"`placer.m_etf` came from {module.__file__}, not from {src}: "
                              "another `placer` package shadows Baechi's")
        out.placers["m_etf"] = module.m_etf
        try:
            out.placers["m_sct"] = importlib.import_module("placer.m_sct").m_sct
        except ImportError as err:
            out.missing["m_sct"] = f"cannot import Baechi's m_sct ({err}; pip install cvxopt)"
    if added:
        tops = sorted({n.split(".")[0] for n in added})
        out.notes.append(f"not installed, so stand-ins while importing Baechi: "
                         f"{', '.join(added)} (placer_utils imports {' and '.join(tops)} "
                         "at top level for helpers the placers never call)")
    for name in BAECHI_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    if "m_sct" in out.placers:
        out.mosek = importlib.util.find_spec("mosek") is not None
        if not out.mosek:
            out.notes.append("MOSEK not installed: Baechi's m-SCT LP (cvxopt.solvers.lp(..., "
                             "solver='mosek')) runs on cvxopt's own solver (conelp)")
    return out


@contextlib.contextmanager
def _lp_without_mosek(active: bool) -> Iterator[None]:
    """While active, route `cvxopt.solvers.lp(..., solver='mosek')` to cvxopt's own solver."""
    if not active:
        yield
        return
    import cvxopt.solvers

    original = cvxopt.solvers.lp

    def lp(*args: Any, solver: str | None = None, **kwargs: Any) -> Any:
        if solver == "mosek":
            solver = None
            kwargs.setdefault("options", {"show_progress": False})
        return original(*args, solver=solver, **kwargs)

    cvxopt.solvers.lp = lp
    try:
        yield
    finally:
        cvxopt.solvers.lp = original


def comm_cost(num_bytes: int) -> int:
    """Baechi's `placer_lib.get_comm_cost` with the GNMT coefficients (µs)."""
    return round(COMM_COEF * num_bytes + COMM_INTERCEPT)


def baechi_graphs(data: dict[str, Any]) -> tuple[Any, Any]:
    """Baechi's op graph and device graph for the dataset (see the module doc)."""
    import networkx as nx

    ops = nx.DiGraph()
    index: dict[str, int] = {}
    for i, o in enumerate(data["ops"]):
        index[o["name"]] = i
        ops.add_node(i, id=i, name=o["name"], weight=max(1, int(o["time_us"])),
                     temporary_memory=int(o["temp_bytes"]),
                     persistent_memory=int(o["params_bytes"]),
                     output_memory=[int(o["output_bytes"])],
                     colocation_group=o["colocation"] or f"loc:@{o['name']}",
                     topo_order=int(o["topo_order"]))
    for k, e in enumerate(data["edges"]):
        tensors = [{"name": t["name"], "weight": comm_cost(int(t["bytes"])),
                    "num_bytes": int(t["bytes"])} for t in e["tensors"]]
        ops.add_edge(index[e["src"]], index[e["dst"]], id=k,
                     weight=sum(t["weight"] for t in tensors), tensor=tensors)
    if ops.number_of_edges() != len(data["edges"]):
        raise ValueError("duplicate edges: Baechi's graph has one edge per op pair")
    devices = nx.Graph()
    for d in range(DEVICES):
        devices.add_node(d, id=d, name=f"/job:localhost/replica:0/task:0/device:GPU:{d}",
                         size=0, memory_limit=MEMORY_BYTES)
    for a in range(DEVICES):
        for b in range(DEVICES):
            devices.add_edge(a, b, weight=0 if a == b else 1)
    return ops, devices


def run_baechi(baechi: Baechi, placer: str, data: dict[str, Any]) -> tuple[float, dict[str, int]]:
    """CPU seconds of one Baechi placement call, and its op name -> device id map."""
    op_graph, device_graph = baechi_graphs(data)
    fn = baechi.placers[placer]
    kwargs: dict[str, Any] = {"colocation": True}
    if placer == "m_sct":
        kwargs["threshold"] = SCT_THRESHOLD
    with _lp_without_mosek(placer == "m_sct" and not baechi.mosek):
        gc.collect()
        t0 = time.process_time()
        placed = fn(op_graph, device_graph, **kwargs)
        cpu = time.process_time() - t0
    return cpu, {d["name"]: d["p"] for _, d in placed.nodes(data=True)}


def placement_plan(problem: Problem, by_name: dict[str, int]) -> Plan:
    """planner's `Plan` for Baechi's op name -> device id map (device i = gpu{i})."""
    return Plan(tuple(by_name[op.name] for op in problem.graph.ops))


# --------------------------------------------------------------------------- planner's side

def load_problem(path: Path = DATASET) -> Problem:
    """The dataset as planner loads it for this comparison (4 x 8 GiB, contention device)."""
    return load_baechi(path, devices=DEVICES, memory_bytes=MEMORY_BYTES)


def run_planner(algorithm: str, path: Path = DATASET, *, engine: str = "auto"
                ) -> tuple[float, float, Plan]:
    """CPU seconds of `planner.algorithms.run` on a freshly loaded problem, its
    `planning_s`, and the plan; `engine`: the list schedulers' engine (`etf.ENGINE`:
    "reference" runs the Python one even when the compiled one is loaded)."""
    problem = load_problem(path)
    saved, etf.ENGINE = etf.ENGINE, engine
    try:
        gc.collect()
        t0 = time.process_time()
        solution = run(algorithm, problem, Options())
        cpu = time.process_time() - t0
    finally:
        etf.ENGINE = saved
    return cpu, solution.planning_s, solution.plan


# --------------------------------------------------------------------------- the benchmark

@dataclass
class Row:
    label: str
    planner_cpu: list[float] = field(default_factory=list)
    planner_wall: list[float] = field(default_factory=list)
    python_cpu: list[float] = field(default_factory=list)  # the Python engine's
    baechi_cpu: list[float] = field(default_factory=list)
    planner_ms: float = float("nan")
    baechi_ms: float = float("nan")
    baechi_feasible: bool | None = None

    @property
    def ratios(self) -> list[float]:
        return [b / p for p, b in zip(self.planner_cpu, self.baechi_cpu, strict=False)]

    @property
    def python_ratios(self) -> list[float]:
        return [b / p for p, b in zip(self.python_cpu, self.baechi_cpu, strict=False)]


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def bench(repeat: int, baechi: Baechi | None, path: Path = DATASET) -> list[Row]:
    """The interleaved rounds; prints progress and returns one row per algorithm pair."""
    data = json.loads(path.read_text(encoding="utf-8")) if baechi else None
    problem = load_problem(path)
    rows = {algo: Row(label) for algo, _, label in PAIRS}
    loaded = etf.prepare()  # the compiled engine, as in any process that plans repeatedly
    print(f"planner's compiled ETF engine loaded in {loaded:.2f} s (untimed)", flush=True)
    for algo, _, _ in PAIRS:  # imports and first-call costs, untimed
        get(algo)
        run_planner(algo, path)
        run_planner(algo, path, engine="reference")
    for r in range(repeat):
        for algo, placer, label in PAIRS:
            row = rows[algo]
            cpu, wall, plan = run_planner(algo, path)
            row.planner_cpu.append(cpu)
            row.planner_wall.append(wall)
            row.python_cpu.append(run_planner(algo, path, engine="reference")[0])
            msg = (f"round {r + 1}/{repeat} {label}: planner {cpu:.3f} s CPU "
                   f"(Python engine {row.python_cpu[-1]:.3f} s)")
            if r == 0:
                row.planner_ms = simulate(problem, plan).makespan_s * 1e3
            if baechi and data is not None and placer in baechi.placers:
                bcpu, by_name = run_baechi(baechi, placer, data)
                row.baechi_cpu.append(bcpu)
                msg += f", Baechi {bcpu:.2f} s CPU ({bcpu / cpu:.0f}x)"
                if r == 0:
                    result = simulate(problem, placement_plan(problem, by_name))
                    row.baechi_ms = result.makespan_s * 1e3
                    row.baechi_feasible = result.feasible
            print(msg, flush=True)
    return [rows[algo] for algo, _, _ in PAIRS]


def report(rows: Sequence[Row], baechi: Baechi | None) -> bool:
    """Print the table and the verdict; True when every measured ratio meets the target."""
    out = []
    ok = True
    for row in rows:
        med_p = statistics.median(row.planner_cpu)
        cells = [row.label, f"{med_p:.3f}", f"{statistics.median(row.planner_wall):.3f}",
                 f"{statistics.median(row.python_cpu):.3f}"]
        if row.baechi_cpu:
            ratio = statistics.median(row.ratios)
            lo, hi = min(row.ratios), max(row.ratios)
            met = ratio >= TARGET
            ok &= met
            cells += [f"{statistics.median(row.baechi_cpu):.2f}",
                      f"{ratio:.0f}x ({lo:.0f}-{hi:.0f})", "yes" if met else "NO",
                      f"{statistics.median(row.python_ratios):.0f}x"]
            feasible = "" if row.baechi_feasible else " (infeasible)"
            cells += [f"{row.planner_ms:.1f}", f"{row.baechi_ms:.1f}{feasible}"]
        else:
            cells += ["-", "-", "-", "-", f"{row.planner_ms:.1f}", "-"]
        out.append(cells)
    print()
    print(table(["algorithm", "planner CPU s", "planner planning_s", "Python engine CPU s",
                 "Baechi CPU s", "ratio (min-max)", f">= {TARGET:.0f}x", "Python engine ratio",
                 "planner ms", "Baechi ms"], out))
    print("CPU s: medians; ratio: median of the per-round ratios Baechi CPU s / planner CPU s "
          "(planner with its compiled ETF engine loaded; 'Python engine': the same run on "
          "the pure-Python engine, what a one-shot process uses on a graph this small); "
          "ms: simulated makespan in planner's simulator (contention device)")
    if baechi is None or not any(r.baechi_cpu for r in rows):
        print(f"target >= {TARGET:.0f}x: not measured (no Baechi)")
        return True
    print(f"target >= {TARGET:.0f}x for m-ETF and m-SCT: {'met' if ok else 'NOT met'}")
    return ok


def record(recording: Recording, rows: Sequence[Row], baechi: Baechi) -> None:
    """The table's figures, per planner algorithm (`metf_ratio`, `msct_baechi_ms`, ...)."""
    rounds = f"{len(rows[0].planner_cpu)} interleaved round(s)"
    for (algo, _, label), row in zip(PAIRS, rows, strict=True):
        recording.add(f"{algo}_planner_cpu_s", value(statistics.median(row.planner_cpu), "s",
                      f"planner {algo}, compiled engine loaded: CPU s, median of {rounds}"))
        recording.add(f"{algo}_python_cpu_s", value(statistics.median(row.python_cpu), "s",
                      f"planner {algo}, Python engine: CPU s, median of {rounds}"))
        recording.add(f"{algo}_planner_ms", value(row.planner_ms, "ms",
                                                  f"planner {algo}: simulated makespan"))
        if not row.baechi_cpu:
            continue
        recording.add(f"{algo}_baechi_cpu_s", value(statistics.median(row.baechi_cpu), "s",
                      f"Baechi's {label}: CPU s, median of {rounds}"))
        recording.add(f"{algo}_ratio", value(
            statistics.median(row.ratios), "×", f"Baechi's {label} CPU s / planner's (compiled "
            f"engine loaded), median of the per-round ratios of {rounds}", at_least=TARGET,
            per_round=row.ratios))
        recording.add(f"{algo}_python_ratio", value(
            statistics.median(row.python_ratios), "×", f"Baechi's {label} CPU s / planner's "
            f"on the Python engine, median of the per-round ratios of {rounds}",
            per_round=row.python_ratios))
        recording.add(f"{algo}_baechi_ms", value(
            row.baechi_ms, "ms", f"Baechi's {label} placement in planner's simulator",
            feasible=row.baechi_feasible))
    recording.context.update(baechi_commit=_commit_of(baechi.src), baechi_notes=baechi.notes,
                             baechi_missing=baechi.missing)


def _commit_of(src: Path) -> str | None:
    """The checkout's commit (None when it is not a git checkout)."""
    done = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baechi", metavar="PATH",
                        help="a Baechi checkout (default: $BAECHI_SRC)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (3)")
    parser.add_argument("--quick", action="store_true", help="one round")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when a measured ratio misses the target")
    parser.add_argument("--record", action="store_true",
                        help="write the figures to bench/results/bench_baechi.json")
    parser.add_argument("--dataset", type=Path, default=DATASET, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    recording = Recording.start(__file__, args.quick, argv) if args.record else None
    repeat = 1 if args.quick else max(1, args.repeat)
    if not args.dataset.is_file():
        print(f"skipped: dataset absent ({args.dataset.resolve()})")
        return 0
    src = baechi_source(args.baechi)
    baechi: Baechi | None = None
    if src is None:
        print("Baechi not available (set BAECHI_SRC or pass --baechi PATH to a checkout of "
              "github.com/beomyeol/baechi): only planner's figures")
    else:
        try:
            baechi = load_placers(src)
        except ImportError as err:
            print(f"Baechi not available ({err}; set BAECHI_SRC or --baechi to a checkout "
                  "of github.com/beomyeol/baechi): only planner's figures")
    if baechi:
        print(f"Baechi from {baechi.src}")
        for note in baechi.notes:
            print(f"note: {note}")
        for placer, why in baechi.missing.items():
            print(f"note: {placer}: {why}")
    print(f"{args.dataset.name}: 4 GPUs x 8 GiB, 134 us + 0.0001754 us/B per tensor, "
          f"contention device; {repeat} interleaved round(s); load average {load_average()}")
    if recording is not None and baechi is None:
        print("nothing to record without Baechi: pass --baechi PATH or set BAECHI_SRC")
        return 1
    rows = bench(repeat, baechi, args.dataset)
    ok = report(rows, baechi)
    print(f"load average after: {load_average()}")
    if recording is not None and baechi is not None:
        record(recording, rows, baechi)
        recording.write()
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
