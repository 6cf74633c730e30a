"""External solver processes, contained: every descendant is killed on every way out, and
what they print is kept within a fixed size.

Killing. A solver is often a script (a wrapper around the binary, a `/bin/sh` launcher),
and what it starts may leave its process group (`setsid`, a daemon's double fork): killing
by name, or only the group, let such a grandchild run on past the time limit while it held
the output pipe open, so the solve waited for it. So each solver starts in a session of
its own with a token in its environment (`TOKEN_VAR`), which its descendants inherit
wherever they move; the kill SIGKILLs the group and every process of this user whose
`/proc/PID/environ` holds the token (Linux; elsewhere the group alone). It runs when the
solve ends, at its time-out, on an error, Ctrl-C, SIGTERM and interpreter exit.

Output. The solver's stdout and stderr go to a pipe read by a thread that keeps the first
`HEAD_BYTES` and the last `TAIL_BYTES` and counts what it drops between them, so a
solver that prints 300 MB costs at most `HEAD_BYTES + TAIL_BYTES` of memory. Pyomo reads
the solver's status from its log's end ("Result - Optimal solution found", the
objective), which the tail keeps. A descendant that scrubbed its environment and still
holds the pipe cannot make the solve wait: the reader is given up `PIPE_GRACE_S` after
the solver itself has gone.

Pyomo starts shell solvers with `subprocess.run` in `pyomo.opt.solver.shellcmd`;
`grouped()` points that module at `run` here for the duration of one solve.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import secrets
import signal
import subprocess
import threading
import types
from collections.abc import Iterator
from typing import IO, Any

from ...signals import stops_to_the_main_thread

#: the environment variable that marks a solver and everything it starts
TOKEN_VAR = "PLANNER_SOLVER_TOKEN"
#: how much of a solver's output is kept: its start and its end
HEAD_BYTES = 64 * 1024
TAIL_BYTES = 1024 * 1024
#: how long the output is waited for once the solver itself has exited and been killed
PIPE_GRACE_S = 2.0

_live: dict[int, str] = {}  # solver process groups not yet killed -> their tokens
_lock = threading.Lock()


def live_groups() -> set[int]:
    """The solver process groups still registered (for tests and the watchdog)."""
    with _lock:
        return set(_live)


def marked(token: str) -> list[int]:
    """PIDs of this user's processes whose environment holds `TOKEN_VAR=token` (none where
    there is no /proc)."""
    needle = f"{TOKEN_VAR}={token}".encode()
    found: list[int] = []
    for pid in pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read()
        except OSError:  # gone, or another user's
            continue
        if needle in env.split(b"\0"):
            found.append(pid)
    return found


def pids() -> list[int]:
    """The PIDs /proc lists (none where there is no /proc)."""
    try:
        entries = os.listdir("/proc")
    except OSError:  # pragma: no cover - not Linux
        return []
    return [int(entry) for entry in entries if entry.isdigit()]


def kill_tree(pgid: int, token: str) -> bool:
    """SIGKILL group `pgid` and every process marked with `token`; whether any was there."""
    hit = False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
        hit = True
    for pid in marked(token):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            hit = True
    return hit


def kill_all() -> bool:
    """Kill every registered solver with its descendants; whether any process was killed."""
    with _lock:
        trees = sorted(_live.items())
        _live.clear()
    return any([kill_tree(g, t) for g, t in trees])  # noqa: C419 - kill every one


atexit.register(kill_all)


class BoundedOutput:
    """Reads a pipe to its end on a thread, keeping its first `head` and last `tail` bytes."""

    def __init__(self, pipe: IO[bytes], head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self._pipe, self._head_cap, self._tail_cap = pipe, head, tail
        self.head = bytearray()
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self.dropped = 0
        self._thread = threading.Thread(target=self._read, name="planner-solver-output",
                                        daemon=True)
        self._thread.start()

    def _read(self) -> None:
        stops_to_the_main_thread()
        with contextlib.suppress(OSError, ValueError):  # the pipe closed under it
            while chunk := self._pipe.read1(64 * 1024):  # type: ignore[attr-defined]
                room = self._head_cap - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self._tail.append(chunk)
                    self._tail_size += len(chunk)
                    while self._tail_size - len(self._tail[0]) >= self._tail_cap:
                        self._tail_size -= len(self._tail[0])
                        self.dropped += len(self._tail.popleft())

    def finish(self, grace: float) -> bytes:
        """What was kept, once the pipe ends or `grace` seconds have passed."""
        self._thread.join(grace)
        with contextlib.suppress(OSError):
            self._pipe.close()  # a holder that escaped every kill: stop reading it
        self._thread.join(1.0)
        tail = b"".join(list(self._tail))
        if len(tail) > self._tail_cap:  # whole chunks were kept: cut to the byte
            self.dropped += len(tail) - self._tail_cap
            tail = tail[-self._tail_cap:]
        gap = (f"\n[planner: {self.dropped:,} bytes of solver output left out]\n".encode()
               if self.dropped else b"")
        return bytes(self.head) + gap + tail


def run(cmd: Any, *, input: Any = None, timeout: float | None = None,  # noqa: A002
        check: bool = False, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run` for a solver: in a new session, marked with a token, its output
    (stdout and stderr together) kept bounded and handed to the caller's `stdout` (a file,
    a descriptor or `PIPE`) once it has exited; it and all it started are killed whenever
    this returns or raises."""
    target = kwargs.pop("stdout", None)
    kwargs.pop("stderr", None)
    text = bool(kwargs.pop("universal_newlines", False) or kwargs.pop("text", False))
    token = secrets.token_hex(16)
    kwargs["env"] = {**(kwargs.get("env") or os.environ), TOKEN_VAR: token}
    stdin = subprocess.PIPE if input is not None else kwargs.pop("stdin", subprocess.DEVNULL)
    with subprocess.Popen(cmd, start_new_session=True, stdin=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, **kwargs) as proc:
        with _lock:
            _live[proc.pid] = token
        assert proc.stdout is not None
        output = BoundedOutput(proc.stdout)
        try:
            if input is not None:
                _feed(proc, input, text)
            proc.wait(timeout)
        except BaseException:
            kill_tree(proc.pid, token)
            proc.wait()
            raise
        finally:
            kill_tree(proc.pid, token)  # what a script started and left running
            with _lock:
                _live.pop(proc.pid, None)
            data = output.finish(PIPE_GRACE_S)
    out = _deliver(data, target, text)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, None)
    if check:
        done.check_returncode()
    return done


def _feed(proc: subprocess.Popen[bytes], data: Any, text: bool) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(data.encode() if text and isinstance(data, str) else data)
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()


def _deliver(data: bytes, target: Any, text: bool) -> Any:
    """Hand the kept output to where the caller wanted stdout: returned for `PIPE`,
    written to a file object or descriptor, dropped for `DEVNULL` or nothing."""
    decoded = data.decode("utf-8", errors="replace")
    if target == subprocess.PIPE:
        return decoded if text else data
    if isinstance(target, int) and target >= 0:
        view = memoryview(data)
        while view:
            view = view[os.write(target, view):]
    elif target is not None and hasattr(target, "write"):
        with contextlib.suppress(OSError, ValueError):
            if "b" in getattr(target, "mode", ""):
                target.write(data)
            else:
                target.write(decoded)
            target.flush()
    return None


@contextlib.contextmanager
def grouped() -> Iterator[None]:
    """Make Pyomo's shell solvers start through `run` (one solve at a time per process)."""
    # lazy: start-up (Pyomo, as in `backends.import_pyomo`)
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
