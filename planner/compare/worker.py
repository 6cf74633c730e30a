"""One point of a sweep, run in a worker process: load, apply the setting, place, simulate.

`run_point` never raises for anything the point itself does: every failure becomes a row
with a status and a reason (see `planner.compare.rows`). Loaded specs and set-up problems
are cached per worker process, so a worker that runs many algorithms on one spec parses it
once and builds its cost tables once per setting.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import algorithms
from ..algorithms.base import Status
from ..algorithms.exact.verdict import pipeline_standing, plan_bound, standing
from ..bounds import lower_bound, relative_gap
from ..codes import proves_none
from ..errors import (
    InfeasibleError,
    PlanChoiceError,
    PlannerError,
    SearchLimitError,
    SolverError,
    SpecError,
    UsageError,
)
from ..model import Pipeline, Problem, Spec
from ..pipeline.bound import pipeline_bound
from ..pipeline.schedule import run_planned
from ..pipeline.split import fits as pipeline_fits
from ..pipeline.split import split_words, units_split
from ..pipeline.verdict import NEVER_ENDS, memory_words, replica_rules
from ..simulate import SimResult, Violation, simulate
from ..spec.load import load_path
from ..stagefacts import proven_none
from ..version import __version__
from .rows import Row, empty_row
from .settings import (
    DEFAULT_MICROBATCHES,
    DEFAULT_OBJECTIVE,
    Setting,
    SettingError,
    apply_setting,
)


@dataclass(frozen=True, slots=True)
class Point:
    """One run of a sweep. Plain strings and numbers only: it travels to other processes.

    `spec` is the name rows show (the path as given, relative to the working directory);
    `path` is where a worker reads it (absolute); `spec_sha256` what it held when the sweep
    was planned (`spec_digest`), which a resumed sweep matches rows by; the row gets the
    digest of what the worker read (`load_spec`).
    """

    spec: str
    path: str
    plan: str
    algorithm: str
    bandwidth: str
    memory: str
    devices: str
    time_limit_s: float
    objective: str = DEFAULT_OBJECTIVE
    microbatches: str = DEFAULT_MICROBATCHES
    spec_sha256: str | None = None

    @property
    def setting(self) -> Setting:
        """The point's setting."""
        return Setting(self.bandwidth, self.memory, self.devices, self.objective,
                       self.microbatches)

    def key(self) -> tuple[Any, ...]:
        """The same tuple as `rows.row_key` of this point's row."""
        return (self.spec, self.plan, self.algorithm, self.bandwidth, self.memory,
                self.devices, self.objective, self.microbatches, float(self.time_limit_s))

    def labels(self) -> dict[str, Any]:
        """The fields of this point's row that name the point (`rows.KEY_FIELDS`) and the
        spec content it is computed from (`spec_sha256`)."""
        return {"spec": self.spec, "plan": self.plan, "algorithm": self.algorithm,
                "bandwidth": self.bandwidth, "memory": self.memory, "devices": self.devices,
                "objective": self.objective, "microbatches": self.microbatches,
                "time_limit_s": float(self.time_limit_s), "spec_sha256": self.spec_sha256}


@dataclass(frozen=True, slots=True)
class PointResult:
    """A row, and when asked for, the plan behind it (placement and per-device order)."""

    row: Row
    placement: tuple[int, ...] | None = None
    order: tuple[tuple[int, ...], ...] | None = None


#: (path, spec_sha256 or the file's mtime) -> the spec read there and its `spec_digest`
_SPECS: OrderedDict[tuple[str, Any], tuple[Spec, str]] = OrderedDict()
_PROBLEMS: OrderedDict[tuple[Any, ...], tuple[Problem, list[str], Any, Any]] = OrderedDict()
_CACHE_SIZE = 8


