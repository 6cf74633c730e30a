"""Solver back-ends of the exact models: profiles, availability, quiet and watched solves.

Back-end capabilities are data (`solvers/profiles.toml`, shipped in the wheel as
`planner/_data/solver_profiles.toml`): the Pyomo name, what must be present, and the option
names of the time limit, gap, threads and warm start. Availability is decided without
importing any native library (`shutil.which`, `importlib.util.find_spec`).

Solver outcomes are mapped once, here, to `Outcome.status`: `optimal`, `feasible` (a limit
was hit with an incumbent), `infeasible`, `nosolution` (a limit was hit without one) or
`error` (missing, crashed, killed). Nothing a solver prints reaches stdout: every solve runs
under `quiet_stdout`, which captures file descriptor 1 and `sys.stdout` and replays the text
at DEBUG level on the `planner.solver` logger.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import math
import os
import shutil
import tempfile
import time
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType, ModuleType
from typing import Any, Literal, cast

from ...resources import data_text
from . import children, highs_load
from .quiet import quiet_stdout
from .watched import Watched, first_line

log = logging.getLogger("planner")
solver_log = logging.getLogger("planner.solver")

#: the watchdog kills a child-process solver this long after its own limit T, and the
#: ILP's build stops this long after `--time-limit` T: WATCHDOG_GRACE_S + WATCHDOG_FRACTION * T
WATCHDOG_GRACE_S = 5.0
WATCHDOG_FRACTION = 0.25

OutcomeStatus = Literal["optimal", "feasible", "infeasible", "nosolution", "error"]

#: rows handed to an in-process solver between two looks at the clock (`load_by`)
LOAD_CHUNK = 20_000
#: what `solve` re-checks on a model it was given before: nothing, once `_load_in_time`
#: has handed it over whole (walking millions of rows again would take minutes)
_NO_UPDATES = ("check_for_new_or_removed_constraints", "check_for_new_or_removed_vars",
               "check_for_new_or_removed_params", "check_for_new_objective",
               "update_constraints", "update_vars", "update_params",
               "update_named_expressions", "update_objective")


class LoadOverrun(Exception):
    """Handing a model to an in-process solver passed `solve_pyomo`'s `load_by`, with
    `rows` of its `total` rows handed over."""

    def __init__(self, rows: int, total: int) -> None:
        super().__init__(f"{rows} of {total} rows handed over")
        self.rows = rows
        self.total = total


@dataclass(frozen=True, slots=True)
class Profile:
    """One solver's option names and requirements (a table of `profiles.toml`)."""

    name: str
    pyomo: str = ""
    executable: str = ""
    module: str = ""
    time_limit: str = ""
    time_limit_integer: bool = False
    gap: str = ""
    threads: str = ""
    workers: int = 0
    seed: str = ""
    warm_start: bool = False
    watchdog: bool = False
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


def profiles_text() -> str:
    """The profiles file: the installed `planner/_data` copy first, else the checkout's."""
    return data_text("solver_profiles.toml", "solvers/profiles.toml")


@lru_cache(maxsize=1)
def profiles() -> Mapping[str, Profile]:
    """Every solver profile by name, in file order."""
    data = tomllib.loads(profiles_text())
    out: dict[str, Profile] = {}
    for name, table in data.items():
        fields = {k: v for k, v in table.items() if k != "options"}
        out[name] = Profile(name=name, options=MappingProxyType(dict(table.get("options", {}))),
                            **fields)
    return MappingProxyType(out)


def profile(name: str) -> Profile:
    """The profile of `name`; an unknown name gets a bare one (Pyomo name = `name`)."""
    return profiles().get(name) or Profile(name=name, pyomo=name)


