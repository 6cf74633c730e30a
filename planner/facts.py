"""Placement facts: what every placement of a problem must respect, derived once.

`check`, the list schedulers, the exact models, the lower bounds and the infeasibility
proofs all read these facts (cached on the problem by `facts(problem)`), so they can no
longer disagree about which devices an op may use or what "cannot fit" means.

- **Pins** spread through colocation groups: a pin on one member pins the whole group. A
  group pinned to two devices has no device (lowering rejects it in specs; a problem built
  in Python may still have it).
- **Units**: each colocation group is one placement unit (all members on one device), every
  other op is a unit of its own; units are listed by their smallest op index.
- **Allowed devices** of a unit: the devices where every member's compute time is finite,
  narrowed to its pin. An op's allowed devices are its unit's.
- **Least memory** (`unit_bytes`, `pinned_bytes`, `least_total_bytes`): lower bounds on what
  a device (or all devices together) must hold, valid for the problem's *own* memory model:
  - `static`: a device holds the params and output of each of its ops and the largest temp
    among them, so a set of ops needs at least `sum(params + output) + max(temp)`;
  - `liveness`: params are resident throughout; an op holds its output and temp while it
    runs (a zero-time op too, at its instant), and a sink's output (no consumer, so never
    freed) is held from its start to the end. So a set of ops needs at least
    `sum(params) + max(max over its ops of (output + temp), sum of its sinks' outputs)`.
  Received copies are left out: they only add, so the figures stay lower bounds.
- **Proofs** (`proofs(problem)`): each a reason why *no* placement is valid, one code each:
  - E301 a unit needs more memory than any device it may use holds;
  - E302 the units pinned to one device need more than it holds together;
  - E303 the least total memory exceeds the devices' total capacity;
  - E304 a unit has no device (no device runs every member, its pin excluded them, or it is
    pinned to two devices);
  - E305 an edge must cross between two devices that no link joins in that direction (its
    ends may share no device, and no allowed pair of devices is linked);
  - E306 a unit needs more than any device it may use holds once the copies it must
    receive are counted: under `static`, a device holding unit `U` holds, for every unit
    `P` feeding it, either `P` itself (its params and outputs) or a copy of `P`'s tensor
    (at least the largest edge from `P` into `U`), so at least the smaller of the two,
    on top of `U`'s own least bytes; under `liveness`, when an op of `U` starts, its device
    holds `U`'s params, the op's output and temp (a zero-time op's too) and, per producer `P`
    outside `U` feeding the op, `P`'s params and output (same device) or the received copy,
    each alive until its consumers there are done, so at least the smaller;
  - E307 units that cannot share a device two by two (a device holding both would need
    more than it holds: under `static` with the copies they receive counted as for E306,
    under `liveness` their least bytes together, sinks' outputs never freed) must go to
    distinct devices, one each from those that hold it alone; no such assignment exists
    (Hall's condition, checked by a matching).
  A proof holds for every one-pass algorithm and contention model (a pipeline's: `stagefacts`);
  `check` reports them with locations, and an algorithm that finds no plan raises them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .cost import INF, costs
from .errors import Diagnostic, Span
from .model import Problem, derived
from .units import format_bytes

__all__ = ["Facts", "Proof", "facts", "proofs", "unit_name"]


@dataclass(frozen=True)
class Facts:
    """The placement facts of one problem (see the module docstring)."""

    #: per op: its device when pinned (directly or through its group), else -1
    pin: tuple[int, ...]
    #: placement units (colocation groups and lone ops), each sorted, by smallest member
    units: tuple[tuple[int, ...], ...]
    #: per op: the index of its unit in `units`
    unit_of: tuple[int, ...]
    #: per unit: the devices it may use (sorted); empty when it has none
    unit_allowed: tuple[tuple[int, ...], ...]
    #: per op: its unit's allowed devices
    allowed: tuple[tuple[int, ...], ...]
    #: per unit: pinned to two or more devices
    pin_conflict: tuple[bool, ...]
    #: per op: its least compute time over its allowed devices (0.0 when it has none)
    fastest: tuple[float, ...]
    #: per unit: the least bytes a device holding it must hold (under the memory model)
    unit_bytes: tuple[int, ...]
    #: the least bytes all devices together must hold (under the memory model)
    least_total_bytes: int

    def least_bytes(self, problem: Problem, ops: Iterable[int]) -> int:
        """The least bytes one device must hold when it holds every op of `ops`."""
        return _least_bytes(problem, self, list(ops))


def facts(problem: Problem) -> Facts:
    """The placement facts of `problem`, derived on first use and cached on the problem."""
    return derived(problem, "_facts", lambda: _derive(problem))


def _derive(problem: Problem) -> Facts:
    g = problem.graph
    n = len(g.ops)
    comp = costs(problem).compute
    everywhere = tuple(range(len(problem.cluster.devices)))
    pin, units, unit_of, unit_allowed, conflict = _placement_units(problem, comp, everywhere)
    allowed = tuple(unit_allowed[unit_of[i]] for i in range(n))
    fastest = tuple(
        min(comp[i], default=0.0) if a is everywhere
        else min((comp[i][d] for d in a), default=0.0)
        for i, a in enumerate(allowed))
    partial = Facts(tuple(pin), tuple(units), tuple(unit_of), tuple(unit_allowed), allowed,
                    tuple(conflict), fastest, (), 0)
    unit_bytes, total = _unit_bytes(problem, partial)
    return Facts(tuple(pin), tuple(units), tuple(unit_of), tuple(unit_allowed), allowed,
                 tuple(conflict), fastest, unit_bytes, total)


def _placement_units(problem: Problem, comp: Sequence[Sequence[float]],
                     everywhere: tuple[int, ...]
                     ) -> tuple[list[int], list[tuple[int, ...]], list[int],
                                list[tuple[int, ...]], list[bool]]:
    """Per op its pin and unit; per unit its ops, the devices it may run on (those where
    every member runs and that its pins allow) and whether its pins conflict."""
    g = problem.graph
    n, m = len(g.ops), len(everywhere)
    group_of = g.colocation_of
    pins = problem.pins
    unit_of = [-1] * n
    units: list[tuple[int, ...]] = []
    pin = [-1] * n
    unit_allowed: list[tuple[int, ...]] = []
    conflict: list[bool] = []
    devs: tuple[int, ...]
    for i in range(n):
        if unit_of[i] >= 0:
            continue
        if group_of[i] >= 0:
            members = tuple(sorted(g.colocations[group_of[i]]))
            devs, conflicts = _group_devices(members, comp, pins, pin, everywhere)
            for j in members:
                unit_of[j] = len(units)
            units.append(members)
            unit_allowed.append(devs)
            conflict.append(conflicts)
            continue
        # a lone op, the common unit: `_group_devices` without the loops
        unit_of[i] = len(units)
        units.append((i,))
        row = comp[i]
        devs = everywhere if INF not in row else tuple(d for d in range(m) if row[d] < INF)
        d = pins.get(i, -1) if pins else -1
        if d >= 0:
            devs = (d,) if d in devs else ()
            pin[i] = d
        unit_allowed.append(devs)
        conflict.append(False)
    return pin, units, unit_of, unit_allowed, conflict


def _group_devices(members: tuple[int, ...], comp: Sequence[Sequence[float]],
                   pins: Mapping[int, int], pin: list[int], everywhere: tuple[int, ...]
                   ) -> tuple[tuple[int, ...], bool]:
    """A colocation group's devices and whether its pins conflict; records its pin in
    `pin` for each member."""
    rows = [comp[j] for j in members]
    if all(INF not in row for row in rows):  # the common case, fast
        devs = everywhere
    else:
        devs = tuple(d for d in everywhere if all(row[d] < INF for row in rows))
    pinned = {pins[j] for j in members if j in pins} if pins else set()
    if len(pinned) > 1:
        return (), True
    if pinned:
        (d,) = pinned
        devs = (d,) if d in devs else ()
        for j in members:
            pin[j] = d
    return devs, False


def _unit_bytes(problem: Problem, partial: Facts) -> tuple[tuple[int, ...], int]:
    """Each unit's least bytes on a device, and the least bytes of all ops on one."""
    g = problem.graph
    n = len(g.ops)
    if problem.memory_model == "liveness":
        lone = [_op_bytes(problem, partial, i) for i in range(n)]
        total = _least_bytes(problem, partial, range(n))
    else:  # `_op_bytes` of each op and `_least_bytes` of all in one pass over the ops
        lone = []
        kept = top = 0
        for o in g.ops:
            held, temp = o.params_bytes + o.output_bytes, o.temp_bytes
            lone.append(held + temp)
            kept += held
            if temp > top:
                top = temp
        total = kept + top
    unit_bytes = tuple(_least_bytes(problem, partial, members) if len(members) > 1
                       else lone[members[0]] for members in partial.units)
    return unit_bytes, total


