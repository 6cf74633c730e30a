"""CP-SAT's work budget: a deterministic function of `--time-limit` and the model's size.

A wall-clock limit makes the result depend on the machine and its load: the same search,
stopped at a different point, returns another plan. So CP-SAT runs to a *work* limit
(`max_deterministic_time`, CP-SAT's count of operations scaled to about seconds on its
reference machine) in deterministic batches (`interleave_search`), with the wall clock
only as a safety cap.

The preparation before the search (the heuristics of the warm start, building the model)
is counted inside `--time-limit`, but by an *estimate from the model's size*, never by
measuring it: a measured time would carry the machine's load into the work limit and
break reproducibility. The estimate is `PREP_FIXED_S + PREP_S_PER_TERM · terms`, where
`terms` counts the (op, device) pairs and the (arc, device pair) transfer terms the model
holds; the coefficients were fitted on this project's specs on a 2-core machine (gnmt8 on
4 devices: 122 301 terms, 2.5 s measured; inception 8 271 terms, 0.4 s). Then

    work   = WORK_PER_S · (time limit − estimated preparation)
    cap    = WALL_CAP_FACTOR · time limit + WALL_CAP_EXTRA_S   (seconds of search)

`WORK_PER_S` converts seconds of the limit into work units. CP-SAT runs its portfolio of
8 strategies one task at a time (`interleave_batch_size` 1: deterministic, one core, and
the work limit is checked after every task; batches of 8 or 24 overran a 1-unit limit on
ResNet-50 fourfold). Measured on a 2-core machine at 0.1 unit per second of CPU:
ResNet-50 0.97 unit in 11 s, a 100-op layered graph 1.0 in 8 s, inception 0.32 in 3 s.
`WORK_PER_S` is a little under that rate, so a search ends near the limit when a core is
free (`auto` on ResNet-50 stays within its 10 s), and the cap (3x) is reached only
when the machine gives CP-SAT under a third of a core. When the cap ends a search before
its work limit, the result is marked (`info["reason"]`) as possibly not reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

from .instance import Instance

#: fixed preparation cost (importing OR-Tools, the lower bound), seconds
PREP_FIXED_S = 0.2
#: preparation cost per model term (heuristics plus CP-SAT model building), seconds
PREP_S_PER_TERM = 2e-5
#: CP-SAT deterministic-time units per second of `--time-limit`
WORK_PER_S = 0.09
#: the wall-clock safety cap is this many times the limit, plus WALL_CAP_EXTRA_S
WALL_CAP_FACTOR = 3.0
WALL_CAP_EXTRA_S = 1.0
#: tasks per deterministic batch: 1 runs the portfolio sequentially (module docstring)
BATCH_SIZE = 1
#: below this much work the search is not worth starting
MIN_WORK = 0.005


@dataclass(frozen=True, slots=True)
class Budget:
    """How long CP-SAT may search; every field is a function of the limit and the size."""

    limit_s: float
    prep_s: float
    work: float
    wall_cap_s: float

    @property
    def enough(self) -> bool:
        """Whether any search is left after the estimated preparation."""
        return self.work >= MIN_WORK


def terms(inst: Instance) -> int:
    """The size that preparation time is estimated from (module docstring)."""
    allowed, unit_of = inst.allowed, inst.unit_of
    total = len(inst.arcs) + sum(len(allowed[unit_of[i]]) for i in range(inst.n))
    for p in range(inst.n):
        au = len(allowed[unit_of[p]])
        total += sum(au * len(allowed[v]) for v, _ in inst.fanout[p])
    return total


def budget(inst: Instance, limit_s: float) -> Budget:
    """The budget of a CP-SAT search on `inst` under `--time-limit` `limit_s`."""
    prep = PREP_FIXED_S + PREP_S_PER_TERM * terms(inst)
    work = WORK_PER_S * max(0.0, limit_s - prep)
    return Budget(limit_s, prep, work, WALL_CAP_FACTOR * limit_s + WALL_CAP_EXTRA_S)
