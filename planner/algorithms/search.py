"""`search`: improve a placement by moving groups of ops between devices, judged by the
simulator.

The constructive algorithms plan with contention-free transfer estimates; under `link` or
`device` contention their plans can be far from what they expect (on Baechi's GNMT graph
every one of them is slower than one GPU). This search uses the simulator itself, under
the plan's own contention and memory model, as its objective, so whatever it accepts is
feasible and its makespan is the one users see.

1. **Starts**: the best simulated plan of the constructive algorithms (`portfolio.rank`),
   and everything on one device (`single`) when that is another feasible plan. Under
   `memory liveness`, where none of them found a plan (they check static memory first)
   and nothing proves none exists, the fastest plan of `enumeration` (every placement and
   per-device order its budget allows; E819 when it covered them all and none fits).
2. **Move groups**, coarse to fine (`move_levels`): name-prefix groups (names split on
   `/ . :`, depth 1 to 8; a level is kept when it splits the graph differently from the
   one before) and *cross* groups (ops with the same first component and the same
   component at position k = 2..7, whatever lies between: an unrolled RNN names its ops
   `decoder/rnn/multi_rnn_cell_5/cell_3/...`, so the prefixes group time steps and the
   cross groups layers across time steps), ordered by their number of groups; or, where
   the names group nothing (no structured names, or ONNX's `n15.Conv`: every prefix one
   op), windows of the topological order halving in size; then colocation units (a group
   is always whole units; pinned ops never move). On Inception-v2 at 40% of small4's
   memory the windows take `auto --time-limit 2` from 118.0 to 93.8 ms. On
   Baechi's GNMT the cross groups take `auto` (10 s) from 94.06 to 93.46 ms; no spec in `specs/`
   changes.
3. **Multilevel coordinate descent** from each start: for every group of a level in turn,
   move it to each other device it may use and keep every strict improvement; a level is
   swept until a pass improves nothing, then the next finer one. The better start is kept.
4. **Annealing** for the rest of the budget, in cycles of `anneal_cycle(problem)` moves,
   then twice, four times as many, and so on: a random group of a random level moves to a
   random device, or two groups on different devices swap; worse plans are accepted with
   probability `exp(-delta / T)`, T falling linearly over the cycle to 0 from 1% of the
   makespan; each cycle starts again from the best plan seen, which is what the search
   returns. (One cooling over the whole budget, as before, made each budget a different
   trajectory: on Baechi's fused GNMT 10/30/60/120 s gave 88.71/86.56/88.08/85.93 ms.
   Doubling cycles keep a long cooling, a quarter to a half of any budget, without it.)
   It stops short of its budget where `MAX_REVISITS` moves in a row found only placements
   seen before (a small graph's), and `info["stopped"]`, which the text shows, says so.

Scoring (`Scorer`): the start keeps its algorithm's own order; every placement a move makes
is simulated with the simulator's dynamic dispatch, and a better one is kept with the order
dispatch gave it, judged by a second simulation in that order (the plan's makespan, which
the search reports, is then the one `simulate` gives it) (re-ordering each improvement with
the list schedulers' ETF order was tried: on Baechi's GNMT it steered the descent to 97.7 ms
instead of 94.1 ms). Placements seen are memoised.
Simulations go through `planner.fastsim`, whose compiled kernel gives the simulator's
results bit for bit 20-50x faster. Until numba's cache holds it (the first run after an
install, while a background build compiles it: `planner.compiled`), `planner.simulate`
answers, and the budget is sized for its speed (`PYTHON_SECONDS_PER_MOVE`): the limit is
kept either way, and so is the rule that a limit and a seed give one plan per simulator;
a plan searched with `planner.simulate`'s budget says so (`python_budget_note`), since a run
after the build may keep another.

Budget and determinism: the work is counted in moves tried. `--time-limit` is turned into
a budget of moves from the problem's size and the simulator in use alone (`move_budget`),
sized to fill `LOAD_HEADROOM` of the limit on an idle machine, so a given seed and limit
give the same plan at any load (two busy processes on this 2-core machine leave it time
to spare); the wall clock is a cap at the limit itself, which a normal run never meets
(when it does, `info["reason"]` says so and that the plan may differ from run to run).

More time never gives a worse plan (under `objective makespan`: a pipeline's search,
`pipesearch`, ends its unit moves where the period says and is judged by the iteration):
nothing the search does depends on its budget (the
descent ends by itself; the annealing's cycles have a length set by the problem, not by
the budget; `auto`'s stall rule grows with the budget), so the moves of a longer run
begin with every move of a shorter one, and the best plan seen can only get better.
Ctrl-C returns the best plan so far (`Interrupted`). Progress reports the best makespan as
it improves.

Time: O(budget · (V + E) log V) (one simulation each).
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..facts import facts
from ..fastsim import Evaluator, evaluator, numba_available
from ..fastsim import ready as compiled_ready
from ..model import Problem
from ..plan import Plan
from . import pipesearch, portfolio
from .base import Interrupted, Options, Solution
from .clock import LOAD_HEADROOM, cap, cut_reason
from .enumeration import enumerate_plans, none_enumerated, simulation_budget
from .exact.verdict import judge
from .infeasible import diagnose, none_found
from .portfolio import Ranked, estimated_seconds, rank

#: seconds one move is assumed to cost, fixed plus per op and edge, to turn `--time-limit`
#: into a budget of moves without reading the clock (measured on this project's 2-core
#: machine with the compiled simulator: about 0.1 ms a move on ResNet-50's 369 ops and
#: edges, 0.3-0.4 ms on Baechi's GNMT's 6,644)
SECONDS_PER_MOVE = 5e-5
SECONDS_PER_ELEMENT = 4.5e-8
#: the same with `planner.simulate`, while the compiled simulator is not built (measured
#: on the same machine: 0.75 ms a move on ResNet-50, 1.6 ms on Inception's 771 ops and
#: edges, 4.9 ms on Baechi's fused GNMT's 2,788, 12-17 ms on GNMT's 6,644 and 9,239)
PYTHON_SECONDS_PER_MOVE = 1e-4
PYTHON_SECONDS_PER_ELEMENT = 2e-6
#: the first annealing cycle lasts this many moves per movable unit, within `CYCLE_MOVES`
CYCLE_PER_UNIT = 10
CYCLE_MOVES = (1000, 20_000)
#: the fewest moves a search gets, whatever the limit
MIN_BUDGET = 20
#: how `info["stopped"]` begins where the search stalled (`improve`'s `stall`)
STALLED = "no better plan in the last"
#: annealing stops after this many moves in a row to placements seen before (a small
#: graph's neighbourhood is soon exhausted)
MAX_REVISITS = 2000
#: how `info["stopped"]` begins where the annealing stopped so (`MAX_REVISITS`)
REVISITED = "no new placement left:"
#: `info["simulator"]` of a search whose budget was sized for `planner.simulate` (the
#: compiled simulator not yet built): said with the plan, since a later run's differs
PYTHON_BUDGET = ("planner's Python simulator, while the compiled one is being built (a "
                 "first run after an install): the search was given fewer moves for it, "
                 "so a run after the build may keep another plan")
#: the same where numba does not import here (a broken install): nothing is being built
NO_NUMBA_BUDGET = ("planner's Python simulator (numba does not import here): the search "
                   "was given fewer moves for it than the compiled one gets")
_SPLIT = re.compile(r"[/.:]")


def python_budget_note() -> str:
    """`info["simulator"]` of a search sized for `planner.simulate`: `PYTHON_BUDGET`, or
    `NO_NUMBA_BUDGET` where no build will ever end it."""
    return PYTHON_BUDGET if numba_available() else NO_NUMBA_BUDGET


def move_budget(problem: Problem, time_limit_s: float, *, compiled: bool | None = None) -> int:
    """Moves a search may try for `time_limit_s`, from the problem's size and the simulator
    alone (`compiled`: whether the compiled one runs; None: ask `fastsim.ready`)."""
    if compiled is None:
        compiled = compiled_ready()
    return max(MIN_BUDGET, int(LOAD_HEADROOM * time_limit_s
                               / seconds_per_move(problem, compiled=compiled)))


def seconds_per_move(problem: Problem, *, compiled: bool) -> float:
    """What one move is assumed to cost on an idle machine (`SECONDS_PER_MOVE`, ...)."""
    size = len(problem.graph.ops) + len(problem.graph.edges)
    if compiled:
        return SECONDS_PER_MOVE + SECONDS_PER_ELEMENT * size
    return PYTHON_SECONDS_PER_MOVE + PYTHON_SECONDS_PER_ELEMENT * size


def anneal_cycle(problem: Problem) -> int:
    """Moves of the first annealing cycle: `CYCLE_PER_UNIT` per movable unit, within
    `CYCLE_MOVES` (a function of the problem alone, so that a longer search extends a
    shorter one)."""
    f = facts(problem)
    movable = sum(1 for u, members in enumerate(f.units)
                  if f.pin[members[0]] < 0 and len(f.unit_allowed[u]) > 1)
    low, high = CYCLE_MOVES
    return min(high, max(low, CYCLE_PER_UNIT * movable))


def move_levels(problem: Problem) -> list[list[tuple[int, ...]]]:
    """Groups of movable units, per level from coarse to fine (module docstring).

    Each group is a sorted tuple of unit indices (`planner.facts` units); pinned units and
    units with a single allowed device are left out, and so are groups that would be empty.
    """
    f = facts(problem)
    movable = [u for u, members in enumerate(f.units)
               if f.pin[members[0]] < 0 and len(f.unit_allowed[u]) > 1]
    if not movable:
        return []
    names = [_SPLIT.split(problem.graph.ops[f.units[u][0]].name) for u in movable]
    levels: list[list[tuple[int, ...]]] = []
    seen: set[int] = set()
    structured = any(len(parts) > 1 for parts in names)
    if structured:
        for depth in range(1, 9):
            by_prefix: dict[str, list[int]] = {}
            for u, parts in zip(movable, names, strict=True):
                by_prefix.setdefault("/".join(parts[:depth]), []).append(u)
            _add_level(levels, seen, list(by_prefix.values()), len(movable))
        levels.extend(_cross_levels(movable, names, levels))
        levels.sort(key=len)  # stable: prefix levels keep their order among themselves
    if not levels:  # no structured names, or names that group nothing (ONNX's `n15.Conv`)
        pos = {i: k for k, i in enumerate(problem.graph.topological_order)}
        ordered = sorted(movable, key=lambda u: pos[f.units[u][0]])
        size = len(ordered) // 2
        while size > 1:
            _add_level(levels, seen, [ordered[k:k + size] for k in range(0, len(ordered), size)],
                       len(movable))
            size //= 2
    singles = [[u] for u in movable]
    if len(movable) not in seen:
        levels.append([tuple(g) for g in singles])
    return levels


def _cross_levels(movable: list[int], names: list[list[str]],
                  kept: list[list[tuple[int, ...]]]) -> list[list[tuple[int, ...]]]:
    """Per position k = 2..7, the units grouped by (first component, k-th component), groups
    of one left out (the last level moves every unit alone); a level equal to one kept
    already, or of fewer than two groups, is dropped."""
    known = {frozenset(level) for level in kept}
    levels = []
    for k in range(2, 8):
        by_key: dict[tuple[str, str], list[int]] = {}
        for u, parts in zip(movable, names, strict=True):
            if len(parts) > k:
                by_key.setdefault((parts[0], parts[k]), []).append(u)
        level = [tuple(sorted(g)) for g in by_key.values() if len(g) > 1]
        if len(level) > 1 and frozenset(level) not in known:
            known.add(frozenset(level))
            levels.append(level)
    return levels


def _add_level(levels: list[list[tuple[int, ...]]], seen: set[int],
               groups: list[list[int]], total: int) -> None:
    """Append a level unless it has as many groups as one kept already, or only one."""
    if 1 < len(groups) < total and len(groups) not in seen:
        seen.add(len(groups))
        levels.append([tuple(sorted(g)) for g in groups])


@dataclass
class Scorer:
    """Simulates placements (memoised) and keeps the best plan seen."""

    problem: Problem
    budget: int
    deadline: float
    #: moves tried (the budget's unit) and simulations run
    moves: int = 0
    used: int = 0
    #: moves in a row to placements already seen
    revisits: int = 0
    best: float = math.inf
    best_plan: Plan | None = None
    cache: dict[tuple[int, ...], float] = field(default_factory=dict)
    progress: Any = None
    #: stop after this many moves in a row without a new best (None: never)
    stall: int | None = None
    capped: bool = False
    stalled: bool = False
    #: the annealing stopped after `MAX_REVISITS` moves in a row to placements seen before
    revisited: bool = False
    #: the move at which the best so far was found
    found_at: int = 0
    #: the move at which annealing began (0: not yet); `stall` counts from there at most
    annealing: int = 0

    #: the problem's `fastsim.Evaluator`
    evaluator: Evaluator = field(init=False)

    def __post_init__(self) -> None:
        self.evaluator = evaluator(self.problem)

    @property
    def exhausted(self) -> bool:
        """The budget is spent (or the search stalled, or the wall clock reached the limit)."""
        if self.moves >= self.budget:
            return True
        if self.annealing and self.stall is not None and \
                self.moves - max(self.found_at, self.annealing) >= self.stall:
            self.stalled = True
            return True
        if time.monotonic() > self.deadline:
            self.capped = True
            return True
        return False

    def score(self, placement: Sequence[int]) -> float:
        """The simulated makespan of `placement` (inf when infeasible), memoised."""
        key = tuple(placement)
        self.moves += 1
        known = self.cache.get(key)
        if known is not None:
            self.revisits += 1
            return known
        self.revisits = 0
        self.used += 1
        ev = self.evaluator
        value = ev.makespan(key)  # the simulator's dynamic dispatch
        if value < self.best:
            self._keep(key)
        self.cache[key] = value
        return value

    def _keep(self, key: tuple[int, ...]) -> None:
        """Keep `key` with the order dispatch gave it as the best plan, if that plan, run
        in its own order, beats the best. Judged so because that is how the plan returned
        will be simulated, and under contention two zero-time ops that end together may
        send their tensors in another order than dispatch did: on MSR's ResNet-50 training
        graph the search reported 1034 ms for a plan that simulated at 1225 ms."""
        ev = self.evaluator
        order = tuple(tuple(int(i) for i in seq) for seq in ev.run(key).order)
        own = ev.run(key, order)
        if own.violations or not own.makespan_s < self.best:
            return
        plan = Plan(key, order, tuple(float(t) for t in own.start_s), "search")
        self.best, self.best_plan, self.found_at = own.makespan_s, plan, self.moves
        if self.progress is not None:
            self.progress(min(1.0, self.moves / self.budget),
                          f"search: best {self.best * 1e3:.3f} ms")


def _apply(placement: list[int], units: Sequence[tuple[int, ...]], group: Sequence[int],
           device: int, allowed: Sequence[tuple[int, ...]]) -> bool:
    """Move every unit of `group` that may use `device` there; whether anything moved."""
    moved = False
    for u in group:
        if device in allowed[u] and placement[units[u][0]] != device:
            for i in units[u]:
                placement[i] = device
            moved = True
    return moved


def _descend(scorer: Scorer, start: list[int], value: float,
             levels: list[list[tuple[int, ...]]]) -> tuple[list[int], float]:
    """Multilevel coordinate descent from `start` (simulated at `value`; module docstring);
    returns the local optimum."""
    f = facts(scorer.problem)
    m = len(scorer.problem.cluster.devices)
    current = list(start)
    scorer.cache[tuple(current)] = value
    for level in levels:  # coarse to fine, each until a pass over it improves nothing
        improved = True
        while improved:
            improved = False
            for group in level:
                for d in range(m):
                    if scorer.exhausted:
                        return current, value
                    trial = list(current)
                    if not _apply(trial, f.units, group, d, f.unit_allowed):
                        continue
                    v = scorer.score(trial)
                    if v < value * (1 - 1e-12):
                        current, value, improved = trial, v, True
    return current, value


def _anneal(scorer: Scorer, start: list[int], value: float,
            levels: list[list[tuple[int, ...]]], rng: random.Random) -> None:
    """Simulated annealing for the rest of the budget, in cycles that each start from the
    best plan seen (module docstring)."""
    f = facts(scorer.problem)
    m = len(scorer.problem.cluster.devices)
    current = list(start)
    first = scorer.moves
    scorer.annealing = max(1, first)
    cycle = anneal_cycle(scorer.problem)
    began = first  # the move at which the current cycle began
    t0 = 0.01 * value if math.isfinite(value) else 0.0
    while not scorer.exhausted:
        if scorer.revisits >= MAX_REVISITS:
            scorer.revisited = True
            break
        if scorer.moves - began >= cycle and scorer.best_plan is not None:
            # the next cycle, twice as long, from the best plan seen
            began, cycle = scorer.moves, 2 * cycle
            current, value = list(scorer.best_plan.placement), scorer.best
            t0 = 0.01 * value if math.isfinite(value) else 0.0
        temperature = t0 * (1.0 - (scorer.moves - began) / cycle)
        level = levels[min(len(levels) - 1, int(len(levels) * rng.random() ** 0.5))]
        trial = list(current)
        if rng.random() < 0.2 and len(level) > 1:  # swap two groups' devices
            a, b = rng.sample(range(len(level)), 2)
            da, db = trial[f.units[level[a][0]][0]], trial[f.units[level[b][0]][0]]
            if da == db:
                scorer.moves += 1  # a move that changes nothing still counts
                continue
            moved = _apply(trial, f.units, level[a], db, f.unit_allowed)
            moved = _apply(trial, f.units, level[b], da, f.unit_allowed) or moved
        else:
            moved = _apply(trial, f.units, level[rng.randrange(len(level))],
                           rng.randrange(m), f.unit_allowed)
        if not moved:
            scorer.moves += 1
            continue
        v = scorer.score(trial)
        if v < value or (math.isfinite(v) and temperature > 0
                         and rng.random() < math.exp(-(v - value) / temperature)):
            current, value = trial, v


def warm_up(problem: Problem, options: Options) -> None:
    """Before the clock starts: import the heuristics (`portfolio.warm_up`) and load the
    compiled simulator, when numba's cache holds it. Importing numba and loading the kernel
    take 0.4-0.9 s (more on a loaded machine), which `--time-limit 1` spent before its
    first move ("ran out after 0 of 9889 moves")."""
    if problem.pipeline is None:  # `pipesearch` simulates with `planner.simulate`
        portfolio.warm_up()
        compiled_ready()


def place(problem: Problem, options: Options) -> Solution:
    """Search from the best constructive plan (module docstring); under `objective
    pipeline`, from auto's plan, by cut moves and unit moves (`pipesearch`)."""
    if problem.pipeline is not None:
        return pipesearch.place(problem, options)
    warm_up(problem, options)
    deadline = cap(options.time_limit_s)
    # the heuristics expected within the limit, as `auto` runs them (before, every one:
    # 44 s of a 106,000-op graph's planning at `--time-limit 5`)
    ranked = rank(problem, options, progress_share=0.1,
                  limit_s=options.time_limit_s or None, until_found=True)
    seconds = options.time_limit_s
    cut = False
    if ranked.best is None:  # the enumeration takes half of the limit, the moves the rest
        seconds /= 2
        ranked, cut = _enumerated(problem, seconds, ranked, deadline)
    compiled = compiled_ready()
    budget = move_budget(problem, search_seconds(problem, ranked, seconds), compiled=compiled)
    found = improve(problem, ranked, options, budget, deadline=deadline,
                    cut=("in the enumeration of its start",) if cut else (),
                    python_budget=not compiled)
    if not ranked.skipped:
        return found
    return replace(found, info=MappingProxyType({
        **found.info, "skipped": dict(ranked.skipped)}))  # as auto's `skipped` says them


