"""The data the renderers format: plain, frozen values, computed by the report layer.

This module imports no algorithm and no experiment (only the types its values hold), so
that `planner.render` can import it and nothing above the data it formats.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model import Problem
from ..pipeline.bound import PipelineBound
from ..pipeline.schedule import PipelineRun
from ..simulate import SimResult

__all__ = ["BestPlan", "CompareReport", "CompareRun", "PipelineRow", "PipelineView",
           "SweepAxis", "Wins"]


# -- a pipeline plan and the plans beside it (`pipecompare`, `pipeline`) ------------------


@dataclass(frozen=True, slots=True)
class PipelineRow:
    """One placement run as the pipeline."""

    label: str
    algorithm: str
    run: PipelineRun
    fits: bool


@dataclass(frozen=True, slots=True)
class PipelineView:
    """What a pipeline plan's report shows: the comparison rows (the plan reported last),
    the pipeline's bounds and the notes (how memory shaped the plan, rows left out)."""

    rows: tuple[PipelineRow, ...]
    bound: PipelineBound
    notes: tuple[str, ...] = ()
    #: a stop (Ctrl-C) cut the comparison rows short: `solve` writes the plan, exits 130
    stopped: bool = False


# -- the tables and the page of `planner compare` (`compare`) -----------------------------


@dataclass(frozen=True, slots=True)
class CompareRun(Mapping[str, Any]):
    """One result row of a sweep (`planner.compare.rows`), read as that row's mapping, with
    what the reports read of it: whether it ran as a pipeline (it has the pipeline's
    figures), its `score` (what "best" minimises; None without a finite one) and whether
    it counts (`ok`: a valid plan with a finite score)."""

    row: Mapping[str, Any]
    pipeline: bool
    score: float | None
    ok: bool

    def __getitem__(self, key: str) -> Any:
        return self.row[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.row)

    def __len__(self) -> int:
        return len(self.row)


@dataclass(frozen=True, slots=True)
class Wins:
    """One algorithm's record over a sweep: the groups (spec, plan, setting) it won (ties
    count for each), ran in, its runs with and without a valid plan, and the geometric mean
    of its `ratio_to_best` (None when no run has one)."""

    algorithm: str
    wins: int
    groups: int
    ok: int
    failed: int
    mean_ratio: float | None


@dataclass(frozen=True, slots=True)
class SweepAxis:
    """A swept setting (a row field: `bandwidth`, `memory`, `devices`): its default and each
    label's position in the axis's order (by value, not by text)."""

    name: str
    default: str
    order: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class BestPlan:
    """One plan to draw: its run, the problem under the run's setting, its simulation."""

    run: CompareRun
    problem: Problem
    result: SimResult


@dataclass(frozen=True, slots=True)
class CompareReport:
    """What `planner compare` shows: the runs (in the rows' order), the runs per group
    compared with each other (spec, plan, setting; first seen first), the wins (registry
    order), the algorithms that ran (registry order), the swept settings' axes, whether
    the runs' table has the setting columns (`objective`, `microbatches`) and the
    pipeline's, and the best plans to draw."""

    runs: tuple[CompareRun, ...]
    groups: tuple[tuple[CompareRun, ...], ...]
    wins: tuple[Wins, ...]
    algorithms: tuple[str, ...]
    axes: tuple[SweepAxis, ...]
    setting_columns: bool
    pipeline_columns: bool
    best: tuple[BestPlan, ...] = ()
    #: per (spec, plan): the label of each swept axis that the charts of the other axes hold
    #: it at (`planner.compare.held_settings`); the default, else the last in the axis's
    #: order, for a (spec, plan) not listed
    held: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
