"""The Gantt chart and the memory view of one simulated plan, on one time axis.

Both charts share `TimeAxis` (the same left margin, plot width and time scale), so an
instant is at the same x in both. They stay legible from ten ops to 100,000:

- **Bars or columns.** While the busiest device has at most one op per `MIN_BAR_PX`
  pixels, each op is a bar (`.op`). Beyond that, each device's lane is cut into columns
  of `BIN_PX` pixels and each column shows how busy the device was, stacked by op type
  (`.agg`), with the op groups (name prefixes) that ran there in its tooltip. The page's
  size then depends on the width, not on the number of ops.
- **Colours** mean op types (`groups.legend_by_type`), listed in a legend with their share
  of compute time, instead of one hashed colour per op name.
- **Transfers** are arrows (`.xfer`) while there are at most `MAX_ARROWS` and ops are
  bars; otherwise a table sums them per device pair.
- The makespan and, when known, the lower bound are marked on the time axis; the memory
  view has y ticks per device and draws the cap.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..model import Problem
from ..simulate import SimResult, Transfer
from ..units import format_bytes, format_bytes_of, format_percent_of, format_seconds
from .groups import Legend, legend_by_type, op_group
from .svg import byte_ticks, coord, esc, nice_ticks, share, svg_open, tick_bytes, tick_seconds

__all__ = ["MAX_ARROWS", "TimeAxis", "gantt_svg", "legend_html", "memory_svg",
           "plan_legend", "time_axis", "transfers_table"]

WIDTH = 1080
LEFT, RIGHT = 150, 130
MIN_BAR_PX = 2.0
BIN_PX = 4
MAX_ARROWS = 100  # beyond about one per 8 px of width, arrows hide the bars
ROW = 26
AGG_ROW = 40  # taller lanes when columns show busy shares
LB_COLOUR = "#b33c00"


@dataclass(frozen=True)
class TimeAxis:
    """Seconds to x pixels, shared by the Gantt chart and the memory view."""

    span_s: float
    left: int = LEFT
    plot_width: int = WIDTH - LEFT - RIGHT

    def x(self, t: float) -> float:
        """The x of time `t` (clamped to the axis)."""
        return self.left + self.plot_width * share(t, self.span_s)

    def ticks(self) -> list[float]:
        """Round times to label."""
        return nice_ticks(0.0, self.span_s, 8)


def time_axis(result: SimResult, width: int = WIDTH) -> TimeAxis:
    """The axis from 0 to the makespan (or the last finite end, for an infeasible plan)."""
    ends = [t for t in result.end_s if math.isfinite(t)]
    ms = result.makespan_s if math.isfinite(result.makespan_s) else 0.0
    return TimeAxis(max([ms, *ends, 1e-12]), LEFT, width - LEFT - RIGHT)


def _durations(result: SimResult) -> list[float]:
    return [e - s if math.isfinite(s) and math.isfinite(e) else 0.0
            for s, e in zip(result.start_s, result.end_s, strict=True)]


def plan_legend(problem: Problem, result: SimResult) -> Legend:
    """Colour categories of a plan's ops: op types, weighted by simulated compute time."""
    ops = problem.graph.ops
    return legend_by_type([o.name for o in ops], _durations(result), [o.type for o in ops])


def legend_html(legend: Legend, *, bound: bool) -> str:
    """The legend above the Gantt chart: op types with their share of compute time."""
    items = "".join(
        f'<span data-cat="{k}"><i style="background:{c}"></i>{esc(n)} '
        f'<small>{100 * s:.0f}%</small></span>'
        for k, (n, c, s) in enumerate(zip(legend.names, legend.colours, legend.shares,
                                          strict=True)))
    marks = ('<span><i class="rule"></i>makespan</span>'
             + (f'<span><i class="rule dashed" style="border-color:{LB_COLOUR}"></i>'
                'lower bound</span>' if bound else ""))
    return f'<div class="legend cats">{items}{marks}</div>'


