"""The pipeline section of `planner solve --html` under `objective pipeline`.

The same figures as the terminal's pipeline section (`render.pipeline`): the iteration and
the time per micro-batch (simulated), the period T with its lower bound and the gap, the
bubble, the throughput, the gradient all-reduces (a hybrid plan's replicated stages', tied
weights'), the stages, and the comparison rows (one device, uniform split, makespan plan,
this plan), as the report layer computed them (`report.pipeline.pipeline_view`). Above
them, the **micro-batch timeline**: one row per device (its stages), one bar per task (a
micro-batch's forward or backward ops there, from the first op's start to the last op's
end: `pipeline.schedule.Task`), coloured by micro-batch, backward bars lighter and
labelled `B`, and a grey bar `AR` on each device of an all-reduce's ring while it runs;
the other gaps between bars are the bubble. It has S × M × 2 task bars at most, however
many ops the graph has.

Only SVG attributes and the report's existing classes are used, so a page without a
pipeline is byte for byte what it was. Every name is escaped (`svg.esc`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..model import Op, Problem
from ..pipeline.allreduce import AllReduce
from ..pipeline.schedule import PipelineRun, Task
from ..pipeline.verdict import memory_words, pipeline_breaks
from ..report.views import PipelineRow, PipelineView
from ..simulate import SimResult
from ..units import format_bytes, format_bytes_of, format_seconds
from .figures import format_gap
from .pipeline import allreduce_line, period_gap, rate, stage_columns
from .svg import coord, esc, svg_open
from .timeline import LEFT, RIGHT, WIDTH, TimeAxis, axis_marks

__all__ = ["pipeline_section_html", "timeline_svg"]

#: micro-batch colours (Okabe–Ito, then Tableau), cycled
COLOURS: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#8c564b",
    "#7f7f7f", "#bcbd22", "#17becf", "#000000",
)
ROW = 30
LEFT_CELL, BAD_CELL = ' class="l"', ' class="status-bad"'
BACKWARD_OPACITY = 0.5


def _s(x: float) -> str:
    return format_seconds(x) if math.isfinite(x) else "∞"


def pipeline_section_html(problem: Problem, view: PipelineView,
                          result: SimResult | None = None) -> str:
    """The section: figures, the micro-batch timeline, the stages and the comparison; with
    `result` (the plan's one pass), what keeps it from running as the pipeline, in words."""
    run, bound = view.rows[-1].run, view.bound
    pipeline = problem.pipeline
    asked = run.schedule if pipeline is None else pipeline.schedule
    if pipeline is not None and pipeline.schedule_spec.virtual_stages:
        asked += f" ({pipeline.stages_per_device} stages per device)"
    if not asked.startswith(run.schedule):
        asked += f", run as {run.schedule}"
    figures = {
        "schedule": asked,
        "micro-batches": str(run.microbatches),
        "stages": str(len(run.stages)),
        "iteration (simulated)": _s(run.iteration_s),
        "per micro-batch": _s(run.time_per_microbatch_s),
        "iteration bound": _s(bound.iteration_s),
        "period T": _s(run.period_s),
        "period bound": f"{_s(bound.period_s)} ({bound.reason})",
        "period gap": (f"none: no plan fits ({bound.no_plan})" if bound.no_plan
                       else format_gap(period_gap(run, bound))),
        "bubble": f"{run.bubble_fraction:.1%}",
        "throughput": f"{rate(run.throughput)} samples/s ("
                      f"{1 if pipeline is None else pipeline.microbatch_size} per micro-batch)",
    }
    if run.allreduce_s:
        figures["all-reduce"] = allreduce_line(problem, run)
    cells = "".join(f'<div><span>{esc(k)}</span><b>{esc(v)}</b></div>'
                    for k, v in figures.items())
    notes = [n for n in (run.note, *view.notes) if n]
    # what breaks it, as solve's and simulate's exit 3 judge it (`pipeline.verdict`)
    breaks = [] if result is None else pipeline_breaks(problem, result, run)
    if breaks or not view.rows[-1].fits:
        notes.insert(0, "does not run as this pipeline: " + "; ".join(breaks or [
            memory_words(problem, run) + " (stages below)"]))
    noted = "".join(f'<p class="note">{esc(n)}</p>' for n in notes)
    return ('<h2>Pipeline</h2>'
            f'<div class="figures">{cells}</div>{noted}'
            '<figure><figcaption>Micro-batch timeline: devices × time, one iteration'
            f'</figcaption>{_legend(run)}{timeline_svg(problem, run)}'
            '<p class="note">One bar per task: a micro-batch\'s forward (F) or backward (B) '
            'work on a device, from its first op\'s start to its last op\'s end; colours: '
            'micro-batches, backward lighter'
            + ('; grey (AR): a gradient all-reduce on the devices of its ring; the other gaps '
               'are the bubble' if run.allreduces else '; the gaps are the bubble')
            + '.</p></figure>'
            f'<h3>Stages</h3>{_stages_table(problem, run)}'
            f'<h3>Compared, under the same pipeline</h3>{_compared_table(view.rows)}'
            '<h2>One pass</h2>')


def _legend(run: PipelineRun) -> str:
    shown = min(run.microbatches, len(COLOURS))
    items = "".join(f'<span><i style="background:{COLOURS[m]}"></i>micro-batch {m}</span>'
                    for m in range(shown))
    more = (f'<span><small>… colours repeat every {len(COLOURS)}</small></span>'
            if run.microbatches > len(COLOURS) else "")
    return (f'<div class="legend cats">{items}{more}<span><i style="background:#0072B2">'
            f'</i>F forward</span><span><i style="background:#0072B2;opacity:'
            f'{BACKWARD_OPACITY}"></i>B backward</span></div>')


def timeline_svg(problem: Problem, run: PipelineRun, width: int = WIDTH) -> str:
    """The micro-batch timeline of `run` (module docstring): `<svg data-chart="pipeline">`,
    its bars `<rect class="task" data-mb data-dir="fwd|bwd" data-stage>`."""
    devs, ops = problem.cluster.devices, problem.graph.ops
    lanes: dict[int, list[Task]] = {}
    for task in run.tasks:
        lanes.setdefault(task.device, []).append(task)
    ends = [task.end_s for task in run.tasks if math.isfinite(task.end_s)]
    span = run.iteration_s if math.isfinite(run.iteration_s) else 0.0
    axis = TimeAxis(max([span, *ends, 1e-12]), LEFT, width - LEFT - RIGHT)
    stages_of: dict[int, list[int]] = {}
    for k, s in enumerate(run.stages):
        for d in s.devices:  # a replicated stage's lane on each of its replicas
            stages_of.setdefault(d, []).append(k)
    top = 24
    bottom = top + ROW * max(1, len(lanes))
    out = [svg_open("pipeline", width, bottom + 24)]
    for row, d in enumerate(lanes):
        y = top + row * ROW
        ks = stages_of.get(d, [])
        label = f"stage{'s' if len(ks) > 1 else ''} {', '.join(map(str, ks))}"
        busy = (run.busy_s[d] / axis.span_s if d < len(run.busy_s) else 0.0)
        mid = coord(y + ROW / 2 + 4)
        out.append(f'<rect class="lane" x="{axis.left}" y="{y + 2}" width="{axis.plot_width}" '
                   f'height="{ROW - 4}"/><text x="8" y="{mid}">{esc(devs[d].name)} <tspan '
                   f'class="muted">{esc(label)}</tspan></text><text class="muted" '
                   f'x="{axis.left + axis.plot_width + 8}" y="{mid}">busy {100 * busy:.0f}%'
                   '</text>')
    out += axis_marks(axis, top, bottom, span, None, end="iteration")
    out.append('<g class="tasks">')
    for row, d in enumerate(lanes):
        for task in lanes[d]:
            out.append(_bar(task, top + row * ROW + 4, axis, devs[d].name,
                            _ops_text(ops, run.stages[task.stage].ops)))
    rows = {d: row for row, d in enumerate(lanes)}
    out += [_allreduce_bar(a, top + rows[d] * ROW + 4, axis, problem)
            for a in run.allreduces for d in a.devices if d in rows]
    out.append('</g></svg>')
    return "".join(out)


def _ops_text(ops: Sequence[Op], members: Sequence[int]) -> str:
    names = [ops[i].name for i in members]
    return "" if not names else names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"


def _bar(t: Task, y: float, axis: TimeAxis, device: str, ops: str) -> str:
    x0 = axis.x(t.start_s)
    w = max(axis.x(t.end_s) - x0, 0.6)
    colour = COLOURS[t.microbatch % len(COLOURS)]
    way = "forward" if t.forward else "backward"
    tag = f"{'F' if t.forward else 'B'}{t.microbatch}"
    opacity = "" if t.forward else f' fill-opacity="{BACKWARD_OPACITY}"'
    tip = (f"micro-batch {t.microbatch} {way} · stage {t.stage} on {device}"
           + (f" ({ops})" if ops else "")
           + f"\n{format_seconds(t.start_s)} → {format_seconds(t.end_s)} "
           f"({format_seconds(t.end_s - t.start_s)})")
    bar = (f'<rect class="task" data-mb="{t.microbatch}" data-dir="'
           f'{"fwd" if t.forward else "bwd"}" data-stage="{t.stage}" x="{coord(x0)}" '
           f'y="{coord(y)}" width="{coord(w)}" height="{ROW - 8}" fill="{colour}"{opacity} '
           f'stroke="rgba(0,0,0,.35)" stroke-width=".5" data-tip="{esc(tip)}"/>')
    if w > 7 * len(tag) + 4:
        bar += (f'<text class="oplabel" x="{coord(x0 + w / 2)}" y="{coord(y + 15)}" '
                f'text-anchor="middle">{tag}</text>')
    return bar


def _allreduce_bar(a: AllReduce, y: float, axis: TimeAxis, problem: Problem) -> str:
    """One device's share of an all-reduce: a grey bar while its ring runs."""
    x0 = axis.x(a.start_s)
    w = max(axis.x(a.end_s) - x0, 0.6)
    what = "a replicated stage's gradients" if a.kind == "replicas" else "a tied weight's gradient"
    ring = ", ".join(problem.cluster.devices[d].name for d in a.devices)
    tip = (f"all-reduce of {what} ({format_bytes(int(a.bytes))}) among {ring}\n"
           f"{format_seconds(a.start_s)} → {format_seconds(a.end_s)} "
           f"({format_seconds(a.end_s - a.start_s)})")
    bar = (f'<rect data-allreduce="{esc(a.kind)}" x="{coord(x0)}" y="{coord(y)}" '
           f'width="{coord(w)}" height="{ROW - 8}" fill="#999999" stroke="rgba(0,0,0,.35)" '
           f'stroke-width=".5" data-tip="{esc(tip)}"/>')
    if w > 18:
        bar += (f'<text class="oplabel" x="{coord(x0 + w / 2)}" y="{coord(y + 15)}" '
                'text-anchor="middle">AR</text>')
    return bar


def _stages_table(problem: Problem, run: PipelineRun) -> str:
    devs = problem.cluster.devices
    body = []
    for k, s in enumerate(run.stages):
        held, cap = run.memory_bytes[s.device], devs[s.device].memory_bytes
        over = ' class="status-bad"' if held > cap else ""
        shown, of = format_bytes_of(int(held), cap)
        where = ", ".join(devs[d].name for d in s.devices)  # its replicas, when replicated
        body.append(f'<tr><td>{k}</td><td class="l">{esc(where)}</td>'
                    f'<td>{len(s.ops)}</td><td>{esc(_s(s.busy_s))}</td>'
                    f'<td>{esc(_s(s.load_s))}</td><td{over}>{esc(shown)}</td><td>{esc(of)}</td></tr>')
    busy, load = stage_columns(run)
    return ('<table class="stages"><thead><tr><th>stage</th><th class="l">device</th>'
            f'<th>ops</th><th>{esc(busy)}</th><th>{esc(load)}</th><th>memory held</th>'
            f'<th>cap</th></tr></thead><tbody>{"".join(body)}</tbody></table>')


def _compared_table(compared: Sequence[PipelineRow]) -> str:
    cols = ("plan", "algorithm", "stages", "period T", "iteration", "per micro-batch",
            "bubble", "fits")
    head = "".join(f'<th{LEFT_CELL if c in ("plan", "algorithm") else ""}>{esc(c)}</th>'
                   for c in cols)
    body = []
    for r in compared:
        cells = (r.label, r.algorithm, str(len(r.run.stages)), _s(r.run.period_s),
                 _s(r.run.iteration_s), _s(r.run.time_per_microbatch_s),
                 f"{r.run.bubble_fraction:.1%}", "yes" if r.fits else "no")
        body.append("<tr>" + "".join(
            f'<td{LEFT_CELL if k < 2 else BAD_CELL if k == 7 and not r.fits else ""}>'
            f'{esc(v)}</td>' for k, v in enumerate(cells)) + "</tr>")
    return (f'<table class="compared"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')