def _op_bytes(problem: Problem, f: Facts, i: int) -> int:
    """`_least_bytes` of one op (the common unit), without the loop."""
    op = problem.graph.ops[i]
    if problem.memory_model == "liveness":
        held = op.output_bytes + op.temp_bytes
        sink = op.output_bytes if not problem.graph.successors[i] else 0
        return op.params_bytes + max(held, sink)
    return op.params_bytes + op.output_bytes + op.temp_bytes


def _least_bytes(problem: Problem, f: Facts, ops: Iterable[int]) -> int:
    """Least bytes one device (or all together) holding `ops` must hold (module docstring)."""
    all_ops = problem.graph.ops
    succ = problem.graph.successors
    if problem.memory_model == "liveness":
        params = held = sinks = 0
        for i in ops:
            op = all_ops[i]
            params += op.params_bytes
            held = max(held, op.output_bytes + op.temp_bytes)
            if not succ[i]:
                sinks += op.output_bytes
        return params + max(held, sinks)
    kept = temp = 0
    for i in ops:
        op = all_ops[i]
        kept += op.params_bytes + op.output_bytes
        temp = max(temp, op.temp_bytes)
    return kept + temp


# ---- proofs that no placement is valid -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Proof:
    """A reason why no placement is valid: a diagnostic without a location, plus the ops
    it is about (`check` points at the first) and the device, if one is involved."""

    code: str
    message: str
    hints: tuple[str, ...]
    ops: tuple[int, ...]
    device: int = -1

    def diagnostic(self, span: Span | None = None) -> Diagnostic:
        """This proof as a `Diagnostic` at `span`."""
        return Diagnostic(self.code, self.message, span, self.hints)


