"""The rules a plan is checked against before and after its run: placement, pins,
colocation, the order's entries, a deadlocked order, and intended start times (overlap and
precedence). Each appends `Violation`s to the list of its kind; the semantics are the
package docstring's."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..cost import columns, copies_array, costs, transfer_seconds_array
from ..errors import some
from ..model import Problem
from ..plan import Plan
from ..units import format_seconds
from .results import Violation

if TYPE_CHECKING:
    from .run import Run

__all__ = [
    "REL_TOL", "check_colocations", "check_pins", "check_start_times", "deadlock",
    "normalize_order", "valid_placement",
]

REL_TOL = 1e-9  # relative slack when checking a plan's own (rounded) start times


def valid_placement(problem: Problem, plan: Plan, out: list[Violation]) -> list[int]:
    """The plan's placement with every missing or out-of-range device as -1."""
    ops = problem.graph.ops
    m = len(problem.cluster.devices)
    given = plan.placement
    if len(given) == len(ops):  # the common case, without a look at each op
        try:
            place = list(map(operator.index, given))
        except TypeError:
            pass
        else:
            if not place or (min(place) >= 0 and max(place) < m):
                return place
    place = [-1] * len(ops)
    for i, op in enumerate(ops):
        raw = given[i] if i < len(given) else None
        try:
            d = operator.index(raw)  # type: ignore[arg-type]
        except TypeError:
            d = -1
        if 0 <= d < m:
            place[i] = d
        elif raw is None or d == -1:
            out.append(Violation("unplaced", f"op `{op.name}` is not placed on any device",
                                 (i,), ()))
        else:
            out.append(Violation(
                "unplaced", f"op `{op.name}` is placed on device {d}, which does not exist "
                f"(the cluster has {m} devices)", (i,), ()))
    if len(given) > len(ops):
        out.append(Violation(
            "unplaced", f"the placement has {len(given)} entries but the graph has "
            f"{len(ops)} ops", (), ()))
    return place


def check_pins(problem: Problem, place: list[int], out: list[Violation]) -> None:
    ops, devs = problem.graph.ops, problem.cluster.devices
    for i, d in sorted(problem.pins.items()):
        if place[i] >= 0 and place[i] != d:  # unplaced ops are reported as such
            out.append(Violation(
                "pin", f"op `{ops[i].name}` is pinned to `{devs[d].name}` but placed on "
                f"`{devs[place[i]].name}`", (i,), (d, place[i])))


def check_colocations(problem: Problem, place: list[int], out: list[Violation]) -> None:
    ops, devs = problem.graph.ops, problem.cluster.devices
    for group in problem.graph.colocations:
        used = sorted({place[i] for i in group if place[i] >= 0})
        if len(used) > 1:
            names = some([ops[i].name for i in group], 4)
            where = ", ".join(f"`{devs[d].name}`" for d in used)
            out.append(Violation("colocation", f"colocated ops {names} are split across "
                                 f"{where}", tuple(group), tuple(used)))


def normalize_order(problem: Problem, order: Sequence[Sequence[int]], place: list[int],
                     out: list[Violation]) -> list[list[int]]:
    """Per-device sequences that hold exactly the ops placed there.

    Entries that contradict the placement (wrong device, repeated, unknown op or device)
    are dropped and reported; placed ops the order leaves out run last, in topological
    order.
    """
    ops, devs = problem.graph.ops, problem.cluster.devices
    n, m = len(ops), len(devs)
    whole = _whole_order(order, place, n, m)
    if whole is not None:
        return whole
    seqs: list[list[int]] = [[] for _ in range(m)]
    listed = [False] * n
    for d, seq in enumerate(order):
        for entry in seq:
            try:
                i = operator.index(entry)
            except TypeError:
                i = -1
            if not 0 <= i < n:
                out.append(Violation("order", f"the order lists op {entry!r}, which does not "
                                     "exist", (), (d,) if d < m else ()))
            elif d >= m:
                out.append(Violation("order", f"the order lists `{ops[i].name}` on device "
                                     f"{d}, which does not exist", (i,), ()))
            elif place[i] < 0:
                continue  # reported as unplaced
            elif place[i] != d:
                out.append(Violation(
                    "order", f"the order lists `{ops[i].name}` on `{devs[d].name}` but it "
                    f"is placed on `{devs[place[i]].name}`", (i,), (d, place[i])))
            elif listed[i]:
                out.append(Violation("order", f"the order lists `{ops[i].name}` twice on "
                                     f"`{devs[d].name}`", (i,), (d,)))
            else:
                listed[i] = True
                seqs[d].append(i)
    for i in problem.graph.topological_order:
        d = place[i]
        if d >= 0 and not listed[i]:
            out.append(Violation("order", f"the order of `{devs[d].name}` leaves out "
                                 f"`{ops[i].name}` (run last)", (i,), (d,)))
            seqs[d].append(i)
    return seqs


