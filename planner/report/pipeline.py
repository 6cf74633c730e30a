"""A pipeline plan's report: its comparison rows, its bounds and its notes, as `solve`
(terminal, `--json`, `--html`) and `simulate` show them (`render.pipeline`,
`render.pipeline_html`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ..model import Problem
from ..pipeline.bound import pipeline_bound
from ..pipeline.hybrid import replica_groups
from ..pipeline.schedule import Simulation, simulation
from .pipecompare import rows
from .views import PipelineView

__all__ = ["pipeline_simulation", "pipeline_view"]


def pipeline_view(problem: Problem, placement: Sequence[int], algorithm: str,
                  one_pass_bound_s: float, recompute: Collection[str] = (),
                  memory_note: str = "", replicas: Mapping[str, Sequence[str]] | None = None,
                  ) -> PipelineView:
    """The view of `placement` run as `problem`'s pipeline, as `solve` reports it (the
    devices named in `recompute` recomputing their activations, `replicas`: a replicated
    stage's device -> its group's, by name)."""
    index = problem.cluster.device_index
    again = [index[name] for name in recompute if name in index]
    groups = replica_groups(problem, {"replicas": replicas or {}})
    compared, left_out, stopped = rows(problem, placement, algorithm, again, groups)
    notes = tuple(n for n in (memory_note, *left_out) if n)
    # replicas given to a plan of one pipeline: its bound allows them
    return PipelineView(tuple(compared), pipeline_bound(problem, one_pass_bound_s,
                                                        replicated=bool(groups)), notes,
                        stopped)


def pipeline_simulation(problem: Problem, placement: Sequence[int],
                        recompute: Collection[str] = (),
                        replicas: Mapping[str, Sequence[str]] | None = None) -> Simulation:
    """`placement` run as `problem`'s pipeline, op by op (`pipeline.schedule.simulation`),
    with the arguments of `pipeline_view`: what `--trace` draws."""
    assert problem.pipeline is not None
    index = problem.cluster.device_index
    again = [index[name] for name in recompute if name in index]
    groups = replica_groups(problem, {"replicas": replicas or {}})
    return simulation(problem, placement, problem.pipeline, again, groups)