def available(name: str) -> bool:
    """Whether solver `name` can run here, checked without importing a native library.

    Names without a profile are asked of Pyomo (which imports it: only call this when a
    solve with that name is about to happen).
    """
    prof = profiles().get(name)
    if prof is not None:
        if prof.executable:
            return shutil.which(prof.executable) is not None
        if prof.module:
            try:
                return importlib.util.find_spec(prof.module) is not None
            except (ImportError, ValueError):
                return False
        return False
    pyo = import_pyomo()
    try:
        return bool(pyo.SolverFactory(name).available(exception_flag=False))
    except Exception:  # noqa: BLE001 - any failure of a foreign plugin means "not available"
        return False


def available_solvers() -> tuple[str, ...]:
    """The MIP solvers with a profile that are present here (CP-SAT excluded)."""
    return tuple(n for n in profiles() if n != "cpsat" and available(n))


def threads_for(name: str) -> int:
    """Threads to give solver `name`: its profile's `workers`, else `default_threads()`."""
    prof = profiles().get(name)
    return prof.workers if prof is not None and prof.workers > 0 else default_threads()


def default_threads() -> int:
    """Threads to give a solver: the cores this process may use, at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(8, cores))


_pyomo_ready = False


def warm_up(name: str) -> None:
    """Import Pyomo, and solver `name`'s Python module when it has one and it is here
    (HiGHS: highspy), before the ILPs' clock starts: 0.5 s and 0.25 s idle, twice that on a
    loaded machine, which their build and hand-over counted inside `--time-limit`."""
    import_pyomo()
    prof = profiles().get(name)
    if prof is not None and prof.module and available(name):
        with contextlib.suppress(ImportError):  # the solve reports it as it would have
            importlib.import_module(prof.module)


def import_pyomo() -> ModuleType:
    """Import `pyomo.environ` once, and keep Pyomo's own logging off stdout.

    Pyomo attaches a handler writing to stdout to its `pyomo` logger, and warns about
    statuses we map ourselves ("Loading a SolverResults object with an 'aborted' status").
    Unless someone configured the `pyomo` logger, its records are replayed at DEBUG on
    `planner.solver` instead (at DEBUG Pyomo would also pretty-print every component it
    builds, so it is kept at WARNING).
    """
    global _pyomo_ready
    # lazy: start-up (Pyomo takes a quarter of a second; only an exact solve needs it)
    import pyomo.environ as pyo

    if not _pyomo_ready:
        plog = logging.getLogger("pyomo")
        if plog.level == logging.NOTSET:
            for h in list(plog.handlers):
                plog.removeHandler(h)
            plog.addHandler(_Forward())
            plog.propagate = False
            plog.setLevel(logging.WARNING)
        _pyomo_ready = True
    return cast(ModuleType, pyo)  # pyomo ships no types


class _Forward(logging.Handler):
    """Re-emit a record on `planner.solver` at DEBUG."""

    def emit(self, record: logging.LogRecord) -> None:
        """Forward `record`."""
        if solver_log.isEnabledFor(logging.DEBUG):
            solver_log.debug("pyomo: %s", record.getMessage())


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a solve produced, mapped to one vocabulary for every back-end.

    `bound` is the solver's best bound on the objective (model units) when it reported one;
    `loaded` says whether a solution was loaded into the model's variables.
    """

    status: OutcomeStatus
    message: str = ""
    bound: float | None = None
    loaded: bool = False


def solver_children(executable: str) -> list[int]:
    """PIDs of this process's child processes running `executable` (Linux /proc)."""
    me = os.getpid()
    found: list[int] = []
    for entry in children.pids():
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0", 1)[0].decode("utf-8", "replace")
        except OSError:
            continue
        # the command name may contain spaces or parentheses: fields follow the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and os.path.basename(argv0) == executable:
            found.append(entry)
    return found


