"""A built Pyomo model written as an `.lp` or `.mps` file (`--emit`), with a legend of
indices to names in comment lines: the `ilp` model's and the pipeline ILP's. The `.mps` is
free MPS without an `OBJSENSE` section (both models minimize, MPS's default), so HiGHS, CBC
and GLPK (`glpsol --freemps`) all read it."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from ...files import atomic_file

__all__ = ["write_model"]


#: Pyomo's free MPS section `OBJSENSE` / `MIN`: minimizing is MPS's default, and GLPK
#: (`glpsol --freemps`) cannot read the section ("invalid indicator record"); HiGHS and CBC
#: read the file the same without it. Both models minimize; a `MAX` section would stay.
_MIN_SENSE = re.compile(r"^OBJSENSE[ \t]*\n[ \t]+MIN[ \t]*\n", re.MULTILINE)


def write_model(model: Any, path: str, legend: Sequence[str]) -> None:
    """Write the Pyomo `model` to `path` (`.lp` or `.mps`), `legend` first as comments."""
    ext = os.path.splitext(path)[1].lower()
    fmt = ext[1:]  # .lp or .mps: `algorithms.check_emit` refused any other before the work
    with atomic_file(path, suffix=ext) as tmp:  # E622 and E623 as every output
        model.write(tmp, format=fmt, io_options={"symbolic_solver_labels": True})
        with open(tmp, encoding="utf-8") as f:
            text = f.read()
        if fmt == "mps":
            text = _MIN_SENSE.sub("", text, count=1)
        mark = "\\" if fmt == "lp" else "*"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("".join(f"{mark} {_comment_text(line)}\n" for line in legend))
            f.write(text)


def _comment_text(text: str) -> str:
    """`text` safe inside one comment line of an LP or MPS file: names built in Python may
    hold line breaks, which would end the comment and inject rows."""
    return "".join(c if c >= " " or c == "\t" else f"\\x{ord(c):02x}" for c in text
                   ).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
