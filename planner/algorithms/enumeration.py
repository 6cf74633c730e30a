"""Every placement and every per-device order, judged by the simulator: `auto`'s last resort
under `memory liveness`.

Why this and not a liveness-aware model: every other algorithm checks memory by static
accounting first (the list schedulers, whose liveness fallback is one contiguous split;
the exact models, which count static memory, stricter than the liveness peaks), and
`search` starts from their plans. A valid liveness plan can hold more than any device by
static accounting (outputs freed once their consumers on the device and transfers end, a
temp when its op ends), so on small instances all
of them can miss it and `auto` raised E818 where a plan exists. The simulator is the only
model of the liveness peaks, so the one complete method that needs no second model of
them is to ask it about every plan: a plan is a placement and a per-device order (the
simulator starts each op as early as that order allows), and every deadlock-free set of
per-device orders is the restriction of a topological order of the graph, so
placements (by units: colocation groups, pins and the devices each may use) times the
distinct restrictions of the topological orders are every plan there is.

It runs only where `auto` found no plan (so no plan `auto` returned before changes), in a
budget of simulations set by the time limit alone (`simulation_budget`, sized as the
search's moves are, to `LOAD_HEADROOM` of the limit: the same plan at any load), first
each placement in the simulator's dispatch order, then every order, keeping the fastest
valid plan. `complete` says whether the budget covered every plan: then the plan returned
is the fastest the simulator accepts, and none returned means no plan exists.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ..cost import costs
from ..errors import Diagnostic, InfeasibleError, SearchLimitError
from ..facts import facts
from ..model import Problem
from ..plan import Plan
from ..simulate import SimResult, simulate
from .base import Interrupted, Solution
from .clock import CAP_MIN_S, LOAD_HEADROOM
from .infeasible import memory_figures

__all__ = ["HINT", "Found", "enumerate_plans", "none_enumerated", "simulation_budget"]

#: planner.simulate's simulations per second on a graph of up to `SIZE_PER_RATE` ops and
#: edges on this 2-core machine, and the size past which the rate falls in proportion
#: (measured: 2,500/s on 8 ops and 13 edges, 900/s on 100 ops and 197 edges)
SIMULATIONS_PER_SECOND = 2000
SIZE_PER_RATE = 64
#: the fewest simulations a run gets (a time limit of 0 still tries the tiniest instances)
MIN_SIMULATIONS = 200
#: placements examined (pins, links, params) per simulation of the budget: past this many
#: the enumeration stops being complete
PLACEMENTS_PER_SIMULATION = 20
#: the hint of an error that `auto` and `search` may still mend (the exact models' E818);
#: dropped from their own errors, where it would send the user back to them
HINT = ("--algo auto and --algo search simulate every placement and per-device order their "
        "time limit allows, under the liveness peaks")
#: violations that no order of the placement can mend
_PLACEMENT_KINDS = frozenset({"pin", "colocation", "unrunnable", "no_link"})


@dataclass(frozen=True)
class Found:
    """The enumeration's answer: its fastest valid plan (None when none was seen), its
    simulated makespan, the simulations spent, whether they covered every plan, and
    whether the wall clock cut it."""

    plan: Plan | None
    makespan_s: float
    simulations: int
    complete: bool
    #: the wall clock stopped it before its budget did (a slow or busy machine)
    cut: bool = False


def simulation_budget(problem: Problem, time_limit_s: float) -> int:
    """The simulations the enumeration may spend: `LOAD_HEADROOM` of the limit at
    `SIMULATIONS_PER_SECOND` scaled to the graph's size, `MIN_SIMULATIONS` at least (a
    function of the problem and the limit alone: the same plan at any load)."""
    size = max(1.0, (len(problem.graph.ops) + len(problem.graph.edges)) / SIZE_PER_RATE)
    rate = SIMULATIONS_PER_SECOND / size
    return max(MIN_SIMULATIONS, int(LOAD_HEADROOM * max(0.0, time_limit_s) * rate))


def enumerate_plans(problem: Problem, budget: int, deadline: float = math.inf) -> Found:
    """The fastest valid plan among every placement × per-device order, within `budget`
    simulations (and the wall clock `deadline`, `time.monotonic`, or `CAP_MIN_S` from
    now, whichever is later); module docstring.
    Placements and topological orders are generated as they are needed, so a large graph
    costs its budget, not its count of plans. Ctrl-C raises `Interrupted` with the
    fastest valid plan so far (None when none was seen)."""
    f = facts(problem)
    # a last resort after phases that may have used the limit up: like the searches, it
    # gets `CAP_MIN_S` of the wall clock at least
    deadline = max(deadline, time.monotonic() + CAP_MIN_S)
    examined = budget * PLACEMENTS_PER_SIMULATION
    best = [Found(None, math.inf, 0, math.prod(map(len, f.unit_allowed)) <= examined)]
    try:
        return _enumerate(problem, budget, deadline, examined, best)
    except KeyboardInterrupt:
        plan = best[0].plan
        raise Interrupted(None if plan is None else Solution(plan, "interrupted", MappingProxyType(
            {"chosen": "enumeration", "objective_s": best[0].makespan_s}))) from None


def _enumerate(problem: Problem, budget: int, deadline: float, examined: int,
               held: list[Found]) -> Found:
    """`enumerate_plans`' search; `held[0]` is the best so far, for Ctrl-C."""
    best = held[0]
    spent = 0
    tried: dict[tuple[int, ...], set[tuple[tuple[int, ...], ...]]] = {}
    # first each placement once, in dispatch order; then every order of each
    for placement in _placements(problem, examined, deadline):
        if placement is None or spent >= budget or time.monotonic() > deadline:
            return _stopped(best, spent, spent < budget)
        spent += 1
        sim = simulate(problem, Plan(placement))
        tried[placement] = {sim.order}
        best = held[0] = _better(best, placement, sim)
    orders = _Orders(problem)
    for placement, seen in tried.items():
        for topo in orders:
            order = tuple(tuple(i for i in topo if placement[i] == d)
                          for d in range(len(problem.cluster.devices)))
            if order in seen:
                continue
            if spent >= budget or time.monotonic() > deadline:
                return _stopped(best, spent, spent < budget)
            seen.add(order)
            spent += 1
            sim = simulate(problem, Plan(placement, order))
            if any(v.kind in _PLACEMENT_KINDS for v in sim.violations):
                break
            best = held[0] = _better(best, placement, sim)
    return Found(best.plan, best.makespan_s, spent, best.complete)


