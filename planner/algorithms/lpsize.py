"""How large m-SCT's favourite-child LP may be, and how long it may take: its limits, and
the worst-case time `auto`'s portfolio expects of it before it runs.

Pure Python over the graph's edges (no numpy, no HiGHS), so that the algorithm registry
can name `lp_seconds_at_most` without importing either.

HiGHS's dual simplex on these LPs takes at most `LP_ITERATIONS_PER_ROW` iterations per row
(m-SCT's deterministic work limit), and an iteration's cost grows with the rows. Measured on
this project's 2-core machine, idle (2026-12-07): random DAGs whose edges span up to 64 ops
(`bench/bench_parse.py`'s, the helper's) never converge within the limit, and so pay all of
it: 56 us per iteration at 6,647 rows (0.28 s), 74 at 13,278, 123 at 19,983, 124 at 26,589
and 177 at 33,245 (10,000 ops and 20,000 edges: 4.4 s); layered DAGs of as many rows
converge in under 0.6 iterations per row at 18-24 us each (0.46 s at 10,000 ops).
`lp_seconds_at_most` charges every iteration the limit allows
`LP_SECONDS_PER_ITERATION` + `LP_SECONDS_PER_ROW_ITERATION` per row, a line above each
random figure: a bound for an estimate that decides what runs inside `--time-limit`, not a
mean (a layered LP of that size takes a tenth).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model import Problem

#: simplex iterations the LP may take per row before the favourites come from the
#: critical-path rule instead (deterministic, unlike a time limit)
LP_ITERATIONS_PER_ROW = 0.75
#: graphs with more edges skip the LP for the critical-path rule (its time grows as about
#: n^2 even within the iteration limit: 58 s on a random 30,000-op DAG)
LP_MAX_EDGES = 20_000
#: seconds a simplex iteration takes at most (module docstring): this, plus
#: `LP_SECONDS_PER_ROW_ITERATION` per row of the LP
LP_SECONDS_PER_ITERATION = 30e-6
LP_SECONDS_PER_ROW_ITERATION = 5e-9


def lp_runs(problem: Problem) -> bool:
    """Whether m-SCT solves its LP here: more than one device, and edges, at most
    `LP_MAX_EDGES` of them."""
    edges = len(problem.graph.edges)
    return len(problem.cluster.devices) > 1 and 0 < edges <= LP_MAX_EDGES


def lp_rows(problem: Problem) -> int:
    """The LP's rows (`msct._lp_model`): one per edge, per op of two or more edges out,
    per op of two or more edges in, and per sink (from the graph's cached edge lists: the
    portfolio asks several times)."""
    g = problem.graph
    return (len(g.edges) + sum(len(out) >= 2 for out in g.successors)
            + sum(len(into) >= 2 for into in g.predecessors) + sum(not out for out in g.successors))


def lp_seconds_at_most(problem: Problem) -> float:
    """The most m-SCT's LP is expected to take here on an idle machine: its iteration limit
    at the worst cost per iteration measured (module docstring); 0 where it does not run."""
    if not lp_runs(problem):
        return 0.0
    rows = lp_rows(problem)
    return (LP_ITERATIONS_PER_ROW * rows
            * (LP_SECONDS_PER_ITERATION + LP_SECONDS_PER_ROW_ITERATION * rows))
