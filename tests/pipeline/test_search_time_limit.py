"""`search` under `objective pipeline` sizes the work of the pipedp split it starts from
(its DP, the cut moves' DP, and where no split fits without recomputing the recomputing
split's DP) to its `--time-limit`, as `auto` does (`splitdp.cells_for`,
`pipeilp.contiguous.cells_for`). Before, it ran them all with no limit: PipeDream's
ResNet-50 profile on a DGX-1 under `interleaved` (no split fits without recomputing),
`search --time-limit 3` spent 8.2 s of CPU (planning time 17 s on a loaded 2-core
machine); now 3.1 s, as auto."""

from __future__ import annotations

import math

import pytest
from pipe_support import random_spec
from test_auto_recompute import SPEC

import planner
from planner.algorithms import Options, pipecuts, pipedp, pipeilp, run
from planner.algorithms.pipeilp import contiguous
from planner.pipeline import splitdp


def _spy(monkeypatch: pytest.MonkeyPatch, module: object, name: str, cells_at: int,
         seen: list[float]) -> None:
    real = getattr(module, name)

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(args[cells_at] if len(args) > cells_at else kwargs["cells"])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)


def test_search_sizes_pipedps_work_to_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    limit = 1.0
    p = random_spec(3, 12, 4, training=True, microbatches=8, memories=(4000,))
    seen: list[float] = []
    _spy(monkeypatch, pipedp, "search_within", 2, seen)
    _spy(monkeypatch, pipecuts, "refine_pipedp", 2, seen)
    found = run("search", p, Options(time_limit_s=limit))
    assert found.status == "feasible"
    assert len(seen) == 2 and set(seen) == {splitdp.cells_for(limit)}
    assert splitdp.cells_for(limit) < splitdp.MAX_CELLS  # what it ran before, at any limit


def test_search_sizes_the_recomputing_split_to_its_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []
    _spy(monkeypatch, pipeilp, "recomputing", 2, seen)
    result = planner.solve(planner.loads(SPEC).plan("p"), "search", time_limit_s=1)
    assert result.recompute == ("fast",)
    assert seen == [contiguous.cells_for(1.0)] and seen[0] < splitdp.MAX_CELLS
    assert math.isfinite(result.info["iteration_s"])
