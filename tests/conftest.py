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

import os
import signal
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
#: the falsifying example, and neither keeps a database between runs
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("random", derandomize=False, database=None, print_blob=True)
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