def spec_digest(sources: Mapping[str, str]) -> str:
    """The SHA-256 (hex) of a loaded spec's sources (`Loaded.sources`: the file, then what it
    imports), in load order; the files' names are left out (they depend on the working
    directory), their lengths are in, so no two lists of texts share a digest by
    concatenation."""
    h = hashlib.sha256()
    for text in sources.values():
        data = text.encode("utf-8")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def load_spec(path: str, digest: str | None = None) -> tuple[Spec, str]:
    """The spec at `path` and the `spec_digest` of what was read, loaded once per worker:
    the one of content `digest` when given (what the sweep planned), else the one read at
    the file's mtime. The digest is always of the files read, so a row never claims content
    it was not computed from (an import edited since, a file edited while the sweep ran)."""
    if digest is None:
        try:
            stamp: Any = os.stat(path).st_mtime
        except OSError:
            stamp = -1.0
        key: tuple[str, Any] = (path, stamp)
    else:
        key = (path, digest)
    hit = _SPECS.get(key)
    if hit is None:
        loaded = load_path(path)
        hit = (loaded.spec, spec_digest(loaded.sources))
        _SPECS[(path, hit[1])] = hit  # never under a digest it does not have
        if digest is None:
            _SPECS[key] = hit
        while len(_SPECS) > _CACHE_SIZE:
            _SPECS.popitem(last=False)
    else:
        _SPECS.move_to_end(key)
    return hit


def _problem(point: Point) -> tuple[Problem, list[str], Any, Any, str]:
    """The point's problem under its setting, its warnings, its lower bound, under the
    pipeline objective the pipeline's bounds (`PipelineBound`), and the `spec_digest` of
    the spec it comes from (cached)."""
    spec, digest = load_spec(point.path, point.spec_sha256)
    key = (point.path, point.plan, point.bandwidth, point.memory, point.devices,
           point.objective, point.microbatches, digest)
    hit = _PROBLEMS.get(key)
    if hit is not None:
        _PROBLEMS.move_to_end(key)
        return (*hit, digest)
    try:
        base = spec.plan(point.plan)
    except PlanChoiceError as err:
        raise SettingError(err.reason) from None
    problem, warnings = apply_setting(base, point.setting)
    bound: Any = None
    try:
        bound = lower_bound(problem).makespan_s
    except Exception as err:  # noqa: BLE001 - a bound is a nicety; the row notes its absence
        warnings = [*warnings, f"no lower bound ({type(err).__name__}: {err})"]
    pipe_bound: Any = None
    if problem.pipeline is not None:
        try:
            pipe_bound = pipeline_bound(problem, _finite(bound) or 0.0)
        except Exception as err:  # noqa: BLE001 - as above
            warnings = [*warnings, f"no pipeline bound ({type(err).__name__}: {err})"]
    hit = (problem, warnings, bound, pipe_bound)
    _PROBLEMS[key] = hit
    while len(_PROBLEMS) > _CACHE_SIZE:
        _PROBLEMS.popitem(last=False)
    return (*hit, digest)


def _message(err: BaseException) -> str:
    if isinstance(err, PlannerError):
        return "; ".join(d.message for d in err.diagnostics) or type(err).__name__
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _infeasible_status(err: InfeasibleError) -> str:
    """`infeasible` where a diagnostic proves that no plan exists (`codes.proves_none`),
    else `no_plan`: this algorithm found none (a heuristic's out of memory, `single`'s one
    device too small, an exact solver out of time after them), which another algorithm or
    more time may still find."""
    proved = any(proves_none(d.code) for d in err.diagnostics)
    return "infeasible" if proved else "no_plan"


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def run_point(point: Point, keep_plan: bool = False) -> PointResult:
    """Run one point and return its row (never raises for the point's own failures)."""
    t0 = time.perf_counter()
    # the version of the code that runs here (a Ray node may run another than the sweep's)
    row = empty_row(**point.labels(), planner_version=__version__)
    placement = order = None
    warnings: list[str] = []
    try:
        problem, warnings, bound, pipe_bound, digest = _problem(point)
        row.update(spec_sha256=digest, n_ops=len(problem.graph.ops),
                   n_edges=len(problem.graph.edges), n_devices=len(problem.cluster.devices),
                   lower_bound_s=_finite(bound))
        if problem.pipeline is not None:
            row.update(schedule=problem.pipeline.schedule,
                       n_microbatches=problem.pipeline.microbatches)
            if pipe_bound is not None:
                row.update(period_bound_s=_finite(pipe_bound.period_s),
                           iteration_bound_s=_finite(pipe_bound.iteration_s))
        placement, order = _place_and_simulate(point, problem, row)
    except SettingError as err:
        row.update(status="invalid", reason=str(err))
    except (SpecError, UsageError) as err:
        row.update(status="invalid", reason=_message(err))
    except InfeasibleError as err:
        row.update(status=_infeasible_status(err), reason=_message(err))
    except SearchLimitError as err:  # E709, E811, E821: a search's limit, no proof either way
        row.update(status="no_plan", reason=_message(err))
    except SolverError as err:
        row.update(status="solver_error", reason=_message(err))
    except PlannerError as err:
        row.update(status="error", reason=_message(err))
    except Exception as err:  # noqa: BLE001 - one failure never stops a sweep
        row.update(status="error", reason=_message(err))
    if warnings:
        reason = row["reason"]
        row["reason"] = "; ".join([*([reason] if reason else []), *warnings])
    if row["reason"]:
        row["reason"] = " ".join(str(row["reason"]).split())  # one line: CSV-friendly
    row["wall_s"] = time.perf_counter() - t0
    if keep_plan and row["status"] in ("optimal", "feasible", "fallback"):
        return PointResult(row, placement, order)
    return PointResult(row)


