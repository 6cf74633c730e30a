"""`planner compare`: algorithms side by side across bandwidths, memory caps, devices,
objectives and micro-batch counts.

A thin shell over `planner.compare`: parse the options, run the sweep with a progress bar on
stderr, print the tables on stdout (or the rows as JSON with `--json`), write `--out` and
`--html`. User errors are `PlannerError`s (the CLI turns them into exit codes); Ctrl-C
stops the sweep with exit code 130, and the rows already finished stay in `--resume FILE`.

Registered by `planner.cli` in `LAZY_COMMANDS`: imported only when `planner compare` runs.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path
from typing import Annotated, Any, Self

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ..algorithms import completions, names, taking
from ..compare import sweep
from ..compare.rows import Row, columns, file_format, to_json_row, write_rows
from ..compare.sweep import (
    DEFAULT_ALGORITHMS,
    SweepResult,
    best_plans,
    held_settings,
    plan_sweep,
)
from ..errors import PlannerWarning, render_all
from ..files import check_outputs, output_path
from ..render.compare_html import write_compare_html
from ..render.diagnostics import eprint, source_texts
from ..render.tables import print_tables
from ..render.terminal import plain_progress_lines
from ..report.compare import compare_report
from ..version import __version__
from .guard import EXIT_INTERRUPTED, JsonReport, guard, interrupted_diagnostic, stdout_console
from .options import LimitOption, RootOption

#: the option help, generated from the algorithm registry
_HELP_ALGOS = "Comma-separated algorithms: " + ", ".join(names()) + "."
#: the algorithms with a time-bounded phase (those that take `--time-limit` in `solve`)
_HELP_TIME_LIMIT = ("Seconds per run for the exact or search phase "
                    f"({', '.join(taking('time_limit_s'))}); 0 as in `solve`: none. The "
                    "other algorithms run as `solve` runs them, whatever it says.")


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
    objective: Annotated[str | None, typer.Option(
        "--objective", help="Plan each point for its makespan (one pass) or as a pipeline "
        "(makespan,pipeline); a plan without pipeline settings gets 1f1b and 8 "
        "micro-batches. Default: as the spec says.")] = None,
    microbatches: Annotated[str | None, typer.Option(
        "--microbatches", help="The pipeline's micro-batch counts (4,8,16), for points "
        "under the pipeline objective. Default: as the spec says.")] = None,
    time_limit: Annotated[float, typer.Option("--time-limit", help=_HELP_TIME_LIMIT)] = 60.0,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", help="Worker processes (default: the machine's cores).",
        show_default=False)] = None,
    executor: Annotated[str, typer.Option(
        "--executor", help="local (a process pool) or ray (RAY_ADDRESS, else a local Ray "
        "instance; needs `pip install 'planner[ray]'`).")] = "local",
    out: Annotated[Path | None, typer.Option(
        "--out", parser=output_path,
        help="Write every row here: .csv, .json (an array) or .jsonl.")] = None,
    html: Annotated[Path | None, typer.Option(
        "--html", parser=output_path,
        help="Write a self-contained HTML report (charts, Gantt, memory).")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON document on stdout: the rows (an array) as its "
        "result (no tables).")] = False,
    resume: Annotated[Path | None, typer.Option(
        "--resume", parser=output_path,
        help="Append rows to this .csv or .jsonl file as they finish; points "
        "already in it, computed from the spec's current content, are not run again.")
    ] = None,
    limit: LimitOption = None,
    root: RootOption = None,
) -> None:
    """Compare placement algorithms across specs, bandwidths, memory caps and device counts."""
    with guard("compare", as_json) as report:
        _compare(report, specs, algos, plan=plan, bandwidth=bandwidth, memory=memory,
                 devices=devices, objective=objective, microbatches=microbatches,
                 time_limit=time_limit, jobs=jobs, executor=executor, out=out, html=html,
                 resume=resume)


def _compare(report: JsonReport, specs: list[Path] | None, algos: str, *, plan: str | None,
             bandwidth: str | None, memory: str | None, devices: str | None,
             objective: str | None, microbatches: str | None, time_limit: float,
             jobs: int | None, executor: str, out: Path | None, html: Path | None,
             resume: Path | None) -> None:
    check_outputs({"--out": out, "--html": html, "--resume": resume},
                  [("SPEC", s) for s in specs or []],
                  stdout="--json prints the rows on standard output")
    for option, rows_file in (("--out", out), ("--resume", resume)):  # before the sweep
        if rows_file is not None:
            file_format(rows_file, option)
    with warnings.catch_warnings():  # printed below, as diagnostics, not Python's way
        warnings.simplefilter("ignore", PlannerWarning)
        points = plan_sweep(specs or [], algos, plan=plan, bandwidths=bandwidth,
                            memories=memory, devices=devices, objectives=objective,
                            microbatches=microbatches, time_limit_s=time_limit)
    # again, now that the specs are read: those found in folders and their imports are
    # inputs too (`compare . --html resnet.plan` replaced the spec with the report)
    check_outputs({"--out": out, "--html": html, "--resume": resume}, points.inputs)
    err = Console(stderr=True, soft_wrap=False)
    if points.warnings:
        report.diagnostics.extend(points.warnings)
        if not report.enabled:
            sys.stderr.write(render_all(points.warnings, source_texts(points.warnings)) + "\n")
    try:
        with _Progress(err) as progress:
            # through the module: a test (or a caller) may replace `run_sweep`
            result = sweep.run_sweep(points, executor=executor, jobs=jobs,
                                     resume=str(resume) if resume else None,
                                     keep_plans=html is not None, progress=progress.update)
    except KeyboardInterrupt:
        where = (f"finished rows are in {resume}; run the same command again to carry on"
                 if resume else "nothing was saved; use --resume FILE to keep finished rows")
        stopped = interrupted_diagnostic(where)  # E607, exit 130
        report.diagnostics.append(stopped)
        if not report.enabled:
            sys.stderr.write("\n")  # off the progress line
            eprint(render_all([stopped]))
        raise typer.Exit(EXIT_INTERRUPTED) from None

    # one report for the tables and the HTML (its best plans only drawn there)
    summary = (compare_report(result.rows, best_plans(result), held_settings(result))
               if html is not None else compare_report(result.rows))
    if report.enabled:
        fields = columns(result.rows)
        report.result = [to_json_row(r, fields) for r in result.rows]
    else:
        print_tables(stdout_console(), summary)
    if out is not None:
        write_rows(out, result.rows)
        sys.stderr.write(f"wrote {out} ({len(result.rows)} rows)\n")
    if html is not None:
        write_compare_html(str(html), summary)
        sys.stderr.write(f"wrote {html}\n")
    _footer(result)


def _footer(result: SweepResult) -> None:
    failed = sum(1 for r in result.rows if r["status"] not in ("optimal", "feasible",
                                                               "fallback"))
    text = f"{len(result.rows)} runs: {result.ran} run now"
    if result.reused:
        text += f", {result.reused} from the resume file"
    if result.stale:
        text += (f", {result.stale} stale rows run again (made from other spec content, or "
                 "without spec_sha256)")
    if result.other_version:
        made = ", ".join(v or "no version recorded" for v in result.versions)
        text += (f", {result.other_version} rows of another planner version run again "
                 f"({made}; this is {__version__})")
    if failed:
        text += f"; {failed} without a valid plan (see status and reason)"
    sys.stderr.write(text + "\n")


class _Progress:
    """A rich progress bar with an ETA on stderr; when stderr is not a terminal (CI logs),
    a plain line every few seconds instead (`render.terminal.plain_progress_lines`)."""

    def __init__(self, console: Console) -> None:
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
