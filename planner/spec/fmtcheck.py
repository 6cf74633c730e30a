"""`fmt`'s check that the canonical layout reads as its input did (E109).

The layout drops every `;`. In a valid spec that changes nothing, but two statements that
are not valid where they stand (an unknown attribute named by a keyword, `x pin; to d7` in
a plan) may parse apart only with the `;` between them: without it the output no longer
parsed, and exit 0 had said the file was formatted. So where the input holds a `;`, the
output is parsed again and compared with the input's tree, spans aside; where they differ,
nothing is written and E109 points at the `;`.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..errors import Diagnostic, Span, SpecError
from . import ast
from .parse import parse

#: on one line: a quoted name (to its closing quote, else the line's end), a comment, a `;`
_QUOTED_COMMENT_OR_SEMICOLON = re.compile(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*|;')


def check_same_reading(text: str, file: str, module: ast.Module, out: str) -> None:
    """Raise `SpecError` (E109) where `out`, `text` laid out canonically, does not parse to
    `module`'s tree (`text`'s); nothing where `text` has no `;` to drop."""
    if ";" not in text:
        return
    try:
        again: tuple[Any, ...] | None = parse(out, file).items
    except SpecError:
        again = None
    items = module.items
    if again is not None and _shape(again) == _shape(items):
        return
    differs = next((item for k, item in enumerate(items) if again is None
                    or k >= len(again) or _shape(item) != _shape(again[k])), None)
    at = _semicolon(text, differs.span if differs is not None else None)
    raise SpecError(Diagnostic(
        "E109", "`fmt` would drop this `;`, and without it the statements around it read "
        "otherwise", _span_at(text, file, at),
        ("they are not valid as written (`planner check` says why): fix them, then run fmt "
         "again",)))


#: what the layout may change and the tree records: where, and whether a name was quoted
#: (`"gpu0"` is printed bare)
_LAYOUT_FIELDS = frozenset({"span", "quoted"})


def _shape(node: Any) -> Any:
    """A syntax tree without what the layout may change (`_LAYOUT_FIELDS`): what two
    parses of one spec share."""
    if isinstance(node, Span):
        return "span"
    if isinstance(node, tuple):
        return tuple(map(_shape, node))
    if dataclasses.is_dataclass(node):
        return (type(node).__name__, *(_shape(getattr(node, f.name))
                                       for f in dataclasses.fields(node)
                                       if f.name not in _LAYOUT_FIELDS))
    return node


def _semicolon(text: str, within: Span | None) -> int:
    """The offset of the first `;` outside names and comments, in `within` when given and
    it holds one, else in the whole text."""
    def first(lo: int, hi: int) -> int | None:
        return next((m.start() for m in _QUOTED_COMMENT_OR_SEMICOLON.finditer(text, lo, hi)
                     if m.group() == ";"), None)

    found = first(within.start, within.end) if within is not None else None
    return found if found is not None else first(0, len(text)) or 0


def _span_at(text: str, file: str, offset: int) -> Span:
    """The one character at `offset` of `text`."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Span(file, line, column, line, column + 1, offset, offset + 1)
