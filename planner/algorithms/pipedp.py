"""pipedp: the best contiguous pipeline split, by dynamic programming.

The pipeline units (`planner.pipeline.units`: a layer's forward and backward ops together)
are cut into S contiguous stages, stage k on device `chain[k]`; the split minimises the
period T of `planner.pipeline.split` (the busiest resource for one micro-batch: a device's
compute, or the transfers of a link or a device's channel under the plan's contention,
tensors relayed stage to stage), subject to each device holding its stage's params and
the activations of the micro-batches in flight under the plan's schedule.

For one chain of distinct devices, a stage's load is the larger of its compute and the
transfer resources its two boundaries use (their two directed links, the busier, under
`link`; both boundaries together under `device`, the device's one channel; nothing under
`none`), and the bottleneck recurrence

    f[k][j] = min over i < j of max(f[k - 1][i], load_k(i, j))

is exact (PipeDream's and DAPPLE's partitioning DP; Narayanan et al., SOSP 2019), O(S n^2)
for n units, each row a numpy pass over i. Many splits share the least period: a second
pass keeps, among those, the one whose stage loads have the least sum of squares (the
most even; the simulated iteration rewards balanced non-bottleneck stages, as
torchgpipe's partition has them). The period bounds the steady state only: the fill, the
drain and 1F1B's round trips (a window of S - k micro-batches in flight on stage k waits
for each one's backward pass) pay the transfers' latency too, so per stage count the DP
also finds the best split of three other kinds (`KINDS`): compute alone (torchgpipe's
`balance_by_time`), compute plus every transfer of the stage's boundaries (a
micro-batch's latency through it), and compute or a boundary's transfers both ways,
whichever is more (PipeDream's partitioner). On PipeDream's resnet50 profile at 4 workers
the least-period split (T 205.5 ms) simulates 3.47 s, PipeDream's kind (T 278.3 ms)
3.04 s. Chains: every distinct sequence of devices,
two devices being alike when they have the same kind, speed, FLOP rate and memory and,
for the links, when the chain's consecutive links are alike; on clusters with one link
type that is a sequence of device classes. At most `MAX_CHAINS` per stage count are tried,
the best-linked first; `info["chains"]` says how many there were and how many were tried,
and the split is optimal for the model when all were. Under `1f1b` there are at most M
stages (torch's `Schedule1F1B` needs as many micro-batches as stages).

Under `interleaved` a device runs K stages that share its compute, links and memory, which
a stage-by-stage recurrence cannot see: up to `MAX_ENUMERATED` splits per stage count,
every split of every chain is enumerated and judged by the report's own rules
(`resource_loads`, `stage_bytes`), so the answer is exact; beyond that the DP (each stage
within its device's memory over K) is a heuristic, and `info["split_search"]` says which.

Among stage counts and candidates, the plan whose simulated iteration
(`pipeline.schedule`) is shortest wins (ties: the smaller period, then fewer stages). The
candidates are simulated best estimate first within a budget of simulations set by the
time limit alone (`simulation_budget`); where the M copies of the graph would pass
`MAX_SIMULATED_OPS` ops, or none fits the budget, the best estimate wins instead:
(M - 1) T plus each stage's load once (`estimate`; `info["candidates_compared_by"]` says
which). When the DP's work, stage rows times
candidate cuts squared, would pass `MAX_CELLS`, the cuts are thinned to the cheapest
boundary to cross within each of as many equal windows of units as fit, and
`info["candidate_cuts"]` says so: the split is then the best among those cuts (GNMT's
2,674 units on 4 GPUs: every boundary; a 100,000-op graph on 8 GPUs under `auto`'s
default limit of 10 s: about 260).

When the memory caps change the answer, `info["memory_note"]` says how: the best of the
candidates they ruled out, compared as the plan was chosen (by the simulated iteration, or
the estimate), its stage count, period and iteration, and the device it would overfill.
Caps that rule out only candidates that lose anyway are not mentioned. When the candidate
with the least period is passed over because its iteration is longer, `info["stages_note"]`
says so instead (with 1 TiB devices that was once the "memory" note).

When no split exists, E707 says why (`check_units`, `_no_split`): a unit pinned to two
devices or that no device runs, more stages per device than units, the memory caps (a
split fits without them), or pins that leave the units an order no chain follows.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..cost import INF, costs
from ..errors import Diagnostic, InfeasibleError
from ..model import Pipeline, Problem, derived
from ..pipeline import schedule as pipeline_schedule
from ..pipeline.split import Split, fits, in_flight, resource_loads, stage_bytes
from ..pipeline.units import Units, units
from ..plan import Plan
from ..units import format_bytes, format_seconds
from .base import Options, Solution
from .clock import LOAD_HEADROOM

#: chains of devices tried per stage count (the best-linked first)
MAX_CHAINS = 24
#: device sequences examined per stage count (a cluster of many devices has too many to list)
MAX_EXAMINED = 200_000
#: the DP's work: `DP_PASSES` x (stage rows over all chains tried) x (candidate cuts)^2
#: at most; more and the cuts are thinned (about 5 s on this machine)
MAX_CELLS = 5.6e8
#: the work `auto` gives the DP per second of its time limit (`cells_for`: 3e8 at the
#: default 10 s, about 3.5 s on an idle machine: with the candidates' simulations and the
#: cut moves, half the limit or so, as `clock.LOAD_HEADROOM` wants; a 10,000-op graph on
#: 8 GPUs took 10.7 s of CPU at 5.6e8)
CELLS_PER_SECOND = 3e7
#: the least work, whatever the limit (a few candidate cuts per stage)
MIN_CELLS = 2.8e5
#: the most candidate cuts, whatever the budget
MAX_UNITS = 20_000
#: copies of the graph's ops (micro-batches x ops) up to which a candidate is simulated
MAX_SIMULATED_OPS = 200_000
#: copied ops the simulator runs per second of a time limit on an idle machine (80,000 of a
#: 10,000-op graph, relays included, in about 0.8 s), of which the candidates' simulations
#: get a quarter (`simulation_budget`): the DP has about a third of the limit, and
#: `clock.LOAD_HEADROOM` leaves the rest for a busy machine
SIMULATED_OPS_PER_SECOND = 1e5
#: the DP's passes over the cells per chain and stage count (`search_space`): four kinds
#: of split (`KINDS`), the first two in two passes (least bottleneck, then most even), and
#: the memory note's least period without the caps
DP_PASSES = 7
#: splits enumerated per stage count under `interleaved` (exact there) before the DP
#: (a heuristic there) takes over
MAX_ENUMERATED = 20_000
#: cells of one (starts x ends) block of the DP (numpy arrays of this many float64s)
BLOCK_CELLS = 1 << 20


@dataclass(frozen=True, slots=True)
class Found:
    """The best split for one chain: its period and its boundaries."""

    period_s: float
    split: Split


def place(problem: Problem, options: Options) -> Solution:
    """The best contiguous split (module docstring) as a plan, with the split's figures."""
    return place_within(problem, options, MAX_CELLS)


