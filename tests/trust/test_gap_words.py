"""A gap is printed as "at most G% above optimal": G is rounded up, never down."""

from __future__ import annotations

import pytest

import planner
from planner.algorithms import Options, run
from planner.bounds import lower_bound, relative_gap
from planner.render.figures import bound_text, format_gap
from planner.simulate import simulate

FOUR = """cluster c { device d[0..1] { memory 1 GiB } link d0 <-> d1 { bandwidth 1000 GB/s } }
graph g {
  op a { time 1 ms }
  op b { time 1 ms }
  op c { time 1 ms }
  op d { time 1.00001 ms }
}
plan p { graph g  cluster c }
"""


@pytest.mark.parametrize(("gap", "shown"), [
    (0.0, "0.0%"), (1e-12, "0.0%"), (2.5e-6, "0.1%"), (0.09396, "9.4%"), (0.1, "10.0%"),
    (0.11935, "12.0%"), (1.21736, "121.8%"), (None, "—")])
def test_a_gap_is_rounded_up_to_the_tenth_of_a_percent(gap: float | None, shown: str) -> None:
    """`f"{100 * gap:.1f}%"` printed 2.5e-6 as 0.0% and 11.935% as 11.9%: "at most" both
    times, each below the gap proved. A float's last bits (0.1 is 10.000000000000002%) do
    not round up."""
    assert format_gap(gap) == shown


def test_a_plan_not_proved_optimal_never_reads_at_most_0_0_percent() -> None:
    """Four independent ops on two devices, HEFT's plan 2.00001 ms against a bound of
    2.000005 ms (half the work): `status feasible` beside `at most 0.0% above optimal`."""
    problem = planner.loads(FOUR).plan()
    sol = run("heft", problem, Options())
    makespan = simulate(problem, sol.plan).makespan_s
    bound = lower_bound(problem).makespan_s
    gap = relative_gap(makespan, bound)
    assert gap is not None and 1e-6 < gap < 5e-4
    text = bound_text(makespan, bound)
    assert "at most 0.1% above optimal" in text and "0.0%" not in text
