"""Placement algorithms, registered by name in one ordered table: `ALGORITHMS`.

Every algorithm is one module exposing `place(problem, options) -> Plan | Solution`, and one
`AlgorithmInfo` line below that names the module and declares its capabilities as data:
which `solve` options it takes, the objectives it plans for (`run` refuses the others,
E625), whether it is exact, anytime, a constructive candidate of
`auto`'s portfolio, in `compare`'s default set, its name in prose. The CLI (`--algo` and
its help, which options apply, `compare --algos`), `auto`'s candidates and the fallback
messages all read this table, so adding an algorithm is its module plus one line here.
The table is read without importing any algorithm module: modules are imported lazily on
first use (`AlgorithmInfo.place`), so `planner check` never pays for OR-Tools or Pyomo.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import reprlib
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..errors import Diagnostic, UsageError, did_you_mean
from ..model import Problem
from ..plan import Plan
from .base import AUTO_TIME_LIMIT_S as AUTO_TIME_LIMIT_S
from .base import MAX_SEED, MAX_TIME_LIMIT_S, TUNABLE, AlgorithmInfo, Interrupted, Options, Solution
from .lpsize import lp_seconds_at_most

__all__ = ["ALGORITHMS", "TUNABLE", "AlgorithmInfo", "Options", "Solution", "check_emit",
           "check_objective", "compare_defaults", "completions", "constructive", "display_name",
           "get", "names", "run", "serving", "taking"]

_A = "planner.algorithms."
_EXACT = ("time_limit_s", "gap", "emit")
#: the MILPs' model files (Pyomo's writers)
_LP_FILES = (".lp", ".mps")
_LIST = "Topcuoglu, Hariri, Wu, IEEE TPDS 2002"
_BAECHI = "Jeon et al., Baechi, SoCC 2020"
#: planned for `objective pipeline` alone (their figures are a pipeline's)
_PIPELINE = ("pipeline",)
#: exact for one pass: under `objective pipeline` their `optimal` would be one pass's
_ONE_PASS = ("makespan",)


def _table(*entries: AlgorithmInfo) -> Mapping[str, AlgorithmInfo]:
    return MappingProxyType({e.name: e for e in entries})


#: name -> entry; the order is the order of `planner solve --help`, `compare` and `auto`.
ALGORITHMS: Mapping[str, AlgorithmInfo] = _table(
    AlgorithmInfo("auto", _A + "auto", "best simulated plan of the heuristics and baselines, "
                  "then CP-SAT on small graphs", options=("time_limit_s", "gap"),
                  citation="see msct, metf, mtopo, heft, cpop and cpsat"),
    AlgorithmInfo("msct", _A + "msct", "memory-constrained Small Communication Time: LP "
                  "favourite children + m-ETF", display="m-SCT", options=("threshold",),
                  constructive=True, seconds_per_element=1.6e-5, compare_default=True,
                  superlinear_seconds=lp_seconds_at_most,
                  citation="Hanen & Munier, Discrete Appl. Math. 2001; " + _BAECHI),
    AlgorithmInfo("metf", _A + "metf", "memory-constrained Earliest Task First (Baechi's "
                  "m-ETF)", display="m-ETF", constructive=True, seconds_per_element=1.6e-5,
                  compare_default=True, citation="Hwang et al., SIAM J. Comput. 1989; " + _BAECHI),
    AlgorithmInfo("mtopo", _A + "mtopo", "memory-balanced topological fill (Baechi's m-TOPO)",
                  display="m-TOPO", constructive=True, seconds_per_element=1.2e-5,
                  citation=_BAECHI),
    AlgorithmInfo("heft", _A + "heft", "Heterogeneous Earliest Finish Time, insertion-based, "
                  "memory-aware", display="HEFT", constructive=True, seconds_per_element=4e-5,
                  compare_default=True, citation=_LIST),
    AlgorithmInfo("cpop", _A + "cpop", "Critical Path On a Processor, insertion-based, "
                  "memory-aware", display="CPOP", constructive=True, seconds_per_element=1.4e-4,
                  compare_default=True, citation=_LIST),
    AlgorithmInfo("search", _A + "search", "moves groups of ops between devices from the best "
                  "constructive plan, judged by the simulator (descent, then annealing)",
                  options=("time_limit_s", "seed"), anytime=True),
    AlgorithmInfo("pipedp", _A + "pipedp", "the best contiguous pipeline split (stages on a "
                  "chain of devices), exact by dynamic programming for `objective pipeline`",
                  citation="Narayanan et al., PipeDream, SOSP 2019; Fan et al., DAPPLE, "
                  "PPoPP 2021", objectives=_PIPELINE),
    AlgorithmInfo("pipeilp", _A + "pipeilp", "the best pipeline placement (units on any device, "
                  "not only contiguous stages) with per-device activation recomputation, exact "
                  "as an ILP (Pyomo; HiGHS), warm-started by pipedp", options=(*_EXACT, "solver"),
                  exact=True, needs_solver=True, citation="Chen et al., sublinear memory cost "
                  "(recomputation), 2016; bottleneck assignment as a MILP",
                  objectives=_PIPELINE, emits=_LP_FILES),
    AlgorithmInfo("hybrid", _A + "pipehybrid", "pipeline stages replicated over groups of "
                  "devices (data parallelism inside a stage), by dynamic programming over "
                  "units and devices used, judged by the simulated iteration",
                  citation="Narayanan et al., PipeDream, SOSP 2019 (its hybrid optimizer); "
                  "Fan et al., DAPPLE, PPoPP 2021", objectives=_PIPELINE),
    AlgorithmInfo("uniform", _A + "baselines.uniform", "the same number of pipeline units per "
                  "stage, stage k on device k (the uniform layer split)", memory_aware=False,
                  objectives=_PIPELINE),
    AlgorithmInfo("single", _A + "baselines.single", "everything on the fastest device that "
                  "holds it all (pins excepted)", constructive=True, seconds_per_element=8e-6,
                  compare_default=True),
    AlgorithmInfo("roundrobin", _A + "baselines.roundrobin", "ops in topological order dealt "
                  "to the devices in turn (memory-aware)", constructive=True,
                  seconds_per_element=1.1e-5),
    AlgorithmInfo("random", _A + "baselines.random", "a seeded random device with room for "
                  "each op", options=("seed",)),
    AlgorithmInfo("expert", _A + "baselines.expert", "the spec's `place` and `pin` statements, "
                  "as given", memory_aware=False),
    AlgorithmInfo("cpsat", _A + "exact.cpsat", "exact CP-SAT model (OR-Tools): intervals, "
                  "NoOverlap per device, m-SCT hints", display="CP-SAT", options=_EXACT,
                  exact=True, citation="Perron & Didier, CP-SAT (OR-Tools); flexible job shop "
                  "with transfer delays", objectives=_ONE_PASS, emits=(".pbtxt", ".txt")),
    AlgorithmInfo("ilp", _A + "exact.ilp", "exact MILP (Pyomo; HiGHS, CBC, GLPK or any Pyomo "
                  "solver), warm-started by the best heuristic", display="ILP",
                  options=(*_EXACT, "solver"), exact=True, needs_solver=True,
                  citation="continuous-time MILP with disjunctive pairs (Manne 1960); big-M "
                  "from a warm start", objectives=_ONE_PASS, emits=_LP_FILES),
)


def names() -> tuple[str, ...]:
    """Every registered algorithm name, in registry order."""
    return tuple(ALGORITHMS)


def get(name: str) -> AlgorithmInfo:
    """The registry entry of algorithm `name` (no module is imported); `UsageError` E601
    when there is none, or `name` is no str (`planner.solve(problem, 3)`: a TypeError from
    deep in difflib before)."""
    info = ALGORITHMS.get(name) if isinstance(name, str) else None
    if info is None:
        named = f"`{name}`" if isinstance(name, str) else \
            f"{name!r} (an algorithm is named by a str, not {type(name).__name__})"
        raise UsageError(Diagnostic("E601", f"unknown algorithm {named}", None,
                                    (*(did_you_mean(name, ALGORITHMS)
                                       if isinstance(name, str) else ()),
                                     "available: " + ", ".join(ALGORITHMS))))
    return info


def taking(option: str) -> tuple[str, ...]:
    """The algorithms that take the `TUNABLE` option `option`, in registry order."""
    if option not in TUNABLE:
        raise ValueError(f"`{option}` is not one of {TUNABLE}")
    return tuple(n for n, info in ALGORITHMS.items() if info.takes(option))


def serving(objective: str) -> tuple[str, ...]:
    """The algorithms that may plan for `objective`, in registry order."""
    return tuple(n for n, info in ALGORITHMS.items() if info.serves(objective))


def check_objective(name: str, problem: Problem, one_pipeline: bool = False) -> None:
    """`UsageError` E625 when algorithm `name` does not plan for `problem`'s objective
    (`AlgorithmInfo.objectives`), or plans one pipeline where its `data_parallel N` asks
    for N (not one of `REPLICATING`; unless `one_pipeline`: a report's row that says
    so), before any work; E601 when there is no such algorithm."""
    info = get(name)
    objective = "makespan" if problem.pipeline is None else "pipeline"
    if info.serves(objective):
        if not one_pipeline:
            _check_replicas(info, problem)
        return
    planned = info.objectives[0]
    raise UsageError(Diagnostic(
        "E625", f"--algo {name} plans for `objective {planned}`, and plan `{problem.name}` has "
        f"`objective {objective}`", None,
        (f"algorithms for `objective {objective}`: {', '.join(serving(objective))}",
         f"or give plan `{problem.name}` `objective {planned}`" if planned == "pipeline" else
         f"or plan `{problem.name}` as one pass (`objective makespan`, the default)")))


def _check_replicas(info: AlgorithmInfo, problem: Problem) -> None:
    """E625 for an algorithm that plans one pipeline under `data_parallel N` (N > 1): its
    plan ran without the N replicas and read `feasible`, faster than `auto`'s (before:
    `pipedp` and `uniform` 140 ms against the replicated 1.1 s, no word)."""
    n = problem.pipeline.data_parallel if problem.pipeline is not None else 1
    if not isinstance(n, int) or n <= 1 or info.name in REPLICATING:
        return
    raise UsageError(Diagnostic(
        "E625", f"--algo {info.name} plans one pipeline, and plan `{problem.name}` has "
        f"`data_parallel {n}`: {n} replicas of every stage", None,
        (f"algorithms that plan the replicas: {', '.join(REPLICATING)}",
         "or `data_parallel auto` (the planner chooses each stage's replicas, one or more)")))


def constructive() -> tuple[str, ...]:
    """The constructive candidates `portfolio.rank` runs, in registry order."""
    return tuple(n for n, info in ALGORITHMS.items() if info.constructive)


def compare_defaults() -> tuple[str, ...]:
    """`compare`'s algorithms when `--algos` is not given, in registry order."""
    return tuple(n for n, info in ALGORITHMS.items() if info.compare_default)


