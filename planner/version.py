"""planner's version: the one place it is written (the root package re-exports it).

Depends on nothing of ours, so that any layer (the HTML report's `generator` tag, the
CLI's `--version`) can read it without importing the public API in `planner/__init__.py`.
"""

from __future__ import annotations

__version__ = "0.1.0"


def installed_version() -> str:
    """The installed distribution's version, else (a source tree on `sys.path`, not
    installed) `__version__`."""
    from importlib.metadata import PackageNotFoundError, version  # lazy: start-up

    try:
        return version("planner")
    except PackageNotFoundError:
        return __version__