def place_within(problem: Problem, options: Options, cells: float) -> Solution:
    """`place`, with the DP's work (stage rows x candidate cuts squared) within `cells`
    (`auto` sizes it to its time limit: `cells_for`)."""
    pipeline = problem.pipeline or Pipeline()
    check_units(problem, pipeline)
    space = search_space(problem, pipeline, cells)
    per_stages = split_candidates(problem, pipeline, options, cells=cells)
    if not per_stages:
        raise _no_split(problem, pipeline, cells)
    budget = simulation_budget(options.time_limit_s)
    chosen, runs = _simulated_best(problem, pipeline, per_stages, budget)
    info: dict[str, object] = {
        "period_s": chosen.period_s,
        "stages": chosen.split.stages,
        "chains": f"{space.tried} of {space.total} tried",
    }
    info["iteration_s"] = runs.get(chosen, estimate(problem, pipeline, chosen.split))
    info["candidates_compared_by"] = (
        f"simulation ({len(runs)} candidate(s))" if chosen in runs else
        "estimate: (M - 1) T plus each stage's load once (the candidates' simulations "
        "would pass the time limit's budget)")
    if pipeline.per_device > 1:
        info["split_search"] = (
            "exact: every split of every chain enumerated" if interleaved_exact(
                problem, pipeline, cells) else
            f"heuristic: over {MAX_ENUMERATED} splits per stage count, the per-stage DP (a "
            "device's stages share its compute and memory, which it approximates)")
    n = units(problem).count
    if len(space.cuts) - 1 < n:
        info["candidate_cuts"] = f"{len(space.cuts) - 1} of {n} unit boundaries"
    info.update(_split_notes(problem, chosen, pipeline, cells, per_stages, runs, budget))
    plan = Plan(chosen.split.placement(problem), algorithm="pipedp")
    return Solution(plan, "feasible", info)


