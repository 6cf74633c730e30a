"""Self-contained HTML reports: inline SVG charts, inline CSS and JavaScript, no network.

Two pages:

- `write_compare_html` (`planner compare --html`): per spec and plan, makespan against
  bandwidth, memory cap and device count (one line per algorithm, the lower bound as a
  dashed grey line, failed runs as × in a band above the plot; a dimension that was not
  swept gets no chart, and a sweep of one setting gets a bar chart), the Gantt chart and
  memory view of the best plan, a table of wins and a sortable table of every run.
- `write_plan_html` (`planner solve --html`): the key figures (algorithm, status,
  makespan, bound, gap, planning time), the Gantt chart and memory view of one plan;
  under `objective pipeline`, first the pipeline's figures, its micro-batch timeline
  (`<svg data-chart="pipeline">`, one `.task` bar per device, micro-batch and direction)
  and the comparison table (`pipeline_html`).

The charts are hand-written SVG, drawn here in Python, not a charting library: the page
reads fine with JavaScript off, the same input gives the same bytes, and the Gantt chart
needs aggregation at scale whichever library draws it (`timeline`). The script only adds
tooltips, legend toggles (click an algorithm to hide its line), table sorting, and
`data-*` counts and chart boxes on `<body>` for automated checks. Every chart is an
`<svg class="chart" data-chart="line|bar|gantt|memory">`; its marks carry the classes
`pt` (data points), `fail` (failed runs), `lb` (lower bounds), `op` (Gantt bars), `agg`
and `bin` (aggregated Gantt columns), `xfer` (transfers) and `mem` (memory curves).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from ..files import write_text_atomic
from ..model import Problem
from ..simulate import SimResult
from ..units import format_bytes, format_seconds
from ..version import __version__
from .figures import bound_text, format_gap
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
    from ..report.views import CompareReport, CompareRun, PipelineView, SweepAxis, Wins

__all__ = [
    "bar_chart_svg", "compare_report_html", "gantt_svg", "line_chart_svg", "memory_svg",
    "plan_report_html", "write_compare_html", "write_plan_html",
]

#: algorithm line colours (colour-blind friendly, Okabe–Ito then Tableau)
PALETTE: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
    "#8c564b", "#7f7f7f", "#bcbd22", "#17becf",
)
_OK = ("optimal", "feasible", "fallback")
BOUND_COLOUR = "#6b7280"

_CSS = """
:root { --fg:#1d2430; --muted:#5b6575; --grid:#e3e7ee; --bg:#fff; --accent:#0072B2; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--fg); background: var(--bg); margin: 0 auto; padding: 20px 28px 60px;
       max-width: 1180px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 34px 0 6px;
  border-bottom: 1px solid var(--grid); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.meta { color: var(--muted); margin: 0 0 14px; }
.row { display: flex; flex-wrap: wrap; gap: 18px; } .row figure { max-width: 560px; }
figure { margin: 0 0 10px; } figcaption { font-weight: 600; margin: 4px 0; }
svg.chart { display: block; background: #fff; overflow: visible; }
svg text { font: 11px system-ui, "DejaVu Sans", sans-serif; fill: var(--fg); }
svg .axis line, svg .axis path { stroke: #9aa3b2; }
svg .gridline { stroke: var(--grid); }
svg .muted { fill: var(--muted); }
svg .series path { fill: none; stroke-width: 2; }
svg .lb path { fill: none; stroke: #6b7280; stroke-width: 1.5; stroke-dasharray: 5 3; }
svg .lb rect { fill: #6b7280; }
svg .pt { stroke: #fff; stroke-width: 1; }
svg .fail { stroke-width: 2; }
svg .failband { fill: #fdf1ec; }
svg .op { stroke: rgba(0,0,0,.3); stroke-width: .5; }
svg .bin { fill: transparent; }
svg .bin:hover { fill: rgba(0,0,0,.08); }
svg .oplabel { pointer-events: none; font-size: 10px; }
svg .xfer { stroke: rgba(40,40,40,.5); stroke-width: 1; }
svg .mem { fill: rgba(0,114,178,.18); stroke: #0072B2; stroke-width: 1.2; }
svg .mem.over { fill: rgba(213,94,0,.2); stroke: #D55E00; }
svg .lane { fill: #f5f7fa; }
svg .cap { stroke: #D55E00; stroke-dasharray: 4 3; stroke-width: 1.2; }
svg .cap-label { fill: #b33c00; }
svg .ms-mark { stroke: #1d2430; stroke-width: 1.2; }
svg .lb-mark { stroke: #b33c00; stroke-width: 1.2; stroke-dasharray: 4 3; }
svg .lb-label { fill: #b33c00; }
.hidden { display: none; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 2px 0 6px; font-size: 12px; }
.legend span[data-series] { cursor: pointer; user-select: none; }
.legend span.off { opacity: .35; }
.legend i { display: inline-block; width: 18px; height: 3px; vertical-align: middle;
  margin-right: 5px; }
.legend.cats i { height: 11px; width: 11px; border-radius: 2px; }
.legend i.rule { width: 14px; height: 0; border-top: 2px solid #1d2430; border-radius: 0; }
.legend i.rule.dashed { border-top-style: dashed; }
.legend i.cross { width: auto; height: auto; background: none; font-style: normal;
  font-weight: 700; color: #b33c00; }
.legend small { color: var(--muted); }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr));
  gap: 8px; margin: 8px 0 14px; }
.figures div { border: 1px solid var(--grid); border-radius: 4px; padding: 6px 10px; }
.figures b { display: block; font-size: 16px; } .figures span { color: var(--muted);
  font-size: 12px; }
table { border-collapse: collapse; font-size: 12.5px; margin: 6px 0; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--grid); text-align: right;
  white-space: nowrap; }
th { background: #f5f7fa; cursor: pointer; position: sticky; top: 0; }
td.l, th.l { text-align: left; } td.reason { white-space: normal; max-width: 420px;
  color: var(--muted); text-align: left; }
.meter { display: inline-block; height: 9px; background: #56B4E9; }
tr.best td { font-weight: 600; }
.status-bad { color: #b33c00; } .note { color: var(--muted); font-size: 12px; }
details summary { cursor: pointer; margin: 10px 0; font-weight: 600; }
#tip { position: fixed; pointer-events: none; background: rgba(29,36,48,.94); color: #fff;
  padding: 5px 8px; border-radius: 4px; font-size: 12px; white-space: pre; display: none;
  z-index: 10; }
"""

_JS = """
(function () {
  'use strict';
  try { main(); } catch (err) {
    document.body.setAttribute('data-js-error', String(err && err.message || err));
    console.error('planner report: ' + err);
  }
  function main() {
  var tip = document.getElementById('tip');
  function show(e) {
    var el = e.target.closest ? e.target.closest('[data-tip]') : null;
    if (!el) { tip.style.display = 'none'; return; }
    tip.textContent = el.getAttribute('data-tip');
    tip.style.display = 'block';
    var x = e.clientX + 14, y = e.clientY + 12;
    if (x + tip.offsetWidth > window.innerWidth) { x = e.clientX - tip.offsetWidth - 10; }
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  }
  document.addEventListener('mousemove', show);
  document.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  Array.prototype.forEach.call(document.querySelectorAll('.legend [data-series]'),
    function (item) {
      item.addEventListener('click', function () {
        var fig = item.closest('figure'), s = item.getAttribute('data-series');
        item.classList.toggle('off');
        Array.prototype.forEach.call(fig.querySelectorAll('svg [data-series]'), function (el) {
          if (el.getAttribute('data-series') === s) { el.classList.toggle('hidden'); }
        });
      });
    });
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (t) {
    Array.prototype.forEach.call(t.querySelectorAll('th'), function (th, col) {
      th.addEventListener('click', function () {
        var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var dir = th.getAttribute('data-dir') === 'asc' ? -1 : 1;
        th.setAttribute('data-dir', dir === 1 ? 'asc' : 'desc');
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
          var nx = parseFloat(x), ny = parseFloat(y);
          if (!isNaN(nx) && !isNaN(ny)) { return (nx - ny) * dir; }
          return String(x).localeCompare(String(y)) * dir;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var count = function (sel) { return document.querySelectorAll(sel).length; };
  var b = document.body;
  b.setAttribute('data-charts', count('svg.chart'));
  b.setAttribute('data-points', count('svg.chart .pt'));
  b.setAttribute('data-ops', count('svg.chart .op'));
  b.setAttribute('data-bins', count('svg.chart .bin'));
  b.setAttribute('data-transfers', count('svg.chart .xfer'));
  // where each chart is on the page, for screenshot checks
  var boxes = Array.prototype.map.call(document.querySelectorAll('svg.chart'), function (c) {
    var r = c.getBoundingClientRect();
    return [c.getAttribute('data-chart'), Math.round(r.left + window.scrollX),
            Math.round(r.top + window.scrollY), Math.round(r.width),
            Math.round(r.height)].join(':');
  });
  b.setAttribute('data-boxes', boxes.join(' '));
  b.setAttribute('data-height', Math.ceil(document.documentElement.scrollHeight));
  b.setAttribute('data-ready', '1');
  }
})();
"""


def algo_color(index: int) -> str:
    """The line colour of the `index`-th algorithm."""
    return PALETTE[index % len(PALETTE)]


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<meta name=\"generator\" content=\"planner {_e(__version__)}\">\n"
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f"{body}\n<div id=\"tip\"></div>\n<script>{_JS}</script>\n</body>\n</html>\n"
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


def _plan_section(problem: Problem, result: SimResult, bound_s: float | None = None) -> str:
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


def _plan_summary(problem: Problem, result: SimResult) -> str:
    ms = format_seconds(result.makespan_s) if math.isfinite(result.makespan_s) else "∞"
    feasible = ("feasible" if result.feasible else
                f'<span class="status-bad">infeasible: {len(result.violations)} '
                f'violation(s)</span>')
    return (f'<p class="meta">{len(problem.graph.ops)} ops, {len(problem.graph.edges)} '
            f'edges, {len(problem.cluster.devices)} devices · memory {_e(problem.memory_model)}'
            f', contention {_e(problem.contention)} · simulated makespan <b>{_e(ms)}</b> · '
            f'{feasible}</p>')


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
    figures = "".join(f'<div><span>{_e(k)}</span><b>{_e(v)}</b></div>'
                      for k, v in {"makespan": ms, **(extra or {})}.items())
    claim = (f'<p class="note">Lower bound {_e(bound_text(result.makespan_s, bound_s))}.</p>'
             if _positive(bound_s) else "")
    body = (f"<h1>{_e(title)}</h1>{_plan_summary(problem, result)}"
            f'<div class="figures">{figures}</div>{claim}'
            + _violations(problem, result) + _pipeline_section(problem, pipeline)
            + _plan_section(problem, result, bound_s))
    return _page(title, body)


def _pipeline_section(problem: Problem, pipeline: PipelineView | None) -> str:
    if pipeline is None:
        return ""
    from .pipeline_html import pipeline_section_html  # lazy: only pipeline plans need it

    return pipeline_section_html(problem, pipeline)


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


# -- the compare report -------------------------------------------------------------------


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
                  axes: Sequence[SweepAxis]) -> str:
    """A line chart per swept setting (the others held at their default, else their last
    value); bars per algorithm when nothing was swept."""
    values = {a.name: sorted({str(r[a.name]) for r in rows}, key=a.order.__getitem__)
              for a in axes}
    fixed = {a.name: (a.default if a.default in values[a.name] else values[a.name][-1])
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
        piped = next((r for r in part if r.pipeline), None)
        label = f"objective {objective}" + (
            f" · {piped['n_microbatches']} micro-batches, {piped['schedule']}"
            if piped is not None else (f" · micro-batches {microbatches}"
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


def _wins_table(stats: Sequence[Wins]) -> str:
    body = "".join(
        f'<tr><td class="l">{_e(s.algorithm)}</td><td>{s.wins}</td><td>{s.groups}</td>'
        f'<td>{s.ok}</td><td>{s.failed}</td></tr>' for s in stats)
    return ('<table class="wins"><thead><tr><th class="l">algorithm</th><th>wins</th>'
            '<th>settings</th><th>ok</th><th>failed</th></tr></thead>'
            f'<tbody>{body}</tbody></table>'
            '<p class="note">A win is a (spec, plan, setting) where the algorithm had the '
            'shortest simulated makespan; ties count for each.</p>')


def _runs_table(report: CompareReport) -> str:
    cols = [("spec", "l"), ("plan", "l"), ("bandwidth", ""), ("memory", ""), ("devices", ""),
            ("algorithm", "l"), ("makespan", ""), ("× best", ""), ("× bound", ""),
            ("gap", ""), ("planning", ""), ("devices used", ""), ("peak / cap", ""),
            ("status", "l"), ("reason", "l")]
    settings, pipeline = report.setting_columns, report.pipeline_columns
    if settings:
        cols[5:5] = [("objective", ""), ("micro-batches", "")]
    if pipeline:
        cols[-2:-2] = [("iteration", ""), ("T", ""), ("T bound", ""), ("bubble", ""),
                       ("fits", "")]
    head = "".join(f'<th class="{c}">{_e(n)}</th>' for n, c in cols)
    out = []
    for r in report.runs:
        best = ' class="best"' if r.get("ratio_to_best") == 1.0 else ""
        out.append(f"<tr{best}>" + "".join(
            f'<td class="{c}" data-v="{_e(v)}">{_e(text)}</td>'
            for text, v, c in _run_cells(r, settings=settings, pipeline=pipeline)) + "</tr>")
    return (f'<table class="sortable runs"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(out)}</tbody></table>')


# complex: a cell per column of the runs table, each with its missing-value fallback (an `or`,
# a conditional); the list follows `_runs_table`'s header column for column
def _run_cells(r: Mapping[str, Any], *, settings: bool, pipeline: bool
               ) -> list[tuple[Any, Any, str]]:
    """One run's cells, each (text, sort value, class), in `_runs_table`'s columns."""
    ms = r.get("makespan_s")
    peak, cap = r.get("peak_memory_bytes"), r.get("memory_cap_bytes")
    mem = (f"{format_bytes(peak)} / {format_bytes(cap)}"
           if isinstance(peak, int) and isinstance(cap, int) else "—")
    cells = [
        (r["spec"], r["spec"], "l"), (r["plan"], r["plan"], "l"),
        (r["bandwidth"], r["bandwidth"], ""), (r["memory"], r["memory"], ""),
        (r["devices"], r["devices"], ""), (r["algorithm"], r["algorithm"], "l"),
        (_fmt_opt(ms, format_seconds), ms if _ok(r) else "", ""),
        (_ratio(r.get("ratio_to_best")), r.get("ratio_to_best") or "", ""),
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
        cells[-2:-2] = _pipeline_cells(r)
    return cells


def _pipeline_cells(r: Mapping[str, Any]) -> list[tuple[Any, Any, str]]:
    """A pipeline run's iteration, period, period bound, bubble and fit."""
    fits = r.get("pipeline_fits")
    return [_seconds_cell(r.get("iteration_s")), _seconds_cell(r.get("period_s")),
            _seconds_cell(r.get("period_bound_s")),
            (_fmt_opt(r.get("bubble_fraction"), lambda x: f"{x:.1%}"),
             r.get("bubble_fraction") or "", ""),
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
            "<h3>Wins</h3>", _wins_table(report.wins)]
    for (spec, plan), members in specs.items():
        body.append(f'<h2>{_e(spec)} · plan {_e(plan)}</h2>')
        first = members[0]
        if first.get("n_ops") is not None:
            body.append(f'<p class="meta">{first["n_ops"]} ops, {first["n_edges"]} edges; '
                        'the lower bound of each setting is drawn dashed</p>')
        for label, part in _by_objective(members):
            if label:
                body.append(f"<h3>{_e(label)}</h3>")
            body.append(_sweep_charts(part, algos, report.axes))
        view = view_of.get((spec, plan))
        if view is not None:
            r = view.run
            body.append(f'<h3>Best plan at bandwidth {_e(r["bandwidth"])}, memory '
                        f'{_e(r["memory"])}, devices {_e(r["devices"])}: '
                        f'{_e(r["algorithm"])}</h3>')
            body.append(_sweep_best_note(members, r))
            body.append(_plan_summary(view.problem, view.result))
            body.append(_plan_section(view.problem, view.result, _bound_at([r])))
    body.append(f"<details><summary>All runs ({len(rows)})</summary>{_runs_table(report)}"
                "</details>")
    return _page(title, "\n".join(body))


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