def _place_and_simulate(point: Point, problem: Problem, row: Row
                        ) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    # an algorithm that takes no `--time-limit` in `solve` (pipedp, hybrid, the heuristics)
    # runs as `solve` runs it, with the default limit: pipedp's simulations sized by 0 were
    # unlimited, and by another limit than solve's made another plan than solve's
    takes = algorithms.get(point.algorithm).takes("time_limit_s")
    options = (algorithms.Options(time_limit_s=float(point.time_limit_s)) if takes
               else algorithms.Options())
    # through the module: a test (or a caller) may replace `run`
    solution = algorithms.run(point.algorithm, problem, options)
    info = dict(solution.info)
    _solution_columns(row, solution.planning_s, info)
    if solution.status == "infeasible":
        row.update(status="infeasible", reason=row["reason"] or "the algorithm found no plan")
        return solution.plan.placement, ()
    result = simulate(problem, solution.plan)
    _simulation_columns(row, problem, result)
    ms = row["makespan_s"]
    if problem.pipeline is None and row["lower_bound_s"] is not None:
        # one bound per plan, as `solve` prints it: planner's, raised to the algorithm's
        row["lower_bound_s"] = _finite(plan_bound(row["lower_bound_s"], info))
    lb = row["lower_bound_s"]
    if ms is not None and lb is not None and lb > 0:
        row["ratio_to_bound"] = ms / lb
    feasible, violations = result.feasible, list(result.violations)
    overflow = ""
    if problem.pipeline is not None:
        feasible, violations, overflow = _run_pipeline(problem, problem.pipeline, info,
                                                       result, row)
        row["feasible"], row["violations"] = feasible, len(violations)
    _verdict(row, problem, solution.status, feasible, violations, overflow)
    return result.placement, result.order


def _solution_columns(row: Row, planning_s: float, info: dict[str, Any]) -> None:
    """The row's columns from the algorithm's answer: its time and what its `info` says."""
    row["planning_s"] = float(planning_s)
    for k in ("solver", "chosen"):
        if isinstance(info.get(k), str):
            row[k] = info[k]
    for k in ("objective_s", "bound_s"):
        row[k] = _finite(info.get(k))
    # why the plan is what it is: the algorithm's reason, and (`algorithms._unreplicated`)
    # that it plans one device a stage where the spec asks for `data_parallel`
    said = [info[k] for k in ("reason", "data_parallel") if isinstance(info.get(k), str)
            and info[k]]
    if said:
        row["reason"] = "; ".join(said)


def _simulation_columns(row: Row, problem: Problem, result: SimResult) -> None:
    """The row's columns from one simulation of the plan: times, transfers, peak memory."""
    devs = problem.cluster.devices
    row["makespan_s"] = _finite(result.makespan_s)
    row["feasible"] = result.feasible
    row["violations"] = len(result.violations)
    row["devices_used"] = sum(1 for seq in result.order if seq)
    row["transfers"] = len(result.transfers)
    row["transfer_bytes"] = int(sum(t.bytes for t in result.transfers))
    if devs:
        # the most loaded device (peak / cap), ties by index: what "peak / cap" shows
        def load(d: int) -> float:
            cap = devs[d].memory_bytes
            return result.memory_peak_bytes[d] / cap if cap > 0 else math.inf

        d = max(range(len(devs)), key=lambda d: (load(d), -d))
        row["peak_memory_bytes"] = int(result.memory_peak_bytes[d])
        row["memory_cap_bytes"] = int(devs[d].memory_bytes)
        row["peak_memory_device"] = devs[d].name


