"""planner: declarative model-parallel placement.

Public API:

- `load(path)` / `loads(text)`: parse and lower a `.plan` spec into a `Spec`.
- `Spec.plan(name)`: the `Problem` of one plan.
"""

from __future__ import annotations

import os

from .errors import Diagnostic, PlannerError, SpecError
from .model import Cluster, Device, Edge, Graph, Link, Op, Problem, Spec

__all__ = [
    "Cluster", "Device", "Diagnostic", "Edge", "Graph", "Link", "Op", "PlannerError",
    "Problem", "Spec", "SpecError", "load", "loads",
]
__version__ = "0.1.0"


def load(path: str | os.PathLike[str]) -> Spec:
    """Load a spec file (and its imports). Raises `SpecError` with diagnostics."""
    from .spec.load import load_path

    return load_path(path).spec


def loads(text: str, file: str = "<string>", base: str | os.PathLike[str] = ".") -> Spec:
    """Load spec text; imports are relative to `base`. Raises `SpecError`."""
    from .spec.load import load_text

    return load_text(text, file, base).spec
