"""The split DP's work (`splitdp`), a function of the time limit alone, so that a plan is
the same on any machine: the cells a limit buys (`cells_for`), the device chains tried per
stage count (`chains_within`), and the stage counts whose splits are enumerated under
`interleaved` (`enumerated_stages`), each sized by what its fixed costs take of the cells;
and the first device orders of a stage count, as many as examined (`permutations_first`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..model import Pipeline

#: chains of devices tried per stage count (`splitdp._ranked_chains`' order)
MAX_CHAINS = 24
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
#: the DP's passes over the cells per chain and stage count (`search_space`): four kinds
#: of split (`KINDS`), the first two in two passes (least bottleneck, then most even), and
#: the memory note's least period without the caps
DP_PASSES = 7
#: splits enumerated per stage count under `interleaved` (exact there) before the DP
#: (a heuristic there) takes over
MAX_ENUMERATED = 20_000


def cells_for(time_limit_s: float) -> float:
    """The DP's work for a time limit (`CELLS_PER_SECOND` of it, `MAX_CELLS` at most; a
    limit of 0: no limit): a function of the limit alone, the same plan on any machine."""
    if time_limit_s <= 0:
        return MAX_CELLS
    return max(MIN_CELLS, min(MAX_CELLS, CELLS_PER_SECOND * time_limit_s))


# The fixed costs `chains_within` sizes, beside it: at small limits these, not the cells,
# took the time (`--time-limit 2` on 8 GPUs under `interleaved`: 1.6 s of DP for AlexNet's
# 23 units). In cells: one pass of the DP per chain whatever its cuts (its tables and
# numpy set-up: 0.35 ms idle), one enumerated split (the report's rules,
# `resource_loads` and `stage_bytes`: 45 us); and the share of the work they may take.
PASS_CELLS = 3e4
SPLIT_CELLS = 4e3
FIXED_SHARE = 0.5


def enumeration_cells(pipeline: Pipeline, stages: int, chains: int, cuts: int) -> float | None:
    """The fixed cost of enumerating the splits of `stages` stages over `chains` chains and
    `cuts` candidate cuts (`SPLIT_CELLS` a split, two kinds); None where they are not
    enumerated: one stage per device (not `interleaved`), one stage, or more than
    `MAX_ENUMERATED` splits. The one rule `chains_within` and `enumerated_stages` size by."""
    if pipeline.per_device == 1 or stages == 1:
        return None
    splits = math.comb(max(cuts - 2, 0), stages - 1) * chains
    return 2 * SPLIT_CELLS * splits if splits <= MAX_ENUMERATED else None


def chains_within(pipeline: Pipeline, listed: dict[int, int], cuts: int,
                  cells: float) -> int:
    """Chains tried per stage count (`MAX_CHAINS` at most, 1 at least): as many as the
    fixed costs of the DP's passes (`PASS_CELLS` per chain and pass) and of the splits
    enumerated under `interleaved` (`enumeration_cells`) fit in `FIXED_SHARE` of `cells`,
    given `listed` chains per stage count and `cuts` candidate cuts: a function of the
    problem and the work alone, so the plan is the same on any machine."""
    for per in range(MAX_CHAINS, 1, -1):
        fixed = 0.0
        for stages, count in listed.items():
            tried = min(count, per)
            fixed += DP_PASSES * PASS_CELLS * tried + (
                enumeration_cells(pipeline, stages, tried, cuts) or 0.0)
        if fixed <= FIXED_SHARE * cells:
            return per
    return 1


def enumerated_stages(pipeline: Pipeline, chains: dict[int, list[tuple[int, ...]]],
                      within: int, cuts: int, cells: float) -> frozenset[int]:
    """The stage counts whose splits are enumerated (exact under `interleaved`, K > 1): of
    `MAX_ENUMERATED` splits at most over their `chains`, the fewest stages first while the
    DP passes and enumerated splits of `within` chains each (`chains_within`'s) fit
    `FIXED_SHARE` of `cells` (all at `MAX_CELLS`: no limit), the rest by the per-stage DP.
    Where `within` chains fit, all, as before; where even one chain does not, no longer
    past the time limit: a 16-op chain on 8 GPUs enumerated 32,768 splits, 4.2 s, at
    `--time-limit 0.05`. Every chain's search (before E707) is held to the same work."""
    fixed = DP_PASSES * PASS_CELLS * sum(min(len(c), within) for c in chains.values())
    out = set()
    for stages, tried in sorted(chains.items()):
        if enumeration_cells(pipeline, stages, len(tried), cuts) is None:
            continue
        fixed += enumeration_cells(pipeline, stages, min(len(tried), within), cuts) or 0.0
        if fixed > FIXED_SHARE * cells and cells < MAX_CELLS:
            break
        out.add(stages)
    return frozenset(out)


def permutations_first(m: int, width: int, most: int) -> NDArray[np.int64]:
    """The first `most` of `itertools.permutations(range(m), width)`, in its (lexicographic)
    order, as rows: built a position at a time, keeping at each only the prefixes whose
    completions reach into the first `most`."""
    rows = np.zeros((1, 0), dtype=np.int64)
    for k in range(width):
        completions = math.perm(m - k - 1, width - k - 1)  # of each prefix of k + 1 devices
        used = np.zeros((len(rows), m), dtype=bool)
        used[np.arange(len(rows))[:, None], rows] = True
        at, device = np.nonzero(~used)  # row by row, each row's free devices ascending
        keep = min(len(at), -(-most // completions))
        rows = np.concatenate([rows[at[:keep]], device[:keep, None]], axis=1)
    return rows[:most]