def _map_results(results: Any) -> tuple[OutcomeStatus, bool]:
    # lazy: start-up (Pyomo; loaded by now, a solve ran)
    from pyomo.opt import SolutionStatus as SS
    from pyomo.opt import TerminationCondition as TC

    tc = results.solver.termination_condition
    solutions: Any = getattr(results, "solution", None)  # pyomo's results are untyped
    n_solutions = len(solutions) if solutions is not None else 0
    sol_status = solutions[0].status if n_solutions else None
    if tc in (TC.infeasible, TC.infeasibleOrUnbounded):
        return "infeasible", False
    usable = n_solutions > 0 and sol_status not in (SS.infeasible, SS.error, SS.unbounded)
    if tc in (TC.optimal, TC.globallyOptimal, TC.locallyOptimal):
        return ("optimal", True) if usable else ("nosolution", False)
    if tc in (TC.maxTimeLimit, TC.maxIterations, TC.maxEvaluations, TC.userInterrupt,
              TC.resourceInterrupt, TC.intermediateNonInteger, TC.feasible, TC.other,
              TC.unknown, TC.minFunctionValue, TC.minStepLength):
        return ("feasible", True) if usable else ("nosolution", False)
    return "error", False


def solve_pyomo(
    model: Any,
    name: str,
    *,
    time_limit_s: float,
    gap: float,
    threads: int,
    warm_start: bool,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    load_by: float | None = None,
) -> Outcome:
    """Solve the Pyomo `model` with solver `name`; load the solution when there is one.
    `name` can solve the ILP here: the ILPs call `solver_names.solve_pyomo`, which asks
    `solver_names.unusable` first.

    `options` are passed to the solver beside its profile's (the pipeline ILP's node budget
    for HiGHS, `mip_max_nodes`), in the solver's own names.

    `load_by` (a `time.perf_counter()` instant) bounds handing the model to an in-process
    solver (HiGHS: Pyomo walks every row in Python, minutes for millions of rows), which
    happens before its own time limit starts: past it, `LoadOverrun` is raised and no
    solver runs; before it, the time it took comes off the solver's `time_limit_s`. A
    child-process solver's model file is written under the watchdog.

    The time limit is passed as the solver's own option (never Pyomo's `timelimit=`), and
    the solve runs in a worker thread under a watchdog: when a child-process solver is
    still running `5 s + T / 4` after its limit `T`, it is killed and the outcome is
    `error` (CBC's limit is soft; its incumbent dies with it, the warm start remains).
    """
    prof = profile(name)
    opt, kwargs = _solver(prof, name, time_limit_s=time_limit_s, gap=gap, threads=threads,
                          warm_start=warm_start, seed=seed)
    kwargs["options"].update(options or {})
    if load_by is not None and _persistent(opt):
        t_load = time.perf_counter()
        try:
            with quiet_stdout():
                _load_in_time(opt, model, load_by)
        except LoadOverrun:
            raise
        except Exception as err:  # noqa: BLE001 - as a failure inside `solve` would be
            return Outcome("error", f"{name} failed: {first_line(err)}")
        if prof.time_limit:  # the hand-over counts inside the solver's limit
            time_limit_s -= time.perf_counter() - t_load
            kwargs["options"][prof.time_limit] = _limit_value(prof, time_limit_s)
    run = _run_watched(opt, model, kwargs, name, time_limit_s)
    if isinstance(run, Outcome):
        return run
    if run.error is not None:
        return Outcome("error", f"{name} failed: {first_line(run.error)}")
    return _read(model, name, run.value())


def _solver(prof: Profile, name: str, *, time_limit_s: float, gap: float, threads: int,
            warm_start: bool, seed: int) -> tuple[Any, dict[str, Any]]:
    """Pyomo's solver object for `name` and the keyword arguments of its `solve`, with the
    profile's option names for the limit, gap, threads, seed and warm start."""
    pyo = import_pyomo()
    opt = pyo.SolverFactory(prof.pyomo or name)
    options: dict[str, Any] = dict(prof.options)
    if prof.time_limit:
        options[prof.time_limit] = _limit_value(prof, time_limit_s)
    if prof.gap:
        options[prof.gap] = gap
    if prof.threads and threads > 0:
        options[prof.threads] = threads
    if prof.seed:
        options[prof.seed] = seed
    kwargs: dict[str, Any] = {"load_solutions": False, "tee": False, "options": options}
    if warm_start and prof.warm_start:
        kwargs["warmstart"] = True
    config = getattr(opt, "config", None)
    if config is not None and hasattr(config, "solver_output_logger"):
        config.solver_output_logger = solver_log  # appsi: the log goes through logging
        config.log_level = logging.DEBUG
    return opt, kwargs


