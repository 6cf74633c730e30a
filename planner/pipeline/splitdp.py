"""The split DP of `pipedp` (its module docstring has the model): per stage count, the
best contiguous splits of the pipeline units over chains of devices, of each kind of
`KINDS`, within the memory caps (`best_splits`, `split_candidates`), and the work it may
take (`cells_for`). Here, under the pipelines' layer, so that every algorithm that splits a
pipeline (`pipedp`, list scheduling's memory retry) asks it, not one algorithm another.
The work's sizes live in `splitwork` (imported here, as its callers name them).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from ..cost import INF, costs, stage_memory, stage_share, transfer_seconds_array
from ..model import Pipeline, Problem, derived
from . import hybrid
from .split import Split, fits, in_flight, resource_loads, runs, stage_bytes
from .splitwork import (
    CELLS_PER_SECOND,
    DP_PASSES,
    FIXED_SHARE,
    MAX_CELLS,
    MAX_CHAINS,
    MAX_ENUMERATED,
    MIN_CELLS,
    PASS_CELLS,
    SPLIT_CELLS,
    cells_for,
    chains_within,
    enumerated_stages,
    permutations_first,
)
from .units import Units, units


class Progressing(Protocol):
    """What the DP reads of an algorithm's options (`algorithms.base.Options`): progress."""

    @property
    def progress(self) -> Callable[[float, str], None] | None: ...


__all__ = ["BLOCK_CELLS", "CELLS_PER_SECOND", "DP_PASSES", "FIXED_SHARE", "KEEP_CELLS", "KINDS",
           "MAX_CELLS", "MAX_CHAINS", "MAX_ENUMERATED", "MAX_EXAMINED", "MAX_UNITS", "MIN_CELLS",
           "PASS_CELLS", "SPLIT_CELLS", "Found", "Progressing", "Space", "backtrack",
           "best_splits", "candidate_cuts", "cells_for", "chains_within", "enumerated_stages",
           "interleaved_exact", "most_stages", "permutations_first", "search_space",
           "split_candidates"]

#: device sequences examined per stage count (a cluster of many devices has too many to list)
MAX_EXAMINED = 200_000
#: the most candidate cuts, whatever the budget
MAX_UNITS = 20_000
#: cells of one (starts x ends) block of the DP (numpy arrays of this many float64s, 512 KB):
#: at 1 << 20 (8 MB) the blocks' temporaries came in fresh pages, 939k page faults and
#: 2.3 s of system time in pipedp's 10.5 s on a 24-layer GPT, against 5k and none at this
#: size (a block holds whole columns of ends, so its size changes no result)
BLOCK_CELLS = 1 << 16
#: cells of memory tests kept for a stage count's chains and kinds (`_Masks`), and of loads
#: kept for a split's even pass (1 and 8 bytes each): GPT-24 on a DGX-1, 2.4 s -> 1.3 s
KEEP_CELLS = 1 << 21


@dataclass(frozen=True, slots=True)
class Found:
    """The best split for one chain: its period and its boundaries."""

    period_s: float
    split: Split


@dataclass(frozen=True, slots=True)
class Space:
    """What the DP searches: the device chains per stage count (those tried), how many
    distinct chains there were and were tried, the candidate cuts, and the stage counts
    whose splits are enumerated (`enumerated_stages`)."""

    chains: dict[int, list[tuple[int, ...]]]
    tried: int
    total: int
    cuts: NDArray[np.int64]
    #: [i, j]: the largest transient over candidate segments i .. j - 1 (for memory)
    largest: NDArray[np.float64]
    enumerated: frozenset[int]


def search_space(problem: Problem, pipeline: Pipeline, cells: float = MAX_CELLS,
                 every_chain: bool = False) -> Space:
    """The chains and cuts the DP runs over: every unit boundary, unless the chains times
    the squared boundaries would pass `cells` (then the cheapest to cross within as many
    equal windows as fit); `MAX_CHAINS` chains per stage count, fewer where their fixed
    costs would pass their share of `cells` (`chains_within`) unless `every_chain`.
    Derived once per problem, pipeline and work."""
    spaces: dict[tuple[Pipeline, float, bool], Space] = derived(problem, "pipedp.spaces",
                                                                 dict)
    key = (pipeline, cells, every_chain)
    if key not in spaces:
        spaces[key] = _search_space(problem, pipeline, cells, every_chain)
    return spaces[key]


