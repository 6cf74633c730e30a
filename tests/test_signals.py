"""`planner.signals`: a stop (SIGINT, SIGTERM, SIGHUP) that arrives during a compiled
kernel's call is raised once the call has returned, never inside it.

Before (issue 25): a Ctrl-C in `search`'s loop met numba's dispatcher as it returned, and
CPython raised `SystemError: CPUDispatcher(...) returned a result with an exception set`,
which no `except KeyboardInterrupt` catches: E999, the best plan lost. In the stress test
below the raw call gave SystemError 300 times in 300.
"""

from __future__ import annotations

import ctypes
import dataclasses
import importlib
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest

import planner.bounds as bounds
from planner import algorithms, fastsim, signals
from planner.algorithms import run
from planner.algorithms.base import AlgorithmInfo, Interrupted, Solution
from planner.algorithms.exact.watched import Watched
from planner.algorithms.listsched import etf
from planner.model import Problem
from planner.spec.load import load_path

ROOT = Path(__file__).resolve().parents[1]

#: every test here signals its own process: each runs in a fork (tests/conftest.py), so
#: that no signal, late or pending, reaches pytest's runner (issue 40, finding 9)
pytestmark = pytest.mark.own_process


@pytest.fixture(autouse=True)
def _handlers() -> Iterator[None]:
    """Each test with this module's handlers, and the process's own back after it."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, *signals.SIGNALS)}
    signals.install()
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


def _raise_during(signum: int) -> Callable[[], str]:
    """A call that gets `signum` half-way and carries on to its end."""
    def call() -> str:
        signal.raise_signal(signum)
        time.sleep(0.01)  # Python code runs after the signal: its handler has run by now
        return "done"
    return call


def test_a_stop_during_a_shielded_call_is_raised_when_it_returns() -> None:
    finished = []

    def call() -> None:
        _raise_during(signal.SIGINT)()
        finished.append(True)

    with pytest.raises(KeyboardInterrupt):
        signals.shielded(call)
    assert finished == [True]
    assert signals.shielded(lambda: 7) == 7  # nothing left pending


def test_sigterm_during_a_shielded_call_is_terminated_after_it() -> None:
    with pytest.raises(signals.Terminated) as stop:
        signals.shielded(_raise_during(signal.SIGTERM))
    assert stop.value.signum == signal.SIGTERM


def test_a_second_signal_during_the_same_call_raises_at_once() -> None:
    def call() -> None:
        signal.raise_signal(signal.SIGINT)
        time.sleep(0.01)
        signal.raise_signal(signal.SIGINT)  # the user insists
        time.sleep(0.01)
        pytest.fail("the second signal did not stop the call")

    with pytest.raises(KeyboardInterrupt):
        signals.shielded(call)
    assert signals.shielded(lambda: 7) == 7


#: a callback's Python side in llvmlite, as numba's object cache's is when numba compiles
_NOTIFY = """
import signal, time
def notify(x):
    signal.raise_signal(signal.SIGTERM)
    time.sleep(0.05)  # the handler has run by now, inside the callback
    return x
"""


def test_a_stop_during_a_native_callback_is_raised_after_it_returns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the stop was raised inside the callback, where ctypes prints it as
    "Exception ignored on calling ctypes callback function" with a traceback, and drops
    it (CI, under load: a stopped `compare`'s worker in llvmlite's
    `_raw_object_cache_notify` printed that and ran on until it was killed)."""
    dropped: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)
    namespace: dict[str, object] = {"__name__": "llvmlite.binding.executionengine"}
    exec(compile(_NOTIFY, "executionengine.py", "exec"), namespace)
    kind = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
    notify = ctypes.cast(kind(namespace["notify"]), kind)  # called from C, as llvmlite's
    returned = []
    with pytest.raises(signals.Terminated):
        returned.append(notify(3))
        time.sleep(2)  # the stop comes again once the callback has returned
    assert returned == [3]
    assert dropped == []


def test_a_stop_raised_inside_compiled_code_is_still_a_keyboard_interrupt() -> None:
    # what CPython makes of a handler (not this module's) that raised as a kernel returned
    def call() -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as stop:
            raise SystemError("returned a result with an exception set") from stop

    with pytest.raises(KeyboardInterrupt):
        signals.shielded(call)
    with pytest.raises(SystemError):  # any other SystemError stays one
        signals.shielded(lambda: (_ for _ in ()).throw(SystemError("other")))


def test_deferred_nests_and_allowed_takes_a_held_stop_at_once() -> None:
    reached = []
    with pytest.raises(KeyboardInterrupt), signals.deferred():
        with signals.deferred():
            _raise_during(signal.SIGINT)()
        reached.append("inner end")  # still held: the outer stretch goes on
        with signals.allowed():
            reached.append("allowed")  # not reached: it raises on entry
    assert reached == ["inner end"]
    with signals.deferred(), pytest.raises(KeyboardInterrupt), signals.allowed():
        _raise_during(signal.SIGINT)()  # raised at once inside
    assert signals.shielded(lambda: 7) == 7


def test_other_threads_call_through() -> None:
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(signals.shielded(lambda: 7)))
    thread.start()
    thread.join()
    assert out == [7]


def _gnmt() -> Problem:
    return load_path(ROOT / "specs" / "gnmt.plan").spec.plans["gnmt8_small4"]