def unit_name(problem: Problem, members: Sequence[int]) -> str:
    """`op `x`` or `the colocation group of `x`, `y` and 3 more (5 ops)``."""
    names = [f"`{problem.graph.ops[i].name}`" for i in members]
    if len(names) == 1:
        return f"op {names[0]}"
    if len(names) <= 3:
        shown = ", ".join(names[:-1]) + f" and {names[-1]}"
    else:
        shown = f"{names[0]}, {names[1]} and {len(names) - 2} more"
    return f"the colocation group of {shown} ({len(names)} ops)"


def _exact(nbytes: int) -> str:
    """`2.00 GiB (2147483648 B)`: rounded for reading, exact for close calls; `4 B` alone
    when the rounded figure is already the exact one (not `4 B (4 B)`)."""
    shown = format_bytes(nbytes)
    return shown if shown == f"{nbytes} B" else f"{shown} ({nbytes} B)"


def _model_hint(problem: Problem) -> str:
    if problem.memory_model == "liveness":
        return ("memory model `liveness`: params count throughout, plus the largest output + "
                "temp of an op (or the outputs of its sinks, never freed)")
    return ("memory model `static`: params and outputs count once, plus the largest temp; "
            "with `memory liveness` buffers are freed after use")


def proofs(problem: Problem) -> list[Proof]:
    """Every proof that no placement of `problem` is valid (empty when none is found)."""
    return list(derived(problem, "_proofs", lambda: _proofs(problem)))


def _proofs(problem: Problem) -> tuple[Proof, ...]:
    f = facts(problem)
    devs = problem.cluster.devices
    if not devs:
        return ()
    out: list[Proof] = []
    out.extend(_no_device(problem, f))
    out.extend(_too_big(problem, f))
    out.extend(_pinned_too_big(problem, f))
    total = f.least_total_bytes
    cap = sum(d.memory_bytes for d in devs)
    if total > cap:
        out.append(Proof(
            "E303", f"plan `{problem.name}` needs at least {_exact(total)} but its "
            f"{len(devs)} device(s) hold {_exact(cap)} together "
            f"(short by {format_bytes(total - cap)})",
            (_model_hint(problem), "add devices or memory, or shrink the ops"), ()))
    out.extend(_unlinked(problem, f))
    if not out and problem.memory_model == "static":
        out.extend(_with_copies(problem, f))
    elif not out:
        out.extend(_live_copies(problem, f))
    return tuple(out)