def _search_space(problem: Problem, pipeline: Pipeline, cells: float,
                  every_chain: bool) -> Space:
    n = units(problem).count
    listed = {stages: list(_chains(problem, stages, pipeline))
              for stages in range(1, most_stages(problem, pipeline, n) + 1)}
    # the cuts as many as the chains' cells allow, then the chains as many as their fixed
    # costs allow over those cuts (the cuts stay: fewer chains never cost more)
    cuts = _cuts_for(problem, {s: c[:MAX_CHAINS] for s, c in listed.items()}, cells)
    within = chains_within(pipeline, {s: len(c) for s, c in listed.items()}, len(cuts), cells)
    chains = {s: c[:MAX_CHAINS if every_chain else within] for s, c in listed.items()}
    return Space(chains, sum(len(c) for c in chains.values()),
                 sum(len(c) for c in listed.values()), cuts,
                 _largest_transients(units(problem), cuts),
                 enumerated_stages(pipeline, chains, within, len(cuts), cells))


def _cuts_for(problem: Problem, chains: dict[int, list[tuple[int, ...]]],
              cells: float) -> NDArray[np.int64]:
    """The candidate cuts whose DP over `chains` fits in `cells`."""
    stage_rows = DP_PASSES * sum(s * len(c) for s, c in chains.items())
    most = max(2, int(math.sqrt(cells / max(stage_rows, 1))))
    return candidate_cuts(units(problem), min(MAX_UNITS, most))


def best_splits(problem: Problem, pipeline: Pipeline, options: Progressing | None = None,
                capped: bool = True, cells: float = MAX_CELLS, every_chain: bool = False,
                ) -> dict[int, Found]:
    """Per stage count, the split with the least period over the chains tried (counts with
    no split that fits are left out; with `capped` False, memory is not looked at)."""
    found = split_candidates(problem, pipeline, options, capped, cells, balanced=False,
                             every_chain=every_chain)
    return {s: f[0] for s, f in found.items()}


#: the kinds of split tried per stage count (`split_candidates`): the least period of the
#: model; compute balanced alone (torchgpipe's `balance_by_time`); compute plus every
#: transfer of the stage's boundaries (a micro-batch's latency through the stage, which
#: 1F1B's window of micro-batches in flight pays on its round trip; without it Baechi's
#: GNMT on 4 GPUs runs 450.4 ms instead of 439.9); compute or a boundary's transfers both
#: ways on one channel, whichever is more (PipeDream's partitioner, which counts each
#: cut's activation twice)
KINDS: tuple[str, ...] = ("period", "compute", "latency", "channel")


def split_candidates(problem: Problem, pipeline: Pipeline, options: Progressing | None = None,
                     capped: bool = True, cells: float = MAX_CELLS, balanced: bool = True,
                     every_chain: bool = False, none_fit: Space | None = None,
                     ) -> dict[int, list[Found]]:
    """Per stage count: the split with the least period over the chains tried, then (with
    `balanced`) the best split of each other kind of `KINDS` where it differs, for the
    simulator to judge (the period bounds the steady state; the fill, the drain and
    1F1B's round trips are what the other kinds weigh). Derived once per problem and
    arguments (`search` and `auto` ask for pipedp's again). `none_fit`: a space over the
    same cuts whose chains hold no split that fits (`capped`, all kinds), skipped here where
    they are searched alike (`_known_empty`): the same answer, sooner."""
    cache: dict[tuple[Pipeline, bool, float, bool, bool], dict[int, list[Found]]] = derived(
        problem, "pipedp.candidates", dict)
    key = (pipeline, capped, cells, balanced, every_chain)
    if key not in cache:
        space = search_space(problem, pipeline, cells, every_chain)
        cache[key] = _split_candidates(problem, pipeline, options, capped, space, balanced,
                                       _known_empty(space, none_fit, capped))
    return cache[key]


