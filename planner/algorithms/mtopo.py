"""m-TOPO: fill devices in topological order up to a balanced memory budget.

Baechi's m-TOPO (Jeon et al., "Baechi: fast device placement of machine learning graphs",
ACM SoCC 2020).

Walk the ops in topological order (ties by op index) and fill device after device: an op
goes to the current device while the device's static memory stays within its budget,
`min(device memory, total static memory / number of devices + largest unit)`, where the
total counts every op's params, output and temp, and the largest unit is the largest op or
colocation group. When an op does not fit, the walk moves on to the next device (never
back). A colocation group goes where its first op goes, whole (its memory reserved); pinned
ops go to their pins. If the walk runs past the last device, the remaining ops (still in
topological order) spill to the first device where they fit within the real memory cap
(budgets balance the load; they are not what makes a plan fail); an op that fits nowhere
raises `InfeasibleError` with the diagnosis (under `memory liveness`, where static
accounting counts every tensor to the end, the best contiguous split that fits is taken
instead, status `fallback`: `listsched.split_pass`); before that error, the walk is retried
keeping on each device the room of the ops that must go there and of the copies they
receive (`listsched.room`), then under the tighter budgets of `listsched.budget_ladder`
(`budget_bytes` is then the one that held), as the other list schedulers retry
(`listsched.fill_and_order`). Last of all, the walk spills from its first op: each op, in
topological order, on the first device with room under its real cap, that room held (first
fit, status `fallback`, `reason` says so; the walk is next fit and never goes back: four
ops on three GPUs of 141-168 MiB, one pinned to gpu0, whose walk at full memory moved on
for `o0` (gpu0 held `o1`'s room) and `o2`, left `o3` no device, E704 where `cpsat`, m-SCT
and the first fit plan them). The placement is then ordered by dynamic dispatch
(`listsched.schedule_fixed`). The walk is `listsched.topo_fill`: m-ETF, m-SCT, HEFT and
CPOP fall back to its placement when they dead-end in memory.

Time: O(V + E) for the walk (each op tries the current device, or O(D) devices in the
spill), plus O((V + E)·log V) for the ordering.
"""

from __future__ import annotations

from ..model import Problem
from .base import Options, Solution, Status
from .listsched import Instance, LastPass, fill_and_order, solution, topo_budgets, topo_fill

#: m-TOPO's per-device budget (the walk itself is `listsched.topo_fill`, which the other
#: memory-aware list schedulers fall back to when they dead-end)
budgets = topo_budgets

#: m-TOPO's last retry: its walk spilling from the first op (first fit, at full memory)
FIRST_FIT = LastPass(
    lambda placer: topo_fill(placer.inst, placer, share=False),
    "first fit (each op, in topological order, on the first device with room)",
    "m-TOPO's walk ran out of memory in every pass; this is its spill from the first "
    "op: each op, in topological order, on the first device with room (first fit)")


def place(problem: Problem, options: Options) -> Solution:
    """Place `problem`'s ops with m-TOPO and order them; raises `InfeasibleError` if stuck."""
    inst = Instance.of(problem)
    placement, start, info = fill_and_order(
        inst, "mtopo", lambda placer: topo_fill(placer.inst, placer), contiguous=True,
        budgets=True, last=FIRST_FIT)
    status: Status = "fallback" if "reason" in info else "feasible"
    budget = info.pop("memory_budget_bytes", tuple(budgets(inst)))  # a retry's, if one
    return solution(inst, placement, start, "mtopo", status, budget_bytes=budget, **info)