def _enumerated(problem: Problem, seconds: float, ranked: Ranked,
                deadline: float) -> tuple[Ranked, bool]:
    """No heuristic found a plan: under `memory liveness`, where nothing proves none exists,
    start from `enumeration`'s fastest plan (its budget from `seconds` of the limit), and
    whether the wall clock cut the enumeration; else E819, a proof, when the enumeration
    covered every plan, or the error of `none_found` (then E821, exit 6, when the time
    limit cut the enumeration)."""
    error = none_found(problem, list(ranked.errors), tuple(ranked.skipped))
    if problem.memory_model != "liveness" or diagnose(problem):
        raise error
    found = enumerate_plans(problem, simulation_budget(problem, seconds), deadline)
    if found.plan is None:
        raise none_enumerated(problem, error, found)
    return replace(
        ranked, plans=(("enumeration", found.makespan_s, found.plan),),
        candidates={**ranked.candidates, "enumeration": found.makespan_s}), found.cut


def search_seconds(problem: Problem, ranked: Ranked, seconds: float) -> float:
    """The seconds of `seconds` a search after `ranked`'s heuristics may plan for:
    what their expected time (`portfolio.estimated_seconds`, the budget's `LOAD_HEADROOM`
    taken into account) leaves; 0 or less when nothing is left."""
    spent = sum(estimated_seconds(problem, name) for name in ranked.candidates
                if name not in ranked.skipped and name != "warm_start")
    return seconds - spent / LOAD_HEADROOM


