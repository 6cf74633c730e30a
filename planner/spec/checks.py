"""Semantic checks that need no solving: placements that cannot exist.

Lowering already rejects cycles, unknown names, pins to unknown devices and colocated ops
pinned apart. `check` adds the proofs of `planner.facts` (memory that cannot fit under the
plan's own memory model, units with no device, edges no link can carry), located at the
pin, the op or the plan they are about. The algorithms raise the same proofs, with the same
codes, when they find no plan, so `check` and `solve` cannot disagree about them; `solve`
locates them as `check` does (`locate_proofs`).

Plans that differ only in their name (the same graph, cluster, cost model, pins and
objective: a pipeline's proofs follow its own memory rule, `planner.stagefacts`) have
the same proofs but for the plan's name in the messages: `plan_diagnostics` derives them
once per such family, so a file of 200 plans over one 20,000-op graph costs one pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from ..errors import Diagnostic, Span
from ..facts import Proof
from ..model import Problem, forget
from ..stagefacts import proofs
from .lower import Locations


def memory_diagnostics(problem: Problem, loc: Locations | None = None) -> list[Diagnostic]:
    """Every proof that no placement of `problem` is valid, located where `loc` allows."""
    return [p.diagnostic(_where(problem, p, loc)) for p in proofs(problem)]


def locate_proofs(problem: Problem, diagnostics: Sequence[Diagnostic], loc: Locations
                  ) -> tuple[Diagnostic, ...]:
    """`diagnostics` (an algorithm's, which knows no spec) with each proof among them
    located where `check` puts it (the op, the pin, the plan), so that `solve` says where;
    any other that names no declaration (E704, the exact solvers' E813, E818, E707) at the
    plan that asked."""
    unlocated = [p.diagnostic() for p in proofs(problem)]
    where = dict(zip(unlocated, memory_diagnostics(problem, loc), strict=True))
    plan = loc.plans.get(problem.name)
    return tuple(d if d.span is not None else where.get(d, replace(d, span=plan))
                 for d in diagnostics)


def plan_diagnostics(problems: Iterable[Problem], loc: Locations | None = None
                     ) -> list[Diagnostic]:
    """`memory_diagnostics` of every problem; a problem whose twin (all but the name the
    same) has no proof has none either, and is not derived again. Each problem's tables
    are dropped once it is checked (`forget`), so that memory stays that of the spec and
    one problem's tables, however many plans share a large graph."""
    proven_fine: set[tuple[object, ...]] = set()
    plans_of: dict[Diagnostic, list[str]] = {}  # each proof, in order, and the plans it is of
    for problem in problems:
        key = (id(problem.graph), id(problem.cluster), problem.memory_model,
               problem.contention, tuple(problem.pins.items()), problem.pipeline is None)
        if key in proven_fine:
            continue
        found = memory_diagnostics(problem, loc)
        forget(problem)
        if not found:
            proven_fine.add(key)
        for d in found:
            plans_of.setdefault(d, []).append(problem.name)
    return [_naming(d, names) for d, names in plans_of.items()]


def _naming(diag: Diagnostic, plans: list[str]) -> Diagnostic:
    """`diag` naming the plans it is of, unless its message does: plans of one file that
    fail alike at one op under `static` and `liveness` are two diagnostics, each with its
    own model's hint (one message for both kept the first one's hint only); plans that
    fail alike with the same hints, one that names them all."""
    if len(plans) == 1 and f"plan `{plans[0]}`" in diag.message:
        return diag
    shown = ", ".join(f"`{n}`" for n in plans[:3]) + (
        f" and {len(plans) - 3} more" if len(plans) > 3 else "")
    return replace(diag, message=f"{diag.message} (plan{'s' if len(plans) > 1 else ''} {shown})")


def _where(problem: Problem, proof: Proof, loc: Locations | None) -> Span | None:
    if loc is None:
        return None
    plan_span = loc.plans.get(problem.name)
    if not proof.ops:
        return plan_span
    first = proof.ops[0]
    if proof.code == "E302":
        pinned = next((loc.pins[(problem.name, i)] for i in proof.ops
                       if (problem.name, i) in loc.pins), None)
        if pinned is not None:
            return pinned
    g = problem.graph
    return loc.ops.get((g.name, g.ops[first].name)) or plan_span
