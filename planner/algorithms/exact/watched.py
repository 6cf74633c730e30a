"""A solver call run in a worker thread while the main thread watches it.

Both exact back-ends (`backends.solve_pyomo`, `cpsat`) solve this way. The main thread
waits on an Event in short slices, not on `Thread.join`: Ctrl-C (and SIGTERM under the
CLI) reaches it meanwhile, and a join interrupted by Ctrl-C may later return early. What
the call returns or raises is kept for the main thread, so a solver's exception becomes an
outcome there instead of a traceback printed by the thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar, cast

from ...signals import stops_to_the_main_thread

T = TypeVar("T")

#: how often the waiting main thread wakes to let a signal in
SLICE_S = 0.1


class Watched(Generic[T]):
    """`call()` running in a daemon thread named `name`, started at construction."""

    def __init__(self, call: Callable[[], T], name: str) -> None:
        self._call = call
        self._done = threading.Event()
        self._value: T | None = None
        self.error: BaseException | None = None
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def _run(self) -> None:
        stops_to_the_main_thread()  # and from the solver's own threads, started here
        try:
            self._value = self._call()
        except BaseException as err:  # noqa: BLE001 - handed to the main thread
            self.error = err
        finally:
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait, in slices, until the call ends or `timeout_s` passes; whether it ended."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self._done.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            self._done.wait(SLICE_S if left is None else min(SLICE_S, left))
        return True

    def value(self) -> T:
        """What the call returned; its exception raised again when it raised one."""
        if not self._done.is_set():
            raise RuntimeError("the watched call has not ended")
        if self.error is not None:
            raise self.error
        return cast(T, self._value)


def first_line(err: BaseException) -> str:
    """An exception in one line for a fallback reason: its message's first line, or its
    type's name when it has no message."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
