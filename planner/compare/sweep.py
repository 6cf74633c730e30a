"""The sweep engine: plan the points of a sweep, run them (resumable), pick the plans to draw.

A sweep is a list of points, spec × plan × algorithm × setting (bandwidth, memory cap,
device count, objective, micro-batches; see `planner.compare.settings`). Each point runs in a worker
(`planner.compare.worker.run_point`) through an executor (`planner.compare.executors`):
load the spec (cached per worker), apply the setting, run the algorithm, simulate its plan,
compute the lower bound. The result is one row of tidy data (`planner.compare.rows`);
failures are rows too, with a status and a reason.

`--resume FILE` appends each row to FILE (CSV or JSONL) as it completes, durably; a sweep
started again with the same FILE skips the points already there (except `crashed` ones)
when their rows were computed from the spec's current content, runs the stale ones again
(`planner.compare.resume`), and, once complete, rewrites FILE sorted with the ratios filled
in.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import errors
from ..algorithms import compare_defaults, get, names
from ..algorithms.base import MAX_TIME_LIMIT_S
from ..errors import Diagnostic, PlannerError, Severity, Span, SpecError, UsageError, did_you_mean
from ..model import Problem
from ..plan import Plan
from ..roots import display_path
from ..simulate import SimResult, simulate
from ..spec.load import Loaded, load_path, spec_files
from .executors import EXECUTORS, Worker, execute, hard_limit, import_ray
from .resume import ResumeLog, resumed, rewritten, spec_digest
from .rows import (
    Row,
    finalize,
    is_ok,
    row_key,
    row_setting,
    score,
    write_rows,
)
from .settings import (
    AXIS_DEFAULTS,
    DEFAULT_BANDWIDTH,
    DEFAULT_DEVICES,
    DEFAULT_MEMORY,
    DEFAULT_MICROBATCHES,
    DEFAULT_OBJECTIVE,
    DEFAULT_PIPELINE_MICROBATCHES,
    Setting,
    applies_microbatches,
    apply_setting,
    grid,
    held_labels,
    leeway,
    parse_bandwidths,
    parse_devices,
    parse_memories,
    parse_microbatches,
    parse_objectives,
    setting_key,
)
from .worker import Point, load_spec, run_point

__all__ = ["DEFAULT_ALGORITHMS", "PlanView", "Sweep", "SweepResult", "best_plans", "plan_sweep",
           "run_sweep"]

#: `--algos` when not given: the registry's `compare_default` algorithms (the fast heuristics
#: and the single-device baseline)
DEFAULT_ALGORITHMS: tuple[str, ...] = compare_defaults()

Progress = Callable[[int, int, "Row | None"], None]


@dataclass(frozen=True)
class Sweep:
    """The points of a sweep, in a deterministic order, and warnings found planning it
    (the specs' own, W650, W625: `plan_sweep` issues them as `PlannerWarning`s too)."""

    points: tuple[Point, ...]
    specs: tuple[str, ...]
    algorithms: tuple[str, ...]
    settings: tuple[Setting, ...]
    warnings: tuple[Diagnostic, ...] = ()
    #: every file the sweep reads, as `files.check_outputs` takes inputs: the spec files
    #: (those found in folders too, loaded or not) and the files they import
    inputs: tuple[tuple[str, str], ...] = ()


@dataclass
class SweepResult:
    """What a sweep produced: its rows (sorted, with `ratio_to_best`), counts, and plans.

    `plans` maps a row key (`rows.row_key`) to the (placement, per-device order) of that
    run, for the runs of this session when `keep_plans` was asked for. `stale` counts the
    points of `ran` whose row in the resume file was stale (`planner.compare.resume`),
    `other_version` those whose row was computed by another version of planner
    (`versions`: which; `None` for a row that records none).
    """

    sweep: Sweep
    rows: list[Row]
    ran: int
    reused: int
    plans: dict[tuple[Any, ...], tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = field(
        default_factory=dict)
    stale: int = 0
    other_version: int = 0
    versions: tuple[str | None, ...] = ()


# -- planning -----------------------------------------------------------------------------


def _labels(value: str | Sequence[str] | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return ",".join(value)


def _parse_algorithms(algorithms: str | Sequence[str] | None) -> tuple[str, ...]:
    text = _labels(algorithms)
    if text is None:
        return DEFAULT_ALGORITHMS
    wanted = tuple(dict.fromkeys(a.strip() for a in text.split(",") if a.strip()))
    if not wanted:
        raise UsageError(Diagnostic("E616", "--algos: no algorithm given", None,
                                    ("for example `--algos msct,heft,ilp`",)))
    known = names()
    for a in wanted:
        if a not in known:
            raise UsageError(Diagnostic(
                "E601", f"--algos: unknown algorithm `{a}`", None,
                (*did_you_mean(a, known), "available: " + ", ".join(known))))
    return wanted


def _spec_files(specs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                root: str | os.PathLike[str], warnings: list[Diagnostic]
                ) -> list[tuple[Path, bool]]:
    """(file, named explicitly) for each spec, as `check` finds them (`spec_files`: each
    file once, E006 when there is none, W006 into `warnings` for an empty folder beside
    others: `t.plan ./t.plan` or a folder and a file in it ran its points twice). One path
    alone is that spec (a str's letters would be paths: its `/` the whole disk)."""
    if isinstance(specs, (str, os.PathLike)):
        specs = [specs]
    if not specs:
        base = Path(root)
        if not base.is_dir():
            raise UsageError(Diagnostic(
                "E617", f"no SPEC given and there is no `{display_path(base)}` folder here", None,
                ("name spec files, e.g. `planner compare specs/resnet.plan`",)))
        specs = [base]
    found, empty = spec_files(specs)
    warnings.extend(empty)
    return found


def plan_sweep(
    specs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
    algorithms: str | Sequence[str] | None = None,
    *,
    plan: str | None = None,
    bandwidths: str | Sequence[str] | None = None,
    memories: str | Sequence[str] | None = None,
    devices: str | Sequence[str] | None = None,
    objectives: str | Sequence[str] | None = None,
    microbatches: str | Sequence[str] | None = None,
    time_limit_s: float = 60.0,
    root: str | os.PathLike[str] = "specs",
) -> Sweep:
    """The points of a sweep: every plan of every spec × algorithm × setting.

    `specs` is a list of files and folders, or one alone. With no `specs`, every `*.plan`
    under `root` (files there that fail to load are skipped with a warning, W650; files
    named explicitly must load: `SpecError`). No `*.plan` file at all is `SpecError` E006,
    as `check` says it; a folder that holds none beside others that do, W006. The warnings
    (each compared spec's own, as `check` gives them, once per file; W006; W650; and W625
    for points left out because their algorithm does not plan for their objective) are in
    `Sweep.warnings`
    and issued as `planner.PlannerWarning`s at the caller's line, as `compare` prints them.
    Files that define no plan (cluster libraries) contribute nothing. A micro-batch count
    applies only to a point under the pipeline objective (`settings.applies_microbatches`);
    the other points of that plan get the label `spec`, once. Raises `UsageError` for bad
    option values, naming the option, and (E624) for `microbatches` when no point is
    under the pipeline objective.
    """
    algos = _parse_algorithms(algorithms)
    mb_labels = parse_microbatches(_labels(microbatches))
    settings = grid(parse_bandwidths(_labels(bandwidths)), parse_memories(_labels(memories)),
                    parse_devices(_labels(devices)), parse_objectives(_labels(objectives)),
                    mb_labels)
    _check_time_limit(time_limit_s)
    warnings: list[Diagnostic] = []
    points: list[Point] = []
    shown_specs: list[str] = []
    pipelined = False  # whether any point is under the pipeline objective
    first_plan: tuple[str, str] | None = None  # where E624 points
    overridden: tuple[str, str] | None = None  # a pipeline plan `--objective` replans
    # algorithm -> the objectives of the points it does not plan for (left out), and the
    # algorithms with a point
    left_out: dict[str, set[str]] = {}
    ran: set[str] = set()
    inputs: list[tuple[str, str]] = []
    for path, explicit in _spec_files(specs, root, warnings):
        shown = display_path(path)
        loaded = _load_spec(path, shown, explicit, warnings)
        inputs.extend(_inputs_of(path, loaded))
        if loaded is None:
            continue
        spec = loaded.spec
        plans = _plans_of(loaded, plan, shown, explicit)
        if not plans:
            continue
        shown_specs.append(shown)
        _own_warnings(loaded, warnings)
        absolute = str(path.resolve())
        digest = spec_digest(loaded.sources)
        for name in plans:
            problem = spec.plans[name]
            chosen, piped = _plan_settings(problem, settings)
            pipelined = pipelined or piped
            for s in chosen:
                objective = ("pipeline" if applies_microbatches(problem, s.objective)
                             else "makespan")
                for a in algos:
                    if not get(a).serves(objective):  # E625 in `solve`: no such point
                        left_out.setdefault(a, set()).add(objective)
                        continue
                    ran.add(a)
                    points.append(Point(shown, absolute, name, a, s.bandwidth, s.memory,
                                        s.devices, float(time_limit_s), s.objective,
                                        s.microbatches, digest))
            first_plan = first_plan or (shown, name)
            if problem.pipeline is not None and overridden is None:
                overridden = (shown, name)
    if points and mb_labels != (DEFAULT_MICROBATCHES,) and not pipelined:
        raise UsageError(_no_pipeline(mb_labels, first_plan, overridden))
    warnings.extend(_left_out(left_out, ran))
    if not points and not left_out:
        where = "the named specs" if specs else f"`{display_path(Path(root))}`"
        raise UsageError(Diagnostic(
            "E619", f"nothing to compare: no plan found in {where}"
            + (f" named `{plan}`" if plan else ""), None,
            ("a spec needs a `plan NAME { graph G cluster C }` block",)))
    sweep = Sweep(tuple(points), tuple(shown_specs), algos, settings, tuple(warnings),
                  tuple(inputs))
    errors.warn_user(sweep.warnings)  # where the Python API says them; `compare` prints its own
    return sweep


def _no_pipeline(mb_labels: Sequence[str], first_plan: tuple[str, str] | None,
                 overridden: tuple[str, str] | None) -> Diagnostic:
    """E624: micro-batch counts and no point under the pipeline objective, at a plan that
    `--objective` took off its pipeline when there is one (its spec already asks for one)."""
    where, plan_name = overridden or first_plan or ("", "")
    if overridden:
        why = f"`--objective` plans `{plan_name}` of {where} for its makespan, not its pipeline"
        hint = ("add `pipeline` to `--objective` (`--objective makespan,pipeline`), or drop "
                "`--objective` to keep the plan's own `objective pipeline`")
    else:
        why = f"`{plan_name}` of {where} is planned for its makespan"
        hint = ("add `--objective pipeline` (or `--objective makespan,pipeline`), or write "
                "`objective pipeline` in the plan")
    return Diagnostic("E624", f"--microbatches {','.join(mb_labels)}: no plan is compared "
                      f"under the pipeline objective ({why})",
                      Span.start_of(where) if where else None, (hint,))


def _check_time_limit(time_limit_s: float) -> None:
    """E618 unless `time_limit_s` is a number of seconds from 0 to `MAX_TIME_LIMIT_S`
    (nan fails too). 0 means what it means to `solve`: no search or exact phase, so `auto`
    gives its best heuristic and an exact solver its fallback."""
    number = isinstance(time_limit_s, (int, float))
    if not (number and 0 <= time_limit_s <= MAX_TIME_LIMIT_S):  # nan fails too
        shown = f"{time_limit_s:.15g}" if number else repr(time_limit_s)
        raise UsageError(Diagnostic("E618", f"--time-limit: `{shown}` is not a number of "
                                    f"seconds from 0 to {MAX_TIME_LIMIT_S:.15g} "
                                    "(about 11.6 days)", None,
                                    ("for example `--time-limit 60`",)))


def _inputs_of(path: Path, loaded: Loaded | None) -> list[tuple[str, str]]:
    """The files a spec of the sweep reads (`Sweep.inputs`): its imports, then itself, so
    that its own name wins where it is among its sources."""
    imports = [("SPEC's import", f) for f in loaded.sources] if loaded is not None else []
    return [*imports, ("SPEC", str(path))]


def _own_warnings(loaded: Loaded, warnings: list[Diagnostic]) -> None:
    """Add the spec's own warnings (W266, W257...) to `warnings`, as `check` and `solve`
    say them: once per file, not per point (a file two specs import says its own once)."""
    warnings.extend(w for w in loaded.warnings if w not in warnings)


def _load_spec(path: Path, shown: str, explicit: bool, warnings: list[Diagnostic]
               ) -> Loaded | None:
    """The spec at `path`; one found under the root that does not load is skipped with a
    warning (W650, into `warnings`: None), one named explicitly raises its `SpecError`."""
    try:
        return load_path(path)
    except SpecError as err:
        if explicit:
            raise
        first = err.diagnostics[0] if err.diagnostics else None
        warnings.append(Diagnostic(
            "W650", f"skipped {shown}: it does not load"
            + (f" ({first.message})" if first else ""), Span.start_of(shown),
            ("run `planner check` on it",), severity=Severity.WARNING))
        return None


def _plans_of(loaded: Loaded, plan: str | None, shown: str, explicit: bool) -> list[str]:
    """The plans of the spec in the sweep: all, or `plan` alone (none where the spec lacks
    it; E602 for a spec named explicitly)."""
    plans = loaded.spec.plans
    if plan is None:
        return list(plans)
    if plan in plans:
        return [plan]
    if explicit:
        places = loaded.plan_places(plan)
        raise UsageError(Diagnostic(
            "E602", f"{shown} has no plan named `{plan}`; it defines: "
            + (", ".join(plans) or "none"), places.span, places.hints, notes=places.notes))
    return []


def _plan_settings(problem: Problem, settings: Sequence[Setting]
                   ) -> tuple[dict[Setting, None], bool]:
    """The settings of one plan, in order, each once: a micro-batch count only where it
    applies (`applies_microbatches`), else the spec's (`spec` left out where the count it
    means is listed too); and whether any point is under the pipeline objective."""
    chosen: dict[Setting, None] = {}
    pipelined = False
    for s in sorted(settings, key=setting_key):
        if s.microbatches != DEFAULT_MICROBATCHES:
            if not applies_microbatches(problem, s.objective):
                s = dataclasses.replace(s, microbatches=DEFAULT_MICROBATCHES)
            else:
                pipelined = True
        elif applies_microbatches(problem, s.objective):
            pipelined = True
        chosen[s] = None
    own = str(problem.pipeline.microbatches if problem.pipeline is not None
              else DEFAULT_PIPELINE_MICROBATCHES)
    for s in list(chosen):  # `--microbatches 4,spec` on a plan of 4: one point, not two
        if (s.microbatches == DEFAULT_MICROBATCHES and applies_microbatches(problem, s.objective)
                and dataclasses.replace(s, microbatches=own) in chosen):
            del chosen[s]
    return chosen, pipelined


def _left_out(left_out: dict[str, set[str]], ran: set[str]) -> list[Diagnostic]:
    """The points left out because their algorithm does not plan for their objective: a
    warning (W625) when the algorithm has other points, else the error `solve` gives
    (E625), before any work."""
    none = sorted(a for a in left_out if a not in ran)
    if none:
        a = none[0]
        planned = get(a).objectives[0]
        raise UsageError(Diagnostic(
            "E625", f"--algos {a}: it plans for `objective {planned}`, and no plan of the "
            f"sweep is compared under it", None,
            (f"add `--objective {planned}`, or drop {a}",)))
    if not left_out:
        return []
    shown = "; ".join(f"{a} under `objective {', '.join(sorted(o))}`"
                      for a, o in sorted(left_out.items()))
    return [Diagnostic("W625", f"not run: {shown} (an algorithm runs only under the "
                       "objectives it plans for)", None, severity=Severity.WARNING)]


# -- running ------------------------------------------------------------------------------


def run_sweep(
    sweep: Sweep,
    *,
    executor: str = "local",
    jobs: int | None = None,
    resume: str | os.PathLike[str] | None = None,
    keep_plans: bool = False,
    progress: Progress | None = None,
    worker: Worker = run_point,
    deadline: Callable[[Point], float] = hard_limit,
) -> SweepResult:
    """Run every point of `sweep` not already in `resume`, and return the sorted rows.

    `progress(done, total, row)` is called once before the first point (`row` None, `done`
    the points taken from the resume file) and after each point. An exception (Ctrl-C
    included) stops the sweep; rows already finished are in `resume`. A point running
    longer than `deadline(point)` seconds is stopped and recorded as `timeout`.
    """
    _check_run_options(executor, jobs)
    log = ResumeLog(resume) if resume is not None else None
    before = log.open() if log is not None else []
    found = resumed(sweep.points, before)
    todo, rows = found.todo, found.rows
    reused = len(rows)
    total = len(sweep.points)
    plans: dict[tuple[Any, ...], Any] = {}
    try:
        if progress is not None:
            progress(reused, total, None)
        results = execute(todo, executor=executor, jobs=jobs, keep_plans=keep_plans,
                          worker=worker, deadline=deadline)
        try:
            for res in results:
                if log is not None:
                    log.append(res.row)
                rows.append(res.row)
                if res.placement is not None and res.order is not None:
                    plans[row_key(res.row)] = (res.placement, res.order)
                if progress is not None:
                    progress(len(rows), total, res.row)
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()
    finally:
        if log is not None:
            log.close()
    if log is not None:
        # the sweep is complete: rewrite the file sorted, ratios filled in, one row a point
        write_rows(log.path, finalize(rewritten(before, rows)))
    return SweepResult(sweep, finalize(rows), ran=len(rows) - reused, reused=reused,
                       plans=plans, stale=found.stale, other_version=found.other_version,
                       versions=found.versions)


# -- the best plan of each spec, for the HTML report ---------------------------------------


@dataclass(frozen=True)
class PlanView:
    """One plan to draw: its row, the problem under the row's setting, its simulation."""

    row: Row
    problem: Problem
    result: SimResult


def _check_run_options(executor: str, jobs: int | None) -> None:
    """`run_sweep`'s options, checked before it touches any file (UsageError)."""
    if executor not in EXECUTORS:
        raise UsageError(Diagnostic("E612", f"--executor: unknown executor `{executor}`", None,
                                    ("choose one of: local, ray",)))
    if jobs is not None and jobs < 1:
        raise UsageError(Diagnostic("E620", f"--jobs: `{jobs}` is not a positive number",
                                    None, ("for example `--jobs 4`",)))
    if executor == "ray":
        import_ray()  # a UsageError with an install hint, before touching any file


def _preferred_setting(settings: Sequence[Setting], base: Problem | None) -> list[Setting]:
    """Settings from most to least preferred for showing "the" plan of a spec: the spec as
    written if swept, else the least constrained (most bandwidth, memory, devices, as they
    leave `base`: `leeway`; by their labels where the spec did not load), the spec's own
    objective and micro-batches first."""
    default = Setting(DEFAULT_BANDWIDTH, DEFAULT_MEMORY, DEFAULT_DEVICES)

    def room(s: Setting) -> tuple[Any, ...]:
        if base is None:
            return setting_key(s)[:3]
        return (leeway(base, "bandwidth", s.bandwidth), leeway(base, "memory", s.memory),
                leeway(base, "devices", s.devices))

    rest = sorted((s for s in settings if s != default), key=lambda s: (
        s.objective == DEFAULT_OBJECTIVE, s.microbatches == DEFAULT_MICROBATCHES, room(s)),
        reverse=True)
    return ([default] if default in settings else []) + rest


def _base_problem(path: str, plan_name: str, digest: str | None) -> Problem | None:
    """Plan `plan_name` of the spec at `path` as written (None where it no longer loads)."""
    try:
        return load_spec(path, digest)[0].plan(plan_name)
    except (PlannerError, LookupError, ValueError, OSError):
        return None


def held_settings(result: SweepResult) -> dict[tuple[str, str], dict[str, str]]:
    """Per (spec, plan): the label of each swept axis that the charts of the other axes
    hold it at (`held_labels`: the spec's own when swept, else the least constrained as it
    leaves the spec's cluster); none for a spec that no longer loads."""
    paths = {p.spec: p.path for p in result.sweep.points}
    held: dict[tuple[str, str], dict[str, str]] = {}
    for (spec, plan_name), rows in _by_plan(result).items():
        base = _base_problem(paths.get(spec, spec), plan_name, rows[0].get("spec_sha256"))
        if base is not None:
            held[(spec, plan_name)] = held_labels(base, {
                axis: {str(r[axis]) for r in rows} for axis in AXIS_DEFAULTS})
    return held


def _by_plan(result: SweepResult) -> dict[tuple[str, str], list[Row]]:
    """The rows of each (spec, plan), in sorted order."""
    by_plan: dict[tuple[str, str], list[Row]] = {}
    for r in result.rows:
        by_plan.setdefault((r["spec"], r["plan"]), []).append(r)
    return dict(sorted(by_plan.items()))


def best_plans(result: SweepResult) -> list[PlanView]:
    """For each (spec, plan): the best run at the preferred setting, re-simulated.

    The plan comes from `result.plans` when the run kept it; otherwise (rows read from a
    resume file) the algorithm is run again here, which is deterministic.
    """
    paths = {p.spec: p.path for p in result.sweep.points}
    views: list[PlanView] = []
    for (spec, plan_name), rows in _by_plan(result).items():
        settings = list(dict.fromkeys(row_setting(r) for r in rows))
        chosen: Row | None = None
        base = _base_problem(paths.get(spec, spec), plan_name, rows[0].get("spec_sha256"))
        for s in _preferred_setting(settings, base):
            ok = [r for r in rows if row_setting(r) == s and is_ok(r)]
            if ok:
                chosen = min(ok, key=lambda r: score(r) or 0.0)  # rows are in algo order
                break
        if chosen is None:
            continue
        point = Point(spec, paths.get(spec, spec), plan_name, chosen["algorithm"],
                      chosen["bandwidth"], chosen["memory"], chosen["devices"],
                      float(chosen["time_limit_s"]), chosen["objective"],
                      chosen["microbatches"], chosen.get("spec_sha256"))
        kept = result.plans.get(row_key(chosen))
        if kept is None:
            res = run_point(point, keep_plan=True)
            if res.placement is None or res.order is None:
                continue
            kept = (res.placement, res.order)
        try:  # the spec the chosen run read (loaded once: `load_spec` keeps it)
            problem, _ = apply_setting(
                load_spec(point.path, point.spec_sha256)[0].plan(plan_name), point.setting)
        except (PlannerError, LookupError, ValueError):
            continue
        sim = simulate(problem, Plan(kept[0], kept[1], None, chosen["algorithm"]))
        views.append(PlanView(chosen, problem, sim))
    return views
