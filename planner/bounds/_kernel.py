# mypy: disallow-untyped-defs=False, disallow-untyped-calls=False
# (numba types this function from the arrays it is given)
"""The compiled twin of the bounds' graph passes (`planner.bounds`): the two longest paths,
the arrival path and the two heaviest paths, in one walk over the ops in topological order.

The numpy code in `planner.bounds` is the reference; this walk makes the same additions,
maxima and minima on the same operands (an op's maximum over its inputs and a device's
minimum over the sending device are exact in any order), so every figure comes out
bit-identical (tests/test_bounds.py compares them). It exists because the numpy code goes
one level of the graph at a time, and a deep graph (100k ops: 6,000 levels of a few dozen
edges) spends most of it in numpy's per-call overhead.

One jitted function on purpose: numba's on-disk cache is loaded per function, and each
load costs more than this walk does on a 100k-op graph.

Twin: `planner.bounds`, the reference; `tests/test_bounds_kernel.py` compares both on every
spec and random problems.
"""

from __future__ import annotations

import numpy as np
from numba import njit  # type: ignore[import-untyped]


# complex: a numba kernel that fuses `_longest_path`, `_arrival_path` and `memory.heaviest_path`
# into one walk over each op's inputs; the fusion is the point, the references stay apart
@njit(cache=True)
def passes(topo, pred_ptr, pred_src, pred_edge, fastest, wmin, extra, comp_ok, lat, inv,
           nbytes, same_unit, weight, heavy):
    """(critical path, constrained path, EF table, and when `heavy`, per weight — `fastest`
    and `weight` — the heaviest path's totals and back pointers).

    Ops' inputs are `pred_src[pred_ptr[j]:pred_ptr[j + 1]]` (edge ids `pred_edge`, in edge
    order, as `Graph.predecessors` lists them). `extra`: the constrained path's forced
    transfer per edge; `lat`/`inv`: latency and seconds per byte (`inv` 0 where there is
    no link); `same_unit[e]`: edge `e`'s ends share a placement unit (no transfer between
    devices). Mirrors `bounds._longest_path`, `bounds._arrival_path` and
    `bounds.memory.heaviest_path`.
    """
    n = topo.shape[0]
    m = lat.shape[0]
    crit = np.zeros(n)
    cons = np.zeros(n)
    ef = np.empty((n, m))
    total_a = np.zeros(n)
    total_b = np.zeros(n)
    back_a = np.full(n, -1, np.int64)
    back_b = np.full(n, -1, np.int64)
    es = np.empty(m)
    for q in range(n):
        j = topo[q]
        lo, hi = pred_ptr[j], pred_ptr[j + 1]
        if lo == hi:  # a source: as level 0 of the numpy passes
            crit[j] = fastest[j]
            cons[j] = wmin[j]
            for d in range(m):
                ef[j, d] = comp_ok[j, d]
            if heavy:
                total_a[j] = 0.0 + fastest[j]
                total_b[j] = 0.0 + weight[j]
            continue
        s_crit = -np.inf
        s_cons = -np.inf
        for d in range(m):
            es[d] = -np.inf
        best_a, arg_a, best_b, arg_b = 0.0, -1, 0.0, -1
        for k in range(lo, hi):
            i = pred_src[k]
            e = pred_edge[k]
            v = crit[i] + 0.0
            if v > s_crit:
                s_crit = v
            v = cons[i] + extra[e]
            if v > s_cons:
                s_cons = v
            nb = nbytes[e]
            local = same_unit[e]
            for d in range(m):
                arrive = np.inf
                for a in range(m):
                    t = np.inf if local and a != d else lat[a, d] + nb * inv[a, d]
                    x = ef[i, a] + t
                    if x < arrive:
                        arrive = x
                if arrive > es[d]:
                    es[d] = arrive
            if heavy:
                if total_a[i] > best_a or arg_a < 0:
                    best_a, arg_a = total_a[i], i
                if total_b[i] > best_b or arg_b < 0:
                    best_b, arg_b = total_b[i], i
        crit[j] = s_crit + fastest[j]
        cons[j] = s_cons + wmin[j]
        for d in range(m):
            ef[j, d] = es[d] + comp_ok[j, d]
        if heavy:
            total_a[j], back_a[j] = best_a + fastest[j], arg_a
            total_b[j], back_b[j] = best_b + weight[j], arg_b
    return crit.max(), cons.max(), ef, total_a, back_a, total_b, back_b
