"""Worker functions for the executor tests (module level: worker processes import them)."""

from __future__ import annotations

import os

from planner.compare.worker import Point, PointResult, run_point

#: the point `crash_on_heft_5gbs` kills its worker on
VICTIM = ("heft", "5 GB/s", "50%")


def crash_on_heft_5gbs(point: Point, keep_plan: bool) -> PointResult:
    """`run_point`, except that one point of the fork spec kills its worker process."""
    if (point.algorithm, point.bandwidth, point.memory) == VICTIM and "fork" in point.spec:
        os._exit(13)
    return run_point(point, keep_plan)


def always_crash(point: Point, keep_plan: bool) -> PointResult:
    """A worker that dies on every point (a broken installation)."""
    os._exit(7)


def hang_on_mtopo(point: Point, keep_plan: bool) -> PointResult:
    """`run_point`, except that `mtopo` never returns (an algorithm stuck in a loop)."""
    if point.algorithm == "mtopo":
        import time

        time.sleep(3600)
    return run_point(point, keep_plan)