def _no_device(problem: Problem, f: Facts) -> list[Proof]:
    out: list[Proof] = []
    devs = problem.cluster.devices
    for u, members in enumerate(f.units):
        if f.unit_allowed[u]:
            continue
        who = unit_name(problem, members)
        if f.pin_conflict[u]:
            pins = sorted({devs[problem.pins[i]].name for i in members if i in problem.pins})
            msg, hint = (f"{who} is pinned to several devices ({', '.join(pins)})",
                         "colocated ops share one device: pin them to one")
        else:
            pinned = f.pin[members[0]]
            where = f" its pin `{devs[pinned].name}`" if pinned >= 0 else " any device"
            msg = f"{who} has no device: no op time applies on{where}"
            hint = ("give the op a `time` (or `time[kind]` for the device's kind), or `flops` "
                    "with devices that declare `flops`")
        out.append(Proof("E304", msg, (hint,), members))
    return out


def _too_big(problem: Problem, f: Facts) -> list[Proof]:
    out: list[Proof] = []
    devs = problem.cluster.devices
    largest: dict[tuple[int, ...], int] = {}  # the largest device of each allowed set
    for u, members in enumerate(f.units):
        allowed = f.unit_allowed[u]
        if not allowed or f.pin[members[0]] >= 0:
            continue  # no device: E304; pinned: E302 counts it with its device's other pins
        need = f.unit_bytes[u]
        big = largest.get(allowed, -1)
        if big < 0:
            big = largest[allowed] = max(allowed, key=lambda d: (devs[d].memory_bytes, -d))
        if need > devs[big].memory_bytes:
            where = ("the largest device" if len(allowed) == len(devs)
                     else "the largest device it can run on")
            out.append(Proof(
                "E301", f"{unit_name(problem, members)} needs at least {_exact(need)} but "
                f"{where}, `{devs[big].name}`, holds {_exact(devs[big].memory_bytes)}",
                (_model_hint(problem),
                 *(("colocated ops are placed as one unit on one device",)
                   if len(members) > 1 else ()),
                 "shrink the op or add a larger device"), members, big))
    return out


def _pinned_too_big(problem: Problem, f: Facts) -> list[Proof]:
    out: list[Proof] = []
    devs = problem.cluster.devices
    per_dev: dict[int, list[int]] = {}
    for i, d in enumerate(f.pin):
        if d >= 0 and f.allowed[i]:
            per_dev.setdefault(d, []).append(i)
    for d, ops in sorted(per_dev.items()):
        need = f.least_bytes(problem, ops)
        if need > devs[d].memory_bytes:
            names = ", ".join(f"`{problem.graph.ops[i].name}`" for i in ops[:3])
            more = f" and {len(ops) - 3} more" if len(ops) > 3 else ""
            out.append(Proof(
                "E302", f"the {len(ops)} op(s) pinned to `{devs[d].name}` ({names}{more}) need at "
                f"least {_exact(need)} together but it holds {_exact(devs[d].memory_bytes)}",
                (_model_hint(problem), "a pin on one op of a colocation group pins the whole group",
                 "pin fewer ops there, or to a larger device"), tuple(ops), d))
    return out


# complex: the E305 proof: a shortcut when no two allowed sets are disjoint, per-edge filters
# cheapest first (shared set, one unit, overlap, any link, seen), then one message per pair
def _unlinked(problem: Problem, f: Facts) -> list[Proof]:
    """E305: edges whose ends share no device and no allowed pair of devices is linked."""
    out: list[Proof] = []
    c = costs(problem)
    seen: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
    g = problem.graph
    devs = problem.cluster.devices
    allowed, unit_of = f.allowed, f.unit_of
    # an edge needs a link only between disjoint allowed sets: when no two of the few
    # distinct sets (ops free to use every device share one) are disjoint, no edge can
    distinct = list({id(a): a for a in allowed}.values())
    if len(distinct) <= 64 and not any(
            a and b and set(a).isdisjoint(b) for a, b in itertools.combinations(distinct, 2)):
        return out
    for e in g.edges:
        a, b = allowed[e.src], allowed[e.dst]
        # `a is b`: one shared set (every op free to use every device shares one), so the
        # ends share a device; no set built per edge for the common case
        if not a or not b or a is b or unit_of[e.src] == unit_of[e.dst] \
                or not set(a).isdisjoint(b):
            continue
        if any(c.latency[x][y] < INF for x in a for y in b):
            continue
        if (a, b) in seen:
            continue
        seen.add((a, b))
        shown_a = ", ".join(f"`{devs[x].name}`" for x in a[:3]) + (" ..." if len(a) > 3 else "")
        shown_b = ", ".join(f"`{devs[x].name}`" for x in b[:3]) + (" ..." if len(b) > 3 else "")
        out.append(Proof(
            "E305", f"`{g.ops[e.src].name}` (on {shown_a}) feeds `{g.ops[e.dst].name}` (on "
            f"{shown_b}), but no link goes from the one to the other", (
                "add a link in that direction, or change the pins",), (e.dst, e.src)))
    return out


