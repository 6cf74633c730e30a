"""The tables of `planner compare`: one per spec, plan and setting, then the wins.

`print_tables` prints them on a rich console; `settings_tables` splits a table that is
wider than the terminal into several (each led by the algorithm), so every number is shown
whole. The groups, the wins and which rows ran as a pipeline come computed
(`planner.report.compare.compare_report`).

A setting whose rows ran as a pipeline gets the pipeline's columns (`_PIPELINE_COLUMNS`:
iteration first, since `×best` compares iterations there, then time per micro-batch, the
period T against its bound, the bubble, and whether it fits the pipeline's memory (`mem
fits`: memory only, the status says whether the plan runs as a pipeline), whose peak / cap
it shows) before the one-pass makespan and its bound; other settings' tables
are as they always were.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from .. import schedules

if TYPE_CHECKING:
    from ..report.views import CompareReport, CompareRun, Wins


def _num(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _ratio(v: Any) -> str:
    return f"{v:.3f}" if _num(v) else "—"


def short_seconds(x: Any, digits: int = 4) -> str:
    """A duration in `digits` significant digits and the unit that reads short (`4.42 ms`)."""
    if not _num(x):
        return "—"
    units = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
    k = next((k for k, (_, factor) in enumerate(units) if abs(x) >= factor), len(units) - 1)
    text = f"{x / units[k][1]:.{digits}g}"
    if k and abs(float(text)) >= 1000:  # rounded up to the next unit: 999.96 us is 1 ms
        k -= 1
        text = f"{x / units[k][1]:.{digits}g}"
    if "e" in text:  # 12345 s, not 1.234e+04 s
        text = f"{x:.0f}"
    return f"{text} {units[k][0]}"


#: binary units, largest first, for `_memory`
_UNITS = (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024), ("B", 1))


def _amount(value: float, unit: str, factor: int, digits: int = 3) -> str:
    """`value` bytes in `unit`, `digits` significant digits (whole units at least), never
    in exponent notation."""
    x = value / factor
    text = f"{x:.{digits}g}"
    return f"{x:.0f}" if "e" in text or x == 0 else text


def _unit(value: float) -> tuple[str, int]:
    return next((u, f) for u, f in _UNITS if value >= f or u == "B")


def _memory(r: Mapping[str, Any]) -> str:
    """`peak/cap unit` in the cap's unit, e.g. `63/128 MiB` (the most loaded device); a peak
    below a hundredth of that unit in its own, e.g. `1.92 MiB/8 GiB`."""
    peak, cap = r.get("peak_memory_bytes"), r.get("memory_cap_bytes")
    if not (_num(peak) and _num(cap)):
        return "—"
    unit, factor = _unit(cap)
    if 0 < peak < factor / 100:
        own, of = _unit(peak)
        return f"{_amount(peak, own, of)} {own}/{_amount(cap, unit, factor)} {unit}"
    digits = _digits(peak, cap, factor)
    if digits is None:  # no float shows the difference (peaks beyond 2**53 bytes)
        sign = ">" if peak > cap else "<"
        return f"{sign}{_amount(cap, unit, factor)}/{_amount(cap, unit, factor)} {unit}"
    return f"{_amount(peak, unit, factor, digits)}/{_amount(cap, unit, factor, digits)} {unit}"


def _digits(peak: float, cap: float, factor: int) -> int | None:
    """3 significant digits, or as many more as it takes for a peak above the cap to read
    above it (`8.001/8 GiB`, not `8/8 GiB` beside `violated`) and one below it to read
    below it (`7.999/8 GiB`: a plan that fits never reads as full), as
    `units.format_bytes_of` rules; None where none do."""
    for digits in range(3, 18):
        shown = float(_amount(peak, "", factor, digits))
        of = float(_amount(cap, "", factor, digits))
        if peak == cap or (shown > of) == (peak > cap) and shown != of:
            return digits
    return None


def _pipe_memory(r: Mapping[str, Any]) -> str:
    """`_memory` of the most loaded device under the pipeline's memory model."""
    return _memory({"peak_memory_bytes": r.get("pipeline_memory_bytes"),
                    "memory_cap_bytes": r.get("pipeline_memory_cap_bytes")})


def settings_title(rows: Sequence[CompareRun]) -> str:
    """`spec · plan · bandwidth B · memory M · devices D` of a group of rows, then the
    objective when one was asked for, and the pipeline (`pipeline 8 micro-batches, 1f1b`)
    when the rows ran as one."""
    r0 = rows[0]
    text = (f"{r0['spec']} · {r0['plan']} · bandwidth {r0['bandwidth']} · memory "
            f"{r0['memory']} · devices {r0['devices']}")
    objective = r0.get("objective") or "spec"
    if objective != "spec":
        text += f" · objective {objective}"
    pipeline = pipeline_words(rows)
    return text + (f" · {pipeline}" if pipeline else "")


