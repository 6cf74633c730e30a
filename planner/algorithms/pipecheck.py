"""Whether a pipeline split can exist at all, whatever the memory (`check_units`): pipedp's
first check, and pipeilp's (its E707 with the cause), kept apart from pipedp's search."""

from __future__ import annotations

from ..errors import Diagnostic, InfeasibleError
from ..model import Pipeline, Problem
from ..pipeline.units import units


def check_units(problem: Problem, pipeline: Pipeline) -> None:
    """E707 with its cause where no pipeline split can exist whatever the memory: a unit
    pinned to two devices, a unit no device can run, more stages per device than units
    under `interleaved` (`check` reports the first and the last in a spec, with codes of
    its own; a problem built in Python and handed to an algorithm may still have them)."""
    u = units(problem)
    devices = problem.cluster.devices
    ops = problem.graph.ops
    for members, allowed in zip(u.members, u.allowed, strict=True):
        if allowed:
            continue
        pinned = {i: problem.pins[i] for i in members if i in problem.pins}
        if len(set(pinned.values())) > 1:
            raise InfeasibleError(Diagnostic(
                "E707", f"no pipeline split of plan `{problem.name}` exists: its pins split "
                "one pipeline unit between devices, "
                + ", ".join(f"`{ops[i].name}` to `{devices[d].name}`" for i, d in pinned.items())
                + " (a forward op, its `backward_of` ops and their colocation groups run on "
                "one stage)", None,
                ("pin them to one device, or plan `objective makespan` (`planner check` "
                 "reports it too)",)))
        raise InfeasibleError(Diagnostic(
            "E707", f"no pipeline split of plan `{problem.name}` exists: no device runs every "
            f"op of the pipeline unit of `{ops[members[0]].name}` (its forward and backward "
            "ops, with their colocation groups)"
            + (f" on its pin `{devices[next(iter(pinned.values()))].name}`" if pinned else ""),
            None, ("give its ops a `time` that applies on one device for all of them",)))
    per = pipeline.per_device
    if u.count < per:
        raise InfeasibleError(Diagnostic(
            "E707", f"no pipeline split of plan `{problem.name}` exists: `stages_per_device "
            f"{per}` asks each device for more stages than the graph has pipeline units "
            f"({u.count})", None,
            (f"set `stages_per_device` to {u.count} or less, or use `schedule 1f1b` "
             "(`planner check` reports it too)" if u.count else
             "the graph has no ops (`planner check` reports it too)",)))
