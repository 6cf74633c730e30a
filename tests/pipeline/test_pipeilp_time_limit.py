"""pipeilp sizes its warm starts' work to its `--time-limit`, as `auto` does (pipedp's DP
`splitdp.cells_for`, the recomputing DP `pipeilp.contiguous.cells_for`; at 0 and at its
default of 60 s, all of it, as before), and draws pipedp's E707 (whose hints take more
of the DP's runs than its search) only where it reports it: where nothing is found.
Before, its warm start was an unlimited pipedp run: PipeDream's ResNet-50 profile on a
DGX-1 under `interleaved` (no split fits without recomputing), `pipeilp --time-limit 3`
took 13.3 s of CPU on a loaded 2-core machine, 4.4 s now. Its E709 says "no contiguous
split fits, even recomputing" only where the recomputing DP searched every split, and
else what it searched."""

from __future__ import annotations

import time

import pytest
from test_auto_recompute import SPEC

import planner
from planner.algorithms import Options, pipedp, run
from planner.algorithms.exact import backends
from planner.algorithms.pipeilp import contiguous
from planner.algorithms.pipeilp import solve as pipeilp_solve
from planner.algorithms.pipeilp import warm as pipeilp_warm
from planner.errors import SearchLimitError
from planner.pipeline import splitdp

pytestmark = pytest.mark.skipif(not backends.available("highs"),
                                reason="HiGHS (highspy) is not installed")


def _spy(monkeypatch: pytest.MonkeyPatch, module: object, name: str, cells_at: int,
         seen: list[float]) -> None:
    real = getattr(module, name)

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(args[cells_at] if len(args) > cells_at else kwargs.get("cells", -1.0))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)


@pytest.mark.parametrize("limit", [1.0, 0.0, 60.0])
def test_pipeilps_warm_starts_are_sized_to_its_limit(monkeypatch: pytest.MonkeyPatch,
                                                     limit: float) -> None:
    dp: list[float] = []
    redo: list[float] = []
    _spy(monkeypatch, pipedp, "split_candidates", 4, dp)
    _spy(monkeypatch, pipeilp_warm, "contiguous_splits", 1, redo)
    found = run("pipeilp", planner.loads(SPEC).plan("p"), Options(time_limit_s=limit))
    assert found.info["recompute"] == ["fast"]
    assert dp and set(dp) == {splitdp.cells_for(limit)}
    assert redo == [contiguous.cells_for(limit)]
    if limit == 1.0:  # before: all of it, whatever the limit
        assert max(dp[0], redo[0]) < splitdp.MAX_CELLS
    else:
        assert dp[0] == redo[0] == splitdp.MAX_CELLS


def test_pipeilp_draws_pipedps_e707_only_where_it_reports_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # no split fits without recomputing; the recomputing warm start fits: E707's words and
    # hints (their DP runs: the split without the caps, fewer micro-batches) go unsaid
    drawn: list[float] = []
    _spy(monkeypatch, pipedp, "best_splits", 4, drawn)
    with pytest.raises(planner.errors.InfeasibleError):
        run("pipedp", planner.loads(SPEC).plan("p"))
    assert drawn  # pipedp alone draws them
    drawn.clear()
    found = run("pipeilp", planner.loads(SPEC).plan("p"), Options(time_limit_s=1.0))
    assert found.info["recompute"] == ["fast"] and drawn == []


def _nothing_found(monkeypatch: pytest.MonkeyPatch, limit: float) -> str:
    """pipeilp's E709 on SPEC at `limit` where its solver ran out of time and no
    recomputing contiguous split fits (both made so)."""
    def solver(*_: object, **__: object) -> backends.Outcome:
        return backends.Outcome("nosolution", "highs gave no solution (its time limit)")

    monkeypatch.setattr(pipeilp_warm, "contiguous_splits", lambda *_: {})
    monkeypatch.setattr(pipeilp_solve, "_run_solver", solver)
    with pytest.raises(SearchLimitError) as err:
        run("pipeilp", planner.loads(SPEC).plan("p"), Options(time_limit_s=limit))
    (diag, *_) = [d for d in err.value.diagnostics if d.code == "E709"]
    return diag.message


def test_e709_says_what_the_recomputing_dp_searched_within_a_small_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # at 0.01 s the DP's work tries one chain of the two per stage count (before: "no
    # contiguous split fits, even recomputing", of every split, after it searched all)
    message = _nothing_found(monkeypatch, 0.01)
    assert ("no contiguous split fits, even recomputing, among those its DP searched "
            "(2 of 4 device chains)") in message
    p = planner.loads(SPEC).plan("p")
    assert contiguous.unsearched(p, contiguous.cells_for(0.01)) == "2 of 4 device chains"


@pytest.mark.parametrize("limit", [60.0, 1.0])
def test_e709_says_no_contiguous_split_fits_where_every_one_was_searched(
        monkeypatch: pytest.MonkeyPatch, limit: float) -> None:
    message = _nothing_found(monkeypatch, limit)
    assert "no contiguous split fits, even recomputing: this is not a proof" in message
    p = planner.loads(SPEC).plan("p")
    assert contiguous.unsearched(p, contiguous.cells_for(limit)) == ""


def test_a_build_past_the_limits_grace_returns_the_warm_start_and_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """As `ilp`'s: the limit bounds the model's build, past the watchdog's grace (here none:
    the stub's family ends 0.25 s after a 0.2 s limit), and the warm start is returned as
    `fallback` with the reason, no solver run. Before, the build ran to its end whatever
    the limit (ResNet-50 `pinter` at `--time-limit 3`: 0.7-1.8 s of 15,253 rows, begun
    2.5 s in), and the solver was handed the model with 0.05 s left."""
    from planner.algorithms.pipeilp import model

    real = model._Model._period

    def slow(self):  # type: ignore[no-untyped-def]
        real(self)
        time.sleep(0.25)

    def solver(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("no solver runs past the build's deadline")

    monkeypatch.setattr(model._Model, "_period", slow)
    monkeypatch.setattr(backends, "overrun_grace_s", lambda limit: 0.0)
    monkeypatch.setattr(pipeilp_solve, "_run_solver", solver)
    found = run("pipeilp", planner.loads(SPEC).plan("p"), Options(time_limit_s=0.2))
    assert found.status == "fallback"
    assert found.info["solver_status"] == "skipped"
    assert found.info["warm_start"] == "recomputing contiguous split"
    assert found.info["reason"].startswith(
        "no solver time left in --time-limit 0.2 s: the model was still being built (")
    assert found.info["reason"].endswith(" rows) 0 s after it ran out")


def test_handing_the_model_to_highs_past_the_grace_returns_the_warm_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Handing the rows to HiGHS (about as long as building them) ends at the build's
    deadline too, as `ilp`'s does: the stub says the load passed it. Before, no deadline:
    ResNet-50 `pinter` at `--time-limit 3` spent 1.3 s loading for a solver given 0.05 s."""
    def late(opt, model, load_by):  # type: ignore[no-untyped-def]
        raise backends.LoadOverrun(3, 7)

    monkeypatch.setattr(backends, "_load_in_time", late)
    found = run("pipeilp", planner.loads(SPEC).plan("p"), Options(time_limit_s=1))
    assert (found.status, found.info["solver_status"]) == ("fallback", "skipped")
    assert found.info["reason"] == ("no solver time left in --time-limit 1 s: the model was "
                                    "still being handed to highs (3 of 7 rows) 5.25 s after "
                                    "it ran out")
