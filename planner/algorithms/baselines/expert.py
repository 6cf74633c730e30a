"""`expert`: the spec's own placement (`place` and `pin` statements), as given.

A baseline, not from a paper. Every op needs a `place` or a `pin` (a pin wins; lowering
rejects the two disagreeing); an op with neither is a `SpecError` naming it. Memory is not
checked here (the placement is the user's; the simulator reports any cap it breaks). The
order is the simulator's default priority (`planner.simulate.default_order`).

Time: O(V) plus one simulation, O((V + E)·log V).
"""

from __future__ import annotations

from ...errors import Diagnostic, SpecError
from ...model import Problem
from ...plan import Plan
from ..base import AlgorithmInfo, Options, Solution


def place(problem: Problem, options: Options) -> Solution:
    """The spec's placement, ordered by the simulator's default priority."""
    from ...simulate import default_order

    ops = problem.graph.ops
    given = {**problem.placement, **problem.pins}
    missing = [ops[i].name for i in range(len(ops)) if i not in given]
    if missing:
        shown = ", ".join(f"`{x}`" for x in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise SpecError(Diagnostic(
            "E705",
            f"`--algo expert` needs a device for every op, but plan `{problem.name}` gives "
            f"none for {len(missing)} op(s): {shown}{more}",
            None,
            (f"add `place {missing[0]} on DEVICE` (or `pin ... to DEVICE`) to plan "
             + f"`{problem.name}`",
             "or let an algorithm place them, e.g. --algo msct"),
        ))
    placement = tuple(given[i] for i in range(len(ops)))
    order = default_order(problem, placement)
    return Solution(Plan(placement, order, None, "expert"))


INFO = AlgorithmInfo(
    name="expert",
    place=place,
    summary="the spec's `place` and `pin` statements, as given",
    memory_aware=False,
)
