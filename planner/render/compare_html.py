"""The page of `planner compare --html`: per spec and plan, makespan against bandwidth,
memory cap and device count (one line per algorithm, the lower bound as a dashed grey
line, failed runs as × in a band above the plot; a dimension that was not swept gets no
chart, and a sweep of one setting gets a bar chart), the Gantt chart and memory view of
the best plan, a table of wins and a sortable table of every run. The charts and the page
are `render.html`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..files import write_text_atomic
from ..units import format_bytes_of, format_seconds
from .figures import format_gap
from .html import (
    BOUND_COLOUR,
    algo_color,
    bar_chart_svg,
    line_chart_svg,
    page_html,
    plan_section,
    plan_summary,
)
from .svg import esc as _e
from .tables import WINS_BY, WINS_BY_PIPELINE, pipeline_words

if TYPE_CHECKING:
    from ..report.views import CompareReport, CompareRun, SweepAxis, Wins


_OK = ("optimal", "feasible", "fallback")


def _ok(r: Mapping[str, Any]) -> bool:
    ms = r.get("makespan_s")
    return r.get("status") in _OK and isinstance(ms, (int, float)) and math.isfinite(ms)


def _fmt_opt(v: Any, f: Callable[[float], str]) -> str:
    return f(v) if isinstance(v, (int, float)) and math.isfinite(v) else "—"


def _ratio(v: Any) -> str:
    return f"{v:.3f}×" if isinstance(v, (int, float)) and math.isfinite(v) else "—"


#: each swept setting's chart title
_AXIS_TITLES = {"bandwidth": "link bandwidth", "memory": "memory cap (per device)",
                "devices": "devices (the first N)"}


def _sweep_charts(rows: Sequence[CompareRun], algos: Sequence[str],
                  axes: Sequence[SweepAxis], held: Mapping[str, str]) -> str:
    """A line chart per swept setting (the others at `held`, the spec's own value when
    swept, else the least constrained one; where `held` lacks one, its default, else its
    last value); bars per algorithm when nothing was swept."""
    values = {a.name: sorted({str(r[a.name]) for r in rows}, key=a.order.__getitem__)
              for a in axes}
    fixed = {a.name: (held[a.name] if held.get(a.name) in values[a.name] else
                      a.default if a.default in values[a.name] else values[a.name][-1])
             for a in axes}
    colors = {a: algo_color(k) for k, a in enumerate(algos)}
    figures = [_line_figure(rows, algos, colors, a.name, _AXIS_TITLES[a.name],
                            values[a.name], {b.name: fixed[b.name] for b in axes
                                             if b.name != a.name})
               for a in axes if len(values[a.name]) >= 2]
    if not figures:  # one setting: bars
        figures.append(_bar_figure(rows, algos, colors))
    return '<div class="row">' + "".join(figures) + "</div>"


def _line_figure(rows: Sequence[CompareRun], algos: Sequence[str],
                 colors: Mapping[str, str], name: str, title: str, xs: Sequence[str],
                 held: Mapping[str, str]) -> str:
    """One algorithm's series per line over setting `name`'s values `xs`, the other
    settings at `held`; a failed run is a gap with its reason."""
    at = {(str(r["algorithm"]), str(r[name])): r for r in rows
          if all(str(r[o]) == v for o, v in held.items())}
    series = []
    for a in algos:
        ys: list[float | None] = []
        notes: list[str] = []
        for x in xs:
            r = at.get((a, x))
            if r is not None and _ok(r):
                ys.append(r.score or 0.0)
                notes.append(f" ({r['status']})" if r["status"] != "feasible" else "")
            else:
                ys.append(None)
                notes.append(f"{r['status']}: {r.get('reason') or ''}" if r else "not run")
        series.append((a, colors[a], ys, notes))
    bounds = [_bound_at([r for (_, x2), r in at.items() if x2 == x]) for x in xs]
    at_text = ", ".join(f"{o} {v}" for o, v in held.items())
    failed = any(y is None for _, _, ys, _ in series for y in ys)
    return (f'<figure><figcaption>{_e(_measure(rows))} vs {_e(title)}</figcaption>'
            + _series_legend(algos, colors, bound=any(b is not None for b in bounds),
                             failed=failed)
            + line_chart_svg(xs, series, x_title=f"{title} · at {at_text}", bounds=bounds)
            + '</figure>')


def _bar_figure(rows: Sequence[CompareRun], algos: Sequence[str],
                colors: Mapping[str, str]) -> str:
    """One bar per algorithm that ran at the one setting."""
    r0 = rows[0]
    bars = []
    for a in algos:
        r = next((x for x in rows if x["algorithm"] == a), None)
        if r is None:
            continue
        ok = _ok(r)
        bars.append((a, colors[a], (r.score or 0.0) if ok else None,
                     "" if ok else f"{r['status']}: {r.get('reason') or ''}"))
    return (f'<figure><figcaption>{_e(_measure(rows))} per algorithm · bandwidth '
            f'{_e(r0["bandwidth"])}, memory {_e(r0["memory"])}, devices '
            f'{_e(r0["devices"])}</figcaption>'
            f'{bar_chart_svg(bars, bound_s=_bound_at(rows))}</figure>')


def _measure(rows: Sequence[CompareRun]) -> str:
    """What a chart of these rows draws: the makespan, or the iteration of a pipeline."""
    return "Iteration" if any(r.pipeline for r in rows) else "Makespan"


def _by_objective(rows: Sequence[CompareRun]) -> list[tuple[str, list[CompareRun]]]:
    """The rows per objective and micro-batches, each with its heading (none when every
    row is at the spec's own): their charts draw different measures."""
    parts: dict[tuple[str, str], list[CompareRun]] = {}
    for r in rows:
        parts.setdefault((str(r.get("objective") or "spec"),
                          str(r.get("microbatches") or "spec")), []).append(r)
    if list(parts) == [("spec", "spec")]:
        return [("", list(rows))]
    out = []
    for (objective, microbatches), part in parts.items():
        pipeline = pipeline_words(part)
        label = f"objective {objective}" + (
            f" · {pipeline}" if pipeline else (f" · micro-batches {microbatches}"
                                               if microbatches != "spec" else ""))
        out.append((label, part))
    return out


def _bound_at(rows: Sequence[CompareRun]) -> float | None:
    """The lower bound of one setting: the largest of its rows' (each is planner's, raised
    by what that row's algorithm proved, and each is valid for the setting; None if none);
    the iteration's bound for pipeline rows."""
    found = [float(b) for r in rows
             for b in (r.get("iteration_bound_s" if r.pipeline else "lower_bound_s"),)
             if isinstance(b, (int, float)) and math.isfinite(b) and b > 0]
    return max(found) if found else None


def _one_pass_bound(row: CompareRun) -> float | None:
    """One pass's lower bound of `row` (a pipeline's row too), None if it has none."""
    b = row.get("lower_bound_s")
    return float(b) if isinstance(b, (int, float)) and math.isfinite(b) and b > 0 else None


def _series_legend(algos: Sequence[str], colors: Mapping[str, str], *, bound: bool,
                   failed: bool) -> str:
    items = "".join(f'<span data-series="{_e(a)}"><i style="background:{colors[a]}"></i>'
                    f'{_e(a)}</span>' for a in algos)
    if bound:
        items += (f'<span data-series="lower bound"><i class="rule dashed" '
                  f'style="border-color:{BOUND_COLOUR}"></i>lower bound</span>')
    if failed:
        items += ('<span title="no valid plan: infeasible, an error or a time-out">'
                  '<i class="cross">×</i>failed run (hover for why)</span>')
    return f'<div class="legend">{items}</div>'


def _wins_table(stats: Sequence[Wins], pipeline: bool) -> str:
    body = "".join(
        f'<tr><td class="l">{_e(s.algorithm)}</td><td>{s.wins}</td><td>{s.groups}</td>'
        f'<td>{s.ok}</td><td>{s.failed}</td></tr>' for s in stats)
    return ('<table class="wins"><thead><tr><th class="l">algorithm</th><th>wins</th>'
            '<th>settings</th><th>ok</th><th>failed</th></tr></thead>'
            f'<tbody>{body}</tbody></table>'
            '<p class="note">A win is a (spec, plan, setting) where the algorithm had the '
            f'{WINS_BY_PIPELINE if pipeline else WINS_BY}; ties count for each.</p>')


def _runs_table(report: CompareReport) -> str:
    cols = [("spec", "l"), ("plan", "l"), ("bandwidth", ""), ("memory", ""), ("devices", ""),
            ("algorithm", "l"), ("makespan", ""), ("× best", ""), ("× bound", ""),
            ("gap", ""), ("planning", ""), ("devices used", ""), ("peak / cap", ""),
            ("status", "l"), ("reason", "l")]
    settings, pipeline = report.setting_columns, report.pipeline_columns
    if settings:
        cols[5:5] = [("objective", ""), ("micro-batches", "")]
    if pipeline:  # beside the pipeline's figures, one pass's gap says so; T gap is theirs
        cols[cols.index(("gap", ""))] = ("gap (one pass)", "")
        # a pipeline row's best is by iteration: its ratio sits beside that, not the makespan
        cols[cols.index(("× best", ""))] = ("× best (makespan)", "")
        cols[-2:-2] = [("iteration", ""), ("× best (iteration)", ""), ("T", ""),
                       ("T bound", ""), ("T gap", ""),
                       ("bubble", ""), ("pipe peak / cap", ""), ("mem fits", "")]
    head = "".join(f'<th class="{c}">{_e(n)}</th>' for n, c in cols)
    # a setting sorts by its axis' order (by value): its label's text sorted `4 Gbps` after
    # `2 GB/s` (parseFloat), and `6 GiB` before `50%`
    order = {axis.name: axis.order for axis in report.axes}
    out = []
    for r in report.runs:
        best = ' class="best"' if r.get("ratio_to_best") == 1.0 else ""
        out.append(f"<tr{best}>" + "".join(
            f'<td class="{c}" data-v="{_e(v)}">{_e(text)}</td>'
            for text, v, c in _run_cells(r, order, settings=settings, pipeline=pipeline))
            + "</tr>")
    return (f'<table class="sortable runs"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(out)}</tbody></table>')


# complex: a cell per column of the runs table, each with its missing-value fallback (an `or`,
# a conditional); the list follows `_runs_table`'s header column for column
def _run_cells(r: CompareRun, order: Mapping[str, Mapping[str, int]], *, settings: bool,
               pipeline: bool) -> list[tuple[Any, Any, str]]:
    """One run's cells, each (text, sort value, class), in `_runs_table`'s columns (a
    setting's sort value its place in `order`, its axis' order by value); in a table with
    pipeline columns, its `ratio_to_best` beside the figure it compares."""
    ms = r.get("makespan_s")
    ratio = (_ratio(r.get("ratio_to_best")), r.get("ratio_to_best") or "", "")
    peak, cap = r.get("peak_memory_bytes"), r.get("memory_cap_bytes")
    mem = (" / ".join(format_bytes_of(peak, cap))
           if isinstance(peak, int) and isinstance(cap, int) else "—")
    cells = [
        (r["spec"], r["spec"], "l"), (r["plan"], r["plan"], "l"),
        *((r[name], order.get(name, {}).get(r[name], r[name]), "")
          for name in ("bandwidth", "memory", "devices")),
        (r["algorithm"], r["algorithm"], "l"),
        (_fmt_opt(ms, format_seconds), ms if _ok(r) else "", ""),
        ("—", "", "") if pipeline and r.pipeline else ratio,
        (_ratio(r.get("ratio_to_bound")), r.get("ratio_to_bound") or "", ""),
        (format_gap(r.get("gap")), r.get("gap") if r.get("gap") is not None else "", ""),
        (_fmt_opt(r.get("planning_s"), format_seconds), r.get("planning_s") or "", ""),
        (r.get("devices_used") if r.get("devices_used") is not None else "—",
         r.get("devices_used") or "", ""),
        (mem, peak / cap if isinstance(peak, int) and cap else "", ""),
        (r["status"], r["status"], "l" + ("" if _ok(r) else " status-bad")),
        (r.get("reason") or "", r.get("reason") or "", "reason"),
    ]
    if settings:
        cells[5:5] = [(r.get("objective") or "", r.get("objective") or "", ""),
                      (r.get("microbatches") or "", r.get("microbatches") or "", "")]
    if pipeline:
        cells[-2:-2] = _pipeline_cells(r, ratio if r.pipeline else ("—", "", ""))
    return cells


def _pipeline_cells(r: Mapping[str, Any], ratio: tuple[Any, Any, str]
                    ) -> list[tuple[Any, Any, str]]:
    """A pipeline run's iteration and its `ratio` to the best, period, period bound and gap,
    bubble, memory (its most loaded device's, as the pipeline holds it) and fit."""
    fits = r.get("pipeline_fits")
    peak, cap = r.get("pipeline_memory_bytes"), r.get("pipeline_memory_cap_bytes")
    held = (" / ".join(format_bytes_of(peak, cap))
            if isinstance(peak, int) and isinstance(cap, int) else "—")
    return [_seconds_cell(r.get("iteration_s")), ratio, _seconds_cell(r.get("period_s")),
            _seconds_cell(r.get("period_bound_s")),
            (format_gap(r.get("period_gap")),
             r.get("period_gap") if r.get("period_gap") is not None else "", ""),
            (_fmt_opt(r.get("bubble_fraction"), lambda x: f"{x:.1%}"),
             r.get("bubble_fraction") or "", ""),
            (held, peak / cap if isinstance(peak, int) and isinstance(cap, int) and cap
             else "", ""),
            ("—" if fits is None else ("yes" if fits else "no"), str(fits or ""), "")]


def _seconds_cell(v: Any) -> tuple[str, Any, str]:
    return (_fmt_opt(v, format_seconds), v if v is not None else "", "")


def compare_report_html(report: CompareReport, *, title: str = "planner compare") -> str:
    """The HTML page of a sweep: charts per spec and plan, best plans, wins, every run
    (`report`: `planner.report.compare.compare_report`, its best plans the ones drawn).
    """
    rows, algos = report.runs, report.algorithms
    specs: dict[tuple[str, str], list[CompareRun]] = {}
    for r in rows:
        specs.setdefault((str(r["spec"]), str(r["plan"])), []).append(r)
    view_of = {(str(v.run["spec"]), str(v.run["plan"])): v for v in report.best}
    ok = sum(1 for r in rows if _ok(r))
    body = [f"<h1>{_e(title)}</h1>",
            (f'<p class="meta">{len(rows)} runs ({ok} with a valid plan, {len(rows) - ok} '
            f'failed) · {len(specs)} plan(s) · algorithms: {_e(", ".join(algos))}</p>'),
            "<h3>Wins</h3>", _wins_table(report.wins, report.pipeline_columns)]
    for (spec, plan), members in specs.items():
        body.append(f'<h2>{_e(spec)} · plan {_e(plan)}</h2>')
        first = members[0]
        if first.get("n_ops") is not None:
            body.append(f'<p class="meta">{first["n_ops"]} ops, {first["n_edges"]} edges; '
                        'the lower bound of each setting is drawn dashed</p>')
        for label, part in _by_objective(members):
            if label:
                body.append(f"<h3>{_e(label)}</h3>")
            body.append(_sweep_charts(part, algos, report.axes,
                                      report.held.get((spec, plan), {})))
        view = view_of.get((spec, plan))
        if view is not None:
            r = view.run
            body.append(f'<h3>Best plan at bandwidth {_e(r["bandwidth"])}, memory '
                        f'{_e(r["memory"])}, devices {_e(r["devices"])}: '
                        f'{_e(r["algorithm"])}</h3>')
            body.append(_sweep_best_note(members, r))
            body.append(plan_summary(view.problem, view.result))
            # the Gantt is one pass's, a pipeline's too: its mark is one pass's bound
            body.append(plan_section(view.problem, view.result, _one_pass_bound(r)))
    body.append(f"<details><summary>All runs ({len(rows)})</summary>{_runs_table(report)}"
                "</details>")
    return page_html(title, "\n".join(body))


def _sweep_best_note(members: Sequence[CompareRun], shown: CompareRun) -> str:
    """Which setting the plan shown is the best of, and the fastest run of the whole sweep
    when that is another (a sweep's best is not the best at the spec's own setting)."""
    ok = [m for m in members if m.ok and m.score is not None and m.pipeline == shown.pipeline]
    if not ok:
        return ""
    best = min(ok, key=lambda m: m.score or 0.0)
    if best.score == shown.score:
        return '<p class="meta">the fastest run of the whole sweep</p>'
    return (f'<p class="meta">the best run at this setting; the fastest of the sweep: '
            f'{_e(best["algorithm"])} at bandwidth {_e(best["bandwidth"])}, memory '
            f'{_e(best["memory"])}, devices {_e(best["devices"])} '
            f'({_e(format_seconds(best.score or 0.0))})</p>')


def write_compare_html(path: str, report: CompareReport, *,
                       title: str = "planner compare") -> None:
    """Write `compare_report_html` atomically (`planner compare --html`)."""
    write_text_atomic(path, compare_report_html(report, title=title))
