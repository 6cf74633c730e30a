"""torch's log records kept instead of printed, while planner runs torch on a user's input.

torch logs some failures before it raises them: `torch.load` logs why a file failed, then
raises "check the warnings above"; `torch.export` logs the traceback of a fake-tensor
kernel that rejects the example's shapes, then raises. Printed, these are tracebacks on a
user's terminal before planner's own diagnostic; kept, the first exception can explain the
diagnostic instead (`torch_program`).

`torch.export` also warns that "the tensor attributes self.rnn._flat_weights[0], ... were
assigned during export" for every `nn.LSTM` (`nn.GRU`, `nn.RNN`): torch's own modules
reassign those on each call, and no user can register them as buffers.
`without_rnn_weights` leaves them out of that warning, which still names the attributes a
user's code assigns (they do need `register_buffer`); other warnings pass unchanged.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_ASSIGNED = re.compile(r"The tensor attributes (.+?) were assigned during export\.")
_RNN_WEIGHT = re.compile(r"\._flat_weights\[\d+\]$")


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


@contextmanager
def without_rnn_weights() -> Iterator[None]:
    """The warnings raised while this lasts, `_flat_weights[k]` left out of torch.export's
    "were assigned during export" (module docstring): that warning gone when it named
    nothing else."""
    caught: list[Any] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            yield
    finally:
        for w in caught:
            message = _without_rnn_weights(str(w.message))
            if message is None:
                continue
            warnings.warn_explicit(w.message if message == str(w.message) else message,
                                   w.category, w.filename, w.lineno, source=w.source)


def _without_rnn_weights(message: str) -> str | None:
    """`message` without the RNN weights it names as assigned during export (None when it
    named nothing else)."""
    found = _ASSIGNED.match(message)
    if found is None:
        return message
    kept_names = [n for n in found.group(1).split(", ") if not _RNN_WEIGHT.search(n)]
    if not kept_names:
        return None
    return message[:found.start(1)] + ", ".join(kept_names) + message[found.end(1):]
