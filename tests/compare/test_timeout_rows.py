"""A `timeout` row names its whole point, so that `--resume` keeps it.

Before: the row the parent process made for a point stopped at its hard limit had no
`objective`, `microbatches` or `spec_sha256`: under `--objective makespan,pipeline` the two
rows of a point were both of objective None (neither setting's), and a resumed sweep ran
every timed-out point again (another 2 × --time-limit + 30 s each) instead of keeping its
row, as it keeps every result but `crashed`."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.compare import plan_sweep, read_rows, run_sweep
from planner.compare.worker import Point
from planner.version import __version__

from .helpers import SPECS
from .workers import hang_on_mtopo


def _limit(point: Point) -> float:
    return 1.0 if point.algorithm == "mtopo" else 120.0


@pytest.mark.slow
def test_timeout_rows_name_their_point_and_are_kept_on_resume(tmp_path: Path) -> None:
    sweep = plan_sweep([SPECS[0]], "msct,mtopo", objectives="makespan,pipeline")
    log = tmp_path / "rows.csv"
    first = run_sweep(sweep, executor="local", jobs=2, worker=hang_on_mtopo, resume=log,
                      deadline=_limit)
    got = {(r["algorithm"], r["objective"]): r for r in first.rows}
    # msct's placement as an inference pipeline of 8 micro-batches does not fit (gpu1: 244
    # MiB of 128, every micro-batch's stage inputs and outputs), a row kept as any other
    assert {k: r["status"] for k, r in got.items()} == {
        ("msct", "makespan"): "feasible", ("mtopo", "makespan"): "timeout",
        ("msct", "pipeline"): "violated", ("mtopo", "pipeline"): "timeout"}
    digest = got["msct", "makespan"]["spec_sha256"]
    for r in (got["mtopo", "makespan"], got["mtopo", "pipeline"]):
        assert (r["spec_sha256"], r["microbatches"], r["planner_version"]) == (
            digest, "spec", __version__)
    again = run_sweep(sweep, executor="local", jobs=2, worker=hang_on_mtopo, resume=log,
                      deadline=_limit)
    assert (again.ran, again.reused, again.stale) == (0, 4, 0)
    assert sorted((r["algorithm"], r["objective"], r["status"]) for r in read_rows(log)) == [
        ("msct", "makespan", "feasible"), ("msct", "pipeline", "violated"),
        ("mtopo", "makespan", "timeout"), ("mtopo", "pipeline", "timeout")]
