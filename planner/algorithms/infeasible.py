"""Why no plan fits: the one diagnosis every algorithm raises with `InfeasibleError`.

`diagnose(problem)` returns the proofs of `planner.facts` (E301-E305: memory that cannot
fit under the plan's memory model, units with no device, edges no link carries): the same
proofs, with the same codes, that `planner check` reports.

`stuck_error` is raised by a heuristic that ran out of room: it returns the proofs when there
are any, else an E704 saying which op found no device, with the same figures as hints and
the honest caveat that the instance may still be feasible.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..cost import static_memory
from ..errors import Diagnostic, InfeasibleError, PlannerError
from ..facts import facts, unit_name
from ..model import Problem
from ..plan import Plan
from ..simulate import simulate
from ..stagefacts import proofs
from ..units import format_bytes, format_bytes_of

__all__ = ["after_portfolio", "diagnose", "memory_figures", "none_found", "stuck_error",
           "unit_name"]


def memory_figures(problem: Problem) -> tuple[str, ...]:
    """Two figures that explain most memory trouble: totals, and largest unit vs device."""
    f = facts(problem)
    devs = problem.cluster.devices
    cap = sum(d.memory_bytes for d in devs)
    least, total = format_bytes_of(f.least_total_bytes, cap)
    out = [(f"least total memory {least} ({problem.memory_model}) vs total capacity "
            f"{total} of {len(devs)} device(s)")]
    if f.units and devs:
        u = max(range(len(f.units)), key=lambda k: (f.unit_bytes[k], -f.units[k][0]))
        big = max(range(len(devs)), key=lambda d: (devs[d].memory_bytes, -d))
        needs, holds = format_bytes_of(f.unit_bytes[u], devs[big].memory_bytes)
        out.append(f"largest unit: {unit_name(problem, f.units[u])} needs at least {needs}; "
                   f"largest device `{devs[big].name}` holds {holds}")
    return tuple(out)


def diagnose(problem: Problem) -> list[Diagnostic]:
    """Proofs that no placement is valid (`planner.stagefacts.proofs`, under the memory
    rule of the problem's objective; empty when none)."""
    return [p.diagnostic() for p in proofs(problem)]


def stuck_error(problem: Problem, algorithm: str, op: int,
                shortfall: Sequence[tuple[int, int]] = (), *,
                retried: bool = False, counted: str = "", retries: str = ""
                ) -> InfeasibleError:
    """The error a heuristic raises when op `op` found no device.

    `shortfall` lists `(device, bytes the device would need)` for the devices the op may
    use. Proofs from `diagnose` take precedence; otherwise the diagnostic names the op and
    the devices' figures, and says that another algorithm may still find a plan. `retried`:
    the heuristic also retried with memory budgets and m-TOPO's placement (a list
    scheduler's `memory_passes`), so m-TOPO is not suggested. `counted`, when given, says
    what each figure of `shortfall` counts (the first hint); `retries`, what the heuristic
    retried with, in words (with `retried`, by default budgets, contiguous splits under
    `liveness`, and m-TOPO's placement); "fills devices greedily" only where it retried
    with nothing.
    """
    proofs = diagnose(problem)
    if proofs:
        return InfeasibleError(proofs)
    name = problem.graph.ops[op].name
    devs = problem.cluster.devices
    if shortfall:
        shown = "; ".join(
            f"`{devs[d].name}` would need "
            f"{' of '.join(format_bytes_of(need, devs[d].memory_bytes))}, "
            f"{format_bytes(need - devs[d].memory_bytes)} short" for d, need in shortfall[:4])
        if len(shortfall) > 4:
            shown += f"; {len(shortfall) - 4} more device(s) alike"
        # the heuristics count static memory, which under `liveness` bounds the peak
        static = (", by static accounting (above the liveness peaks)"
                  if problem.memory_model == "liveness" else "")
        message = (f"`{algorithm}` ran out of memory: op `{name}` fits on no device beside the "
                   f"ops it placed before it{static} ({shown})")
    else:
        message = (f"`{algorithm}` found no device for op `{name}`: its pin, its colocation "
                   "group and the devices that can run it leave none")
    splits = " and contiguous splits" if problem.memory_model == "liveness" else ""
    if retried and not retries:
        retries = f"tighter memory budgets{splits} and m-TOPO's placement"
    lead = (f"it also retried with {retries}; " if retries
            else "this heuristic fills devices greedily; ")
    return InfeasibleError(Diagnostic(
        "E704", message, None,
        (*((counted,) if shortfall and counted else ()), *memory_figures(problem),
         lead + "the instance may still be feasible: try "
         + _may_help(problem, algorithm, retried)),
    ))


def _may_help(problem: Problem, algorithm: str, retried: bool) -> str:
    """The algorithms that could still find a plan where heuristic `algorithm` did not, and
    only those: m-TOPO unless it was tried (by the heuristic itself, or as its retry);
    `single` only when one device holds and runs everything (`_one_device_fits`); `search`
    always (it moves ops with the simulator as the judge, under the plan's own memory
    model); an exact solver only under `static` memory, which its model counts exactly
    (under `liveness` it is stricter, and may prove nothing)."""
    mtopo = () if retried or algorithm == "mtopo" else ("--algo mtopo",)
    names: list[str] = [*mtopo, *(("--algo single",) if _one_device_fits(problem) else ()),
                        "--algo search"]
    if problem.memory_model == "static":
        names.append("an exact solver (--algo cpsat, or --algo ilp)")
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


def _one_device_fits(problem: Problem) -> bool:
    """Whether the largest device that can run every op holds them all: by static
    accounting, else (under `memory liveness`, where static only bounds the peak from
    above) by simulating them there in dispatch order. One simulation at most, on an
    error's path only; a smaller device is not tried (never a wrong suggestion, at worst
    a missed one)."""
    f = facts(problem)
    caps = [d.memory_bytes for d in problem.cluster.devices]
    everywhere = set(range(len(caps)))
    for allowed in f.unit_allowed:
        everywhere &= set(allowed)
    if not everywhere:
        return False
    d = max(sorted(everywhere), key=lambda k: caps[k])
    if caps[d] < f.least_total_bytes:
        return False
    placement = (d,) * len(problem.graph.ops)
    if static_memory(problem.graph, placement, len(caps))[d] <= caps[d]:
        return True
    return problem.memory_model == "liveness" and simulate(problem, Plan(placement)).feasible


def none_found(problem: Problem, errors: Sequence[PlannerError],
               skipped: Sequence[str] = ()) -> InfeasibleError:
    """The error of `auto` and `search` when no heuristic found a plan: the proofs when
    there are any, else the first heuristic's own diagnosis (its advice rewritten by
    `after_portfolio`, under `liveness` too), else E816. `skipped`: the heuristics the time
    limit skipped."""
    found = diagnose(problem)
    if found:
        return InfeasibleError(found)
    if errors:
        return InfeasibleError(tuple(after_portfolio(problem, d, skipped, enumerates=True)
                                     for d in errors[0].diagnostics))
    return InfeasibleError(Diagnostic(
        "E816", "no algorithm found a plan that the simulator accepts", None,
        ("try --algo cpsat with a longer --time-limit",)))


def after_portfolio(problem: Problem, diag: Diagnostic, skipped: Sequence[str] = (), *,
                    advice: str = "", enumerates: bool = False) -> Diagnostic:
    """A heuristic's E704 as `auto`, `search` or an exact solver raise it, every heuristic
    having run (but `skipped`): its advice to try `--algo search`, m-TOPO or `single` (all
    of them tried) is dropped. Under `static` memory, where `search` moves only from their
    plans, what is left is the skipped heuristics and `advice` (by default an exact
    solver). Under `liveness`, only where the caller `enumerates` next (`auto` and
    `search`, which then say what the enumeration covered): the skipped heuristics, if
    any. Any other code, or `liveness` for an exact solver, `diag` unchanged."""
    tail = "the instance may still be feasible"
    if diag.code != "E704" or (problem.memory_model != "static" and not enumerates):
        return diag
    names = [f"--algo {name}" for name in skipped]
    if problem.memory_model == "static":
        names.append(advice or "an exact solver (--algo cpsat, or --algo ilp)")
    why = ("no other heuristic found a plan either, and `search` moves only from theirs; "
           if problem.memory_model == "static" else "no other heuristic found a plan either; ")
    hints = list(diag.hints)
    for k, hint in enumerate(hints):
        if f"{tail}: try " in hint:
            hints[k] = (f"{hint[:hint.index(tail)]}{why}{tail}"
                        + (": try " if names else "")
                        + (", ".join(names[:-1]) + " or " if len(names) > 1 else "")
                        + (names[-1] if names else ""))
    return dataclasses.replace(diag, hints=tuple(hints))
