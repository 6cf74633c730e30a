"""The ramp bound: the work a graph cannot start early (or end late) runs on the devices
that are left.

Claim. Let `w(i)` be op `i`'s least time over its allowed devices, `head(i)` the longest
path of `w` into `i` and `tail(i)` the longest path of `w` out of `i` (neither counting
`i`), and `m` the number of devices. For a time `a`, let
`G(a) = sum over i of clip(head(i) + w(i) - a, 0, w(i))`. Then every plan's makespan `T`
is at least `a + G(a) / m` for every `a` with `G(a) > 0`, and, on the reversed graph, at
least `b + H(b) / m` with `H(b) = sum over i of clip(tail(i) + w(i) - b, 0, w(i))`.

Proof. Take a valid plan; op `i` runs on some device `d` from `s` to `e`, with
`e - s = time(i, d) >= w(i)`. It cannot start before `head(i)` (its predecessors' chain
runs one op after another, each for at least `w`), so `s >= head(i)`. Count its work in
units of `w`: it does `w(i)` of them at a rate `w(i) / time(i, d) <= 1`, so at most
`max(0, a - s) <= max(0, a - head(i))` of them before `a`, and at least
`clip(head(i) + w(i) - a, 0, w(i))` at `a` or later. When `G(a) > 0`, some op ends after
`a`, so `a < T`, and the `m` devices do at most one unit a second each in `[a, T]`:
`G(a) <= m (T - a)`. The tail side is the same argument on the reversed plan (time runs
backwards from `T`; an op ends at least its `tail` before `T`). Transfers, contention and
memory only delay ops, so the bound holds under every contention and memory model.

Why: `work_s` lets every device work from time 0, `critical_path_s` lets one path run
alone; a graph that widens slowly (an unrolled RNN's wavefront, a pipeline's fill) idles
devices at its start and its end, which neither charges. `a = 0` gives the work of `w`
over the devices (at least `work_s`), and as `a` nears the longest path of `w` the value
nears that path (at least `critical_path_s`), so this is at least both; it is the special
case of Fernandez and Bussell's interval bound (1973) for the intervals that begin at 0 or
end at `T`, where it needs no search over `T` (and where a device's speed, which stretches
an op's run, weakens nothing). On `gnmt8_small4` it raises the bound from 156.41 ms (the
work) to 168.65 ms.

`G` is piecewise linear with its corners at the heads and head-plus-`w`s, so the largest
`a + G(a) / m` is at one of them or, in the limit, at the longest path's end: all corners
are evaluated at once from sorted suffix sums (O(V log V)), and the best is recomputed
exactly (`math.fsum`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..model import Problem


def head_tail(problem: Problem, wmin: Sequence[float]) -> tuple[list[float], list[float]]:
    """Per op, the longest path of `wmin` into it and out of it, itself not counted."""
    g = problem.graph
    n = len(g.ops)
    head, tail = [0.0] * n, [0.0] * n
    order = g.topological_order
    edges, succ = g.edges, g.successors
    for i in order:
        x = head[i] + wmin[i]
        for k in succ[i]:
            j = edges[k].dst
            if x > head[j]:
                head[j] = x
    for i in reversed(order):
        for k in succ[i]:
            j = edges[k].dst
            x = tail[j] + wmin[j]
            if x > tail[i]:
                tail[i] = x
    return head, tail


def ramp_bound(head: Sequence[float], tail: Sequence[float], wmin: Sequence[float],
               m: int) -> float:
    """The larger of the head side and the tail side (module docstring); 0.0 without
    devices or ops."""
    if m < 1 or not len(wmin):
        return 0.0
    w = np.asarray(wmin, dtype=np.float64)
    return max(_one_side(np.asarray(head, dtype=np.float64), w, m),
               _one_side(np.asarray(tail, dtype=np.float64), w, m))


def _one_side(start: np.ndarray, w: np.ndarray, m: int) -> float:
    """`max over a of a + G(a) / m`, `G(a) = sum of clip(start + w - a, 0, w)`, over the
    `a` with `G(a) > 0` (module docstring)."""
    end = start + w
    last = float(end.max())
    corners = np.unique(np.concatenate((start, end)))
    corners = corners[corners < last]  # G > 0 exactly there
    if not len(corners):
        return last
    # clip(end - a, 0, w) = (end - a)+ - (start - a)+, each sum from sorted suffix sums
    value = corners + (_above(end, corners) - _above(start, corners)) / m
    a = float(corners[int(np.argmax(value))])
    forced = math.fsum(np.clip(end - a, 0.0, w).tolist())
    return max(a + forced / m, last)


def _above(x: np.ndarray, at: np.ndarray) -> np.ndarray:
    """`sum over i of max(0, x_i - a)` for each `a` of `at`."""
    xs = np.sort(x)
    suffix = np.concatenate((np.cumsum(xs[::-1])[::-1], [0.0]))
    k = np.searchsorted(xs, at, side="right")  # the x_i > a are xs[k:]
    return suffix[k] - at * (len(xs) - k)
