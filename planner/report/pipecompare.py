"""A pipeline plan next to the plans users would otherwise run, under the same model.

Every row is a placement run as the plan's pipeline (`pipeline.schedule.run`: the
simulator, M micro-batches, the plan's schedule) with the same lower bound:

- `one device`: everything on the fastest device (`single`; where no device holds it all,
  the fastest device anyway, marked as not fitting);
- `uniform split`: the same number of units per stage (`uniform`);
- `makespan plan`: the best one-pass plan of the heuristics `auto` starts from
  (`portfolio.rank`, the plan's objective set to `makespan`; those expected to take more
  than `HEURISTICS_LIMIT_S` left out, the fastest always run; where none ran to a plan, a
  note says why: the proof that no one-pass plan fits, if there is one; a note, too, where
  its simulation as the pipeline, relays counted, would pass the `pipeline_copies` limit);
- `this plan`: the plan being reported.

Under `data_parallel N` only `this plan` has N replicas a stage: the other rows are a
single pipeline's, as a note says (they fit and ran faster, unmarked, beside a plan that
kept the N the user asked for).

Each row is a `views.PipelineRow`; it `fits` when every device holds what the split model
says it needs (`memory_bytes`) and no pipeline unit is split over devices (a one-pass
heuristic may split one: no pipeline, E401 for `this plan`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from .. import limits
from ..algorithms import run as run_algorithm
from ..algorithms.base import Options
from ..algorithms.portfolio import rank
from ..cost import INF, costs
from ..errors import InfeasibleError
from ..model import Pipeline, Problem
from ..pipeline.schedule import run
from ..pipeline.split import fits, off_devices, split_of, units_split
from ..pipeline.units import units
from ..stagefacts import proven_none
from .views import PipelineRow

#: the makespan plan's heuristics expected to take longer are left out (`portfolio.rank`)
HEURISTICS_LIMIT_S = 1.0


def rows(problem: Problem, placement: Sequence[int], algorithm: str,
         recompute: Collection[int] = (), replicas: Mapping[int, tuple[int, ...]] | None = None,
         ) -> tuple[list[PipelineRow], list[str], bool]:
    """The comparison rows for `problem`'s pipeline, `placement` last (module docstring;
    its devices in `recompute` recompute their activations, its stages on a device of
    `replicas` run on that device's group), a note for each row left out, and whether a
    stop (Ctrl-C) cut the others short: the plan's own row is run first, the verdict's."""
    pipeline = problem.pipeline or Pipeline()
    mine = _row(problem, pipeline, "this plan", algorithm, placement, recompute,
                replicas or {})
    notes: list[str] = []
    out: list[PipelineRow] = []
    try:
        _others(problem, pipeline, out, notes)
    except KeyboardInterrupt:  # the plan is reported and written; `solve` then exits 130
        notes.append("the comparison rows were cut short by a stop (Ctrl-C)")
        return [*out, mine], notes, True
    return [*out, mine], notes, False


def _others(problem: Problem, pipeline: Pipeline, out: list[PipelineRow],
            notes: list[str]) -> None:
    """The rows of the plans users would otherwise run, each appended to `out` as it is
    run, a note to `notes` for each left out."""
    out.append(_row(problem, pipeline, "one device", "single", _one_device(problem)))
    uniform = run_algorithm("uniform", problem, one_pipeline=True).plan.placement
    out.append(_row(problem, pipeline, "uniform split", "uniform", uniform))
    flat = dataclasses.replace(problem, pipeline=None)
    ranked = rank(flat, Options(), limit_s=HEURISTICS_LIMIT_S)
    if ranked.best is not None:
        name, _, plan = ranked.best
        over = _over_limit(problem, pipeline, plan.placement)
        if over:
            notes.append(f"makespan plan: {name}'s, not run as the pipeline: {over}")
        else:
            out.append(_row(problem, pipeline, "makespan plan", name, plan.placement))
    elif proof := proven_none(flat):  # not "found no plan": none exists
        notes.append(f"makespan plan: none, no one-pass plan fits ({proof})")
    else:
        notes.append(f"makespan plan: none, the heuristics expected to take at most "
                     f"{HEURISTICS_LIMIT_S:g} s found no plan (the others were left out)")
    if pipeline.data_parallel not in (1, "auto"):  # the user's N replicas: theirs alone
        notes.append(f"one device, the uniform split and the makespan plan run one pipeline, "
                     f"not `data_parallel {pipeline.data_parallel}`'s replicas: what the "
                     f"plan would run without it")


def _over_limit(problem: Problem, pipeline: Pipeline, placement: Sequence[int]) -> str:
    """Why the simulation of `placement` as the pipeline would pass the `pipeline_copies`
    limit, counting the relays of tensors that skip stages ('' where it would not): a
    one-pass plan may make hundreds of stages (heft's, of a 5,346-op GNMT on 8 GPUs: 447
    stages, 318,810 relay hops a micro-batch, 66 s of the report's 80 at 32 micro-batches,
    its iteration 39x the plan's), which no one runs as a pipeline."""
    u = units(problem)
    split = split_of(problem, placement)
    stage = np.repeat(np.arange(split.stages), np.diff(np.array(split.bounds)))
    of = stage[np.asarray(u.unit_of, dtype=np.int64)]
    ends = np.array([(e.src, e.dst) for e in problem.graph.edges], dtype=np.int64).reshape(-1, 2)
    hops = int(np.abs(of[ends[:, 1]] - of[ends[:, 0]]).sum())
    copies = pipeline.microbatches * (len(problem.graph.ops) + len(problem.graph.edges) + hops)
    most = limits.active().pipeline_copies
    if copies <= most:
        return ""
    return (f"its {split.stages} stages relay {hops:,} tensor hops a micro-batch, {copies:,} "
            f"copies in all, over the `pipeline_copies` limit ({most:,})")


def _one_device(problem: Problem) -> Sequence[int]:
    try:
        return run_algorithm("single", problem, one_pipeline=True).plan.placement
    except InfeasibleError:
        c = costs(problem)
        n, m = len(problem.graph.ops), len(problem.cluster.devices)
        total = [sum(c.compute[i][d] for i in range(n)) for d in range(m)]
        fastest = min(range(m), key=lambda d: (total[d] if total[d] < INF else INF, d))
        return (fastest,) * n


def _row(problem: Problem, pipeline: Pipeline, label: str, algorithm: str,
         placement: Sequence[int], recompute: Collection[int] = (),
         replicas: Mapping[int, tuple[int, ...]] | None = None) -> PipelineRow:
    result = run(problem, placement, pipeline, recompute, replicas or {})
    return PipelineRow(label, algorithm, result, fits(problem, result.memory_bytes)
                       and not units_split(problem, placement)
                       and not off_devices(problem, placement))
