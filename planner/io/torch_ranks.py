"""A pipeline split run by another number of processes than the plan's devices (`--ranks`).

Under `interleaved` the stages loop over the ranks; under `gpipe` and `1f1b` (one stage
per rank) consecutive stages merge into as many groups as ranks, the grouping whose
busiest group computes least. `at_ranks` is what `torch_pipeline.pipeline_export` calls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..cost import costs
from ..errors import Diagnostic, Span, SpecError
from ..model import Problem
from ..pipeline.units import units
from .torch_split_points import ForwardOp


def at_ranks(problem: Problem, nodes: Sequence[ForwardOp], stage_of: Sequence[int],
              devices: Sequence[int], ranks: int,
              where: Span | None) -> tuple[list[int], list[int], str]:
    """The split run by `ranks` processes: (stage per node, device per stage, a note; ""
    when the split already takes that many). Under `interleaved` the stages loop over the
    ranks (stage k on rank k mod `ranks`, which must divide the stage count; ranks beyond the
    plan's devices take the cluster's other devices, in its order). Under `gpipe` and `1f1b`
    (one stage per rank) consecutive stages merge into `ranks` groups, the grouping whose
    busiest group computes least (`_merged`), each group on the device of one of its stages
    that runs it fastest. E947 when the split has fewer stages than `ranks` or the stages
    cannot loop over them."""
    assert problem.pipeline is not None
    kept = sorted(set(stage_of))
    renumber = {s: k for k, s in enumerate(kept)}
    stage_of = [renumber[s] for s in stage_of]
    devices = [devices[s] for s in kept]
    count, chain = len(kept), list(dict.fromkeys(devices))
    if ranks == len(chain):
        return stage_of, devices, ""
    if problem.pipeline.schedule_spec.virtual_stages:
        if ranks <= count and count % ranks == 0:
            looped = _looped(problem, nodes, stage_of, chain, ranks, where)
            return stage_of, looped, (f"the plan's {count} stages loop over {ranks} ranks "
                                      f"instead of {len(chain)}")
    elif ranks <= count:
        return _merge(problem, nodes, stage_of, devices, ranks, where)
    raise _refused(problem, count, ranks, where)


def _refused(problem: Problem, count: int, ranks: int, where: Span | None) -> SpecError:
    """E947: `ranks` processes cannot run the `count` stages (see `at_ranks`)."""
    assert problem.pipeline is not None
    schedule = problem.pipeline.schedule_spec
    cls = schedule.torch_class
    # interleaved stages on one rank would send to that rank (`torch_pipeline._check_runnable`)
    # and no more ranks than the cluster has devices (`_looped` refuses those: the hint
    # offered --ranks 4 for 4 interleaved stages on 2 devices, then refused it)
    most = min(count, len(problem.cluster.devices))
    fits_in = [r for r in range(1, most + 1) if not schedule.virtual_stages
               or count % r == 0 and (r > 1 or count == 1)]
    why = (f"{cls} runs stage k on rank k mod {ranks}, as many stages on each rank"
           if schedule.virtual_stages else f"{cls} runs one stage per rank")
    return SpecError(Diagnostic(
        "E947", f"plan `{problem.name}` cannot run on --ranks {ranks}: its split has "
        f"{count} stage(s), and {why}", where,
        (f"--ranks {_alternatives(fits_in)} runs this split; for more ranks, plan on a "
         "cluster of that many devices",)))


def _alternatives(values: Sequence[int]) -> str:
    """`1 to 4` for a run of numbers, else `1, 2 or 4`."""
    if len(values) > 2 and list(values) == list(range(values[0], values[-1] + 1)):
        return f"{values[0]} to {values[-1]}"
    return " or ".join(filter(None, (", ".join(map(str, values[:-1])), str(values[-1]))))


def _looped(problem: Problem, nodes: Sequence[ForwardOp], stage_of: Sequence[int],
            chain: Sequence[int], ranks: int, where: Span | None) -> list[int]:
    """Device per stage when the stages loop over `ranks` ranks: the plan's devices in
    order, then the cluster's others; E947 when the cluster lacks devices or an op may not
    use its new device."""
    cluster = problem.cluster.devices
    pool = [*chain, *(d for d in range(len(cluster)) if d not in chain)]
    if ranks > len(pool):
        raise SpecError(Diagnostic(
            "E947", f"plan `{problem.name}` cannot run on --ranks {ranks}: its cluster has "
            f"{len(cluster)} device(s)", where, ("add devices to the cluster",)))
    looped = [pool[k % ranks] for k in range(max(stage_of) + 1)]
    u = units(problem)
    for n, k in zip(nodes, stage_of, strict=True):
        if looped[k] not in u.allowed[u.unit_of[n.op]]:
            raise SpecError(Diagnostic(
                "E947", f"plan `{problem.name}` cannot run on --ranks {ranks}: `{n.name}` "
                f"would run on `{cluster[looped[k]].name}`, which it may not use", where,
                (f"--ranks {len(chain)} runs the plan's own split",)))
    return looped


def _merge(problem: Problem, nodes: Sequence[ForwardOp], stage_of: Sequence[int],
           devices: Sequence[int], ranks: int,
           where: Span | None) -> tuple[list[int], list[int], str]:
    """Consecutive stages merged into `ranks` groups (`_merged`), as `at_ranks` returns."""
    count = len(devices)
    groups = _merged(problem, nodes, stage_of, devices, ranks)
    if groups is None:
        raise SpecError(Diagnostic(
            "E947", f"plan `{problem.name}` cannot run on --ranks {ranks}: every merge of its "
            f"{count} stages puts ops on a device they may not use", where,
            (f"--ranks {len(set(devices))} runs the plan's own split",)))
    group_of = [k for k, (a, b, _) in enumerate(groups) for _ in range(a, b)]
    spans = ", ".join(f"{a}" if b - a == 1 else f"{a}-{b - 1}" for a, b, _ in groups)
    return [group_of[s] for s in stage_of], [d for _, _, d in groups], (
        f"the plan's {count} stages merged into {ranks} (stages {spans}), the grouping whose "
        "busiest rank computes least")


def _merged(problem: Problem, nodes: Sequence[ForwardOp], stage_of: Sequence[int],
            devices: Sequence[int], ranks: int) -> list[tuple[int, int, int]] | None:
    """Stages [0, S) in `ranks` runs of consecutive stages, as (first, end, device), that
    minimise the largest run's compute (forward and backward ops, on the run's device: the
    one of its stages' devices, allowed for all its ops, that computes it fastest; ties to
    the earlier device and the earlier cuts); None when no grouping can run."""
    c, u = costs(problem), units(problem)
    count = len(devices)
    backward: dict[int, list[int]] = {}
    for b, f in problem.graph.backward_of.items():
        backward.setdefault(f, []).append(b)
    load = [[0.0] * len(problem.cluster.devices) for _ in range(count)]
    banned = [[False] * len(problem.cluster.devices) for _ in range(count)]
    for n, s in zip(nodes, stage_of, strict=True):
        allowed = set(u.allowed[u.unit_of[n.op]])
        for d in range(len(problem.cluster.devices)):
            load[s][d] += sum(c.compute[i][d] for i in (n.op, *backward.get(n.op, ())))
            banned[s][d] = banned[s][d] or d not in allowed

    def run_of(a: int, b: int) -> tuple[float, int]:
        options = [(sum(load[s][d] for s in range(a, b)), k, d)
                   for k, d in enumerate(devices[a:b])
                   if not any(banned[s][d] for s in range(a, b))]
        best = min(options, default=(math.inf, 0, -1))
        return best[0], best[2]

    best = [[math.inf] * (count + 1) for _ in range(ranks + 1)]
    cut = [[0] * (count + 1) for _ in range(ranks + 1)]
    best[0][0] = 0.0
    for g in range(1, ranks + 1):
        for b in range(g, count + 1):
            for a in range(g - 1, b):
                value = max(best[g - 1][a], run_of(a, b)[0])
                if value < best[g][b]:
                    best[g][b], cut[g][b] = value, a
    if not math.isfinite(best[ranks][count]):
        return None
    out, b = [], count
    for g in range(ranks, 0, -1):
        a = cut[g][b]
        out.append((a, b, run_of(a, b)[1]))
        b = a
    return out[::-1]
