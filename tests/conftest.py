"""Fixtures of the whole suite.

The compiled engines have process-wide switches: which engine runs (`ENGINE`), and whether
the compiled code is loaded (`etf._kernel`, `bounds._passes`: once loaded, "auto" runs it
on graphs of any size). A test, a module's fixture or an in-process run that loads one
would otherwise decide the engine of every test after it, so that which engine a test
checks would depend on file order. Every test starts, and ends, with them as a fresh
process has them (reloading costs microseconds once compiled: numba keeps the machine
code in the imported module).
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Iterator

import pytest
from hypothesis import settings

import planner.bounds as bounds
from planner import fastsim
from planner.algorithms.listsched import etf

#: Hypothesis profiles for the property tests, chosen by `PLANNER_HYPOTHESIS`: `ci` (the
#: default) runs the same examples every time, so a run's outcome does not depend on luck;
#: `random` draws new ones each run, for a scheduled job (`PLANNER_HYPOTHESIS=random python
#: -m pytest -m "not slow or slow" tests/test_simulate.py tests/test_bounds.py tests/trust
#: tests/spec tests/algorithms`); both print, on failure, the `@reproduce_failure` blob and
#: the falsifying example, and neither keeps a database between runs. Neither has a
#: per-example deadline: the suite runs on a loaded machine (a worker per core, beside
#: the others), and speed is measured in bench/, never in a unit test
settings.register_profile("ci", derandomize=True, database=None, print_blob=True,
                          deadline=None)
settings.register_profile("random", derandomize=False, database=None, print_blob=True,
                          deadline=None)
settings.load_profile(os.environ.get("PLANNER_HYPOTHESIS", "ci"))

#: the switches, as this process had them before any test: (module, attribute, value)
_AT_START = tuple((module, name, getattr(module, name))
                  for module, names in ((etf, ("ENGINE", "_kernel")),
                                        (bounds, ("ENGINE", "_passes")))
                  for name in names)


def _ctrl_c_as_in_a_terminal() -> None:
    """Give this process Python's own SIGINT handler if it started with SIGINT ignored, and
    the default SIGHUP if it started with SIGHUP ignored.

    A shell ignores SIGINT in what it starts in the background (`pytest &`, a CI step run
    detached): Python then keeps it ignored, and so does every process it starts. The
    Ctrl-C tests (in this process and in `planner` subprocesses) would then see a command
    that, rightly, ignores Ctrl-C, and fail or wait out their limits: their outcome would
    depend on how the suite was started. Found at load 4, where the suite was started with
    `&` beside the CPU hogs."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # and SIGHUP, which `nohup` ignores for all it starts: the SIGHUP tests would see a
    # `planner` that rightly keeps it ignored, and wait out their limits (found running
    # `.ci/run` under nohup)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


_ctrl_c_as_in_a_terminal()


def _reset_engines() -> None:
    for module, name, value in _AT_START:
        setattr(module, name, value)


@pytest.fixture(autouse=True)
def _engines_as_at_start() -> Iterator[None]:
    """The compiled engines' switches as at the start, before and after each test."""
    _reset_engines()
    yield
    _reset_engines()


@pytest.fixture(scope="session", autouse=True)
def _fast_simulator_loaded() -> None:
    """The compiled simulator loaded (compiled here when numba's cache lacks it; CI fills
    the cache first): a search's budget depends on which simulator runs
    (`search.move_budget`), so without this a test's plan would depend on whether an
    earlier command had built the kernel. The cold path has its own tests, in
    subprocesses with a cache folder of their own (tests/test_compiled.py)."""
    if fastsim.numba_available():
        fastsim.prepare()


# -- tests that signal their own process -------------------------------------------------

#: the longest a test in a process of its own may run (its own limits are far shorter)
OWN_PROCESS_TIMEOUT_S = 900.0


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a test marked `own_process` in a forked copy of this process.

    A test that sends a signal to its own process (`os.kill(os.getpid(), ...)`,
    `signal.raise_signal`, a `threading.Timer` that does so) sends it, forked, to a process
    of its own: a signal that comes late (a timer that fires as the test ends, on a loaded
    machine) or is left pending can no longer reach pytest's runner, where a
    KeyboardInterrupt stopped the whole suite (issue 40: at 44%, from
    `planner/signals.py`'s handler, which the in-process CLI tests install). Fixtures run
    here, as for any test (what they set up is inherited); the test's body, its signals
    and its signal handlers live and die in the fork, whose outcome (passed, skipped, or
    the failure's traceback) comes back through a pipe."""
    if pyfuncitem.get_closest_marker("own_process") is None:
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    read, write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the fork: run the test, report, and never return into pytest
        os.close(read)
        _signals_as_in_a_new_process()
        outcome = _outcome(pyfuncitem, kwargs)
        with open(write, "w", encoding="utf-8") as out:  # noqa: PTH123 - a pipe's fd
            out.write(json.dumps(outcome))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    os.close(write)
    kind, text = _wait_for(pid, read, pyfuncitem.nodeid)
    if kind == "skipped":
        pytest.skip(text)
    if kind != "passed":
        pytest.fail(text, pytrace=False)
    return True


def _signals_as_in_a_new_process() -> None:
    """No signal blocked and Ctrl-C's handler Python's or planner's: the fork inherits the
    worker's signal mask and handlers, which a test run before it in that worker may have
    left otherwise. A test that signals itself must see what a new process would (a CI
    rehearsal and a full run: `test_ctrl_c_stops_the_search...[ilp]` ran out its limit,
    "DID NOT RAISE", with `planner.signals`' own state clean)."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _outcome(item: pytest.Function, kwargs: dict[str, object]) -> dict[str, str]:
    """Run the test's function; what came of it, as text."""
    try:
        item.obj(**kwargs)
    except pytest.skip.Exception as skip:
        return {"kind": "skipped", "text": str(skip.msg)}
    except BaseException:  # noqa: BLE001 - a KeyboardInterrupt too: reported, not raised
        return {"kind": "failed", "text": traceback.format_exc()}
    return {"kind": "passed", "text": ""}


def _wait_for(pid: int, read: int, nodeid: str) -> tuple[str, str]:
    """The fork's outcome (it is killed after `OWN_PROCESS_TIMEOUT_S`)."""
    deadline = time.monotonic() + OWN_PROCESS_TIMEOUT_S
    chunks: list[bytes] = []
    with os.fdopen(read, "rb") as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "failed", f"{nodeid}: still running after {OWN_PROCESS_TIMEOUT_S} s"
            ready, _, _ = select.select([pipe], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(pipe.fileno(), 65536)
                if not chunk:
                    break
                chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    try:
        outcome = json.loads(b"".join(chunks))
    except ValueError:
        return "failed", (f"{nodeid}: its process ended without an outcome "
                          f"({_status_text(status)})")
    return str(outcome["kind"]), str(outcome["text"])


def _status_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
