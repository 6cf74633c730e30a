"""Why no plan fits: the one diagnosis every algorithm raises with `InfeasibleError`.

`diagnose(problem)` returns the proofs that *no* placement fits under static accounting
(each a Diagnostic with names and figures):

- E701: the devices' total capacity is below the least total static memory of any
  placement (every op's params and output, plus the largest temp once);
- E702: an op, or a colocation group (placed as one unit), needs more than the largest
  device it may run on;
- E703: the ops pinned to a device need more than that device holds.

`stuck_error` is raised by a heuristic that ran out of room: it returns the proofs when there
are any, else an E704 saying which op found no device, with the same figures as hints and
the honest caveat that the instance may still be feasible.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import Diagnostic, InfeasibleError
from ..model import Problem
from ..units import format_bytes


def _units(problem: Problem) -> list[tuple[tuple[int, ...], int]]:
    """Placement units (colocation groups and lone ops) with their static bytes."""
    g = problem.graph
    ops = g.ops
    out: list[tuple[tuple[int, ...], int]] = []
    for members in g.colocations:
        po = sum(ops[i].params_bytes + ops[i].output_bytes for i in members)
        out.append((members, po + max(ops[i].temp_bytes for i in members)))
    group_of = g.colocation_of
    for i, op in enumerate(ops):
        if group_of[i] < 0:
            out.append(((i,), op.params_bytes + op.output_bytes + op.temp_bytes))
    return out


def unit_name(problem: Problem, members: Sequence[int]) -> str:
    """`op `x`` or `the colocation group of `x`, `y` and 3 more``."""
    names = [f"`{problem.graph.ops[i].name}`" for i in members]
    if len(names) == 1:
        return f"op {names[0]}"
    if len(names) <= 3:
        shown = ", ".join(names[:-1]) + f" and {names[-1]}"
    else:
        shown = f"{names[0]}, {names[1]} and {len(names) - 2} more"
    return f"the colocation group of {shown} ({len(names)} ops)"


def _pins(problem: Problem) -> dict[int, int]:
    """Op -> pinned device, with a pin on one group member pinning the whole group."""
    pins = dict(problem.pins)
    for members in problem.graph.colocations:
        pinned = sorted({pins[i] for i in members if i in pins})
        if pinned:
            for i in members:
                pins[i] = pinned[0]
    return pins


def facts(problem: Problem) -> tuple[str, ...]:
    """Two figures that explain most memory trouble: totals, and largest unit vs device."""
    ops = problem.graph.ops
    devs = problem.cluster.devices
    total = sum(o.params_bytes + o.output_bytes for o in ops) + max(
        (o.temp_bytes for o in ops), default=0)
    cap = sum(d.memory_bytes for d in devs)
    members, size = max(_units(problem), key=lambda u: (u[1], -u[0][0]), default=((), 0))
    big = max(range(len(devs)), key=lambda d: (devs[d].memory_bytes, -d))
    out = [f"total static memory {format_bytes(total)} vs total capacity "
           + f"{format_bytes(cap)} of {len(devs)} device(s)"]
    if members:
        out.append(f"largest unit: {unit_name(problem, members)} needs {format_bytes(size)}; "
                   f"largest device `{devs[big].name}` holds {format_bytes(devs[big].memory_bytes)}")
    return tuple(out)


def diagnose(problem: Problem) -> list[Diagnostic]:
    """Proofs that no placement fits the memory caps and pins (empty when none is found)."""
    ops = problem.graph.ops
    devs = problem.cluster.devices
    out: list[Diagnostic] = []
    total = sum(o.params_bytes + o.output_bytes for o in ops) + max(
        (o.temp_bytes for o in ops), default=0)
    cap = sum(d.memory_bytes for d in devs)
    if total > cap:
        out.append(Diagnostic(
            "E701",
            f"the ops need at least {format_bytes(total)} of static memory but the "
            f"{len(devs)} device(s) hold {format_bytes(cap)} together "
            f"(short by {format_bytes(total - cap)})",
            None,
            ("every op's params and output count once, plus the largest temp",
             "add devices or memory, or shrink the ops"),
        ))
    pins = _pins(problem)
    big = max(range(len(devs)), key=lambda d: (devs[d].memory_bytes, -d))
    too_big = [(size, members) for members, size in _units(problem)
               if members[0] not in pins and size > devs[big].memory_bytes]
    if too_big:
        size, members = max(too_big, key=lambda t: (t[0], -t[1][0]))
        more = f" ({len(too_big) - 1} other unit(s) too)" if len(too_big) > 1 else ""
        out.append(Diagnostic(
            "E702",
            f"{unit_name(problem, members)} needs {format_bytes(size)} but the largest device "
            f"`{devs[big].name}` holds {format_bytes(devs[big].memory_bytes)}{more}",
            None,
            ("colocated ops are placed as one unit on one device",) if len(members) > 1 else (),
        ))
    per_dev: dict[int, list[int]] = {}
    for i, d in sorted(pins.items()):
        per_dev.setdefault(d, []).append(i)
    for d, pinned_ops in sorted(per_dev.items()):
        need = sum(ops[i].params_bytes + ops[i].output_bytes for i in pinned_ops) + max(
            ops[i].temp_bytes for i in pinned_ops)
        if need > devs[d].memory_bytes:
            names = ", ".join(f"`{ops[i].name}`" for i in pinned_ops[:3])
            more = f" and {len(pinned_ops) - 3} more" if len(pinned_ops) > 3 else ""
            out.append(Diagnostic(
                "E703",
                f"the {len(pinned_ops)} op(s) pinned to `{devs[d].name}` ({names}{more}) need "
                f"{format_bytes(need)} but it holds {format_bytes(devs[d].memory_bytes)}",
                None,
                ("a pin on one op of a colocation group pins the whole group",),
            ))
    return out


def stuck_error(problem: Problem, algorithm: str, op: int,
                shortfall: Sequence[tuple[int, int]] = (), *,
                retried: bool = False) -> InfeasibleError:
    """The error a heuristic raises when op `op` found no device.

    `shortfall` lists `(device, bytes the device would need)` for the devices the op may
    use. Proofs from `diagnose` take precedence; otherwise the diagnostic names the op and
    the devices' figures, and says that another algorithm may still find a plan. `retried`:
    the heuristic also retried with memory budgets and m-TOPO's placement (a list
    scheduler's `memory_passes`), so m-TOPO is not suggested.
    """
    proofs = diagnose(problem)
    if proofs:
        return InfeasibleError(proofs)
    name = problem.graph.ops[op].name
    devs = problem.cluster.devices
    if shortfall:
        shown = "; ".join(
            f"`{devs[d].name}` would need {format_bytes(need)} of "
            f"{format_bytes(devs[d].memory_bytes)}, {format_bytes(need - devs[d].memory_bytes)} "
            "short" for d, need in shortfall[:4])
        if len(shortfall) > 4:
            shown += f"; {len(shortfall) - 4} more device(s) alike"
        message = f"`{algorithm}` ran out of memory: op `{name}` fits on no device ({shown})"
    else:
        message = (f"`{algorithm}` found no device for op `{name}`: its pin, its colocation "
                   "group and the devices that can run it leave none")
    return InfeasibleError(Diagnostic(
        "E704", message, None,
        (*facts(problem),
         ("it also retried with tighter memory budgets and m-TOPO's placement; the instance "
          "may still be feasible: try --algo single or an exact solver (--algo ilp)")
         if retried else
         "this heuristic fills devices greedily; the instance may still be feasible: "
         + "try --algo mtopo, --algo single or an exact solver (--algo ilp)"),
    ))