def check_units(problem: Problem, pipeline: Pipeline) -> None:
    """E707 with its cause where no pipeline split can exist whatever the memory: a unit
    pinned to two devices, a unit no device can run, more stages per device than units
    under `interleaved` (`check` reports the first and the last in a spec, with codes of
    its own; a problem built in Python and handed to an algorithm may still have them)."""
    u = units(problem)
    devices = problem.cluster.devices
    ops = problem.graph.ops
    for members, allowed in zip(u.members, u.allowed, strict=True):
        if allowed:
            continue
        pinned = {i: problem.pins[i] for i in members if i in problem.pins}
        if len(set(pinned.values())) > 1:
            raise InfeasibleError(Diagnostic(
                "E707", f"no pipeline split of plan `{problem.name}` exists: its pins split "
                "one pipeline unit between devices, "
                + ", ".join(f"`{ops[i].name}` to `{devices[d].name}`" for i, d in pinned.items())
                + " (a forward op, its `backward_of` ops and their colocation groups run on "
                "one stage)", None,
                ("pin them to one device, or plan `objective makespan` (`planner check` "
                 "reports it too)",)))
        raise InfeasibleError(Diagnostic(
            "E707", f"no pipeline split of plan `{problem.name}` exists: no device runs every "
            f"op of the pipeline unit of `{ops[members[0]].name}` (its forward and backward "
            "ops, with their colocation groups)"
            + (f" on its pin `{devices[next(iter(pinned.values()))].name}`" if pinned else ""),
            None, ("give its ops a `time` that applies on one device for all of them",)))
    per = pipeline.per_device
    if u.count < per:
        raise InfeasibleError(Diagnostic(
            "E707", f"no pipeline split of plan `{problem.name}` exists: `stages_per_device "
            f"{per}` asks each device for more stages than the graph has pipeline units "
            f"({u.count})", None,
            (f"set `stages_per_device` to {u.count} or less, or use `schedule 1f1b` "
             "(`planner check` reports it too)",)))


def _no_split(problem: Problem, pipeline: Pipeline, cells: float) -> InfeasibleError:
    """E707, with its cause: the memory caps (a split fits without them), else the devices
    each unit may use (pins, op times), which no chain of stages follows."""
    if best_splits(problem, pipeline, capped=False, cells=cells):
        return InfeasibleError(Diagnostic(
            "E707", f"no contiguous pipeline split of plan `{problem.name}` fits the "
            "devices' memory", None,
            ("fewer micro-batches in flight (`schedule 1f1b`, fewer `microbatches`) hold "
             "fewer activations; or give the devices more `memory`",)))
    return InfeasibleError(Diagnostic(
        "E707", f"no contiguous pipeline split of plan `{problem.name}` honours the devices "
        "its units may use, whatever the memory: the pins (or op times) put units in an order "
        "that no chain of stages, one device after another, follows", None,
        ("`--algo pipeilp` places each unit on any device it may use; or pin the units of "
         "each stage together, stage after stage",)))


@dataclass(frozen=True, slots=True)
class Space:
    """What the DP searches: the device chains per stage count (those tried), how many
    distinct chains there were and were tried, and the candidate cuts."""

    chains: dict[int, list[tuple[int, ...]]]
    tried: int
    total: int
    cuts: NDArray[np.int64]
    #: [i, j]: the largest transient over candidate segments i .. j - 1 (for memory)
    largest: NDArray[np.float64]


def cells_for(time_limit_s: float) -> float:
    """The DP's work for a time limit (`CELLS_PER_SECOND` of it, `MAX_CELLS` at most; a
    limit of 0: no limit): a function of the limit alone, so the plan is the same on any
    machine."""
    if time_limit_s <= 0:
        return MAX_CELLS
    return max(MIN_CELLS, min(MAX_CELLS, CELLS_PER_SECOND * time_limit_s))


def search_space(problem: Problem, pipeline: Pipeline, cells: float = MAX_CELLS) -> Space:
    """The chains and cuts the DP runs over: every unit boundary, unless the chains times
    the squared boundaries would pass `cells` (then the cheapest to cross within as many
    equal windows as fit). Derived once per problem, pipeline and work."""
    spaces: dict[tuple[Pipeline, float], Space] = derived(problem, "pipedp.spaces", dict)
    if (pipeline, cells) not in spaces:
        spaces[pipeline, cells] = _search_space(problem, pipeline, cells)
    return spaces[pipeline, cells]


