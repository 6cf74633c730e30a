"""Self-contained HTML reports: inline SVG charts, inline CSS and JavaScript, no network.

Two pages:

- `write_compare_html` (`planner compare --html`): per spec and plan, makespan against
  bandwidth, memory cap and device count (one line per algorithm; a dimension that was not
  swept gets no chart, and a sweep of one setting gets a bar chart), the Gantt chart and
  memory-over-time view of the best plan, a table of wins and a sortable table of every run.
- `write_plan_html` (`planner solve --html`): the Gantt chart and memory view of one plan.

The charts are drawn here, in Python, as SVG: the page reads fine with JavaScript off. The
script only adds tooltips, legend toggles (click an algorithm to hide its line), table
sorting, and `data-ready` / counts on `<body>` for automated checks. Every chart is an
`<svg class="chart" data-chart="line|bar|gantt|memory">`; its marks carry the classes
`pt` (data points), `fail` (failed runs), `op` (Gantt bars), `xfer` (transfers) and `mem`
(memory curves). Output is deterministic: the same input gives the same bytes.
"""

from __future__ import annotations

import html
import math
import sys
import zlib
from fractions import Fraction
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..model import Problem
from ..simulate import SimResult
from ..units import format_bytes, format_seconds
from .figures import format_gap

__all__ = [
    "compare_report_html", "gantt_svg", "line_chart_svg", "memory_svg", "plan_report_html",
    "write_compare_html", "write_plan_html",
]

