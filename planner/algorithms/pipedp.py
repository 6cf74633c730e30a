"""pipedp: the best contiguous pipeline split, by dynamic programming.

The pipeline units (`planner.pipeline.units`: a layer's forward and backward ops together)
are cut into S contiguous stages, stage k on device `chain[k]`; the split minimises the
period T, the largest stage load (`planner.pipeline.split`: compute of one micro-batch plus
the transfers across the stage's boundaries), subject to each device holding its stage's
params and the activations of the micro-batches in flight under the plan's schedule.

For one chain of devices, the bottleneck recurrence

    f[k][j] = min over i < j of max(f[k - 1][i], load_k(i, j))

is exact (PipeDream's and DAPPLE's partitioning DP; Narayanan et al., SOSP 2019), O(S n^2)
for n units, each row a numpy pass over i. Chains: every distinct sequence of devices,
two devices being alike when they have the same kind, speed, FLOP rate and memory and,
for the links, when the chain's consecutive links are alike; on clusters with one link
type that is a sequence of device classes. At most `MAX_CHAINS` per stage count are tried,
the best-linked first; `info["chains"]` says how many there were and how many were tried,
and the split is optimal for the model when all were.

Among stage counts 1..devices, the plan whose simulated iteration (`pipeline.schedule`)
is shortest wins; only counts whose estimate (M + S - 1) T is within `ESTIMATE_SLACK` of
the best are simulated. Graphs of more than `MAX_UNITS` units are cut at `MAX_UNITS`
candidate boundaries (the cheapest boundary to cross within each window of units), and
`info["candidate_cuts"]` says so: the split is then the best among those cuts.

When the memory caps change the answer, `info["memory_note"]` says how: the least period
of any split without them, and the device that split would overfill.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..cost import INF, costs
from ..errors import Diagnostic, InfeasibleError
from ..model import Pipeline, Problem
from ..pipeline import schedule as pipeline_schedule
from ..pipeline.split import Split, in_flight, stage_bytes
from ..pipeline.units import Units, units
from ..plan import Plan
from ..units import format_bytes, format_seconds
from .base import Options, Solution

#: chains of devices tried per stage count (the best-linked first)
MAX_CHAINS = 24
#: stage counts whose estimated iteration is within this factor of the best are simulated
ESTIMATE_SLACK = 1.15
#: device sequences examined per stage count (a cluster of many devices has too many to list)
MAX_EXAMINED = 200_000
#: above this many units, the split is chosen among this many candidate boundaries
MAX_UNITS = 3000


@dataclass(frozen=True, slots=True)
class Found:
    """The best split for one chain: its period and its boundaries."""

    period_s: float
    split: Split


def place(problem: Problem, options: Options) -> Solution:
    """The best contiguous split (module docstring) as a plan, with the split's figures."""
    pipeline = problem.pipeline or Pipeline()
    u = units(problem)
    cuts = _candidate_cuts(u)
    per_stages, tried, total = best_splits(problem, pipeline, options)
    if not per_stages:
        raise InfeasibleError(Diagnostic(
            "E707", f"no contiguous pipeline split of plan `{problem.name}` fits the "
            "devices' memory", None,
            ("fewer micro-batches in flight (`schedule 1f1b`, fewer `microbatches`) hold "
             "fewer activations; or give the devices more `memory`",)))
    chosen, runs = _simulated_best(problem, pipeline, per_stages)
    info: dict[str, object] = {
        "period_s": chosen.period_s,
        "stages": chosen.split.stages,
        "iteration_s": runs[chosen.split.stages],
        "chains": f"{tried} of {total} tried",
    }
    if len(cuts) - 1 < u.count:
        info["candidate_cuts"] = (f"{len(cuts) - 1} of {u.count} unit boundaries "
                                  "(the graph has more than " f"{MAX_UNITS} units)")
    note = _memory_note(problem, chosen, pipeline)
    if note:
        info["memory_note"] = note
    plan = Plan(chosen.split.placement(problem), algorithm="pipedp")
    return Solution(plan, "feasible", info)


