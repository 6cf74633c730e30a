"""A built Pyomo model written as an `.lp` or `.mps` file (`--emit`), with a legend of
indices to names in comment lines: the `ilp` model's and the pipeline ILP's."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ...files import atomic_file

__all__ = ["write_model"]


def write_model(model: Any, path: str, legend: Sequence[str]) -> None:
    """Write the Pyomo `model` to `path` (`.lp` or `.mps`), `legend` first as comments."""
    ext = os.path.splitext(path)[1].lower()
    fmt = ext[1:]  # .lp or .mps: `algorithms.check_emit` refused any other before the work
    with atomic_file(path, suffix=ext) as tmp:  # E622 and E623 as every output
        model.write(tmp, format=fmt, io_options={"symbolic_solver_labels": True})
        with open(tmp, encoding="utf-8") as f:
            text = f.read()
        mark = "\\" if fmt == "lp" else "*"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("".join(f"{mark} {_comment_text(line)}\n" for line in legend))
            f.write(text)


def _comment_text(text: str) -> str:
    """`text` safe inside one comment line of an LP or MPS file: names built in Python may
    hold line breaks, which would end the comment and inject rows."""
    return "".join(c if c >= " " or c == "\t" else f"\\x{ord(c):02x}" for c in text
                   ).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
