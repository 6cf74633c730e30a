"""What `simulate` and `solve` do between reading their options and exiting: the plan
given or the algorithm run, the simulation, the report (terminal, JSON, HTML, trace)
and the exit status (3 for an infeasible plan, 130 for an interrupted search).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from .. import algorithms
from ..algorithms.base import Interrupted
from ..errors import (
    Diagnostic,
    InfeasibleError,
    PlanChoiceError,
    SearchLimitError,
    Span,
    UsageError,
    render_all,
)
from ..files import check_outputs
from ..model import Problem
from ..plan import Plan, layout_json
from ..render.diagnostics import eprint
from ..signals import deferred
from ..units import format_seconds
from .guard import (
    EXIT_INFEASIBLE,
    EXIT_INTERRUPTED,
    JsonReport,
    interrupted_diagnostic,
    stdout_console,
    stdout_to_stderr,
)

if TYPE_CHECKING:
    from ..algorithms.base import Options, Solution
    from ..bounds import Bounds
    from ..report.views import PipelineView
    from ..simulate import SimResult, Violation
    from ..spec.load import Loaded
    from ..spec.lower import Locations


def problem_of(loaded: Loaded, name: str | None) -> Problem:
    """The plan `--plan` names, or the spec's only plan; E602 where it cannot be chosen,
    at the plans' declarations (`Loaded.plan_places`)."""
    try:
        return loaded.spec.plan(name)
    except PlanChoiceError as err:
        places = loaded.plan_places(name)
        raise UsageError(Diagnostic("E602", err.reason, places.span, places.hints,
                                    notes=places.notes)) from None


