"""The options the commands share, and `solve`'s defaults and help (from the registry).

`--limit NAME=VALUE` and `--root FOLDER`, the options of every command that loads specs,
take effect while the command line is parsed (an option callback), before any file
is read, on top of the limits in force as the command starts (for a command run
in-process, its caller's: an open `limits.using` block's; else the defaults, or those a
parent command passed on), reach `compare`'s worker processes with each point
(`compare.executors.Settings`), and end with the command (`reset`, when its context
closes and again when the command group returns, a usage error's included), so one
command's `--limit` or `--root` never leaks into the next one run in the same process.
Ending puts back what was in force before the command (`begin`): a caller's open
`limits.using` block is left as it was.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from .. import algorithms, limits
from ..algorithms import completions, names, taking
from ..algorithms.base import AUTO_TIME_LIMIT_S, EXACT_TIME_LIMIT_S
from ..files import output_path
from ..limits import ROOT_ENV
from ..render.formats import OutputFormat


def _set_limits(ctx: typer.Context, items: list[str] | None) -> list[str] | None:
    ctx.call_on_close(reset)  # they hold for this one command
    try:
        limits.configure(items or [], limits.active())  # the caller's, `using`'s included
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    return items


def _set_root(ctx: typer.Context, folder: Path | None) -> Path | None:
    ctx.call_on_close(reset)
    if folder is not None and not folder.is_dir():
        raise typer.BadParameter(f"`{folder}` is not a folder")
    limits.put_env(ROOT_ENV, None if folder is None else str(folder.resolve()))
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


#: per command running in this process (the outermost first), the limits and `--root` in
#: force before it (a caller's `limits.using` included), which `reset` puts back
_BEFORE: list[tuple[limits.Saved, str | None]] = []


def begin() -> None:
    """Note the limits and root in force as a command starts, for `reset` to put back."""
    _BEFORE.append((limits.saved(), os.environ.get(ROOT_ENV)))


def reset() -> None:
    """Once a command is over (the next may run in this process): the limits and root in
    force before it (`begin`), else the defaults; a caller's open `limits.using` block is
    left as it was, so that it can end (it raised ValueError when the stack was emptied)."""
    if not _BEFORE:
        limits.configure([])
        limits.put_env(ROOT_ENV, None)
        return
    saved, root = _BEFORE[-1]
    limits.restore(saved)
    limits.put_env(ROOT_ENV, root)


def end() -> None:
    """`reset`, as the command that `begin` noted ends."""
    reset()
    if _BEFORE:
        _BEFORE.pop()


#: a PyTorch model's example inputs, as `import torch` traced it and `export torch` traces
#: it again
InputOption = Annotated[list[str] | None, typer.Option(
    "--input", help="An example input SHAPE[:DTYPE], e.g. 8x16 or 2x10:int64 (repeatable, in "
    "forward()'s order).")]
ExampleOption = Annotated[str | None, typer.Option(
    "--example", help="A Python expression giving the example input(s), with `torch` and the "
    "model's module in scope.")]
#: how `import torch` captured a model, and how `export torch` captures it again
CaptureOption = Annotated[str, typer.Option(
    "--capture", help="How to capture the model: auto (torch.export, else torch.fx) | export "
    "| fx.")]
#: the spec file and plan of the commands that run one plan (`simulate`, `solve`)
SpecArgument = Annotated[Path, typer.Argument(help="The spec file.")]
PlanOption = Annotated[str | None, typer.Option(
    "--plan", help="Plan name (needed when the spec has several).")]
#: simulate's: a placement file names its plan
SimulatePlanOption = Annotated[str | None, typer.Option(
    "--plan", help="Plan name (needed when the spec has several, unless the --placement "
    "or --stages file names one).")]
TraceOption = Annotated[Path | None, typer.Option(
    "--trace", parser=output_path,
    help="Write the schedule as a Chrome/Perfetto trace (JSON; open in "
    "ui.perfetto.dev).")]
FormatOption = Annotated[OutputFormat | None, typer.Option(
    "--format", "--output-format", case_sensitive=False, show_default=False,
    help="Output: text (for people), json (the envelope), github (Actions annotations) or "
         "sarif (code scanning); --json is --format json.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
#: how `simulate` and `solve` print their report on stdout: the hint where `-` is an output
JSON_STDOUT = "--json prints the report on standard output"
#: `--json` of the commands whose result is their diagnostics (`check`, `fmt`)
DiagnosticsJsonOption = Annotated[bool, typer.Option(
    "--json", help="Print one JSON document on stdout (the diagnostics in its envelope).")]

#: `solve`'s algorithm when `--algo` is not given
DEFAULT_ALGO = "auto"


def _and(items: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _only(items: Sequence[str]) -> str:
    """`a only`, `a, b`."""
    return items[0] + " only" if len(items) == 1 else ", ".join(items)


def complete_algo(incomplete: str) -> list[tuple[str, str]]:
    """`--algo`'s shell completion: the registered names, with their summaries."""
    return completions(incomplete)


#: `solve`'s option help, generated from the algorithm registry (`AlgorithmInfo.options`)
HELP_ALGO = "Algorithm: " + ", ".join(names()) + "."
HELP_TIME_LIMIT = (
    f"Seconds of planning ({', '.join(taking('time_limit_s'))}): their heuristics, model "
    "build and search; not the one-time imports and kernel loads before them. Default "
    f"{AUTO_TIME_LIMIT_S:g} for {DEFAULT_ALGO}, {EXACT_TIME_LIMIT_S:g} "
    f"for {_and([a for a in taking('time_limit_s') if a != DEFAULT_ALGO])}. 0 runs no "
    f"search and no solver: {DEFAULT_ALGO} its heuristics alone (under objective pipeline "
    "pipedp's splits, hybrid and the uniform split, none of its own cut moves), search its "
    "fewest moves (under objective pipeline auto's plan at 0, unmoved), pipeilp, cpsat and "
    "ilp their warm start (`fallback`). The other algorithms take no limit.")
HELP_GAP = ("Stop exact solvers at this relative gap, in the solver's own measure "
             f"({', '.join(taking('gap'))}). [default: 1e-06]")
HELP_SOLVER = (f"ILP back-end ({_only(taking('solver'))}): highs, cbc, glpk, or any Pyomo "
                "solver name. [default: highs]")


def _help_emit() -> str:
    """`--emit`'s help: each model file format, with the algorithms that write it."""
    writers: dict[tuple[str, ...], list[str]] = {}
    for name in taking("emit"):
        writers.setdefault(algorithms.get(name).emits, []).append(name)
    return "Write the exact model: " + "; ".join(
        f"{' or '.join(ends)} ({', '.join(algos)})" for ends, algos in writers.items()) + "."


HELP_EMIT = _help_emit()
HELP_SEED = f"Seed for --algo {_and(sorted(taking('seed')))}."  # alphabetical, as it read
