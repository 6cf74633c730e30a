"""The `planner` command line: a thin shell over the library.

Data goes to stdout, diagnostics and logs to stderr. Every expected failure is a
`PlannerError` turned into a rendered diagnostic and an exit code in one place
(`guard.guard`):

    0  success
    1  invalid input (diagnostics), `check` found errors
    2  usage error (unknown plan, algorithm, option; unwritable output; inapplicable option)
    3  infeasible: no plan fits the constraints, or the given plan violates them
    4  internal error or solver failure (a bug: please report it); an output, stdout
       included, that could not be written (E623)
    5  a CI gate failed on valid input: `fmt --check`/`--diff` would reformat, `diff
       --fail-if-slower` found the new plan too slow
  130  interrupted (solve: the best plan so far, if any, is printed and written)
  141  stdout closed by its reader: a quiet exit

With `--json`, stdout carries one JSON envelope on every outcome (`JsonReport`).

Every line of command-line code lives in this package: this module (the app, `check`,
`fmt`, `simulate`, `solve`, `explain`), `guard` (errors to exit codes, the `--json`
envelope), `options` (`--limit`, `--root`), `applies` (which `solve` options apply to which
algorithm) and the sub-commands in modules of their own, imported only when they run
(`LAZY_COMMANDS`): `compare`, `diff` (with `plandiff`), `fmt` and `io_commands` (`import`,
`export`, `generate`). Only `planner/__main__.py` imports it. Imports marked
`# lazy: start-up` keep `--help` from loading Lark, and `--help`, `check` and `fmt` from
loading numpy, process pools or the solvers (`tests/cli/test_startup.py`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import json
import logging
import math
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from .. import algorithms
from ..algorithms import completions, names, taking
from ..algorithms.base import Interrupted
from ..codes import CODES, describe
from ..errors import (
    Diagnostic,
    Severity,
    Span,
    SpecError,
    UsageError,
    _one_line,
    did_you_mean,
    render_all,
)
from ..files import check_outputs
from ..model import Problem
from ..plan import Plan, given_placement, load_plan, load_replicas
from ..render.diagnostics import eprint, source_texts
from ..render.formats import OutputFormat
from ..roots import display_path
from ..signals import deferred, install
from ..strictjson import loads as strict_loads
from ..units import RANGES, format_seconds
from ..version import installed_version
from . import fastexit
from .applies import check_applicable
from .guard import (
    EXIT_INFEASIBLE,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    JsonReport,
    StdoutError,
    checked_stdout,
    debug_enabled,
    guard,
    interrupted_diagnostic,
    interrupted_exit,
    requested_format,
    stdout_console,
    stdout_failed,
    stdout_to_stderr,
)
from .options import LimitOption, RootOption

if TYPE_CHECKING:
    from ..algorithms.base import Options, Solution
    from ..bounds import Bounds
    from ..report.views import PipelineView
    from ..simulate import SimResult
    from ..spec.load import Loaded


class _App(TyperGroup):
    """The command group: a command-line usage error under `--json` is still one JSON
    document (E606) on stdout, and stdout that fails is answered here, once, for every
    command (`guard.stdout_failed`: a closed pipe is a quiet exit 141, a full disk E623)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *LAZY_COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in LAZY_COMMANDS and cmd_name not in self.commands:
            self.commands[cmd_name] = _lazy_command(cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The command list of `--help`, without importing the lazy commands."""
        rows = [(name, cmd.get_short_help_str(limit=formatter.width - 6 - len(name)))
                for name, cmd in self.commands.items() if not cmd.hidden]
        rows += [(name, entry[2]) for name, entry in LAZY_COMMANDS.items()
                 if name not in self.commands]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            with checked_stdout():
                try:
                    code = self._main(argv, prog_name, complete_var, standalone_mode,
                                      windows_expand_args, **extra)
                finally:  # what is still buffered meets a full disk or a closed pipe here
                    sys.stdout.flush()
        except StdoutError as err:  # any write to stdout, in any command: the one answer
            code = stdout_failed(err)
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)

    def _main(self, argv: list[str], prog_name: str | None, complete_var: str | None,
              standalone_mode: bool, windows_expand_args: bool, **extra: Any) -> Any:
        output = requested_format(argv)
        if output == "text":  # typer renders its own usage errors (and exits, standalone)
            return super().main(argv, prog_name, complete_var, standalone_mode,
                                windows_expand_args, **extra)
        try:
            return super().main(argv, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        except typer.TyperException as err:  # a usage error found by the parser
            report = JsonReport(next((a for a in argv if a in self.commands), None), True,
                                output)
            report.diagnostics.append(Diagnostic(
                "E606", err.format_message(), None,
                ("see `planner COMMAND --help` for the options",)))
            report.write(err.exit_code)
            return err.exit_code
        except typer.Abort:
            _eprint("Aborted!")
            return 1


app = typer.Typer(
    cls=_App,
    name="planner",
    help="Declarative model-parallel placement: check, format, simulate and solve .plan specs.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion, on the root only
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if not value:
        return
    sys.stdout.write(f"planner {installed_version()}\n")
    raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print planner's version and exit.")] = False) -> None:
    pass

log = logging.getLogger("planner")
#: `solve`'s algorithm when `--algo` is not given
DEFAULT_ALGO = "auto"
#: default `--time-limit` of `solve`: `auto` should answer a first-time user quickly
AUTO_TIME_LIMIT_S = 10.0
EXACT_TIME_LIMIT_S = 60.0
#: the largest `--time-limit`: the largest time a spec may state (about 11.6 days); far
#: larger ones overflowed the clocks and waits they reach (`1e10`: E999 in `compare`)
MAX_TIME_LIMIT_S = RANGES["time"][1]
#: the largest `--seed`: every solver takes the seed as it is (CP-SAT's `random_seed` is a
#: 32-bit integer, HiGHS's is 0 to 2**31 - 1), so a seed is never folded onto another one
MAX_SEED = 2**31 - 1
_guard = guard
_sources = source_texts
_eprint = eprint


def _and(items: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _only(items: Sequence[str]) -> str:
    """`a only`, `a, b`."""
    return items[0] + " only" if len(items) == 1 else ", ".join(items)


def _complete_algo(incomplete: str) -> list[tuple[str, str]]:
    """`--algo`'s shell completion: the registered names, with their summaries."""
    return completions(incomplete)


#: `solve`'s option help, generated from the algorithm registry (`AlgorithmInfo.options`)
_HELP_ALGO = "Algorithm: " + ", ".join(names()) + "."
_HELP_TIME_LIMIT = (
    f"Seconds for the exact or search phase ({', '.join(taking('time_limit_s'))}): default "
    f"{AUTO_TIME_LIMIT_S:g} for {DEFAULT_ALGO} (0: heuristics only), {EXACT_TIME_LIMIT_S:g} "
    f"for {_and([a for a in taking('time_limit_s') if a != DEFAULT_ALGO])}.")
_HELP_GAP = ("Stop exact solvers at this relative gap, in the solver's own measure "
             f"({', '.join(taking('gap'))}). [default: 1e-06]")
_HELP_SOLVER = (f"ILP back-end ({_only(taking('solver'))}): highs, cbc, glpk, or any Pyomo "
                "solver name. [default: highs]")


def _help_emit() -> str:
    """`--emit`'s help: each model file format, with the algorithms that write it."""
    writers: dict[tuple[str, ...], list[str]] = {}
    for name in taking("emit"):
        writers.setdefault(algorithms.get(name).emits, []).append(name)
    return "Write the exact model: " + "; ".join(
        f"{' or '.join(ends)} ({', '.join(algos)})" for ends, algos in writers.items()) + "."


_HELP_EMIT = _help_emit()
_HELP_SEED = f"Seed for --algo {_and(sorted(taking('seed')))}."  # alphabetical, as it read


def _spec_files(paths: list[Path]) -> list[Path]:
    """Files named, and `*.plan` files under folders named (sorted, recursively)."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(x for x in p.rglob("*.plan") if x.is_file()))
        else:
            files.append(p)
    return files


#: objects in the collector's frozen generation from which a loaded model counts as big
#: (about 10 per op: a 25,000-op spec)
BIG_MODEL_OBJECTS = 250_000


def _load(spec: Path) -> Loaded:
    """Load `spec`, with the collector paused, and move what was built out of its sight
    (`gc.freeze`): the model lives until its plans are checked (`check` unfreezes it then)
    or the command ends, and its millions of objects would otherwise be traversed by the
    first collections after loading and by every full one while the algorithms run
    (100k-op `check`: about 1 s CPU)."""
    from ..spec.load import load_path  # lazy: start-up

    enabled = gc.isenabled()
    gc.disable()  # loading builds millions of objects at 100k ops, nearly all acyclic
    # the objects loading left (the young generation's count: each tracked object made
    # adds one, each freed takes one off, and no collection runs meanwhile); not
    # `gc.get_freeze_count()`, which walks every frozen object (in a process that ran
    # many commands, such as a test session's, seconds a load)
    young = gc.get_count()[0]
    try:
        loaded = load_path(spec)
    finally:
        built = gc.get_count()[0] - young
        gc.freeze()  # refcounting still frees the model when it is dropped
        if built > BIG_MODEL_OBJECTS:
            # what follows allocates in proportion (a 100k-op m-ETF run: 2,900 collections,
            # 0.8-1.0 s CPU); collecting the young generation every 100,000 allocations
            # instead of 700 halves that
            gc.set_threshold(100_000, *gc.get_threshold()[1:])
            fastexit.arm()  # and tearing it down at exit takes as long again
        if enabled:
            gc.enable()
    return loaded


def _load_noting(spec: Path, report: JsonReport) -> Loaded:
    """Load `spec` (for the rest of the process); its warnings go to stderr (or into the
    JSON document)."""
    loaded = _load(spec)
    if loaded.warnings:
        report.diagnostics.extend(loaded.warnings)
        if not report.enabled:
            _eprint(render_all(loaded.warnings, _sources(loaded.warnings)))
    return loaded


def _problem(loaded: Loaded, plan: str | None) -> Problem:
    try:
        return loaded.spec.plan(plan)
    except LookupError as err:
        files = loaded.spec.files
        where = Span.start_of(files[-1]) if files else None
        raise UsageError(Diagnostic("E602", str(err).strip("'\""), where,
                                    ("pick a plan with --plan NAME",))) from None


#: the spec file and plan of the commands that run one plan (`simulate`, `solve`)
SpecArgument = Annotated[Path, typer.Argument(help="The spec file.")]
PlanOption = Annotated[str | None, typer.Option(
    "--plan", help="Plan name (needed when the spec has several).")]
TraceOption = Annotated[Path | None, typer.Option(
    "--trace", help="Write the schedule as a Chrome/Perfetto trace (JSON; open in "
    "ui.perfetto.dev).")]
FormatOption = Annotated[OutputFormat | None, typer.Option(
    "--format", "--output-format", case_sensitive=False, show_default=False,
    help="Output: text (for people), json (the envelope), github (Actions annotations) or "
         "sarif (code scanning); --json is --format json.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
#: `--json` of the commands whose result is their diagnostics (`check`, `fmt`)
DiagnosticsJsonOption = Annotated[bool, typer.Option(
    "--json", help="Print one JSON document on stdout (the diagnostics in its envelope).")]


@contextlib.contextmanager
def _formatted(command: str, output: OutputFormat | None,
               as_json: bool) -> Iterator[JsonReport]:
    """`guard` in the format `--format` and `--json` choose; when they contradict, E640,
    raised inside the guard so that the error comes in the format asked for."""
    with _guard(command, ("json" if as_json else "text") if output is None
                else output.value) as report:
        if as_json and output not in (None, OutputFormat.JSON):
            raise UsageError(Diagnostic("E640", f"--json and --format {output.value} "
                                        "contradict each other", None, ("give one of them",)))
        yield report


# ---- check / fmt -------------------------------------------------------------------------


@app.command()
def check(
    paths: Annotated[list[Path], typer.Argument(
        help="Spec files or folders (*.plan, recursively).")],
    as_json: DiagnosticsJsonOption = False,
    output: FormatOption = None,
    limit: LimitOption = None,
    root: RootOption = None,
) -> None:
    """Check specs for errors: syntax, names, units, cycles, memory that cannot fit."""
    with _formatted("check", output, as_json) as report:
        from ..spec.checks import plan_diagnostics  # lazy: start-up

        diags: list[Diagnostic] = []
        files = _spec_files(paths)
        if not files:
            raise SpecError(Diagnostic("E006", "no .plan files found", None,
                                       ("give files or folders that contain *.plan files",)))
        for f in files:
            try:
                loaded = _load(f)
            except SpecError as err:
                diags.extend(err.diagnostics)
                continue
            diags.extend(loaded.warnings)
            try:
                diags.extend(plan_diagnostics(loaded.spec.plans.values(), loaded.locations))
                diags.extend(_unrunnable_pipelines(loaded.spec.plans.values(),
                                                   loaded.locations.plans))
            finally:
                gc.unfreeze()  # the next file's model may replace it
        diags = _dedupe(diags)
        errors = [d for d in diags if d.severity.value == "error"]
        report.result = {"files": [display_path(f) for f in files], "errors": len(errors),
                         "warnings": len(diags) - len(errors)}
        report.diagnostics.extend(diags)
        if report.output in ("text", "github"):  # github: the annotations go to stdout
            if diags and not report.enabled:
                _eprint(render_all(diags, _sources(diags)))
            shown = ", ".join(_one_line(display_path(f)) for f in files[:3]) + (
                f" and {len(files) - 3} more" if len(files) > 3 else "")
            _eprint(f"checked {len(files)} file(s) ({shown}): "
                    + (f"{len(errors)} error(s)" if errors else "ok"))
        if errors:
            raise typer.Exit(EXIT_INVALID)


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen: set[tuple[object, ...]] = set()
    out = []
    for d in diags:
        key = (d.code, d.message, d.span)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


@app.command()
def fmt(
    paths: Annotated[list[Path], typer.Argument(
        help="Spec files or folders to format in place; `-` reads standard input and writes "
        "the result to stdout.")],
    check_only: Annotated[bool, typer.Option(
        "--check",
        help="Change nothing; list the files that would change (exit 5 if any).")] = False,
    diff: Annotated[bool, typer.Option(
        "--diff",
        help="Change nothing; print the changes as a unified diff (exit 5 if any).")] = False,
    stdin_filename: Annotated[str | None, typer.Option(
        "--stdin-filename",
        help="The name `fmt -` gives standard input in diagnostics and diffs.")] = None,
    as_json: DiagnosticsJsonOption = False,
    output: FormatOption = None,
    limit: LimitOption = None,
    root: RootOption = None,
) -> None:
    """Rewrite specs in the canonical layout (comments kept; idempotent).

    Exit 0: nothing to change (or rewritten); 1: an input does not parse; 5: `--check` or
    `--diff` found a file to reformat.
    """
    with _formatted("fmt", output, as_json) as report:
        from .fmt import STDIN, run_fmt  # lazy: start-up

        files = _spec_files([p for p in paths if str(p) != STDIN])
        run_fmt(paths, files, report, check=check_only, diff=diff,
                stdin_filename=stdin_filename)


# ---- simulate / solve --------------------------------------------------------------------


def _unrunnable_pipelines(problems: Iterable[Problem], where: Mapping[str, Span]
                          ) -> list[Diagnostic]:
    """W626 for each pipeline plan whose `place` and `pin` statements place every op in a
    way torch's schedule cannot run (`planner.pipeline.runnable`), at the plan's name."""
    out = []
    for problem in problems:
        pipeline, given = problem.pipeline, {**problem.placement, **problem.pins}
        if pipeline is None or not pipeline.schedule_spec.torch_limited or len(given) < len(
                problem.graph.ops):
            continue
        found = _refusal(problem, tuple(given[i] for i in range(len(problem.graph.ops))),
                         where.get(problem.name))
        out.extend([found] if found else [])
    return out


def _refusal(problem: Problem, placement: Sequence[int], span: Span | None
             ) -> Diagnostic | None:
    """W626 when torch's schedule cannot run `placement` as placed, else None."""
    from ..pipeline.runnable import refusal  # lazy: start-up (numpy), pipeline plans only

    found = refusal(problem, placement)
    if found is None:
        return None
    why, change = found
    return Diagnostic("W626", why, span, (change,), severity=Severity.WARNING)


def _placement_from_spec(problem: Problem) -> Plan:
    return Plan(given_placement(problem, "or pass --placement FILE"), algorithm="expert")


def _given(loaded: Loaded, problem: Problem, placement: Path | None, stages: Path | None
           ) -> tuple[Plan, Mapping[int, tuple[int, ...]]]:
    """The plan `simulate` runs and its replicated stages' groups: a stages file's layout
    (`io.stages`), a placement or plan file (a hybrid plan's `replicas` with it), or the
    spec's `place`/`pin` statements."""
    if stages is None:
        return _read_placed(problem, placement) if placement else (
            _placement_from_spec(problem), {})
    if problem.pipeline is None:
        raise UsageError(Diagnostic(
            "E646", f"--stages gives a pipeline's stages, and plan `{problem.name}` has "
            "`objective makespan`", loaded.locations.plans.get(problem.name),
            (f"give plan `{problem.name}` `objective pipeline` (with its `microbatches`)",
             "or simulate one pass of a placement: --placement FILE")))
    from ..io.stages import read_stages  # lazy: start-up

    layout = read_stages(problem, stages, display_path(stages.resolve()))
    return layout.plan, layout.replicas


def _read_placement(problem: Problem, path: Path) -> Plan:
    return _read_placed(problem, path)[0]


def _read_placed(problem: Problem, path: Path) -> tuple[Plan, dict[int, tuple[int, ...]]]:
    """A placement file's plan, with a plan file's `replicas` (a hybrid pipeline's groups,
    by representative device)."""
    from ..spec.load import read_source  # lazy: start-up

    shown = display_path(path.resolve())
    text = read_source(path, shown)
    try:  # keys given twice, integers too long, nesting too deep: all JSONDecodeError
        data = strict_loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(Diagnostic("E500", f"invalid JSON: {err.msg}",
                                   Span.at_json_error(shown, err))) from None
    from ..io.device_map import looks_like_device_map, placement_from_device_map  # start-up

    if looks_like_device_map(data):  # an accelerate device_map {module path: device}
        return load_plan(problem, placement_from_device_map(problem, data, shown), shown), {}
    read = load_plan(problem, data, shown)
    return read, load_replicas(problem, data, read.placement, shown)


def _emit_result(problem: Problem, plan: Plan, report: JsonReport, *,
                 extra_json: dict[str, Any],
                 extra_rows: dict[str, str], info: Mapping[str, Any] | None = None
                 ) -> tuple[SimResult, Bounds, float | None]:
    """Simulate `plan`; put the report in `report.result` (--json) or print it. Returns the
    simulation, the bounds as shown and the gap.

    One bound and one status per plan (`verdict.plan_bound`, `verdict.standing`): the
    bounds shown (`lower bound`, JSON `lower_bound_s`) are planner's, raised to the bound
    the algorithm proved in `info`; the gap is the makespan's to it; and a status given in
    `extra_json`/`extra_rows` becomes `optimal` when a feasible plan meets it.
    """
    # lazy: start-up (each loads numpy)
    from ..algorithms.exact.verdict import plan_bound, standing
    from ..bounds import relative_gap
    from ..render.figures import format_gap
    from ..render.report import report_json
    from ..render.terminal import print_plan
    from ..simulate import simulate

    result = simulate(problem, plan)
    bounds = _bounds(problem)
    best = plan_bound(bounds.makespan_s, info or {})
    if best != bounds.makespan_s:
        bounds = dataclasses.replace(bounds, makespan_s=best)
    gap = relative_gap(result.makespan_s, best) if result.feasible else None
    for shown in (extra_json, extra_rows):  # one pass's bound: not a pipeline's optimum
        if shown.get("status") == "feasible" and problem.pipeline is None:
            shown["status"] = standing("feasible", gap)
    if report.enabled:
        obj = report_json(problem, result, bounds)
        obj.update(extra_json)
        obj["gap"] = gap
        report.result = obj
    if "gap" in extra_rows:
        extra_rows = {**extra_rows, "gap": format_gap(gap)}
    if report.output == "github":  # the annotations go to stdout, the plan to the log
        from rich.console import Console  # lazy: start-up

        print_plan(Console(stderr=True, soft_wrap=False), problem, result, bounds, extra_rows)
    elif not report.enabled:
        print_plan(stdout_console(), problem, result, bounds, extra_rows)
    return result, bounds, gap


def _report_pipeline(problem: Problem, plan: Plan, report: JsonReport, bounds: Bounds,
                     memory_note: str = "", recompute: Sequence[str] = (),
                     replicas: Mapping[str, Sequence[str]] | None = None,
                     ) -> tuple[bool, PipelineView | None]:
    """Under `objective pipeline`: the plan run as the pipeline (the devices named in
    `recompute` recomputing their activations, the stages of `replicas`' devices on their
    groups), next to one device, the uniform split and the makespan plan (`--json`: the
    result's `pipeline`). Whether it fits the memory, and the view (for `--html`); None
    under `objective makespan`."""
    if problem.pipeline is None:
        return True, None
    # lazy: start-up
    from ..render.pipeline import pipeline_json, pipeline_report
    from ..report.pipeline import pipeline_view

    view = pipeline_view(problem, plan.placement, plan.algorithm or "given",
                         bounds.makespan_s, recompute, memory_note, replicas or {})
    refused = _refusal(problem, plan.placement, None)
    if refused is not None:  # what `export torch --pipeline` would refuse (E947)
        report.diagnostics.append(refused)
        if not report.enabled:
            _eprint(render_all([refused]))
    if report.enabled:
        if report.result is not None:
            report.result["pipeline"] = pipeline_json(problem, view.rows, view.bound,
                                                      view.notes)
    else:
        stdout_console().print(pipeline_report(problem, view.rows, view.bound, view.notes))
    return view.rows[-1].fits, view


def _infeasible_exit(problem: Problem, result: SimResult, report: JsonReport) -> NoReturn:
    head = (f"plan `{problem.name}` is infeasible: "
            f"{len(result.violations)} violation(s)")
    if report.enabled:  # the CI formats show each violation; the JSON has `violations`
        listed = () if report.output == "json" else tuple(
            f"{v.kind}: {v.message}" for v in result.violations[:50])
        report.diagnostics.append(Diagnostic("E401", head, None, listed))
    else:
        lines = [f"error[E401]: {head}"]
        lines += [f"  - {v.kind}: {v.message}" for v in result.violations[:50]]
        _eprint("\n".join(lines))
    raise typer.Exit(EXIT_INFEASIBLE)


_HELP_STAGES = (
    "Under `objective pipeline`: simulate these stages instead (JSON: a list of {\"ops\": "
    "[op names], \"devices\": [device names]}, or `solve --json`'s output). A stage's ops "
    "run on its first device, its other devices hold replicas (data parallelism); a "
    "backward op not listed goes to its forward op's stage.")


@app.command()
def simulate(
    spec: SpecArgument,
    plan: PlanOption = None,
    placement: Annotated[Path | None, typer.Option(
        "--placement", help="A plan JSON (a hybrid plan's `replicas` run too), a "
        "{\"placement\": {op: device}} file or an accelerate device_map {module: device}; "
        "default: the spec's place/pin statements.")] = None,
    stages: Annotated[Path | None, typer.Option(
        "--stages", help=_HELP_STAGES, show_default=False)] = None,
    as_json: JsonOption = False,
    output: FormatOption = None,
    trace: TraceOption = None,
    limit: LimitOption = None,
    root: RootOption = None,
) -> None:
    """Simulate a given placement under the spec's cost model and verify it."""
    with _formatted("simulate", output, as_json) as report:
        report.subject = str(spec)
        if stages is not None and placement is not None:
            raise UsageError(Diagnostic(
                "E640", "--stages and --placement both give the plan to simulate", None,
                ("give one: --stages FILE (a pipeline's stages) or --placement FILE (a plan)",)))
        check_outputs({"--trace": trace})
        loaded = _load_noting(spec, report)
        problem = _problem(loaded, plan)
        the_plan, groups = _given(loaded, problem, placement, stages)
        from ..pipeline.hybrid import replica_names  # lazy: start-up

        result, bounds, _ = _emit_result(problem, the_plan, report, extra_json={},
                                         extra_rows={})
        fits, _ = _report_pipeline(problem, the_plan, report, bounds,
                                   replicas=replica_names(problem, groups))
        _write_trace(trace, problem, result)
        if problem.pipeline is not None:
            _pipeline_verdict(problem, result, fits, report)
        elif not result.feasible:
            _infeasible_exit(problem, result, report)


@app.command()
def solve(
    spec: SpecArgument,
    plan: PlanOption = None,
    algo: Annotated[str, typer.Option(
        "--algo", help=_HELP_ALGO, autocompletion=_complete_algo)] = DEFAULT_ALGO,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write the plan JSON here (atomically).")] = None,
    as_json: JsonOption = False,
    time_limit: Annotated[float | None, typer.Option(
        "--time-limit", help=_HELP_TIME_LIMIT, show_default=False)] = None,
    gap: Annotated[float | None, typer.Option("--gap", help=_HELP_GAP, show_default=False)] = None,
    solver: Annotated[str | None, typer.Option(
        "--solver", help=_HELP_SOLVER, show_default=False)] = None,
    emit: Annotated[Path | None, typer.Option("--emit", help=_HELP_EMIT)] = None,
    seed: Annotated[int, typer.Option("--seed", help=_HELP_SEED, min=0, max=MAX_SEED)] = 0,
    html: Annotated[Path | None, typer.Option(
        "--html", help="Write a self-contained HTML report (Gantt, memory).")] = None,
    trace: TraceOption = None,
    limit: LimitOption = None,
    root: RootOption = None,
) -> None:
    """Place and schedule a spec's graph; print the simulated plan and its lower bound.

    Ctrl-C stops the search: the best plan found so far is printed and written (status
    `interrupted`), exit 130; with no plan yet, nothing is written.
    """
    with _guard("solve", as_json) as report:
        given = {"--time-limit": time_limit, "--gap": gap, "--solver": solver, "--emit": emit}
        check_applicable(algo, [k for k, v in given.items() if v is not None])
        check_outputs({"--out": out, "--html": html, "--emit": emit, "--trace": trace})
        if time_limit is None:
            time_limit = AUTO_TIME_LIMIT_S if algo == DEFAULT_ALGO else EXACT_TIME_LIMIT_S
        if not 0 <= time_limit <= MAX_TIME_LIMIT_S:  # nan fails too
            raise UsageError(Diagnostic(
                "E603", f"--time-limit: `{time_limit:.15g}` is not a number of seconds from 0 "
                f"to {MAX_TIME_LIMIT_S:.15g} (about 11.6 days)", None,
                ("give seconds, e.g. --time-limit 30",)))
        if gap is not None and not (math.isfinite(gap) and gap >= 0):
            raise UsageError(Diagnostic("E608", f"--gap: `{gap}` is not a relative gap "
                                        "(0 or more)", None, ("for example --gap 0.01 (1%)",)))
        loaded = _load_noting(spec, report)
        problem = _problem(loaded, plan)
        algorithms.check_objective(algo, problem)  # E625, before any work
        options = algorithms.Options(seed=seed, time_limit_s=time_limit,
                          gap=1e-6 if gap is None else gap, solver=solver or "highs",
                          emit=str(emit) if emit else None)
        solution = _place(algo, problem, options, report)
        _report_solution(problem, algo, solution, report, out=out, html=html, trace=trace)
        if solution.status == "interrupted":
            raise typer.Exit(EXIT_INTERRUPTED)


def _place(algo: str, problem: Problem, options: Options, report: JsonReport) -> Solution:
    """Run the algorithm; on Ctrl-C, the `interrupted` solution it holds, or exit 130."""
    from ..render.terminal import SolveProgress, live_progress  # lazy: start-up

    # the limit, shown as `elapsed/limit s`, of an algorithm that takes one (a heuristic runs
    # to its end: its line shows the elapsed time alone)
    info = algorithms.get(algo)
    limit_s = options.time_limit_s if info.takes("time_limit_s") else 0.0
    progress = SolveProgress(algo, len(problem.graph.ops), limit_s)
    try:
        with stdout_to_stderr(), live_progress(progress):
            progress.bound_s = _bounds(problem).makespan_s
            # the algorithm's module is imported before the line's clock starts, as `run`
            # imports it before its own (`planning_s`): `auto`'s import (0.09 s idle, more
            # on a loaded machine) was counted by the line, not by the planning time
            importlib.import_module(info.module)
            progress.begin()
            # through the module: a test (or a caller) may replace `run`
            return algorithms.run(algo, problem,
                                  dataclasses.replace(options, progress=progress.update))
    except Interrupted as stop:
        if stop.solution is not None:
            return dataclasses.replace(stop.solution, status="interrupted")
        nothing = interrupted_diagnostic(None)
    except KeyboardInterrupt:
        nothing = interrupted_diagnostic(None)
    if report.enabled:
        report.diagnostics.append(nothing)
    else:
        _eprint(render_all([nothing]))
    raise typer.Exit(EXIT_INTERRUPTED)


def _report_solution(problem: Problem, algo: str, solution: Solution, report: JsonReport, *,
                     out: Path | None, html: Path | None, trace: Path | None = None) -> None:
    # lazy: start-up
    from ..pipeline.hybrid import replica_groups
    from ..render.terminal import fmt_info

    info = dict(solution.info)
    groups = replica_groups(problem, info)
    if out is not None:
        solution.plan.write(problem, str(out), groups)
    status = _pipeline_status(problem, solution)
    extra_json: dict[str, Any] = {
        "algorithm": solution.plan.algorithm or algo,
        "status": status,
        "planning_s": solution.planning_s,
        **{k: v for k, v in info.items() if _jsonable(v) and k != "gap"},
    }
    # a solver's objective only where a solver made the plan (not auto's heuristic or
    # search phase, not `search`); the one bound is the `lower bound` line (`_emit_result`)
    by_solver = "solver" in info and info.get("chosen", "cpsat") == "cpsat"
    rows = {"algorithm": algo + (f" → {info['chosen']}" if info.get("chosen") else ""),
            "status": status,
            "planning time": format_seconds(solution.planning_s),
            **fmt_info(info, ("solver", "objective_s") if by_solver else ()),
            **({"gap": ""} if "gap" in info or "bound_s" in info else {}),
            **fmt_info(info, ("reason", "data_parallel"))}
    result, bounds, gap = _emit_result(problem, solution.plan, report, extra_json=extra_json,
                                       extra_rows=rows, info=info)
    fits, view = _report_pipeline(problem, solution.plan, report, bounds,
                                  _split_note(info), info.get("recompute") or (),
                                  info.get("replicas"))
    if html is not None:
        from ..render.figures import format_gap  # lazy: start-up
        from ..render.html import write_plan_html  # lazy: start-up

        write_plan_html(str(html), problem, result, extra={
            "algorithm": rows["algorithm"], "status": rows["status"],
            "lower bound": format_seconds(bounds.makespan_s), "gap": format_gap(gap),
            "planning time": format_seconds(solution.planning_s)}, bound_s=bounds.makespan_s,
            pipeline=view)
    _write_trace(trace, problem, result)
    if solution.status == "interrupted":
        written = " and ".join(str(p) for p in (out, html, trace) if p is not None)
        kept = interrupted_diagnostic("the best plan found so far is shown"
                                      + (f" and written to {written}" if written else ""))
        report.diagnostics.append(kept)
        if not report.enabled:
            _eprint(render_all([kept]))
    if problem.pipeline is not None:
        _pipeline_verdict(problem, result, fits, report)
    elif not result.feasible:
        _infeasible_exit(problem, result, report)


def _split_note(info: Mapping[str, Any]) -> str:
    """What shaped the pipeline split, as the algorithm says (`pipedp`: the memory caps, or
    the stage count passed over for a longer iteration)."""
    return str(info.get("memory_note") or info.get("stages_note") or "")


def _pipeline_status(problem: Problem, solution: Solution) -> str:
    """The status shown: the algorithm's, but `infeasible` for a plan that does not fit as
    the pipeline (what `_pipeline_verdict` then reports, E401), which a one-pass scheduler
    never looked at; the pipeline run is the one the report shows (cached)."""
    pipeline = problem.pipeline
    if pipeline is None or solution.status not in ("feasible", "optimal"):
        return solution.status
    # lazy: start-up
    from ..pipeline.schedule import run_planned
    from ..pipeline.split import fits

    held = run_planned(problem, solution.plan.placement, pipeline, solution.info).memory_bytes
    return solution.status if fits(problem, held) else "infeasible"


def _pipeline_verdict(problem: Problem, result: SimResult, fits: bool,
                      report: JsonReport) -> None:
    """A pipeline plan's memory is the pipeline's (activations in flight, recomputation),
    not one pass's: the one-pass simulation judges every other rule."""
    others = [v for v in result.violations if v.kind != "memory"]
    if others:
        _infeasible_exit(problem, dataclasses.replace(result, violations=tuple(others)),
                         report)
    if not fits:
        head = (f"plan `{problem.name}` does not fit as a pipeline: a device holds less than "
                "its stages' activations in flight need (the pipeline's memory table)")
        if report.enabled:
            report.diagnostics.append(Diagnostic("E401", head, None, ()))
        else:
            _eprint(f"error[E401]: {head}")
        raise typer.Exit(EXIT_INFEASIBLE)


def _write_trace(path: Path | None, problem: Problem, result: SimResult) -> None:
    if path is not None:
        from ..render.trace import write_trace  # lazy: start-up

        write_trace(str(path), problem, result)


def _bounds(problem: Problem) -> Bounds:
    """The lower bounds of `problem`, computed once per command (the progress shows them
    while the algorithm runs; the report prints them after)."""
    from ..bounds import lower_bound  # lazy: start-up

    return lower_bound(problem)  # (kept on the problem by `lower_bound` itself)


def _jsonable(v: Any) -> bool:
    try:
        json.dumps(v)
    except (TypeError, ValueError):
        return False
    return True


#: sub-commands in modules of their own, imported only when they run (their imports,
#: e.g. compare's process pools and numpy, would otherwise slow every command's start):
#: name -> (module, attribute: a command function or a typer app, one-line help)
LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "compare": ("planner.cli.compare", "compare_command",
                ("Run algorithms side by side across specs, bandwidths, memory caps and "
                 "device counts.")),
    "import": ("planner.cli.io_commands", "import_app", "Make a .plan spec from a model file."),
    "export": ("planner.cli.io_commands", "export_app", "Write a spec in another format."),
    "generate": ("planner.cli.io_commands", "generate_app", "Generate analytic model graphs."),
    "diff": ("planner.cli.diff", "diff_command",
             "Compare two plans: makespan, bound, memory, the ops that moved."),
}


