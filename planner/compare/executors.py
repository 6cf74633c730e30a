"""Executors: run sweep points in worker processes and yield results as they complete.

- `local`: a `concurrent.futures.ProcessPoolExecutor` of `jobs` workers (the `forkserver`
  start method where the platform has it: forking a process that runs threads, such as a
  progress bar's, can deadlock). At most `jobs` points are in flight, so when a worker dies
  (a segfault in a native solver, the OOM killer) the suspects are known: each point that
  was in flight is run again alone, and a point that kills its worker when alone too
  becomes a `crashed` row. The sweep carries on in a fresh pool.
- `ray`: one Ray task per point on the cluster named by `RAY_ADDRESS`, else on a local
  instance of `jobs` CPUs started for the sweep (and shut down after it). A Ray instance
  the caller already started (`ray.init`) is used as it is. Ray retries a task whose worker
  or node died once (`max_retries=1`); a second loss becomes a `crashed` row. Workers read
  spec files by absolute path: on a multi-machine cluster, the files must be at the same
  path on every node (a shared file system, or a job submitted with its working dir).
- `inline`: in this process, one point after another (for debugging and profiling; a
  crash takes the sweep down with it, and nothing is stopped at its hard limit).

Workers run each point under the limits and `--root` in force where the sweep was started
(`Settings`), not those of their own environment: the forkserver they come from is
started once per process and keeps the environment of that moment.

A point still running at its hard limit (`hard_limit`: twice its time limit plus 30 s)
has its worker stopped and becomes a `timeout` row: the exact solvers keep their own time
limits, so this only catches an algorithm that does not return.

Every executor yields the same rows for the same points (apart from `rows.TIMING_FIELDS`),
in completion order; the caller sorts them. Closing the generator (an exception in the
caller, Ctrl-C) cancels what has not started and shuts the workers down.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial
from multiprocessing import forkserver
from types import ModuleType
from typing import Any

from .. import limits
from ..errors import Diagnostic, SolverError, UsageError
from ..limits import ROOT_ENV
from ..signals import deferred, guarded, install_in_worker, interrupts_ignored
from ..version import __version__
from .rows import empty_row
from .worker import Point, PointResult, run_point

_log = logging.getLogger(__name__)

EXECUTORS: tuple[str, ...] = ("local", "ray", "inline")

Worker = Callable[[Point, bool], PointResult]


def default_jobs() -> int:
    """The number of workers when `--jobs` is not given: the machine's cores."""
    return os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class Settings:
    """What a worker shares with the process that started the sweep, whatever it inherited:
    the limits in force (`--limit`, `limits.using`) and `--root`. Before, workers read them
    from the environment of the forkserver, started by the first sweep of the process: its
    `--root` held for every later sweep (a spec outside it made an `invalid` row), and a
    later sweep's `--root` and `--limit` never reached the workers."""

    limits: tuple[str, ...]
    root: str | None

    @classmethod
    def here(cls) -> Settings:
        """The settings in force in this process now."""
        return cls(tuple(limits.items_of(limits.active())), os.environ.get(ROOT_ENV))


def run_with(settings: Settings, worker: Worker, point: Point, keep_plans: bool
             ) -> PointResult:
    """`worker(point, keep_plans)` under `settings` (in a worker process)."""
    limits.configure(settings.limits)
    limits.put_env(ROOT_ENV, settings.root)
    return worker(point, keep_plans)


def _labels(point: Point) -> dict[str, Any]:
    """The fields of a row that this process makes for `point`: the whole point (its
    objective and micro-batches, and the spec content it was planned from, by which a
    resumed sweep reuses a `timeout` row), and this planner's version."""
    return {**point.labels(), "planner_version": __version__}


def crashed(point: Point, reason: str) -> PointResult:
    """The row of a point whose worker died."""
    return PointResult(empty_row(**_labels(point), status="crashed", reason=reason))


#: seconds after which the worker of an algorithm that takes no time limit (the
#: heuristics, the baselines, pipedp, hybrid) is stopped: they run as `solve` runs them,
#: whatever --time-limit says (at `--time-limit 0` cpop of a 106,000-op GNMT was stopped
#: after 30 s, where `solve` plans it in 17.5 s), so only a hung one is
NO_LIMIT_HARD_S = 3600.0