def _known_empty(space: Space, none_fit: Space | None,
                 capped: bool) -> dict[int, int]:
    """Per stage count, how many of `space`'s first chains `none_fit` (a space of the same
    cuts that found no split that fits) showed to hold none: its chains, where the DP
    searches them as it did there (their splits enumerated, or not, alike). Before,
    `pipedp`'s search of every chain before E707 searched them again: the whole DP twice
    (0.6 s at `--time-limit 2` on 8 GPUs under `interleaved`)."""
    if none_fit is None or not capped or list(none_fit.cuts) != list(space.cuts):
        return {}
    return {s: len(c) for s, c in none_fit.chains.items()
            if space.chains[s][:len(c)] == c
            and (s in none_fit.enumerated) == (s in space.enumerated)}


def _split_candidates(problem: Problem, pipeline: Pipeline, options: Progressing | None,
                      capped: bool, space: Space, balanced: bool,
                      known: dict[int, int]) -> dict[int, list[Found]]:
    u = units(problem)
    kinds = KINDS if balanced else KINDS[:1]
    per_stages: dict[int, list[Found]] = {}
    done = 0
    for stages, chains in space.chains.items():
        if stages > len(space.cuts) - 1:
            continue
        best: dict[str, Found] = {}
        exact = stages in space.enumerated
        done += known.get(stages, 0)
        masks = _Masks()
        for chain in chains[known.get(stages, 0):]:
            done += 1
            for kind in kinds:
                found = _kind_split(problem, u, space, chain, pipeline, capped, kind,
                                    exact=exact, even=balanced, masks=masks)
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
                even: bool, masks: _Masks | None = None) -> Found | None:
    """The best split of `chain` of `kind`: enumerated where `exact` (the period's and
    compute's kinds), else by the DP (with its even pass for those two kinds)."""
    if exact and kind in KINDS[:2]:
        return _enumerated(problem, space, chain, pipeline, capped, kind)
    # The DP counts the schedule's micro-batches in flight; a split whose devices are no
    # chain (a unit spanning others: a residual stream) runs in GPipe's order, holding M
    # (`split.runs`; pipedp returned such a ViT split, E401): the DP again with its counts
    wider = pipeline.schedule_spec.deadlock_fallback
    for counted in (pipeline, *([dataclasses.replace(pipeline, schedule=wider)] if wider
                                and capped else [])):
        found = _best_split(problem, u, space, chain, counted, capped, kind,
                            even=even and kind in KINDS[:2], masks=masks)
        if found is None or not capped or runs(problem, found.split, pipeline) == counted \
                or fits(problem, stage_bytes(problem, found.split, pipeline)):
            return found
    return None


def _distinct(found: list[Found]) -> list[Found]:
    """`found` without the splits an earlier one has."""
    return [f for k, f in enumerate(found) if f.split not in [g.split for g in found[:k]]]


