"""The proofs that no placement of a problem is valid, under the memory rule its objective
uses: `planner.facts` for a one-pass plan, the pipeline's own rule for `objective pipeline`.

`planner.facts` proves memory shortfalls under the one-pass models (`static`, `liveness`),
which a pipeline does not use. A pipeline stage holds its params once, each forward op's
output from its forward pass to its backward pass (for one micro-batch in flight at
least), and its largest transient (a backward op's output and temp, a forward op's temp),
one copy of a tied weight per device (docs/pipelines.md; `pipeline.split.stage_bytes`).
So a backward op's output counts once, as the largest transient, where `static` (and
`liveness`, for sinks) add them all up: the one-pass proofs E301-E303, E306 and E307
rejected pipelines that fit (`check` said E306 for a graph whose two backward outputs of
9 GiB each fit a 16 GiB device as a pipeline, and `solve` planned it).

For a pipeline plan, `proofs` keeps the one-pass proofs that hold under any memory rule
(E304: a unit no device runs; E305: an edge no link carries) and proves E301 under the
pipeline's rule: a pipeline unit (a forward op, its backward ops and their colocation
groups: all of it on one stage) needs more than every device it may run on holds,
counting its params (a tied weight once), its forward outputs and its largest transient,
each a part of what any stage holding it holds. Pinned sets and the
total are not proved there (several stages on one device under `interleaved` hold the
largest stage's activations per micro-batch in flight, not their sum).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from .cost import held_bytes, repeated_tie_bytes, stage_memory
from .facts import Proof, facts, unit_name
from .facts import proofs as one_pass_proofs
from .model import Problem, derived
from .units import format_bytes

__all__ = ["pipeline_bytes", "pipeline_units", "proofs", "proven_none", "unit_roots"]



def proofs(problem: Problem) -> list[Proof]:
    """Every proof that no placement of `problem` is valid under its objective's memory
    rule (the module docstring; empty when none is found)."""
    if problem.pipeline is None:
        return one_pass_proofs(problem)
    return list(derived(problem, "_stage_proofs", lambda: _pipeline_proofs(problem)))


def proven_none(problem: Problem) -> str:
    """The first proof that no placement of `problem` is valid (`proofs`), as `CODE:
    message`, with how many more there are ("" where none is found)."""
    found = proofs(problem)
    if not found:
        return ""
    more = f" (and {len(found) - 1} more proof(s))" if len(found) > 1 else ""
    return f"{found[0].code}: {found[0].message}{more}"


def pipeline_bytes(problem: Problem, ops: Sequence[int]) -> int:
    """The least bytes a pipeline stage holding `ops` holds: their params with one copy of
    each tied weight, their forward outputs, and their largest transient."""
    g = problem.graph
    params, kept, transient = held_bytes(g, ops)
    mine = set(ops)
    for tie in g.ties:
        params -= repeated_tie_bytes(tie, sum(1 for i in tie.ops if i in mine))
    return cast(int, stage_memory(params, 1, kept, transient))  # one micro-batch in flight


def _pipeline_proofs(problem: Problem) -> tuple[Proof, ...]:
    # the one-pass proofs that no memory rule changes: a unit no device runs, an edge no
    # link carries
    out = [p for p in one_pass_proofs(problem) if p.code in ("E304", "E305")]
    if out or not problem.cluster.devices:
        return tuple(out)
    devs = problem.cluster.devices
    for members, allowed in pipeline_units(problem):
        need = pipeline_bytes(problem, members)
        if not allowed:
            continue
        big = max(allowed, key=lambda d: (devs[d].memory_bytes, -d))
        if need <= devs[big].memory_bytes:
            continue
        where = ("the largest device" if len(allowed) == len(devs)
                 else "the largest device it can run on")
        name = unit_name(problem, members)
        if len(members) > 1 and any(i in problem.graph.backward_of for i in members):
            name = name.replace("the colocation group of", "the pipeline unit of")
        out.append(Proof(
            "E301", f"{name} needs at least {_exact(need)} in a "
            f"pipeline stage but {where}, `{devs[big].name}`, holds "
            f"{_exact(devs[big].memory_bytes)}",
            ("a pipeline stage holds its params once, each forward output until its backward "
             "pass, and its largest transient (a backward output or a temp)",
             *((("a forward op, its backward ops and their colocation groups run on one "
                 "stage") if "pipeline unit" in name else
                "colocated ops are placed as one unit on one device",)
               if len(members) > 1 else ()),
             "shrink the op or add a larger device"), tuple(members), big))
    return tuple(out)


def unit_roots(problem: Problem) -> list[int]:
    """Per unit of `facts` (a colocation group or a lone op): the smallest unit index of
    its pipeline unit (a forward op, its backward ops and their colocation groups: one
    stage holds all of it). The one rule `pipeline.units` and E301 group by."""
    f = facts(problem)
    parent = list(range(len(f.units)))

    def root(u: int) -> int:
        while parent[u] != u:
            parent[u] = parent[parent[u]]
            u = parent[u]
        return u

    for b, fwd in problem.graph.backward_of.items():
        ra, rb = root(f.unit_of[b]), root(f.unit_of[fwd])
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return [root(u) for u in range(len(f.units))]


def pipeline_units(problem: Problem) -> list[tuple[list[int], list[int]]]:
    """The pipeline units (`unit_roots`) with the devices every part may run on (before:
    E301 judged the colocation groups alone, so a backward op's output, the largest
    transient of its forward op's stage, was left out: `check` said ok of a stage that
    cannot fit)."""
    f = facts(problem)
    merged: dict[int, list[int]] = {}
    for u, r in enumerate(unit_roots(problem)):
        merged.setdefault(r, []).append(u)
    out = []
    for parts in merged.values():
        allowed = set(f.unit_allowed[parts[0]]).intersection(
            *(f.unit_allowed[u] for u in parts[1:]))
        out.append((sorted(i for u in parts for i in f.units[u]), sorted(allowed)))
    return out


def _exact(nbytes: int) -> str:
    """`2.00 GiB (2147483648 B)`, or `4 B` where rounding changes nothing."""
    shown = format_bytes(nbytes)
    return shown if shown == f"{nbytes} B" else f"{shown} ({nbytes} B)"