def axis_marks(axis: TimeAxis, top: float, bottom: float, makespan_s: float,
               bound_s: float | None, *, label: bool = True, end: str = "makespan") -> list[str]:
    """Grid lines and labels of the time axis, the end mark (`end`: what the end is, the
    makespan or a pipeline's iteration) and the lower bound."""
    out = ['<g class="axis">']
    for t in axis.ticks():
        x = coord(axis.x(t))
        out.append(f'<line class="gridline" x1="{x}" x2="{x}" y1="{top}" y2="{bottom}"/>'
                   f'<text x="{x}" y="{bottom + 14}" text-anchor="middle">'
                   f'{esc(tick_seconds(t))}</text>')
    out.append('</g>')
    if math.isfinite(makespan_s) and makespan_s > 0:
        x = coord(axis.x(makespan_s))
        out.append(f'<line class="ms-mark" x1="{x}" x2="{x}" y1="{top - 6}" y2="{bottom}" '
                   f'data-tip="{end} {esc(format_seconds(makespan_s))}"/>'
                   + (f'<text x="{x}" y="{top - 9}" text-anchor="middle">{end} '
                      f'{esc(format_seconds(makespan_s))}</text>' if label else ""))
    if bound_s is not None and math.isfinite(bound_s) and bound_s > 0:
        x = coord(axis.x(bound_s))
        out.append(f'<line class="lb-mark" x1="{x}" x2="{x}" y1="{top - 6}" y2="{bottom}" '
                   f'data-tip="lower bound {esc(format_seconds(bound_s))}"/>'
                   f'<text class="lb-label" x="{x}" y="{bottom + 28}" text-anchor="middle">'
                   f'lower bound {esc(format_seconds(bound_s))}</text>')
    return out


def detailed(result: SimResult, axis: TimeAxis) -> bool:
    """Whether every op gets its own bar: the busiest device has room for all of them."""
    busiest = max((len(seq) for seq in result.order), default=0)
    return busiest * MIN_BAR_PX <= axis.plot_width


def gantt_svg(problem: Problem, result: SimResult, *, legend: Legend | None = None,
              bound_s: float | None = None, width: int = WIDTH) -> str:
    """Devices as rows and time across: op bars (or busy columns), transfers, marks."""
    legend = legend or plan_legend(problem, result)
    axis = time_axis(result, width)
    devs = problem.cluster.devices
    bars = detailed(result, axis)
    row = ROW if bars else AGG_ROW
    top = 30
    bottom = top + row * max(1, len(devs))
    height = bottom + 44
    out = [svg_open("gantt", width, height),
           ('<defs><marker id="arrow" viewBox="0 0 6 6" refX="5" refY="3" markerWidth="5" '
            'markerHeight="5" orient="auto"><path d="M0,0L6,3L0,6z" fill="#444"/></marker>'
            '</defs>')]
    for d, dev in enumerate(devs):
        y = top + d * row
        busy = result.busy_s[d] / axis.span_s if d < len(result.busy_s) else 0.0
        out.append(f'<rect class="lane" x="{axis.left}" y="{y + 2}" width="{axis.plot_width}" '
                   f'height="{row - 4}"/><text x="8" y="{y + row / 2 + 4}">{esc(dev.name)}'
                   f'</text><text class="muted" x="{axis.left + axis.plot_width + 8}" '
                   f'y="{y + row / 2 + 4}">busy {100 * busy:.0f}%</text>')
    out += axis_marks(axis, top, bottom, result.makespan_s, bound_s)
    out.append('<g class="ops">')
    out += (_bars(problem, result, legend, axis, top) if bars
            else _columns(problem, result, legend, axis, top))
    out.append('</g>')
    done = result.sent()
    if bars and len(done) <= MAX_ARROWS:
        out.append('<g class="transfers">')
        out += _arrows(problem, done, axis, top)
        out.append('</g>')
    out.append('</svg>')
    return "".join(out)


