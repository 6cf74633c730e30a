"""Terminal views of a simulated plan: summary, per-device table, transfers, Gantt chart.

The Gantt chart draws one row per device with a fixed number of time buckets; each cell's
shade is how busy the device is in that bucket, so it stays readable for 10,000 ops. Small
plans (few ops per device) also get op labels in their bars.
"""

from __future__ import annotations

import contextlib
import heapq
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..bounds import Bounds
from ..model import Problem
from ..signals import stops_to_the_main_thread
from ..simulate import SimResult
from ..units import format_bytes, format_bytes_of, format_percent_of, format_seconds
from .diagnostics import printable
from .figures import bound_text, feasible_label, one_pass

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
    t.add_row("makespan (simulated)" if problem.pipeline is None else
              "makespan (one pass, simulated)", _time(result.makespan_s))
    t.add_row(one_pass(problem, "lower bound"),
              bound_text(result.makespan_s, bounds.makespan_s, result.feasible))
    t.add_row(feasible_label(problem),
              "yes" if result.feasible else
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
        pct = format_percent_of(peak, cap) if cap else "0.0"
        t.add_row(_n(dev.name), str(n), _time(result.busy_s[d]),
                  f"{100 * result.busy_s[d] / span:.1f}" if span else "-",
                  " / ".join(format_bytes_of(peak, cap)),
                  f"[red]{pct}[/]" if peak > cap else pct)
    return t


def transfer_table(problem: Problem, result: SimResult, top: int = 5) -> Table | None:
    """The largest transfers (by bytes, then start time)."""
    if not result.transfers:
        return None
    t = Table(title=f"largest transfers ({len(result.transfers)} in all)", title_justify="left")
    for col in ("tensor of", "from", "to", "bytes", "start", "end"):
        t.add_column(col)
    ops, devs = problem.graph.ops, problem.cluster.devices
    # `sorted(...)[:top]`, ties included (documented so), without sorting 90k transfers
    ranked = heapq.nsmallest(top, result.transfers,
                             key=lambda x: (-x.bytes, x.start_s, x.src_op))
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
    for d in range(len(devs)):
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
        # any busy time shows (at least `░`): a blank read lighter than the idle `·`
        row = "".join(_SHADES[max(1, min(4, round(f * 4)))] if f > 0 else "·" for f in busy)
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


#: what people read for a solution-info key (the JSON keeps the keys)
INFO_LABELS: Mapping[str, str] = {
    "solver": "solver",
    "objective_s": "solver's objective",
    "bound_s": "proven bound",
    "reason": "reason",
    "stopped": "search stopped",
}


def info_label(key: str) -> str:
    """The printed label of a solution-info key: `INFO_LABELS`, else the key in words
    (`time_limit_s` -> `time limit`), never a raw `_s` key."""
    if key in INFO_LABELS:
        return INFO_LABELS[key]
    for suffix in ("_s", "_bytes", "_Bps"):
        key = key.removesuffix(suffix)
    return key.replace("_", " ")


def fmt_info(info: Mapping[str, Any], keys: Sequence[str]) -> dict[str, str]:
    """Selected solution-info entries as display strings, under human labels."""
    out = {}
    for k in keys:
        if k in info and info[k] is not None:
            v = info[k]
            if k.endswith("_s") and isinstance(v, float):
                out[info_label(k)] = format_seconds(v)
            else:
                out[info_label(k)] = str(v)
    return out


# -- live progress of `solve` -------------------------------------------------------------

#: seconds between plain progress lines when stderr is not a terminal (CI logs)
PROGRESS_INTERVAL_ENV = "PLANNER_PROGRESS_INTERVAL"
DEFAULT_PROGRESS_INTERVAL_S = 5.0
# The algorithms report (fraction, message); the best makespan so far is in the message of
# those that have one: `search: best 12.345 ms`, `cpsat incumbent 0.0123 s`.
_BEST = re.compile(r"\b(?:best|incumbent) ([0-9.]+(?:e[+-]?[0-9]+)?) (ms|s)\b")


class SolveProgress:
    """What `solve` shows while an algorithm runs: elapsed time, phase, best makespan so
    far, the lower bound and the gap between them. `update` is the algorithms'
    `Options.progress` callback; rendering reads the clock, so the elapsed time moves even
    while no progress arrives."""

    def __init__(self, algorithm: str, n_ops: int, limit_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.algorithm, self.n_ops, self.limit_s = algorithm, n_ops, limit_s
        self.clock = clock
        self.started = clock()
        self.phase = f"placing {n_ops} ops"
        self.fraction = 0.0
        self.best_s: float | None = None
        self.bound_s: float | None = None

    def begin(self) -> None:
        """Count the elapsed time from now, when the algorithm starts (after the lower
        bound): the time shown and the report's `planning time` then measure one run."""
        self.started = self.clock()

    def update(self, fraction: float, message: str) -> None:
        """Record a progress report of the algorithm."""
        self.fraction = max(self.fraction, min(1.0, fraction))
        m = _BEST.search(message)
        if m is None:
            self.phase = message
            return
        self.phase = message[:m.start()].rstrip(" ,:") or self.phase  # the figure is shown apart
        best = float(m.group(1)) * (1e-3 if m.group(2) == "ms" else 1.0)
        self.best_s = best if self.best_s is None else min(self.best_s, best)

    def line(self) -> str:
        """One line that fits 80 columns with the spinner: `auto · 2.9/10 s · search:
        from heft · best 199.4 ms · bound 168.6 ms · gap 18.3%` (gap as everywhere:
        (best - bound) / bound)."""
        elapsed = self.clock() - self.started
        parts = [self.algorithm, f"{elapsed:.1f}/{self.limit_s:g} s" if self.limit_s > 0
                 else f"{elapsed:.1f} s", self.phase]
        if self.best_s is not None:
            parts.append(f"best {_short_time(self.best_s)}")
        if self.bound_s is not None:
            parts.append(f"bound {_short_time(self.bound_s)}")
        if self.best_s is not None and self.bound_s:
            parts.append(f"gap {100 * max(0.0, self.best_s / self.bound_s - 1):.1f}%")
        return " · ".join(parts)

    def __rich__(self) -> str:
        return self.line()


def _short_time(seconds: float) -> str:
    """4 significant digits in the unit that reads short (`200.6 ms`)."""
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= factor:
            return f"{seconds / factor:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


@contextlib.contextmanager
def live_progress(progress: SolveProgress) -> Iterator[None]:
    """Show `progress` on stderr for the duration: a spinner whose text follows it on a
    terminal; otherwise a plain line every `PLANNER_PROGRESS_INTERVAL` seconds (default 5;
    0 turns the lines off), the first after one interval, so quick runs print nothing."""
    if sys.stderr.isatty():
        with Console(stderr=True).status(progress):
            yield
        return
    with plain_progress_lines(progress.line):
        yield


@contextlib.contextmanager
def plain_progress_lines(line: Callable[[], str]) -> Iterator[None]:
    """Write `planner: {line()}` to stderr every `progress_interval()` seconds (the first
    after one interval) for the duration; nothing when the interval is 0."""
    interval = progress_interval()
    if interval <= 0:
        yield
        return
    stop = threading.Event()

    def tick() -> None:
        stops_to_the_main_thread()
        while not stop.wait(interval):
            try:
                sys.stderr.write(f"planner: {line()}\n")
                sys.stderr.flush()
            except (OSError, ValueError):  # stderr closed: nothing left to tell
                return

    ticker = threading.Thread(target=tick, name="planner-progress", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()


def progress_interval() -> float:
    """Seconds between plain progress lines (`PLANNER_PROGRESS_INTERVAL`, default 5)."""
    text = os.environ.get(PROGRESS_INTERVAL_ENV, "")
    try:
        value = float(text) if text.strip() else DEFAULT_PROGRESS_INTERVAL_S
    except ValueError:
        return DEFAULT_PROGRESS_INTERVAL_S
    return value if math.isfinite(value) else DEFAULT_PROGRESS_INTERVAL_S
