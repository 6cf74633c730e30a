"""`expert`: the spec's own placement (`place` and `pin` statements), as given.

A baseline, not from a paper. Every op needs a `place` or a `pin` (a pin wins; lowering
rejects the two disagreeing); an op with neither is a `SpecError` (E506) naming it. Memory
is not checked here (the placement is the user's; the simulator reports any cap it breaks).
The order is the simulator's default priority (`planner.simulate.default_order`).

Time: O(V) plus one simulation, O((V + E)·log V).
"""

from __future__ import annotations

from ...model import Problem
from ...plan import Plan, given_placement
from ...simulate import default_order
from ..base import Options, Solution


def place(problem: Problem, options: Options) -> Solution:
    """The spec's placement, ordered by the simulator's default priority."""
    placement = given_placement(problem, "or let an algorithm place them, e.g. --algo msct")
    order = default_order(problem, placement)
    return Solution(Plan(placement, order, None, "expert"))