def _limit_value(prof: Profile, time_limit_s: float) -> float:
    """The value of `prof`'s time-limit option for `time_limit_s` (whole seconds, at least
    1, for a solver that takes integers; at least 0.01 s)."""
    return max(1, math.ceil(time_limit_s)) if prof.time_limit_integer else max(0.01, time_limit_s)


def _persistent(opt: Any) -> bool:
    """Whether `opt` is an in-process (Pyomo appsi) solver that keeps the model it is given."""
    return hasattr(opt, "set_instance") and hasattr(opt, "update_config")


def _load_in_time(opt: Any, model: Any, load_by: float) -> None:
    """Hand `model` to the persistent solver `opt` as its `set_instance` would (the same
    columns, rows and objective in the same order; each chunk in bulk where
    `highs_load.add_rows` can), `LOAD_CHUNK` rows at a time, raising
    `LoadOverrun` once `time.perf_counter()` passes `load_by`; then tell `opt` that nothing
    changes before its `solve`."""
    pyo = import_pyomo()
    rows = list(model.component_data_objects(pyo.Constraint, active=True, descend_into=True))
    objective = next(model.component_data_objects(pyo.Objective, active=True,
                                                  descend_into=True), None)
    parts = [*model.component_objects(pyo.Constraint, active=True, descend_into=True),
             *model.component_objects(pyo.Objective, active=True, descend_into=True)]
    idle = [data for part in parts for data in part.values() if not data.active]
    for part in parts:  # so that `set_instance` hands over the parameters alone
        part.deactivate()
    try:
        opt.set_instance(model)
    finally:
        for part in parts:
            part.activate()  # and every row in it: those that were off, off again
        for data in idle:
            data.deactivate()
    for at in range(0, len(rows), LOAD_CHUNK):
        if time.perf_counter() > load_by:
            raise LoadOverrun(at, len(rows))
        highs_load.add_rows(opt, rows[at:at + LOAD_CHUNK])
    if objective is not None:
        opt.set_objective(objective)
    for flag in _NO_UPDATES:
        setattr(opt.update_config, flag, False)


def overrun_grace_s(time_limit_s: float) -> float:
    """How long past its limit `time_limit_s` a step that cannot stop itself is let run
    before it is stopped: a killed child-process solver, the ILP's build. A short overrun
    (a busy machine, a small model) is let finish, as the solver then gets its say."""
    return WATCHDOG_GRACE_S + WATCHDOG_FRACTION * time_limit_s


def _run_watched(opt: Any, model: Any, kwargs: dict[str, Any], name: str,
                 time_limit_s: float) -> Watched[Any] | Outcome:
    """Run `opt.solve` in a worker thread under the watchdog (`solve_pyomo`): the ended
    call (its results or exception), or the `error` outcome of a killed solver."""
    shell = not hasattr(opt, "config")  # a solver run as a child process
    grace = overrun_grace_s(time_limit_s)
    killed = False
    with quiet_stdout(), _private_tempdir() as folder, children.grouped():
        logfile = os.path.join(folder, f"{name}.log") if shell else None
        if logfile is not None:  # shell solvers: collect the log in a file
            kwargs["logfile"] = logfile
        run = Watched(lambda: opt.solve(model, **kwargs), f"planner-{name}")
        try:
            run.wait(time_limit_s + grace if shell else None)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM under the CLI
            _cancel(opt)
            children.kill_all()
            run.wait(10.0)  # HiGHS stops at its next callback; a killed child at once
            raise
        finally:
            if logfile is not None:
                _replay_log(logfile)
        if not run.done:
            killed = children.kill_all()
            run.wait(30.0)
    if not run.done:
        return Outcome("error", f"{name} did not stop after its time limit and could not be "
                                "killed")
    if killed:
        return Outcome("error", f"{name} overran its time limit of {time_limit_s:.3g} s by more "
                                f"than {grace:.3g} s and was killed")
    return run


