"""Where torch can cut a traced model into pipeline stages, and the split nearest a plan's.

`torch.distributed.pipelining` splits the graph `torch.export` records in the order
`forward()` runs, at `SplitPoint`s: a stage after the first must begin at a call of a
module that `forward()` calls once, and after every op that reads a model input (torch
gives the inputs to the first stage alone). `forward_ops` lists the traced model's forward
ops in that order with why a SplitPoint cannot begin a stage at each; `valid_cuts` keeps
the positions where torch can split and planner can place (no pipeline unit on both sides);
`why_not_a_split` says why a plan's stages are not such a split; `nearest_split` finds the
split at valid cuts that keeps the most of the plan's stages, then moves the least from the
plan's (`move_costs`: compute moved, then ops moved), as `torch_pipeline.pipeline_export`
offers it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..cost import costs
from ..model import Problem
from ..pipeline.units import units
from .torch_import import Traced

#: the DP's infinity, and the cost of an op on a device it may not use (below infinity)
_NEVER = 1 << 200
_FORBIDDEN = 1 << 190


@dataclass(frozen=True, slots=True)
class ForwardOp:
    """A forward op of the traced model, in `forward()`'s order."""

    name: str
    op: int  # its index in the problem's graph
    placeholder: bool
    #: why no SplitPoint can begin a stage at it ("" when one can)
    unnameable: str


def forward_ops(problem: Problem, traced: Traced) -> list[ForwardOp]:
    """The traced model's ops in `forward()`'s order, and whether a SplitPoint can name
    each (a whole call of a module called once)."""
    out = []
    index = problem.graph.op_index
    for u in traced.units:
        if u.is_input:
            why = "an input of the model"
        elif u.module and u.calls == 1:
            why = ""
        elif u.module:
            why = (f"a call of module `{u.module}`, which forward() calls {u.calls} times: a "
                   f"SplitPoint at `{u.module}` splits before every call")
        else:
            first = u.nodes[0]
            what = (f"Tensor.{first.target}" if first.op == "call_method"
                    else getattr(first.target, "__name__", str(first.target)))
            why = f"a call of `{what}`, a function, not a module: no SplitPoint can name it"
        out.append(ForwardOp(u.name, index[u.name], u.is_input, why))
    return _inputs_first(problem, out)


def _inputs_first(problem: Problem, nodes: list[ForwardOp]) -> list[ForwardOp]:
    """`nodes`, each up to the last that reads a model input unnameable: torch gives a
    later stage the inputs its ops read as arguments that no stage sends, which its
    schedules refuse (`_retrieve_recv_activations`: "got root arg"), so every reader of
    an input runs in the first stage (an encoder-decoder's `decoder_input_ids`)."""
    g = problem.graph
    position = {n.op: p for p, n in enumerate(nodes)}
    last, why = -1, ""
    for n in nodes:
        for k in g.successors[n.op] if n.placeholder else ():
            p = position.get(g.edges[k].dst, -1)
            if p > last:
                last = p
                why = (f"at or before `{nodes[p].name}`, which reads the model's input "
                       f"`{n.name}`: torch.distributed.pipelining gives the model's inputs "
                       "to the first stage alone")
    return [replace(n, unnameable=n.unnameable or why) if p <= last else n
            for p, n in enumerate(nodes)]


def valid_cuts(problem: Problem, nodes: Sequence[ForwardOp]) -> list[int]:
    """Positions p (a stage begins at `nodes[p]`) where torch can split and planner can
    place: a module called once, after at least one op that is not an input, and no
    pipeline unit (a module's calls, an attribute's users, a tuple's consumers) on both
    sides."""
    u = units(problem)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for p, n in enumerate(nodes):
        unit = u.unit_of[n.op]
        first.setdefault(unit, p)
        last[unit] = p
    blocked = [0] * (len(nodes) + 1)
    for unit, a in first.items():
        if last[unit] > a:  # a unit spread over [a, last]: no cut inside
            blocked[a + 1] += 1
            blocked[last[unit] + 1] -= 1
    out, inside, computed = [], 0, False
    for p, n in enumerate(nodes):
        inside += blocked[p]
        if computed and not inside and not n.unnameable:
            out.append(p)
        computed = computed or not n.placeholder
    return out