def best_splits(problem: Problem, pipeline: Pipeline, options: Options | None = None,
                capped: bool = True) -> tuple[dict[int, Found], int, int]:
    """Per stage count, the split with the least period over the chains tried (counts with
    no split that fits are left out; with `capped` False, memory is not looked at), and
    how many chains were tried of how many."""
    u = units(problem)
    cuts = _candidate_cuts(u)
    per_stages: dict[int, Found] = {}
    tried = total = 0
    for stages in range(1, _most_stages(problem, pipeline, len(cuts) - 1) + 1):
        chains = list(_chains(problem, stages, pipeline))
        total += len(chains)
        for chain in chains[:MAX_CHAINS]:
            tried += 1
            found = _best_split(problem, u, cuts, chain, pipeline, capped)
            if found is not None and (stages not in per_stages
                                      or found.period_s < per_stages[stages].period_s):
                per_stages[stages] = found
            if options is not None and options.progress is not None:
                options.progress(0.0, f"pipedp: {stages} stage(s), chain {tried}")
    return per_stages, tried, total


def _most_stages(problem: Problem, pipeline: Pipeline, n: int) -> int:
    devices = len(problem.cluster.devices)
    per = pipeline.stages_per_device if pipeline.schedule == "interleaved" else 1
    return min(devices * per, n)


def _candidate_cuts(u: Units) -> NDArray[np.int64]:
    """Unit boundaries 0..n where stages may begin and end: all of them up to `MAX_UNITS`
    units, else the cheapest to cross within each of `MAX_UNITS` windows."""
    n = u.count
    if n <= MAX_UNITS:
        return np.arange(n + 1)
    crossing = u.forward_bytes + u.backward_bytes + u.forward_count + u.backward_count
    edges = np.linspace(0, n, MAX_UNITS + 1).astype(np.int64)
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
    per = pipeline.stages_per_device if pipeline.schedule == "interleaved" else 1
    if stages % per:
        return
    width = stages // per
    m = len(problem.cluster.devices)
    c = costs(problem)
    seen: dict[tuple[object, ...], tuple[float, float, tuple[int, ...]]] = {}
    for chain in itertools.islice(itertools.permutations(range(m), width), MAX_EXAMINED):
        key: list[object] = [_signature(problem, chain[0])]
        worst, total = INF, 0.0
        for a, b in itertools.pairwise(chain):
            link = (c.latency[a][b], c.inv_bandwidth[a][b], c.latency[b][a],
                    c.inv_bandwidth[b][a])
            key += [link, _signature(problem, b)]
            speed = 1.0 / max(link[1], link[3], 1e-300)
            worst, total = min(worst, speed), total + link[1] + link[3]
        if per > 1 and width > 1:  # the chain's last device sends on to its first
            a, b = chain[-1], chain[0]
            key.append((c.latency[a][b], c.inv_bandwidth[a][b]))
        seen.setdefault(tuple(key), (-worst, total, chain * per))
    yield from (ch for _, _, ch in sorted(seen.values()))


def _boundary(problem: Problem, u: Units, a: int, b: int) -> NDArray[np.float64]:
    """Per boundary x: the seconds of its transfers between devices a (left) and b."""
    if a == b:
        return np.zeros(u.count + 1)
    c = costs(problem)
    out = np.zeros(u.count + 1)
    for count, size, src, dst in ((u.forward_count, u.forward_bytes, a, b),
                                  (u.backward_count, u.backward_bytes, b, a)):
        lat, inv = c.latency[src][dst], c.inv_bandwidth[src][dst]
        out = np.where(count > 0, INF, out) if lat >= INF else out + count * lat + size * inv
    return out