def improve(problem: Problem, ranked: Ranked, options: Options, budget: int, *,
            stall: int | None = None, deadline: float | None = None,
            cut: Sequence[str] = (), python_budget: bool = False) -> Solution:
    """Search from `ranked`'s best plan for `budget` moves (module docstring).

    `stall`: stop annealing once this many moves in a row found nothing better (`auto`: a
    search that has stopped paying should not spend the user's time; the descent, which
    ends by itself, always runs to its end or the budget). `deadline`: the wall-clock cap
    (`cap`; by default the limit from now); `cut`: where the clock cut the work before
    (its start's enumeration), said in `reason` with the moves' own cut;
    `python_budget`: `budget` was sized for `planner.simulate` (`PYTHON_BUDGET`). Raises
    `Interrupted` with the best plan so far on Ctrl-C.
    """
    assert ranked.best is not None
    name, first, start_plan = ranked.best
    if deadline is None:
        deadline = cap(options.time_limit_s)
    scorer = Scorer(problem, budget, deadline, progress=options.progress, stall=stall)
    scorer.best, scorer.best_plan = first, start_plan
    if options.progress is not None:  # the best so far, before any move improves on it
        options.progress(0.0, f"search: from {name}, best {first * 1e3:.3f} ms")
    start = list(start_plan.placement)
    try:
        levels = move_levels(problem)
        if levels:
            best_start, best_value = _descend(scorer, start, first, levels)
            single = next(((p, v) for n, v, p in ranked.plans if n == "single"), None)
            if single is not None and list(single[0].placement) != start:
                other, other_value = _descend(scorer, list(single[0].placement), single[1],
                                              levels)
                if other_value < best_value:
                    best_start, best_value = other, other_value
            _anneal(scorer, best_start, best_value, levels, random.Random(options.seed))
    except KeyboardInterrupt:
        raise Interrupted(_solution(scorer, name, first, "interrupted", budget, cut,
                                    python_budget)) from None
    return _solution(scorer, name, first, "feasible", budget, cut, python_budget)


