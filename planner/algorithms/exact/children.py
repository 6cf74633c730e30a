"""External solver processes: each starts in a process group of its own, and the whole
group is killed on every way out (the solve's end, its time-out, an error, Ctrl-C,
SIGTERM, interpreter exit).

A solver is often a script (a wrapper around the binary, a `/bin/sh` launcher): killing
the process by name missed it and its child, which ran on past the time limit. The group
is what a script and everything it starts share, so `os.killpg` reaches all of them.
Pyomo starts shell solvers with `subprocess.run` in `pyomo.opt.solver.shellcmd`;
`grouped()` points that module at `run` here for the duration of one solve.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import types
from collections.abc import Iterator
from typing import Any

_live: set[int] = set()  # process groups this process started and has not yet killed
_lock = threading.Lock()


def live_groups() -> set[int]:
    """The solver process groups still registered (for tests and the watchdog)."""
    with _lock:
        return set(_live)


def kill_group(pgid: int) -> bool:
    """SIGKILL every process of group `pgid`; whether any was there to kill."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def kill_all() -> bool:
    """Kill every registered solver group; whether any process was killed."""
    with _lock:
        groups = sorted(_live)
        _live.clear()
    return any([kill_group(g) for g in groups])  # noqa: C419 - kill every group, not the first


atexit.register(kill_all)


def run(cmd: Any, *, input: Any = None, timeout: float | None = None,
        check: bool = False, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run`, with the child in a new session (its own process group) that is
    killed whenever this returns or raises."""
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with subprocess.Popen(cmd, start_new_session=True, **kwargs) as proc:
        with _lock:
            _live.add(proc.pid)
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except BaseException:
            kill_group(proc.pid)
            proc.wait()
            raise
        finally:
            kill_group(proc.pid)  # what a script started and left running
            with _lock:
                _live.discard(proc.pid)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


@contextlib.contextmanager
def grouped() -> Iterator[None]:
    """Make Pyomo's shell solvers start through `run` (one solve at a time per process)."""
    from pyomo.opt.solver import shellcmd

    shim = types.SimpleNamespace(**{k: getattr(subprocess, k) for k in dir(subprocess)
                                    if not k.startswith("__")})
    shim.run = run
    saved = shellcmd.subprocess
    shellcmd.subprocess = shim
    try:
        yield
    finally:
        shellcmd.subprocess = saved