def hard_limit(point: Point) -> float:
    """Seconds a point may run before its worker is stopped: twice the algorithm's own
    time limit plus 30 s for loading, model building and simulation; `NO_LIMIT_HARD_S`
    for an algorithm that takes none."""
    from ..algorithms import get  # lazy: the parent's start-up

    if not get(point.algorithm).takes("time_limit_s"):
        return NO_LIMIT_HARD_S
    return 2.0 * float(point.time_limit_s) + 30.0


def timed_out(point: Point, limit: float) -> PointResult:
    """The row of a point stopped at its hard limit."""
    why = ("twice --time-limit plus 30 s" if limit != NO_LIMIT_HARD_S else
           "an hour, for an algorithm that takes no time limit")
    return PointResult(empty_row(
        **_labels(point), status="timeout",
        reason=f"stopped after {limit:g} s (the hard limit: {why}); the algorithm did not "
        "return"))


def execute(points: Sequence[Point], *, executor: str = "local", jobs: int | None = None,
            keep_plans: bool = False, worker: Worker = run_point,
            deadline: Callable[[Point], float] = hard_limit) -> Iterator[PointResult]:
    """Run `points`, yielding one `PointResult` per point as each completes.

    `worker` must be a module-level function (it is pickled by reference). A point still
    running `deadline(point)` seconds after it started is stopped (its worker process is
    ended) and becomes a `timeout` row; `inline` cannot stop anything and ignores it.
    """
    # no more workers than points: more would idle, and a count past a C int overflowed
    # the pool's semaphore (`--jobs 99999999999999999999`: E999)
    jobs = max(1, min(jobs if jobs is not None else default_jobs(), len(points)))
    if executor == "local":
        return _local(points, jobs, keep_plans, partial(run_with, Settings.here(), worker),
                      deadline)
    if executor == "ray":
        ray = import_ray()
        return _ray(ray, points, jobs, keep_plans, (Settings.here(), worker), deadline)
    if executor == "inline":
        return (worker(p, keep_plans) for p in points)
    raise UsageError(Diagnostic("E612", f"--executor: unknown executor `{executor}`", None,
                                ("choose one of: " + ", ".join(EXECUTORS[:2]),)))


def _context() -> Any:
    methods = mp.get_all_start_methods()
    if "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["planner.compare.worker"])
        # started now, ignoring Ctrl-C (its workers too): it printed a traceback when one
        # came while it imported the worker's modules; the parent stops them (`_terminate`)
        with interrupts_ignored():
            try:
                forkserver.ensure_running()
            except OSError as err:
                # its socket is a file in TMPDIR: a deep TMPDIR makes the path longer than
                # AF_UNIX takes (107 bytes on Linux; pytest-xdist's tmp_path, some build
                # sandboxes). Before: E999. Spawned workers need no socket, and are no
                # fork of a process that runs threads either.
                _log.info("the forkserver could not start (%s): spawning workers", err)
                return mp.get_context("spawn")
        return ctx
    return mp.get_context("spawn")


def _set_up_worker() -> None:
    """Set up a worker: its stdout goes to stderr (solver banners must not mix with
    `--json`), its log records stay in it (`_quiet_logs`), and SIGTERM unwinds the point
    it runs (its solver's process group and temporary files go with it) before the worker
    exits (`signals.install_in_worker`)."""
    install_in_worker()
    _quiet_logs()
    with contextlib.suppress(OSError):  # no stderr to point at
        os.dup2(2, 1)


def _quiet_logs() -> None:
    """Keep a worker's log records off the shared stderr (unless PLANNER_DEBUG is set):
    what they say of a point (`cpsat: falling back to the msct plan: ...`) is its row's
    `reason`, printed under its table. Written by the workers, the lines named no point,
    came once per point, and cut into the progress bar; Ray's workers print none either
    (`log_to_driver=False`)."""
    if not os.environ.get("PLANNER_DEBUG"):
        # a handler of its own: Python's last-resort one printed the warnings before
        logging.getLogger("planner").addHandler(logging.NullHandler())


