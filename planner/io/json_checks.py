"""Type checks of decoded JSON for the importers: each reports the value's JSON path and,
where the text shows it, its line and column (E922), and collects the errors in one sink so
that a file's every mistake is reported at once."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import DiagnosticSink, JsonSpans, Span, did_you_mean
from ..spec.names import name_problem
from ..units import DIM_WORDS, range_side, range_text

__all__ = ["JsonChecker", "path_steps"]

#: one step of a path as messages show it: `[2]`, or a key after a dot (or first)
_STEP = re.compile(r"\[(\d+)\]|\.?([^.\[]+)")


def path_steps(path: str) -> list[str | int]:
    """`edges[2].bytes` as `["edges", 2, "bytes"]`, for `strictjson.Locator`."""
    return [int(index) if index else key for index, key in _STEP.findall(path)]


def _join(path: str, key: str) -> str:
    """The path of `key` in the object at `path` (`ops[2].name`; `name` at the top)."""
    return f"{path}.{key}" if path else key


def _fits(value: Any, integer: bool, positive: bool) -> bool:
    """Whether `value` is a number (not a bool; a whole one if `integer`) >= 0, > 0 if
    `positive`, and not NaN."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok and integer:
        ok = isinstance(value, int) or float(value).is_integer()
    return ok and not (value < 0 or (positive and value == 0) or math.isnan(value))


@dataclass(eq=False)
class JsonChecker:
    """Type checks of decoded JSON that report the path and, where it can, the line."""

    file: str
    text: str
    #: the format's name and version, as messages name it (`planner-graph v1`)
    fmt: str
    sink: DiagnosticSink = field(default_factory=DiagnosticSink, init=False)

    def __post_init__(self) -> None:
        self.spans = JsonSpans(self.file, self.text, (), self.sink)

    def at(self, path: str, needle: str | None = None) -> Span:
        """Where the value at JSON `path` (`edges[2].bytes`, as messages show it) is in the
        text; in an object or a list, the first `needle` inside it (`JsonSpans`). A path
        past what the file holds (a missing key) stops at the deepest value it does hold."""
        return self.spans(*path_steps(path), inside=needle)

    def error(self, path: str, message: str, near: str | None = None, *hints: str) -> None:
        """Record an error about the value at JSON `path`."""
        self.sink.error("E922", f"`{path}` {message}", self.at(path, near), *hints)

    def keys(self, obj: Mapping[str, Any], allowed: tuple[str, ...], path: str) -> None:
        """Report keys the format does not define (typos such as `tiem_s`), each at the key
        in the object at `path`."""
        for key in obj:
            if key not in allowed:
                shown = _join(path, key)
                name = json.dumps(key, ensure_ascii=False)
                self.sink.error("E922", f"`{shown}` is not a field of {self.fmt}",
                                self.at(path, name),
                                *did_you_mean(key, allowed), "fields: " + ", ".join(allowed))

    def number(self, obj: Mapping[str, Any], key: str, path: str, near: str | None,
               required: bool = False, integer: bool = False,
               positive: bool = False, dim: str | None = None) -> Any:
        """`obj[key]` if it is a finite number >= 0 (> 0 if `positive`), with `dim` one in
        the range the spec gives that dimension (`units.range_side`: the spec made from the
        file must load), else report; None if absent."""
        value, at = obj.get(key), _join(path, key)
        if value is None:
            if required:
                self.error(at, "is required", near)
            return None
        if isinstance(value, float) and math.isinf(value):
            self.error(at, "is not finite (or too large for a 64-bit float)", near)
            return None
        if not _fits(value, integer, positive):
            what = "an integer" if integer else "a number"
            self.error(at, f"must be {what} {'> 0' if positive else '>= 0'}, "
                       f"not {json.dumps(value)}", near)
            return None
        side = None if dim is None else range_side(value, dim, positive)
        if dim is not None and side is not None:
            self.error(at, f"{json.dumps(value)} is {side} the valid range of a "
                       f"{DIM_WORDS[dim]}", near, f"a {DIM_WORDS[dim]} is {range_text(dim)}")
            return None
        return int(value) if integer else float(value)

    def string(self, obj: Mapping[str, Any], key: str, path: str, near: str | None,
               required: bool = True, name: bool = False) -> str | None:
        """`obj[key]` if it is a non-empty string (with `name`, one the spec takes as a
        name: `names.name_problem`), else report (None if absent, optional)."""
        value, at = obj.get(key), _join(path, key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value:
            self.error(at, "must be a non-empty string"
                       if value is not None else "is required", near)
            return None
        return value if not name or self.name(at, value, near) else None

    def name(self, path: str, text: str, near: str | None) -> bool:
        """Whether `text`, the string at JSON `path`, may be a name in a spec (E261, E262,
        E264 there: no control or bidi character, NFKC, one script); reported if not."""
        problem = name_problem(text)
        if problem is not None:
            message, hints = problem
            self.error(path, f"is not a valid name: {message}", near, *hints)
        return problem is None

    def items(self, obj: Mapping[str, Any], key: str, required: bool = True) -> list[Any]:
        """`obj[key]` if it is a list (of objects), else report."""
        value = obj.get(key)
        if value is None and not required:
            return []
        if not isinstance(value, list):
            self.error(key, "must be a list" if value is not None else "is required",
                       f'"{key}"')
            return []
        return value

    def named(self, obj: Mapping[str, Any], key: str, path: str, fields: tuple[str, ...],
              what: str) -> Iterator[tuple[str, dict[str, Any], str, str]]:
        """Each object of the list `obj[key]` with a name not seen before, as (its path,
        itself, its name, the name quoted as JSON); reports the others."""
        seen: set[str] = set()
        for k, raw in enumerate(self.items(obj, key)):
            at = f"{path}[{k}]"
            if not isinstance(raw, dict):
                self.error(at, "must be an object", None)
                continue
            name = self.string(raw, "name", at, None, name=True)
            if name is None:
                continue
            near = json.dumps(name, ensure_ascii=False)
            self.keys(raw, fields, at)
            if name in seen:
                self.error(at, f"repeats the {what} name {near}", near)
                continue
            seen.add(name)
            yield at, raw, name, near