def display_name(name: str) -> str:
    """Algorithm `name` as prose writes it (m-SCT, HEFT); an unregistered name as it is."""
    info = ALGORITHMS.get(name)
    return name if info is None else info.shown


def completions(prefix: str = "") -> list[tuple[str, str]]:
    """(name, summary) of each algorithm whose name starts with `prefix` (shell completion)."""
    return [(n, info.summary) for n, info in ALGORITHMS.items() if n.startswith(prefix)]


def check_emit(name: str, path: str | None) -> None:
    """`UsageError` E814 when algorithm `name` writes no model file with `path`'s ending
    (`AlgorithmInfo.emits`; `--emit`), before any work. An algorithm that writes no model
    ignores `path`, as it ignores the other options it does not take."""
    info = get(name)
    if path is None or not info.emits:
        return
    ending = os.path.splitext(path)[1].lower()
    if ending in info.emits:
        from ..files import check_outputs  # lazy: start-up

        # E604, as `--emit` says it: before, `planner.solve(..., emit=...)` in a folder that
        # does not exist worked, then failed writing it (E623, "free some space")
        check_outputs({"emit": path})
        return
    others = [n for n, i in ALGORITHMS.items()  # one that writes it, for the same objectives
              if ending and ending in i.emits and set(i.objectives) & set(info.objectives)]
    hint = f"use a path ending in {' or '.join(info.emits)}"
    if others:
        hint += f" (or --algo {others[0]}, which writes {ending})"
    raise UsageError(Diagnostic(
        "E814", f"{display_name(name)} cannot write its model as `{ending or path}`", None,
        (hint,)))