#: a sweep where this many points crashed and none finished stops (workers cannot run)
CRASH_LIMIT = 3


def _hopeless(crashes: int, finished: int, reason: str) -> None:
    """Stop a sweep whose workers die before finishing anything: a broken set-up."""
    if crashes >= CRASH_LIMIT and finished == 0:
        raise SolverError(Diagnostic(
            "E621", f"the first {crashes} points all crashed their workers and none "
            f"finished: {reason}", None,
            (("a script that calls planner.compare must guard its entry point with "
             "`if __name__ == \"__main__\":`"),
             "try `--jobs 1`, or the other executor")))


# complex: a generator over one pool per turn: results are yielded inside its wait loop, and
# the overdue, broken-pool and retry paths share `pending`, `inflight` and `attempts`
def _local(points: Sequence[Point], jobs: int, keep_plans: bool, worker: Worker,
           deadline: Callable[[Point], float]) -> Iterator[PointResult]:
    finished = crashes = idle_breaks = 0
    pending: deque[tuple[Point, bool]] = deque((p, False) for p in points)
    attempts: dict[int, int] = {}
    index = {id(p): k for k, p in enumerate(points)}
    ctx = _context()
    while pending:
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx,
                                   initializer=_set_up_worker)
        inflight: dict[Future[PointResult], tuple[Point, bool]] = {}
        # at most `jobs` points are in flight, so each starts when it is submitted
        ends: dict[Future[PointResult], float] = {}
        broken = False
        overdue: list[Future[PointResult]] = []
        try:
            while pending or inflight:
                broken = _fill(pool, pending, inflight, ends, jobs, worker, keep_plans,
                               deadline)
                if broken:
                    # every future in flight resolves now: a result, or BrokenProcessPool
                    done, _ = wait(list(inflight))
                else:
                    wait_s = max(0.0, min(ends[f] for f in inflight) - time.monotonic())
                    done, _ = wait(list(inflight), timeout=wait_s,
                                   return_when=FIRST_COMPLETED)
                    if not done:
                        now = time.monotonic()
                        overdue = [f for f in inflight if ends[f] <= now]
                        if overdue:
                            break
                        continue
                for fut in done:
                    point, solo = inflight.pop(fut)
                    try:
                        result = fut.result()
                    except BrokenProcessPool:
                        broken = True
                        inflight[fut] = (point, solo)  # handled with the others below
                        continue
                    finished += 1
                    yield result
                if broken:
                    break
        except BaseException:
            # closed early (Ctrl-C, the caller stopped): do not wait for running points
            _terminate(pool)
            raise
        if overdue:
            # the only way to stop one point is to end the pool; the others run again
            _terminate(pool)
            for fut in overdue:
                point, _ = inflight.pop(fut)
                finished += 1
                yield timed_out(point, deadline(point))
            pending.extendleft(sorted(inflight.values(), key=lambda ps: index[id(ps[0])],
                                      reverse=True))
            continue
        pool.shutdown(wait=not broken, cancel_futures=True)
        if not broken:
            return
        # every point in flight when the pool broke is a suspect
        suspects = sorted(inflight.values(), key=lambda ps: index[id(ps[0])])
        idle_breaks = 0 if suspects else idle_breaks + 1
        if idle_breaks >= CRASH_LIMIT:  # workers die with nothing to do
            _hopeless(CRASH_LIMIT, 0, "worker processes die before running anything")
        alone = len(suspects) == 1
        retry: list[tuple[Point, bool]] = []
        for point, solo in suspects:
            k = index[id(point)]
            attempts[k] = attempts.get(k, 0) + (1 if (solo or alone) else 0)
            if attempts[k] >= 2:
                crashes += 1
                reason = ("the worker process died running this point "
                          f"({attempts[k]} attempts); a resumed sweep tries it again")
                _hopeless(crashes, finished, reason)
                yield crashed(point, reason)
            else:
                retry.append((point, True))
        pending.extendleft(reversed(retry))


