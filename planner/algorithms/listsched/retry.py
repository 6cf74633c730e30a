"""The memory-budget retry of the list schedulers (`memory_passes`), and the explanation of
a dead end (`explain_stuck`).

A retry after a dead end limits the ops whose device is still a choice to a budget below
the devices' memory (`Placer.budget`), keeping the rest for ops forced onto a device
(pinned, or members of a bound group) and the tensors they receive. An op that fits under
its budget on no device may use the whole memory (`Placer.spill`), as m-TOPO's walk spills.
The drivers apply the budget as they choose devices (`etf._drop` and `etf._bind`,
`insertion._device_choice`); the passes, their budgets (`budget_ladder`) and the last
resort, m-TOPO's placement (`topo.topo_fill`), are here. Under `memory liveness` a static
dead end is first retried without memory checks, judged by simulation (`liveness_pass`),
and when every budget dead-ends, the best contiguous splits are tried before m-TOPO's
placement (`split_pass`): static accounting counts every tensor until the end, which a
training step's liveness peak (about half of it) does not. When all of that dead-ends, it
runs again on the instance whose sources do not follow their consumers
(`Instance.without_followers`, `followers_dropped`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import InfeasibleError
from ...model import Pipeline
from ...pipeline.splitdp import best_splits, cells_for
from ...plan import Plan
from ...simulate import simulate
from .. import display_name
from ..base import Status
from ..infeasible import stuck_error
from .instance import Instance
from .placer import Placer, Stuck
from .room import memory_forced
from .solution import solution
from .topo import topo_budgets, topo_fill

__all__ = ["HELD", "LIVENESS", "budget_ladder", "explain_stuck", "followers_dropped",
           "held_info", "held_passes", "held_words", "liveness_pass", "memory_passes",
           "retries_ran", "split_pass"]


def budget_ladder(inst: Instance) -> list[list[int]]:
    """The budgets `memory_passes` retries with, loosest first: per device, halfway from
    its memory down to m-TOPO's budget (`topo_budgets`), m-TOPO's budget, and an even share
    of the total static memory (each at most the device's memory; a rung equal to the
    memory or to the rung before is left out)."""
    caps = inst.caps
    floor = topo_budgets(inst)
    share = (sum(inst.po) + sum(inst.temp)) // max(inst.m, 1)
    out: list[list[int]] = []
    for rung in ([(c + f) // 2 for c, f in zip(caps, floor, strict=True)], floor,
                 [min(c, share) for c in caps]):
        if rung != caps and (not out or rung != out[-1]):
            out.append(rung)
    return out


def memory_passes(
    inst: Instance,
    algorithm: str,
    attempt: Callable[[Placer], tuple[list[int], list[float]]],
) -> tuple[list[int], list[float], Status, dict[str, Any]]:
    """Run a list scheduler (`attempt`, given a fresh `Placer`, schedules `placer.inst`)
    until it finds room.

    A greedy scheduler can fill a device so far that an op forced there later (a pinned op,
    or a member of a colocation group bound there, such as the backward op of a training
    graph colocated with its forward op) finds no room for the tensors it must receive; it
    then dead-ends (`Stuck`) although a plan exists. So:

    1. the first pass uses the devices' memory (no budget): when it succeeds, nothing
       changes; under `memory liveness`, a dead end is then retried once without memory
       checks, and that plan is kept when the simulator finds its liveness peaks within
       the caps (`liveness_pass`): static accounting is only an upper bound there;
    2. after a dead end, one pass per rung of `budget_ladder`, tightest last: the ops whose
       device is still a choice are held to the budget (`Placer.budget`), and the memory
       held back serves the forced ops and the copies they receive; from here on, no op
       takes the room of the ops that must go to a device (pinned there, or fitting on no
       other device), nor of the copies they receive (`Placer(reserve_pins=True)`,
       `room.HeldRoom`): a chain whose last op was pinned to gpu0 filled gpu0 with the ops
       before it, in every pass;
    3. if every pass dead-ends, under `memory liveness`, the best contiguous splits
       (`split_pass`), ordered by the scheduler itself: status `fallback`. So a plan is
       found whenever a contiguous split fits (by the pipeline's memory model, which the
       liveness peak of one micro-batch does not exceed) and the scheduler's order keeps
       to it;
    4. then m-TOPO's placement (`topo_fill`), ordered by the scheduler itself (each op's
       device given): status `fallback`, with the reason in `info`; its walk is retried
       under each budget of the ladder, as `mtopo` retries it. So a plan is also found
       whenever m-TOPO finds one; then, where some op must go to a device, the scheduler
       once more at the devices' memory, that room held (`held_passes`, as `mtopo` and the
       baselines retry): status `feasible`, `info["pins_reserved"]` or
       `info["forced_reserved"]`. Where the ladder was empty (every rung the devices'
       memory) or dead-ended at every rung, no such pass ran: four ops on three GPUs of
       141-168 MiB, one pinned, got E704 from all four schedulers and m-TOPO while
       `cpsat` planned them; it runs last, so no plan found before it changes;
    5. if that dead-ends too (and no proof says no plan exists), steps 1-4 again on the
       instance without the schedulers' own groups (`Instance.without_followers`): a
       source that follows its consumer (a constant, as the schedulers assume) can be a
       large weight, and the pair fit on no device where the two apart fit (three ops of
       6.35, 5.74 and 6.35 GiB on two 12.41 GiB devices); `info["sources_follow"]` is
       then False. What succeeds before this step is unchanged.

    Returns (placement, start times, status, info); after a dead end,
    `info["memory_passes"]` counts the steps above that ran, the one that succeeded
    included (the retry without memory checks, the contiguous splits and each of m-TOPO's
    walks count one each), and `info["memory_budget_bytes"]` is the budget of the pass
    that succeeded. Raises the first pass's `InfeasibleError` (`explain_stuck`) when m-TOPO
    finds no placement either; after step 5, that of step 5's first pass, whose figures
    count no constant placed with its consumer (the first instance's counted `a`, 5.97 GiB,
    in op `b`'s 11.52 GiB where `b` apart needs 6.5 GiB). Each dead end costs one more
    pass (a walk counts as one): at most nine in all, and under `liveness` one more for
    the retry and one per stage count (`split_pass`); twice that with step 5.
    """
    try:
        return _passes(inst, algorithm, attempt)
    except InfeasibleError as err:
        plain = followers_dropped(inst, err)
        if plain is None:
            raise
        # its dead end, if any, is explained: its figures count no constant that the
        # first instance placed with its consumer, a rule that plain dropped
        placement, start, status, info = _passes(plain, algorithm, attempt, first=inst)
    spent = 2 + 2 * len(budget_ladder(inst)) + (
        2 if inst.problem.memory_model == "liveness" else 0) + int(any(_must_go(inst)))
    return placement, start, status, {**info, "sources_follow": False,
                                      "memory_passes": spent + info.get("memory_passes", 1)}


def followers_dropped(inst: Instance, err: InfeasibleError) -> Instance | None:
    """The instance to retry a dead end `err` on: `inst` without the schedulers' own groups
    (`Instance.without_followers`); None when it has none, or when `err` holds a proof that
    no plan exists (anything but E704, a heuristic's dead end)."""
    if any(d.code != "E704" for d in err.diagnostics):
        return None
    return inst.without_followers()


def _passes(
    inst: Instance,
    algorithm: str,
    attempt: Callable[[Placer], tuple[list[int], list[float]]], *,
    first: Instance | None = None,
) -> tuple[list[int], list[float], Status, dict[str, Any]]:
    """Steps 1-4 of `memory_passes` on `inst` (`first`: as step 5, after those steps on
    the instance `first`)."""
    placer = Placer(inst)
    try:
        placement, start = attempt(placer)
    except Stuck as s:
        stuck = s.op  # the first pass's dead end explains an infeasibility best
    else:
        return placement, start, "feasible", {}
    passes = 1
    liveness = inst.problem.memory_model == "liveness"
    if liveness:
        passes += 1
        found = liveness_pass(inst, attempt)
        if found is not None:
            return (*found, "feasible", {"memory_passes": passes,
                                         "memory_check": "liveness peak, by simulation"})
    ladder = budget_ladder(inst)
    for budget in ladder:
        passes += 1
        try:
            placement, start = attempt(Placer(inst, budget, reserve_pins=True))
        except Stuck:
            continue
        return placement, start, "feasible", {"memory_passes": passes,
                                               "memory_budget_bytes": tuple(budget)}
    shown = display_name(algorithm)
    if liveness:
        passes += 1
        split = split_pass(inst, attempt)
        if split is not None:
            reason = (f"{shown} ran out of memory under every budget (static accounting); "
                      f"this is the best contiguous split that fits ({split[2]} stage(s)), "
                      f"ordered by {shown}, its liveness peaks checked by simulation")
            return split[0], split[1], "fallback", {"memory_passes": passes, "reason": reason}
    for rung in [None, *ladder]:  # m-TOPO's walks, as `mtopo` retries them
        passes += 1
        fill = Placer(inst, rung, reserve_pins=True)
        try:
            topo_fill(inst, fill)
            placement, start = attempt(Placer(inst, placement=fill.device_of))
        except Stuck:
            continue
        reason = (f"{shown} ran out of memory under every budget; this is m-TOPO's "
                  f"placement, ordered by {shown}")
        return placement, start, "fallback", {"memory_passes": passes, "reason": reason}
    # its own order at full memory, the room of the ops that must go to a device held: the
    # ladder may be empty, or its budgets what dead-ends (last, so no plan above changes)
    held = held_passes(inst, attempt, budgets=False)
    if held is not None:
        return held[0], held[1], "feasible", {**held[2], "memory_passes": passes + 1}
    raise explain_stuck(placer, algorithm, stuck, retried=True, retries=retries_ran(
        _retries(inst), None if first is None else _retries(first)))


def liveness_pass(
    inst: Instance, attempt: Callable[[Placer], tuple[list[int], list[float]]],
) -> tuple[list[int], list[float]] | None:
    """A plan for `memory liveness` that static accounting rejected, checked by simulation.

    Static memory bounds the liveness peak from above, so the schedulers' static check can
    dead-end where a plan fits (five 1 GiB ops in a chain on a 3 GiB device peak at 2 GiB).
    The scheduler runs once without memory checks; its plan is simulated with its own
    order, then with the simulator's dynamic dispatch, and the first whose every liveness
    peak is within the caps is returned (placement, start times), else None.
    """
    try:
        placement, start = attempt(Placer(inst, unbounded=True))
    except Stuck:
        return None
    judged = _judged(inst, placement, start)
    return None if judged is None else (placement, judged[1])


def split_pass(
    inst: Instance, attempt: Callable[[Placer], tuple[list[int], list[float]]],
) -> tuple[list[int], list[float], int] | None:
    """Under `memory liveness`, the best contiguous split's placement, ordered by the
    scheduler (placement, start times, stages), or None.

    The splits are the split DP's (`pipeline.splitdp`, pipedp's) for one micro-batch, one
    per stage count, each the least period among those whose stages fit the pipeline's
    memory model (params, the one micro-batch's activations and the largest transient:
    what a training step holds at its peak). Each is ordered by the scheduler with its
    devices given and no memory check, then judged as `liveness_pass` judges: the
    shortest that the simulator finds within the caps wins (ties: fewer stages).
    """
    problem = inst.problem
    # one micro-batch in flight (GPipe's count with M = 1; 1F1B would cap the stages at M)
    # every chain: its work is the cuts', as before chains were sized to the work
    found = best_splits(problem, Pipeline(1, "gpipe"), cells=cells_for(2.0), every_chain=True)
    best: tuple[float, int, list[int], list[float]] | None = None
    for stages, split in sorted(found.items()):
        try:
            placement, start = attempt(Placer(inst, placement=split.split.placement(problem),
                                              unbounded=True))
        except Stuck:
            continue
        judged = _judged(inst, placement, start)
        if judged is not None and (best is None or judged[0] < best[0]):
            best = (judged[0], stages, placement, judged[1])
    return None if best is None else (best[2], best[3], best[1])


def _judged(inst: Instance, placement: list[int],
            start: list[float]) -> tuple[float, list[float]] | None:
    """The simulated makespan and start times of a placement under the scheduler's order,
    else under dynamic dispatch: the first whose liveness peaks fit (None if neither)."""
    ordered = solution(inst, placement, start, "").plan
    for plan in (ordered, Plan(ordered.placement)):
        sim = simulate(inst.problem, plan)
        if sim.feasible:
            return sim.makespan_s, list(sim.start_s)
    return None


def explain_stuck(placer: Placer, algorithm: str, op: int, *,
                  retried: bool = False, retries: str = "") -> InfeasibleError:
    """The `InfeasibleError` for a `Stuck` op: proofs if any, else the op and its shortfall
    (`retried`: after `memory_passes` tried budgets and m-TOPO's placement too; `retries`,
    the passes that ran, in words: `_retries`)."""
    shortfall = [(d, placer.need(op, d)) for d in placer.allowed(op)]
    return stuck_error(placer.inst.problem, algorithm, op, shortfall, retried=retried,
                       counted=_counted(placer, op), retries=retries)


def _retries(inst: Instance) -> list[str]:
    """The retries `_passes` runs on `inst` after a first pass that dead-ends, in words,
    only those: budgets only where `budget_ladder` has a rung (none where every rung is the
    devices' memory), the room held at full memory only where some op must go to a
    device (`held_words`)."""
    liveness = inst.problem.memory_model == "liveness"
    return [*([LIVENESS] if liveness else []), *([BUDGETS] if budget_ladder(inst) else []),
            *(["contiguous splits"] if liveness else []), "m-TOPO's placement",
            *held_words(inst, budgets=False)]


def _must_go(inst: Instance) -> tuple[bool, bool]:
    """Whether some op is pinned, and whether some op only one device can hold
    (`room.memory_forced`): where neither, `HeldRoom` holds nothing."""
    return any(d >= 0 for d in inst.pin), any(d >= 0 for d in memory_forced(inst))


#: `liveness_pass`, in words
LIVENESS = "no memory checks (judged by simulation)"
#: the passes under `budget_ladder`, in words
BUDGETS = "tighter memory budgets"
#: the pass at full memory of `held_passes`, in words
HELD = "room held on each device for the ops that must go there"


def held_passes(
    inst: Instance, attempt: Callable[[Placer], tuple[list[int], list[float]]], *,
    budgets: bool,
) -> tuple[list[int], list[float], dict[str, Any]] | None:
    """The pass at full memory keeping the room of the ops that must go to a device
    (pinned, or only one device can hold them: a packing dead end needs no pin), where
    there are any (`room.HeldRoom`), then one under each rung of `budget_ladder`
    (`budgets`): the last retries of `fill_and_order`, and of `memory_passes` (without
    `budgets`: it ran the ladder before). Returns (the first that fits: placement, start
    times, info: `pins_reserved`, `forced_reserved`, and `memory_budget_bytes` under a
    budget), else None; `held_words` says which passes ran."""
    pins, forced = _must_go(inst)
    ladder = budget_ladder(inst) if budgets else []
    rungs: list[list[int] | None] = [None] if pins or forced else []
    for rung in rungs + ladder:
        try:
            placement, start = attempt(Placer(inst, rung, reserve_pins=True))
        except Stuck:
            continue
        info = held_info(inst)
        return placement, start, info if rung is None else {
            **info, "memory_budget_bytes": tuple(rung)}
    return None


def held_info(inst: Instance) -> dict[str, Any]:
    """What a pass with the room held (`Placer`'s `reserve_pins`) held it for, as a plan's
    info: `pins_reserved` where some op is pinned, `forced_reserved` where only one device
    can hold some op."""
    pins, forced = _must_go(inst)
    return {**({"pins_reserved": True} if pins else {}),
            **({"forced_reserved": True} if forced else {})}


def held_words(inst: Instance, *, budgets: bool) -> list[str]:
    """The passes `held_passes` runs on `inst`, in words: the room held where some op must
    go to a device, and the budgets (`budgets`) where `budget_ladder` has a rung."""
    return [*([HELD] if any(_must_go(inst)) else []),
            *([BUDGETS] if budgets and budget_ladder(inst) else [])]


def retries_ran(ran: list[str], first: list[str] | None = None) -> str:
    """The retries that ran after a dead end, in the order they ran, in one phrase (empty
    when none ran): `ran`, in words; with step 5 of `memory_passes`, `first` (those on the
    first instance), then all of it again on the instance without the schedulers' own
    groups, whose `ran` then holds room where the first held none (its sources apart, one
    can fit on one device only, `room.memory_forced`), said only there."""
    if first is None:
        return _listed(ran)
    extra = [w for w in ran if w not in first]
    follow = "no constant following its consumer" + (
        f", and with {_listed(extra)}" if extra else "")
    text = _listed(first)
    return f"{text}, then all of it again with {follow}" if text else follow


def _listed(words: list[str]) -> str:
    """`words` as one list: "a, b and c"."""
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def _counted(placer: Placer, op: int) -> str:
    """What each figure of `explain_stuck` counts (`Placer.need`), in words: the clauses
    for colocation groups only where the op has one, or a group holds room there; for the
    first member of a group whose other members receive tensors from outside it, that
    those copies are not counted (`need` decides where each op goes, so its figures are
    the ones the heuristic judged by)."""
    inst = placer.inst
    parts = ["the ops placed on that device", f"op `{inst.name(op)}` (params, output, temp)",
             "the copies of its inputs from other devices"]
    g = inst.group_of[op]
    if g >= 0 and placer.group_dev[g] < 0 and len(inst.groups[g]) > 1:
        # `Placer.need` counts the rest's params, outputs and temp, not what they receive
        members = set(inst.groups[g])
        receive = any(b > 0 and p not in members
                      for j in members if j != op for p, b in inst.pred[j])
        parts.append("the rest of its colocation group, which goes with it" + (
            " (their params, outputs and temp, not the copies they will receive)"
            if receive else ""))
    if any(placer.res_po[d] or placer.res_temp[d] for d in placer.allowed(op)):
        parts.append("the room held for the unplaced members of the groups bound there")
    return f"each figure counts {', '.join(parts[:-1])} and {parts[-1]}"
