"""`single`: every op on the one fastest device that holds them all (pins excepted).

A baseline, not from a paper. Devices are tried by total compute time of the ops on them
(smaller first, ties by smaller index); pinned ops (and their colocation groups) stay on
their pins. The first device whose placement fits every device's memory wins (static
accounting, an upper bound of the liveness peak; under `memory liveness` a placement it
rejects is simulated in dynamic dispatch's order, then depth first (`depth_first`), and
kept when its liveness peaks fit); the order is dynamic dispatch
(`listsched.schedule_fixed`), or depth first where only that fits. If none fits,
`InfeasibleError` names the shortfall (under `liveness`, of the simulated peaks).

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
from ..listsched import Instance, retime, schedule_fixed, solution


def depth_first(inst: Instance) -> list[int]:
    """A topological order that runs the op readied last first (a stack of ready ops,
    each op's successors pushed in reverse so that the first runs next): a chain runs to
    its end before the next starts, its tensors freed before others are made. Under
    `liveness`, where dynamic dispatch interleaves independent chains and every chain's
    tensors live at once (two 4-op chains of 2 MB outputs on a 5 MB GPU: 6 MB, so `single`
    chose the 10x slower CPU, 80 ms), this order holds one chain's (5 MB: 8 ms)."""
    waiting = [len(inst.pred[i]) for i in range(inst.n)]
    ready = [i for i in reversed(inst.topo) if not waiting[i]]
    order: list[int] = []
    while ready:
        i = ready.pop()
        order.append(i)
        for j, _ in reversed(inst.succ[i]):
            waiting[j] -= 1
            if not waiting[j]:
                ready.append(j)
    return order


def _by_liveness(problem: Problem, inst: Instance, placement: list[int], d: int
                 ) -> tuple[Solution | None, list[int]]:
    """`placement` (every free op on device `d`) in dynamic dispatch's order, then depth
    first, simulated under `liveness`: the first that fits, else None and the lesser
    peaks (what the plan's model needs)."""
    _, start = schedule_fixed(inst, placement)
    peaks: list[int] = []
    for order in (start, retime(inst, placement, depth_first(inst))):
        found = solution(inst, placement, order, "single",
                         device=problem.cluster.devices[d].name)
        run = simulate(problem, found.plan)
        if run.feasible:
            return found, list(run.memory_peak_bytes)
        if not peaks or max(run.memory_peak_bytes) < max(peaks):
            peaks = list(run.memory_peak_bytes)
    return None, peaks


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
            found, used = _by_liveness(problem, inst, placement, d)
            if found is not None:
                return found
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
