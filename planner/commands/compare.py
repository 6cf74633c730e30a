"""`planner compare`: algorithms side by side across bandwidths, memory caps and devices.

A thin shell over `planner.compare`: parse the options, run the sweep with a progress bar on
stderr, print the tables on stdout (or the rows as JSON with `--json`), write `--out` and
`--html`. User errors are `PlannerError`s (the CLI turns them into exit codes); Ctrl-C
stops the sweep with exit code 130, and the rows already finished stay in `--resume FILE`.

Registered by `planner.cli` in `LAZY_COMMANDS`: imported only when `planner compare` runs.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Self, TypeGuard

import typer
from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ..algorithms import completions, names, taking
from ..compare import DEFAULT_ALGORITHMS, Row, SweepResult, wins
from ..render.diagnostics import stdout_console
from .load_options import LimitOption, RootOption

#: the option help, generated from the algorithm registry
_HELP_ALGOS = "Comma-separated algorithms: " + ", ".join(names()) + "."
#: the algorithms with a time-bounded exact phase (those that take `--gap` in `solve`)
_HELP_TIME_LIMIT = f"Seconds per run for exact solvers ({', '.join(taking('gap'))})."


def _complete_algos(incomplete: str) -> list[tuple[str, str]]:
    """`--algos`' shell completion: the last name of the comma-separated list."""
    head, comma, last = incomplete.rpartition(",")
    return [(head + comma + name, summary) for name, summary in completions(last)]


def compare_command(
    specs: Annotated[list[Path] | None, typer.Argument(
        help="Spec files or folders (*.plan, recursively). Default: every plan in ./specs.",
        show_default=False)] = None,
    algos: Annotated[str, typer.Option(
        "--algos", help=_HELP_ALGOS, autocompletion=_complete_algos)] = ",".join(
        DEFAULT_ALGORITHMS),
    plan: Annotated[str | None, typer.Option(
        "--plan", help="Only this plan of each spec.")] = None,
    bandwidth: Annotated[str | None, typer.Option(
        "--bandwidth", help="Set every link to each bandwidth (1GB/s,10GB/s,100GB/s), or "
        "scale the spec's links (0.5x,2x). Default: as the spec says.")] = None,
    memory: Annotated[str | None, typer.Option(
        "--memory", help="Scale every device's memory cap (50%,75%,100%), or set it "
        "(8GiB). Default: 100%.")] = None,
    devices: Annotated[str | None, typer.Option(
        "--devices", help="Keep the first N devices of the cluster (2,4,8); pins to removed "
        "devices are dropped (noted in the row's reason). Default: all.")] = None,
    time_limit: Annotated[float, typer.Option("--time-limit", help=_HELP_TIME_LIMIT)] = 60.0,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", help="Worker processes (default: the machine's cores).",
        show_default=False)] = None,
    executor: Annotated[str, typer.Option(
        "--executor", help="local (a process pool) or ray (RAY_ADDRESS, else a local Ray "
        "instance; needs `pip install 'planner[ray]'`).")] = "local",
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write every row here: .csv, .json (an array) or .jsonl.")] = None,
    html: Annotated[Path | None, typer.Option(
        "--html", help="Write a self-contained HTML report (charts, Gantt, memory).")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON document on stdout: the rows (an array) as its "
        "result (no tables).")] = False,
    resume: Annotated[Path | None, typer.Option(
        "--resume", help="Append rows to this .csv or .jsonl file as they finish; points "
        "already in it are not run again.")] = None,
    limit: LimitOption = None,
    root: RootOption = None,
) -> None:
    """Compare placement algorithms across specs, bandwidths, memory caps and device counts."""
    from ..render.diagnostics import guard

    with guard("compare", as_json) as report:
        _compare(report, specs, algos, plan=plan, bandwidth=bandwidth, memory=memory,
                 devices=devices, time_limit=time_limit, jobs=jobs, executor=executor,
                 out=out, html=html, resume=resume)