def unrunnable_pipelines(problems: Iterable[Problem], where: Mapping[str, Span]
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
    from ..pipeline.runnable import unrunnable  # lazy: start-up (numpy), pipeline plans only

    return unrunnable(problem, placement, span)


def check_imports_kept(outputs: Mapping[str, Path | None], loaded: Loaded) -> None:
    """E640 for an output onto a file the spec imports (`files.check_outputs`): the imports
    are inputs too, known once the spec is read, before any work."""
    check_outputs(outputs, [("SPEC's import", file) for file in loaded.sources])


def emit_result(problem: Problem, plan: Plan, report: JsonReport, *,
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
    from ..render.figures import format_gap, one_pass
    from ..render.report import report_json
    from ..render.terminal import print_plan
    from ..simulate import simulate

    result = simulate(problem, plan)
    bounds = bounds_of(problem)
    best = plan_bound(bounds.makespan_s, info or {})
    if best != bounds.makespan_s:
        bounds = dataclasses.replace(bounds, makespan_s=best)
    gap = relative_gap(result.makespan_s, best) if result.feasible else None
    # a plan that breaks a rule the plan's model judges by one pass (all but memory, under
    # `objective pipeline`) is infeasible, whatever its algorithm said (`expert` checks none)
    broken = any(problem.pipeline is None or v.kind != "memory" for v in result.violations)
    for shown in (extra_json, extra_rows):  # one pass's bound: not a pipeline's optimum
        if shown.get("status") in ("feasible", "optimal") and broken:
            shown["status"] = "infeasible"
        elif shown.get("status") in ("feasible", "fallback") and problem.pipeline is None:
            shown["status"] = standing(
                "fallback" if shown["status"] == "fallback" else "feasible", gap)
    if "status" in extra_rows:  # in place: the HTML report reads the rows after this
        extra_rows["status"] = _status_words(problem, extra_rows["status"])
    if report.enabled:
        obj = report_json(problem, result, bounds, plan.order)
        obj.update(extra_json)
        obj["gap"] = gap
        report.result = obj
    if "gap" in extra_rows:  # one pass's, which under `objective pipeline` says so
        extra_rows = {(one_pass(problem, k) if k == "gap" else k): (format_gap(gap) if k == "gap"
                                                                   else v)
                      for k, v in extra_rows.items()}
    if report.output == "github":  # the annotations go to stdout, the plan to the log
        from rich.console import Console  # lazy: start-up

        print_plan(Console(stderr=True, soft_wrap=False), problem, result, bounds, extra_rows)
    elif not report.enabled:
        print_plan(stdout_console(), problem, result, bounds, extra_rows)
    return result, bounds, gap


def report_pipeline(problem: Problem, plan: Plan, report: JsonReport, bounds: Bounds,
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

    if recompute and not memory_note:  # a plan file's (`simulate`): the note `solve` gives
        memory_note = _recompute_note(problem, plan, recompute, replicas or {})
    view = pipeline_view(problem, plan.placement, plan.algorithm or "given",
                         bounds.makespan_s, recompute, memory_note, replicas or {})
    refused = _refusal(problem, plan.placement, None)
    if refused is not None:  # what `export torch --pipeline` would refuse (E947)
        report.diagnostics.append(refused)
        if not report.enabled:
            eprint(render_all([refused]))
    if report.enabled:
        if report.result is not None:
            report.result["pipeline"] = pipeline_json(problem, view.rows, view.bound,
                                                      view.notes)
    else:
        stdout_console().print(pipeline_report(problem, view.rows, view.bound, view.notes))
    if report.output == "github":  # beside the one-pass report, in the log (emit_result)
        from rich.console import Console  # lazy: start-up

        Console(stderr=True, soft_wrap=False).print(
            pipeline_report(problem, view.rows, view.bound, view.notes))
    return view.rows[-1].fits, view


def verdict(problem: Problem, result: SimResult, fits: bool, report: JsonReport,
            hints: tuple[str, ...] = (), view: PipelineView | None = None) -> None:
    """Exit 3 (E401, with `hints` after its own) for a plan that breaks a rule: under
    `objective pipeline` as `pipeline_verdict` judges it (`view`: the report's pipeline
    run), else by the one pass."""
    if problem.pipeline is not None:
        pipeline_verdict(problem, result, fits, report, hints, view)
    elif not result.feasible:
        infeasible_exit(problem, result, report, hints)


def infeasible_exit(problem: Problem, result: SimResult, report: JsonReport,
                    hints: tuple[str, ...] = ()) -> NoReturn:
    head = (f"plan `{problem.name}` is infeasible: "
            f"{len(result.violations)} violation(s)")
    if report.enabled:  # the CI formats show each violation; the JSON has `violations`
        listed = () if report.output == "json" else tuple(
            f"{v.kind}: {v.message}" for v in result.violations[:50])
        report.diagnostics.append(Diagnostic("E401", head, None, listed + hints))
    else:
        lines = [f"error[E401]: {head}"]
        lines += [f"  - {v.kind}: {v.message}" for v in result.violations[:50]]
        lines += [f"  = hint: {hint}" for hint in hints]
        eprint("\n".join(lines))
    raise typer.Exit(EXIT_INFEASIBLE)


def place(algo: str, problem: Problem, options: Options, report: JsonReport,
          loc: Locations | None = None) -> Solution:
    """Run the algorithm; on Ctrl-C, the `interrupted` solution it holds, or exit 130. The
    proofs that no plan exists it raises, and the errors of a plan it found none of, are
    located in the spec by `loc`."""
    from ..render.terminal import SolveProgress, live_progress  # lazy: start-up

    # the limit, shown as `elapsed/limit s`, of an algorithm that takes one (a heuristic runs
    # to its end: its line shows the elapsed time alone)
    info = algorithms.get(algo)
    limit_s = options.time_limit_s if info.takes("time_limit_s") else 0.0
    progress = SolveProgress(algo, len(problem.graph.ops), limit_s)
    try:
        with stdout_to_stderr(), live_progress(progress):
            progress.bound_s = bounds_of(problem).makespan_s
            # the algorithm's module and what it loads once (numba's kernels, OR-Tools,
            # Pyomo: `warm_up`) are ready before the line's clock starts, as `run` readies
            # them before its own (`planning_s`): `auto`'s import (0.09 s idle, more on a
            # loaded machine) was counted by the line, not by the planning time
            info.warm_up(problem, options)
            progress.begin()
            # through the module: a test (or a caller) may replace `run`
            return algorithms.run(algo, problem,
                                  dataclasses.replace(options, progress=progress.update))
    except (InfeasibleError, SearchLimitError) as err:  # E709, E811, E821 at the plan too
        if loc is not None:
            from ..spec.checks import locate_proofs  # lazy: start-up

            err.diagnostics = locate_proofs(problem, err.diagnostics, loc)
        raise
    except Interrupted as stop:
        if stop.solution is not None:
            return dataclasses.replace(stop.solution, status="interrupted")
        nothing = interrupted_diagnostic(None)
    except KeyboardInterrupt:
        nothing = interrupted_diagnostic(None)
    if report.enabled:
        report.diagnostics.append(nothing)
    else:
        eprint(render_all([nothing]))
    raise typer.Exit(EXIT_INTERRUPTED)


#: a solution's info that `solve --json` writes its own way: the gap (`emit_result`'s) and
#: the pipeline's layout (`layout_json`'s)
_WRITTEN_APART = ("gap", "recompute", "replicas")


def report_solution(problem: Problem, algo: str, solution: Solution, report: JsonReport, *,
                     out: Path | None, html: Path | None, trace: Path | None = None) -> None:
    # lazy: start-up
    from ..pipeline.hybrid import replica_groups
    from ..render.terminal import fmt_info

    info = dict(solution.info)
    groups = replica_groups(problem, info)
    recompute = tuple(info.get("recompute") or ())
    status = _pipeline_status(problem, solution)
    extra_json: dict[str, Any] = {
        "algorithm": solution.plan.algorithm or algo,
        "status": status,
        "planning_s": solution.planning_s,
        **{k: v for k, v in info.items() if _jsonable(v) and k not in _WRITTEN_APART},
        # as the plan file and `simulate --json` write them: each only where it holds one
        # (pipeilp gave `"recompute": []`, hybrid `"replicas": {}`, the others neither)
        **layout_json(problem, groups, recompute),
    }
    rows = {"algorithm": algo + (f" → {info['chosen']}" if info.get("chosen") else ""),
            # auto's search from several starts: each one's moves and the one that won
            **fmt_info(info, ("search",) if info.get("search_starts") else ()),
            "status": status,
            "planning time": format_seconds(solution.planning_s),
            **fmt_info(info, _solver_fields(info, solution.status)),
            **({"gap": ""} if "gap" in info or "bound_s" in info else {}),
            **fmt_info(info, ("reason", "stopped", "simulator", "kept", "note", "data_parallel",
                              *_why(info, solution.status)))}
    result, bounds, gap = emit_result(problem, solution.plan, report, extra_json=extra_json,
                                       extra_rows=rows, info=info)
    fits, view = report_pipeline(problem, solution.plan, report, bounds,
                                  _split_note(info), recompute,
                                  info.get("replicas"))
    # the files are written together or not at all: a stop while they are is held off to
    # their end (before: a Ctrl-C after `--html` left `--out` and `--trace` as they were)
    with deferred():
        if html is not None:
            from ..render.figures import format_gap  # lazy: start-up
            from ..render.html import write_plan_html  # lazy: start-up

            write_plan_html(str(html), problem, result, extra={
                "algorithm": rows["algorithm"], "status": rows["status"],
                "lower bound": format_seconds(bounds.makespan_s), "gap": format_gap(gap),
                "planning time": format_seconds(solution.planning_s)},
                bound_s=bounds.makespan_s, pipeline=view)
        write_trace_file(trace, problem, result, recompute, info.get("replicas"))
        _judge_and_write(problem, solution, result, fits, report, view,
                         (out, html, trace), groups, recompute)
    if view is not None and view.stopped:  # a stop while comparing: the plan is written
        raise KeyboardInterrupt


def _judge_and_write(problem: Problem, solution: Solution, result: SimResult, fits: bool,
                     report: JsonReport, view: PipelineView | None,
                     files: tuple[Path | None, Path | None, Path | None],
                     groups: Mapping[int, tuple[int, ...]], recompute: Sequence[str]) -> None:
    """The verdict (exit 3 where the plan breaks a rule), then `--out` (files: `--out`,
    `--html`, `--trace`), and E607's note for an interrupted plan."""
    out, html, trace = files
    try:  # an infeasible plan is no plan file: `--out` keeps what it held (the reports show it)
        verdict(problem, result, fits, report, () if out is None else (
            f"--out {out} was left as it was: a plan that breaks the rules is not written as "
            "a plan file (--json gives it, marked infeasible with its violations)",), view)
    except typer.Exit:
        _interrupted_note(solution, (html, trace), report)
        raise
    if out is not None:
        solution.plan.write(problem, str(out), groups, recompute,
                            "interrupted" if solution.status == "interrupted" else "")
    _interrupted_note(solution, (out, html, trace), report)


def _interrupted_note(solution: Solution, written: Sequence[Path | None],
                      report: JsonReport) -> None:
    """E607 (a warning) for an `interrupted` solution: the best plan so far is shown, and
    written to the files of `written` that are not None."""
    if solution.status != "interrupted":
        return
    files = " and ".join(str(p) for p in written if p is not None)
    kept = interrupted_diagnostic("the best plan found so far is shown"
                                  + (f" and written to {files}" if files else ""))
    report.diagnostics.append(kept)
    if not report.enabled:
        eprint(render_all([kept]))


def _solver_fields(info: Mapping[str, Any], status: str) -> tuple[str, ...]:
    """The solver's lines of a solution: its name and objective where a solver made the
    plan (not auto's heuristic or search phase, not `search`); its name alone where the
    plan is the warm start it fell back to (it never ran, or found nothing better). The
    one bound is the `lower bound` line (`emit_result`)."""
    if "solver" not in info or info.get("chosen", "cpsat") != "cpsat":
        return ()
    return ("solver",) if status == "fallback" else ("solver", "objective_s")


def _why(info: Mapping[str, Any], status: str) -> tuple[str, ...]:
    """The `why` line of a solver's plan that is not proved optimal (`feasible`): what
    stopped it (its time limit, its work limit), else a time-limited run and a proof that
    the solver's model is not the spec's would look alike."""
    return ("why",) if status == "feasible" and "solver_status" in info \
        and "chosen" not in info else ()


def _recompute_note(problem: Problem, plan: Plan, recompute: Sequence[str],
                    replicas: Mapping[str, Sequence[str]]) -> str:
    """The note on the devices that recompute, as `solve` prints it, with what each holds
    as the plan runs."""
    from ..pipeline.schedule import run_planned  # lazy: start-up
    from ..pipeline.split import recompute_note

    assert problem.pipeline is not None
    ran = run_planned(problem, plan.placement, problem.pipeline,
                      {"recompute": recompute, "replicas": replicas})
    index = problem.cluster.device_index
    return recompute_note(problem, plan.placement, [index[n] for n in recompute if n in index],
                          ran.memory_bytes)


def _split_note(info: Mapping[str, Any]) -> str:
    """What shaped the pipeline split, as the algorithm says (`pipedp`: the memory caps, or
    the stage count passed over for a longer iteration)."""
    return str(info.get("memory_note") or info.get("stages_note") or "")


def _status_words(problem: Problem, status: str) -> str:
    """The status as the terminal and HTML show it: a pipeline's `optimal` is its period's
    (pipeilp minimises T), which a reader of the iteration beside it would not guess."""
    if problem.pipeline is not None and status == "optimal":
        return "optimal (the period T; the iteration is not minimised)"
    return status


def _pipeline_status(problem: Problem, solution: Solution) -> str:
    """The status shown: the algorithm's, but `infeasible` for a plan that does not fit as
    the pipeline or splits a pipeline unit over devices (what `pipeline_verdict` then
    reports, E401), which a one-pass scheduler never looked at; the pipeline run is the one
    the report shows (cached)."""
    pipeline, status = problem.pipeline, solution.status
    if pipeline is None or status not in ("feasible", "optimal", "fallback"):
        return status
    # lazy: start-up
    from ..algorithms.exact.verdict import pipeline_standing
    from ..pipeline.bound import pipeline_bound
    from ..pipeline.hybrid import replica_groups
    from ..pipeline.schedule import run_planned
    from ..pipeline.split import fits, units_split
    from ..pipeline.verdict import replica_rules

    broken = "fallback" if status == "fallback" else "infeasible"  # (E401 says which)
    if units_split(problem, solution.plan.placement):
        return broken
    ran = run_planned(problem, solution.plan.placement, pipeline, solution.info)
    if not (fits(problem, ran.memory_bytes) and not replica_rules(problem, ran)
            and math.isfinite(ran.iteration_s)):
        return broken
    # the bound the report prints beside its period (`report.pipeline.pipeline_view`)
    bound = pipeline_bound(problem, replicated=bool(replica_groups(problem, solution.info)))
    return pipeline_standing(status, bound.gap(ran.period_s))


def pipeline_verdict(problem: Problem, result: SimResult, fits: bool,
                      report: JsonReport, hints: tuple[str, ...] = (),
                      view: PipelineView | None = None) -> None:
    """A pipeline plan's memory is the pipeline's (activations in flight, recomputation),
    not one pass's: the one-pass simulation judges every other rule, and the pipeline's
    run (`view`) the pins its replicated stages break. Exit 3 (E401, with `hints` after
    its own) where it breaks one."""
    from ..pipeline.verdict import pipeline_violations, replica_rules  # lazy: start-up

    others = [v for v in result.violations if v.kind != "memory"]
    if view is not None:
        others += replica_rules(problem, view.rows[-1].run)
        _listed(report, problem, pipeline_violations(problem, result, view.rows[-1].run))
    if others:
        _judged(report, False)
        if any(v.kind == "replicas" for v in others):
            hints = ("give each stage its replicas: a plan file's `replicas` (`solve --out` "
                     "writes them) or `--stages` with each stage's `devices`", *hints)
        infeasible_exit(problem, dataclasses.replace(result, violations=tuple(others)),
                         report, hints)
    from ..pipeline.split import split_words, units_split  # lazy: start-up

    split = units_split(problem, result.placement)
    own: tuple[str, ...] = ()
    if split:
        more = f" ({len(split) - 1} more unit(s) split)" if len(split) > 1 else ""
        head = (f"plan `{problem.name}` is no pipeline: "
                f"{split_words(problem, result.placement, split[0])} (a forward op, its "
                f"backward ops and their colocation groups run on one stage){more}")
        own = ("place each unit on one device, or plan it with a pipeline algorithm "
               "(pipedp, pipeilp, hybrid)",)
    elif not fits:
        from ..pipeline.verdict import memory_words, overflowing  # lazy: start-up

        why = ("a device holds less than its stages need" if view is None
               else memory_words(problem, view.rows[-1].run) + _more_devices(
                   problem, overflowing(problem, view.rows[-1].run)[1:]))
        head = (f"plan `{problem.name}` does not fit as a pipeline: {why} (the pipeline's "
                "memory table)")
    elif view is not None and not math.isfinite(view.rows[-1].run.iteration_s):
        from ..pipeline.verdict import NEVER_ENDS  # lazy: start-up

        head = f"plan `{problem.name}` does not run as a pipeline: {NEVER_ENDS}"
        own = ("place the ops so that each device needs only earlier devices' work of a "
               "micro-batch, or plan it with a pipeline algorithm (pipedp, hybrid)",)
    else:
        _judged(report, True)
        return
    _judged(report, False)
    diagnostic = Diagnostic("E401", head, None, own + hints)
    if report.enabled:
        report.diagnostics.append(diagnostic)
    else:
        eprint(render_all([diagnostic]))
    raise typer.Exit(EXIT_INFEASIBLE)


def _more_devices(problem: Problem, more: Sequence[int]) -> str:
    names = ", ".join(f"`{problem.cluster.devices[d].name}`" for d in more)
    return f" (and {len(more)} more device(s) over: {names})" if more else ""


def _listed(report: JsonReport, problem: Problem, violations: Sequence[Violation]) -> None:
    """`--json`'s `violations` under `objective pipeline`: the rules the plan breaks as the
    pipeline runs (`pipeline_violations`), as `feasible` says (before: one pass's, memory
    included: a device over its one-pass memory listed beside a plan that fits, or none
    beside `feasible: false`); one pass's are `one_pass_violations`."""
    from ..render.report import violations_json  # lazy: start-up

    if report.enabled and isinstance(report.result, dict):
        report.result["one_pass_violations"] = report.result.get("violations")
        report.result["violations"] = violations_json(problem, violations)


def _judged(report: JsonReport, runs: bool) -> None:
    """`--json`'s `feasible` under `objective pipeline`: whether the plan runs as the
    pipeline, as the status, the exit code and the API's `Result.feasible` say (before:
    one pass's, `true` beside `infeasible` and exit 3); one pass's is `one_pass_feasible`,
    and `gap` is null for a plan that does not run, as for one pass."""
    if report.enabled and isinstance(report.result, dict):
        report.result["one_pass_feasible"] = report.result.get("feasible")
        report.result["feasible"] = runs
        if not runs:
            report.result["gap"] = None


def write_trace_file(path: Path | None, problem: Problem, result: SimResult,
                     recompute: Sequence[str] = (),
                     replicas: Mapping[str, Sequence[str]] | None = None) -> None:
    """`--trace`: the one-pass simulation `result`; under `objective pipeline`, the plan's
    iteration as the pipeline runs it (the devices named in `recompute` recomputing, the
    stages of `replicas`' devices on their groups, as `report_pipeline`)."""
    if path is None:
        return
    if problem.pipeline is not None:
        # lazy: start-up
        from ..pipeline.verdict import pipeline_breaks
        from ..render.trace import write_pipeline_trace
        from ..report.pipeline import pipeline_simulation

        sim = pipeline_simulation(problem, result.placement, recompute, replicas)
        write_pipeline_trace(str(path), problem, sim,
                             pipeline_breaks(problem, result, sim.run), result.makespan_s)
        return
    from ..render.trace import write_trace  # lazy: start-up

    write_trace(str(path), problem, result)


def bounds_of(problem: Problem) -> Bounds:
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