def options_of(algorithm: str | None = None, /, **given: Any) -> Options:
    """`Options(**given)`, each value checked as the command line checks its option (E626:
    a misspelt name, a time limit, gap or seed out of range, a value of the wrong type);
    before, `planner.solve(..., time_limit_s=float("nan"))` failed deep in an algorithm,
    and `seed=None` made `random` differ from call to call. With `algorithm`, a tunable
    option it does not take is E605, as `solve --solver cbc --algo heft` is (before,
    `planner.solve(problem, "heft", solver="cbc")` ignored it without a word; `seed` is
    never refused: every run has one). `auto` with no `time_limit_s` gets
    `AUTO_TIME_LIMIT_S`, as `planner solve` gives it."""
    fields = {f.name: f for f in dataclasses.fields(Options)}
    for key in given:
        if key not in fields:
            raise _bad_option(f"`{key}` is not an option", *did_you_mean(key, fields),
                              "options: " + ", ".join(fields))
    for key, value in given.items():
        why = _option_problem(key, value)
        if why:
            raise _bad_option(f"option `{key}`: {reprlib.repr(value)} is not {why}")
    info = None if algorithm is None else get(algorithm)
    ignored = [k for k in given if info is not None and k in TUNABLE and k != "seed"
               and not info.takes(k)]
    if ignored:
        raise UsageError(Diagnostic(
            "E605", f"option `{ignored[0]}` does not apply to algorithm `{algorithm}`", None,
            (f"`{ignored[0]}` applies to: {', '.join(taking(ignored[0]))}",
             "drop it, or choose one of those algorithms")))
    if "solver" in given and info is not None:  # E820: a solver that runs nowhere
        from .exact.solver_names import check_solver  # lazy: start-up

        check_solver(given["solver"], "option `solver`")
    if algorithm == "auto":  # `planner solve`'s default; before, 60 s: another plan, later
        given.setdefault("time_limit_s", AUTO_TIME_LIMIT_S)
    return Options(**{k: _plain(k, v) for k, v in given.items()})


