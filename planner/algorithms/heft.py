"""HEFT: Heterogeneous Earliest Finish Time, with memory caps.

Topcuoglu, Hariri and Wu, "Performance-effective and low-complexity task scheduling for
heterogeneous computing", IEEE TPDS 13(3), 2002.

Ops in decreasing upward rank (mean compute time over the devices plus the longest mean path
to an exit, communication at the mean transfer time; ties by topological position), each to
the device where it finishes earliest, inserted into the earliest idle gap that holds it;
devices where it does not fit in memory are skipped (ties by smaller device index). Data
arrives as the plan's contention model has it: under `link` and `device`, a crossing takes
the earliest idle gap of its channels (`listsched.insertion`); the paper's model is
contention `none`. See `listsched` for the shared rules (colocation groups are bound by
their first data-carrying member; after a memory dead end, retries with budgets, then
m-TOPO's placement: `listsched.memory_passes`).

Time: O(V log V + E·D + V·D·g), g the gaps scanned per device (few: the scan starts at the
op's data-ready time); O(V²·D) in the worst case, as in the paper.
"""

from __future__ import annotations

from ..model import Problem
from .base import Options, Solution
from .listsched import (
    Instance,
    insertion_schedule,
    memory_passes,
    priority_positions,
    solution,
    upward_rank,
)


def place(problem: Problem, options: Options) -> Solution:
    """Place and order `problem`'s ops with HEFT; raises `InfeasibleError` when stuck."""
    inst = Instance.of(problem)
    prank = priority_positions(inst, upward_rank(inst))
    placement, start, status, info = memory_passes(
        inst, "heft", lambda placer: insertion_schedule(placer.inst, placer, prank))
    return solution(inst, placement, start, "heft", status, **info)
