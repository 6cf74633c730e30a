"""Generated Python that names cannot rewrite: one-pass templates, literals, a compile check.

A script planner writes (`planner export torch --pipeline --code`) is a template whose
placeholders (`__NAME__`: capitals between double underscores) are filled by `fill` in
**one pass**: every placeholder is found in the template once, and the text put in its
place is never searched again, so a name that holds another placeholder (a device called
`__FROM__0`) stays the text it is. What fills a placeholder in code is a Python literal
(`literal`: `repr` of a str, int, float, bool, None, or a list, tuple or dict of them,
checked to read back equal); what fills a docstring is `docstring_text` (escaped so that it
cannot end the string). `fill` then compiles the result (`compiled`, which also checks the
forward() source torch.fx writes for `export torch --code`): a template or a value that
would make it anything but valid Python is a bug of planner's, raised as
`GeneratedCodeError` before a file is written.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

__all__ = ["GeneratedCodeError", "compiled", "docstring_text", "fill", "literal"]

#: a placeholder of a template: `__TARGET__`, `__SPLIT_SPEC__` (never `__name__`)
PLACEHOLDER = re.compile(r"__[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*__")


class GeneratedCodeError(RuntimeError):
    """Planner built a script that is not what its template says (a bug, never the input's
    fault: every name reaches the script as a literal)."""


def literal(value: object) -> str:
    """`repr(value)`, checked to be a Python literal that reads back as `value`."""
    text = repr(value)
    try:
        back = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as err:
        raise GeneratedCodeError(f"{type(value).__name__} value is no Python literal: "
                                 f"{text[:80]!r}") from err
    if back != value:
        raise GeneratedCodeError(f"{text[:80]!r} does not read back as the value it shows")
    return text


def docstring_text(text: str) -> str:
    """`text` inside a `\"\"\"` docstring: ASCII, every backslash, quote and control
    character escaped (so that it cannot end the string or begin an escape)."""
    return text.encode("unicode_escape").decode("ascii").replace('"', '\\"')


def fill(template: str, values: Mapping[str, str], name: str = "<generated>") -> str:
    """`template` with each placeholder replaced by `values[placeholder]`, in one pass (no
    value is searched for placeholders), then compiled as Python (`name` for its errors).

    Raises GeneratedCodeError when the template and `values` name different placeholders,
    or when the result does not compile.
    """
    wanted = set(PLACEHOLDER.findall(template))
    if wanted != set(values):
        missing = sorted(wanted - set(values))
        extra = sorted(set(values) - wanted)
        raise GeneratedCodeError(f"template placeholders and values differ: missing {missing}"
                                 f", unused {extra}")
    return compiled(PLACEHOLDER.sub(lambda m: values[m.group(0)], template), name)


def compiled(text: str, name: str = "<generated>") -> str:
    """`text`, once it compiles as Python (GeneratedCodeError when it does not)."""
    try:
        compile(text, name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as err:
        raise GeneratedCodeError(f"the generated {name} does not compile: {err}") from err
    return text