def _best_split(problem: Problem, u: Units, cuts: NDArray[np.int64], chain: Sequence[int],
                pipeline: Pipeline, capped: bool) -> Found | None:
    """The bottleneck DP over `cuts` for one chain (None: nothing fits)."""
    s, p = len(chain), len(cuts)
    ranks = {d: r for r, d in enumerate(dict.fromkeys(chain))}
    width = len(ranks)
    per = pipeline.stages_per_device if pipeline.schedule == "interleaved" else 1
    f = np.full(p, INF)
    f[0] = 0.0
    back = np.zeros((s, p), dtype=np.int64)
    left = np.zeros(p)  # the boundary into stage k, for each candidate start
    for k, d in enumerate(chain):
        right = (_boundary(problem, u, d, chain[k + 1])[cuts] if k + 1 < s else np.zeros(p))
        compute = u.compute_prefix[d][cuts]
        banned = u.banned_prefix[d][cuts]
        params, kept = u.params_prefix[cuts], u.kept_prefix[cuts]
        fwd_in = u.forward_bytes[cuts]
        count = in_flight(pipeline, s, k, u.training, ranks[d], width)
        cap = problem.cluster.devices[d].memory_bytes / per if capped else INF
        new = np.full(p, INF)
        for j in ([p - 1] if k == s - 1 else range(k + 1, p - (s - k) + 1)):
            i = np.arange(k, j)
            load = compute[j] - compute[i] + left[i] + right[j]
            load = np.where(banned[j] - banned[i] > 0, INF, load)
            if capped:
                transient = _range_max(u.transient, cuts, i, j)
                need = (params[j] - params[i] + count * (kept[j] - kept[i] + fwd_in[i])
                        + transient)
                load = np.where(need > cap, INF, load)
            best = np.maximum(f[i], load)
            at = int(np.argmin(best))
            new[j] = best[at]
            back[k, j] = i[at]
        f = new
        if k + 1 < s:
            left = _boundary(problem, u, d, chain[k + 1])[cuts]
    if not math.isfinite(f[p - 1]):
        return None
    bounds = [p - 1]
    for k in range(s - 1, -1, -1):
        bounds.append(int(back[k, bounds[-1]]))
    bounds.reverse()
    return Found(float(f[p - 1]), Split(tuple(int(cuts[b]) for b in bounds), tuple(chain)))


def _range_max(values: NDArray[np.float64], cuts: NDArray[np.int64], starts: NDArray[np.int64],
               j: int) -> NDArray[np.float64]:
    """Per start i (a candidate index), the largest of `values` over units [cuts[i], cuts[j])."""
    seg = values[cuts[starts[0]]:cuts[j]]
    if not len(seg):
        return np.zeros(len(starts))
    suffix = np.maximum.accumulate(seg[::-1])[::-1]  # suffix[t]: max of seg[t:]
    out: NDArray[np.float64] = suffix[cuts[starts] - cuts[starts[0]]]
    return out


def _simulated_best(problem: Problem, pipeline: Pipeline,
                    per_stages: dict[int, Found]) -> tuple[Found, dict[int, float]]:
    """The stage count whose plan's simulated iteration is shortest (ties: the smaller
    period, then fewer stages), simulating only those whose estimate is close."""
    m = pipeline.microbatches
    estimate = {s: (m + s - 1) * f.period_s for s, f in per_stages.items()}
    best_estimate = min(estimate.values())
    runs: dict[int, float] = {}
    for s in sorted(per_stages):
        if estimate[s] <= ESTIMATE_SLACK * best_estimate:
            placement = per_stages[s].split.placement(problem)
            runs[s] = pipeline_schedule.run(problem, placement, pipeline).iteration_s
    chosen = min(runs, key=lambda s: (runs[s], per_stages[s].period_s, s))
    return per_stages[chosen], runs


def _memory_note(problem: Problem, chosen: Found, pipeline: Pipeline) -> str:
    """How the memory caps shaped the split ('' when no split, caps aside, has a shorter
    period)."""
    free_splits, _, _ = best_splits(problem, pipeline, capped=False)
    free = min(free_splits.values(), key=lambda f: (f.period_s, f.split.stages))
    if free.period_s >= chosen.period_s * (1 - 1e-9):
        return ""
    held = stage_bytes(problem, free.split, pipeline)
    devices = problem.cluster.devices
    over = [d for d, dev in enumerate(devices) if held[d] > dev.memory_bytes]
    where = ""
    if over:
        d = max(over, key=lambda d: held[d] - devices[d].memory_bytes)
        where = (f" ({free.split.stages} stage(s); it would need "
                 f"{format_bytes(int(held[d]))} on {devices[d].name}, which holds "
                 f"{format_bytes(devices[d].memory_bytes)})")
    return (f"memory shaped this split: without the caps, the period would be "
            f"{format_seconds(free.period_s)} instead of {format_seconds(chosen.period_s)}"
            f"{where}; this split is the best that fits")