def _plain(key: str, value: Any) -> Any:
    """A checked number as Python's own: `seed=numpy.int64(3)` reached `random.Random`,
    which takes no numpy integer (a TypeError deep in `random` and `search`)."""
    if key == "seed":
        return int(value)
    if key in ("time_limit_s", "gap", "threshold"):
        return float(value)
    return value


#: the checks of `options_of`: option -> (what a valid value is, the test)
_OPTION_RULES: dict[str, tuple[str, Any]] = {
    "seed": (f"a whole number from 0 to {MAX_SEED}",
             lambda v: _whole(v) and 0 <= v <= MAX_SEED),
    "time_limit_s": (f"a number of seconds from 0 to {MAX_TIME_LIMIT_S:g}",
                     lambda v: _real(v) and 0 <= v <= MAX_TIME_LIMIT_S),
    "gap": ("a relative gap (a finite number, 0 or more)",
            lambda v: _real(v) and _finite(v) and v >= 0),
    "threshold": ("a number from 0 to 1", lambda v: _real(v) and 0 <= v <= 1),
    "solver": ("a solver's name (text)", lambda v: isinstance(v, str) and v != ""),
    "emit": ("a path of a .lp or .mps file, or None", lambda v: v is None or isinstance(
        v, (str, os.PathLike))),
    "progress": ("a function of (fraction, message), or None",
                 lambda v: v is None or callable(v)),
    "warm_start": ("a Plan, or None", lambda v: v is None or isinstance(v, Plan)),
}