# ---- proofs that count received copies (E306, E307) ---------------------------------------

#: the units, largest first, among which E307 looks for units that cannot share a device
#: (two units each under half the smallest cap can always share it: the largest decide)
CONFLICT_CANDIDATES = 48


class _Copies:
    """Per unit, under `static`: its own least bytes, and per unit feeding it the bytes a
    device holding it must add for that feeder (module docstring, E306)."""

    def __init__(self, problem: Problem, f: Facts) -> None:
        g = problem.graph
        self.kept = [0] * len(f.units)
        self.temp = [0] * len(f.units)
        kept, temp, unit_of = self.kept, self.temp, f.unit_of
        for i, op in enumerate(g.ops):
            u = unit_of[i]
            kept[u] += op.params_bytes + op.output_bytes
            if op.temp_bytes > temp[u]:
                temp[u] = op.temp_bytes
        self.feeders: list[dict[int, int]] = [{} for _ in f.units]
        feeders = self.feeders
        for e in g.edges:
            a, b = unit_of[e.src], unit_of[e.dst]
            if a != b:
                feed = feeders[b]
                if e.bytes > feed.get(a, -1):
                    feed[a] = e.bytes

    def need(self, units: Sequence[int]) -> int:
        """Least bytes of one device holding every unit of `units` (counted once each)."""
        inside = set(units)
        copies: dict[int, int] = {}
        for u in inside:
            for a, b in self.feeders[u].items():
                if a not in inside:
                    copies[a] = max(copies.get(a, 0), b)
        own = sum(self.kept[u] for u in inside) + max(self.temp[u] for u in inside)
        return own + sum(min(b, self.kept[a]) for a, b in copies.items())


def _too_big_with_inputs(problem: Problem, f: Facts, need: Sequence[int], when: str,
                         held: str) -> list[Proof]:
    """E306 for each unit that needs (`need`: with the inputs it holds `when`) more than
    every device it may use holds; `held` says how an input from elsewhere is held."""
    devs = problem.cluster.devices
    out: list[Proof] = []
    for u, members in enumerate(f.units):
        allowed = f.unit_allowed[u]
        if allowed and all(need[u] > devs[d].memory_bytes for d in allowed):
            big = max(allowed, key=lambda d: (devs[d].memory_bytes, -d))
            out.append(Proof(
                "E306", f"{unit_name(problem, members)} needs at least {_exact(need[u])} with "
                f"the inputs it must hold{when} (each producer, or a copy of its tensor) but "
                f"the largest device it may use, `{devs[big].name}`, holds "
                f"{_exact(devs[big].memory_bytes)}",
                (f"{_model_hint(problem)}; {held}",
                 "shrink the op or its inputs, or add a larger device"), members, big))
    return out


def _with_copies(problem: Problem, f: Facts) -> list[Proof]:
    """E306 and E307 (module docstring), under `static`; [] when neither proves anything."""
    devs = problem.cluster.devices
    caps = [d.memory_bytes for d in devs]
    copies = _Copies(problem, f)
    kept, temp, feeders = copies.kept, copies.temp, copies.feeders
    need = [kept[u] + temp[u] + sum(min(b, kept[a]) for a, b in feeders[u].items())
            if feeders[u] else kept[u] + temp[u] for u in range(len(f.units))]
    fits = [tuple(d for d in f.unit_allowed[u] if need[u] <= caps[d])
            for u in range(len(f.units))]
    out = _too_big_with_inputs(problem, f, need, "",
                               "a tensor from another device is held as a copy")
    if out:
        return out
    clique = _crowded(copies.need, need, fits, caps)
    if clique:
        out.append(_crowded_proof(
            problem, f, clique, fits,
            (_model_hint(problem) + "; a tensor from another device is held as a copy",
             "two of them together, with the inputs they must hold, need more than any "
             "device they may both use holds; add devices or memory, or shrink the ops")))
    return out


