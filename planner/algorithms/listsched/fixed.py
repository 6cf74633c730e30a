"""Ordering a placement made by another rule: `schedule_fixed` (dynamic dispatch, by the
ETF engine with the devices given) and `fill_and_order` (place first, then order: m-TOPO
and the baselines).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ...errors import InfeasibleError
from .etf import etf_schedule
from .instance import Instance
from .placer import Placer, Stuck
from .ranks import priority_positions, upward_rank
from .retry import (
    LIVENESS,
    explain_stuck,
    followers_dropped,
    held_info,
    held_passes,
    held_words,
    liveness_pass,
    retries_ran,
    split_pass,
)

__all__ = ["LastPass", "fill_and_order", "schedule_fixed"]


def schedule_fixed(inst: Instance, placement: Sequence[int]) -> tuple[list[int], list[float]]:
    """Start times for a given placement: each device runs its ready ops earliest first.

    Ties by upward rank (higher first), then topological position. No memory check: the
    caller chose the placement. O((V + E) log V).
    """
    prank = priority_positions(inst, upward_rank(inst))
    return etf_schedule(inst, Placer(inst), prank, fixed=placement)


class LastPass(NamedTuple):
    """A rule's own last retry in `fill_and_order` (`mtopo`'s walk spilling from its first
    op): `fill` places every op (or raises `Stuck`), `words` names it in E704's list of
    retries, `reason` is the plan's `info["reason"]` where it is the pass that held."""

    fill: Callable[[Placer], None]
    words: str
    reason: str


def fill_and_order(
    inst: Instance, algorithm: str, fill: Callable[[Placer], None], *,
    contiguous: bool = False, budgets: bool = False, last: LastPass | None = None,
) -> tuple[list[int], list[float], dict[str, Any]]:
    """Run a placement rule (`fill` places every op through the placer it is given, or
    raises `Stuck`), then order the placement by dynamic dispatch (`schedule_fixed`).

    For the rules that place first and order after (m-TOPO and the baselines). Under
    `memory liveness` a dead end is retried by `liveness_pass`, then, for a rule that
    places contiguously (`contiguous`: m-TOPO's walk), by the best contiguous split that
    fits (`split_pass`; `info["reason"]` says so); then, where some op must go to one
    device (pinned, or only one device can hold it: `room.memory_forced`), once more keeping
    on each device the room of those ops and of the copies they receive (`room.HeldRoom`;
    `info["pins_reserved"]`, `info["forced_reserved"]`: a chain whose last op was pinned to
    gpu0 filled gpu0 with the ops before it; a chain of 5.97, 5.55 and 5.73 GiB ops gave
    the one device that could hold the last to the second), and, for a rule that takes a
    budget (`budgets`: m-TOPO's walk reads `placer.budget`), under each rung of
    `budget_ladder` (`info["memory_budget_bytes"]`: a walk that filled gpu0 with two
    forward ops left no room for the gradient their backward op, colocated with one,
    receives). If that dead-ends too, all of it again on
    the instance without the schedulers' own groups (`memory_passes`' step 5: `fill` places
    through `placer.inst`; `info["sources_follow"]` is then False). Then, very last (so no
    plan found before it changes), the rule's `last` pass, if any, on the last instance
    tried, at the devices' memory with that room held (`info["reason"]` is `last.reason`,
    `info["memory_budget_bytes"]` the devices' memory).
    Returns (placement, start times, info); raises `explain_stuck`'s error for the first
    dead end (after step 5, that of its first pass: `memory_passes` says why).
    """
    try:  # `last` runs on the instance tried last: this one where step 5 has none
        return _fill_and_order(inst, algorithm, fill, contiguous, budgets,
                               last=None if inst.followers else last)
    except InfeasibleError as err:
        plain = followers_dropped(inst, err)
        if plain is None:
            raise
        # its dead end, if any, is explained (`memory_passes` says why)
        placement, start, info = _fill_and_order(plain, algorithm, fill, contiguous, budgets,
                                                 first=inst, last=last)
    return placement, start, {**info, "sources_follow": False}


def _fill_and_order(
    inst: Instance, algorithm: str, fill: Callable[[Placer], None], contiguous: bool,
    budgets: bool, *, first: Instance | None = None, last: LastPass | None = None,
) -> tuple[list[int], list[float], dict[str, Any]]:
    """`fill_and_order` on `inst`, without its retry on another instance (`first`: as that
    retry, after a dead end on `first`, which its dead end says), `last` after the rest."""
    def attempt(placer: Placer, rule: Callable[[Placer], None] = fill,
                ) -> tuple[list[int], list[float]]:
        rule(placer)
        placement = list(placer.device_of)
        return placement, schedule_fixed(placer.inst, placement)[1]

    placer = Placer(inst)
    try:
        placement, start = attempt(placer)
    except Stuck as s:
        stuck = s.op
    else:
        return placement, start, {}
    liveness = inst.problem.memory_model == "liveness"
    if liveness:
        found = liveness_pass(inst, attempt)
        if found is not None:
            return (*found, {"memory_check": "liveness peak, by simulation"})
        split = split_pass(inst, attempt) if contiguous else None
        if split is not None:
            return split[0], split[1], {
                "memory_check": "liveness peak, by simulation",
                "reason": f"the walk ran out of memory (static accounting); this is the best "
                          f"contiguous split that fits ({split[2]} stage(s))"}
    planned = held_passes(inst, attempt, budgets=budgets)
    if planned is not None:
        return planned
    planned = None if last is None else _last_pass(inst, attempt, last)
    if planned is not None:
        return planned
    raise explain_stuck(placer, algorithm, stuck, retries=retries_ran(
        [*_retries(inst, contiguous, budgets), *([last.words] if last else [])],
        None if first is None else _retries(first, contiguous, budgets)))


#: `_fill_and_order`'s pass: a placement rule run through a placer, then ordered
_Attempt = Callable[[Placer, Callable[[Placer], None]], tuple[list[int], list[float]]]


def _last_pass(inst: Instance, attempt: _Attempt, last: LastPass,
               ) -> tuple[list[int], list[float], dict[str, Any]] | None:
    """`last` at the devices' memory, the room of the ops that must go to a device held (as
    in `held_passes`): (placement, start times, info), or None where it dead-ends."""
    try:
        placement, start = attempt(Placer(inst, reserve_pins=True), last.fill)
    except Stuck:
        return None
    return placement, start, {**held_info(inst), "reason": last.reason,
                              "memory_budget_bytes": tuple(inst.caps)}


def _retries(inst: Instance, contiguous: bool, budgets: bool) -> list[str]:
    """The retries `_fill_and_order` runs on `inst` after a first pass that dead-ends, in
    words, only those."""
    liveness = inst.problem.memory_model == "liveness"
    return [*([LIVENESS] if liveness else []),
            *(["contiguous splits"] if liveness and contiguous else []),
            *held_words(inst, budgets=budgets)]

