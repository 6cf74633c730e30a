"""Floating colocation members: the policy that lets a group's constants wait for its anchor.

The device of a colocation group is chosen by its first member that receives data from
outside the group, not by its constants. A member floats (`instance.floating_members`) when every
input comes from a floating member of its group or carries 0 bytes, and every consumer is
in its group (constants, shapes, `perm`s: TensorFlow colocates these with the op they
feed). Until its group is bound, a floating op whose inputs are done waits, counted as done
for its group's other members; when a non-floating member binds the group to `d`, the
waiting floating ops run on `d` first, in the order they became ready. Why: bound by
whichever member is ready first, a group's device is decided by a 1 µs constant that was
free at that moment; on Baechi's GNMT graph this put the `loss` group away from the 614 MB
logits it reads (one 108 ms transfer) and left every list scheduler near 400 ms, Baechi's
own figure; floating brings them to about 220 ms.

Each driver plugs the policy in through two hooks built here: `etf_policy` for
`etf.etf_schedule` (let an op whose inputs are done float or become ready; land a group's
waiting members when it binds) and `insertion_policy` for `insertion.insertion_schedule`.

Twin: `planner.algorithms.listsched._engine_kernel` repeats `etf_policy` inside its commit
loop; the hand-derived battery (`tests/algorithms`, with the `list_engine` fixture) and
`tests/algorithms/test_engine_kernel.py` run over both.
"""

from __future__ import annotations

from collections.abc import Callable

from .instance import Instance
from .placer import Placer
from .run import EtfRun

__all__ = ["etf_policy", "insertion_policy"]


def etf_policy(run: EtfRun, make_ready: Callable[[int], None]
               ) -> tuple[Callable[[int], None], Callable[[int, int], None]]:
    """The floating rule in the ETF engine: (`settle`, `land`).

    `settle(i)`: all of op `i`'s inputs are done: make it ready (`make_ready`), or, when it
    floats in a group not yet bound, let it wait (done in advance, at `run.inputs_done[i]`, in an
    order consistent with precedence) and settle the members it feeds in turn.
    `land(g, d)`: commit group `g`'s waiting members on `d`, where it binds, one after the
    other from the time `d` is free; their compute time is not in the binding member's
    start estimate (it starts after them).
    """
    inst, placer, floating = run.inst, run.placer, run.floating
    comp, lat, inv, pred, succ = inst.compute, inst.lat, inst.inv, inst.pred, inst.succ
    group_of = inst.group_of
    dev_of, group_dev = placer.device_of, placer.group_dev
    start, end, avail, missing = run.start, run.end, run.avail, run.missing
    inputs_done, waiting = run.inputs_done, run.waiting

    def settle(i: int) -> None:
        stack = [i]
        while stack:
            i = stack.pop()
            group = group_of[i]
            if floating is None or not floating[i] or group_dev[group] >= 0:
                make_ready(i)
                continue
            t = 0.0
            for p, _ in pred[i]:
                t = max(t, end[p] if dev_of[p] >= 0 else inputs_done[p])
            inputs_done[i] = t
            waiting[group].append(i)
            for j, _ in succ[i]:  # all in the group
                missing[j] -= 1
                if missing[j] == 0:
                    stack.append(j)

    def land(group: int, d: int) -> None:
        for member in waiting[group]:
            t = avail[d]
            for p, nbytes in pred[member]:
                src = dev_of[p]
                t = max(t, end[p] if src == d else end[p] + lat[src][d] + nbytes * inv[src][d])
            placer.commit(member, d)
            start[member] = t
            end[member] = avail[d] = t + comp[member][d]
        waiting[group] = []

    return settle, land


def insertion_policy(
    inst: Instance,
    placer: Placer,
    end: list[float],
    inputs_done: list[float],
    slot: Callable[[int, int], tuple[float, int]],
    occupy: Callable[[int, int, float, int], None],
) -> tuple[Callable[[int], bool], Callable[[int, int], bool]]:
    """The floating rule in the insertion driver: (`wait`, `land`).

    `wait(i)`: op `i` is next in priority order; if it floats in a group not yet bound, it
    waits (done in advance, at `inputs_done[i]`) and True is returned. `land(g, d)`: group `g`
    (g >= 0) binds to `d`: its waiting members are inserted on `d` (each in its earliest gap, in the
    order they became ready), before the binding member; True if there were any.
    """
    pred, group_of, floating = inst.pred, inst.group_of, inst.floating
    dev_of, group_dev = placer.device_of, placer.group_dev
    waiting: list[list[int]] = [[] for _ in inst.groups]

    def wait(i: int) -> bool:
        group = group_of[i]
        if not floating[i] or group_dev[group] >= 0:
            return False  # not floating, or its group is bound: placed now
        inputs_done[i] = max((end[p] if dev_of[p] >= 0 else inputs_done[p] for p, _ in pred[i]),
                             default=0.0)
        waiting[group].append(i)
        return True

    def land(group: int, d: int) -> bool:
        if not waiting[group]:
            return False
        for member in waiting[group]:
            occupy(member, d, *slot(member, d))
        waiting[group] = []
        return True

    return wait, land