def _pester_until_stopped(call: Callable[[], object], trials: int) -> dict[str, int]:
    """Loop `call` while another thread sends SIGINT to this process a few ms later, until
    the loop stops; the exception types that stopped it, counted."""
    kinds: dict[str, int] = {}
    for trial in range(trials):
        def pester(delay: float = 0.001 + 0.004 * (trial % 5) / 5) -> None:
            time.sleep(delay)
            os.kill(os.getpid(), signal.SIGINT)

        thread = threading.Thread(target=pester)
        try:
            thread.start()
            while True:
                call()
        except BaseException as err:  # noqa: BLE001 - counted, and checked by the caller
            kinds[type(err).__name__] = kinds.get(type(err).__name__, 0) + 1
        finally:
            thread.join()
    return kinds


def test_sigint_during_the_fast_simulators_kernel_is_a_keyboard_interrupt() -> None:
    if not fastsim.numba_available():
        pytest.skip("numba is not installed: no compiled kernel")
    fastsim.prepare()
    problem = _gnmt()
    ev = fastsim.Evaluator(problem, backend="numba")
    place = np.zeros(len(problem.graph.ops), np.int64)
    assert _pester_until_stopped(lambda: ev.makespan(place), 50) == {"KeyboardInterrupt": 50}


@pytest.mark.slow  # compiles the kernels where numba's cache lacks them
@pytest.mark.parametrize("engine", ["etf", "bounds"])
def test_the_other_kernels_finish_their_call_before_a_stop(
        engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ETF engine's and the bounds' kernels run in `shielded` too: a signal that
    arrives during the call (here sent by the call itself) is raised after it returned.
    (On GNMT their calls are short next to the Python around them, so pestering them as
    above meets the kernel too rarely to tell.)"""
    pytest.importorskip("numba", reason="numba is not installed: no compiled kernel")
    problem = _gnmt()
    module, name = (etf, "_kernel") if engine == "etf" else (bounds, "_passes")
    monkeypatch.setattr(module, "ENGINE", "kernel")
    module.prepare()
    real, returned = getattr(module, name), []

    def kernel(*args: object) -> object:
        _raise_during(signal.SIGINT)()  # the stop arrives while the kernel runs
        out = real(*args)
        returned.append(True)
        return out

    monkeypatch.setattr(module, name, kernel)
    with pytest.raises(KeyboardInterrupt):
        if engine == "etf":
            run("metf", problem)
        else:
            bounds.lower_bound(dataclasses.replace(problem))
    assert returned == [True]


def test_an_interrupted_solution_carries_its_planning_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`algorithms.run` times an `Interrupted` solution as a finished one (an interrupted
    `solve` printed `planning time 0 ns`)."""
    problem = _gnmt()
    plan = run("metf", problem).plan.with_algorithm("")

    def place(problem: Problem, options: object) -> Solution:
        time.sleep(0.2)
        raise Interrupted(Solution(plan, "interrupted"))

    module = types.ModuleType("slowpoke")
    module.place = place  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "slowpoke", module)
    monkeypatch.setattr(algorithms, "ALGORITHMS", MappingProxyType(
        {**algorithms.ALGORITHMS, "slowpoke": AlgorithmInfo("slowpoke", "slowpoke", "x")}))
    with pytest.raises(Interrupted) as stop:
        run("slowpoke", problem)
    assert stop.value.solution is not None
    assert stop.value.solution.planning_s >= 0.2
    assert stop.value.solution.plan.algorithm == "slowpoke"


def test_a_stop_after_the_json_document_leaves_its_exit_code(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C just after `solve --json` wrote `"exit_code": 0`: the process exited 130
    (the stop, held off while the CLI exits, was raised after the document)."""
    guarding = importlib.import_module("planner.cli.guard")  # (the package holds `guard`)
    write = guarding.JsonReport.write

    def write_then_stop(self: object, code: int) -> None:
        write(self, code)
        signal.raise_signal(signal.SIGINT)  # held off: the CLI's exit is deferred

    monkeypatch.setattr(guarding.JsonReport, "write", write_then_stop)
    with signals.deferred(), guarding.guard("solve", True) as report:  # as `main` runs one
        report.result = {}
    # no KeyboardInterrupt when the deferral ended: the document's exit code (0) stands


def test_planners_threads_leave_stops_to_the_main_thread() -> None:
    """The solve thread (and the threads the solver starts from it), the progress ticker and
    the solver-output reader block SIGINT, SIGTERM and SIGHUP, so that a stop sent to the
    process reaches the main thread (`signals.stops_to_the_main_thread`); before, they took
    them as any thread may, and a Ctrl-C to `--algo ilp` was once never raised."""
    def masks() -> tuple[set[int], set[int]]:
        inner: list[set[int]] = []
        child = threading.Thread(target=lambda: inner.append(
            set(signal.pthread_sigmask(signal.SIG_BLOCK, []))))
        child.start()
        child.join()
        return set(signal.pthread_sigmask(signal.SIG_BLOCK, [])), inner[0]

    run = Watched(masks, "planner-test")
    assert run.wait(10)
    own, started = run.value()
    stops = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    assert stops <= own and stops <= started
    assert not stops & set(signal.pthread_sigmask(signal.SIG_BLOCK, []))  # main: untouched
