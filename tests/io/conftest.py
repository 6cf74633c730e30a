"""Hooks of the io tests."""

from __future__ import annotations

import sys


def pytest_sessionfinish() -> None:
    """End this process's pipeline runner (torch_support.py), if a test started one, and
    wait for it: a test process of pytest-xdist may end without running `atexit`, and the
    runner would end after it, its processes' time counted nowhere."""
    support = sys.modules.get("torch_support")
    if support is not None:
        support.close_runner()
