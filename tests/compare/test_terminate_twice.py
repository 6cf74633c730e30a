"""Ctrl-C pressed twice in `compare`: the first starts ending the pool's workers, the
second (`_terminate` runs under `signals.deferred`) waits for their end. Before, the second
broke off the clean-up: the workers not yet joined were left running, and compare could
hang at exit joining the pool's thread (2 runs in 20, two SIGINTs 0.1 s apart)."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from planner import signals
from planner.compare import executors


class _Worker:
    """A worker process that is alive until terminated or killed; joining the first one
    is when the second Ctrl-C comes."""

    def __init__(self, log: list[str], name: str, ctrl_c: bool) -> None:
        self.log, self.name, self.ctrl_c, self.alive = log, name, ctrl_c, True

    def terminate(self) -> None:
        self.log.append(f"terminate {self.name}")
        self.alive = False

    def kill(self) -> None:
        self.log.append(f"kill {self.name}")
        self.alive = False

    def join(self, timeout: float | None = None) -> None:
        self.log.append(f"join {self.name}")
        if self.ctrl_c:
            self.ctrl_c = False
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs before kill returns

    def is_alive(self) -> bool:
        return self.alive


class _Pool:
    def __init__(self, workers: list[_Worker]) -> None:
        self._processes = {k: w for k, w in enumerate(workers)}

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


@pytest.mark.own_process  # its SIGINT stays in a fork (tests/conftest.py)
def test_a_second_ctrl_c_waits_for_the_workers_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signals, "_depth", 0)
    monkeypatch.setattr(signals, "_pending", None)
    signals.install()
    log: list[str] = []
    workers = [_Worker(log, "w0", ctrl_c=True), _Worker(log, "w1", ctrl_c=False)]
    pool: Any = _Pool(workers)
    with pytest.raises(KeyboardInterrupt):  # the stop is kept, raised once they are ended
        executors._terminate(pool)
    assert log == ["terminate w0", "terminate w1", "join w0", "join w1"]
    assert not any(w.is_alive() for w in workers)
