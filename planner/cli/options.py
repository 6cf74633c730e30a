"""`--limit NAME=VALUE` and `--root FOLDER`: the options of every command that loads specs.

Both take effect while the command line is parsed (an option callback), before any file
is read, reach `compare`'s worker processes through the environment (`PLANNER_LIMITS`,
`PLANNER_ROOT`), and end with the command (`reset`), so one command's `--limit` or
`--root` never leaks into the next one run in the same process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from .. import limits
from ..limits import ROOT_ENV


def _set_limits(ctx: typer.Context, items: list[str] | None) -> list[str] | None:
    ctx.call_on_close(reset)  # they hold for this one command
    try:
        limits.configure(items or [])
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    return items


def _set_root(ctx: typer.Context, folder: Path | None) -> Path | None:
    ctx.call_on_close(reset)
    if folder is None:
        os.environ.pop(ROOT_ENV, None)
    elif not folder.is_dir():
        raise typer.BadParameter(f"`{folder}` is not a folder")
    else:
        os.environ[ROOT_ENV] = str(folder.resolve())
    return folder


_LIMIT_HELP = ("Raise a limit, NAME=VALUE (repeatable; VALUE a whole number, 1 to 1e15): "
               + ", ".join(f"{k} ({getattr(limits.DEFAULTS, k):_})"
                           for k in limits.DESCRIPTIONS) + ".")

LimitOption = Annotated[list[str] | None, typer.Option(
    "--limit", metavar="NAME=VALUE", help=_LIMIT_HELP, callback=_set_limits,
    show_default=False)]
RootOption = Annotated[Path | None, typer.Option(
    "--root", help="Imports (and symlinked specs) must stay inside this folder; default: "
    "the repository (the nearest folder with .git) holding each spec, else its folder.",
    callback=_set_root, show_default=False)]


def reset() -> None:
    """The defaults again, once a command is over (the next may run in this process)."""
    limits.configure([])
    os.environ.pop(ROOT_ENV, None)
