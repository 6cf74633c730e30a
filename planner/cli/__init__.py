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
`fmt`, `simulate`, `solve` and `explain`, their options), `runs` (what `simulate` and
`solve` do once their options are read: the plan, the report, the exit status), `guard`
(errors to exit codes, the `--json` envelope), `options` (the options commands share,
`--limit` and `--root` among them), `applies` (which `solve` options apply to which
algorithm) and the sub-commands in modules of their own, imported only when they run
(`LAZY_COMMANDS`): `compare`, `diff` (with `plandiff`), `fmt`, `io_commands` (`import`,
`generate`) and `export_commands`. Only `planner/__main__.py` imports it. Imports marked
`# lazy: start-up` keep `--help` from loading Lark, and `--help`, `check` and `fmt` from
loading numpy, process pools or the solvers (`tests/cli/test_startup.py`).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import math
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from .. import algorithms

# the largest `--time-limit` and `--seed` are the library's (`algorithms.options_of`)
from ..algorithms.base import AUTO_TIME_LIMIT_S, EXACT_TIME_LIMIT_S, MAX_SEED, MAX_TIME_LIMIT_S
from ..codes import CODES, describe, near_code
from ..errors import (
    Diagnostic,
    SpecError,
    UsageError,
    _one_line,
    render_all,
    tally,
)
from ..files import check_outputs, output_path
from ..merged import merge_capped
from ..render.diagnostics import eprint, source_texts
from ..render.formats import OutputFormat
from ..roots import display_path
from ..signals import deferred, install
from ..version import installed_version
from . import fastexit
from .applies import check_applicable
from .given import given_plan, plan_named
from .guard import (
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    JsonReport,
    StdoutError,
    checked_stdout,
    chosen_format,
    debug_enabled,
    guard,
    interrupted_exit,
    requested_format,
    stdout_failed,
)
from .options import (
    DEFAULT_ALGO,
    HELP_ALGO,
    HELP_EMIT,
    HELP_GAP,
    HELP_SEED,
    HELP_SOLVER,
    HELP_TIME_LIMIT,
    JSON_STDOUT,
    DiagnosticsJsonOption,
    FormatOption,
    JsonOption,
    LimitOption,
    PlanOption,
    RootOption,
    SimulatePlanOption,
    SpecArgument,
    TraceOption,
    begin,
    complete_algo,
    end,
)
from .runs import (
    check_imports_kept,
    emit_result,
    place,
    problem_of,
    report_pipeline,
    report_solution,
    unrunnable_pipelines,
    verdict,
    write_trace_file,
)
from .stderr import best_effort_stderr

if TYPE_CHECKING:
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
        begin()  # the caller's limits and root, put back as the command ends
        try:
            with checked_stdout() as out:
                try:
                    code = self._main(argv, prog_name, complete_var, standalone_mode,
                                      windows_expand_args, **extra)
                except (SystemExit, typer.Exit):  # its status, unless stdout's
                    sys.stdout.flush()
                    out.raise_if_failed()
                    raise
                sys.stdout.flush()  # what is still buffered meets a full disk or a closed pipe
                out.raise_if_failed()
        except StdoutError as err:  # any write to stdout, in any command: the one answer
            code = stdout_failed(err)
        finally:  # `--root` and `--limit` end with the command, a usage error's too: its
            end()  # context is never closed (they held for the next command in process)
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
_guard = guard
_sources = source_texts
_eprint = eprint


def _spec_files(paths: list[Path]) -> tuple[list[Path], list[Diagnostic]]:
    """The spec files `paths` name, and W006 for the folders among them that hold none;
    E006 when that is none (`spec.load.spec_files`, as `compare` finds them)."""
    from ..spec.load import spec_files  # lazy: start-up

    found, empty = spec_files(paths)
    return [f for f, _ in found], empty


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