def _compare(report: Any, specs: list[Path] | None, algos: str, *, plan: str | None,
             bandwidth: str | None, memory: str | None, devices: str | None,
             time_limit: float, jobs: int | None, executor: str, out: Path | None,
             html: Path | None, resume: Path | None) -> None:
    from ..compare import best_plans, plan_sweep, run_sweep, write_rows
    from ..errors import render_all
    from ..render.diagnostics import EXIT_INTERRUPTED, interrupted_diagnostic
    from .outputs import check_outputs

    check_outputs({"--out": out, "--html": html, "--resume": resume})
    sweep = plan_sweep(specs or [], algos, plan=plan, bandwidths=bandwidth, memories=memory,
                       devices=devices, time_limit_s=time_limit)
    err = Console(stderr=True, soft_wrap=False)
    if sweep.warnings:
        report.diagnostics.extend(sweep.warnings)
        if not report.enabled:
            sys.stderr.write(render_all(sweep.warnings) + "\n")
    try:
        with _Progress(err) as progress:
            result = run_sweep(sweep, executor=executor, jobs=jobs,
                               resume=str(resume) if resume else None,
                               keep_plans=html is not None, progress=progress.update)
    except KeyboardInterrupt:
        where = (f"finished rows are in {resume}; run the same command again to carry on"
                 if resume else "nothing was saved; use --resume FILE to keep finished rows")
        report.diagnostics.append(interrupted_diagnostic(where))
        if not report.enabled:
            sys.stderr.write(f"\ninterrupted: {where}\n")
        raise typer.Exit(EXIT_INTERRUPTED) from None

    if report.enabled:
        from ..compare.rows import to_json_row

        report.result = [to_json_row(r) for r in result.rows]
    else:
        print_tables(stdout_console(), result.rows)
    if out is not None:
        write_rows(out, result.rows)
        sys.stderr.write(f"wrote {out} ({len(result.rows)} rows)\n")
    if html is not None:
        from ..render.html import write_compare_html

        write_compare_html(str(html), result.rows, best_plans(result))
        sys.stderr.write(f"wrote {html}\n")
    _footer(result)


def _footer(result: SweepResult) -> None:
    failed = sum(1 for r in result.rows if r["status"] not in ("optimal", "feasible",
                                                               "fallback"))
    text = f"{len(result.rows)} runs: {result.ran} run now"
    if result.reused:
        text += f", {result.reused} from the resume file"
    if failed:
        text += f"; {failed} without a valid plan (see status and reason)"
    sys.stderr.write(text + "\n")


class _Progress:
    """A rich progress bar with an ETA on stderr; when stderr is not a terminal (CI logs),
    a plain line every few seconds instead (`render.terminal.plain_progress_lines`)."""

    def __init__(self, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.enabled = console.is_terminal
        self.progress = Progress(
            TextColumn("[bold]compare"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.description}"), TimeElapsedColumn(), TextColumn("ETA"),
            TimeRemainingColumn(), console=console, transient=True,
            disable=not self.enabled)
        self.task: Any = None
        self.done, self.total, self.last = 0, 0, ""
        self.started = time.monotonic()
        self.lines: Any = None

    def __enter__(self) -> Self:
        self.progress.__enter__()
        if not self.enabled:
            from ..render.terminal import plain_progress_lines

            self.lines = plain_progress_lines(self.line)
            self.lines.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.lines is not None:
            self.lines.__exit__(*exc)
        self.progress.__exit__(*exc)  # type: ignore[arg-type]

    def line(self) -> str:
        """`compare · 3/12 runs · 4.1 s · last: metf · fork.plan` (the plain line)."""
        last = f" · last: {self.last}" if self.last else ""
        return (f"compare · {self.done}/{self.total} runs · "
                f"{time.monotonic() - self.started:.1f} s{last}")

    def update(self, done: int, total: int, row: Row | None) -> None:
        """The `run_sweep` progress callback."""
        self.done, self.total = done, total
        if self.task is None:
            self.task = self.progress.add_task("", total=total, completed=done)
            return
        label = "" if row is None else f"{row['algorithm']} · {Path(row['spec']).name}"
        self.last = label or self.last
        self.progress.update(self.task, completed=done, description=label)


# -- tables -------------------------------------------------------------------------------


def _num(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _ratio(v: Any) -> str:
    return f"{v:.3f}" if _num(v) else "—"


def short_seconds(x: Any, digits: int = 4) -> str:
    """A duration in `digits` significant digits and the unit that reads short (`4.42 ms`)."""
    if not _num(x):
        return "—"
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(x) >= factor:
            return f"{x / factor:.{digits}g} {unit}"
    return f"{x / 1e-9:.{digits}g} ns"


def _memory(r: Mapping[str, Any]) -> str:
    """`peak/cap unit` in the cap's unit, e.g. `63/128 MiB` (the most loaded device)."""
    peak, cap = r.get("peak_memory_bytes"), r.get("memory_cap_bytes")
    if not (_num(peak) and _num(cap)):
        return "—"
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2),
                         ("KiB", 1024), ("B", 1)):
        if cap >= factor or unit == "B":
            return f"{peak / factor:.3g}/{cap / factor:.3g} {unit}"
    return "—"  # pragma: no cover


