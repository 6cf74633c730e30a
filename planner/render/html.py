"""Self-contained HTML reports: inline SVG charts, inline CSS and JavaScript, no network.

Two pages:

- `compare_html.write_compare_html` (`planner compare --html`): per spec and plan,
  makespan against bandwidth, memory cap and device count, the best plan, the tables of
  wins and of every run (that module's docstring).
- `write_plan_html` (`planner solve --html`): the key figures (algorithm, status,
  makespan, bound, gap, planning time), the Gantt chart and memory view of one plan;
  under `objective pipeline`, first the pipeline's figures, its micro-batch timeline
  (`<svg data-chart="pipeline">`, one `.task` bar per device, micro-batch and direction)
  and the comparison table (`pipeline_html`).

The charts are hand-written SVG, drawn here in Python, not a charting library: the page
reads fine with JavaScript off, the same input gives the same bytes, and the Gantt chart
needs aggregation at scale whichever library draws it (`timeline`). The style and the
script are `page.css` and `page.js` beside this module, inlined. The script only adds
tooltips, legend toggles (click an algorithm to hide its line), table sorting, and
`data-*` counts and chart boxes on `<body>` for automated checks. Every chart is an
`<svg class="chart" data-chart="line|bar|gantt|memory">`; its marks carry the classes
`pt` (data points), `fail` (failed runs), `lb` (lower bounds), `op` (Gantt bars), `agg`
and `bin` (aggregated Gantt columns), `xfer` (transfers) and `mem` (memory curves).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, TypeGuard

from ..files import write_text_atomic
from ..model import Problem
from ..simulate import SimResult
from ..units import format_seconds
from ..version import __version__
from .figures import bound_text, feasible_label, one_pass
from .svg import coord as _f
from .svg import esc as _e
from .svg import log_ticks, nice_ticks, svg_open, tick_seconds
from .timeline import (
    BIN_PX,
    MAX_ARROWS,
    detailed,
    gantt_svg,
    legend_html,
    memory_svg,
    plan_legend,
    time_axis,
    transfers_table,
)

if TYPE_CHECKING:
    from ..report.views import PipelineView

__all__ = [
    "bar_chart_svg", "gantt_svg", "line_chart_svg", "memory_svg", "page_html",
    "plan_report_html", "write_plan_html",
]

#: algorithm line colours (colour-blind friendly, Okabe–Ito then Tableau)
PALETTE: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
    "#8c564b", "#7f7f7f", "#bcbd22", "#17becf",
)
BOUND_COLOUR = "#6b7280"



@functools.cache
def _asset(name: str) -> str:
    """A file of the page (`page.css`, `page.js`, beside this module), inlined: the page
    loads nothing."""
    return resources.files("planner.render").joinpath(name).read_text("utf-8")


def algo_color(index: int) -> str:
    """The line colour of the `index`-th algorithm."""
    return PALETTE[index % len(PALETTE)]


def page_html(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<meta name=\"generator\" content=\"planner {_e(__version__)}\">\n"
        f"<title>{_e(title)}</title>\n<style>{_asset('page.css')}</style>\n</head>\n<body>\n"
        f"{body}\n<div id=\"tip\"></div>\n<script>{_asset('page.js')}</script>\n</body>\n</html>\n"
    )


# -- line and bar charts ------------------------------------------------------------------


def _positive(v: float | None) -> TypeGuard[float]:
    return v is not None and math.isfinite(v) and v > 0


def line_chart_svg(
    x_labels: Sequence[str],
    series: Sequence[tuple[str, str, Sequence[float | None], Sequence[str]]],
    *,
    x_title: str,
    y_title: str = "makespan",
    bounds: Sequence[float | None] = (),
    width: int = 540,
    height: int = 300,
    fmt: Callable[[float], str] = format_seconds,
    tick: Callable[[float], str] = tick_seconds,
) -> str:
    """A line chart over categorical x values; one series per (name, colour, ys, notes).

    `ys[k]` is None for a failed run: the line breaks there and an × marks it in a band
    above the plot (its tooltip is `notes[k]`). `bounds[k]`, the lower bound at x k, is a
    dashed grey line. The y axis is logarithmic when values span more than 30×, and spans
    only the data (with a margin), bounds included.
    """
    left, right, bottom = 70, 16, 44
    fails = any(y is None or not math.isfinite(y) or y <= 0
                for _, _, ys, _ in series for y in ys)
    band = 18 if fails else 0
    top = 10 + band
    pw, ph = width - left - right, height - top - bottom
    values = [y for _, _, ys, _ in series for y in ys if _positive(y)]
    values += [b for b in bounds if _positive(b)]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    log = bool(values) and hi / lo > 30
    if log:
        lo, hi = lo / 1.25, hi * 1.25
        ticks = log_ticks(lo, hi)

        def ymap(v: float) -> float:
            return top + ph - ph * (math.log10(v) - math.log10(lo)) / (
                math.log10(hi) - math.log10(lo))
    else:
        lo, hi = 0.0, (hi * 1.08 if values else 1.0)
        ticks = nice_ticks(lo, hi)

        def ymap(v: float) -> float:
            return top + ph - ph * (v - lo) / (hi - lo)
    n = len(x_labels)

    def xmap(k: int) -> float:
        return left + (pw * (k + 0.5) / n if n else 0)

    out = [svg_open("line", width, height), '<g class="axis">']
    for t in ticks:
        y = ymap(t)
        out.append(f'<line class="gridline" x1="{left}" x2="{left + pw}" y1="{_f(y)}" '
                   f'y2="{_f(y)}"/><text x="{left - 6}" y="{_f(y + 4)}" '
                   f'text-anchor="end">{_e(tick(t))}</text>')
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}"/>'
               f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}"/>')
    if band:
        out.append(f'<rect class="failband" x="{left}" y="{top - band}" width="{pw}" '
                   f'height="{band - 3}"/><text class="muted" x="{left - 6}" '
                   f'y="{top - band + 11}" text-anchor="end">failed</text>')
    for k, label in enumerate(x_labels):
        out.append(f'<text x="{_f(xmap(k))}" y="{top + ph + 16}" text-anchor="middle">'
                   f'{_e(label)}</text>')
    out.append(f'<text class="muted" x="{left + pw / 2}" y="{height - 6}" '
               f'text-anchor="middle">{_e(x_title)}</text>')
    out.append(f'<text class="muted" transform="translate(14,{top + ph / 2}) rotate(-90)" '
               f'text-anchor="middle">{_e(y_title)}{" (log)" if log else ""}</text>')
    out.append('</g>')
    out += _bound_line(bounds, xmap, ymap, x_labels, fmt)
    for s_index, (name, color, ys, notes) in enumerate(series):
        # a small horizontal offset per series keeps equal values from hiding each other
        dx = (s_index - (len(series) - 1) / 2) * 3.0
        out += _series_svg(name, color, ys, notes, dx, xmap, ymap, x_labels, fmt,
                           top - band / 2 - 1)
    out.append('</svg>')
    return "".join(out)


def _series_svg(name: str, color: str, ys: Sequence[float | None], notes: Sequence[str],
                dx: float, xmap: Callable[[int], float], ymap: Callable[[float], float],
                x_labels: Sequence[str], fmt: Callable[[float], str], fail_y: float
                ) -> list[str]:
    """One series of `line_chart_svg`: its line, a dot per value and a cross at height
    `fail_y` per failed run, moved `dx` to the side."""

    def sx(k: int) -> float:
        return xmap(k) + dx

    out = [f'<g class="series" data-series="{_e(name)}">']
    d: list[str] = []
    pen_up = True
    for k, v in enumerate(ys):
        if not _positive(v):
            pen_up = True
            continue
        d.append(f'{"M" if pen_up else "L"}{_f(sx(k))},{_f(ymap(v))}')
        pen_up = False
    if d:
        out.append(f'<path d="{" ".join(d)}" stroke="{color}"/>')
    for k, v in enumerate(ys):
        note = notes[k] if k < len(notes) else ""
        if not _positive(v):
            x0 = xmap(k) + dx * 2.5  # crosses are wider than dots
            y0 = fail_y
            out.append(f'<path class="fail" data-series="{_e(name)}" stroke="{color}" '
                       f'd="M{_f(x0 - 3)},{_f(y0 - 3)}l6,6m0,-6l-6,6" data-tip="{_e(name)}'
                       f' · {_e(x_labels[k])}: failed\n{_e(note)}"/>')
        else:
            out.append(f'<circle class="pt" data-series="{_e(name)}" cx="{_f(sx(k))}" '
                       f'cy="{_f(ymap(v))}" r="3.6" fill="{color}" data-tip="{_e(name)} · '
                       f'{_e(x_labels[k])}\n{_e(fmt(v))}{_e(note)}"/>')
    out.append('</g>')
    return out


def _bound_line(bounds: Sequence[float | None], xmap: Callable[[int], float],
                ymap: Callable[[float], float], x_labels: Sequence[str],
                fmt: Callable[[float], str]) -> list[str]:
    """The lower bound per x as a dashed grey line with small square marks."""
    pts = [(k, b) for k, b in enumerate(bounds) if _positive(b)]
    if not pts:
        return []
    d = " ".join(f'{"M" if j == 0 else "L"}{_f(xmap(k))},{_f(ymap(b))}'
                 for j, (k, b) in enumerate(pts) if b is not None)
    marks = "".join(f'<rect x="{_f(xmap(k) - 2.5)}" y="{_f(ymap(b) - 2.5)}" width="5" '
                    f'height="5" data-tip="lower bound · {_e(x_labels[k])}\n{_e(fmt(b))}"/>'
                    for k, b in pts if b is not None)
    return [f'<g class="lb" data-series="lower bound"><path d="{d}"/>{marks}</g>']


def bar_chart_svg(bars: Sequence[tuple[str, str, float | None, str]], *, width: int = 540,
                  bound_s: float | None = None,
                  fmt: Callable[[float], str] = format_seconds) -> str:
    """Horizontal bars (name, colour, value or None for a failed run, note), with the lower
    bound as a dashed vertical line."""
    left, right, top, row = 110, 80, 8, 22
    height = top * 2 + row * max(1, len(bars)) + (16 if _positive(bound_s) else 0)
    pw = width - left - right
    hi = max([v for _, _, v, _ in bars if v is not None]
             + ([bound_s] if bound_s is not None and _positive(bound_s) else []),
             default=1.0) or 1.0
    out = [svg_open("bar", width, height)]
    for k, (name, color, v, note) in enumerate(bars):
        y = top + k * row
        out.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{_e(name)}</text>')
        if v is None:
            out.append(f'<text class="muted fail" x="{left + 4}" y="{y + 15}" '
                       f'data-tip="{_e(name)}\n{_e(note)}">× failed: {_e(note[:60])}</text>')
            continue
        w = max(1.0, pw * v / hi)
        out.append(f'<rect class="pt" data-series="{_e(name)}" x="{left}" y="{y + 3}" '
                   f'width="{_f(w)}" height="{row - 6}" fill="{color}" '
                   f'data-tip="{_e(name)}\n{_e(fmt(v))}{_e(note)}"/>')
        out.append(f'<text x="{_f(left + w + 5)}" y="{y + 15}">{_e(fmt(v))}</text>')
    if bound_s is not None and _positive(bound_s):
        x = _f(left + pw * bound_s / hi)
        y_end = top + row * max(1, len(bars))
        out.append(f'<g class="lb"><path d="M{x},{top}V{y_end}"/><text class="muted" '
                   f'x="{x}" y="{y_end + 12}" text-anchor="middle">lower bound '
                   f'{_e(fmt(bound_s))}</text></g>')
    out.append('</svg>')
    return "".join(out)


# -- one plan -----------------------------------------------------------------------------


def plan_section(problem: Problem, result: SimResult, bound_s: float | None = None) -> str:
    legend = plan_legend(problem, result)
    axis = time_axis(result)
    n_tr = len(result.sent())  # the transfers the timeline draws
    bars = detailed(result, axis)
    arrows = bars and n_tr <= MAX_ARROWS
    how = ("one bar per op" if bars else
           f"too many ops for one bar each: per {BIN_PX} px column, how busy the device was, "
           "stacked by op type (hover for the op groups)")
    what = (f"{n_tr} transfers drawn as arrows" if arrows and n_tr else
            f"{n_tr} transfers, summed per device pair below" if n_tr else "no transfers")
    table = "" if arrows else transfers_table(problem, result)
    return (f'<figure><figcaption>Gantt chart: devices × time</figcaption>'
            f'{legend_html(legend, bound=_positive(bound_s))}'
            f'{gantt_svg(problem, result, legend=legend, bound_s=bound_s)}'
            f'<p class="note">{_e(how)}; {_e(what)}; colours: op types (the last part of '
            f'the op name), the most compute time first.</p></figure>'
            + f'<figure><figcaption>Memory over time per device</figcaption>'
            f'{memory_svg(problem, result)}</figure>'
            + (f'<figure><figcaption>Transfers per device pair</figcaption>{table}</figure>'
               if table else ""))


def plan_summary(problem: Problem, result: SimResult) -> str:
    ms = format_seconds(result.makespan_s) if math.isfinite(result.makespan_s) else "∞"
    label = feasible_label(problem)  # under `objective pipeline`: one pass's, it says
    feasible = (label if result.feasible else
                f'<span class="status-bad">in{label}: {len(result.violations)} '
                f'violation(s)</span>')
    return (f'<p class="meta">{len(problem.graph.ops)} ops, {len(problem.graph.edges)} '
            f'edges, {len(problem.cluster.devices)} devices · memory {_e(problem.memory_model)}'
            f', contention {_e(problem.contention)} · '
            f'{_e(one_pass(problem, "simulated makespan"))} <b>{_e(ms)}</b> · '
            f'{feasible}</p>')


def _whose(problem: Problem, label: str) -> str:
    """A key figure's label: one pass's makespan, bound and gap say so (`one_pass`)."""
    return one_pass(problem, label) if label in ("makespan", "lower bound", "gap") else label


def plan_report_html(problem: Problem, result: SimResult, *, title: str | None = None,
                     extra: Mapping[str, str] | None = None,
                     bound_s: float | None = None,
                     pipeline: PipelineView | None = None) -> str:
    """The HTML page of one simulated plan: key figures, Gantt chart, memory view.

    `extra` (label → text: algorithm, status, lower bound, gap, planning time) are shown
    as key figures after the makespan; `bound_s` is marked on the Gantt chart. `pipeline`
    (under `objective pipeline`) adds the pipeline's figures, micro-batch timeline and
    comparison before the one-pass charts (`render.pipeline_html`)."""
    title = title or f"plan {problem.name}"
    ms = format_seconds(result.makespan_s) if math.isfinite(result.makespan_s) else "∞"
    # under `objective pipeline` the figures of one pass say so (the pipeline's follow)
    figures = "".join(f'<div><span>{_e(_whose(problem, k))}</span><b>{_e(v)}</b></div>'
                      for k, v in {"makespan": ms, **(extra or {})}.items())
    claim = (f'<p class="note">{_e(one_pass(problem, "Lower bound"))} '
             f'{_e(bound_text(result.makespan_s, bound_s, result.feasible))}.</p>'
             if _positive(bound_s) else "")
    body = (f"<h1>{_e(title)}</h1>{plan_summary(problem, result)}"
            f'<div class="figures">{figures}</div>{claim}'
            + _violations(problem, result) + _pipeline_section(problem, pipeline, result)
            + plan_section(problem, result, bound_s))
    return page_html(title, body)


def _pipeline_section(problem: Problem, pipeline: PipelineView | None,
                      result: SimResult) -> str:
    if pipeline is None:
        return ""
    from .pipeline_html import pipeline_section_html  # lazy: only pipeline plans need it

    return pipeline_section_html(problem, pipeline, result)


def _violations(problem: Problem, result: SimResult) -> str:
    if not result.violations:
        return ""
    items = "".join(f"<li>{_e(v.kind)}: {_e(v.message)}</li>" for v in result.violations[:20])
    more = (f"<li>… and {len(result.violations) - 20} more</li>"
            if len(result.violations) > 20 else "")
    return f'<ul class="status-bad">{items}{more}</ul>'


def write_plan_html(path: str, problem: Problem, result: SimResult,
                    extra: Mapping[str, str] | None = None,
                    bound_s: float | None = None,
                    pipeline: PipelineView | None = None) -> None:
    """Write `plan_report_html` atomically (`planner solve --html`); `extra` figures
    (algorithm, status, lower bound, gap, planning time) go in its summary, `pipeline` adds
    the pipeline section."""
    write_text_atomic(path, plan_report_html(problem, result, extra=extra, bound_s=bound_s,
                                             pipeline=pipeline))
