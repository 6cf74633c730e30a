"""Experiments: placement algorithms side by side across settings, in parallel, resumable.

From the bottom up: `settings` (the bandwidth, memory and device settings of a problem),
`rows` (one row of tidy data per run; CSV and JSON Lines, ratios, wins), `worker` (one
point: load, apply the setting, run, simulate, bound), `executors` (a process pool, Ray,
or inline) and `sweep` (the engine: plan the points, run them, resumable; the best plan of
each spec for the HTML report). The names below are the engine's, loaded on first use, so
that importing `planner.compare.rows` or `.settings` (the report layer does) starts no
process pool:

    from planner.compare import plan_sweep, run_sweep
    sweep = plan_sweep(["specs/resnet.plan"], ["msct", "heft"], bandwidths="1GB/s,10GB/s")
    result = run_sweep(sweep, executor="local", jobs=2, resume="results.csv")
    result.rows          # sorted, with ratio_to_best
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .executors import EXECUTORS, default_jobs
    from .rows import (
        FIELD_NAMES,
        OK_STATUSES,
        TIMING_FIELDS,
        Row,
        finalize,
        read_rows,
        wins,
        write_rows,
    )
    from .settings import Setting
    from .sweep import (
        DEFAULT_ALGORITHMS,
        PlanView,
        Sweep,
        SweepResult,
        best_plans,
        held_settings,
        plan_sweep,
        run_sweep,
    )
    from .worker import Point, PointResult

__all__ = [
    "DEFAULT_ALGORITHMS", "EXECUTORS", "FIELD_NAMES", "OK_STATUSES", "TIMING_FIELDS",
    "PlanView", "Point", "PointResult", "Row", "Setting", "Sweep", "SweepResult",
    "best_plans", "default_jobs", "finalize", "held_settings", "plan_sweep", "read_rows",
    "run_sweep", "wins", "write_rows",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        # lazy: start-up (the engine imports multiprocessing); each name from its own module
        from . import executors, rows, settings, sweep, worker

        for home in (sweep, rows, settings, worker, executors):
            if name in vars(home):
                return vars(home)[name]
    raise AttributeError(f"module 'planner.compare' has no attribute {name!r}")
