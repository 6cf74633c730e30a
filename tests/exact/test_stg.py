"""CP-SAT reaches the published optima of a sample of the Standard Task Graph Set.

Kasahara lab's STG graphs (Tobita & Kasahara, J. Scheduling 2002) on P identical
processors without communication, from `../shared/datasets/stg` (skipped when absent).
The sample mixes graphs whose optimum is the trivial bound with graphs from
`nontrivial/`, whose optimum lies above it (those need a real proof). The full sweep is
`bench/bench_exact.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.algorithms import Options, run
from planner.simulate import simulate

from .instances import stg_optima, stg_path, stg_problem

STG = Path(__file__).resolve().parents[2] / "../shared/datasets/stg"

SAMPLE = [
    ("50/rand0000.stg", 2), ("50/rand0001.stg", 2), ("50/rand0002.stg", 4),
    ("50/rand0003.stg", 4), ("100/rand0000.stg", 4),
    # optimum above max(critical path, ceil(work / P)):
    ("50/rand0015.stg", 2), ("50/rand0074.stg", 2), ("50/rand0075.stg", 2),
]


@pytest.fixture(scope="module")
def optima() -> dict[tuple[str, int], float]:
    if not (STG / "optimal").is_dir():
        pytest.skip(f"STG dataset not found at {STG.resolve()}")
    return stg_optima(STG)


@pytest.mark.parametrize(("graph", "p"), SAMPLE, ids=[f"{g}-P{p}" for g, p in SAMPLE])
def test_cpsat_reaches_the_published_optimum(optima: dict[tuple[str, int], float],
                                             graph: str, p: int) -> None:
    path = stg_path(STG, graph)
    if path is None or (graph, p) not in optima:
        pytest.skip(f"{graph} with P={p} is not in this copy of the dataset")
    problem = stg_problem(path, p)
    sol = run("cpsat", problem, Options(time_limit_s=60.0))
    assert sol.status == "optimal", sol.info
    assert sol.info["objective_s"] == optima[(graph, p)]
    assert simulate(problem, sol.plan).makespan_s == optima[(graph, p)]
