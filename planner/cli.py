"""The `planner` command line: a thin shell over the library.

Data goes to stdout, diagnostics and logs to stderr. Every expected failure is a
`PlannerError` turned into a rendered diagnostic and an exit code in one place (`_guard`):

    0  success
    1  invalid input (diagnostics), `check` found errors, `fmt --check` would reformat
    2  usage error (unknown plan, algorithm, option)
    3  infeasible: no plan fits the constraints, or the given plan violates them
    4  internal error or solver failure (a bug: please report it)
"""

from __future__ import annotations

import functools
import gc
import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from .errors import Diagnostic, Span, SpecError, UsageError, render_all
from .render.diagnostics import (
    EXIT_INFEASIBLE,
    EXIT_INVALID,
    debug_enabled,
    eprint,
    guard,
    source_texts,
    stdout_to_stderr,
)

app = typer.Typer(
    name="planner",
    help="Declarative model-parallel placement: check, format, simulate and solve .plan specs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

log = logging.getLogger("planner")
#: default `--time-limit` of `solve`: `auto` should answer a first-time user quickly
AUTO_TIME_LIMIT_S = 10.0
EXACT_TIME_LIMIT_S = 60.0
_guard = guard
_sources = source_texts
_eprint = eprint


def _spec_files(paths: list[Path]) -> list[Path]:
    """Files named, and `*.plan` files under folders named (sorted, recursively)."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(x for x in p.rglob("*.plan") if x.is_file()))
        else:
            files.append(p)
    return files


def _load(spec: Path, *, keep: bool = False) -> Any:
    """Load `spec`; `keep`: the model lives until the command ends (one spec per process),
    so it is moved out of the collector's sight (`gc.freeze`): its millions of objects are
    otherwise traversed again by every full collection while the algorithms run."""
    from .spec.load import load_path

    loaded = load_path(spec)
    if keep:
        gc.freeze()
    return loaded


def _problem(loaded: Any, plan: str | None) -> Any:
    try:
        return loaded.spec.plan(plan)
    except LookupError as err:
        files = loaded.spec.files
        where = Span.start_of(files[-1]) if files else None
        raise UsageError(Diagnostic("E602", str(err).strip("'\""), where,
                                    ("pick a plan with --plan NAME",))) from None


# ---- check / fmt -------------------------------------------------------------------------


@app.command()
def check(
    paths: Annotated[list[Path], typer.Argument(help="Spec files or folders (*.plan, recursively).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print diagnostics as a JSON list.")] = False,
) -> None:
    """Check specs for errors: syntax, names, units, cycles, memory that cannot fit."""
    with _guard():
        from .spec.checks import memory_diagnostics
        from .spec.load import display_path

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
            for problem in loaded.spec.plans.values():
                diags.extend(memory_diagnostics(problem, loaded.locations))
        diags = _dedupe(diags)
        errors = [d for d in diags if d.severity.value == "error"]
        if as_json:
            sys.stdout.write(json.dumps([d.to_json() for d in diags], indent=2) + "\n")
        elif diags:
            _eprint(render_all(diags, _sources(diags)))
        if not as_json:
            shown = ", ".join(display_path(f) for f in files[:3]) + (
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
    paths: Annotated[list[Path], typer.Argument(help="Spec files or folders to format in place.")],
    check_only: Annotated[bool, typer.Option("--check", help="Change nothing; exit 1 and list "
                                             "the files that would change.")] = False,
) -> None:
    """Rewrite specs in the canonical layout (comments kept; idempotent)."""
    with _guard():
        from .io.atomic import write_text_atomic
        from .spec.format import format_source
        from .spec.load import display_path, read_source

        files = _spec_files(paths)
        changed: list[str] = []
        errors: list[Diagnostic] = []
        for f in files:
            shown = display_path(f.resolve())
            try:
                text = read_source(f, shown)
                new = format_source(text, shown)
            except SpecError as err:
                errors.extend(err.diagnostics)
                continue
            if new != text:
                changed.append(shown)
                if not check_only:
                    write_text_atomic(f, new)
        if errors:
            _eprint(render_all(errors, _sources(errors)))
        for name in changed:
            sys.stdout.write(f"{'would reformat' if check_only else 'reformatted'} {name}\n")
        if errors or (check_only and changed):
            raise typer.Exit(EXIT_INVALID)


# ---- simulate / solve --------------------------------------------------------------------


def _placement_from_spec(problem: Any) -> Any:
    from .plan import Plan, given_placement

    return Plan(given_placement(problem, "or pass --placement FILE"), algorithm="expert")


def _read_placement(problem: Any, path: Path) -> Any:
    from .plan import load_plan
    from .spec.load import display_path, read_source

    shown = display_path(path.resolve())
    text = read_source(path, shown)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(Diagnostic("E500", f"invalid JSON: {err.msg}",
                                   Span(shown, err.lineno, err.colno, err.lineno, err.colno + 1,
                                        err.pos, err.pos + 1))) from None
    return load_plan(problem, data, shown)


def _emit_result(problem: Any, plan: Any, *, as_json: bool, extra_json: dict[str, Any],
                 extra_rows: dict[str, str]) -> Any:
    from .bounds import lower_bound
    from .render.terminal import print_plan
    from .simulate import report_json, simulate

    result = simulate(problem, plan)
    bounds = lower_bound(problem)
    if as_json:
        obj = report_json(problem, result, bounds)
        obj.update(extra_json)
        sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
    else:
        from rich.console import Console

        print_plan(Console(soft_wrap=False), problem, result, bounds, extra_rows)
    return result


def _infeasible_exit(problem: Any, result: Any) -> NoReturn:
    lines = [
        (f"error[E401]: plan `{problem.name}` is infeasible: "
        f"{len(result.violations)} violation(s)")
    ]
    lines += [f"  - {v.kind}: {v.message}" for v in result.violations[:50]]
    _eprint("\n".join(lines))
    raise typer.Exit(EXIT_INFEASIBLE)


@app.command()
def simulate(
    spec: Annotated[Path, typer.Argument(help="The spec file.")],
    plan: Annotated[str | None, typer.Option("--plan", help="Plan name (needed when the spec has several).")] = None,
    placement: Annotated[Path | None, typer.Option("--placement", help="A plan JSON or {\"placement\": {op: device}} file; default: the spec's place/pin statements.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
) -> None:
    """Simulate a given placement under the spec's cost model and verify it."""
    with _guard():
        loaded = _load(spec, keep=True)
        problem = _problem(loaded, plan)
        the_plan = _read_placement(problem, placement) if placement else _placement_from_spec(problem)
        result = _emit_result(problem, the_plan, as_json=as_json, extra_json={}, extra_rows={})
        if not result.feasible:
            _infeasible_exit(problem, result)


@app.command()
def solve(
    spec: Annotated[Path, typer.Argument(help="The spec file.")],
    plan: Annotated[str | None, typer.Option("--plan", help="Plan name (needed when the spec has several).")] = None,
    algo: Annotated[str, typer.Option("--algo", help="Algorithm: auto, msct, metf, mtopo, heft, cpop, single, roundrobin, random, expert, cpsat, ilp.")] = "auto",
    out: Annotated[Path | None, typer.Option("--out", help="Write the plan JSON here (atomically).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="Seconds for the exact phase: default 10 for auto (0: heuristics only), 60 for cpsat and ilp.")] = None,
    gap: Annotated[float, typer.Option("--gap", help="Relative optimality gap for exact solvers.")] = 1e-4,
    solver: Annotated[str, typer.Option("--solver", help="ILP back-end: highs, cbc, glpk, or any Pyomo solver name.")] = "highs",
    emit: Annotated[Path | None, typer.Option("--emit", help="With --algo ilp: write the model (.lp or .mps).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for --algo random.")] = 0,
    html: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML report (Gantt, memory).")] = None,
) -> None:
    """Place and schedule a spec's graph; print the simulated plan and its lower bound."""
    with _guard():
        from .algorithms import Options, run
        from .render.terminal import fmt_info
        from .units import format_seconds

        loaded = _load(spec, keep=True)
        problem = _problem(loaded, plan)
        if time_limit is None:
            time_limit = AUTO_TIME_LIMIT_S if algo == "auto" else EXACT_TIME_LIMIT_S
        if time_limit < 0:
            raise UsageError(Diagnostic("E603", f"--time-limit: `{time_limit}` is negative",
                                        None, ("give seconds, e.g. --time-limit 30",)))
        options = Options(seed=seed, time_limit_s=time_limit, gap=gap, solver=solver,
                          emit=str(emit) if emit else None)
        with stdout_to_stderr(), _spinner(f"{algo}: placing {len(problem.graph.ops)} ops"
                                          f" (up to {time_limit:g} s)"):
            solution = run(algo, problem, options)
        info = dict(solution.info)
        if out is not None:
            solution.plan.write(problem, str(out))
        extra_json: dict[str, Any] = {
            "algorithm": solution.plan.algorithm or algo,
            "status": solution.status,
            "planning_s": solution.planning_s,
            **{k: v for k, v in info.items() if _jsonable(v)},
        }
        rows = {"algorithm": algo + (f" → {info['chosen']}" if info.get("chosen") else ""),
                "status": solution.status,
                "planning time": format_seconds(solution.planning_s),
                **fmt_info(info, ("solver", "objective_s", "bound_s", "gap", "reason"))}
        result = _emit_result(problem, solution.plan, as_json=as_json, extra_json=extra_json,
                              extra_rows=rows)
        if html is not None:
            from .render.html import write_plan_html

            write_plan_html(str(html), problem, result)
        if not result.feasible:
            _infeasible_exit(problem, result)


def _spinner(message: str) -> Any:
    """A spinner on stderr while the algorithm runs, only when stderr is a terminal."""
    import contextlib

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(message)


def _jsonable(v: Any) -> bool:
    try:
        json.dumps(v)
    except (TypeError, ValueError):
        return False
    return True


def _guarded(fn: Any) -> Any:
    """Run a command defined elsewhere inside `guard()` (typer reads the wrapped signature)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with guard():
            return fn(*args, **kwargs)

    return wrapper


def _mount_optional() -> None:
    """Sub-commands living in their own modules (importers, exporters, generators, compare)."""
    from .commands.compare import compare_command

    app.command("compare")(_guarded(compare_command))
    try:
        from .io.commands import export_app, generate_app, import_app
    except ImportError:  # pragma: no cover - during development only
        return
    app.add_typer(import_app, name="import", help="Make a .plan spec from a model file.")
    app.add_typer(export_app, name="export", help="Write a spec in another format.")
    app.add_typer(generate_app, name="generate", help="Generate analytic model graphs.")


_mount_optional()


@app.command()
def explain(code: Annotated[str, typer.Argument(
        help="A diagnostic code: the CODE of `error[CODE]`.")]) -> None:
    """Say what a diagnostic code means, its layer and its exit status."""
    with _guard():
        from .codes import CODES, describe
        from .errors import did_you_mean

        entry = CODES.get(code.strip().upper())
        if entry is None:
            raise UsageError(Diagnostic("E609", f"unknown code `{code}`", None,
                                        did_you_mean(code.strip().upper(), CODES)))
        sys.stdout.write(describe(entry) + "\n")


def main() -> None:
    """Console entry point."""
    logging.basicConfig(stream=sys.stderr,
                        level=logging.DEBUG if debug_enabled() else logging.WARNING,
                        format="planner: %(levelname)s: %(message)s")
    app()
