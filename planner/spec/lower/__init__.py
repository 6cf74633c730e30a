"""Syntax trees -> the frozen model: resolve names, expand ranges and globs, convert units,
apply defaults, validate. Every problem of every file is collected, then raised at once.

The pass (`lower`) gathers the declarations of every module and lowers each: `graph.py`
(ops, edges, colocations, ties, backward ops, cycles), `cluster.py` (devices and links),
`plan.py` (a plan's settings, pins and pipeline rules). They read values through
`attrs.py` (units, ranges, the mistakes), resolve op names and globs through `resolve.py`
(within the load's budget) and record spans in `locations.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ... import limits
from ...errors import DiagnosticSink, Span
from ...model import Problem, Spec
from .. import ast
from ..names import check_names
from ..parse import paused_gc
from .attrs import quantity
from .cluster import devices_written, lower_cluster
from .graph import lower_graph, unknown_time_kinds
from .locations import Locations, OpSpans
from .plan import (
    backward_first,
    interleave_blocked,
    lower_plan,
    pipeline_units,
    units_pinned_apart,
)
from .resolve import Budget, GlobTable

__all__ = ["Locations", "OpSpans", "backward_first", "interleave_blocked", "lower",
           "pipeline_units", "quantity", "units_pinned_apart"]


def lower(modules: Sequence[ast.Module], sink: DiagnosticSink | None = None,
          sources: Mapping[str, str] | None = None) -> tuple[Spec, Locations]:
    """Lower parsed modules (a file and its imports) into a `Spec`; `sources`, the texts
    of the modules' files when known, let the name rules skip files of plain ASCII.

    Raises `SpecError` with every error found (warnings are kept on the sink).
    """
    with paused_gc():
        return _lower(modules, sink or DiagnosticSink(), sources)


def _lower(modules: Sequence[ast.Module], sink: DiagnosticSink,
           sources: Mapping[str, str] | None = None) -> tuple[Spec, Locations]:
    check_names(modules, sink, sources)
    loc = Locations()
    max_plans = limits.active().plans
    graph_decls: dict[str, ast.GraphDecl] = {}
    cluster_decls: dict[str, ast.ClusterDecl] = {}
    plan_decls: dict[str, ast.PlanDecl] = {}
    first: dict[str, Span] = {}
    plans_hint = ""
    for module in modules:
        for item in module.items:
            if isinstance(item, ast.ImportDecl):
                continue
            kind = {ast.GraphDecl: "graph", ast.ClusterDecl: "cluster", ast.PlanDecl: "plan"}[
                type(item)]
            # the declarations of `kind`, by name (`item` is of the type this table holds)
            tables: dict[str, dict[str, Any]] = {
                "graph": graph_decls, "cluster": cluster_decls, "plan": plan_decls}
            table = tables[kind]
            key = f"{kind}:{item.name.text}"
            if key in first:
                sink.error("E201", f"{kind} `{item.name.text}` is defined twice", item.name.span,
                           "names of graphs, clusters and plans are global across imports",
                           notes=((f"first definition of `{item.name.text}`", first[key]),))
                continue
            if kind == "plan" and len(plan_decls) == max_plans:
                # the plans written, counted once in the trees read already: a hint that
                # suffices (twice the limit alone may not)
                plans_hint = plans_hint or limits.raise_hint(
                    "plans", _plans_written(modules), 2 * max_plans)
                sink.error("E014", f"more than {max_plans} plans", item.name.span, plans_hint)
                continue
            first[key] = item.name.span
            table[item.name.text] = item
    budget = Budget.active()
    budget.devices_written = sum(devices_written(d) for d in cluster_decls.values())
    globs = GlobTable(budget)  # graph name -> its op names, for glob patterns
    # per graph, each `time[KIND]` selector's span by kind, gathered while reading the ops
    time_kinds: dict[str, dict[str, list[Span]]] = {}
    graphs = {n: lower_graph(sink, d, loc, globs, time_kinds.setdefault(n, {}))
              for n, d in graph_decls.items()}
    clusters = {n: lower_cluster(sink, d, loc, budget) for n, d in cluster_decls.items()}
    if clusters:
        unknown_time_kinds(sink, time_kinds, clusters)
    plans: dict[str, Problem] = {}
    unrunnable: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for n, d in plan_decls.items():
        p = lower_plan(sink, d, graphs, clusters, loc, unrunnable, globs)
        if p is not None:
            plans[n] = p
    sink.raise_if_errors()
    files = tuple(m.file for m in modules)
    spec = Spec(MappingProxyType({k: v for k, v in graphs.items() if v is not None}),
                MappingProxyType({k: v for k, v in clusters.items() if v is not None}),
                MappingProxyType(plans), files)
    return spec, loc


def _plans_written(modules: Sequence[ast.Module]) -> int:
    """The plans `modules` declare, each name once (a name declared twice is E201)."""
    return len({item.name.text for m in modules for item in m.items
                if isinstance(item, ast.PlanDecl)})
