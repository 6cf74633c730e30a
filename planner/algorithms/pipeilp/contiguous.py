"""The recomputing contiguous splits (warm starts): pipedp's chains and cuts, each
stage's device recomputing exactly when that makes it fit, by a bottleneck DP."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ...cost import INF, stage_memory, stage_share
from ...model import Problem, derived
from ...pipeline import hybrid, splitdp
from ...pipeline.split import Split, in_flight
from ...pipeline.units import units
from .data import _data, _pipeline

#: candidate cuts of the recomputing DP at most (its tables are cuts x cuts)
MAX_DP_CUTS = 1200


def contiguous_splits(problem: Problem, cells: float = splitdp.MAX_CELLS) -> dict[int, Split]:
    """Per stage count, the contiguous split of least period over pipedp's chains and
    cuts (those of its work `cells`: `auto` sizes it to its limit, `cells_for`), each
    stage's device recomputing exactly when that makes it fit (module docstring); counts
    where nothing fits are left out."""
    found: dict[float, dict[int, Split]] = derived(problem, "pipeilp.contiguous", dict)
    if cells not in found:
        found[cells] = _contiguous(problem, cells)
    return found[cells]


#: the recomputing DP's work `auto` gives per second of its limit (`cells_for`): one pass
#: per chain where pipedp's counts seven, so pipedp's whole space (`splitdp.MAX_CELLS`)
#: from 10 s, `planner solve`'s default limit, up; at `--time-limit 1` 0.36 s of CPU on
#: Inception-v3 with all of it, 0.06 s with this
CELLS_PER_SECOND = splitdp.MAX_CELLS / 10


def cells_for(time_limit_s: float) -> float:
    """The recomputing DP's work under `auto`'s limit (`CELLS_PER_SECOND` of it, pipedp's
    `MAX_CELLS` at most; a limit of 0: no limit): a function of the limit alone."""
    if time_limit_s <= 0:
        return splitdp.MAX_CELLS
    return max(splitdp.MIN_CELLS, min(splitdp.MAX_CELLS, CELLS_PER_SECOND * time_limit_s))


def unsearched(problem: Problem, cells: float = splitdp.MAX_CELLS) -> str:
    """What the recomputing DP within `cells` left out, in words (empty where it searched
    every contiguous split): the orders of the devices past `splitdp.MAX_EXAMINED`, device
    chains (`splitdp.MAX_CHAINS` a stage count at most, fewer as its work allows), unit
    boundaries thinned from the cuts, and under several stages per device, splits whose
    stages do not each fit the device's memory over K (its DP's rule there)."""
    pipe = _pipeline(problem)
    space = _space(problem, cells)
    n = units(problem).count
    m = len(problem.cluster.devices)
    orders = max((math.perm(m, s // pipe.per_device) for s in space.chains), default=0)
    left = [*([f"the first {splitdp.MAX_EXAMINED:,} orders of the devices"]
              if orders > splitdp.MAX_EXAMINED else []),
            *([f"{space.tried} of {space.total} device chains"]
              if space.tried < space.total else []),
            *([f"{len(space.cuts) - 1} of {n} unit boundaries as cuts"]
              if len(space.cuts) - 1 < n else []),
            *([f"each stage within its device's memory over {pipe.per_device}"]
              if pipe.per_device > 1 else [])]
    return ", ".join(left)


def _space(problem: Problem, cells: float) -> splitdp.Space:
    """The chains and cuts the recomputing DP searches within `cells` (`MAX_DP_CUTS` at most)."""
    pipe = _pipeline(problem)
    space = splitdp.search_space(problem, pipe, cells)
    if len(space.cuts) > MAX_DP_CUTS:
        rows = sum(s * len(c) for s, c in space.chains.items())
        space = splitdp.search_space(problem, pipe, float(rows * MAX_DP_CUTS ** 2))
    return space


def _contiguous(problem: Problem, cells: float) -> dict[int, Split]:
    space = _space(problem, cells)
    tables = _Tables(problem, space)
    out: dict[int, Split] = {}
    for stages, chains in space.chains.items():
        if stages > len(space.cuts) - 1:
            continue
        best: tuple[float, Split] | None = None
        for chain in chains:
            found = _chain_split(problem, space, chain, tables)
            if found is not None and (best is None or found[0] < best[0]):
                best = found
        if best is not None:
            out[stages] = best[1]
    return out


class _Tables:
    """What the chains' DPs share over the space's candidate cuts, each derived once: a
    device pair's boundary transfers, and a device's stage cost matrix before transfers
    (compute, recomputing when only that fits) per count in flight. Recomputed per chain
    and stage, they took two thirds of the 1.5 s of ResNet-50's 148 chains on 8 GPUs."""

    def __init__(self, problem: Problem, space: splitdp.Space) -> None:
        self.problem, self.cuts, self.largest = problem, space.cuts, space.largest
        p = len(space.cuts)
        self.i, self.j = np.arange(p)[:, None], np.arange(p)[None, :]
        self._pairs: dict[tuple[int, int], tuple[NDArray[np.float64],
                                                 NDArray[np.float64]]] = {}
        self._loads: dict[tuple[int, int, bool], NDArray[np.float64]] = {}
        self._bad: dict[int, NDArray[np.bool_]] = {}

    def boundary(self, a: int, b: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """`_boundary_s` of devices a (left) and b (right)."""
        if (a, b) not in self._pairs:
            self._pairs[a, b] = _boundary_s(self.problem, self.cuts, a, b)
        return self._pairs[a, b]

    def load(self, d: int, count: int, last: bool) -> NDArray[np.float64]:
        """[i, j]: the compute of a stage of cuts i .. j on device d holding `count`
        micro-batches (in inference, every micro-batch's inputs and outputs too, the `last`
        stage's outputs merged: `hybrid.step_bytes`), recomputing when only
        that fits its share of d's memory (INF where neither fits)."""
        if (d, count, last) not in self._loads:
            data, u, cuts = _data(self.problem), units(self.problem), self.cuts
            i_, j_ = self.i, self.j
            params_at, kept_at = u.params_prefix[cuts], u.kept_prefix[cuts]
            compute_at, forward_at = u.compute_prefix[d][cuts], u.forward_prefix[d][cuts]
            params = params_at[j_] - params_at[i_]
            kept = kept_at[j_] - kept_at[i_]
            comp = compute_at[j_] - compute_at[i_]
            redo = comp + forward_at[j_] - forward_at[i_]
            received, sent = u.forward_bytes[cuts][i_], u.forward_bytes[cuts][j_]
            inputs_at, outputs_at = u.input_prefix[cuts], u.output_prefix[cuts]
            ends = inputs_at[j_] - inputs_at[i_] + outputs_at[j_] - outputs_at[i_]
            rebuilt = kept - (inputs_at[j_] - inputs_at[i_])
            pipe = _pipeline(self.problem)
            cap = stage_share(data.caps[d], pipe.per_device) - hybrid.step_bytes(
                u, cuts[i_], cuts[j_], pipe, 1, last) - hybrid.kept_sends(
                u, cuts[i_], cuts[j_], pipe)
            # recomputing, it keeps its activations once (rebuilt for one backward pass, its
            # data inputs aside), and per micro-batch what it receives and sends, the
            # model's data inputs and outputs among them (`split.stage_bytes`)
            self._loads[d, count, last] = np.where(
                stage_memory(params, count, kept + received, self.largest) <= cap, comp,
                np.where(stage_memory(params, count, received + sent + ends,
                                      self.largest + rebuilt) <= cap, redo, INF))
        return self._loads[d, count, last]

    def bad(self, d: int) -> NDArray[np.bool_]:
        """[i, j]: where a stage of cuts i .. j may not run on device d (empty, or a unit
        it may not run)."""
        if d not in self._bad:
            banned_at = units(self.problem).banned_prefix[d][self.cuts]
            self._bad[d] = (self.i >= self.j) | (banned_at[self.j] - banned_at[self.i] > 0)
        return self._bad[d]


def _boundary_s(problem: Problem, cuts: NDArray[np.int64], a: int, b: int
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per candidate cut, between devices a (left) and b (right): (forward a -> b,
    backward b -> a) seconds."""
    data = _data(problem)
    fwd = np.array([data.forward_s(int(x), a, b) for x in cuts])
    bwd = np.array([data.backward_s(int(x), a, b) for x in cuts])
    return fwd, bwd


def _chain_split(problem: Problem, space: splitdp.Space, chain: Sequence[int],
                 tables: _Tables) -> tuple[float, Split] | None:
    """The bottleneck DP of one chain over the space's candidate cuts (the units' prefix
    tables read at them, as `splitdp` reads them): f[k][j] = min_i max(f[k-1][i],
    cost_k(i, j)), the stage cost its compute (recomputing when only that fits) or its
    boundaries' transfer resources under the contention model."""
    data, pipe = _data(problem), _pipeline(problem)
    cuts = space.cuts
    s, p = len(chain), len(cuts)
    ranks = {d: r for r, d in enumerate(dict.fromkeys(chain))}
    i_, j_ = tables.i, tables.j
    zero = np.zeros(p)
    f = np.full(p, INF)
    f[0] = 0.0
    back = np.zeros((s, p), dtype=np.int64)
    left = (zero, zero)
    for k, d in enumerate(chain):
        right = tables.boundary(d, chain[k + 1]) if k + 1 < s else (zero, zero)
        load = tables.load(d, in_flight(pipe, s, k, data.training, ranks[d], len(ranks)),
                           k == s - 1)
        if problem.contention == "link":
            moves = np.maximum(np.maximum(*left)[i_], np.maximum(*right)[j_])
        elif problem.contention == "device":
            moves = (left[0] + left[1])[i_] + (right[0] + right[1])[j_]
        else:
            moves = np.zeros((p, p))
        cost = np.where(tables.bad(d), INF, np.maximum(load, moves))
        best = np.maximum(f[:, None], cost)
        at = np.argmin(best, axis=0)
        f = best[at, np.arange(p)]
        back[k] = at
        left = right
    if not math.isfinite(f[p - 1]):
        return None
    bounds = splitdp.backtrack(back, s, p - 1)
    if bounds[0] != 0:
        return None
    return float(f[p - 1]), Split(tuple(int(cuts[b]) for b in bounds), tuple(chain))
