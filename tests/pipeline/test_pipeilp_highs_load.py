"""pipeilp's model reaches HiGHS in bulk (`exact/highs_load.py`, whose tests compare the
model HiGHS holds with appsi's own hand-over) and plans as it did with appsi's row-by-row
hand-over: the same plan, status, period and nodes.

Before, ResNet-50's pipeline ILP (PipeDream's profile, 15,253 rows) took 1.2-1.8 s of CPU
to hand over, within `--time-limit`; 0.45-0.86 s now."""

from __future__ import annotations

from typing import Any

import pytest
from pipe_support import random_spec

from planner.algorithms import Options, run
from planner.algorithms.exact import backends, highs_load

pytestmark = pytest.mark.skipif(not backends.available("highs"),
                                reason="HiGHS (highspy) is not installed")


@pytest.mark.parametrize(("seed", "settings"), [
    (1, ""), (2, "; contention device"), (5, "; memory liveness")])
def test_pipeilp_plans_as_with_appsis_own_hand_over(
        seed: int, settings: str, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = random_spec(seed, 7, 3, training=True, settings=settings)
    read: list[bool] = []
    bulk = highs_load.add_rows

    def spy(opt: Any, rows: Any) -> None:
        read.append(highs_load._read(rows) is not None)
        bulk(opt, rows)

    monkeypatch.setattr(highs_load, "add_rows", spy)
    fast = run("pipeilp", problem, Options(time_limit_s=20))
    assert read and all(read)  # every chunk in bulk: appsi's add_constraints ran none
    monkeypatch.setattr(highs_load, "add_rows",
                        lambda opt, rows: opt.add_constraints(list(rows)))
    slow = run("pipeilp", problem, Options(time_limit_s=20))
    assert fast.plan.placement == slow.plan.placement
    for key in ("period_s", "solver_status", "nodes", "rows"):
        assert fast.info.get(key) == slow.info.get(key), key
    assert fast.status == slow.status