def _fill(pool: ProcessPoolExecutor, pending: deque[tuple[Point, bool]],
          inflight: dict[Future[PointResult], tuple[Point, bool]],
          ends: dict[Future[PointResult], float], jobs: int, worker: Worker,
          keep_plans: bool, deadline: Callable[[Point], float]) -> bool:
    """Submit pending points until `jobs` are in flight; a `solo` point (a crash suspect)
    runs alone. Returns whether the pool is broken (a point in flight killed its worker)."""
    while pending and len(inflight) < jobs:
        point, solo = pending[0]
        if solo and inflight:
            break
        if any(s for _, s in inflight.values()):
            break
        try:
            # not stopped half-way: a worker asked of the forkserver but not yet known to
            # the pool outlived an interrupted sweep and printed a traceback
            with deferred():
                fut = pool.submit(guarded, worker, point, keep_plans)
        except BrokenProcessPool:  # a point in flight just killed its worker
            return True
        pending.popleft()
        inflight[fut] = (point, solo)
        ends[fut] = time.monotonic() + deadline(point)
    return False


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: cancel queued points and end its worker processes. A second stop
    meanwhile (Ctrl-C pressed twice) waits for the end of the workers, and a third kills
    them at once (before: the second broke off the clean-up, and compare, its workers
    left running, could hang at exit joining the pool's thread)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # private, best effort
    with deferred():
        try:
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                with contextlib.suppress(Exception):  # best effort on the way out
                    proc.terminate()
            for proc in procs:
                proc.join(timeout=5)
        finally:
            for proc in procs:  # a worker stuck past SIGTERM, or no time to wait for it
                with contextlib.suppress(Exception):
                    if proc.is_alive():
                        proc.kill()
                        proc.join(timeout=5)


def import_ray() -> ModuleType:
    """The `ray` module, or a `UsageError` with an install hint."""
    try:
        # lazy: optional (the `ray` extra)
        import ray
    except ImportError:
        raise UsageError(Diagnostic(
            "E613", "--executor ray: the `ray` package is not installed", None,
            ("install it with `pip install 'planner[ray]'` (or `pip install 'ray>=2.9'`)",
             "or use `--executor local`"))) from None
    module: ModuleType = ray  # Any where ray is absent (no stubs to read), a module where not
    return module


def _ray(ray: Any, points: Sequence[Point], jobs: int, keep_plans: bool,
         worker: tuple[Settings, Worker], deadline: Callable[[Point], float]
         ) -> Iterator[PointResult]:
    started = False
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        common = {"include_dashboard": False, "log_to_driver": False,
                  "logging_level": logging.WARNING, "configure_logging": True}
        if address:
            ray.init(address=address, **common)
        else:
            ray.init(address="local", num_cpus=jobs, **common)
        started = True
    # a Ray task is a function: the settings and the worker go as its arguments
    task = ray.remote(num_cpus=1, max_retries=1)(run_with)
    # as many tasks in flight as the cluster has CPUs, so each starts when submitted
    capacity = max(1, int(ray.cluster_resources().get("CPU", jobs)))
    queue = deque(points)
    refs: dict[Any, Point] = {}
    ends: dict[Any, float] = {}
    finished = crashes = 0
    try:
        while queue or refs:
            while queue and len(refs) < capacity:
                p = queue.popleft()
                ref = task.remote(*worker, p, keep_plans)
                refs[ref] = p
                ends[ref] = time.monotonic() + deadline(p)
            wait_s = max(0.0, min(ends[r] for r in refs) - time.monotonic())
            done, _ = ray.wait(list(refs), num_returns=1, timeout=wait_s)
            if not done:
                now = time.monotonic()
                for ref in [r for r in refs if ends[r] <= now]:
                    point = refs.pop(ref)
                    with contextlib.suppress(Exception):
                        ray.cancel(ref, force=True)
                    finished += 1
                    yield timed_out(point, deadline(point))
                continue
            for ref in done:
                point = refs.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as err:
                    text = str(err).strip().splitlines()
                    reason = (f"the Ray task failed: {type(err).__name__}"
                              + (f": {text[0]}" if text else ""))
                    crashes += 1
                    _hopeless(crashes, finished, reason)
                    yield crashed(point, reason)
                else:
                    finished += 1
                    yield result
    finally:
        for ref in refs:
            with contextlib.suppress(Exception):  # best effort on the way out
                ray.cancel(ref, force=True)
        if started:
            ray.shutdown()
