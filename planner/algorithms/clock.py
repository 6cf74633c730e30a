"""The wall clock of the searches: what their budgets leave of a limit, and where it cuts.

A search's budget (moves, CP-SAT's work) is a function of the problem and `--time-limit`
alone, sized to fill `LOAD_HEADROOM` of the limit on an idle machine, so that the plan
does not depend on the machine's load; the clock (`cap`) only stops a run that a slow or
busy machine would carry past the limit, and `info["reason"]` then begins with `CUT`.

The clock measures planning, not loading: an algorithm's `warm_up` (its imports, numba's
kernels, OR-Tools, Pyomo: `AlgorithmInfo.warm_up`) runs before it calls `cap`.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence

#: the share of the limit a budget is sized to fill on an idle machine: the rest lets a
#: run twice as slow (two busy processes on 2 cores slow planner by 1.5x) keep both the
#: limit and its plan
LOAD_HEADROOM = 0.5
#: the wall clock never stops a search sooner than this after it starts (seconds), so a
#: limit of 0 still leaves a search its fewest moves room to run
CAP_MIN_S = 0.5
#: how `info["reason"]` begins when the wall clock cut a search
CUT = "the time limit ran out"
#: what `info["reason"]` says after where the wall clock cut (`cut_reason`)
MAY_DIFFER = "(a slow or busy machine): this plan may differ from run to run"
#: the note of a search phase `--time-limit 0` leaves out (`auto`'s search and cut moves,
#: `search`'s cut moves): 0 runs no search, not an unlimited one
NO_SEARCH = "skipped: --time-limit 0 runs no search"
#: copied ops the simulator runs per second of a time limit on an idle machine (80,000 of a
#: 10,000-op graph, relays included, in about 0.8 s), of which the candidates' simulations
#: get a quarter (`simulation_budget`): the DP has about a third of the limit, and
#: `LOAD_HEADROOM` leaves the rest for a busy machine
SIMULATED_OPS_PER_SECOND = 1e5


def cap(time_limit_s: float) -> float:
    """The wall-clock instant (`time.monotonic`) past which a search that starts now stops
    whatever its budget: the limit, `CAP_MIN_S` at least."""
    return time.monotonic() + max(CAP_MIN_S, time_limit_s)


def cut_reason(where: Sequence[str], reason: str | None = None) -> str | None:
    """`info["reason"]` where the wall clock cut the phases `where` (each in words that
    follow `CUT`: "after 5 of 10 moves", "in search's cut moves"), said once for them all,
    then `reason`, what else the plan's reason says; `reason` alone where `where` is empty."""
    if not where:
        return reason
    said = " and ".join(filter(None, (", ".join(where[:-1]), where[-1])))
    note = f"{CUT} {said} {MAY_DIFFER}"
    return f"{note}; {reason}" if reason else note


def simulation_budget(time_limit_s: float) -> float:
    """Copied ops (micro-batches x ops) the candidates' simulations may run within a time
    limit (a quarter of it at `SIMULATED_OPS_PER_SECOND`; a limit of 0: no limit): a
    function of the limit alone, so the plan is the same on any machine."""
    if time_limit_s <= 0:
        return math.inf
    return LOAD_HEADROOM * 0.5 * time_limit_s * SIMULATED_OPS_PER_SECOND


def simulations(budget: float, copies: int) -> int:
    """How many simulations of `copies` copied ops fit in `budget` (`simulation_budget`);
    without a limit, as many as asked."""
    if not math.isfinite(budget):
        return sys.maxsize
    return max(0, int(budget // max(copies, 1)))
