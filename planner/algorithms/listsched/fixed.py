"""Ordering a placement made by another rule: `schedule_fixed` (dynamic dispatch, by the
ETF engine with the devices given) and `fill_and_order` (place first, then order: m-TOPO
and the baselines).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .etf import etf_schedule
from .instance import Instance
from .placer import Placer, Stuck
from .ranks import priority_positions, upward_rank
from .retry import explain_stuck, liveness_pass


def schedule_fixed(inst: Instance, placement: Sequence[int]) -> tuple[list[int], list[float]]:
    """Start times for a given placement: each device runs its ready ops earliest first.

    Ties by upward rank (higher first), then topological position. No memory check: the
    caller chose the placement. O((V + E) log V).
    """
    prank = priority_positions(inst, upward_rank(inst))
    return etf_schedule(inst, Placer(inst), prank, fixed=placement)


def fill_and_order(
    inst: Instance, algorithm: str, fill: Callable[[Placer], None],
) -> tuple[list[int], list[float], dict[str, Any]]:
    """Run a placement rule (`fill` places every op through the placer it is given, or
    raises `Stuck`), then order the placement by dynamic dispatch (`schedule_fixed`).

    For the rules that place first and order after (m-TOPO and the baselines). Under
    `memory liveness` a dead end is retried by `liveness_pass`. Returns (placement, start
    times, info); raises `explain_stuck`'s error for the first dead end.
    """
    def attempt(placer: Placer) -> tuple[list[int], list[float]]:
        fill(placer)
        placement = list(placer.device_of)
        return placement, schedule_fixed(inst, placement)[1]

    placer = Placer(inst)
    try:
        placement, start = attempt(placer)
    except Stuck as s:
        found = liveness_pass(inst, attempt) if inst.problem.memory_model == "liveness" \
            else None
        if found is None:
            raise explain_stuck(placer, algorithm, s.op) from None
        return (*found, {"memory_check": "liveness peak, by simulation"})
    return placement, start, {}
