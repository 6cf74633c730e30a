"""Text -> syntax tree, with spans taken from tokens and every error as a Diagnostic.

The Lark LALR parser (`larkparse.py`, imported only when needed) is built once per process
and builds the tree inline (Lark's `transformer=` option): no intermediate parse tree, no
`propagate_positions`, which is about 3x cheaper on big specs. `lark-cython` is used when
installed (the `fast` extra) unless `PLANNER_NO_CYTHON=1`. The parse step raises only
`SpecError`, never a domain error from inside a callback.

Even so, Lark's Python lexer alone needs ~3 us per token, too slow for 100,000-op specs.
So `parse` first tries the fast path (`fastparse.py`), which builds the very same tree or
gives up, and Lark then parses the text, so Lark alone decides every error message.
`PLANNER_PARSER=lark` skips the fast path (for benchmarks and the tests that compare the
two).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import ast
from .fastparse import _fast_parse
from .lex import line_ends


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building a big acyclic structure.

    A tree of 10,000 ops is ~500,000 objects; every 700 allocations the collector would
    traverse the young ones, and the old generations ever more often as they grow: ~40%
    of the parse time. Nothing built here forms a cycle, so nothing is missed.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def __getattr__(name: str) -> Any:
    """`parse_lark` and `_parser` live in `larkparse` (imported on first use)."""
    if name in ("parse_lark", "_parser"):
        from . import larkparse  # lazy: start-up (it loads Lark)

        return getattr(larkparse, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse(text: str, file: str = "<string>") -> ast.Module:
    """Parse `text` (the contents of `file`) into a syntax tree.

    Raises `SpecError` with one diagnostic (the first syntax error) on bad input.
    """
    text = line_ends(text)
    with paused_gc():
        if os.environ.get("PLANNER_PARSER", "") != "lark":
            module = _fast_parse(text, file)
            if module is not None:
                return module
        from .larkparse import parse_lark  # lazy: start-up (most texts never need it)

        return parse_lark(text, file)
