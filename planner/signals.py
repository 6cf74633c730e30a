"""The signals that stop a command: Ctrl-C (SIGINT), SIGTERM and SIGHUP.

1. SIGTERM and SIGHUP end a command the way Ctrl-C does, so its clean-up runs. By default
   Python dies on SIGTERM at once: no `finally`, no `atexit`, so a `compare` left its
   worker processes, its forkserver and its temporary folder behind, and a `solve` its
   external solver and the solver's `.lp`/`.soln` files. Here the signal raises
   `Terminated` (a `KeyboardInterrupt`) in the main thread instead: every path that
   handles Ctrl-C (kill the solver's process group, stop the pool, keep the best plan so
   far) runs, and the command exits 130 with E607, as for Ctrl-C.
2. Never inside compiled code. A `KeyboardInterrupt` raised while a numba kernel returns
   its result leaves the interpreter with a result *and* an exception: CPython turns that
   into `SystemError: CPUDispatcher(...) returned a result with an exception set`, which
   no `except KeyboardInterrupt` catches (issue 25: a search stopped in its loop ended
   with E999 and lost its best plan). So every call of a compiled kernel runs in
   `shielded`: a stop that arrives meanwhile is only recorded, and raised as soon as the
   call has returned, where the callers' `except KeyboardInterrupt` keeps the best plan.
   A second signal during the same call raises at once (a stuck call stays stoppable).
   `deferred` holds stops off the same way around any stretch of code: the CLI's start-up
   and exit, where no handler of a command's would see them (`allowed` lets a command's
   body take them at once again).
3. Never inside a native callback. Python code that C calls back (llvmlite's object
   cache, as numba compiles) cannot pass an exception on: ctypes prints it with its
   traceback and drops it. A stop that arrives there is sent again a moment later
   (`CALLBACK_MODULES`, `AGAIN_S`), once the callback has returned.

Handlers run in the main thread only, so only the main thread defers; elsewhere these
are no-ops. This module imports nothing of planner's (the bottom layer).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from threading import get_ident
from types import FrameType, TracebackType
from typing import NoReturn, TypeVar, TypeVarTuple

#: the signals other than SIGINT that stop a command like Ctrl-C
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """A stop requested by a signal other than SIGINT."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_depth = 0  # how many `deferred` stretches the main thread is in
_pending: int | None = None  # the signal that arrived in one, raised when the last ends
_worker = False  # a pool worker (`install_in_worker`)
_running = False  # a pool worker running a point (`guarded`)
_armed = False  # `_arm` has run


def _stop(signum: int) -> NoReturn:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def _handle(signum: int, frame: FrameType | None) -> None:
    global _pending
    if _worker and not _running:
        os._exit(128 + signum)  # an idle worker: nothing to clean up
    if _depth and _pending is None:
        _pending = signum  # raised when the deferred stretch ends
        return
    if _in_callback(frame):
        _again_soon(signum)
        return
    _pending = None
    _stop(signum)


#: modules whose Python code native code calls back (llvmlite's object cache, as numba
#: compiles): ctypes prints an exception raised there as "Exception ignored ..." with its
#: traceback, and drops it, so the stop was lost (a stopped `compare`'s worker ran on
#: until it was killed, its traceback on the terminal; seen under load in CI)
CALLBACK_MODULES = ("llvmlite.",)
#: how soon a stop that arrived in such a callback is asked for again
AGAIN_S = 0.01


def _in_callback(frame: FrameType | None) -> bool:
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(CALLBACK_MODULES):
            return True
        frame = frame.f_back
    return False


def _again_soon(signum: int) -> None:
    """Send `signum` to this process again in `AGAIN_S`, from a thread (a handler may not
    wait): the main thread has left the callback by then, or it comes back here."""
    timer = threading.Timer(AGAIN_S, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


_main = threading.main_thread().ident  # where handlers run (a fork's: the forking thread)


def _forked() -> None:
    global _main
    _main = get_ident()


os.register_at_fork(after_in_child=_forked)


def _main_thread() -> bool:
    return get_ident() == _main


def _arm() -> None:
    """Deferring needs this module's SIGINT handler: take Python's default one's place
    (which it matches outside deferred stretches); leave any other handler alone. Once
    per process, from the main thread: `getsignal` is slow (13 us; a kernel call may
    take 5)."""
    global _armed
    _armed = True
    with contextlib.suppress(ValueError, OSError):  # an embedded interpreter
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _handle)


