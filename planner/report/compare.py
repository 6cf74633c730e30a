"""What `planner compare` shows (its tables, `render.tables`; its page, `render.compare_html`):
the runs with what the tables read of each (`planner.compare.rows`: `is_pipeline`,
`score`, `is_ok`), the groups compared with each other (`group_key`), the wins, the
algorithms in registry order and the swept settings' axes (`planner.compare.settings`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..algorithms import names
from ..compare.rows import (
    PIPELINE_FIELDS,
    SETTING_DEFAULTS,
    columns,
    group_key,
    is_ok,
    is_pipeline,
    score,
    wins,
)
from ..compare.settings import (
    DEFAULT_BANDWIDTH,
    DEFAULT_DEVICES,
    DEFAULT_MEMORY,
    bandwidth_key,
    devices_key,
    memory_key,
)
from .views import BestPlan, CompareReport, CompareRun, SweepAxis, Wins

if TYPE_CHECKING:
    from ..compare.sweep import PlanView

__all__ = ["compare_report"]

#: the settings a sweep's charts draw against, in their order: row field, default, order
_AXES: tuple[tuple[str, str, Callable[[str], Any]], ...] = (
    ("bandwidth", DEFAULT_BANDWIDTH, bandwidth_key),
    ("memory", DEFAULT_MEMORY, memory_key),
    ("devices", DEFAULT_DEVICES, devices_key),
)


def compare_report(rows: Sequence[Mapping[str, Any]], views: Sequence[PlanView] = (),
                   held: Mapping[tuple[str, str], Mapping[str, str]] | None = None
                   ) -> CompareReport:
    """The report of finalized result rows (`planner.compare.rows.finalize`), of the
    best plans to draw (`views`: `planner.compare.best_plans`) and of the settings their
    charts hold (`held`: `planner.compare.held_settings`)."""
    runs = tuple(_run(r) for r in rows)
    groups: dict[tuple[Any, ...], list[CompareRun]] = {}
    for run in runs:
        groups.setdefault(group_key(run.row), []).append(run)
    known = names()
    algorithms = sorted({str(r["algorithm"]) for r in rows},
                        key=lambda a: (known.index(a) if a in known else len(known), a))
    applies = set(columns(rows))
    best = tuple(BestPlan(_run(v.row), v.problem, v.result) for v in views)
    return CompareReport(
        runs, tuple(tuple(g) for g in groups.values()), _wins(rows), tuple(algorithms),
        tuple(SweepAxis(name, default, _order({str(r[name]) for r in rows}, key))
              for name, default, key in _AXES),
        SETTING_DEFAULTS.keys() <= applies, set(PIPELINE_FIELDS) <= applies, best,
        dict(held or {}))


def _run(row: Mapping[str, Any]) -> CompareRun:
    return CompareRun(row, is_pipeline(row), score(row), is_ok(row))


def _order(labels: set[str], key: Callable[[str], Any]) -> dict[str, int]:
    return {label: k for k, label in enumerate(sorted(labels, key=key))}


def _wins(rows: Sequence[Mapping[str, Any]]) -> tuple[Wins, ...]:
    """`wins`, each with the geometric mean of the algorithm's finite `ratio_to_best`."""
    out = []
    for algo, s in wins(rows).items():
        ratios = [r["ratio_to_best"] for r in rows
                  if r["algorithm"] == algo and _finite(r.get("ratio_to_best"))]
        mean = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None
        out.append(Wins(algo, s["wins"], s["groups"], s["ok"], s["failed"], mean))
    return tuple(out)


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