def settings_title(rows: Sequence[Mapping[str, Any]]) -> str:
    """`spec · plan · bandwidth B · memory M · devices D` of a group of rows."""
    r0 = rows[0]
    return (f"{r0['spec']} · {r0['plan']} · bandwidth {r0['bandwidth']} · memory "
            f"{r0['memory']} · devices {r0['devices']}")


def _ok(r: Mapping[str, Any]) -> bool:
    return r["status"] in ("optimal", "feasible", "fallback") and _num(r.get("makespan_s"))


#: the columns of a settings table: header, justification, cell text of a row
_COLUMNS: tuple[tuple[str, str, Callable[[Mapping[str, Any]], str]], ...] = (
    ("algorithm", "left", lambda r: str(r["algorithm"])),
    ("makespan", "right", lambda r: short_seconds(r["makespan_s"]) if _ok(r) else "—"),
    ("×best", "right", lambda r: _ratio(r.get("ratio_to_best"))),
    ("×bound", "right", lambda r: _ratio(r.get("ratio_to_bound"))),
    ("status", "left", lambda r: str(r["status"])),
    ("planning", "right", lambda r: short_seconds(r.get("planning_s"), 3)),
    ("devs", "right", lambda r: f"{r['devices_used']}/{r['n_devices']}"
     if _num(r.get("devices_used")) and _num(r.get("n_devices")) else "—"),
    ("peak/cap", "right", _memory),
)


def settings_table(rows: Sequence[Mapping[str, Any]],
                   columns: Sequence[str] | None = None) -> Table:
    """One spec, plan and setting: a row per algorithm, with `columns` (default all; the
    title is printed apart, so that it never wraps)."""
    chosen = [c for c in _COLUMNS if columns is None or c[0] in columns]
    t = Table(box=box.SIMPLE_HEAD,
              pad_edge=False, padding=(0, 1), collapse_padding=True)
    for name, just, _ in chosen:
        t.add_column(name, justify=just, no_wrap=True)  # type: ignore[arg-type]
    for r in rows:
        style = "bold green" if _ok(r) and r.get("ratio_to_best") == 1.0 else (
            "" if _ok(r) else "red")
        t.add_row(*(cell(r) for _, _, cell in chosen), style=style)
    return t


def settings_tables(console: Console, rows: Sequence[Mapping[str, Any]]) -> list[Table]:
    """`settings_table`, split into several (each led by the algorithm) when it is wider
    than the console: a narrow terminal gets every number whole, never `18.6…`."""
    names = [c[0] for c in _COLUMNS]
    tables: list[list[str]] = [[names[0]]]
    for name in names[1:]:
        trial = [*tables[-1], name]
        if len(tables[-1]) > 1 and _width(console, settings_table(rows, trial)) > console.width:
            tables.append([names[0], name])
        else:
            tables[-1] = trial
    return [settings_table(rows, cols) for cols in tables]


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


WINS_TITLE = "wins (shortest simulated makespan per spec, plan and setting)"


def wins_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """Which algorithm won how often (ties count for each), with its mean ratio to best."""
    stats = wins(rows)
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    longest = max((len(str(a)) for a in stats), default=0)
    for name in ("algorithm", "wins", "settings", "valid plans", "failed", "geo-mean × best"):
        # headers may wrap; names and numbers never lose characters
        t.add_column(name, justify="left" if name == "algorithm" else "right",
                     min_width=longest if name == "algorithm" else 5)
    for algo, s in stats.items():
        ratios = [r["ratio_to_best"] for r in rows
                  if r["algorithm"] == algo and _num(r.get("ratio_to_best"))]
        mean = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None
        t.add_row(algo, str(s["wins"]), str(s["groups"]), str(s["ok"]), str(s["failed"]),
                  _ratio(mean))
    return t


def print_tables(console: Console, rows: Sequence[Mapping[str, Any]]) -> None:
    """A table per spec, plan and setting, then the wins summary."""
    from ..compare.rows import group_key

    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(group_key(r), []).append(r)
    for members in groups.values():
        console.print(Text(settings_title(members), style="bold"), soft_wrap=True)
        for table in settings_tables(console, members):
            console.print(table)
        notes = reason_notes(members)
        if notes:
            console.print(Text("\n".join(notes), style="dim"), overflow="fold")
        console.print()
    if rows:
        console.print(Text(WINS_TITLE, style="bold"), soft_wrap=True)
        console.print(wins_table(rows))
