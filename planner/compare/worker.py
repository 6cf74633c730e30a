"""One point of a sweep, run in a worker process: load, apply the setting, place, simulate.

`run_point` never raises for anything the point itself does: every failure becomes a row
with a status and a reason (see `planner.compare.rows`). Loaded specs and set-up problems
are cached per worker process, so a worker that runs many algorithms on one spec parses it
once and builds its cost tables once per setting.
"""

from __future__ import annotations

import math
import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .. import algorithms
from ..bounds import lower_bound, relative_gap
from ..errors import InfeasibleError, PlannerError, SolverError, SpecError, UsageError
from ..model import Problem, Spec
from ..simulate import simulate
from ..spec.load import load_path
from .rows import Row, empty_row
from .settings import Setting, SettingError, apply_setting


@dataclass(frozen=True, slots=True)
class Point:
    """One run of a sweep. Plain strings and numbers only: it travels to other processes.

    `spec` is the name rows show (the path as given, relative to the working directory);
    `path` is where a worker reads it (absolute).
    """

    spec: str
    path: str
    plan: str
    algorithm: str
    bandwidth: str
    memory: str
    devices: str
    time_limit_s: float

    @property
    def setting(self) -> Setting:
        """The point's setting."""
        return Setting(self.bandwidth, self.memory, self.devices)

    def key(self) -> tuple[Any, ...]:
        """The same tuple as `rows.row_key` of this point's row."""
        return (self.spec, self.plan, self.algorithm, self.bandwidth, self.memory,
                self.devices, float(self.time_limit_s))


@dataclass(frozen=True, slots=True)
class PointResult:
    """A row, and when asked for, the plan behind it (placement and per-device order)."""

    row: Row
    placement: tuple[int, ...] | None = None
    order: tuple[tuple[int, ...], ...] | None = None


_SPECS: OrderedDict[tuple[str, float], Spec] = OrderedDict()
_PROBLEMS: OrderedDict[tuple[Any, ...], tuple[Problem, list[str], Any]] = OrderedDict()
_STAMPS: dict[str, float] = {}
_CACHE_SIZE = 8


def load_spec(path: str) -> Spec:
    """The spec at `path`, loaded once per worker (reloaded when the file changes)."""
    try:
        stamp = os.stat(path).st_mtime
    except OSError:
        stamp = -1.0
    key = (path, stamp)
    _STAMPS[path] = stamp
    spec = _SPECS.get(key)
    if spec is None:
        spec = load_path(path).spec
        _SPECS[key] = spec
        while len(_SPECS) > _CACHE_SIZE:
            _SPECS.popitem(last=False)
    else:
        _SPECS.move_to_end(key)
    return spec


def _problem(point: Point) -> tuple[Problem, list[str], Any]:
    """The point's problem under its setting, its warnings, and its lower bound (cached)."""
    spec = load_spec(point.path)
    key = (point.path, point.plan, point.bandwidth, point.memory, point.devices,
           _STAMPS.get(point.path))
    hit = _PROBLEMS.get(key)
    if hit is not None:
        _PROBLEMS.move_to_end(key)
        return hit
    try:
        base = spec.plan(point.plan)
    except LookupError as err:
        raise SettingError(str(err).strip("'\"")) from None
    problem, warnings = apply_setting(base, point.setting)
    bound: Any = None
    try:
        bound = lower_bound(problem).makespan_s
    except Exception as err:  # noqa: BLE001 - a bound is a nicety; the row notes its absence
        warnings = [*warnings, f"no lower bound ({type(err).__name__}: {err})"]
    hit = (problem, warnings, bound)
    _PROBLEMS[key] = hit
    while len(_PROBLEMS) > _CACHE_SIZE:
        _PROBLEMS.popitem(last=False)
    return hit


def _message(err: BaseException) -> str:
    if isinstance(err, PlannerError):
        return "; ".join(d.message for d in err.diagnostics) or type(err).__name__
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def run_point(point: Point, keep_plan: bool = False) -> PointResult:
    """Run one point and return its row (never raises for the point's own failures)."""
    t0 = time.perf_counter()
    row = empty_row(spec=point.spec, plan=point.plan, algorithm=point.algorithm,
                    bandwidth=point.bandwidth, memory=point.memory, devices=point.devices,
                    time_limit_s=float(point.time_limit_s))
    placement = order = None
    warnings: list[str] = []
    try:
        problem, warnings, bound = _problem(point)
        row.update(n_ops=len(problem.graph.ops), n_edges=len(problem.graph.edges),
                   n_devices=len(problem.cluster.devices), lower_bound_s=_finite(bound))
        placement, order = _place_and_simulate(point, problem, row)
    except SettingError as err:
        row.update(status="invalid", reason=str(err))
    except (SpecError, UsageError) as err:
        row.update(status="invalid", reason=_message(err))
    except InfeasibleError as err:
        row.update(status="infeasible", reason=_message(err))
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
    # through the module: a test (or a caller) may replace `run`
    solution = algorithms.run(point.algorithm, problem,
                              algorithms.Options(time_limit_s=float(point.time_limit_s)))
    info = dict(solution.info)
    row["planning_s"] = float(solution.planning_s)
    for k in ("solver", "chosen"):
        if isinstance(info.get(k), str):
            row[k] = info[k]
    for k in ("objective_s", "bound_s"):
        row[k] = _finite(info.get(k))
    if isinstance(info.get("reason"), str) and info["reason"]:
        row["reason"] = info["reason"]
    if solution.status == "infeasible":
        row.update(status="infeasible", reason=row["reason"] or "the algorithm found no plan")
        return solution.plan.placement, ()
    result = simulate(problem, solution.plan)
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
    lb = row["lower_bound_s"]
    ms = row["makespan_s"]
    if ms is not None and lb is not None and lb > 0:
        row["ratio_to_bound"] = ms / lb
    if ms is not None and result.feasible:
        # the one gap definition, from the simulated makespan (never an algorithm's own)
        best = max(lb or 0.0, row["bound_s"] or 0.0)
        row["gap"] = relative_gap(ms, best)
    if result.feasible and ms is not None:
        row["status"] = solution.status
    else:
        first = result.violations[0].message if result.violations else "no finite makespan"
        row["status"] = "violated"
        row["reason"] = (f"the simulator rejects the plan: {len(result.violations)} "
                         f"violation(s); first: {first}")
    return result.placement, result.order
