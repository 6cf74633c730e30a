"""The assignment (load) bound, `load_s`: every plan puts each job on one allowed device.

Treat each colocation group as one job `J` with
time `c_J(d)` = the sum of its members' times on `d ∈ A(J)`; every plan puts each job
on one allowed device, so its makespan is at least its busiest device's load, which is
at least the optimum `T*` of the fractional relaxation
`min T  s.t.  sum_d x_Jd = 1,  sum_J c_J(d) x_Jd <= T,  x >= 0`.
By LP duality, for every weight vector `y >= 0` with `sum_d y_d = 1`,
`sum_J min_{d ∈ A(J)} y_d c_J(d) <= T*` (multiply each load constraint by `y_d`, sum,
and bound each job's share by its cheapest device). We evaluate a few `y` (uniform,
which gives at least `work_s`; proportional to each device's throughput, which is exact
for related devices; one-hot, which gives the load of ops that can run only there) and
improve on them with Kelley's cutting planes (`_best_weights`), which in practice reach
the LP optimum. The bound is the exact value of the best `y` found, so it is valid even
where the search stops short. The relaxation may split a job across devices, so
`load_s` is also at least every job's time on its fastest allowed device (a colocation
group runs whole on one device).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..cost import INF, costs
from ..model import Problem


def allowed_mask(allowed: Sequence[tuple[int, ...]], m: int) -> np.ndarray:
    """`ok[i, d]`: whether op `i` may run on device `d` (`allowed[i]` holds `d`); one row
    per distinct allowed set, then indexed (an assignment per op costs 0.3 s at 100k)."""
    distinct: dict[tuple[int, ...], int] = {}
    which = [distinct.setdefault(a, len(distinct)) for a in allowed]
    table = np.zeros((len(distinct), m), dtype=bool)
    for a, k in distinct.items():
        table[k, list(a)] = True
    return table[np.array(which, dtype=np.int64)].reshape(len(allowed), m)


def load_bound(problem: Problem, allowed: list[tuple[int, ...]]) -> float:
    """The assignment bound: the best LP-dual value found, or a job whole on one device."""
    g = problem.graph
    n, m = len(g.ops), len(problem.cluster.devices)
    comp = np.array(costs(problem).compute, dtype=float).reshape(n, m)
    ok = allowed_mask(allowed, m)
    cost = np.where(ok, comp, 0.0)
    # one job per colocation group whose members share an allowed device
    job = np.arange(n)
    for group in g.colocations:
        a = allowed[group[0]]
        if a and all(allowed[i] == a for i in group):
            job[list(group)] = group[0]
    if g.colocations:
        ids, job = np.unique(job, return_inverse=True)
        summed = np.zeros((len(ids), m))
        np.add.at(summed, job, cost)
        # members of a merged group share one allowed set, so any member's row will do
        member = np.zeros(len(ids), dtype=int)
        member[job] = np.arange(n)
        cost, ok = summed, ok[member]
    keep = ok.any(axis=1) & (cost.max(axis=1) > 0)
    cost, ok = cost[keep], ok[keep]
    if not len(cost):
        return 0.0
    whole = float(np.where(ok, cost, INF).min(axis=1).max())
    y = _best_weights(cost, ok)
    # the bound is the exact dual value of y on every job: valid whatever y is
    return max(_dual_value(cost, ok, y)[0], whole)


def _dual_value(cost: np.ndarray, ok: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """`sum_J min_{d in A(J)} y_d c_J(d)` and its supergradient (load of each device)."""
    scaled = np.where(ok, cost * y, INF)
    arg = scaled.argmin(axis=1)
    rows = np.arange(len(arg))
    grad = np.bincount(arg, weights=cost[rows, arg], minlength=cost.shape[1])
    return float(scaled[rows, arg].sum()), grad


#: Kelley's cutting-plane steps at most (`_best_weights`)
_KELLEY_STEPS = 60


def _best_weights(cost: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Weights `y` on the simplex with a high dual value (Kelley's cutting planes).

    The dual value is `f(y) = min over assignments a of g_a . y` (g_a: the device loads of
    assignment a), concave and polyhedral. Each evaluation at `y_k` yields the cut
    `f <= g_k . y`; the master problem `max_y min_k g_k . y` (a small matrix game, solved
    by `_game`) proposes the next `y` and bounds the optimum from above, so the loop stops
    when the gap closes. Jobs whose cost rows are proportional and share allowed devices
    add up to one job, which usually leaves a handful of rows.
    """
    m = cost.shape[1]
    scale = cost.max(axis=1)
    shape = np.where(ok, np.round(cost / scale[:, None], 12), -1.0)
    order = np.lexsort(shape.T[::-1])
    ordered = shape[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    rows = ordered[new]
    weight = np.bincount(inverse, weights=scale, minlength=len(rows))
    c_ok = rows >= 0
    c_cost = np.where(c_ok, rows, 0.0) * weight[:, None]

    totals = c_cost.sum(axis=0)
    starts: list[np.ndarray] = [np.full(m, 1.0 / m), *np.eye(m)]
    if (totals > 0).all() and np.isfinite(totals).all():
        with np.errstate(over="ignore"):  # totals of a few 1e-320 s overflow: skipped
            thr = 1.0 / totals  # exact for related devices (times proportional to 1/speed)
        if np.isfinite(thr.sum()) and thr.sum() > 0:  # not with times at a float's limits
            starts.append(thr / thr.sum())
    cuts: list[np.ndarray] = []
    best, best_y = -1.0, starts[0]
    for y in starts:
        v, grad = _dual_value(c_cost, c_ok, y)
        cuts.append(grad)
        if v > best:
            best, best_y = v, y
    for _ in range(_KELLEY_STEPS):
        found = _game(np.array(cuts))
        if found is None:
            break
        upper, y = found
        v, grad = _dual_value(c_cost, c_ok, y)
        if v > best:
            best, best_y = v, y
        if upper - best <= 1e-9 * upper:
            break
        cuts.append(grad)
    return best_y


def _game(payoff: np.ndarray) -> tuple[float, np.ndarray] | None:
    """`max over y in the simplex of min_k (payoff @ y)_k` and its `y`, or None.

    With a nonnegative payoff whose rows are not all zero, the value is `1 / max sum(w)`
    over `payoff.T @ w <= 1, w >= 0` and `y` is that LP's dual solution, normalised. A
    dense simplex with Bland's rule (sizes are tiny); None if it fails numerically.
    """
    top = float(payoff.max())
    if top <= 0:
        return None
    a = payoff.T / top  # m x K, entries in [0, 1]
    m, k = a.shape
    tab = np.zeros((m + 1, k + m + 1))
    tab[:m, :k] = a
    tab[:m, k:k + m] = np.eye(m)
    tab[:m, -1] = 1.0
    tab[m, :k] = -1.0
    basis = list(range(k, k + m))
    eps = 1e-12
    for _ in range(50 * (k + m)):
        entering = next((j for j in range(k + m) if tab[m, j] < -eps), None)
        if entering is None:
            u = tab[m, k:k + m]
            total = float(tab[m, -1])
            if total <= 0 or u.sum() <= 0:
                return None
            y = np.maximum(u, 0.0)
            return top / total, y / y.sum()
        col = tab[:m, entering]
        ratios = [(tab[i, -1] / col[i], basis[i], i) for i in range(m) if col[i] > eps]
        if not ratios:
            return None
        row = min(ratios)[2]
        tab[row] /= tab[row, entering]
        for i in range(m + 1):
            if i != row and tab[i, entering] != 0.0:
                tab[i] -= tab[i, entering] * tab[row]
        basis[row] = entering
    return None
