"""Under `auto`, hybrid's layouts (its DP's best per count of devices used, and pure data
parallelism) are simulated within the limit's simulations (`pipedp.simulation_budget`),
those of least DP cost first and at least one that fits; all of them at 0 and where the
limit's simulations cover them (Inception-v3 on a DGX-1 under `data_parallel auto`, 1F1B:
its 7 layouts at the default 10 s and at 2 s, 4 at 1 s, 2 at 0.5 s, the same plan).
Before, every layout at every limit: on a graph near `pipedp.MAX_SIMULATED_OPS` copied ops
(seconds a simulation) a small limit still ran one simulation per layout."""

from __future__ import annotations

import pytest
from pipe_support import chain_text

from planner import loads
from planner.algorithms import Options, pipedp, pipehybrid, run


def _problem():  # type: ignore[no-untyped-def]
    text = chain_text(24, 4, forward_ms=[1.0 + (k % 5) for k in range(24)])
    return loads(text.replace("schedule 1f1b }", "schedule 1f1b; data_parallel auto }")
                 ).plan("p")


@pytest.fixture
def simulated(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(layouts found, layouts simulated) of each of hybrid's `best`."""
    seen: list[tuple[int, int]] = []
    chosen = pipehybrid.best

    def spy(problem, pipeline, found, *runs):  # type: ignore[no-untyped-def]
        lay, figures = chosen(problem, pipeline, found, *runs)
        seen.append((len(found), len(figures)))
        return lay, figures

    monkeypatch.setattr(pipehybrid, "best", spy)
    return seen


def test_autos_hybrid_simulates_its_layouts_within_the_limits_simulations(
        simulated: list[tuple[int, int]]) -> None:
    p = _problem()
    got = {}
    for limit in (0.0, 10.0, 0.01):
        simulated.clear()
        run("auto", p, Options(time_limit_s=limit))
        got[limit] = simulated[:]
    copies = p.pipeline.microbatches * len(p.graph.ops)  # 384: none within 0.01 s's 250
    assert pipedp.simulations(pipedp.simulation_budget(0.01), copies) == 0
    # before: (4, 4) at 0.01 s; 5 layouts since pure data parallelism on 2 and 3 devices
    # joined it on all 4 (one of them the best of its count where the DP has fewer cuts);
    # then a group of its own, the DP's layouts of 2 replicas a stage (one new: 2 x 2), and
    # none of 4 but those found: searched while the limit's simulations are not spent
    assert got == {0.0: [(5, 5), (1, 1)], 10.0: [(5, 5), (1, 1)], 0.01: [(4, 1)]}


def test_hybrid_alone_simulates_every_layout(simulated: list[tuple[int, int]]) -> None:
    run("hybrid", _problem(), Options(time_limit_s=0.01))  # `--algo hybrid` takes no limit
    assert [found for found, _ in simulated] == [5, 1]  # the DP's, then 2 replicas' (2 x 2)
    assert all(ran == found for found, ran in simulated)
