"""The recomputing contiguous splits (warm starts): pipedp's chains and cuts, each
stage's device recomputing exactly when that makes it fit, by a bottleneck DP."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...cost import INF, stage_memory, stage_share
from ...model import Problem, derived
from ...pipeline import splitdp
from ...pipeline.split import Split, in_flight
from ...pipeline.units import units
from .data import _data, _pipeline

#: candidate cuts of the recomputing DP at most (its tables are cuts x cuts)
MAX_DP_CUTS = 1200


def contiguous_splits(problem: Problem) -> dict[int, Split]:
    """Per stage count, the contiguous split of least period over pipedp's chains and
    cuts, each stage's device recomputing exactly when that makes it fit (module
    docstring); counts where nothing fits are left out."""
    return derived(problem, "pipeilp.contiguous", lambda: _contiguous(problem))


def _contiguous(problem: Problem) -> dict[int, Split]:
    pipe = _pipeline(problem)
    space = splitdp.search_space(problem, pipe)
    if len(space.cuts) > MAX_DP_CUTS:
        rows = sum(s * len(c) for s, c in space.chains.items())
        space = splitdp.search_space(problem, pipe, float(rows * MAX_DP_CUTS ** 2))
    tables = _Tables.of(problem, space.cuts, space.largest)
    out: dict[int, Split] = {}
    for stages, chains in space.chains.items():
        if stages > len(space.cuts) - 1:
            continue
        best: tuple[float, Split] | None = None
        for chain in chains:
            found = _chain_split(problem, tables, chain)
            if found is not None and (best is None or found[0] < best[0]):
                best = found
        if best is not None:
            out[stages] = best[1]
    return out


@dataclass(frozen=True, slots=True)
class _Tables:
    """Prefix tables over candidate cuts for the recomputing DP."""

    cuts: NDArray[np.int64]
    compute: NDArray[np.float64]
    forward: NDArray[np.float64]
    banned: NDArray[np.float64]
    params: NDArray[np.float64]
    kept: NDArray[np.float64]
    received: NDArray[np.float64]
    largest: NDArray[np.float64]

    @staticmethod
    def of(problem: Problem, cuts: NDArray[np.int64], largest: NDArray[np.float64]
           ) -> _Tables:
        """The tables of `problem` at `cuts` (`largest`: pipedp's largest transients)."""
        u = units(problem)
        return _Tables(cuts, u.compute_prefix[:, cuts], u.forward_prefix[:, cuts],
                       u.banned_prefix[:, cuts], u.params_prefix[cuts], u.kept_prefix[cuts],
                       u.forward_bytes[cuts], largest)


def _boundary_s(problem: Problem, cuts: NDArray[np.int64], a: int, b: int
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per candidate cut, between devices a (left) and b (right): (forward a -> b,
    backward b -> a) seconds."""
    data = _data(problem)
    fwd = np.array([data.forward_s(int(x), a, b) for x in cuts])
    bwd = np.array([data.backward_s(int(x), a, b) for x in cuts])
    return fwd, bwd


def _chain_split(problem: Problem, t: _Tables, chain: Sequence[int]
                 ) -> tuple[float, Split] | None:
    """The bottleneck DP of one chain: f[k][j] = min_i max(f[k-1][i], cost_k(i, j)), the
    stage cost its compute (recomputing when only that fits) or its boundaries' transfer
    resources under the contention model."""
    data, pipe = _data(problem), _pipeline(problem)
    s, p = len(chain), len(t.cuts)
    ranks = {d: r for r, d in enumerate(dict.fromkeys(chain))}
    per = pipe.per_device
    i_, j_ = np.arange(p)[:, None], np.arange(p)[None, :]
    zero = np.zeros(p)
    f = np.full(p, INF)
    f[0] = 0.0
    back = np.zeros((s, p), dtype=np.int64)
    left = (zero, zero)
    for k, d in enumerate(chain):
        right = _boundary_s(problem, t.cuts, d, chain[k + 1]) if k + 1 < s else (zero, zero)
        count = in_flight(pipe, s, k, data.training, ranks[d], len(ranks))
        cap = stage_share(data.caps[d], per)
        params = t.params[j_] - t.params[i_]
        kept = t.kept[j_] - t.kept[i_]
        comp = t.compute[d][j_] - t.compute[d][i_]
        redo = comp + t.forward[d][j_] - t.forward[d][i_]
        received = t.received[i_]
        # recomputing, it keeps its activations once (rebuilt for one backward pass)
        load = np.where(stage_memory(params, count, kept + received, t.largest) <= cap, comp,
                        np.where(stage_memory(params, count, received, t.largest + kept)
                                 <= cap, redo, INF))
        if problem.contention == "link":
            moves = np.maximum(np.maximum(*left)[i_], np.maximum(*right)[j_])
        elif problem.contention == "device":
            moves = (left[0] + left[1])[i_] + (right[0] + right[1])[j_]
        else:
            moves = np.zeros((p, p))
        bad = (i_ >= j_) | (t.banned[d][j_] - t.banned[d][i_] > 0)
        cost = np.where(bad, INF, np.maximum(load, moves))
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
    return float(f[p - 1]), Split(tuple(int(t.cuts[b]) for b in bounds), tuple(chain))
