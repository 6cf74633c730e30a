"""Terminal views of a simulated plan: summary, per-device table, transfers, Gantt chart.

The Gantt chart draws one row per device with a fixed number of time buckets; each cell's
shade is how busy the device is in that bucket, so it stays readable for 10,000 ops. Small
plans (few ops per device) also get op labels in their bars.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..bounds import Bounds
from ..model import Problem
from ..simulate import SimResult
from ..units import format_bytes, format_seconds
from .diagnostics import printable
from .figures import bound_text

_SHADES = " ░▒▓█"


def _n(name: str) -> str:
    """A name as a table cell: unsafe characters escaped (`printable`), and rich markup
    (`[red]`) shown as written. Specs cannot hold such names; placement files and
    library users can."""
    return escape(printable(name))


def summary_table(
    problem: Problem, result: SimResult, bounds: Bounds, extra: Mapping[str, str] | None = None
) -> Table:
    """Plan, makespan, lower bound and ratio, plus `extra` rows (algorithm, status, time)."""
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_row("plan", _n(problem.name))
    for k, v in (extra or {}).items():
        t.add_row(k, v)
    t.add_row("ops / edges / devices",
              f"{len(problem.graph.ops)} / {len(problem.graph.edges)} / "
              f"{len(problem.cluster.devices)}")
    t.add_row("cost model", f"memory {problem.memory_model}, contention {problem.contention}")
    t.add_row("makespan (simulated)", _time(result.makespan_s))
    t.add_row("lower bound", bound_text(result.makespan_s, bounds.makespan_s))
    t.add_row("feasible", "yes" if result.feasible else
              f"[red]no[/red] ({len(result.violations)} violation(s))")
    return t


def device_table(problem: Problem, result: SimResult) -> Table:
    """One row per device: ops, busy time and %, memory peak / cap."""
    t = Table(title="devices", title_justify="left")
    for col, just in (("device", "left"), ("ops", "right"), ("busy", "right"),
                      ("busy %", "right"), ("memory peak / cap", "right"), ("mem %", "right")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    span = result.makespan_s if 0 < result.makespan_s < float("inf") else 0.0
    for d, dev in enumerate(problem.cluster.devices):
        n = len(result.order[d]) if d < len(result.order) else 0
        peak = result.memory_peak_bytes[d]
        cap = dev.memory_bytes
        pct = 100 * peak / cap if cap else 0.0
        style = "red" if peak > cap else ""
        t.add_row(_n(dev.name), str(n), _time(result.busy_s[d]),
                  f"{100 * result.busy_s[d] / span:.1f}" if span else "-",
                  f"{format_bytes(peak)} / {format_bytes(cap)}", f"[{style}]{pct:.1f}[/]"
                  if style else f"{pct:.1f}")
    return t


def transfer_table(problem: Problem, result: SimResult, top: int = 5) -> Table | None:
    """The largest transfers (by bytes, then start time)."""
    if not result.transfers:
        return None
    t = Table(title=f"largest transfers ({len(result.transfers)} in all)", title_justify="left")
    for col in ("tensor of", "from", "to", "bytes", "start", "end"):
        t.add_column(col)
    ops, devs = problem.graph.ops, problem.cluster.devices
    ranked = sorted(result.transfers, key=lambda x: (-x.bytes, x.start_s, x.src_op))[:top]
    for x in ranked:
        t.add_row(_n(ops[x.src_op].name), _n(devs[x.src_device].name), _n(devs[x.dst_device].name),
                  format_bytes(x.bytes), format_seconds(x.start_s), format_seconds(x.end_s))
    return t


def gantt(problem: Problem, result: SimResult, width: int = 64) -> Text:
    """A text Gantt chart: one row per device, shaded by busy fraction per time bucket."""
    span = result.makespan_s
    devs = problem.cluster.devices
    names = [printable(d.name) for d in devs]
    name_w = max((len(n) for n in names), default=4)
    out = Text()
    if not span or span == float("inf"):
        return out
    bucket = span / width
    for d, dev in enumerate(devs):
        busy = [0.0] * width
        for i in result.order[d]:
            s, e = result.start_s[i], result.end_s[i]
            if e == float("inf"):
                continue
            b0, b1 = int(s / bucket), min(width - 1, int(e / bucket))
            for b in range(b0, b1 + 1):
                lo, hi = max(s, b * bucket), min(e, (b + 1) * bucket)
                if hi > lo:
                    busy[b] += (hi - lo) / bucket
        row = "".join(_SHADES[min(4, round(f * 4))] if f > 0 else "·" for f in busy)
        out.append(f"{names[d]:<{name_w}} │", style="bold")
        out.append(row, style="cyan")
        out.append("│\n")
    axis = f"{'':<{name_w}} 0{format_seconds(span):>{width}}"
    out.append(axis + "\n", style="dim")
    return out


def _time(t: float) -> str:
    return format_seconds(t) if t < float("inf") else "never"


def small_schedule(problem: Problem, result: SimResult, limit: int = 24) -> Table | None:
    """For small plans, the schedule itself: op, device, start, end."""
    n = len(problem.graph.ops)
    if n > limit:
        return None
    t = Table(title="schedule", title_justify="left")
    for col in ("op", "device", "start", "end"):
        t.add_column(col)
    order = sorted(range(n), key=lambda i: (result.start_s[i], result.placement[i], i))
    devs = problem.cluster.devices
    for i in order:
        d = result.placement[i]
        t.add_row(_n(problem.graph.ops[i].name), _n(devs[d].name) if 0 <= d < len(devs) else "-",
                  _time(result.start_s[i]), _time(result.end_s[i]))
    return t


def violations_text(problem: Problem, result: SimResult, limit: int = 20) -> Text:
    """The plan's violations, one per line (the first `limit`)."""
    out = Text()
    for v in result.violations[:limit]:
        out.append(f"{v.kind}: ", style="bold red")
        out.append(printable(v.message) + "\n")
    if len(result.violations) > limit:
        out.append(f"… and {len(result.violations) - limit} more\n")
    return out


def plan_report(
    problem: Problem, result: SimResult, bounds: Bounds, extra: Mapping[str, str] | None = None
) -> Group:
    """Everything `planner simulate` / `planner solve` print for people."""
    parts: list[Any] = [summary_table(problem, result, bounds, extra), Text(""),
                        device_table(problem, result)]
    tt = transfer_table(problem, result)
    if tt is not None:
        parts.append(tt)
    sched = small_schedule(problem, result)
    if sched is not None:
        parts.append(sched)
    parts += [Text("timeline (shade = busy fraction)", style="bold"), gantt(problem, result)]
    if result.violations:
        parts += [Text("violations", style="bold red"), violations_text(problem, result)]
    return Group(*parts)


def print_plan(console: Console, problem: Problem, result: SimResult, bounds: Bounds,
               extra: Mapping[str, str] | None = None) -> None:
    """Print `plan_report` to `console`."""
    console.print(plan_report(problem, result, bounds, extra))


def fmt_info(info: Mapping[str, Any], keys: Sequence[str]) -> dict[str, str]:
    """Selected solution-info entries as display strings."""
    out = {}
    for k in keys:
        if k in info and info[k] is not None:
            v = info[k]
            if k.endswith("_s") and isinstance(v, float):
                out[k] = format_seconds(v)
            else:
                out[k] = str(v)
    return out
