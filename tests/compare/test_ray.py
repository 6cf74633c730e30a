"""The Ray executor on a local instance gives the same rows as the local process pool."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.compare import SweepResult, plan_sweep, read_rows, run_sweep

from .helpers import SPECS, stable, standard_sweep
from .workers import hang_on_mtopo

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'planner[ray]')")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A local Ray instance of 2 CPUs for this module, shut down after it."""
    tests = str(Path(__file__).resolve().parents[1])  # workers import compare.workers
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False, runtime_env={"env_vars": {"PYTHONPATH": tests}})
    try:
        yield
    finally:
        ray.shutdown()


def test_ray_and_local_give_identical_rows(local_ray: None, clean: SweepResult,
                                           tmp_path: Path) -> None:
    log = tmp_path / "ray.jsonl"
    on_ray = run_sweep(standard_sweep(), executor="ray", resume=log)
    assert (on_ray.ran, on_ray.reused) == (54, 0)
    local = run_sweep(standard_sweep(), executor="local", jobs=2)
    assert stable(on_ray.rows) == stable(local.rows) == stable(clean.rows)
    assert ray.is_initialized()  # a caller's instance is left running
    # resuming a finished sweep on Ray runs nothing
    again = run_sweep(standard_sweep(), executor="ray", resume=log)
    assert (again.ran, again.reused) == (0, 54)
    assert stable(read_rows(log)) == stable(clean.rows)


def test_ray_stops_a_point_past_its_hard_limit(local_ray: None) -> None:
    sweep = plan_sweep([SPECS[0]], "msct,mtopo,heft")
    result = run_sweep(sweep, executor="ray", worker=hang_on_mtopo,
                       deadline=lambda point: 2.0)
    assert [(r["algorithm"], r["status"]) for r in result.rows] == [
        ("msct", "feasible"), ("mtopo", "timeout"), ("heft", "feasible")]