def _solution(scorer: Scorer, start: str, first: float, status: Any, budget: int,
              cut: Sequence[str] = (), python_budget: bool = False) -> Solution:
    assert scorer.best_plan is not None
    info: dict[str, Any] = {
        "start": start, "start_makespan_s": first, "objective_s": scorer.best,
        "simulations": scorer.used, "moves": scorer.moves, "budget_moves": budget,
    }
    where = [*cut, *([f"after {scorer.moves} of {budget} moves" if scorer.moves
                      else f"before the first of its {budget} moves"] if scorer.capped else [])]
    if where:  # said once, for every phase the clock cut
        info["reason"] = cut_reason(where)
    if python_budget:
        info["simulator"] = python_budget_note()
    if scorer.stalled:
        info["stopped"] = f"{STALLED} {scorer.stall} moves"
    elif scorer.revisited:  # the text shows why it stopped short of its budget, as a stall
        info["stopped"] = (f"{REVISITED} its last {MAX_REVISITS} moves in a row came back to "
                           "placements seen before")
    plan = scorer.best_plan.with_algorithm("search")
    if status == "feasible":  # what `auto` would say of this plan: optimal when at the bound
        verdict = judge(scorer.problem, plan)
        status = verdict.status
        info.update(bound_s=verdict.bound_s, gap=verdict.gap, why=verdict.why)
    return Solution(plan, status, MappingProxyType(info))