def pipeline_words(rows: Sequence[CompareRun]) -> str:
    """`8 micro-batches, 1f1b` of the rows that ran as a pipeline ("" where none did). Where
    they ran several schedules (a 1f1b plan whose devices are no chain of stages runs in
    gpipe's order), each with its algorithms, the later schedule of `schedules.NAMES`
    first: `8 micro-batches, 1f1b (pipedp, uniform), gpipe (msct, heft)`; before, the
    first row's schedule stood for all."""
    piped = [r for r in rows if r.pipeline]
    if not piped:
        return ""
    by_schedule: dict[str, list[str]] = {}
    for r in piped:
        algos = by_schedule.setdefault(str(r["schedule"]), [])
        if r["algorithm"] not in algos:
            algos.append(str(r["algorithm"]))
    order = sorted(by_schedule, key=lambda name: (
        -schedules.NAMES.index(name) if name in schedules.NAMES else 1, name))
    ran = (order[0] if len(order) == 1 else
           ", ".join(f"{name} ({', '.join(by_schedule[name])})" for name in order))
    return f"{piped[0]['n_microbatches']} micro-batches, {ran}"


def _ok(r: Mapping[str, Any]) -> bool:
    return r["status"] in ("optimal", "feasible", "fallback") and _num(r.get("makespan_s"))


#: the columns of a settings table: header, justification, cell text of a row
_COLUMNS: tuple[tuple[str, str, Callable[[Mapping[str, Any]], str]], ...] = (
    ("algorithm", "left", lambda r: str(r["algorithm"])),
    ("makespan", "right", lambda r: short_seconds(r["makespan_s"]) if _ok(r) else "—"),
    ("×best", "right", lambda r: _ratio(r.get("ratio_to_best"))),
    # beside a makespan only: a rejected plan's ratio (below 1 where memory forced the
    # bound up) is no claim about a plan that runs
    ("×bound", "right", lambda r: _ratio(r.get("ratio_to_bound")) if _ok(r) else "—"),
    ("status", "left", lambda r: str(r["status"])),
    ("planning", "right", lambda r: short_seconds(r.get("planning_s"), 3)),
    ("devs", "right", lambda r: f"{r['devices_used']}/{r['n_devices']}"
     if _num(r.get("devices_used")) and _num(r.get("n_devices")) else "—"),
    ("peak/cap", "right", _memory),
)

#: the columns of a setting whose rows ran as a pipeline (module docstring)
_PIPELINE_COLUMNS: tuple[tuple[str, str, Callable[[Mapping[str, Any]], str]], ...] = (
    _COLUMNS[0],
    ("iteration", "right", lambda r: short_seconds(r.get("iteration_s"))),
    _COLUMNS[2],
    ("per µbatch", "right", lambda r: short_seconds(r.get("time_per_microbatch_s"))),
    ("T", "right", lambda r: short_seconds(r.get("period_s"))),
    ("T bound", "right", lambda r: short_seconds(r.get("period_bound_s"))),
    ("bubble", "right", lambda r: f"{r['bubble_fraction']:.1%}"
     if _num(r.get("bubble_fraction")) else "—"),
    # memory only (`pipeline_fits`): a plan that fits may still be no pipeline (status)
    ("mem fits", "left", lambda r: "—" if r.get("pipeline_fits") is None
     else ("yes" if r["pipeline_fits"] else "no")),
    ("pipe peak/cap", "right", _pipe_memory),
    # one pass's figures, shown as the pipeline's verdict may reject the plan that ran
    ("makespan", "right", lambda r: short_seconds(r["makespan_s"])),
    ("×bound", "right", lambda r: _ratio(r.get("ratio_to_bound"))),
    *_COLUMNS[4:7],
)


def _columns(rows: Sequence[CompareRun]
             ) -> tuple[tuple[str, str, Callable[[Mapping[str, Any]], str]], ...]:
    return _PIPELINE_COLUMNS if any(r.pipeline for r in rows) else _COLUMNS