def _search_space(problem: Problem, pipeline: Pipeline, cells: float) -> Space:
    n = units(problem).count
    chains: dict[int, list[tuple[int, ...]]] = {}
    tried = total = 0
    for stages in range(1, most_stages(problem, pipeline, n) + 1):
        found = list(_chains(problem, stages, pipeline))
        total += len(found)
        chains[stages] = found[:MAX_CHAINS]
        tried += len(chains[stages])
    stage_rows = DP_PASSES * sum(s * len(c) for s, c in chains.items())
    most = max(2, int(math.sqrt(cells / max(stage_rows, 1))))
    cuts = candidate_cuts(units(problem), min(MAX_UNITS, most))
    return Space(chains, tried, total, cuts, _largest_transients(units(problem), cuts))


def best_splits(problem: Problem, pipeline: Pipeline, options: Options | None = None,
                capped: bool = True, cells: float = MAX_CELLS) -> dict[int, Found]:
    """Per stage count, the split with the least period over the chains tried (counts with
    no split that fits are left out; with `capped` False, memory is not looked at)."""
    found = split_candidates(problem, pipeline, options, capped, cells, balanced=False)
    return {s: f[0] for s, f in found.items()}


#: the kinds of split tried per stage count (`split_candidates`): the least period of the
#: model; compute balanced alone (torchgpipe's `balance_by_time`); compute plus every
#: transfer of the stage's boundaries (a micro-batch's latency through the stage, which
#: 1F1B's window of micro-batches in flight pays on its round trip; without it Baechi's
#: GNMT on 4 GPUs runs 450.4 ms instead of 439.9); compute or a boundary's transfers both
#: ways on one channel, whichever is more (PipeDream's partitioner, which counts each
#: cut's activation twice)
KINDS: tuple[str, ...] = ("period", "compute", "latency", "channel")


def split_candidates(problem: Problem, pipeline: Pipeline, options: Options | None = None,
                     capped: bool = True, cells: float = MAX_CELLS, balanced: bool = True,
                     ) -> dict[int, list[Found]]:
    """Per stage count: the split with the least period over the chains tried, then (with
    `balanced`) the best split of each other kind of `KINDS` where it differs, for the
    simulator to judge (the period bounds the steady state; the fill, the drain and
    1F1B's round trips are what the other kinds weigh). Derived once per problem and
    arguments (`search` and `auto` ask for pipedp's again)."""
    cache: dict[tuple[Pipeline, bool, float, bool], dict[int, list[Found]]] = derived(
        problem, "pipedp.candidates", dict)
    key = (pipeline, capped, cells, balanced)
    if key not in cache:
        cache[key] = _split_candidates(problem, pipeline, options, capped, cells, balanced)
    return cache[key]


def _split_candidates(problem: Problem, pipeline: Pipeline, options: Options | None,
                      capped: bool, cells: float, balanced: bool) -> dict[int, list[Found]]:
    u = units(problem)
    space = search_space(problem, pipeline, cells)
    kinds = KINDS if balanced else KINDS[:1]
    per_stages: dict[int, list[Found]] = {}
    done = 0
    for stages, chains in space.chains.items():
        if stages > len(space.cuts) - 1:
            continue
        best: dict[str, Found] = {}
        exact = _enumerable(space, pipeline, stages, len(chains))
        for chain in chains:
            done += 1
            for kind in kinds:
                found = _kind_split(problem, u, space, chain, pipeline, capped, kind,
                                    exact=exact, even=balanced)
                if found is not None and (kind not in best
                                          or found.period_s < best[kind].period_s):
                    best[kind] = found
            if options is not None and options.progress is not None:
                options.progress(done / space.tried * (0.5 if capped else 1.0),
                                 f"pipedp: {stages} stage(s), chain {done} of {space.tried}")
        if best:
            per_stages[stages] = _distinct([best[t] for t in kinds if t in best])
    return per_stages


def _kind_split(problem: Problem, u: Units, space: Space, chain: Sequence[int],
                pipeline: Pipeline, capped: bool, kind: str, *, exact: bool,
                even: bool) -> Found | None:
    """The best split of `chain` of `kind`: enumerated where `exact` (the period's and
    compute's kinds), else by the DP (with its even pass for those two kinds)."""
    if exact and kind in KINDS[:2]:
        return _enumerated(problem, space, chain, pipeline, capped, kind)
    return _best_split(problem, u, space, chain, pipeline, capped, kind,
                       even=even and kind in KINDS[:2])


def _distinct(found: list[Found]) -> list[Found]:
    """`found` without the splits an earlier one has."""
    return [f for k, f in enumerate(found) if f.split not in [g.split for g in found[:k]]]