def _lazy_command(name: str) -> Any:
    """The click command of lazy sub-command `name` (its module imported now)."""
    module, attr, help_text = LAZY_COMMANDS[name]
    target = getattr(importlib.import_module(module), attr)
    if isinstance(target, typer.Typer):
        group = typer.main.get_group(target)  # a group even with one sub-command
        group.name = name
        group.help = group.help or help_text
        return group
    single = typer.Typer(add_completion=False, pretty_exceptions_enable=False,
                         rich_markup_mode=None)
    single.command(name)(target)
    command = typer.main.get_command(single)
    command.name = name
    command.help = command.help or help_text
    return command


@app.command()
def explain(code: Annotated[str, typer.Argument(
        help="A diagnostic code: the CODE of `error[CODE]`.")]) -> None:
    """Say what a diagnostic code means, its layer and its exit status."""
    with _guard():
        entry = CODES.get(code.strip().upper())
        if entry is None:
            raise UsageError(Diagnostic("E609", f"unknown code `{code}`", None,
                                        did_you_mean(code.strip().upper(), CODES)))
        sys.stdout.write(describe(entry) + "\n")


class _StderrNow(logging.Handler):
    """Writes to whatever `sys.stderr` is at the time (the live progress swaps it)."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(self.format(record) + "\n")


def _show_setup_notices() -> None:
    """One-time work (`planner.compiled`: kernels built in the background) is said on
    stderr as `planner: ...`, whatever the log level."""
    handler = _StderrNow()
    handler.setFormatter(logging.Formatter("planner: %(message)s"))
    setup = logging.getLogger("planner.setup")
    setup.handlers[:] = [handler]
    setup.setLevel(logging.INFO)
    setup.propagate = False


def main() -> None:
    """Console entry point."""
    logging.basicConfig(stream=sys.stderr,
                        level=logging.DEBUG if debug_enabled() else logging.WARNING,
                        format="planner: %(levelname)s: %(message)s")
    _show_setup_notices()
    install()  # SIGTERM and SIGHUP clean up like Ctrl-C (exit 130)
    try:
        # a stop while parsing or exiting waits for the command's body (`guard`) or the end
        with deferred():
            app()
    except SystemExit as stop:
        fastexit.finish(stop.code)  # after a big model: no teardown (returns otherwise)
        raise
    except KeyboardInterrupt:  # it came after the command's body
        interrupted_exit()
