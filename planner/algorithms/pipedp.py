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
is shortest wins (each count's best split is simulated; where the M copies of the graph
would pass `MAX_SIMULATED_OPS` ops, the best estimate (M + S - 1) T wins instead; the
estimate missed the README's two-GPU MLP, where a 2-stage split beats one stage).
When the DP's work, stage rows times
candidate cuts squared, would pass `MAX_CELLS`, the cuts are thinned to the cheapest
boundary to cross within each of as many equal windows of units as fit, and
`info["candidate_cuts"]` says so: the split is then the best among those cuts (GNMT's
2,674 units on 4 GPUs: every boundary; a 100,000-op graph on 8 GPUs: about 560).

When the memory caps change the answer, `info["memory_note"]` says how: the split chosen
by the same rule without them (its stage count, period and iteration) and the device it
would overfill. Caps that rule out only splits that lose anyway are not mentioned. When
the stage count with the least period is passed over because its iteration is longer,
`info["stages_note"]` says so instead (with 1 TiB devices that was the "memory" note).

When no split exists, E707 says why (`check_units`, `_no_split`): a unit pinned to two
devices or that no device runs, more stages per device than units, the memory caps (a
split fits without them), or pins that leave the units an order no chain follows.
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
from ..model import Pipeline, Problem, derived
from ..pipeline import schedule as pipeline_schedule
from ..pipeline.split import Split, in_flight, stage_bytes
from ..pipeline.units import Units, units
from ..plan import Plan
from ..units import format_bytes, format_seconds
from .base import Options, Solution

#: chains of devices tried per stage count (the best-linked first)
MAX_CHAINS = 24
#: device sequences examined per stage count (a cluster of many devices has too many to list)
MAX_EXAMINED = 200_000
#: the DP's work: (stage rows over all chains tried) x (candidate cuts)^2 at most; more
#: and the cuts are thinned (about 5 s on this machine, the memory note's second run
#: included)
MAX_CELLS = 2e8
#: the work `auto` gives the DP per second of its time limit (`cells_for`: 2e8 at the
#: default 10 s, half the time on an idle machine, as `clock.LOAD_HEADROOM` wants)
CELLS_PER_SECOND = 2e7
#: the least work, whatever the limit (a few candidate cuts per stage)
MIN_CELLS = 1e5
#: the most candidate cuts, whatever the budget
MAX_UNITS = 20_000
#: copies of the graph's ops (micro-batches x ops) up to which stage counts are simulated
MAX_SIMULATED_OPS = 200_000
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
    space = search_space(problem, pipeline, cells)
    check_units(problem, pipeline)
    per_stages = best_splits(problem, pipeline, options, cells=cells)
    if not per_stages:
        raise _no_split(problem, pipeline, cells)
    chosen, runs = _simulated_best(problem, pipeline, per_stages)
    info: dict[str, object] = {
        "period_s": chosen.period_s,
        "stages": chosen.split.stages,
        "chains": f"{space.tried} of {space.total} tried",
    }
    if chosen.split.stages in runs:
        info["iteration_s"] = runs[chosen.split.stages]
    n = units(problem).count
    if len(space.cuts) - 1 < n:
        info["candidate_cuts"] = f"{len(space.cuts) - 1} of {n} unit boundaries"
    info.update(_split_notes(problem, chosen, pipeline, cells, per_stages, runs))
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
    per = pipeline.stages_per_device if pipeline.schedule == "interleaved" else 1
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
    for stages in range(1, _most_stages(problem, pipeline, n) + 1):
        found = list(_chains(problem, stages, pipeline))
        total += len(found)
        chains[stages] = found[:MAX_CHAINS]
        tried += len(chains[stages])
    stage_rows = sum(s * len(c) for s, c in chains.items())
    most = max(2, int(math.sqrt(cells / max(stage_rows, 1))))
    cuts = _candidate_cuts(units(problem), min(MAX_UNITS, most))
    return Space(chains, tried, total, cuts, _largest_transients(units(problem), cuts))


def best_splits(problem: Problem, pipeline: Pipeline, options: Options | None = None,
                capped: bool = True, cells: float = MAX_CELLS) -> dict[int, Found]:
    """Per stage count, the split with the least period over the chains tried (counts with
    no split that fits are left out; with `capped` False, memory is not looked at)."""
    u = units(problem)
    space = search_space(problem, pipeline, cells)
    per_stages: dict[int, Found] = {}
    done = 0
    for stages, chains in space.chains.items():
        if stages > len(space.cuts) - 1:
            continue
        for chain in chains:
            done += 1
            found = _best_split(problem, u, space, chain, pipeline, capped)
            if found is not None and (stages not in per_stages
                                      or found.period_s < per_stages[stages].period_s):
                per_stages[stages] = found
            if options is not None and options.progress is not None:
                options.progress(done / space.tried * (0.5 if capped else 1.0),
                                 f"pipedp: {stages} stage(s), chain {done} of {space.tried}")
    return per_stages


def _most_stages(problem: Problem, pipeline: Pipeline, n: int) -> int:
    devices = len(problem.cluster.devices)
    per = pipeline.stages_per_device if pipeline.schedule == "interleaved" else 1
    return min(devices * per, n)


def _candidate_cuts(u: Units, most: int) -> NDArray[np.int64]:
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
    per = pipeline.stages_per_device if pipeline.schedule == "interleaved" else 1
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


def _best_split(problem: Problem, u: Units, space: Space, chain: Sequence[int],
                pipeline: Pipeline, capped: bool) -> Found | None:
    """The bottleneck DP over `cuts` for one chain (None: nothing fits): each stage's row
    of the recurrence in blocks of ends j, a (starts x ends) matrix at a time."""
    s, p = len(chain), len(space.cuts)
    ranks = {d: r for r, d in enumerate(dict.fromkeys(chain))}
    width = len(ranks)
    per = pipeline.stages_per_device if pipeline.schedule == "interleaved" else 1
    cuts = space.cuts
    largest = space.largest if capped else None
    f = np.full(p, INF)
    f[0] = 0.0
    back = np.zeros((s, p), dtype=np.int64)
    left = np.zeros(p)  # the boundary into stage k, for each candidate start
    for k, d in enumerate(chain):
        right = (_boundary(problem, u, d, chain[k + 1])[cuts] if k + 1 < s else np.zeros(p))
        stage = _Stage(u.compute_prefix[d][cuts], u.banned_prefix[d][cuts], left, right,
                       in_flight(pipeline, s, k, u.training, ranks[d], width),
                       problem.cluster.devices[d].memory_bytes / per if capped else INF)
        ends = np.array([p - 1] if k == s - 1 else range(k + 1, p - (s - k) + 1),
                        dtype=np.int64)
        new = np.full(p, INF)
        step = max(1, BLOCK_CELLS // p)
        for lo in range(0, len(ends), step):
            j = ends[lo:lo + step]
            i = np.arange(k, int(j[-1]))[:, None]
            load = stage.load(u, cuts, i, j[None, :],
                              None if largest is None else largest[k:int(j[-1]), j])
            best = np.maximum(f[i], load)
            at = np.argmin(best, axis=0)
            new[j] = best[at, np.arange(len(j))]
            back[k, j] = at + k
        f = new
        left = right
    if not math.isfinite(f[p - 1]):
        return None
    bounds = [p - 1]
    for k in range(s - 1, -1, -1):
        bounds.append(int(back[k, bounds[-1]]))
    bounds.reverse()
    return Found(float(f[p - 1]), Split(tuple(int(cuts[b]) for b in bounds), tuple(chain)))


@dataclass(frozen=True, slots=True)
class _Stage:
    """One stage's tables over the candidate cuts (for `_best_split`)."""

    compute: NDArray[np.float64]
    banned: NDArray[np.float64]
    left: NDArray[np.float64]
    right: NDArray[np.float64]
    in_flight: int
    cap: float

    def load(self, u: Units, cuts: NDArray[np.int64], i: NDArray[np.int64],
             j: NDArray[np.int64], largest: NDArray[np.float64] | None) -> NDArray[np.float64]:
        """Per (start i, end j): the stage's load, inf where it may not be (i >= j, a unit
        its device may not run, more memory than the cap; `largest`: the largest transient
        of each (i, j), None to leave memory out)."""
        load = self.compute[j] - self.compute[i] + self.left[i] + self.right[j]
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


def _simulated_best(problem: Problem, pipeline: Pipeline,
                    per_stages: dict[int, Found]) -> tuple[Found, dict[int, float]]:
    """The stage count whose plan's simulated iteration is shortest (ties: the smaller
    period, then fewer stages); above `MAX_SIMULATED_OPS` copies, the best estimate."""
    m = pipeline.microbatches
    estimate = {s: (m + s - 1) * f.period_s for s, f in per_stages.items()}
    runs: dict[int, float] = {}
    if m * len(problem.graph.ops) > MAX_SIMULATED_OPS:
        best = min(estimate, key=lambda s: (estimate[s], per_stages[s].period_s, s))
        return per_stages[best], runs
    for s in sorted(per_stages):
        placement = per_stages[s].split.placement(problem)
        runs[s] = pipeline_schedule.run(problem, placement, pipeline).iteration_s
    chosen = min(runs, key=lambda s: (runs[s], per_stages[s].period_s, s))
    return per_stages[chosen], runs


def _split_notes(problem: Problem, chosen: Found, pipeline: Pipeline, cells: float,
                 per_stages: dict[int, Found], runs: dict[int, float]) -> dict[str, str]:
    """What shaped the split, for `info`: `memory_note` when the caps changed the answer
    (the stage counts are compared as `_simulated_best` does, with and without the caps),
    else `stages_note` when a split with a shorter period was passed over because its
    iteration is longer; empty when neither."""
    free = best_splits(problem, pipeline, capped=False, cells=cells)
    shaped = {s for s, f in free.items()
              if s not in per_stages or f.period_s < per_stages[s].period_s * (1 - 1e-9)}
    if shaped:
        note = _memory_note(problem, chosen, pipeline, free, shaped, runs)
        return {"memory_note": note} if note else {}
    note = _stages_note(problem, chosen, pipeline, per_stages, runs)
    return {"stages_note": note} if note else {}


def _iterations(problem: Problem, pipeline: Pipeline, splits: dict[int, Found],
                runs: dict[int, float], fresh: set[int]) -> tuple[dict[int, float], str]:
    """Per stage count, the iteration `_simulated_best` compared by: `runs` (simulated)
    where given, the splits of counts in `fresh` simulated; the estimate (M + S - 1) T
    where nothing was simulated. And the name of the figure."""
    m = pipeline.microbatches
    if not runs:
        return {s: (m + s - 1) * f.period_s for s, f in splits.items()}, (
            "estimated iteration, (M + S - 1) T")
    out = {}
    for s, f in splits.items():
        out[s] = (pipeline_schedule.run(problem, f.split.placement(problem), pipeline)
                  .iteration_s if s in fresh or s not in runs else runs[s])
    return out, "simulated iteration"


def _memory_note(problem: Problem, chosen: Found, pipeline: Pipeline, free: dict[int, Found],
                 shaped: set[int], runs: dict[int, float]) -> str:
    """How the memory caps shaped the split ('' when the plan chosen without them, by the
    same rule, is no faster: the caps then ruled out only splits that lose anyway)."""
    figures, what = _iterations(problem, pipeline, free, runs, shaped)
    best = min(figures, key=lambda s: (figures[s], free[s].period_s, s))
    mine = _iterations(problem, pipeline, {chosen.split.stages: chosen}, runs, set())[0][
        chosen.split.stages]
    if figures[best] >= mine * (1 - 1e-9):
        return ""
    split = free[best].split
    held = stage_bytes(problem, split, pipeline)
    devices = problem.cluster.devices
    over = [d for d, dev in enumerate(devices) if held[d] > dev.memory_bytes]
    where = ""
    if over:
        d = max(over, key=lambda d: held[d] - devices[d].memory_bytes)
        where = (f", but need {format_bytes(int(held[d]))} on {devices[d].name}, which holds "
                 f"{format_bytes(devices[d].memory_bytes)}")
    return (f"memory shaped this split: without the caps, {split.stages} stage(s) would give a "
            f"period of {format_seconds(free[best].period_s)} and a {what} of "
            f"{format_seconds(figures[best])} (this split: {format_seconds(chosen.period_s)} "
            f"and {format_seconds(mine)}){where}")


def _stages_note(problem: Problem, chosen: Found, pipeline: Pipeline,
                 per_stages: dict[int, Found], runs: dict[int, float]) -> str:
    """Why the stage count with the least period was passed over ('' when it was not):
    its iteration is longer (the bubble, or transfers the period does not see)."""
    least = min(per_stages, key=lambda s: (per_stages[s].period_s, s))
    if per_stages[least].period_s >= chosen.period_s * (1 - 1e-9):
        return ""
    figures, what = _iterations(problem, pipeline, per_stages, runs, set())
    return (f"{least} stage(s) would have a shorter period, "
            f"{format_seconds(per_stages[least].period_s)} against "
            f"{format_seconds(chosen.period_s)}, but a longer {what}, "
            f"{format_seconds(figures[least])} against "
            f"{format_seconds(figures[chosen.split.stages])}: the stage count is chosen by "
            "the iteration")