def _whole_order(order: Sequence[Sequence[int]], place: list[int], n: int, m: int
                 ) -> list[list[int]] | None:
    """The order as lists when it lists every placed op once, on its device (an
    algorithm's order always does), checked with numpy; else None."""
    try:  # anything but sequences of indices goes entry by entry
        if len(order) > m and any(len(seq) for seq in order[m:]):
            return None
        seqs = [list(map(operator.index, seq)) for seq in order[:m]]
    except TypeError:
        return None
    seqs += [[] for _ in range(m - len(seqs))]
    pl = np.array(place, dtype=np.int64)
    try:
        flat = np.fromiter(itertools.chain.from_iterable(seqs), np.int64, sum(map(len, seqs)))
    except OverflowError:  # an index beyond int64: not an op
        return None
    if len(flat) != int((pl >= 0).sum()) or (len(flat) and not 0 <= flat.min() <= flat.max() < n):
        return None
    device = np.repeat(np.arange(m, dtype=np.int64), [len(seq) for seq in seqs])
    if not (pl[flat] == device).all() or (len(flat) and np.bincount(flat).max() > 1):
        return None
    ops = flat.tolist()  # new ints side by side (see `GraphTables`)
    at = np.cumsum([0] + [len(seq) for seq in seqs]).tolist()
    return [ops[a:b] for a, b in itertools.pairwise(at)]


def deadlock(problem: Problem, run: Run) -> Violation:
    """The `order` violation naming each device's stuck op and the inputs it waits for."""
    ops, devs = problem.graph.ops, problem.cluster.devices
    edges, pred = problem.graph.edges, problem.graph.predecessors
    heads: list[int] = []
    parts: list[str] = []
    for d, i in run.stuck:
        heads.append(i)
        waits = sorted({edges[k].src for k in pred[i] if not run.done[edges[k].src]})
        parts.append(f"`{ops[i].name}` on `{devs[d].name}` waits for "
                     + some([ops[w].name for w in waits], 3))
    shown = "; ".join(parts[:3]) + (f"; and {len(parts) - 3} more" if len(parts) > 3 else "")
    return Violation("order", f"the order contradicts precedence and deadlocks: {shown}",
                     tuple(heads), tuple(d for d, _ in run.stuck))


def check_start_times(problem: Problem, start_s: Sequence[float], place: list[int],
                       dur: list[float], found: dict[str, list[Violation]]) -> None:
    """Check a plan's intended start times for overlap and precedence (see module doc).

    Vectorised over ops and edges (one sort for the overlaps, one for the largest copy per
    producer and device); only the violations are visited one by one, in the order of
    devices and start times (overlap) and of edges (precedence).
    """
    g, devs = problem.graph, problem.cluster.devices
    ops = g.ops
    n, m = len(ops), len(devs)
    if len(start_s) != n:
        found["order"].append(Violation("order", f"the plan gives {len(start_s)} start "
                                        f"times for {n} ops", (), ()))
        return
    c = costs(problem)
    start = np.array(start_s, dtype=np.float64)
    end = start + np.array(dur, dtype=np.float64)
    pl = np.array(place, dtype=np.int64)
    with np.errstate(invalid="ignore"):  # inf - inf where an op never ends: no violation
        # per device, by (start, end, op): a zero-time op first
        on = np.flatnonzero((pl >= 0) & np.isfinite(start))
        seq = on[np.lexsort((on, end[on], start[on], pl[on]))]
        a, b = seq[:-1], seq[1:]
        limit = end[a]  # b meant to start early: before a ends, beyond the tolerance
        early = (pl[a] == pl[b]) & (start[b] < limit - REL_TOL * np.maximum(1.0, abs(limit)))
        for k in np.flatnonzero(early).tolist():
            i, j = int(a[k]), int(b[k])
            found["overlap"].append(Violation(
                "overlap", f"ops `{ops[i].name}` and `{ops[j].name}` overlap on "
                f"`{devs[place[i]].name}`: `{ops[j].name}` is meant to start at "
                f"{format_seconds(start_s[j])}, before `{ops[i].name}` ends at "
                f"{format_seconds(float(end[i]))}", (i, j), (place[i],)))

        cols = columns(g)
        src, dst = cols.src, cols.dst
        d_src, d_dst = pl[src], pl[dst]
        # the tensor to a device carries the largest bytes of the edges to it (an
        # unplaced consumer's device, -1, is a destination of its own)
        _, slot, top = copies_array(src, d_dst + 1, cols.nbytes, m + 1)
        largest = top[slot]
        ends = end[src]
        check = (d_src >= 0) & (d_dst >= 0) & np.isfinite(ends)
        local = d_src == d_dst
        ds, dd = np.maximum(d_src, 0), np.maximum(d_dst, 0)
        link = np.array(c.latency, dtype=np.float64).reshape(m, m)[ds, dd] if m else ends
        inv = np.array(c.inv_bandwidth, dtype=np.float64).reshape(m, m)[ds, dd] if m else ends
        # same device: the producer's end
        arrive = np.where(local, ends + 0.0, ends + transfer_seconds_array(link, inv, largest))
        early = check & np.isfinite(arrive) & (
            start[dst] < arrive - REL_TOL * np.maximum(1.0, abs(arrive)))
    for k in np.flatnonzero(early).tolist():
        i, j = int(src[k]), int(dst[k])
        di, dj = place[i], place[j]
        what = "ends" if di == dj else "can arrive"
        found["precedence"].append(Violation(
            "precedence", f"op `{ops[j].name}` is meant to start at "
            f"{format_seconds(start_s[j])}, before its input from `{ops[i].name}` "
            f"{what} at {format_seconds(float(arrive[k]))}", (i, j),
            (di,) if di == dj else (di, dj)))