def interleaved_exact(problem: Problem, pipeline: Pipeline, cells: float = MAX_CELLS,
                      every_chain: bool = False) -> bool:
    """Whether, under `interleaved`, every split of every chain tried is enumerated (so the
    answer is exact for the model) rather than found by the per-stage DP, whose memory
    cap (a device's memory over K per stage) and per-stage period are a heuristic there: a
    device's K stages share its compute and memory."""
    space = search_space(problem, pipeline, cells, every_chain)
    return all(s in space.enumerated for s in space.chains if s > 1)


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
    and under `1f1b` no more than the micro-batches of a pipeline (torch's `Schedule1F1B`
    needs as many micro-batches as stages; each of `data_parallel N`'s pipelines runs M // N,
    as the export gives them: before, hybrid planned N pipelines of M stages, which the
    export refused, E947)."""
    devices = len(problem.cluster.devices)
    per = pipeline.per_device
    most = min(devices * per, n)
    cap = pipeline.stage_cap
    return most if cap is None else min(most, cap)


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


def _classes(problem: Problem) -> list[int]:
    """Per device, its class: devices of one class are interchangeable in a chain (one
    kind, speed, FLOP rate and memory, and the same units may use them: a unit pinned to
    gpu3 tells gpu3 from gpu0)."""
    m = len(problem.cluster.devices)
    restricted = [frozenset(a) for a in units(problem).allowed if len(a) < m]
    classes: dict[tuple[object, ...], int] = {}
    return [classes.setdefault((dev.kind, dev.speed, dev.flop_rate, dev.memory_bytes,
                                tuple(d in a for a in restricted)), len(classes))
            for d, dev in enumerate(problem.cluster.devices)]


def _chains(problem: Problem, stages: int, pipeline: Pipeline) -> Iterator[tuple[int, ...]]:
    """Distinct device chains for `stages` stages, in `_ranked_chains`' order.
    Under `interleaved`, a chain of D = stages / K devices is repeated K times. The ranked
    chains of D devices are listed once per problem (`auto` under `interleaved` plans
    pipedp's splits for 1F1B too, whose D-stage chains are the same: 0.1 s on 8 GPUs)."""
    per = pipeline.per_device
    if stages % per:
        return
    width = stages // per
    wrap = per > 1 and width > 1  # the chain's last device sends on to its first
    ranked = derived(problem, f"_chains_{width}_{int(wrap)}",
                     lambda: _ranked_chains(problem, width, wrap))
    yield from (chain * per for chain in ranked)


def _ranked_chains(problem: Problem, width: int, wrap: bool) -> list[tuple[int, ...]]:
    """`_chains` of `width` devices: one per distinct key of device classes and links (with
    the link from the last back to the first, under `wrap`), the first of each in the
    order of `itertools.permutations` (`MAX_EXAMINED` at most); those that may respect
    every unit's allowed devices first (`_may_hold_all`), then the least floor of the
    period (`_period_floor`), the least worst link, the least total. In numpy, over every
    chain at once: one at a time, 8 GPUs took 0.2 s per width of each kind (interleaved
    and its 1F1B), with a limit of 1 or 2 s."""
    m = len(problem.cluster.devices)
    c = costs(problem)
    sig = np.array(_classes(problem), dtype=np.int64)
    links: dict[tuple[float, ...], int] = {}
    pair = np.array([[links.setdefault((c.latency[a][b], c.inv_bandwidth[a][b],
                                        c.latency[b][a], c.inv_bandwidth[b][a]), len(links))
                      for b in range(m)] for a in range(m)], dtype=np.int64)
    slow = np.array([[max(c.inv_bandwidth[a][b], c.inv_bandwidth[b][a]) for b in range(m)]
                     for a in range(m)], dtype=np.float64)
    chains = permutations_first(m, width, MAX_EXAMINED)
    key = sig[chains[:, 0]]  # each chain's key as a number, its columns added one by one
    worst, total = np.zeros(len(chains)), np.zeros(len(chains))
    for t in range(width - 1):  # in the chain's order, as the sum was taken one by one
        a, b = chains[:, t], chains[:, t + 1]
        key = _joined(_joined(key, pair[a, b], len(links)), sig[b], m)
        worst, total = np.maximum(worst, slow[a, b]), total + slow[a, b]
    if wrap:
        key = _joined(key, pair[chains[:, -1], chains[:, 0]], len(links))
    _, first = np.unique(key, return_index=True)
    bound = _period_floor(problem, chains[first], worst[first])
    order = np.lexsort((*(chains[first, t] for t in range(width - 1, -1, -1)),
                        total[first], worst[first], bound,
                        ~_may_hold_all(problem, chains[first])))
    return [tuple(chain) for chain in chains[first[order]].tolist()]


def _period_floor(problem: Problem, chains: NDArray[np.int64], worst: NDArray[np.float64],
                  ) -> NDArray[np.float64]:
    """Per chain, a floor of its period: the graph's compute spread over its devices at
    their rates, or (a chain of two devices or more, where transfers load the resources)
    the cheapest boundary's transfers over its slowest link, whichever is more; to 12
    digits, so that sums in another order tie (ranked by links alone, a small limit tried
    gpu0 alone before gpu2, three times as fast: `bench/bench_chain_order.py`)."""
    u = units(problem)
    work = u.compute_prefix[:, -1]  # each device's time for the whole graph (0: cannot)
    rate = np.divide(1.0, work, out=np.zeros(len(work)), where=work > 0)[chains].sum(axis=1)
    floor = np.divide(1.0, rate, out=np.full(len(chains), np.inf), where=rate > 0)
    if chains.shape[1] > 1 and u.count > 1 and problem.contention != "none":
        crossing = (u.forward_bytes + u.backward_bytes)[1:-1].min()
        floor = np.maximum(floor, worst * crossing)
    top = floor[np.isfinite(floor)].max(initial=0.0) or 1.0
    rounded: NDArray[np.float64] = np.round(floor / top, 12)
    return rounded


def _may_hold_all(problem: Problem, chains: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Per chain (a row of devices), whether a contiguous split over it may respect every
    unit's allowed devices (pins, devices that can run it): its first device may run the
    first unit, its last the last, and each unit some device of it (a small limit tried
    gpu0 and gpu1 alone, not gpu2 that the last layer is pinned to)."""
    u, m = units(problem), len(problem.cluster.devices)
    ok = np.ones(len(chains), dtype=bool)
    for k, devices in ((k, a) for k, a in enumerate(u.allowed) if len(a) < m):
        may = np.zeros(m, dtype=bool)
        may[list(devices)] = True
        ok &= may[chains].any(axis=1) & (k > 0 or may[chains[:, 0]]) & (
            k < u.count - 1 or may[chains[:, -1]])
    return ok


def _joined(key: NDArray[np.int64], column: NDArray[np.int64], values: int
            ) -> NDArray[np.int64]:
    """One number per distinct (key, column) pair, the column's `values` below `values`:
    the pair in mixed radix, the keys numbered densely first where that would pass 2**62."""
    if len(key) and int(key.max()) >= (1 << 62) // values:
        key = np.unique(key, return_inverse=True)[1].reshape(-1)
    out: NDArray[np.int64] = key * values + column
    return out


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
        directions.append(transfer_seconds_array(c.latency[src][dst],
                                                 c.inv_bandwidth[src][dst], size, count))
    if kind != "period" or problem.contention == "device":
        return directions[0] + directions[1]
    return np.maximum(directions[0], directions[1])


# complex: the DP's two passes (least period, then the most even loads under it) over
# blocks of (starts x ends), with the memory test per cell
def _best_split(problem: Problem, u: Units, space: Space, chain: Sequence[int],
                pipeline: Pipeline, capped: bool, kind: str = "period",
                even: bool = True, masks: _Masks | None = None) -> Found | None:
    """The bottleneck DP over `cuts` for one chain (None: nothing fits), then among the
    splits of that period the one whose stage loads have the least sum of squares (the
    most even: non-bottleneck stages balanced, as torchgpipe's partition does, which the
    simulated iteration rewards). A stage's load is that of the split's `kind` (`KINDS`).
    Each stage's row of a recurrence in blocks of ends j, a (starts x ends) matrix at a
    time; `even` False: the first pass alone."""
    s, p = len(chain), len(space.cuts)
    stages = _stage_tables(problem, u, space, chain, pipeline, capped, kind)
    masks = masks if masks is not None else _Masks()
    limit = None
    kept: list[NDArray[np.float64]] | None = [] if even and s * p * p <= KEEP_CELLS else None
    for turn in range(2 if even else 1):  # the least period; then the most even loads under it
        f = np.full(p, INF)
        f[0] = 0.0
        back = np.zeros((s, p), dtype=np.int64)
        block = 0
        for k, stage in enumerate(stages):
            ends = np.array([p - 1] if k == s - 1 else range(k + 1, p - (s - k) + 1),
                            dtype=np.int64)
            new = np.full(p, INF)
            step = max(1, BLOCK_CELLS // p)
            for lo in range(0, len(ends), step):
                j = ends[lo:lo + step]
                i = np.arange(k, int(j[-1]))[:, None]
                if turn and kept is not None:  # the first pass's, the same floats
                    load = kept[block]
                else:
                    load = stage.load(u, space.cuts, i, j[None, :], masks.too_big(
                        u, space, stage, (s, k, lo), i, j) if capped else None)
                    if kept is not None:
                        kept.append(load)
                block += 1
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
                          combine, in_flight(pipeline, s, k, u.training, ranks[d], len(ranks)),
                          (pipeline, 1, k == s - 1),
                          stage_share(problem.cluster.devices[d].memory_bytes, per)
                          if capped else INF))
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
    ends: tuple[Pipeline, int, bool]  # `hybrid.step_bytes`'s arguments (r is 1 here)
    cap: float

    def load(self, u: Units, cuts: NDArray[np.int64], i: NDArray[np.int64],
             j: NDArray[np.int64], too_big: NDArray[np.bool_] | None) -> NDArray[np.float64]:
        """Per (start i, end j): the stage's load (its compute or the transfer resource of
        its boundaries, whichever is busier), inf where it may not be (i >= j, a unit its
        device may not run, more memory than the cap: `too_big`, None to leave memory
        out)."""
        compute = self.compute[j] - self.compute[i]
        if self.combine == "sum":
            load = compute + self.left[i] + self.right[j]
        elif self.combine == "max_sum":
            load = np.maximum(compute, self.left[i] + self.right[j])
        else:
            load = np.maximum(compute, np.maximum(self.left[i], self.right[j]))
        bad = (i >= j) | (self.banned[j] - self.banned[i] > 0)
        if too_big is not None:
            bad |= too_big
        out: NDArray[np.float64] = np.where(bad, INF, load)
        return out

    def too_big(self, u: Units, cuts: NDArray[np.int64], i: NDArray[np.int64],
                j: NDArray[np.int64], largest: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Per (start i, end j): whether the stage needs more memory than its cap
        (`largest`: the largest transient of each (i, j))."""
        ci, cj = cuts[i], cuts[j]
        need = stage_memory(u.params_prefix[cj] - u.params_prefix[ci], self.in_flight,
                            u.kept_prefix[cj] - u.kept_prefix[ci] + u.forward_bytes[ci],
                            largest) + hybrid.step_bytes(u, ci, cj, *self.ends) \
            + hybrid.kept_sends(u, ci, cj, self.ends[0])
        out: NDArray[np.bool_] = np.greater(need, self.cap)
        return out


class _Masks:
    """`_Stage.too_big` per block (stages, stage, first end) and the stage's counts and cap,
    all it reads: kept for a stage count's other chains and kinds (`KEEP_CELLS`)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[object, ...], NDArray[np.bool_]] = {}
        self._cells = 0

    def too_big(self, u: Units, space: Space, stage: _Stage, block: tuple[int, int, int],
                i: NDArray[np.int64], j: NDArray[np.int64]) -> NDArray[np.bool_]:
        """The block's `_Stage.too_big` (i: its starts as a column, j: its ends)."""
        key = (*block, stage.in_flight, stage.ends[2] and not u.training, stage.cap)
        if key not in self._kept:
            out = stage.too_big(u, space.cuts, i, j[None, :], space.largest[block[1]:j[-1], j])
            if self._cells + out.size > KEEP_CELLS:
                return out
            self._kept[key], self._cells = out, self._cells + out.size
        return self._kept[key]


def _largest_transients(u: Units, cuts: NDArray[np.int64]) -> NDArray[np.float64]:
    """[i, j]: the largest transient over candidate segments i .. j - 1 (0 where j <= i)."""
    p = len(cuts)
    segments = (np.maximum.reduceat(u.transient, cuts[:-1]) if u.count
                else np.zeros(max(p - 1, 0)))
    out = np.zeros((p, p))
    for i in range(p - 1):
        out[i, i + 1:] = np.maximum.accumulate(segments[i:])
    return out

