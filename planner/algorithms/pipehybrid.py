"""`hybrid`: pipeline stages replicated over groups of devices (data parallelism inside a
stage), chosen by dynamic programming and judged by the simulator.

The model is `planner.pipeline.hybrid`'s: a stage on a group of r devices takes every r-th
micro-batch on each replica, and its gradients are all-reduced among the group once per
iteration. The devices are taken in the cluster's order (so a node's devices, declared
together, form groups inside the node, and the slow links between nodes carry the
pipeline's activations, not the all-reduces); the stages take consecutive blocks of them.
Where units are pinned, the DP also runs on that order rotated to start at each pinned
device and just after its block (`device_orders`), so that a pinned stage may come first
or last.

**The DP** (PipeDream's, over units and devices used, with a replication choice per stage;
extended to heterogeneous groups, whose slowest replica paces the stage, and to node
hierarchies, whose slowest link paces the ring). Over the units' candidate cuts, from the
last stage back: `best[i][p]` is the least cost of units `[i, n)` on the last p of the
devices used, each stage `[i, j)` on the next r of them costing

    F(i) + W(i, j, r) + max(B(i), A(i, j, r))

(F, B: the forward and the backward compute of the units before i, one micro-batch's way
in and its way back once the stage is done, each unit at its fastest device's pace: their
layout is not the stage's to know; A: the ring all-reduce of its gradients,
`cost.allreduce_time`, which runs while the way back does; W: a replica's time from its
first micro-batch in to its last one out), and a layout costs its costliest stage. A
replica takes `ceil(M / r)` micro-batches, each `max(C(i, j), X(i, j))` (C: the stage's
compute per micro-batch on its slowest replica; X: its boundaries' transfers), and in
training waits for its first backward: D(j) (the transfers to the stage after and back,
and the compute of the units after j, at their fastest), less the forwards it runs
meanwhile (its micro-batches in flight but one: `in_flight` below). Under 1F1B, where a
replica holds fewer micro-batches than its share, it starts a micro-batch only once the
one `in_flight` before it came back, and W is no less than

    ceil(ceil(M / r) / in_flight) * (C(i, j) + D(j))

(not under `interleaved`, whose virtual stages hold micro-batches otherwise). Every term
is the stage's alone, so the DP stays exact for its cost. `schedule.run` is the judge of
each: without the round trips a stage of one device ahead of a replicated one looked as
cheap as its own compute, and the DP chose deep pipelines that simulate slower
(Inception-v3's PipeDream profile on a DGX-1, 8 micro-batches, 400 cuts: 0.98 s by the
DP, 1.49 s simulated). A stage's replica must hold its params, its micro-batches in
flight (`hybrid.in_flight`: under 1F1B `ceil(p / r)` with p the devices from it to the
last stage), the largest transient and one DDP bucket.

The DP gives the best layout for each count of devices used (and, on alike devices under
`data_parallel auto`, for each even replica count: `even_replicas`; each order and count a
group of candidates of its own, `candidate_groups`, the fastest group's best kept);
every one is simulated
(`pipeline.schedule.run` with its replicas; under `auto` within its limit's simulations,
least DP cost first: `best`), with one stage on all devices (pure data parallelism), and
the shortest simulated iteration that fits wins; its cuts are then moved
a unit or two either way while the simulated iteration shortens, within a budget of
simulated ops (`refine`). Past `pipedp.MAX_SIMULATED_OPS` copied
ops the DP's cost compares them instead. Under `data_parallel auto` or `1`, `pipedp`'s split
(one device per stage, on any chain: the cluster's order may miss it, as where the last
layer is pinned to the last device; under `interleaved`, its split for 1F1B where it keeps
that) has its cuts moved alike and wins where it runs faster, so that `hybrid` is never
slower than `pipedp`. `auto` keeps this plan only when it runs
faster than its other candidates (`autopipe._hybrid`). `data_parallel N` fixes r = N for
every stage (N identical pipelines), and a pin binds the first replica alone
(`hybridstage.replica_units`). The stage cost is `hybridstage.Start`'s.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from ..cost import (
    INF,
    costs,
)
from ..errors import Diagnostic, InfeasibleError
from ..model import Pipeline, Problem, derived
from ..pipeline import hybrid
from ..pipeline.schedule import run as run_pipeline
from ..pipeline.split import Split, fits, split_of, stage_bytes
from ..pipeline.splitdp import candidate_cuts, most_stages
from ..pipeline.units import units
from ..plan import Plan
from . import dphints, pipedp, pipehints
from .base import Options, Solution
from .hybridstage import Start, fixed_count, replica_units
from .infeasible import diagnose
from .pipeblocks import check_pins
from .pipedp import MAX_SIMULATED_OPS

#: unit boundaries the DP cuts at (the cheapest to cross in as many windows beyond it)
MAX_CUTS = 400
#: replica counts tried for a stage: all up to this, then powers of two
MAX_EVERY_REPLICA = 16
#: the cut moves of the chosen layout simulate at most this many copied ops (about 0.3 s
#: at `clock.SIMULATED_OPS_PER_SECOND`), and at least `MIN_MOVES` moves
REFINE_COPIED_OPS = 30_000
MIN_MOVES = 4
#: the device orders the DP is run in where there are pins: the cluster's, then rotated to
#: start at each pinned device and just after its block (`device_orders`), at most this
#: many in all
MAX_ORDERS = 4


@dataclass(frozen=True, slots=True)
class Layout:
    """Stages as unit boundaries and a group of devices per stage (its first device
    holds the stage in the plan's placement; `hybrid`)."""

    bounds: tuple[int, ...]
    groups: tuple[tuple[int, ...], ...]

    @property
    def split(self) -> Split:
        """The stages on their first devices."""
        return Split(self.bounds, tuple(g[0] for g in self.groups))

    @property
    def replicas(self) -> dict[int, tuple[int, ...]]:
        """Representative -> group, for the replicated stages."""
        return {g[0]: g for g in self.groups if len(g) > 1}


def place(problem: Problem, options: Options, *, pure: bool = True,
          split: Sequence[int] | None = None, moves: float = REFINE_COPIED_OPS,
          cuts: int = MAX_CUTS, runs: int = sys.maxsize, explain: bool = True) -> Solution:
    """The best hybrid layout (module docstring) as a plan; `info["replicas"]` names each
    replicated stage's group. With `pure` (unless `data_parallel N` asks for replicas),
    `pipedp`'s split (`split`, where `auto` ran pipedp) is a candidate too: one device per
    stage on any chain, which the DP's consecutive blocks may miss; `moves`: `refine`'s;
    `cuts`: the DP's candidate cuts at most, `runs` its layouts simulated (`best`; `auto`
    sizes both to its limit); without `explain` (`auto`, which drops the error) E712 is
    raised without its hints' split searches."""
    pipeline = problem.pipeline or Pipeline()
    if fixed_count(pipeline) not in (None, 1):
        check_pins(problem, int(pipeline.data_parallel))
    groups = candidate_groups(problem, pipeline, cuts)
    pure = pure and fixed_count(pipeline) in (None, 1)
    chain = _pure(problem, pipeline, options, split) if pure else None
    if not any(groups) and chain is None:
        raise _no_layout(problem, pipeline, explain, cuts)
    chosen, figures, left = _chosen(problem, pipeline, groups, runs, moves)
    if chain is not None and chain not in figures:  # kept where it runs faster, or alone fits
        figures[chain] = iteration(problem, pipeline, chain)
        if simulated(problem, pipeline):
            chain = refine(problem, pipeline, chain, figures, moves)
        if chosen is None or figures[chain] < figures[chosen]:
            chosen = chain
    assert chosen is not None
    return solution(problem, pipeline, chosen, figures, left)


def _chosen(problem: Problem, pipeline: Pipeline, groups: list[list[Layout]], runs: int,
            moves: float) -> tuple[Layout | None, dict[Layout, float], int]:
    """Per group of candidates (`candidate_groups`: per device order, the DP's layouts,
    then those of even replicas), its best layout (`best`) with its cuts moved (`refine`),
    and the fastest of those (the earlier group on ties); every layout's iteration; the
    DP's layouts left unsimulated. Each group's own: the fastest layout before its cuts
    move need not be the fastest after (a pinned layer's order found one stage at 96 ms,
    where the cluster's best, 118.1 ms, moved to 84.4 ms). The first group takes `runs`
    simulations (`auto`'s share of its limit's), the others what it leaves, none once a
    plan is chosen and they are spent."""
    chosen: Layout | None = None
    figures: dict[Layout, float] = {}
    left = 0
    for k, found in enumerate(groups):
        share = runs if k == 0 or runs == sys.maxsize else runs - len(figures)
        if not found or (chosen is not None and share <= 0):
            left += len(found)
            continue
        lay, seen = best(problem, pipeline, found, share)
        left += len(found) - len(seen)
        figures.update(seen)
        if simulated(problem, pipeline):
            lay = refine(problem, pipeline, lay, figures, moves)
        if chosen is None or figures[lay] < figures[chosen]:
            chosen = lay
    return chosen, figures, left


def _no_layout(problem: Problem, pipeline: Pipeline, explain: bool,
               cuts: int = MAX_CUTS) -> InfeasibleError:
    """The proofs that no placement fits (what `check` says), else E712; under `data_parallel
    N` each stage has N replicas, each with a DDP bucket more. Its hints are checked: without
    replicas pipedp's, by its split search (pipedp's split is a candidate layout); under
    `data_parallel N` `dphints`', by the DP with each change (`fitting`). Not `explain`ed,
    only more memory is hinted (those searches took half of a 1 s `auto` run on a random
    8-device GPipe spec, for an error auto drops)."""
    if proofs := diagnose(problem):
        return InfeasibleError(proofs)
    alone = (fixed := fixed_count(pipeline)) in (None, 1)
    each = ("replicated or not" if alone else
            f"each on {fixed} replicas, as `data_parallel {fixed}` asks")
    fewer = (("give the devices more `memory`",) if not explain else
             pipehints.in_flight_hints(problem, pipeline, pipedp.one_fits(problem, pipeline))
             if alone else dphints.data_parallel_hints(
                 problem, pipeline, lambda p, pipe: fitting(p, pipe, cuts)))
    return InfeasibleError(Diagnostic(
        "E712", f"no hybrid layout of plan `{problem.name}` (stages on consecutive devices "
        f"in the cluster's order, {each}) fits the devices' memory and the devices its "
        f"units may use{dphints.stage_cap_words(problem, pipeline)}", None,
        (*fewer, *(("pins that follow neither the cluster's device order nor its rotations "
                    "from a pinned device leave the hybrid DP no layout (`--algo pipedp` "
                    "tries device chains in any order)",)
                   if problem.pins else ()))))  # (before: said of specs without pins too)


def fitting(problem: Problem, pipeline: Pipeline, cuts: int = MAX_CUTS
            ) -> tuple[int, ...] | None:
    """A change's check for E712's hints (`dphints`): the replicas per stage of the DP's
    layout of least cost that fits under `pipeline`, None where none does or a pin starts
    no block (pipedp's split is not searched: its search of every chain cost 1 s of a 10 s
    E712 on Inception-v3's PipeDream profile under `data_parallel 4`)."""
    if (n := fixed_count(pipeline)) not in (None, 1):
        try:
            check_pins(problem, n)
        except InfeasibleError:
            return None
    found = candidates(problem, pipeline, cuts)
    if not found:
        return None
    lay = min(found, key=lambda lay: layout_cost(problem, pipeline, lay))
    return tuple(map(len, lay.groups))


def _pure(problem: Problem, pipeline: Pipeline, options: Options,
          placement: Sequence[int] | None) -> Layout | None:
    """pipedp's split (`placement`, where given) as a layout, or None where none fits."""
    try:
        placement = placement or pipedp.place(problem, options).plan.placement
    except InfeasibleError:
        return None
    split = split_of(problem, placement)
    lay = Layout(split.bounds, tuple((d,) for d in split.devices))
    if _fits(problem, pipeline, lay):
        return lay
    # the schedule it runs may hold fewer micro-batches than the split model's count (one
    # device, under `interleaved`): the report's memory, by the run, is the judge
    ran = run_pipeline(problem, placement, pipeline)
    return lay if _allowed(problem, lay) and fits(problem, ran.memory_bytes) else None


def refine(problem: Problem, pipeline: Pipeline, lay: Layout, figures: dict[Layout, float],
           budget: float = REFINE_COPIED_OPS) -> Layout:
    """The cut moves of the chosen layout: each cut shifted by one or two units either way
    (its groups kept), a move kept when its simulated iteration is shorter, until no move
    pays or `budget` copied ops were simulated, `MIN_MOVES` moves at least (a budget of the
    graph's size and the limit alone: the same plan on any machine). `figures` gains each."""
    copies = max(1, pipeline.microbatches * len(problem.graph.ops))
    left = max(MIN_MOVES, int(budget // copies))
    better = True
    while better and left > 0:
        better = False
        for k in range(1, len(lay.bounds) - 1):
            for step in (-1, 1, -2, 2):
                x = lay.bounds[k] + step
                if not lay.bounds[k - 1] < x < lay.bounds[k + 1] or left <= 0:
                    continue
                moved = Layout((*lay.bounds[:k], x, *lay.bounds[k + 1:]), lay.groups)
                if moved not in figures:
                    left -= 1
                    figures[moved] = iteration(problem, pipeline, moved)
                if figures[moved] < figures[lay]:
                    lay, better = moved, True
    return lay


def solution(problem: Problem, pipeline: Pipeline, chosen: Layout,
             figures: dict[Layout, float], left: int = 0) -> Solution:
    """`chosen` as a plan with its figures (`left`: the DP's layouts `best` did not
    simulate, its limit's simulations spent)."""
    some = (f"; {left} more of the DP's, of greater DP cost, not simulated within the "
            "limit" if left else "")
    info: dict[str, object] = {
        "stages": len(chosen.groups),
        "replicas": hybrid.replica_names(problem, chosen.replicas),
        "layout": [len(g) for g in chosen.groups],
        "iteration_s": figures[chosen],
        "candidates_compared_by": (
            f"simulation ({len(figures)} layout(s){some}, the chosen one's cuts moved)"
            if simulated(problem, pipeline) else
            f"estimate ({len(figures)} layout(s)): the DP's cost, its costliest stage's "
            f"way in, busy time, and way back or all-reduce, the longer (the "
            f"{pipeline.microbatches} copies of the graph pass {MAX_SIMULATED_OPS:_} ops)"),
    }
    plan = Plan(chosen.split.placement(problem), algorithm="hybrid")
    return Solution(plan, "feasible", MappingProxyType(info))


def best(problem: Problem, pipeline: Pipeline, found: Sequence[Layout],
         runs: int = sys.maxsize) -> tuple[Layout, dict[Layout, float]]:
    """The layout of `found` whose simulated iteration is shortest among those that fit
    (ties: fewer devices, then fewer stages, then the DP's order); each one's iteration.
    Where `runs` (`auto`'s share of its limit's simulations) is fewer than the layouts,
    those of least DP cost (`layout_cost`) are simulated first, `runs` of them and more
    until one fits."""
    order = {lay: k for k, lay in enumerate(found)}
    ranked = list(found)
    if runs < len(found) and simulated(problem, pipeline):
        ranked.sort(key=lambda lay: (layout_cost(problem, pipeline, lay), order[lay]))
    figures: dict[Layout, float] = {}
    for lay in ranked:
        if len(figures) >= max(1, runs) and min(figures.values()) < INF:
            break
        figures[lay] = iteration(problem, pipeline, lay)
    chosen = min(figures, key=lambda lay: (figures[lay], sum(map(len, lay.groups)),
                                           len(lay.groups), order[lay]))
    return chosen, figures


def simulated(problem: Problem, pipeline: Pipeline) -> bool:
    """Whether the layouts are simulated (their M copies of the graph within
    `pipedp.MAX_SIMULATED_OPS` ops), else estimated by the DP's cost."""
    return len(problem.graph.ops) * pipeline.microbatches <= MAX_SIMULATED_OPS


def iteration(problem: Problem, pipeline: Pipeline, lay: Layout) -> float:
    """The simulated iteration of `lay` (on big graphs the DP's cost, `simulated`); inf
    where a replica may not run its stage's units (pins, op times) or runs out of memory."""
    if not _allowed(problem, lay):
        return INF
    if not simulated(problem, pipeline):
        return layout_cost(problem, pipeline, lay)
    ran = run_pipeline(problem, lay.split.placement(problem), pipeline, (), lay.replicas)
    return ran.iteration_s if fits(problem, ran.memory_bytes) else INF


def candidates(problem: Problem, pipeline: Pipeline, cuts: int = MAX_CUTS) -> list[Layout]:
    """The DP's best layout per count of devices used, then pure data parallelism (one
    stage) on the first p devices, each p up to the micro-batches; without repeats, each
    fitting the memory model and, under `1f1b`, of at most M stages
    (`splitdp.most_stages`: torch's `Schedule1F1B`). Pure data parallelism on fewer than
    every device: the DP charges a group's slowest replica ceil(M / r) micro-batches, where
    the run deals them round robin, so on mixed devices it missed the whole model on the
    3 fastest of 4 GPUs (14.7 ms; the plan took 22.6 ms) (helper)."""
    return [lay for found in candidate_groups(problem, pipeline, cuts) for lay in found]


def candidate_groups(problem: Problem, pipeline: Pipeline, cuts: int = MAX_CUTS
                        ) -> list[list[Layout]]:
    """`candidates` in groups: per device order (`device_orders`), the DP's layouts and
    pure data parallelism, then the DP's of each count of even replicas (`even_replicas`);
    each layout in the first group that finds it."""
    out: list[list[Layout]] = []
    seen: set[Layout] = set()
    m, n = len(problem.cluster.devices), units(problem).count
    most = most_stages(problem, pipeline, n)
    cap = pipeline.one_stage_cap  # a layout is a stage per group: under `interleaved`, 1F1B
    most = most if cap is None else min(most, cap)
    r = fixed_count(pipeline)
    # `data_parallel N`: its N replicas alone, where the cluster has them; else 2 to w
    # devices, or the one where w is 1 (as before every p was tried)
    w = min(m, pipeline.microbatches)
    widths = range(min(2, w), w + 1) if r is None else [r] if r <= m else []
    for order in device_orders(problem, pipeline):
        groups = [[*_dp(problem, pipeline, cuts, order),
                   *(Layout((0, n), (order[:p],)) for p in widths)]]
        groups += [_dp(problem, dataclasses.replace(pipeline, data_parallel=k), cuts,
                       order) for k in even_replicas(problem, pipeline)]
        for found in groups:
            out.append([])
            for lay in found:
                if len(lay.groups) <= most and lay not in seen and _fits(problem, pipeline,
                                                                         lay):
                    seen.add(lay)
                    out[-1].append(lay)
    return out


def even_replicas(problem: Problem, pipeline: Pipeline) -> list[int]:
    """Under `data_parallel auto` on alike devices (one DP pass), the replica counts r > 1
    that divide the devices and the micro-batches' count at most, whose layouts of r
    replicas a stage the DP also finds (as `data_parallel r` would): its best layout per
    device count is the least DP cost's, which need not simulate fastest. Before, on 4
    GPUs, one stage of 4 replicas (48 ms), where 2 stages of 2 run 42 ms (helper)."""
    m = len(problem.cluster.devices)
    if fixed_count(pipeline) is not None or not one_pass(problem):
        return []
    return [k for k in range(2, min(m, pipeline.microbatches) + 1) if m % k == 0]


def device_orders(problem: Problem, pipeline: Pipeline) -> list[tuple[int, ...]]:
    """The device orders whose consecutive blocks the stages take: the cluster's, and where
    units are pinned, that order rotated to start at each pinned device and just after its
    block (of N under `data_parallel N`, else the device alone), so that the pinned
    stage may come first or last (`MAX_ORDERS` in all, the earliest pinned devices first).
    Before, only the cluster's: under `data_parallel 2` with the first layer pinned to gpu2
    of four, the model's input placeholder took gpu0 and gpu1 as a stage of its own,
    301.9 us, where gpu2 and gpu3, then gpu0 and gpu1, run 254.5 us (helper)."""
    m = len(problem.cluster.devices)
    block = fixed_count(pipeline) or 1
    starts = dict.fromkeys(s for d in sorted(set(problem.pins.values()))
                           for s in (d, (d + block) % m) if s)
    return [tuple(range(m))] + [tuple((d + k) % m for k in range(m))
                                for d in list(starts)[:MAX_ORDERS - 1]]


def _fits(problem: Problem, pipeline: Pipeline, lay: Layout) -> bool:
    """Whether every replica may run its stage's units (pins, op times) and holds them."""
    return _allowed(problem, lay) and fits(problem, stage_bytes(problem, lay.split, pipeline,
                                                                (), lay.replicas))


def _allowed(problem: Problem, lay: Layout) -> bool:
    """Whether every replica may run its stage's units (pins, op times; `replica_units`)."""
    u, rest = units(problem), replica_units(problem)
    return all(group[0] in u.allowed[x] and set(group[1:]) <= set(rest.allowed[x])
               for k, group in enumerate(lay.groups)
               for x in range(lay.bounds[k], lay.bounds[k + 1]))


@dataclass(frozen=True, slots=True)
class _Tables:
    """What the DP reads per unit boundary, beyond `Units`."""

    cuts: NDArray[np.int64]
    #: [x]: gradient bytes of units [0, x) (forward ops' params with backward ops)
    grad_prefix: NDArray[np.float64]
    #: per tie of trained ops: its holders' units (sorted) and its bytes, which a stage
    #: holding k of them reduces once, not k times (`hybrid.gradient_buckets`)
    ties: tuple[tuple[NDArray[np.int64], float], ...] = ()


def _tables(problem: Problem, most: int = MAX_CUTS) -> _Tables:
    return derived(problem, f"pipehybrid.tables_{most}", lambda: _derive(problem, most))


def _derive(problem: Problem, most: int) -> _Tables:
    u, g = units(problem), problem.graph
    trained = set(g.backward_of.values())
    grad = np.zeros(u.count)
    for k, ops in enumerate(u.members):
        grad[k] = sum(g.ops[i].params_bytes for i in ops if i in trained)
    ties = tuple((np.array(sorted(u.unit_of[i] for i in tie.ops), dtype=np.int64),
                  float(tie.bytes)) for tie in g.ties if all(i in trained for i in tie.ops))
    return _Tables(candidate_cuts(u, most), np.concatenate([[0.0], np.cumsum(grad)]), ties)


def replica_counts(p: int, pipeline: Pipeline) -> list[int]:
    """The replica counts a stage with p devices left may take."""
    if (r := fixed_count(pipeline)) is not None:
        return [r] if r <= p else []
    top = min(p, pipeline.microbatches)
    return [k for k in range(1, top + 1) if k <= MAX_EVERY_REPLICA or not k & (k - 1)]


def _dp(problem: Problem, pipeline: Pipeline, most: int = MAX_CUTS,
        order: Sequence[int] | None = None) -> list[Layout]:
    """The best layout per count of devices used, the devices taken in `order` (the
    cluster's where None; module docstring). On identical devices
    joined by identical links a stage's cost does not depend on which devices it takes,
    so one pass serves every count; otherwise one pass per count. `most`: cuts at most.
    The passes run side by side, a start at a time: each pass reads only its own table,
    and a start's costs, asked again by every pass, are kept only while it is the one."""
    u, t, c = units(problem), _tables(problem, most), costs(problem)
    m = len(problem.cluster.devices)
    seq = tuple(range(m)) if order is None else tuple(order)
    cuts = t.cuts
    k_n = len(cuts) - 1
    passes = [m] if one_pass(problem) else list(range(1, m + 1))  # devices [0, used)
    best = {used: np.full((k_n + 1, m + 1), INF) for used in passes}
    choice = {used: np.zeros((k_n + 1, m + 1, 2), dtype=np.int64)  # (end cut index, replicas)
              for used in passes}
    for used in passes:
        best[used][k_n, 0] = 0.0
    for a in range(k_n - 1, -1, -1):
        start = Start(problem, u, t.grad_prefix, int(cuts[a]), cuts[a + 1:], t.ties)
        for used in passes:
            table = best[used]
            for p in range(1, used + 1):
                first = used - p
                for r in replica_counts(p, pipeline):
                    group = seq[first:first + r]
                    cost = start.cost(problem, c, pipeline, group, first + r < used, p)
                    total = np.maximum(cost, table[a + 1:, p - r])
                    j = int(np.argmin(total))
                    if total[j] < table[a, p]:
                        table[a, p] = total[j]
                        choice[used][a, p] = (a + 1 + j, r)
    out: list[Layout] = []
    for used in passes:
        for p in range(1, m + 1) if one_pass(problem) else (used,):
            if best[used][0, p] < INF:
                lay = _backtrack(cuts, choice[used], p, used, seq)
                if lay not in out:
                    out.append(lay)
    return out


def layout_cost(problem: Problem, pipeline: Pipeline, lay: Layout) -> float:
    """The DP's cost of `lay` (module docstring), on its own groups: what the DP
    minimises, for the tests' brute force."""
    u, t, c = units(problem), _tables(problem), costs(problem)
    worst = 0.0
    for k, group in enumerate(lay.groups):
        i, j = lay.bounds[k], lay.bounds[k + 1]
        p = sum(map(len, lay.groups[k:]))
        start = Start(problem, u, t.grad_prefix, i, np.array([j]), t.ties)
        cost = start.cost(problem, c, pipeline, group, k + 1 < len(lay.groups), p)
        worst = max(worst, float(cost[0]))
    return worst


def one_pass(problem: Problem) -> bool:
    """Whether every device is alike, every pair joined alike and every unit may run on
    every device (one DP pass serves)."""
    return derived(problem, "pipehybrid.uniform", lambda: _alike(problem))


def _alike(problem: Problem) -> bool:
    c, devs = costs(problem), problem.cluster.devices
    m = len(devs)
    kinds = {(d.kind, d.speed, d.flop_rate, d.memory_bytes) for d in devs}
    pairs = {(c.latency[a][b], c.inv_bandwidth[a][b]) for a in range(m) for b in range(m)
             if a != b}
    everywhere = all(len(a) == m for a in units(problem).allowed)  # no pins, no bans
    return len(kinds) == 1 and len(pairs) <= 1 and everywhere


def _backtrack(cuts: NDArray[np.int64], choice: NDArray[np.int64], p: int,
               used: int, order: Sequence[int]) -> Layout:
    """The layout of `p` devices the DP chose, on the first p of `order` (the pass took
    the last p of `used`: alike where p < used, one pass serving every count)."""
    bounds, groups = [0], []
    a, left = 0, p
    while left > 0:
        b, r = (int(x) for x in choice[a, left])
        first = used - left
        groups.append(tuple(order[d - (used - p)] for d in range(first, first + r)))
        bounds.append(int(cuts[b]))
        a, left = b, left - r
    return Layout(tuple(bounds), tuple(groups))