def _verdict(row: Row, problem: Problem, status: Status, feasible: bool,
             violations: list[Violation], overflow: str = "") -> None:
    """The row's gap, status and reason, once its makespan, bounds and (for a pipeline
    plan) pipeline columns are in; `status` is the algorithm's, `feasible` and
    `violations` the verdict that counts (the pipeline's for a pipeline plan), `overflow`
    why a pipeline plan does not fit its devices (`memory_words`)."""
    ms, lb = row["makespan_s"], row["lower_bound_s"]
    if ms is not None and feasible:
        # the one gap definition, from the simulated makespan (never an algorithm's own)
        best = max(lb or 0.0, row["bound_s"] or 0.0)
        row["gap"] = relative_gap(ms, best)
    if feasible and ms is not None:
        row["status"] = (standing(status, row["gap"]) if problem.pipeline is None
                         else pipeline_standing(status, row.get("period_gap")))
    elif problem.pipeline is not None and not violations and ms is not None:
        row["status"] = "violated"
        row["reason"] = _no_pipeline(row, overflow)
    else:
        first = violations[0].message if violations else "no finite makespan"
        row["status"] = "violated"
        row["reason"] = (f"the simulator rejects the plan: {len(violations)} "
                         f"violation(s); first: {first}")


def _no_pipeline(row: Row, overflow: str) -> str:
    """Why a plan whose one pass is valid is no valid pipeline (`_run_pipeline`'s verdict:
    it does not fit the pipeline's memory, `overflow` saying how, or its iteration never
    ends), with what the run noted after it."""
    why = (f"does not fit as a pipeline: {overflow}" if not row["pipeline_fits"]
           else f"does not run as a pipeline: {NEVER_ENDS}")
    return "; ".join(x for x in (why, row["reason"]) if x)


def _run_pipeline(problem: Problem, pipeline: Pipeline, info: dict[str, Any],
                  result: SimResult, row: Row) -> tuple[bool, list[Violation], str]:
    """Run the plan as `pipeline` (`pipeline.schedule.run_planned`: the devices the algorithm
    names in `info["recompute"]` recompute, its `info["replicas"]` run replicated stages)
    and fill the row's pipeline columns. Returns the pipeline's verdict, as `planner solve`
    judges a pipeline plan: whether it is feasible, and the one-pass violations that count
    (every rule but memory, which the pipeline's model judges instead), with a pipeline
    unit split over devices as a broken colocation, and why it does not fit its devices
    ("" where it does)."""
    run = run_planned(problem, result.placement, pipeline, info)
    devs = problem.cluster.devices
    fits = pipeline_fits(problem, run.memory_bytes)
    row.update(schedule=run.schedule, n_microbatches=run.microbatches,
               iteration_s=_finite(run.iteration_s),
               time_per_microbatch_s=_finite(run.time_per_microbatch_s),
               period_s=_finite(run.period_s),
               # the idle share of an iteration that never ends is no figure
               bubble_fraction=(_finite(run.bubble_fraction)
                                if _finite(run.iteration_s) is not None else None),
               pipeline_fits=fits,
               # a replicated stage's replicas hold no op of the one pass, and run it
               devices_used=len({d for s in run.stages for d in s.devices}))
    bound, period = row["period_bound_s"], row["period_s"]
    # no gap where a proof says no plan fits: there is no best period to be above
    if bound is not None and bound > 0 and period is not None and not proven_none(problem):
        row["period_gap"] = (period - bound) / bound
    if devs:
        def load(d: int) -> float:
            cap = devs[d].memory_bytes
            return run.memory_bytes[d] / cap if cap > 0 else math.inf

        d = max(range(len(devs)), key=lambda d: (load(d), -d))
        row.update(pipeline_memory_bytes=int(run.memory_bytes[d]),
                   pipeline_memory_cap_bytes=int(devs[d].memory_bytes),
                   pipeline_memory_device=devs[d].name)
    if run.note:
        row["reason"] = "; ".join(x for x in (row["reason"], run.note) if x)
    others = [v for v in result.violations if v.kind != "memory"]
    others += [Violation("colocation", split_words(problem, result.placement, (a, b)),
                         (a, b), (result.placement[a], result.placement[b]))
               for a, b in units_split(problem, result.placement)]
    others += replica_rules(problem, run)
    return ((not others and fits and row["iteration_s"] is not None), others,
            "" if fits else memory_words(problem, run))