def _load_noting(spec: Path, report: JsonReport,
                 outputs: Mapping[str, Path | None] | None = None) -> Loaded:
    """Load `spec` (for the rest of the process); its warnings go to stderr (or into the
    JSON document). The files it imports are inputs too, known once it is read: an output
    of `outputs` that would overwrite one is E640 (`files.check_outputs`), before any work."""
    loaded = _load(spec)
    if outputs:
        check_imports_kept(outputs, loaded)
    if loaded.warnings:
        report.diagnostics.extend(loaded.warnings)
        if not report.enabled:
            _eprint(render_all(loaded.warnings, _sources(loaded.warnings)))
    return loaded


@contextlib.contextmanager
def _formatted(command: str, output: OutputFormat | None,
               as_json: bool) -> Iterator[JsonReport]:
    """`guard` in the format `--format` and `--json` choose; when they contradict, E640,
    raised inside the guard so that the error comes in the format asked for."""
    with _guard(command, chosen_format(output and output.value, as_json)) as report:
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

        files, empty = _spec_files(paths)
        groups: list[list[Diagnostic]] = [empty]  # each file's (after W006)
        for f in files:
            try:
                loaded = _load(f)
            except SpecError as err:
                groups.append(list(err.diagnostics))
                continue
            try:
                groups.append([*loaded.warnings,
                               *plan_diagnostics(loaded.spec.plans.values(), loaded.locations),
                               *unrunnable_pipelines(loaded.spec.plans.values(),
                                                     loaded.locations.plans)])
            finally:
                gc.unfreeze()  # the next file's model may replace it
        diags = merge_capped(groups)  # the `diagnostics` limit is the command's, not a file's
        errors, warnings = tally(diags)  # those past the limit too, not E000 itself
        report.result = {"files": [display_path(f) for f in files], "errors": errors,
                         "warnings": warnings}
        report.diagnostics.extend(diags)
        if report.output in ("text", "github"):  # github: the annotations go to stdout
            if diags and not report.enabled:
                _eprint(render_all(diags, _sources(diags)))
            shown = ", ".join(_one_line(display_path(f)) for f in files[:3]) + (
                f" and {len(files) - 3} more" if len(files) > 3 else "")
            _eprint(f"checked {len(files)} file(s) ({shown}): "
                    + (f"{errors} error(s)" if errors else "ok"))
        if errors:
            raise typer.Exit(EXIT_INVALID)


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

    Exit 0: nothing to change (or rewritten); 1: an input does not parse, or the paths hold
    no .plan file (E006); 5: `--check` or `--diff` found a file to reformat.
    """
    with _formatted("fmt", output, as_json) as report:
        from .fmt import STDIN, run_fmt  # lazy: start-up

        # standard input: no file is read (E640 for one named beside it, or for
        # --stdin-filename without `-`, before any E006)
        stdin = any(str(p) == STDIN for p in paths) or stdin_filename is not None
        files, empty = ([], []) if stdin else _spec_files(paths)
        report.diagnostics.extend(empty)
        if empty and not report.enabled:
            _eprint(render_all(empty, {}))
        run_fmt(paths, files, report, check=check_only, diff=diff,
                stdin_filename=stdin_filename)


# ---- simulate / solve --------------------------------------------------------------------


_HELP_STAGES = (
    "Under `objective pipeline`: simulate these stages instead (JSON: a list of {\"ops\": "
    "[op names], \"devices\": [device names]}, or `solve --json`'s output). A stage's ops "
    "run on its first device, its other devices hold replicas (data parallelism); a "
    "backward op not listed goes to its forward op's stage.")


@app.command()
def simulate(
    spec: SpecArgument,
    plan: SimulatePlanOption = None,
    placement: Annotated[Path | None, typer.Option(
        "--placement", help="A plan JSON (a hybrid plan's `replicas` run too), solve --json's "
        "output, a {\"placement\": {op: device}} file or an accelerate device_map "
        "{module: device}; "
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
        check_outputs({"--trace": trace}, [("SPEC", spec), ("--placement", placement),
                                            ("--stages", stages)], stdout=JSON_STDOUT)
        loaded = _load_noting(spec, report, {"--trace": trace})
        name, parsed = plan_named(loaded, plan, placement, stages)  # read once, if here
        problem = problem_of(loaded, name)
        the_plan, groups, again = given_plan(loaded, problem, placement, stages, parsed)
        from ..pipeline.hybrid import replica_names  # lazy: start-up
        from ..plan import layout_json  # lazy: start-up

        # the layout run, as `solve --json` gives it: its result reads back to this run
        # the plan file's algorithm too, so that the result reads back as it (`pipeline`'s
        # compared row would say `given`)
        named = {"algorithm": the_plan.algorithm} if the_plan.algorithm else {}
        result, bounds, _ = emit_result(problem, the_plan, report,
                                         extra_json={**named,
                                                     **layout_json(problem, groups, again)},
                                         extra_rows={})
        fits, view = report_pipeline(problem, the_plan, report, bounds, recompute=again,
                                      replicas=replica_names(problem, groups))
        write_trace_file(trace, problem, result, again, replica_names(problem, groups))
        from ..simulate.results import given_plan_hints  # lazy: start-up

        verdict(problem, result, fits, report, given_plan_hints(result.violations), view=view)
        if view is not None and view.stopped:  # its comparison rows cut short: exit 130
            raise KeyboardInterrupt


@app.command()
def solve(
    spec: SpecArgument,
    plan: PlanOption = None,
    algo: Annotated[str, typer.Option(
        "--algo", help=HELP_ALGO, autocompletion=complete_algo)] = DEFAULT_ALGO,
    out: Annotated[Path | None, typer.Option(
        "--out", parser=output_path, help="Write the plan JSON here (atomically).")] = None,
    as_json: JsonOption = False,
    time_limit: Annotated[float | None, typer.Option(
        "--time-limit", help=HELP_TIME_LIMIT, show_default=False)] = None,
    gap: Annotated[float | None, typer.Option("--gap", help=HELP_GAP, show_default=False)] = None,
    solver: Annotated[str | None, typer.Option(
        "--solver", help=HELP_SOLVER, show_default=False)] = None,
    emit: Annotated[Path | None, typer.Option("--emit", parser=output_path,
                                              help=HELP_EMIT)] = None,
    seed: Annotated[int, typer.Option("--seed", help=HELP_SEED, min=0, max=MAX_SEED)] = 0,
    html: Annotated[Path | None, typer.Option(
        "--html", parser=output_path,
        help="Write a self-contained HTML report (Gantt, memory).")] = None,
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
        if solver is not None:  # E820, before any work
            from ..algorithms.exact.solver_names import check_solver  # lazy: start-up

            check_solver(solver)
        check_outputs({"--out": out, "--html": html, "--emit": emit, "--trace": trace},
                      [("SPEC", spec)], stdout=JSON_STDOUT)
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
        loaded = _load_noting(spec, report, {"--out": out, "--html": html, "--emit": emit,
                                             "--trace": trace})
        problem = problem_of(loaded, plan)
        algorithms.check_objective(algo, problem)  # E625, before any work
        options = algorithms.Options(seed=seed, time_limit_s=time_limit,
                          gap=1e-6 if gap is None else gap, solver=solver or "highs",
                          emit=str(emit) if emit else None)
        solution = place(algo, problem, options, report, loaded.locations)
        report_solution(problem, algo, solution, report, out=out, html=html, trace=trace)
        if solution.status == "interrupted":
            raise typer.Exit(EXIT_INTERRUPTED)


#: sub-commands in modules of their own, imported only when they run (their imports,
#: e.g. compare's process pools and numpy, would otherwise slow every command's start):
#: name -> (module, attribute: a command function or a typer app, one-line help)
LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "compare": ("planner.cli.compare", "compare_command",
                ("Run algorithms side by side across specs, bandwidths, memory caps and "
                 "device counts.")),
    "import": ("planner.cli.io_commands", "import_app", "Make a .plan spec from a model file."),
    "export": ("planner.cli.export_commands", "export_app", "Write a spec in another format."),
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
                                        near_code(code.strip().upper())))
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
    best_effort_stderr()  # a closed or full stderr loses its lines, not the command
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
