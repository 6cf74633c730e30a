"""numba kernels without compiling on the user's clock.

planner has three compiled twins (the fast simulator, the ETF engine, the bounds' graph
passes). numba compiles a kernel on its first call and keeps it in an on-disk cache;
compiling all three takes 20-120 s on a 2-core machine, which a fresh install used to
spend inside its first `planner solve` (57-123 s for ResNet-50, then 1 s).

So a command never compiles. A kernel is used only when numba's cache already holds it
for this machine, this numba and this source (`load_cached`, which reads the cache's own
index and loads every specialisation it finds valid, never compiling); otherwise the
Python/numpy twin answers (the same results, bit for bit: each twin's tests say so) and
`build_in_background` starts one detached child, `python -m planner.cli.warm`, that
compiles every kernel into the cache for the next command. The child outlives the
command, is started at most once at a time (a lock file), and the terminal says so once
(`notice`: the CLI shows this logger's messages).

Why not ahead of time: numba's AOT compiler needs a C compiler on the user's machine,
and a cache shipped in the wheel is keyed by the source files' modification times and
the processor's features, which an install does not keep. `python -m planner.cli.warm`
fills the cache ahead where a build step exists (images, CI).

This module imports nothing of planner's, and numba only inside `load_cached`, whose
callers import it anyway.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["BUILD_MODULE", "build_in_background", "building", "built_here", "load_cached",
           "load_or_build", "numba_available", "notice"]

#: the module a background build runs (`python -m BUILD_MODULE *BUILD_ARGS`)
BUILD_MODULE = "planner.cli.warm"
BUILD_ARGS: tuple[str, ...] = ()
#: a lock older than this is taken to belong to a build that died
STALE_S = 900.0
#: the logger whose messages the CLI prints as `planner: MESSAGE` on stderr
setup_log = logging.getLogger("planner.setup")

_numba: bool | None = None
_child: subprocess.Popen[bytes] | None = None
_noticed = False


def numba_available() -> bool:
    """Whether numba can be imported (checked once, without importing it), and did not
    fail to (`load_or_build`). The one check of the three compiled kernels' callers."""
    global _numba
    if _numba is None:
        _numba = importlib.util.find_spec("numba") is not None
    return _numba


def load_cached(dispatcher: Any) -> bool | None:
    """Load `dispatcher`'s specialisations that numba's on-disk cache holds and that are
    valid here (this numba, this source, this processor); never compile.

    True when at least one was loaded (or is loaded already), False when the cache holds
    none, None when this numba's cache cannot be read this way (its internals moved).
    """
    if dispatcher.signatures:
        return True
    try:
        cache = dispatcher._cache
        codegen = dispatcher.targetctx.codegen()
        index = cache._cache_file._load_index()
        valid = [key[0] for key in index if cache._index_key(key[0], codegen) == key]
    except Exception:  # numba's private cache API changed: say "cannot tell"
        return None
    for sig in valid:
        dispatcher.compile(sig)  # found in the cache: a load, not a compile
    return bool(valid)


def load_or_build(entry: Callable[[], Any], prepare: Callable[[], float],
                  what: str) -> bool | None:
    """Ready a kernel without compiling it: True when numba's cache held it (`load_cached`,
    then `prepare`, which only loads), False when it is not built yet (a background build
    runs or starts now: `build_in_background`), None when numba does not import (a broken
    install: `numba_available` says False from then on). `entry` imports the kernel's
    module and returns its entry point."""
    global _numba
    if building():
        notice(what)
        return False
    try:
        dispatcher = entry()
    except ImportError:
        _numba = False
        return None
    found = load_cached(dispatcher)
    if found or (found is None and built_here()):
        prepare()  # the cache holds it: a load, not a compile
        return True
    build_in_background(what)
    return False


def load_kernel(module: str, entry: str, prepare: Callable[[], float], what: str) -> bool:
    """`load_or_build` for the entry point `entry` of the kernel module `module`, imported
    only here and only then (numba is heavy to import): True when it is ready now."""
    return bool(load_or_build(lambda: getattr(importlib.import_module(module), entry),
                              prepare, what))


def _lock_path() -> Path:
    """One lock per installed copy of planner (its folder, hashed into the name)."""
    here = str(Path(__file__).resolve().parent)
    tag = hashlib.sha256(here.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"planner-build-{tag}.lock"


def building() -> bool:
    """Whether a background build of the kernels is running (ours or another process's)."""
    if _child is not None and _child.poll() is None:
        return True
    try:
        age = time.time() - _lock_path().stat().st_mtime
    except OSError:
        return False
    return age < STALE_S


def built_here() -> bool:
    """Whether this process started a background build that has finished well."""
    return _child is not None and _child.poll() == 0


def build_in_background(what: str) -> bool:
    """Start the background build unless one runs; True when one runs now.

    `what` names the kernel the caller wanted (for the one notice a process prints).
    """
    global _child
    if building():
        notice(what)
        return True
    lock = _lock_path()
    with contextlib.suppress(OSError):
        if lock.exists():  # stale: its build died
            lock.unlink()
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except OSError:  # another process won the race, or no temp folder: let it be
        return building()
    os.close(fd)
    try:
        # a new session: Ctrl-C in the terminal stops the command, not the build, so the
        # next command finds the kernels ready
        command = [sys.executable, "-m", BUILD_MODULE, *BUILD_ARGS, "--lock", str(lock)]
        _child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        with contextlib.suppress(OSError):
            lock.unlink()
        return False
    with contextlib.suppress(OSError):  # who builds, for people and tests; never re-created:
        # a quick build may have ended and removed its lock already (it did, next to four
        # CPU hogs), and a lock left behind would say "building" for STALE_S
        fd = os.open(lock, os.O_WRONLY | os.O_TRUNC)
        with os.fdopen(fd, "w") as out:
            out.write(f"{_child.pid}\n")
    notice(what)
    return True


def notice(what: str) -> None:
    """Say once per process that the kernels are being built and this run goes without."""
    global _noticed
    if not _noticed:
        _noticed = True
        setup_log.info("one-time setup: compiling %s and the other kernels in the "
                       "background (about a minute); until then planner uses its Python "
                       "engines (the same results, slower; `auto` and `search` try fewer "
                       "moves with them, and say so)", what)
