"""m-ETF: memory-constrained Earliest Task First.

ETF is Hwang, Chow, Anger and Lee, "Scheduling precedence graphs in systems with
interprocessor communication times", SIAM J. Computing 18(2), 1989; the memory-constrained
variant m-ETF is Baechi's (Jeon et al., "Baechi: fast device placement of machine learning
graphs", ACM SoCC 2020).

Event-driven: repeatedly commit the (ready op, device) pair with the earliest possible start
time, `max(device free, inputs arrived)`, among the devices where the op fits in memory
(on devices of different speeds: start plus the op's slowdown on the device, i.e. earliest
finish per op; the same rule on identical devices, see `listsched.etf_schedule`);
ties by topological position (Baechi's rule; the topological order is Kahn's with the
smallest op index first), then earlier finish, then smaller device index. See
`listsched.etf_schedule` for the shared rules (communication estimated with contention
`none`, static memory accounting, colocation groups as units).

Why topological ties rather than upward rank: over the repo's specs, Baechi's GNMT graphs
and random layered DAGs they were as good or better on average (1% shorter simulated
makespans; GNMT under Baechi's cost model 225 ms against 229 ms, and 329 ms against 411 ms
before colocation groups were bound by their first data-carrying member, see
`listsched`'s floating members).

Memory: after a dead end, retries with budgets and falls back to m-TOPO's placement
(`listsched.memory_passes`).

Time: O((V·D + E·D) log V + V·D) for V ops, E edges, D devices, per pass (one pass unless
the first dead-ends in memory; at most five).
"""

from __future__ import annotations

from ..model import Problem
from .base import Options, Solution
from .listsched import Instance, etf_schedule, memory_passes, solution


def place(problem: Problem, options: Options) -> Solution:
    """Place and order `problem`'s ops with m-ETF; raises `InfeasibleError` when stuck."""
    inst = Instance.of(problem)
    placement, start, status, info = memory_passes(
        inst, "metf", lambda placer: etf_schedule(placer.inst, placer, inst.topo_pos))
    return solution(inst, placement, start, "metf", status, **info)
