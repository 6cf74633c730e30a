"""Semantic checks that need no solving: memory that cannot fit whatever the placement.

Lowering already rejects cycles, unknown names, pins to unknown devices and colocated ops
pinned apart. These checks add the memory facts of each plan (static memory model, the
most lenient figure an op can have: its params, output and temp, nothing received):
- an op, or a colocation group, larger than the largest device;
- a pinned op (or group) larger than its pinned device;
- the plan's total minimal memory larger than all devices together.
"""

from __future__ import annotations

from ..errors import Diagnostic, Span
from ..model import Problem
from ..units import format_bytes
from .lower import Locations


def group_footprints(problem: Problem) -> list[tuple[tuple[int, ...], int]]:
    """(members, minimal static bytes) for every colocation group and lone op.

    A group's minimal footprint is its members' params and outputs plus its largest temp.
    """
    g = problem.graph
    out: list[tuple[tuple[int, ...], int]] = []
    grouped = set()
    for members in g.colocations:
        grouped.update(members)
        ops = [g.ops[i] for i in members]
        total = sum(o.params_bytes + o.output_bytes for o in ops) + max(o.temp_bytes for o in ops)
        out.append((members, total))
    for i, o in enumerate(g.ops):
        if i not in grouped:
            out.append(((i,), o.params_bytes + o.output_bytes + o.temp_bytes))
    return out


def minimal_total_bytes(problem: Problem) -> int:
    """A lower bound on the plan's total static memory: all params and outputs + max temp."""
    ops = problem.graph.ops
    return sum(o.params_bytes + o.output_bytes for o in ops) + max(
        (o.temp_bytes for o in ops), default=0
    )


def memory_diagnostics(problem: Problem, loc: Locations | None = None) -> list[Diagnostic]:
    """Errors for memory that no placement of `problem` can satisfy."""
    g, c = problem.graph, problem.cluster
    devices = c.devices
    if not devices:
        return []
    where_plan = (loc.plans.get(problem.name) if loc else None) or None
    largest = max(range(len(devices)), key=lambda d: (devices[d].memory_bytes, -d))
    cap = devices[largest].memory_bytes
    diags: list[Diagnostic] = []

    def op_span(i: int) -> Span | None:
        return (loc.ops.get((g.name, g.ops[i].name)) if loc else None) or where_plan

    for members, need in group_footprints(problem):
        what = (f"op `{g.ops[members[0]].name}`" if len(members) == 1 else
                f"colocation group of `{g.ops[members[0]].name}` ({len(members)} ops)")
        pinned = {problem.pins[i] for i in members if i in problem.pins}
        if need > cap:
            diags.append(Diagnostic(
                "E301", f"{what} needs {format_bytes(need)} ({need} B) but the largest device, "
                f"`{devices[largest].name}`, has {format_bytes(cap)} ({cap} B) in plan "
                f"`{problem.name}`", op_span(members[0]),
                (("params + output + temp must fit on one device; shrink the op or add a "
                 "larger device"),)))
        elif len(pinned) == 1:
            d = next(iter(pinned))
            if need > devices[d].memory_bytes:
                diags.append(Diagnostic(
                    "E302", f"{what} is pinned to `{devices[d].name}` "
                    f"({format_bytes(devices[d].memory_bytes)}) but needs {format_bytes(need)}",
                    (loc.pins.get((problem.name, members[0])) if loc else None)
                    or op_span(members[0]),
                    ("pin it to a larger device, or remove the pin",)))
    total = minimal_total_bytes(problem)
    capacity = sum(d.memory_bytes for d in devices)
    if total > capacity:
        diags.append(Diagnostic(
            "E303", f"plan `{problem.name}` needs at least {format_bytes(total)} ({total} B) but "
            f"its {len(devices)} devices hold {format_bytes(capacity)} ({capacity} B) together",
            where_plan, ("add devices or memory, or shrink the graph",)))
    return diags