def _option_problem(key: str, value: Any) -> str:
    what, valid = _OPTION_RULES[key]
    return "" if valid(value) else what


def _real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _finite(v: Any) -> bool:
    """`math.isfinite`, False for an int beyond a double (there an OverflowError)."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _whole(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _bad_option(message: str, *hints: str) -> UsageError:
    return UsageError(Diagnostic("E626", message, None, tuple(h for h in hints if h)))


def run(name: str, problem: Problem, options: Options | None = None, *,
        one_pipeline: bool = False) -> Solution:
    """Run algorithm `name` on `problem`; `Solution.planning_s` is its wall time alone
    (after its module's imports and one-time loads, `AlgorithmInfo.warm_up`).

    Raises `UsageError` E625 when the algorithm does not plan for the problem's objective,
    or plans one pipeline under `data_parallel N` (`one_pipeline`: asked for), and E814
    when it cannot write `Options.emit`'s format (all before any work),
    `InfeasibleError` when no plan satisfies the memory caps and pins, and `Interrupted` on
    Ctrl-C, its solution (if any) timed the same way.
    """
    options = options or Options()
    check_objective(name, problem, one_pipeline)
    check_emit(name, options.emit)
    info = get(name)
    place = info.place
    info.warm_up(problem, options)  # imports and kernel loads: not planning (`planning_s`)
    t0 = time.perf_counter()
    try:
        out = place(problem, options)
    except Interrupted as stop:
        if stop.solution is not None:  # it said 0 ns (issue 25)
            elapsed = time.perf_counter() - t0
            stop.solution = _named(stop.solution, name).timed(elapsed)
        raise
    elapsed = time.perf_counter() - t0
    solution = _named(out if isinstance(out, Solution) else Solution(out), name)
    return _unreplicated(solution, name, problem).timed(elapsed)


#: the algorithms that plan `data_parallel N` (replicated stages); the others plan one
#: device a stage and say so (`search` starts from auto's plan: `pipesearch`)
REPLICATING = ("auto", "hybrid", "pipeilp", "search")
#: those that choose replicas per stage (`data_parallel auto`): pipeilp plans one pipeline
#: there (its package docstring)
CHOOSING_REPLICAS = ("auto", "hybrid", "search")


def _unreplicated(solution: Solution, name: str, problem: Problem) -> Solution:
    """`solution`, with a note when the plan lets the planner replicate stages
    (`data_parallel auto`) and `name` plans none (`info["data_parallel"]`; under
    `data_parallel N` such an algorithm is refused, `check_objective`)."""
    pipeline = problem.pipeline
    if pipeline is None or pipeline.data_parallel == 1:
        return solution
    planners = CHOOSING_REPLICAS if pipeline.data_parallel == "auto" else REPLICATING
    if name in planners:
        return solution
    note = (f"`{name}` gives each stage one device: `data_parallel "
            f"{pipeline.data_parallel}` is planned by {', '.join(planners)}")
    return dataclasses.replace(solution, info=MappingProxyType({**solution.info,
                                                                "data_parallel": note}))


def _named(solution: Solution, name: str) -> Solution:
    """`solution` with its plan's algorithm set (to `name` when the algorithm left it)."""
    if solution.plan.algorithm:
        return solution
    return solution.with_plan(solution.plan.with_algorithm(name))
