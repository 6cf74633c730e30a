"""Options of `import` and `generate` that mean nothing without another: a warning (W927).

`--optimizer sgd` without `--training` makes a forward-only spec with no optimizer state,
`--times-kind gpu` without `--times` lays no time over the estimates, and `import torch`'s
`--kind`, `--warmup`, `--repeat` and `--threads` without `--measure` time nothing; the spec
is made as before, but the user, who asked for something it lacks, is told on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import typer

from ..errors import Diagnostic, Severity, render_all

#: an option -> the option without which it means nothing, and is ignored
NEEDS = {"optimizer": "training", "times_kind": "times", "kind": "measure",
         "warmup": "measure", "repeat": "measure", "threads": "measure"}

#: what each option of `NEEDS`' values makes, for W927's message
WHAT = {"training": "the backward ops and optimizer state that --training adds",
        "times": "the measured times that --times lays over the estimates",
        "measure": "the op times that --measure takes"}

#: the name of the parameter by which typer passes a command that takes `SpecOptions` its
#: context (`io_commands._with_spec_options` declares it)
CONTEXT = "spec_options_context"


def warn_ignored(ctx: typer.Context, values: Mapping[str, object]) -> None:
    """Write W927 to stderr for each option of `values` (name -> value, of the command run
    in `ctx`) that the command line gave without the one it needs."""
    for warning in ignored(values, explicit(ctx, values)):
        sys.stderr.write(render_all([warning]) + "\n")


def explicit(ctx: typer.Context, values: Mapping[str, object]) -> set[str]:
    """The options of `values` the command line gave, a default given explicitly included
    (`--optimizer adam` without `--training` is as void as `--optimizer sgd`)."""
    return {name for name in values
            if (source := ctx.get_parameter_source(name)) is not None
            and source.name in ("COMMANDLINE", "ENVIRONMENT")}


def in_effect(values: Mapping[str, object]) -> dict[str, object]:
    """`values` less the options ignored for want of the one they need (`NEEDS`), that
    option being in `values` and off: what a spec's header records as the command that
    made it (an ignored option made nothing of it)."""
    return {name: value for name, value in values.items()
            if not (name in NEEDS and NEEDS[name] in values and not values[NEEDS[name]])}


def ignored(values: Mapping[str, object], given: set[str]) -> list[Diagnostic]:
    """W927 for each option in `given` whose needed option (`NEEDS`), an option of the same
    command (in `values`), is off."""
    out = []
    for name, needed in NEEDS.items():
        if name in given and needed in values and not values.get(needed):
            flag, need = (f"--{n.replace('_', '-')}" for n in (name, needed))
            out.append(Diagnostic(
                "W927", f"{flag} {values[name]} is ignored without {need}: it applies only "
                f"to {WHAT[needed]}", None, (f"add {need}, or leave out {flag}",),
                severity=Severity.WARNING))
    return out