class _Orders:
    """The graph's topological orders, generated once as they are first needed and then
    replayed, so that each placement walks the same ones."""

    def __init__(self, problem: Problem) -> None:
        self._made: list[tuple[int, ...]] = []
        self._source = _topological_orders(problem)

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        k = 0
        while True:
            if k == len(self._made):
                nxt = next(self._source, None)
                if nxt is None:
                    return
                self._made.append(nxt)
            yield self._made[k]
            k += 1


def _stopped(best: Found, spent: int, cut: bool) -> Found:
    return Found(best.plan, best.makespan_s, spent, False, cut)


def _better(best: Found, placement: tuple[int, ...], sim: SimResult) -> Found:
    if not sim.feasible or sim.makespan_s >= best.makespan_s:
        return best
    plan = Plan(placement, sim.order, algorithm="enumeration")
    return Found(plan, sim.makespan_s, best.simulations, best.complete)


def _placements(problem: Problem, examined: int,
                deadline: float) -> Iterator[tuple[int, ...] | None]:
    """Every placement, among the first `examined` by units, that keeps pins, colocation
    groups, the devices each unit may use, the links its edges need and the devices'
    resident `params` within their memory; None, last, when the wall clock ran out."""
    f = facts(problem)
    n, m = len(problem.graph.ops), len(problem.cluster.devices)
    latency = costs(problem).latency
    caps = [d.memory_bytes for d in problem.cluster.devices]
    for k, choice in enumerate(itertools.islice(itertools.product(*f.unit_allowed), examined)):
        if k % 1024 == 1023 and time.monotonic() > deadline:
            yield None
            return
        placement = [0] * n
        for unit, device in zip(f.units, choice, strict=True):
            for i in unit:
                placement[i] = device
        if any(placement[e.src] != placement[e.dst]
               and math.isinf(latency[placement[e.src]][placement[e.dst]])
               for e in problem.graph.edges):
            continue
        params = [0] * m
        for i, op in enumerate(problem.graph.ops):
            params[placement[i]] += op.params_bytes
        if all(p <= cap for p, cap in zip(params, caps, strict=True)):
            yield tuple(placement)


def _topological_orders(problem: Problem) -> Iterator[tuple[int, ...]]:
    """Every topological order of the graph's ops, lazily (lexicographic)."""
    n = len(problem.graph.ops)
    preds: list[set[int]] = [set() for _ in range(n)]
    for e in problem.graph.edges:
        if e.src != e.dst:
            preds[e.dst].add(e.src)
    yield from _extend([], [False] * n, preds)


def _extend(prefix: list[int], done: list[bool],
            preds: Sequence[set[int]]) -> Iterator[tuple[int, ...]]:
    if len(prefix) == len(done):
        yield tuple(prefix)
        return
    for i, taken in enumerate(done):
        if not taken and all(done[p] for p in preds[i]):
            done[i] = True
            prefix.append(i)
            yield from _extend(prefix, done, preds)
            prefix.pop()
            done[i] = False


def none_enumerated(problem: Problem, error: InfeasibleError | SearchLimitError,
                     found: Found) -> InfeasibleError | SearchLimitError:
    """The error of `auto` and `search` when the enumeration found no plan either: E819 (a
    proof, exit 3) when it simulated every plan; else `error`'s diagnostics then E821, a
    `SearchLimitError` (exit 6, as E811 and E709): the time limit, which sets its budget,
    cut it, and a longer one may find a plan, so nothing is proven."""
    if found.complete:
        return InfeasibleError(Diagnostic(
            "E819", "no plan fits: every placement and per-device order was tried under "
                    f"`memory liveness` ({found.simulations} simulated, the others ruled out "
                    "by pins, links or resident params), and none keeps the liveness peaks "
                    "within the devices' memory", None,
            (*memory_figures(problem), "add memory or devices, or relax pins and colocation")))
    first, *rest = error.diagnostics
    stopped = ("the wall clock, at the time limit," if found.cut
               else "its budget, set by the time limit,")
    return SearchLimitError((
        dataclasses.replace(first, hints=tuple(h for h in first.hints if h != HINT)), *rest,
        Diagnostic("E821", "the enumeration of every placement and per-device order under "
                           f"`memory liveness` found no plan either: {stopped} stopped it "
                           f"after {found.simulations} simulated plan(s), not all of them",
                   None,
                   ("not a proof that no plan exists: a longer --time-limit tries "
                    "more plans",))))
