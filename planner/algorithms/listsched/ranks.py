"""Static priorities of the list schedulers: HEFT's upward rank, CPOP's downward rank, and
integer positions (`priority_positions`) that make heap keys cheap and ties deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...cost import transfer_seconds
from .instance import Instance

__all__ = ["downward_rank", "priority_positions", "upward_rank"]


def upward_rank(inst: Instance) -> list[float]:
    """HEFT's upward rank: mean compute of the op plus the longest mean path to an exit.

    `rank_u(i) = w̄(i) + max over successors j of (c̄(i, j) + rank_u(j))`, with `w̄` the mean
    compute time over runnable devices and `c̄` the mean transfer time (0 on edges that are
    forced local). O(V + E).
    """
    rank = [0.0] * inst.n
    mean_compute = inst.mean_compute
    mean_lat, mean_inv = inst.mean_lat, inst.mean_inv
    pred, local = inst.pred, inst.local
    # push each op's rank to its producers, in reverse topological order
    best = [0.0] * inst.n
    for i in reversed(inst.topo):
        own = mean_compute[i] + best[i]
        rank[i] = own
        for (p, nbytes), forced_local in zip(pred[i], local[i], strict=True):
            through = own if forced_local else own + mean_lat + nbytes * mean_inv
            if through > best[p]:  # noqa: PLR1730 (hot loop: a call to max() costs more)
                best[p] = through
    return rank


def downward_rank(inst: Instance) -> list[float]:
    """CPOP's downward rank: the longest mean path from an entry op to the op, excluded.

    `rank_d(j) = max over predecessors i of (rank_d(i) + w̄(i) + c̄(i, j))`, 0 at entries.
    O(V + E).
    """
    rank = [0.0] * inst.n
    mean_compute = inst.mean_compute
    mean_lat, mean_inv = inst.mean_lat, inst.mean_inv
    for j in inst.topo:
        best = 0.0
        for (p, nbytes), forced_local in zip(inst.pred[j], inst.local[j], strict=True):
            through = rank[p] + mean_compute[p] + (
                0.0 if forced_local else transfer_seconds(mean_lat, mean_inv, nbytes))
            best = max(best, through)
        rank[j] = best
    return rank


def priority_positions(inst: Instance, score: Sequence[float]) -> list[int]:
    """Each op's position when sorted by larger `score`, ties by topological position.

    Position 0 is the highest priority. Integer positions make heap keys cheap and ties
    deterministic. With ranks, this order is also topological (a producer's rank is at least
    its consumer's, and equal ranks fall back to topological position).
    """
    order = sorted(range(inst.n), key=lambda i: (-score[i], inst.topo_pos[i]))
    pos = [0] * inst.n
    for position, i in enumerate(order):
        pos[i] = position
    return pos