def _read(model: Any, name: str, results: Any) -> Outcome:
    """The outcome of a finished solve; loads its solution into `model` when usable."""
    status, usable = _map_results(results)
    bound = _finite(getattr(results.problem, "lower_bound", None))
    said = _said(results.solver.termination_condition)
    if status == "error":
        return Outcome("error", f"{name} stopped abnormally ({said})", bound)
    if status == "nosolution":
        return Outcome("nosolution", f"{name} said {said} but gave no solution" if
                       said == "it was optimal" else f"{name} gave no solution ({said})", bound)
    loaded = False
    if usable:
        # the MIP start's values are still in the variables: clear them, so a solution
        # file that leaves variables out reads as incomplete, not as the warm start
        _clear_values(model)
        try:
            model.solutions.load_from(results)
            loaded = True
        except Exception:  # noqa: BLE001 - a foreign plugin's failure is an outcome
            return Outcome("nosolution", f"{name} said {said}, but its solution file could "
                                         "not be read")
    return Outcome(status, said, bound, loaded)


#: Pyomo termination conditions in words
_SAID = {"optimal": "it was optimal", "globallyOptimal": "it was optimal",
         "locallyOptimal": "it was optimal", "maxTimeLimit": "its time limit was reached",
         "maxIterations": "its iteration limit was reached",
         "userInterrupt": "it was interrupted", "feasible": "it found a solution",
         "infeasible": "the model is infeasible", "unbounded": "the model is unbounded",
         "error": "it failed", "solverFailure": "it failed",
         "internalSolverError": "it failed"}


def _said(condition: Any) -> str:
    """A solver's termination condition as words (`it was optimal`)."""
    key = str(getattr(condition, "name", condition))
    return _SAID.get(key, f"status {key}")


def _clear_values(model: Any) -> None:
    """Forget every variable's value, except those their bounds fix (model writers leave
    those out of the file, so no solver reports them)."""
    pyo = import_pyomo()
    for var in model.component_data_objects(pyo.Var, descend_into=True):
        if var.fixed:
            continue
        lb, ub = var.lb, var.ub
        var.set_value(lb if lb is not None and lb == ub else None, skip_validation=True)


def _cancel(opt: Any) -> None:
    """Ask an in-process solver to stop (appsi's HiGHS handles user interrupts)."""
    highs: Any = getattr(opt, "_solver_model", None)
    with contextlib.suppress(Exception):  # another plugin, or a HiGHS without it
        highs.cancelSolve()


@contextlib.contextmanager
def _private_tempdir() -> Iterator[str]:
    """Point Pyomo's temporary files (model, solution, log) at a folder removed afterwards.

    A solver killed by the watchdog would otherwise leave its `.lp` and `.soln` files in
    the system's temporary folder.
    """
    # lazy: start-up (Pyomo, as in `import_pyomo`)
    from pyomo.common.tempfiles import TempfileManager

    saved = TempfileManager.tempdir
    with tempfile.TemporaryDirectory(prefix="planner-solve-") as folder:
        TempfileManager.tempdir = folder
        try:
            yield folder
        finally:
            TempfileManager.tempdir = saved


def _finite(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _replay_log(path: str) -> None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    if solver_log.isEnabledFor(logging.DEBUG):
        for line in text.splitlines():
            solver_log.debug("%s", line)
