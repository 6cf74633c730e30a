"""`single`: every op on the one fastest device that holds them all (pins excepted).

A baseline, not from a paper. Devices are tried by total compute time of the ops on them
(smaller first, ties by smaller index); pinned ops (and their colocation groups) stay on
their pins. The first device whose placement fits every device's memory wins (static
accounting, an upper bound of the liveness peak; under `memory liveness` a placement it
rejects is simulated, and kept when its liveness peaks fit); the order is dynamic dispatch
(`listsched.schedule_fixed`). If none fits, `InfeasibleError` names the shortfall (under
`liveness`, of the simulated peaks).

Time: O(D·(V + E)) to try the devices, plus O((V + E)·log V) for the ordering.
"""

from __future__ import annotations

from ...cost import INF, static_memory
from ...errors import Diagnostic, InfeasibleError
from ...model import Problem
from ...simulate import simulate
from ...units import format_bytes, format_bytes_of
from ..base import Options, Solution
from ..infeasible import diagnose, memory_figures
from ..listsched import Instance, schedule_fixed, solution


def place(problem: Problem, options: Options) -> Solution:
    """Place every unpinned op on the fastest device that holds them all."""
    inst = Instance.of(problem)
    m = inst.m
    free = [i for i in range(inst.n) if inst.pin[i] < 0]
    totals = [sum(inst.compute[i][d] for i in free) for d in range(m)]
    tried: list[tuple[int, list[int]]] = []
    for d in sorted(range(m), key=lambda d: (totals[d], d)):
        if totals[d] == INF:
            continue
        placement = [inst.pin[i] if inst.pin[i] >= 0 else d for i in range(inst.n)]
        used = static_memory(problem.graph, placement, m)
        if all(u <= cap for u, cap in zip(used, inst.caps, strict=True)):
            _, start = schedule_fixed(inst, placement)
            return solution(inst, placement, start, "single",
                            device=problem.cluster.devices[d].name)
        if problem.memory_model == "liveness":  # static is only an upper bound: simulate
            _, start = schedule_fixed(inst, placement)
            found = solution(inst, placement, start, "single",
                             device=problem.cluster.devices[d].name)
            run = simulate(problem, found.plan)
            if run.feasible:
                return found
            used = list(run.memory_peak_bytes)  # what the plan's model needs: its peaks
        tried.append((d, used))
    proofs = diagnose(problem)
    if proofs:
        raise InfeasibleError(proofs)
    devs = problem.cluster.devices
    if not tried:
        raise InfeasibleError(Diagnostic(
            "E706", "no single device can run every op (each lacks a compute time for some)",
            None, ("use an algorithm that spreads ops, e.g. --algo heft",)))
    # the device that comes closest
    d, used = min(tried, key=lambda t: (
        max(u - c for u, c in zip(t[1], inst.caps, strict=True)), t[0]))
    worst = max(range(m), key=lambda k: (used[k] - inst.caps[k], -k))
    need, holds = format_bytes_of(used[worst], inst.caps[worst])
    if problem.memory_model == "liveness":
        need += " at its liveness peak"
    short = (f"would need {need} but holds {holds} (short by "
             f"{format_bytes(used[worst] - inst.caps[worst])})")
    where = (f"`{devs[d].name}` (the closest) {short}" if worst == d else
             f"with them on `{devs[d].name}` (the closest), `{devs[worst].name}` {short}")
    raise InfeasibleError(Diagnostic(
        "E706", f"no single device holds all {inst.n} ops: {where}", None,
        (*memory_figures(problem), "spread the ops with another algorithm, e.g. --algo mtopo"),
    ))