def interleaved_exact(problem: Problem, pipeline: Pipeline, cells: float = MAX_CELLS) -> bool:
    """Whether, under `interleaved`, every split of every chain tried is enumerated (so the
    answer is exact for the model) rather than found by the per-stage DP, whose memory
    cap (a device's memory over K per stage) and per-stage period are a heuristic there: a
    device's K stages share its compute and memory."""
    space = search_space(problem, pipeline, cells)
    return all(_enumerable(space, pipeline, s, len(c)) for s, c in space.chains.items()
               if s > 1)


def _enumerable(space: Space, pipeline: Pipeline, stages: int, chains: int) -> bool:
    """Whether to enumerate the splits of `stages` stages: under `interleaved` with K > 1,
    when there are at most `MAX_ENUMERATED` of them over the chains."""
    if pipeline.per_device == 1 or stages == 1:
        return False
    return math.comb(len(space.cuts) - 2, stages - 1) * chains <= MAX_ENUMERATED


def _enumerated(problem: Problem, space: Space, chain: Sequence[int], pipeline: Pipeline,
                capped: bool, kind: str) -> Found | None:
    """The split of `chain` with the least period among all (the most even loads on ties),
    by the report's own rules (`resource_loads`, `stage_bytes`); of kind `compute`, the
    least compute instead (torchgpipe's kind)."""
    transfers = kind == "period"
    best: tuple[float, float] | None = None
    found = None
    inner = [int(c) for c in space.cuts[1:-1]]
    for cuts in itertools.combinations(inner, len(chain) - 1):
        split = Split((0, *cuts, int(space.cuts[-1])), tuple(chain))
        if capped and not fits(problem, stage_bytes(problem, split, pipeline)):
            continue
        loads = resource_loads(problem, split)
        if not math.isfinite(loads.period_s):
            continue
        weights = loads.stage_s if transfers else loads.compute_s
        key = (loads.period_s if transfers else max(weights), math.fsum(w * w for w in weights))
        if best is None or key < best:
            best, found = key, split
    return None if found is None else Found(resource_loads(problem, found).period_s, found)


def most_stages(problem: Problem, pipeline: Pipeline, n: int) -> int:
    """Stages at most: a stage per device (K per device under `interleaved`), a unit each,
    and under `1f1b` no more than the micro-batches (torch's `Schedule1F1B` needs as many
    micro-batches as stages)."""
    devices = len(problem.cluster.devices)
    per = pipeline.per_device
    most = min(devices * per, n)
    if pipeline.schedule_spec.stages_at_most_microbatches:
        most = min(most, pipeline.microbatches)
    return most


def candidate_cuts(u: Units, most: int) -> NDArray[np.int64]:
    """Unit boundaries 0..n where stages may begin and end: all of them up to `most`
    units, else the cheapest to cross within each of `most` windows."""
    n = u.count
    if n <= most:
        return np.arange(n + 1)
    crossing = u.forward_bytes + u.backward_bytes + u.forward_count + u.backward_count
    edges = np.linspace(0, n, most + 1).astype(np.int64)
    cuts = [0]
    for lo, hi in itertools.pairwise(edges):
        lo, hi = max(int(lo), cuts[-1] + 1), int(hi)
        if lo < hi < n:
            cuts.append(lo + int(np.argmin(crossing[lo:hi + 1])))
    cuts.append(n)
    return np.array(sorted(set(cuts)), dtype=np.int64)


def _signature(problem: Problem, d: int) -> tuple[object, ...]:
    dev = problem.cluster.devices[d]
    return (dev.kind, dev.speed, dev.flop_rate, dev.memory_bytes)


def _chains(problem: Problem, stages: int, pipeline: Pipeline) -> Iterator[tuple[int, ...]]:
    """Distinct device chains for `stages` stages, the best-linked first (module docstring).
    Under `interleaved`, a chain of D = stages / K devices is repeated K times."""
    per = pipeline.per_device
    if stages % per:
        return
    width = stages // per
    m = len(problem.cluster.devices)
    c = costs(problem)
    kinds: dict[tuple[object, ...], int] = {}
    sig = [kinds.setdefault(_signature(problem, d), len(kinds)) for d in range(m)]
    links: dict[tuple[float, ...], int] = {}
    pair = [[links.setdefault((c.latency[a][b], c.inv_bandwidth[a][b], c.latency[b][a],
                               c.inv_bandwidth[b][a]), len(links)) for b in range(m)]
            for a in range(m)]
    slow = [[max(c.inv_bandwidth[a][b], c.inv_bandwidth[b][a]) for b in range(m)]
            for a in range(m)]
    seen: dict[tuple[int, ...], tuple[float, float, tuple[int, ...]]] = {}
    for chain in itertools.islice(itertools.permutations(range(m), width), MAX_EXAMINED):
        key = [sig[chain[0]]]
        worst, total = 0.0, 0.0
        for a, b in itertools.pairwise(chain):
            key += (pair[a][b], sig[b])
            worst, total = max(worst, slow[a][b]), total + slow[a][b]
        if per > 1 and width > 1:  # the chain's last device sends on to its first
            key.append(pair[chain[-1]][chain[0]])
        seen.setdefault(tuple(key), (worst, total, chain * per))
    yield from (ch for _, _, ch in sorted(seen.values()))


