"""`python -m planner`, and `run`: the `planner` command (pyproject's script).

Ctrl-C ends every command the same way: E607 on stderr, exit 130. So a stop that
arrives while the CLI is still being imported (0.1-1 s) waits for the import to finish
(`signals.deferred`) and ends like the others, in one line instead of a
`KeyboardInterrupt` traceback. The status 130 is then set by `os._exit` (after the
usual flush and `atexit` work, `fastexit`): under `python -m`, a `KeyboardInterrupt`
that once passed through code run by `exec` of a string (dataclasses make their methods
so) leaves a flag in the interpreter that turns the final `sys.exit(130)` into death by
SIGINT (status -2 to a parent).
"""

from __future__ import annotations

from . import signals


def run() -> None:
    """The `planner` command: import the CLI, then run it."""
    signals.install()
    try:
        try:
            with signals.deferred():
                # the CLI is imported under `deferred`: a Ctrl-C meanwhile ends in one line
                from .cli import main
        except KeyboardInterrupt:  # held off until the CLI was imported
            from .cli.guard import interrupted_exit  # imported by now

            interrupted_exit()
        main()
    except SystemExit as stop:
        # lazy: the CLI loaded it (at the top it would load the CLI before `deferred`)
        from .cli.guard import EXIT_INTERRUPTED

        if stop.code == EXIT_INTERRUPTED:
            # lazy: as above
            from .cli import fastexit

            fastexit.finish(stop.code, always=True)
        raise


if __name__ == "__main__":
    run()