def settings_table(rows: Sequence[CompareRun],
                   columns: Sequence[str] | None = None) -> Table:
    """One spec, plan and setting: a row per algorithm, with `columns` (default all; the
    title is printed apart, so that it never wraps)."""
    chosen = [c for c in _columns(rows) if columns is None or c[0] in columns]
    t = Table(box=box.SIMPLE_HEAD,
              pad_edge=False, padding=(0, 1), collapse_padding=True)
    for name, just, _ in chosen:
        t.add_column(name, justify=just, no_wrap=True)  # type: ignore[arg-type]
    for r in rows:
        style = "bold green" if _ok(r) and r.get("ratio_to_best") == 1.0 else (
            "" if _ok(r) else "red")
        t.add_row(*(cell(r) for _, _, cell in chosen), style=style)
    return t


def settings_tables(console: Console, rows: Sequence[CompareRun]) -> list[Table]:
    """`settings_table`, split into several (each led by the algorithm) when it is wider
    than the console: a narrow terminal gets every number whole, never `18.6…`."""
    return _split(console, [c[0] for c in _columns(rows)],
                  lambda cols: settings_table(rows, cols))


def _split(console: Console, names: Sequence[str],
           make: Callable[[Sequence[str]], Table]) -> list[Table]:
    """`make(columns)` for groups of `names`, each led by the first (the algorithm), as few
    as fit the console's width (a column wider than it alone gets a table of its own)."""
    tables: list[list[str]] = [[names[0]]]
    for name in names[1:]:
        trial = [*tables[-1], name]
        if len(tables[-1]) > 1 and _width(console, make(trial)) > console.width:
            tables.append([names[0], name])
        else:
            tables[-1] = trial
    return [make(cols) for cols in tables]


def _width(console: Console, table: Table) -> int:
    """The width `table` takes when nothing is cut (rich's measure is capped by the
    console's width, hence the wide options)."""
    return Measurement.get(console, console.options.update_width(10_000), table).maximum


def reason_notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """`algorithm: reason` lines for a table's rows, one line per distinct reason."""
    by_reason: dict[str, list[str]] = {}
    for r in rows:
        if r.get("reason"):
            by_reason.setdefault(str(r["reason"]), []).append(str(r["algorithm"]))
    return [f"  {', '.join(algos)}: {reason}" for reason, algos in by_reason.items()]


#: what a win is the least of (the terminal's title, the HTML page's note)
WINS_BY = "shortest simulated makespan"
#: ... when some settings ran as a pipeline
WINS_BY_PIPELINE = "shortest simulated makespan, or iteration where the setting ran as a pipeline"
WINS_TITLE = f"wins ({WINS_BY} per spec, plan and setting)"
#: the wins' title when some settings ran as a pipeline
WINS_TITLE_PIPELINE = f"wins ({WINS_BY_PIPELINE}, per spec, plan and setting)"


#: the wins table's columns, the algorithm first
WINS_COLUMNS = ("algorithm", "wins", "settings", "valid plans", "failed", "geo-mean × best")


def wins_table(stats: Sequence[Wins], columns: Sequence[str] | None = None) -> Table:
    """Which algorithm won how often (ties count for each), with its mean ratio to best;
    `columns` of `WINS_COLUMNS` (default all)."""
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    chosen = [i for i, name in enumerate(WINS_COLUMNS) if columns is None or name in columns]
    for i in chosen:  # `wins_tables` splits the table where it is wider than the terminal
        t.add_column(WINS_COLUMNS[i], justify="right" if i else "left", no_wrap=True)
    for s in stats:
        cells = (s.algorithm, str(s.wins), str(s.groups), str(s.ok), str(s.failed),
                 _ratio(s.mean_ratio))
        t.add_row(*(cells[i] for i in chosen))
    return t


def wins_tables(console: Console, stats: Sequence[Wins]) -> list[Table]:
    """`wins_table`, split as `settings_tables` (at 40 columns rich dropped the
    `geo-mean × best` column and cut the names)."""
    return _split(console, WINS_COLUMNS, lambda cols: wins_table(stats, cols))


def print_tables(console: Console, report: CompareReport) -> None:
    """A table per spec, plan and setting, then the wins summary."""
    for members in report.groups:
        console.print(Text(settings_title(members), style="bold"), soft_wrap=True)
        for table in settings_tables(console, members):
            console.print(table)
        notes = reason_notes(members)
        if notes:
            console.print(Text("\n".join(notes), style="dim"), overflow="fold")
        console.print()
    if report.runs:
        title = (WINS_TITLE_PIPELINE if any(r.pipeline for r in report.runs)
                 else WINS_TITLE)
        console.print(Text(title, style="bold"), soft_wrap=True)
        for table in wins_tables(console, report.wins):
            console.print(table)
