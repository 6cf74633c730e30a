"""torch's log records kept instead of printed, while planner runs torch on a user's input.

torch logs some failures before it raises them: `torch.load` logs why a file failed, then
raises "check the warnings above"; `torch.export` logs the traceback of a fake-tensor
kernel that rejects the example's shapes, then raises. Printed, these are tracebacks on a
user's terminal before planner's own diagnostic; kept, the first exception can explain the
diagnostic instead (`torch_program`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class Logged(logging.Handler):
    """The exceptions of the records torch logs (the records themselves are dropped)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.errors.append(record.exc_info[1])


@contextmanager
def kept(logged: Logged) -> Iterator[Logged]:
    """Every `torch` logger's records go to `logged` alone while this lasts."""
    loggers = [logging.getLogger("torch"), *(
        x for name, x in list(logging.root.manager.loggerDict.items())
        if name.startswith("torch.") and isinstance(x, logging.Logger))]
    saved = [(x, x.handlers, x.propagate) for x in loggers]
    for x in loggers:  # torch gives its loggers handlers of their own, and no propagation
        x.handlers, x.propagate = [logged], False
    try:
        yield logged
    finally:
        for x, handlers, propagate in saved:
            x.handlers, x.propagate = handlers, propagate