def _boundary(problem: Problem, u: Units, a: int, b: int, kind: str) -> NDArray[np.float64]:
    """Per boundary x between devices a (left) and b, what its transfers weigh for a split
    of `kind` (`KINDS`): for `period`, the load they put on the resources the stages on
    either side share (the busier of its two directed links under `link`, both directions
    under `device`, nothing under `none`); for `latency` and `channel`, both directions;
    for `compute`, nothing."""
    out = np.zeros(u.count + 1)
    if a == b or kind == "compute" or (kind == "period" and problem.contention == "none"):
        return out
    c = costs(problem)
    directions = []
    for count, size, src, dst in ((u.forward_count, u.forward_bytes, a, b),
                                  (u.backward_count, u.backward_bytes, b, a)):
        lat, inv = c.latency[src][dst], c.inv_bandwidth[src][dst]
        directions.append(np.where(count > 0, INF, 0.0) if lat >= INF
                          else count * lat + size * inv)
    if kind != "period" or problem.contention == "device":
        return directions[0] + directions[1]
    return np.maximum(directions[0], directions[1])


# complex: the DP's two passes (least period, then the most even loads under it) over
# blocks of (starts x ends), with the memory test per cell
def _best_split(problem: Problem, u: Units, space: Space, chain: Sequence[int],
                pipeline: Pipeline, capped: bool, kind: str = "period",
                even: bool = True) -> Found | None:
    """The bottleneck DP over `cuts` for one chain (None: nothing fits), then among the
    splits of that period the one whose stage loads have the least sum of squares (the
    most even: non-bottleneck stages balanced, as torchgpipe's partition does, which the
    simulated iteration rewards). A stage's load is that of the split's `kind` (`KINDS`).
    Each stage's row of a recurrence in blocks of ends j, a (starts x ends) matrix at a
    time; `even` False: the first pass alone."""
    s, p = len(chain), len(space.cuts)
    stages = _stage_tables(problem, u, space, chain, pipeline, capped, kind)
    limit = None
    for _ in range(2 if even else 1):  # the least period; then the most even loads under it
        f = np.full(p, INF)
        f[0] = 0.0
        back = np.zeros((s, p), dtype=np.int64)
        for k, stage in enumerate(stages):
            ends = np.array([p - 1] if k == s - 1 else range(k + 1, p - (s - k) + 1),
                            dtype=np.int64)
            new = np.full(p, INF)
            step = max(1, BLOCK_CELLS // p)
            for lo in range(0, len(ends), step):
                j = ends[lo:lo + step]
                i = np.arange(k, int(j[-1]))[:, None]
                load = stage.load(u, space.cuts, i, j[None, :],
                                  space.largest[k:int(j[-1]), j] if capped else None)
                if limit is None:
                    best = np.maximum(f[i], load)
                else:
                    best = f[i] + np.where(load <= limit, load * load, INF)
                at = np.argmin(best, axis=0)
                new[j] = best[at, np.arange(len(j))]
                back[k, j] = at + k
            f = new
        if not math.isfinite(f[p - 1]):
            return None
        bounds = backtrack(back, s, p - 1)
        found = Split(tuple(int(space.cuts[b]) for b in bounds), tuple(chain))
        if limit is None:
            limit = f[p - 1] * (1 + 1e-9)
    return Found(resource_loads(problem, found).period_s, found)


def backtrack(back: NDArray[np.int64], stages: int, last: int) -> list[int]:
    """The cut indices, first to last, that a bottleneck DP's back pointers give
    (`back[k, j]`: where stage k starts when it ends at j; the last stage ends at `last`)."""
    bounds = [last]
    for k in range(stages - 1, -1, -1):
        bounds.append(int(back[k, bounds[-1]]))
    bounds.reverse()
    return bounds


def _stage_tables(problem: Problem, u: Units, space: Space, chain: Sequence[int],
                  pipeline: Pipeline, capped: bool, kind: str) -> list[_Stage]:
    """Per stage of `chain`: its tables over the candidate cuts."""
    s = len(chain)
    ranks = {d: r for r, d in enumerate(dict.fromkeys(chain))}
    per = pipeline.per_device
    cuts = space.cuts
    out = []
    left = np.zeros(len(cuts))  # the boundary into stage k, for each candidate start
    for k, d in enumerate(chain):
        right = (_boundary(problem, u, d, chain[k + 1], kind)[cuts] if k + 1 < s
                 else np.zeros(len(cuts)))
        combine = ("sum" if kind == "latency" else "max_sum" if (
            kind == "period" and problem.contention == "device") else "max")
        out.append(_Stage(u.compute_prefix[d][cuts], u.banned_prefix[d][cuts], left, right,
                          combine,
                          in_flight(pipeline, s, k, u.training, ranks[d], len(ranks)),
                          problem.cluster.devices[d].memory_bytes / per if capped else INF))
        left = right
    return out


@dataclass(frozen=True, slots=True)
class _Stage:
    """One stage's tables over the candidate cuts (for `_best_split`)."""

    compute: NDArray[np.float64]
    banned: NDArray[np.float64]
    left: NDArray[np.float64]
    right: NDArray[np.float64]
    #: how compute and the two boundaries make the load: `max` of the three, `max_sum`
    #: (compute, or both boundaries on one channel), `sum` of the three
    combine: str
    in_flight: int
    cap: float

    def load(self, u: Units, cuts: NDArray[np.int64], i: NDArray[np.int64],
             j: NDArray[np.int64], largest: NDArray[np.float64] | None) -> NDArray[np.float64]:
        """Per (start i, end j): the stage's load (its compute or the transfer resource of
        its boundaries, whichever is busier), inf where it may not be (i >= j, a unit its
        device may not run, more memory than the cap; `largest`: the largest transient of
        each (i, j), None to leave memory out)."""
        compute = self.compute[j] - self.compute[i]
        if self.combine == "sum":
            load = compute + self.left[i] + self.right[j]
        elif self.combine == "max_sum":
            load = np.maximum(compute, self.left[i] + self.right[j])
        else:
            load = np.maximum(compute, np.maximum(self.left[i], self.right[j]))
        bad = (i >= j) | (self.banned[j] - self.banned[i] > 0)
        if largest is not None:
            ci, cj = cuts[i], cuts[j]
            need = (u.params_prefix[cj] - u.params_prefix[ci] + self.in_flight * (
                u.kept_prefix[cj] - u.kept_prefix[ci] + u.forward_bytes[ci])
                + largest)
            bad |= need > self.cap
        out: NDArray[np.float64] = np.where(bad, INF, load)
        return out


def _largest_transients(u: Units, cuts: NDArray[np.int64]) -> NDArray[np.float64]:
    """[i, j]: the largest transient over candidate segments i .. j - 1 (0 where j <= i)."""
    p = len(cuts)
    segments = (np.maximum.reduceat(u.transient, cuts[:-1]) if u.count
                else np.zeros(max(p - 1, 0)))
    out = np.zeros((p, p))
    for i in range(p - 1):
        out[i, i + 1:] = np.maximum.accumulate(segments[i:])
    return out


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


def estimate(problem: Problem, pipeline: Pipeline, split: Split) -> float:
    """The iteration without simulating: M - 1 periods of the busiest resource, plus each
    stage's load once (the fill and drain pass every stage)."""
    loads = resource_loads(problem, split)
    return pipeline.schedule_spec.estimate(pipeline.microbatches, loads.period_s, loads.stage_s)


def _simulated_best(problem: Problem, pipeline: Pipeline, per_stages: dict[int, list[Found]],
                    budget: float = math.inf) -> tuple[Found, dict[Found, float]]:
    """The candidate whose plan's simulated iteration is shortest (ties: the smaller
    period, then fewer stages, then the least-period kind). Candidates are simulated best
    estimate first while their copies (M x ops each, at most `MAX_SIMULATED_OPS`) fit in
    `budget`; when none is, the best estimate wins."""
    ranked = [(f, s, k) for s, found in sorted(per_stages.items())
              for k, f in enumerate(found)]
    guess = {f: estimate(problem, pipeline, f.split) for f, _, _ in ranked}
    ranked.sort(key=lambda c: (guess[c[0]], c[0].period_s, c[1], c[2]))
    copies = pipeline.microbatches * len(problem.graph.ops)
    runs: dict[Found, float] = {}
    if copies <= MAX_SIMULATED_OPS:
        for f, _, _ in ranked[:simulations(budget, copies)]:
            placement = f.split.placement(problem)
            runs[f] = pipeline_schedule.run(problem, placement, pipeline).iteration_s
    if not runs:
        return ranked[0][0], runs
    chosen = min((c for c in ranked if c[0] in runs),
                 key=lambda c: (runs[c[0]], c[0].period_s, c[1], c[2]))[0]
    return chosen, runs


def _split_notes(problem: Problem, chosen: Found, pipeline: Pipeline, cells: float,
                 per_stages: dict[int, list[Found]], runs: dict[Found, float],
                 budget: float) -> dict[str, str]:
    """What shaped the split, for `info`: `memory_note` when the caps changed the answer
    (the candidates they ruled out compared as `_simulated_best` compares, by the
    iteration), else `stages_note` when the candidate with the least period was passed over
    because its iteration is longer; empty when neither."""
    free = split_candidates(problem, pipeline, capped=False, cells=cells)
    kept = {f.split for found in per_stages.values() for f in found}
    ruled_out = [f for found in free.values() for f in found if f.split not in kept]
    if ruled_out:
        note = _memory_note(problem, chosen, pipeline, ruled_out, runs, budget)
        return {"memory_note": note} if note else {}
    note = _stages_note(problem, chosen, pipeline, per_stages, runs)
    return {"stages_note": note} if note else {}


#: the figure candidates are compared by, when they were not simulated
_ESTIMATED = "estimated iteration ((M - 1) T plus each stage's load once)"


def _memory_note(problem: Problem, chosen: Found, pipeline: Pipeline, ruled_out: list[Found],
                 runs: dict[Found, float], budget: float) -> str:
    """How the memory caps shaped the split ('' when none of the candidates they ruled out
    beats the plan: the caps then ruled out only splits that lose anyway). Compared by the
    simulated iteration where the plan was chosen by it (the ruled-out candidates simulated
    best estimate first, within what is left of `budget`), else by the estimate."""
    guess = {f: estimate(problem, pipeline, f.split) for f in (chosen, *ruled_out)}
    ranked = sorted(ruled_out, key=lambda f: (guess[f], f.period_s, f.split.stages))
    figures: dict[Found, float] = {}
    if chosen in runs:
        copies = pipeline.microbatches * len(problem.graph.ops)
        left = budget - len(runs) * copies
        for f in ranked:
            if left < copies:
                break
            left -= copies
            figures[f] = pipeline_schedule.run(problem, f.split.placement(problem),
                                               pipeline).iteration_s
        mine, what = runs[chosen], "simulated iteration"
    else:
        figures, mine, what = {f: guess[f] for f in ranked}, guess[chosen], _ESTIMATED
    if not figures:
        return ""
    best = min(figures, key=lambda f: (figures[f], f.period_s, f.split.stages))
    if figures[best] >= mine * (1 - 1e-9):
        return ""
    split = best.split
    held = stage_bytes(problem, split, pipeline)
    devices = problem.cluster.devices
    over = [d for d, dev in enumerate(devices) if held[d] > dev.memory_bytes]
    where = ""
    if over:
        d = max(over, key=lambda d: held[d] - devices[d].memory_bytes)
        where = (f", but need {format_bytes(int(held[d]))} on {devices[d].name}, which holds "
                 f"{format_bytes(devices[d].memory_bytes)}")
    return (f"memory shaped this split: without the caps, {split.stages} stage(s) would give a "
            f"period of {format_seconds(best.period_s)} and a {what} of "
            f"{format_seconds(figures[best])} (this split: {format_seconds(chosen.period_s)} "
            f"and {format_seconds(mine)}){where}")


def _stages_note(problem: Problem, chosen: Found, pipeline: Pipeline,
                 per_stages: dict[int, list[Found]], runs: dict[Found, float]) -> str:
    """Why the candidate with the least period was passed over ('' when it was not): its
    iteration is longer (the fill and drain, or transfers the period does not see)."""
    least = min((f for found in per_stages.values() for f in found),
                key=lambda f: (f.period_s, f.split.stages))
    if least.period_s >= chosen.period_s * (1 - 1e-9):
        return ""
    if least in runs and chosen in runs:
        theirs, mine, what = runs[least], runs[chosen], "simulated iteration"
    else:
        theirs, mine, what = (estimate(problem, pipeline, least.split),
                              estimate(problem, pipeline, chosen.split), _ESTIMATED)
    if theirs <= mine * (1 + 1e-9):
        return ""
    return (f"{least.split.stages} stage(s) would have a shorter period, "
            f"{format_seconds(least.period_s)} against {format_seconds(chosen.period_s)}, "
            f"but a longer {what}, {format_seconds(theirs)} against {format_seconds(mine)}: "
            "the split is chosen by the iteration")
