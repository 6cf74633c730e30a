"""What the property tests of test_simulate.py and test_bounds.py share: Hypothesis'
settings, and their case (a problem and a placement of its ops) simulated."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

from planner.model import Problem
from planner.plan import Plan
from planner.simulate import SimResult, simulate

#: no deadline, and slow generation allowed: a case is simulated (and bounded) in full
PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: a problem and each op's device
Case = tuple[Problem, tuple[int, ...]]


def simulated(case: Case) -> tuple[Problem, tuple[int, ...], SimResult]:
    """The case, and its placement simulated (each device's order by dynamic dispatch)."""
    p, placement = case
    return p, placement, simulate(p, Plan(placement))