#: algorithm line colours (colour-blind friendly, Okabe–Ito then Tableau)
PALETTE: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
    "#8c564b", "#7f7f7f", "#bcbd22", "#17becf",
)
#: transfers drawn at most (the largest first); the rest are counted in a note
MAX_TRANSFERS = 1500
_OK = ("optimal", "feasible", "fallback")

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
.row { display: flex; flex-wrap: wrap; gap: 18px; }
figure { margin: 0; } figcaption { font-weight: 600; margin: 4px 0; }
svg.chart { display: block; background: #fff; overflow: visible; }
svg text { font: 11px system-ui, "DejaVu Sans", sans-serif; fill: var(--fg); }
svg .axis line, svg .axis path { stroke: #9aa3b2; }
svg .gridline { stroke: var(--grid); }
svg .muted { fill: var(--muted); }
svg .series path { fill: none; stroke-width: 2; }
svg .pt { stroke: #fff; stroke-width: 1; }
svg .fail { stroke-width: 2; }
svg .op { stroke: rgba(0,0,0,.35); stroke-width: .5; }
svg .xfer { stroke: rgba(40,40,40,.45); stroke-width: 1; }
svg .mem { fill: rgba(0,114,178,.18); stroke: #0072B2; stroke-width: 1.5; }
svg .mem.over { fill: rgba(213,94,0,.2); stroke: #D55E00; }
svg .lane { fill: #f5f7fa; }
svg .cap { stroke: #D55E00; stroke-dasharray: 4 3; stroke-width: 1.2; }
.hidden { display: none; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 2px 0 6px; font-size: 12px; }
.legend span { cursor: pointer; user-select: none; } .legend span.off { opacity: .35; }
.legend i { display: inline-block; width: 18px; height: 3px; vertical-align: middle;
  margin-right: 5px; }
table { border-collapse: collapse; font-size: 12.5px; margin: 6px 0; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--grid); text-align: right;
  white-space: nowrap; }
th { background: #f5f7fa; cursor: pointer; position: sticky; top: 0; }
td.l, th.l { text-align: left; } td.reason { white-space: normal; max-width: 420px;
  color: var(--muted); text-align: left; }
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
  b.setAttribute('data-transfers', count('svg.chart .xfer'));
  b.setAttribute('data-ready', '1');
  }
})();
"""


# -- small helpers ------------------------------------------------------------------------


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _f(x: float) -> str:
    """Compact SVG coordinate."""
    return f"{x:.2f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


def _share(part: float, whole: float) -> float:
    """`part / whole` clamped to [0, 1]; exact for integers beyond a float's range (bytes
    of a spec at its limits), 0 when `whole` is not positive."""
    try:
        r = part / whole
    except OverflowError:  # an int too large for a float: divide exactly
        try:
            r = float(Fraction(part) / Fraction(whole))
        except (OverflowError, ValueError, ZeroDivisionError):
            return 1.0
    except ZeroDivisionError:
        return 0.0
    if math.isnan(r) or whole <= 0:
        return 0.0
    return min(1.0, max(0.0, r))


def op_color(name: str) -> str:
    """A stable colour for an op (from its name, not its position)."""
    h = zlib.crc32(name.encode("utf-8"))
    return f"hsl({h % 360},{55 + (h >> 9) % 20}%,{58 + (h >> 17) % 14}%)"


def algo_color(index: int) -> str:
    """The line colour of the `index`-th algorithm."""
    return PALETTE[index % len(PALETTE)]


def tick_seconds(t: float) -> str:
    """A short axis label for a time: `0`, `250 us`, `1.5 ms`, `2 s`."""
    if t == 0 or not math.isfinite(t):
        return "0"
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(t) >= factor * 0.9999:
            return f"{t / factor:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    if not math.isfinite(raw) or raw <= 0:
        return [lo]
    mag = 10.0 ** math.floor(math.log10(raw))  # a float: an int here overflows later
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    first = math.ceil(lo / step) * step
    ticks = []
    top = min(hi * (1 + 1e-9), sys.float_info.max)  # near the float limit, hi * 1.x is inf
    for k in range(4 * n + 2):  # bounded: a tick that overflows must not loop for ever
        t = first + k * step
        if not math.isfinite(t) or t > top:
            break
        ticks.append(round(t, 12))
    return ticks


def _log_ticks(lo: float, hi: float) -> list[float]:
    ticks = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0 ** e
            if lo <= v <= hi:
                ticks.append(v)
    return ticks or [lo, hi]


def _page(title: str, body: str) -> str:
    from .. import __version__

    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<meta name=\"generator\" content=\"planner {_e(__version__)}\">\n"
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f"{body}\n<div id=\"tip\"></div>\n<script>{_JS}</script>\n</body>\n</html>\n"
    )


# -- line and bar charts ------------------------------------------------------------------


def line_chart_svg(
    x_labels: Sequence[str],
    series: Sequence[tuple[str, str, Sequence[float | None], Sequence[str]]],
    *,
    x_title: str,
    y_title: str = "makespan",
    width: int = 540,
    height: int = 300,
    fmt: Callable[[float], str] = format_seconds,
    tick: Callable[[float], str] = tick_seconds,
) -> str:
    """A line chart over categorical x values; one series per (name, colour, ys, notes).

    `ys[k]` is None for a failed run: the line breaks there and an × marks the axis (its
    tooltip is `notes[k]`). The y axis is logarithmic when values span more than 30×.
    """
    left, right, top, bottom = 70, 16, 12, 44
    pw, ph = width - left - right, height - top - bottom
    values = [y for _, _, ys, _ in series for y in ys if y is not None and y > 0]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    log = bool(values) and hi / lo > 30
    if log:
        lo, hi = 10 ** math.floor(math.log10(lo) * 4) / 4, hi * 1.15
        lo = min(lo, min(values) / 1.15)
        ticks = _log_ticks(lo, hi)

        def ymap(v: float) -> float:
            return top + ph - ph * (math.log10(v) - math.log10(lo)) / (
                math.log10(hi) - math.log10(lo))
    else:
        lo, hi = 0.0, (hi * 1.08 if values else 1.0)
        ticks = _nice_ticks(lo, hi)

        def ymap(v: float) -> float:
            return top + ph - ph * (v - lo) / (hi - lo)
    n = len(x_labels)

    def xmap(k: int) -> float:
        return left + (pw * (k + 0.5) / n if n else 0)

    out = [(f'<svg class="chart" data-chart="line" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" xmlns="http://www.w3.org/2000/svg">')]
    out.append('<g class="axis">')
    for t in ticks:
        y = ymap(t) if (not log or t > 0) else top + ph
        out.append(f'<line class="gridline" x1="{left}" x2="{left + pw}" y1="{_f(y)}" '
                   f'y2="{_f(y)}"/><text x="{left - 6}" y="{_f(y + 4)}" '
                   f'text-anchor="end">{_e(tick(t))}</text>')
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}"/>'
               f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}"/>')
    for k, label in enumerate(x_labels):
        out.append(f'<text x="{_f(xmap(k))}" y="{top + ph + 16}" text-anchor="middle">'
                   f'{_e(label)}</text>')
    out.append(f'<text class="muted" x="{left + pw / 2}" y="{height - 6}" '
               f'text-anchor="middle">{_e(x_title)}</text>')
    out.append(f'<text class="muted" transform="translate(14,{top + ph / 2}) rotate(-90)" '
               f'text-anchor="middle">{_e(y_title)}{" (log)" if log else ""}</text>')
    out.append('</g>')
    for s_index, (name, color, ys, notes) in enumerate(series):
        # a small horizontal offset per series keeps equal values from hiding each other
        dx = (s_index - (len(series) - 1) / 2) * 3.0

        def sx(k: int, dx: float = dx) -> float:
            return xmap(k) + dx

        out.append(f'<g class="series" data-series="{_e(name)}">')
        d: list[str] = []
        pen_up = True
        for k, y in enumerate(ys):
            if y is None or y <= 0 and log:
                pen_up = True
                continue
            d.append(f'{"M" if pen_up else "L"}{_f(sx(k))},{_f(ymap(y))}')
            pen_up = False
        if d:
            out.append(f'<path d="{" ".join(d)}" stroke="{color}"/>')
        for k, y in enumerate(ys):
            note = notes[k] if k < len(notes) else ""
            if y is None or (y <= 0 and log):
                x0 = xmap(k) + dx * 2.5  # crosses are wider than dots
                y0 = top + ph - 6
                out.append(f'<path class="fail" data-series="{_e(name)}" stroke="{color}" '
                           f'd="M{_f(x0 - 3)},{_f(y0 - 3)}l6,6m0,-6l-6,6" data-tip="{_e(name)}'
                           f' · {_e(x_labels[k])}\n{_e(note)}"/>')
            else:
                out.append(f'<circle class="pt" data-series="{_e(name)}" cx="{_f(sx(k))}" '
                           f'cy="{_f(ymap(y))}" r="3.6" fill="{color}" data-tip="{_e(name)} · '
                           f'{_e(x_labels[k])}\n{_e(fmt(y))}{_e(note)}"/>')
        out.append('</g>')
    out.append('</svg>')
    return "".join(out)


def bar_chart_svg(bars: Sequence[tuple[str, str, float | None, str]], *, width: int = 540,
                  fmt: Callable[[float], str] = format_seconds) -> str:
    """Horizontal bars (name, colour, value or None for a failed run, note)."""
    left, right, top, row = 110, 80, 8, 22
    height = top * 2 + row * max(1, len(bars))
    pw = width - left - right
    hi = max((v for _, _, v, _ in bars if v is not None), default=1.0) or 1.0
    out = [(f'<svg class="chart" data-chart="bar" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" xmlns="http://www.w3.org/2000/svg">')]
    for k, (name, color, v, note) in enumerate(bars):
        y = top + k * row
        out.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{_e(name)}</text>')
        if v is None:
            out.append(f'<text class="muted fail" x="{left + 4}" y="{y + 15}" '
                       f'data-tip="{_e(name)}\n{_e(note)}">failed: {_e(note[:60])}</text>')
            continue
        w = max(1.0, pw * v / hi)
        out.append(f'<rect class="pt" data-series="{_e(name)}" x="{left}" y="{y + 3}" '
                   f'width="{_f(w)}" height="{row - 6}" fill="{color}" '
                   f'data-tip="{_e(name)}\n{_e(fmt(v))}{_e(note)}"/>')
        out.append(f'<text x="{_f(left + w + 5)}" y="{y + 15}">{_e(fmt(v))}</text>')
    out.append('</svg>')
    return "".join(out)


# -- Gantt and memory ---------------------------------------------------------------------


def gantt_svg(problem: Problem, result: SimResult, *, width: int = 1080,
              max_transfers: int = MAX_TRANSFERS) -> str:
    """Devices as rows, ops as bars coloured per op, transfers as arrows between rows.

    Transfers are drawn from the sending device's row at their start to the receiving
    device's row at their end; the `max_transfers` largest are drawn.
    """
    devs = problem.cluster.devices
    ops = problem.graph.ops
    left, right, top, row = 96, 16, 10, 26
    pw = width - left - right
    height = top + row * max(1, len(devs)) + 40
    finite_ends = [t for t in result.end_s if math.isfinite(t)]
    span = max([result.makespan_s if math.isfinite(result.makespan_s) else 0.0,
                *finite_ends, 1e-12])

    def xmap(t: float) -> float:
        return left + pw * _share(t, span)

    out = [(f'<svg class="chart" data-chart="gantt" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" xmlns="http://www.w3.org/2000/svg">'),
           ('<defs><marker id="arrow" viewBox="0 0 6 6" refX="5" refY="3" markerWidth="5" '
           'markerHeight="5" orient="auto"><path d="M0,0L6,3L0,6z" fill="#444"/></marker>'
           '</defs>'), '<g class="axis">']
    for t in _nice_ticks(0.0, span, 8):
        x = xmap(t)
        out.append(f'<line class="gridline" x1="{_f(x)}" x2="{_f(x)}" y1="{top}" '
                   f'y2="{top + row * len(devs)}"/><text x="{_f(x)}" '
                   f'y="{top + row * len(devs) + 14}" text-anchor="middle">'
                   f'{_e(tick_seconds(t))}</text>')
    for d, dev in enumerate(devs):
        y = top + d * row
        out.append(f'<text x="{left - 6}" y="{y + row / 2 + 4}" text-anchor="end">'
                   f'{_e(dev.name)}</text>')
    out.append(f'<text class="muted" x="{left + pw / 2}" y="{height - 4}" '
               'text-anchor="middle">time</text></g><g class="ops">')
    for d, seq in enumerate(result.order):
        y = top + d * row + 3
        for i in seq:
            s, e = result.start_s[i], result.end_s[i]
            if not (math.isfinite(s) and math.isfinite(e)):
                continue
            x0 = xmap(s)
            w = max(xmap(e) - x0, 0.6)
            name = ops[i].name
            out.append(f'<rect class="op" x="{_f(x0)}" y="{y}" width="{_f(w)}" '
                       f'height="{row - 6}" fill="{op_color(name)}" data-tip="{_e(name)} on '
                       f'{_e(devs[d].name)}\n{_e(format_seconds(s))} → {_e(format_seconds(e))}'
                       f' ({_e(format_seconds(e - s))})"/>')
            if w > 7 * len(name) + 6 and len(seq) <= 200:
                out.append(f'<text x="{_f(x0 + 3)}" y="{y + row / 2 + 1}" '
                           f'style="pointer-events:none">{_e(name)}</text>')
    out.append('</g><g class="transfers">')
    drawn = sorted((t for t in result.transfers
                    if math.isfinite(t.start_s) and math.isfinite(t.end_s)),
                   key=lambda t: (-t.bytes, t.start_s, t.src_op, t.dst_device))[:max_transfers]
    drawn.sort(key=lambda t: (t.start_s, t.src_op, t.dst_device))
    for t in drawn:
        y1 = top + t.src_device * row + row / 2
        y2 = top + t.dst_device * row + row / 2
        out.append(f'<line class="xfer" x1="{_f(xmap(t.start_s))}" y1="{_f(y1)}" '
                   f'x2="{_f(xmap(t.end_s))}" y2="{_f(y2)}" marker-end="url(#arrow)" '
                   f'data-tip="{_e(ops[t.src_op].name)}: {_e(devs[t.src_device].name)} → '
                   f'{_e(devs[t.dst_device].name)}\n{_e(format_bytes(t.bytes))}, '
                   f'{_e(format_seconds(t.start_s))} → {_e(format_seconds(t.end_s))}"/>')
    out.append('</g></svg>')
    return "".join(out)


def memory_svg(problem: Problem, result: SimResult, *, width: int = 1080) -> str:
    """Memory over time per device (the plan's memory model) against its cap (dashed)."""
    devs = problem.cluster.devices
    left, right, top, lane, gap = 96, 120, 8, 40, 12
    pw = width - left - right
    height = top + (lane + gap) * max(1, len(devs)) + 24
    span = result.makespan_s if math.isfinite(result.makespan_s) and result.makespan_s > 0 \
        else 1.0
    out = [(f'<svg class="chart" data-chart="memory" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" xmlns="http://www.w3.org/2000/svg">')]
    for d, dev in enumerate(devs):
        y0 = top + d * (lane + gap)
        steps = list(result.memory_timeline[d]) if d < len(result.memory_timeline) else []
        peak = result.memory_peak_bytes[d] if d < len(result.memory_peak_bytes) else 0
        cap = dev.memory_bytes
        scale = max(cap, peak, 1)

        def ymap(b: float, y0: float = y0, scale: float = scale) -> float:
            return y0 + lane - lane * _share(b, scale) / 1.08

        def xmap(t: float) -> float:
            return left + pw * _share(t, span)

        pts = [f"M{left},{_f(ymap(0))}"]
        level = 0
        for t, b in steps:
            if not math.isfinite(t):
                continue
            pts.append(f"L{_f(xmap(t))},{_f(ymap(level))}L{_f(xmap(t))},{_f(ymap(b))}")
            level = b
        pts.append(f"L{left + pw},{_f(ymap(level))}L{left + pw},{_f(ymap(0))}Z")
        over = " over" if peak > cap else ""
        try:
            pct = 100 * peak / cap if cap else math.inf
        except OverflowError:  # bytes beyond a float's range
            pct = math.inf
        out.append(f'<rect class="lane" x="{left}" y="{_f(y0)}" width="{pw}" height="{lane}"/>')
        out.append(f'<path class="mem{over}" d="{"".join(pts)}" data-tip="{_e(dev.name)}: '
                   f'peak {_e(format_bytes(peak))} of {_e(format_bytes(cap))} '
                   f'({pct:.1f}%)"/>')
        out.append(f'<line class="cap" x1="{left}" x2="{left + pw}" y1="{_f(ymap(cap))}" '
                   f'y2="{_f(ymap(cap))}" data-tip="{_e(dev.name)} cap '
                   f'{_e(format_bytes(cap))}"/>')
        out.append(f'<text x="{left - 6}" y="{_f(y0 + lane / 2 + 4)}" text-anchor="end">'
                   f'{_e(dev.name)}</text>')
        out.append(f'<text class="muted" x="{left + pw + 6}" y="{_f(y0 + lane / 2 + 4)}">'
                   f'{_e(format_bytes(peak))} / {_e(format_bytes(cap))}</text>')
    out.append(f'<text class="muted" x="{left + pw / 2}" y="{height - 6}" '
               f'text-anchor="middle">time (0 → {_e(format_seconds(span))}); dashed: cap; '
               f'memory model: {_e(problem.memory_model)}</text>')
    out.append('</svg>')
    return "".join(out)


def _plan_section(problem: Problem, result: SimResult) -> str:
    n_tr = len(result.transfers)
    drawn = min(n_tr, MAX_TRANSFERS)
    note = (f'<p class="note">{drawn} of {n_tr} transfers drawn (the largest).</p>'
            if n_tr > drawn else "")
    return (f'<figure><figcaption>Gantt chart (devices × time; arrows: transfers)'
            f'</figcaption>{gantt_svg(problem, result)}</figure>{note}'
            f'<figure><figcaption>Memory over time per device</figcaption>'
            f'{memory_svg(problem, result)}</figure>')


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
                     extra: Mapping[str, str] | None = None) -> str:
    """The HTML page of one simulated plan: summary, Gantt chart, memory view."""
    title = title or f"plan {problem.name}"
    rows = "".join(f'<tr><td class="l">{_e(k)}</td><td class="l">{_e(v)}</td></tr>'
                   for k, v in (extra or {}).items())
    body = (f"<h1>{_e(title)}</h1>{_plan_summary(problem, result)}"
            + (f"<table>{rows}</table>" if rows else "")
            + _violations(problem, result) + _plan_section(problem, result))
    return _page(title, body)


def _violations(problem: Problem, result: SimResult) -> str:
    if not result.violations:
        return ""
    items = "".join(f"<li>{_e(v.kind)}: {_e(v.message)}</li>" for v in result.violations[:20])
    more = (f"<li>… and {len(result.violations) - 20} more</li>"
            if len(result.violations) > 20 else "")
    return f'<ul class="status-bad">{items}{more}</ul>'


def write_plan_html(path: str, problem: Problem, result: SimResult,
                    extra: Mapping[str, str] | None = None) -> None:
    """Write `plan_report_html` atomically (`planner solve --html`); `extra` rows (algorithm,
    status, lower bound and gap) go in its summary table."""
    from ..io.atomic import write_text_atomic

    write_text_atomic(path, plan_report_html(problem, result, extra=extra))


# -- the compare report -------------------------------------------------------------------


def _ok(r: Mapping[str, Any]) -> bool:
    ms = r.get("makespan_s")
    return r.get("status") in _OK and isinstance(ms, (int, float)) and math.isfinite(ms)


def _fmt_opt(v: Any, f: Callable[[float], str]) -> str:
    return f(v) if isinstance(v, (int, float)) and math.isfinite(v) else "—"


def _ratio(v: Any) -> str:
    return f"{v:.3f}×" if isinstance(v, (int, float)) and math.isfinite(v) else "—"


def _sweep_charts(rows: Sequence[Mapping[str, Any]], algos: Sequence[str]) -> str:
    from ..compare.settings import (
        DEFAULT_BANDWIDTH,
        DEFAULT_DEVICES,
        DEFAULT_MEMORY,
        bandwidth_key,
        devices_key,
        memory_key,
    )

    dims = (("bandwidth", bandwidth_key, DEFAULT_BANDWIDTH, "link bandwidth"),
            ("memory", memory_key, DEFAULT_MEMORY, "memory cap (per device)"),
            ("devices", devices_key, DEFAULT_DEVICES, "devices (the first N)"))
    values = {name: sorted({str(r[name]) for r in rows}, key=key)
              for name, key, _, _ in dims}
    fixed = {name: (default if default in values[name] else values[name][-1])
             for name, _, default, _ in dims}
    colors = {a: algo_color(k) for k, a in enumerate(algos)}
    figures: list[str] = []
    for name, _, _, title in dims:
        xs = values[name]
        if len(xs) < 2:
            continue
        others = [n for n, _, _, _ in dims if n != name]
        at = {(str(r["algorithm"]), str(r[name])): r for r in rows
              if all(str(r[o]) == fixed[o] for o in others)}
        series = []
        for a in algos:
            ys: list[float | None] = []
            notes: list[str] = []
            for x in xs:
                r = at.get((a, x))
                if r is not None and _ok(r):
                    ys.append(float(r["makespan_s"]))
                    notes.append(f" ({r['status']})" if r["status"] != "feasible" else "")
                else:
                    ys.append(None)
                    notes.append(f"{r['status']}: {r.get('reason') or ''}" if r else "not run")
            series.append((a, colors[a], ys, notes))
        held = ", ".join(f"{o} {fixed[o]}" for o in others)
        legend = "".join(f'<span data-series="{_e(a)}"><i style="background:{colors[a]}"></i>'
                         f'{_e(a)}</span>' for a in algos)
        figures.append(
            f'<figure><figcaption>Makespan vs {_e(title)}</figcaption>'
            f'<div class="legend">{legend}</div>'
            + line_chart_svg(xs, series, x_title=f"{title} · at {held}")
            + '</figure>')
    if not figures:  # one setting: bars
        r0 = rows[0]
        bars = []
        for a in algos:
            r = next((x for x in rows if x["algorithm"] == a), None)
            if r is None:
                continue
            ok = _ok(r)
            bars.append((a, colors[a], float(r["makespan_s"]) if ok else None,
                         "" if ok else f"{r['status']}: {r.get('reason') or ''}"))
        figures.append(f'<figure><figcaption>Makespan per algorithm · bandwidth '
                       f'{_e(r0["bandwidth"])}, memory {_e(r0["memory"])}, devices '
                       f'{_e(r0["devices"])}</figcaption>{bar_chart_svg(bars)}</figure>')
    return '<div class="row">' + "".join(figures) + "</div>"


def _wins_table(rows: Sequence[Mapping[str, Any]]) -> str:
    from ..compare.rows import wins

    stats = wins(rows)
    body = "".join(
        f'<tr><td class="l">{_e(a)}</td><td>{s["wins"]}</td><td>{s["groups"]}</td>'
        f'<td>{s["ok"]}</td><td>{s["failed"]}</td></tr>' for a, s in stats.items())
    return ('<table class="wins"><thead><tr><th class="l">algorithm</th><th>wins</th>'
            '<th>settings</th><th>ok</th><th>failed</th></tr></thead>'
            f'<tbody>{body}</tbody></table>'
            '<p class="note">A win is a (spec, plan, setting) where the algorithm had the '
            'shortest simulated makespan; ties count for each.</p>')


def _runs_table(rows: Sequence[Mapping[str, Any]]) -> str:
    cols = (("spec", "l"), ("plan", "l"), ("bandwidth", ""), ("memory", ""), ("devices", ""),
            ("algorithm", "l"), ("makespan", ""), ("× best", ""), ("× bound", ""),
            ("gap", ""), ("planning", ""), ("devices used", ""), ("peak / cap", ""), ("status", "l"),
            ("reason", "l"))
    head = "".join(f'<th class="{c}">{_e(n)}</th>' for n, c in cols)
    out = []
    for r in rows:
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
        best = ' class="best"' if r.get("ratio_to_best") == 1.0 else ""
        out.append(f"<tr{best}>" + "".join(
            f'<td class="{c}" data-v="{_e(v)}">{_e(text)}</td>' for text, v, c in cells)
            + "</tr>")
    return (f'<table class="sortable runs"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(out)}</tbody></table>')


def compare_report_html(rows: Sequence[Mapping[str, Any]], views: Sequence[Any] = (), *,
                        title: str = "planner compare") -> str:
    """The HTML page of a sweep: charts per spec and plan, best plans, wins, every run.

    `rows` are finalized result rows (`planner.compare.rows.finalize`); `views` are
    `planner.compare.PlanView` values (row, problem, simulation) of the plans to draw.
    """
    from ..algorithms import names

    known = names()
    algos = sorted({str(r["algorithm"]) for r in rows},
                   key=lambda a: (known.index(a) if a in known else len(known), a))
    specs: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        specs.setdefault((str(r["spec"]), str(r["plan"])), []).append(r)
    view_of = {(str(v.row["spec"]), str(v.row["plan"])): v for v in views}
    ok = sum(1 for r in rows if _ok(r))
    body = [f"<h1>{_e(title)}</h1>",
            (f'<p class="meta">{len(rows)} runs ({ok} with a valid plan, {len(rows) - ok} '
            f'failed) · {len(specs)} plan(s) · algorithms: {_e(", ".join(algos))}</p>'),
            "<h3>Wins</h3>", _wins_table(rows)]
    for (spec, plan), members in specs.items():
        body.append(f'<h2>{_e(spec)} · plan {_e(plan)}</h2>')
        first = members[0]
        if first.get("n_ops") is not None:
            body.append(f'<p class="meta">{first["n_ops"]} ops, {first["n_edges"]} edges'
                        + (f', lower bound {_e(_fmt_opt(first.get("lower_bound_s"), format_seconds))}'
                           if first.get("lower_bound_s") else "") + "</p>")
        body.append(_sweep_charts(members, algos))
        view = view_of.get((spec, plan))
        if view is not None:
            r = view.row
            body.append(f'<h3>Best plan: {_e(r["algorithm"])} at bandwidth '
                        f'{_e(r["bandwidth"])}, memory {_e(r["memory"])}, devices '
                        f'{_e(r["devices"])}</h3>')
            body.append(_plan_summary(view.problem, view.result))
            body.append(_plan_section(view.problem, view.result))
    body.append(f"<details><summary>All runs ({len(rows)})</summary>{_runs_table(rows)}"
                "</details>")
    return _page(title, "\n".join(body))


def write_compare_html(path: str, rows: Sequence[Mapping[str, Any]],
                       views: Sequence[Any] = (), *, title: str = "planner compare") -> None:
    """Write `compare_report_html` atomically (`planner compare --html`)."""
    from ..io.atomic import write_text_atomic

    write_text_atomic(path, compare_report_html(rows, views, title=title))
