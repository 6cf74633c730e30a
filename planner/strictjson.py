"""Strict JSON out: every JSON document planner writes parses with a strict parser.

Python's `json` writes `NaN`, `Infinity` and `-Infinity` by default, which JSON does not
have (RFC 8259) and strict parsers reject. Here a non-finite float becomes `null` (its
documented meaning: "no finite value": a time that never happens, a ratio or gap that
is not proved), and `allow_nan=False` makes any one missed a loud error, not bad output.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(obj: object) -> object:
    """`obj` with every non-finite float (at any depth) replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def dumps(obj: Any, **kwargs: Any) -> str:
    """`json.dumps` of `finite(obj)`, refusing NaN and infinities (`allow_nan=False`)."""
    kwargs.setdefault("ensure_ascii", False)
    return json.dumps(finite(obj), allow_nan=False, **kwargs)
