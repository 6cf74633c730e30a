"""SIGTERM and SIGHUP end a command the way Ctrl-C does, so its clean-up runs.

By default Python dies on SIGTERM at once: no `finally`, no `atexit`, so a `compare`
left its worker processes, its forkserver and its temporary folder behind, and a `solve`
its external solver and the solver's `.lp`/`.soln` files. Here the signal raises
`Terminated` (a `KeyboardInterrupt`) in the main thread instead: every path that handles
Ctrl-C (kill the solver's process group, stop the pool, keep the best plan so far) runs,
and the command exits 130 with E607, as for Ctrl-C.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from types import FrameType
from typing import TypeVar, TypeVarTuple

#: the signals that stop a command like Ctrl-C
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """A stop requested by a signal other than SIGINT."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


def install() -> None:
    """Turn SIGTERM and SIGHUP into `Terminated` (main thread only; elsewhere a no-op)."""
    for sig in SIGNALS:
        try:
            signal.signal(sig, _raise)
        except (ValueError, OSError):  # not the main thread, or an embedded interpreter
            return


_running = False
_R = TypeVar("_R")
_Ts = TypeVarTuple("_Ts")


def _worker_signal(signum: int, frame: FrameType | None) -> None:
    if _running:
        raise Terminated(signum)  # unwinds the point: its solver group and files go too
    os._exit(128 + signum)  # idle: nothing to clean up


def install_in_worker() -> None:
    """A pool worker's handler: a running point is unwound (its `finally` blocks and
    solver kills run), then `guarded` exits; an idle worker exits at once."""
    for sig in SIGNALS:
        signal.signal(sig, _worker_signal)


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