class _Deferral:
    """`deferred()`'s context manager (one object: the state is the module's)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _depth
        if get_ident() == _main:
            if not _armed:
                _arm()
            _depth += 1

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        global _depth, _pending
        if get_ident() != _main:
            return
        _depth -= 1
        if isinstance(err, SystemError) and isinstance(err.__cause__, KeyboardInterrupt):
            # a handler not of this module's raised inside compiled code: the stop it meant
            _pending = None
            raise err.__cause__ from None
        if not _depth and _pending is not None:
            signum, _pending = _pending, None
            _stop(signum)


_DEFERRAL = _Deferral()
_R = TypeVar("_R")
_Ts = TypeVarTuple("_Ts")


def deferred() -> _Deferral:
    """A context in which SIGINT, SIGTERM and SIGHUP only record the stop they ask for,
    raised (`KeyboardInterrupt`, `Terminated`) when the outermost such context ends; a
    second signal meanwhile raises at once. Nests; a no-op outside the main thread."""
    return _DEFERRAL


def drop_pending() -> None:
    """Forget a stop held off so far: the command has stated its outcome (its `--json`
    document, exit code included, is written), which a Ctrl-C a moment later must not
    turn into another exit code (130 after a document saying 0)."""
    global _pending
    if _main_thread():
        _pending = None


def shielded(call: Callable[[*_Ts], _R], *args: *_Ts) -> _R:
    """`call(*args)` with stops deferred until it returns: the way to call a compiled
    (numba) kernel, which must not be interrupted as it returns (the module's docs)."""
    with _DEFERRAL:
        return call(*args)


@contextlib.contextmanager
def allowed() -> Iterator[None]:
    """A stretch inside a deferred one (a command's body) where stops raise at once again,
    a stop recorded before it included; the deferral resumes after it."""
    global _depth, _pending
    if not _main_thread():
        yield
        return
    saved, _depth = _depth, 0
    try:
        if _pending is not None:
            signum, _pending = _pending, None
            _stop(signum)
        yield
    finally:
        _depth = saved


@contextlib.contextmanager
def interrupts_ignored() -> Iterator[None]:
    """A stretch where SIGINT and SIGHUP are ignored, to start processes that must ignore
    them for life (a process pool's forkserver, and through it the workers and the
    resource tracker): an ignored signal stays ignored across `exec`, and Python keeps it
    so from its first instruction. Ctrl-C and a closed terminal's SIGHUP reach the whole
    process group; the parent stops such children itself (before, SIGHUP killed the
    tracker, and the workers printed its `KeyError` tracebacks). A stop during the
    stretch (a fork and an exec: milliseconds) is lost."""
    if not _main_thread():
        yield
        return
    ignored = [signal.SIGINT, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])]
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in ignored}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def stops_to_the_main_thread() -> None:
    """Block SIGINT, SIGTERM and SIGHUP in the calling thread, unless it is the main one, and
    so in every thread it starts (a thread inherits its creator's mask): a stop sent to the
    process then goes to the main thread, where its handler raises it, and interrupts the
    main thread's wait at once. Taken by another thread, CPython only flags the signal for
    the main thread; a CI run showed a Ctrl-C to `--algo ilp` never raised, its main thread
    waking every 0.1 s for the whole limit while HiGHS's and Pyomo's threads (started from
    the solve thread) ran. Call it first in every thread planner starts."""
    if _main_thread() or not hasattr(signal, "pthread_sigmask"):
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, *SIGNALS})


def install() -> None:
    """Turn SIGTERM and SIGHUP into `Terminated`, and let SIGINT be deferred (main thread
    only; elsewhere a no-op). An ignored signal (a command started with `nohup`, or in
    the background) stays ignored."""
    if not _main_thread():
        return
    _arm()
    for sig in SIGNALS:
        with contextlib.suppress(ValueError, OSError):  # an embedded interpreter
            if signal.getsignal(sig) != signal.SIG_IGN:
                signal.signal(sig, _handle)


def install_in_worker() -> None:
    """A pool worker's handlers: SIGTERM and SIGHUP unwind a running point (its `finally`
    blocks and solver kills run, after any compiled call returns), then `guarded` exits;
    an idle worker exits at once. Both exits are `os._exit`, which runs no exit step, so
    the worker's locks are made to need none (`_untracked_locks`). SIGINT is ignored:
    Ctrl-C reaches the whole process group, and the parent, which holds the results,
    stops the workers itself."""
    global _worker
    _worker = True
    _untracked_locks()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in SIGNALS:
        signal.signal(sig, _handle)


def _untracked_locks() -> None:
    """Make `fork` this worker's default start method, whose locks and semaphores are
    unlinked as they are made: nothing for the resource tracker to clean up. A worker
    inherits its pool's method (forkserver, spawn), whose locks are named and registered
    with the tracker until an exit step unregisters them: importing Pyomo (an `ilp`
    point) makes one, and a `compare` stopped meanwhile ended with the tracker's "There
    appear to be 1 leaked semaphore objects" after its E607. That exit step run in the
    signal handler instead could hang on a lock the interrupted code held. Nothing in a
    worker starts processes through the default context (`portfolio` names its own)."""
    import multiprocessing  # lazy: loaded in a pool worker already, and only there needed

    if "fork" in multiprocessing.get_all_start_methods():  # elsewhere none has a name
        multiprocessing.set_start_method("fork", force=True)


def guarded(call: Callable[[*_Ts], _R], *args: *_Ts) -> _R:
    """Run `call(*args)` in a pool worker; exit the process once a signal unwound it."""
    global _running
    _running = True
    try:
        return call(*args)
    except Terminated as stop:
        os._exit(128 + stop.signum)
    finally:
        _running = False
