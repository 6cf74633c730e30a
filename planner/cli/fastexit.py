"""Ending a process that loaded a big model without tearing it down object by object.

At exit CPython frees every module's objects one by one. After a 100,000-op `solve` that
is the model, its derived tables, the schedulers' instance and the simulation (millions of
objects): about 1 s CPU of a 12 s run, for memory the system takes back at once anyway.
So when `_load` has loaded a big model (`arm`), `main` ends the process with `os._exit`
once the command is done (mypy does the same, `--fast-exit`, on by default). Nothing a
normal exit does for the user is skipped: the standard streams are flushed, every
`atexit` handler runs (logging's flush, the solvers' children killed, multiprocessing's
pools ended), and a process with a thread that is not a daemon exits normally, which
waits for it. Output files are complete before then: they are written atomically.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading

_armed = False


def arm() -> None:
    """End this process with `finish` (a big model was loaded)."""
    global _armed
    _armed = True


def finish(code: object, *, always: bool = False) -> None:
    """If armed, and no thread but daemons is left, end the process now with the exit
    status of `SystemExit(code)`; otherwise return (the caller exits normally). With
    `always` (`planner.__main__`: an interrupted command), end it in any case, once those
    threads are done, as a normal exit waits for them."""
    others = [t for t in threading.enumerate()
              if not t.daemon and t is not threading.main_thread()]
    if not (_armed or always) or (others and not always):
        return
    for thread in others:  # a process pool's manager, ending
        thread.join()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # stdout that failed (or None: fd 1
        return  # closed): the command group answered it (`guard.stdout_failed`)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # as the interpreter does: the message to stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()  # the interpreter's own exit step, run now
    with contextlib.suppress(OSError, ValueError, AttributeError):  # what the handlers wrote
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(status & 0xFF)