def _bars(problem: Problem, result: SimResult, legend: Legend, axis: TimeAxis,
          top: float) -> list[str]:
    ops, devs = problem.graph.ops, problem.cluster.devices
    out = []
    for d, i, s, e in result.ran():
        y = top + d * ROW + 4
        x0 = axis.x(s)
        w = max(axis.x(e) - x0, 0.6)
        name, cat = ops[i].name, legend.of_op[i]
        out.append(f'<rect class="op" data-cat="{cat}" x="{coord(x0)}" y="{y}" '
                   f'width="{coord(w)}" height="{ROW - 8}" '
                   f'fill="{legend.colours[cat]}" data-tip="{esc(name)} '
                   f'({esc(legend.names[cat])}) on {esc(devs[d].name)}\n'
                   f'{esc(format_seconds(s))} → {esc(format_seconds(e))} '
                   f'({esc(format_seconds(e - s))})"/>')
        if w > 7 * len(name) + 6:
            out.append(f'<text class="oplabel" x="{coord(x0 + 3)}" y="{y + 13}">'
                       f'{esc(name)}</text>')
    return out


def _columns(problem: Problem, result: SimResult, legend: Legend, axis: TimeAxis,
             top: float) -> list[str]:
    """Per device and column, busy time by category, stacked from the lane's bottom."""
    ops, devs = problem.graph.ops, problem.cluster.devices
    n_bins = max(1, axis.plot_width // BIN_PX)
    width_s = axis.span_s / n_bins
    n_cat = len(legend.names)
    busy = np.zeros((len(devs), n_bins, n_cat))
    started: list[list[Counter[str]]] = [[Counter() for _ in range(n_bins)] for _ in devs]
    for d, i, s, e in result.ran():
        c = legend.of_op[i]
        b0, b1 = min(int(s / width_s), n_bins - 1), min(int(e / width_s), n_bins - 1)
        started[d][b0][op_group(ops[i].name)] += 1
        if b0 == b1:
            busy[d, b0, c] += e - s
            continue
        busy[d, b0, c] += (b0 + 1) * width_s - s
        busy[d, b0 + 1:b1, c] += width_s
        busy[d, b1, c] += e - b1 * width_s
    share = np.clip(busy / width_s, 0.0, 1.0)
    lane = AGG_ROW - 8
    px = axis.plot_width / n_bins
    out = []
    for d in range(len(devs)):
        base = top + d * AGG_ROW + 4 + lane
        below = np.zeros(n_bins)
        for c in range(n_cat):
            h = share[d, :, c] * lane
            cols = np.flatnonzero(h > 0.05)
            if len(cols):
                path = "".join(
                    f"M{coord(axis.left + b * px)},{coord(base - below[b] - h[b])}"
                    f"h{coord(px)}v{coord(h[b])}h{coord(-px)}z" for b in cols)
                out.append(f'<path class="agg" data-cat="{c}" fill="{legend.colours[c]}" '
                           f'd="{path}"/>')
            below = np.minimum(below + h, lane)
        for b in np.flatnonzero(share[d].sum(axis=1) > 0):
            tip = _column_tip(devs[d].name, int(b), width_s, share[d, b], legend, started[d][b])
            out.append(f'<rect class="bin" x="{coord(axis.left + b * px)}" y="{base - lane}" '
                       f'width="{coord(px)}" height="{lane}" data-tip="{esc(tip)}"/>')
    return out


def _column_tip(dev: str, b: int, width_s: float, share: np.ndarray, legend: Legend,
                started: Counter[str]) -> str:
    total = float(share.sum())
    cats = sorted(range(len(share)), key=lambda c: -share[c])
    kinds = ", ".join(f"{legend.names[c]} {100 * share[c]:.0f}%" for c in cats[:3]
                      if share[c] > 0)
    groups = ", ".join(f"{g} ×{n}" for g, n in sorted(started.items(),
                                                       key=lambda kv: (-kv[1], kv[0]))[:3])
    more = len(started) - 3
    return (f"{dev} · {format_seconds(b * width_s)} – {format_seconds((b + 1) * width_s)}\n"
            f"busy {100 * min(total, 1.0):.0f}%: {kinds}"
            + (f"\nops started: {groups}" + (f" and {more} more group(s)" if more > 0 else "")
               if started else ""))


def _arrows(problem: Problem, done: Sequence[Transfer], axis: TimeAxis, top: float
            ) -> list[str]:
    ops, devs = problem.graph.ops, problem.cluster.devices
    out = []
    for t in sorted(done, key=lambda t: (t.start_s, t.src_op, t.dst_device)):
        y1 = top + t.src_device * ROW + ROW / 2
        y2 = top + t.dst_device * ROW + ROW / 2
        out.append(f'<line class="xfer" x1="{coord(axis.x(t.start_s))}" y1="{coord(y1)}" '
                   f'x2="{coord(axis.x(t.end_s))}" y2="{coord(y2)}" marker-end="url(#arrow)" '
                   f'data-tip="{esc(ops[t.src_op].name)}: {esc(devs[t.src_device].name)} → '
                   f'{esc(devs[t.dst_device].name)}\n{esc(format_bytes(t.bytes))}, '
                   f'{esc(format_seconds(t.start_s))} → {esc(format_seconds(t.end_s))}"/>')
    return out


def transfers_table(problem: Problem, result: SimResult, limit: int = 24) -> str:
    """Transfers summed per (from, to) device pair, the most bytes first."""
    devs = problem.cluster.devices
    pairs: dict[tuple[int, int], list[float]] = {}
    for t in result.sent():
        acc = pairs.setdefault((t.src_device, t.dst_device), [0, 0, 0.0])
        acc[0] += 1
        acc[1] += t.bytes
        acc[2] += t.end_s - t.start_s
    if not pairs:
        return ""
    ranked = sorted(pairs.items(), key=lambda kv: (-kv[1][1], kv[0]))
    most = ranked[0][1][1] or 1
    rows = "".join(
        f'<tr><td class="l">{esc(devs[a].name)}</td><td class="l">{esc(devs[b].name)}</td>'
        f'<td>{int(n)}</td><td>{esc(format_bytes(int(by)))}</td>'
        f'<td>{esc(format_seconds(busy))}</td><td class="l"><span class="meter" '
        f'style="width:{coord(100 * by / most)}px"></span></td></tr>'
        for (a, b), (n, by, busy) in ranked[:limit])
    more = (f'<p class="note">… and {len(ranked) - limit} more pairs.</p>'
            if len(ranked) > limit else "")
    return ('<table class="pairs"><thead><tr><th class="l">from</th><th class="l">to</th>'
            '<th>transfers</th><th>bytes</th><th>transfer time</th><th class="l"></th>'
            f'</tr></thead><tbody>{rows}</tbody></table>{more}')


def memory_svg(problem: Problem, result: SimResult, *, width: int = WIDTH) -> str:
    """Memory over time per device (the plan's memory model): y ticks, the cap (dashed),
    the peak; on the Gantt chart's time axis."""
    axis = time_axis(result, width)
    devs = problem.cluster.devices
    top, lane, gap = 12, 52, 16
    bottom = top + (lane + gap) * max(1, len(devs)) - gap
    height = bottom + 44
    out = [svg_open("memory", width, height)]
    for d, dev in enumerate(devs):
        y0 = top + d * (lane + gap)
        out.append(f'<rect class="lane" x="{axis.left}" y="{y0}" width="{axis.plot_width}" '
                   f'height="{lane}"/><text x="8" y="{y0 + lane / 2 + 4}">{esc(dev.name)}'
                   '</text>')
    out += axis_marks(axis, top, bottom, result.makespan_s, None, label=False)
    for d, dev in enumerate(devs):
        y0 = top + d * (lane + gap)
        steps = result.memory_timeline[d] if d < len(result.memory_timeline) else ()
        peak = result.memory_peak_bytes[d] if d < len(result.memory_peak_bytes) else 0
        cap = dev.memory_bytes
        scale = max(cap, peak, 1)

        def y(b: float, y0: float = y0, scale: float = scale) -> float:
            return y0 + lane - lane * share(b, scale) / 1.1

        for t in byte_ticks(scale):
            out.append(f'<line class="gridline" x1="{axis.left}" x2="{axis.left + axis.plot_width}"'
                       f' y1="{coord(y(t))}" y2="{coord(y(t))}"/><text class="muted" '
                       f'x="{axis.left - 5}" y="{coord(y(t) + 4)}" text-anchor="end">'
                       f'{esc(tick_bytes(t))}</text>')
        over = " over" if peak > cap else ""
        pct = format_percent_of(peak, cap, 0) if cap else "∞"
        pct += "" if pct == "∞" else "%"
        held, of = format_bytes_of(peak, cap)
        out.append(f'<path class="mem{over}" d="{_memory_path(steps, axis, y)}" '
                   f'data-tip="{esc(dev.name)}: peak {esc(held)} of {esc(of)} ({pct})"/>')
        out.append(f'<line class="cap" x1="{axis.left}" x2="{axis.left + axis.plot_width}" '
                   f'y1="{coord(y(cap))}" y2="{coord(y(cap))}" data-tip="{esc(dev.name)} cap '
                   f'{esc(format_bytes(cap))}"/>')
        right = axis.left + axis.plot_width + 8
        out.append(f'<text class="cap-label" x="{right}" y="{coord(y(cap) + 4)}">cap '
                   f'{esc(tick_bytes(cap))}</text><text class="muted" x="{right}" '
                   f'y="{coord(y0 + lane - 2)}">peak {pct}</text>')
    out.append(f'<text class="muted" x="{axis.left + axis.plot_width / 2}" '
               f'y="{height - 4}" text-anchor="middle">memory model: '
               f'{esc(problem.memory_model)}; dashed: the device\'s memory cap</text>')
    out.append('</svg>')
    return "".join(out)


def _memory_path(steps: Sequence[tuple[float, int]], axis: TimeAxis,
                 y: Callable[[float], float]) -> str:
    """The memory curve as a closed step path. With more steps than pixel columns, each
    column shows the highest level reached in it, so peaks are never lost."""
    pts = [(t, b) for t, b in steps if math.isfinite(t)]
    cols = axis.plot_width
    if len(pts) > 2 * cols:
        top = [-1.0] * cols
        level = 0.0
        last = 0
        for t, b in pts:
            c = min(int(cols * min(max(t, 0.0), axis.span_s) / axis.span_s), cols - 1)
            for k in range(last + 1, c + 1):  # columns passed: the level held through them
                top[k] = max(top[k], level)
            last = c
            level = b
            top[c] = max(top[c], level)
        for k in range(last + 1, cols):
            top[k] = max(top[k], level)
        path = [f"M{axis.left},{coord(y(0))}"]
        for k, high in enumerate(top):
            path.append(f"L{axis.left + k},{coord(y(max(high, 0.0)))}h1")
        path.append(f"L{axis.left + cols},{coord(y(0))}Z")
        return "".join(path)
    path = [f"M{axis.left},{coord(y(0))}"]
    level = 0.0
    for t, b in pts:
        x = coord(axis.x(t))
        path.append(f"L{x},{coord(y(level))}L{x},{coord(y(b))}")
        level = b
    path.append(f"L{axis.left + axis.plot_width},{coord(y(level))}"
                f"L{axis.left + axis.plot_width},{coord(y(0))}Z")
    return "".join(path)
