"""`random`: each op on a uniformly random device with room for it, seeded.

A baseline, not from a paper. Op by op in topological order, the devices the op may run on
are shuffled by `random.Random(Options.seed)` and the first with room (static memory)
takes it; pinned ops and later members of a colocation group go where they must. The same
seed gives the same plan. The order is dynamic dispatch (`listsched.schedule_fixed`).

Time: O(V·D) placement plus O((V + E)·log V).
"""

from __future__ import annotations

import random

from ...model import Problem
from ..base import Options, Solution
from ..listsched import Instance, Placer, Stuck, fill_and_order, solution


def place(problem: Problem, options: Options) -> Solution:
    """Place each op on a random device with room (seeded by `options.seed`)."""
    inst = Instance.of(problem)

    def draw(placer: Placer) -> None:
        rng = random.Random(options.seed)  # per attempt: a retry draws the same sequence
        for i in inst.topo:
            devices = list(placer.allowed(i))
            rng.shuffle(devices)
            d = next((d for d in devices if placer.fits(i, d)), -1)
            if d < 0:
                raise Stuck(i)
            placer.commit(i, d)

    placement, start, info = fill_and_order(inst, "random", draw)
    return solution(inst, placement, start, "random", seed=options.seed, **info)