def why_not_a_split(nodes: Sequence[ForwardOp], stage: Sequence[int], cuts: Sequence[int],
            devices: Sequence[str]) -> str:
    """Why the plan's stages are not a split torch can make ("" when they are)."""
    valid = set(cuts)
    current = 0
    for p, (n, s) in enumerate(zip(nodes, stage, strict=True)):
        if s == current:
            continue
        first = next(m.name for m, t in zip(nodes, stage, strict=True) if t == current)
        if s < current:
            return (f"`{n.name}` (stage {s}, on {devices[s]}) runs after `{first}` begins "
                    f"stage {current} in forward(); torch's stages follow the order the "
                    "ops run in")
        if s > current + 1:
            return (f"`{n.name}` of stage {s} (on {devices[s]}) runs before any op of stage "
                    f"{current + 1} in forward(); torch's stages follow the order the ops "
                    "run in")
        if p not in valid:
            why = n.unnameable or ("only the model's inputs come before it" if all(
                m.placeholder for m in nodes[:p]) else "a pipeline unit runs on both sides")
            return f"stage {s} (on {devices[s]}) begins at `{n.name}`, {why}"
        current = s
    return ""


def nearest_split(moves: Sequence[Sequence[int]], cuts: Sequence[int],
             may_drop: bool) -> list[int] | None:
    """Stage per node of the split at `cuts` nearest the plan's: the fewest stages left out
    (with `may_drop`; a stage is left out only where no split keeping it exists: too few
    cuts, or an op on a device it may not use), then the least `moves`: `moves[s][p]` is
    what putting node p in stage s costs (0 in its plan's stage). None when no split of
    every stage exists and none may be left out, or when every split puts an op where it
    cannot run.

    Stage s spans positions [P[i], P[j]) of P = [0, *cuts, n], at the cost
    `A[j] - A[i]` with `A[k]` the cost of nodes [0, P[k]) in stage s: each stage is one
    pass with a running minimum."""
    count, n = len(moves), len(moves[0]) if moves else 0
    # a stage left out costs more than any split's moves (short of a forbidden one), so
    # that keeping a stage always wins over moving less
    drop = 1 + sum(max((m[p] for m in moves if m[p] < _FORBIDDEN), default=0)
                   for p in range(n))
    pos = [0, *cuts, n]
    best = [0] + [_NEVER] * (len(pos) - 1)
    choice: list[list[int]] = []
    for s in range(count):
        total, prefix = 0, [0] * (n + 1)
        for p in range(n):
            total += moves[s][p]
            prefix[p + 1] = total
        a = [prefix[x] for x in pos]
        nxt, arg = [_NEVER] * len(pos), [-1] * len(pos)
        low, low_at = _NEVER, -1
        for j in range(len(pos)):
            if low < _NEVER and low + a[j] < nxt[j]:
                nxt[j], arg[j] = low + a[j], low_at
            if may_drop and best[j] < _NEVER and best[j] + drop < nxt[j]:
                nxt[j], arg[j] = best[j] + drop, j  # stage s left out
            if best[j] < _NEVER and best[j] - a[j] < low:
                low, low_at = best[j] - a[j], j
        best = nxt
        choice.append(arg)
    if best[-1] >= _FORBIDDEN:
        return None
    out = [0] * n
    j = len(pos) - 1
    for s in reversed(range(count)):
        i = choice[s][j]
        for p in range(pos[i], pos[j]):
            out[p] = s
        j = i
    return out


def move_costs(problem: Problem, nodes: Sequence[ForwardOp], stage: Sequence[int],
           devices: Sequence[int]) -> list[list[int]]:
    """`[s][p]`: the distance from the plan of putting node p in stage s (module
    docstring): its compute (forward and backward, picoseconds on the plan's device),
    then one per op moved; an op's stage on a device it may not use is forbidden."""
    c = costs(problem)
    u = units(problem)
    n, count = len(nodes), len(devices)
    backward: dict[int, list[int]] = {}
    for b, f in problem.graph.backward_of.items():
        backward.setdefault(f, []).append(b)
    per_ps = n + 1  # ops moved (at most n) count below a picosecond
    out = [[0] * n for _ in range(count)]
    for p, node in enumerate(nodes):
        here = devices[stage[p]]
        seconds = sum(c.compute[i][here] for i in (node.op, *backward.get(node.op, ())))
        moved = (round(seconds * 1e12) if math.isfinite(seconds) else 0) * per_ps + 1
        allowed = u.allowed[u.unit_of[node.op]]
        for s in range(count):
            if s != stage[p]:
                out[s][p] = moved if devices[s] in allowed else _FORBIDDEN
    return out