def _live_need(problem: Problem, f: Facts, members: Sequence[int]) -> int:
    """Under `liveness`: the least bytes a device holding the unit of `members` holds when
    one of its ops runs (the most over them; the simulator's model, `planner.simulate`,
    which counts a zero-time op's buffers and inputs at its instant): every param of the
    unit, the op's output and temp, and each input from outside the unit, either its
    producer on the same device (its params, and its output, freed when its last consumer
    there ends) or a received copy (at least the edge's bytes, freed when its last
    consumer there ends), so at least the smaller."""
    g = problem.graph
    ops = g.ops
    inside = set(members)
    params = sum(ops[i].params_bytes for i in members)
    feeds: dict[int, dict[int, int]] = {i: {} for i in members}
    for i in members:  # its own input edges (every edge per unit was quadratic: 296 s)
        for e in (g.edges[k] for k in g.predecessors[i] if g.edges[k].src not in inside):
            feeds[i][e.src] = max(feeds[i].get(e.src, 0), e.bytes)
    best = params
    for i in members:
        inputs = sum(min(b, ops[p].params_bytes + ops[p].output_bytes)
                     for p, b in feeds[i].items())
        best = max(best, params + ops[i].output_bytes + ops[i].temp_bytes + inputs)
    return best


def _live_copies(problem: Problem, f: Facts) -> list[Proof]:
    """E306 and E307 under `liveness` (the module docstring, with `_live_need` for what a
    unit holds with its inputs, and `least_bytes` of two units together, copies left out,
    for E307); [] when neither proves anything."""
    devs = problem.cluster.devices
    caps = [d.memory_bytes for d in devs]
    need = [_live_need(problem, f, members) for members in f.units]
    held = "a tensor received from another device is held until its last consumer there ends"
    out = _too_big_with_inputs(problem, f, need, " when it starts", held)
    if out:
        return out
    own = list(f.unit_bytes)
    fits = [tuple(d for d in f.unit_allowed[u] if own[u] <= caps[d])
            for u in range(len(f.units))]

    def together(pair: tuple[int, int]) -> int:
        return f.least_bytes(problem, (*f.units[pair[0]], *f.units[pair[1]]))

    clique = _crowded(together, own, fits, caps)
    if clique:
        out.append(_crowded_proof(
            problem, f, clique, fits,
            (_model_hint(problem),
             "two of them together need more than any device they may both use holds; "
             "add devices or memory, or shrink the ops")))
    return out


def _crowded_proof(problem: Problem, f: Facts, clique: list[int],
                   fits: list[tuple[int, ...]], hints: tuple[str, ...]) -> Proof:
    """E307 for `clique`: units no two of which share a device, more than the devices
    that can take them (static memory and liveness say so with their own `hints`)."""
    names = ", ".join(unit_name(problem, f.units[u]) for u in clique[:4])
    more = f" and {len(clique) - 4} more" if len(clique) > 4 else ""
    room = sorted({d for u in clique for d in fits[u]})
    return Proof(
        "E307", f"{len(clique)} units ({names}{more}) cannot share a device two by two, "
        f"but only {len(room)} device(s) can take them", hints,
        tuple(i for u in clique for i in f.units[u][:1]))


def _crowded(together: Callable[[tuple[int, int]], int], need: list[int],
             fits: list[tuple[int, ...]], caps: list[int]) -> list[int]:
    """Units that pairwise cannot share a device (`together(pair)`: the least bytes of a
    device holding both) and that no assignment to distinct devices (each from its `fits`)
    takes, found greedily among the largest; [] when none is."""
    order = sorted(range(len(need)), key=lambda u: (-need[u], u))[:CONFLICT_CANDIDATES]
    cache: dict[tuple[int, int], bool] = {}

    def apart(u: int, v: int) -> bool:
        key = (min(u, v), max(u, v))
        if key not in cache:
            both = set(fits[u]) & set(fits[v])
            least = together(key) if both else 0
            cache[key] = all(least > caps[d] for d in both)
        return cache[key]

    for start in order:
        clique = [start]
        for v in order:
            if v != start and all(apart(v, k) for k in clique):
                clique.append(v)
        if len(clique) > 1 and not _distinct_devices([fits[u] for u in clique]):
            return clique
    return []


def _distinct_devices(choices: list[tuple[int, ...]]) -> bool:
    """Whether each entry can get its own device from its choices (a bipartite matching,
    by augmenting paths)."""
    holder: dict[int, int] = {}

    def place(k: int, seen: set[int]) -> bool:
        for d in choices[k]:
            if d not in seen:
                seen.add(d)
                if d not in holder or place(holder[d], seen):
                    holder[d] = k
                    return True
        return False

    return all(place(k, set()) for k in range(len(choices)))
