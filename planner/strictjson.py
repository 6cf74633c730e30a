"""Strict JSON, out and in: every JSON document planner writes parses with a strict
parser, and every JSON document it reads is read by `loads`, whose every complaint is a
located `json.JSONDecodeError`.

Python's `json` writes `NaN`, `Infinity` and `-Infinity` by default, which JSON does not
have (RFC 8259) and strict parsers reject. Here a non-finite float becomes `null` (its
documented meaning: "no finite value": a time that never happens, a ratio or gap that
is not proved), and `allow_nan=False` makes any one missed a loud error, not bad output.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Sequence
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


# ---- in ---------------------------------------------------------------------------------

#: a byte order mark, which some editors write at a file's start
_BOM = "\ufeff"
_BLANK = re.compile(r"[ \t\n\r]*")
#: what the readers below look for: a string's opening quote, a bracket, or a number
#: (JSON's grammar, as `json.scanner` reads it: an integer part, a fraction, an exponent)
_TOKEN = re.compile(r'["{}\[\]]|(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?')
_PLAIN = json.JSONDecoder()
#: what may hold a number beyond a double's range (1.8e308), or one not 0 that reads as 0: a
#: run of 100 digits or an exponent of 3 digits; below both, a number is within 1e±198
_FAR = re.compile(r"[0-9]{100}|[eE][-+]?[0-9]{3}")


class _Duplicate(Exception):
    """An object with a key given twice (found; `_duplicate` says where)."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Duplicate
    return obj


def _int_or_infinity(digits: str) -> int | float:
    """An integer as `json` reads it, or an infinity beyond a double's range, as `json`
    reads `1e400`: every reader then refuses it as it refuses that (before, an OverflowError
    where one converted it)."""
    value = int(digits)
    try:
        float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf
    return value


_UNIQUE = json.JSONDecoder(object_pairs_hook=_unique)
_WIDE = json.JSONDecoder(object_pairs_hook=_unique, parse_int=_int_or_infinity)


def loads(text: str) -> Any:
    """Parse JSON input (a placement or plan file, an importer's input), strictly: every
    problem is a `json.JSONDecodeError` at its place, which each reader reports with its
    own code (E500 for a placement file, ...), never another exception:

    - a key given twice in one object (RFC 8259: names SHOULD be unique; `json.loads`
      keeps the last one silently) names the key and both places (not the values: a file
      given by mistake may hold secrets);
    - an integer longer than Python converts (`sys.get_int_max_str_digits()`, 4,300
      digits; `json.loads` raises a bare ValueError) is "number too long";
    - nesting deeper than the parser's recursion (a RecursionError) is "nested too deeply";
    - an integer beyond a double's range (310 digits) reads as an infinity, as `1e400` does
      (each reader refuses both as a number that is not finite);
    - a number that is not 0 yet reads as 0 (`1e-400`) is "number too small" (RFC 8259 lets
      a reader limit numbers' range; read as 0, a reader could not tell it from `0`).

    A leading byte order mark is skipped; lines and columns are those of the text after
    it. Valid input costs one pass of the C parser and a `dict` per object.
    """
    doc = text.removeprefix(_BOM)
    try:
        data = _UNIQUE.decode(doc)
    except json.JSONDecodeError:
        raise
    except _Duplicate:
        raise _duplicate(doc) from None
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", doc, 0) from None
    except ValueError:  # an integer too long to convert (the only other ValueError)
        raise _too_long(doc) from None
    if "\\u" in doc and (half := _LONE_SURROGATE.search(doc)) is not None:
        raise json.JSONDecodeError(
            f"a lone surrogate `{half.group(1)}` in a string (half of a character: no text "
            "holds it)", doc, half.start(1))
    if _FAR.search(doc) is not None:  # a number beyond a double, perhaps (rare: a 2nd pass)
        if (small := _too_small(doc)) is not None:
            raise small
        data = _WIDE.decode(doc)
    return data


def _too_small(doc: str) -> json.JSONDecodeError | None:
    """The first number of `doc` (valid JSON) that is not 0 and reads as 0."""
    pos = 0
    while (m := _TOKEN.search(doc, pos)) is not None:
        pos = m.end()
        if m.group() == '"':
            pos = _PLAIN.raw_decode(doc, m.start())[1]
        elif (m.group(1) is not None and float(m.group()) == 0
              and (m.group(1) + (m.group(2) or "")).strip("-0.")):
            number = m.group() if len(m.group()) <= 30 else f"{m.group()[:29]}…"
            return json.JSONDecodeError(f"number too small: `{number}` is not 0 yet reads "
                                        "as 0 (a double holds down to 5e-324)", doc, m.start())
    return None


#: a `\uD800`-`\uDFFF` escape that is not half of a pair (a high one followed by a low
#: one), its backslash not itself escaped: `json.loads` reads it into a str that no
#: output can encode (a report under `--json` ended in a UnicodeEncodeError traceback)
_LONE_SURROGATE = re.compile(
    r"(?<!\\)(?:\\\\)*(\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})")


def _duplicate(doc: str) -> json.JSONDecodeError:
    """The first key, in document order, given twice in one object of `doc` (valid JSON,
    so every string and bracket is where the grammar puts it), at its second place."""
    keys: list[dict[str, int] | None] = []  # per open bracket: an object's keys, or None
    pos = 0
    while (m := _TOKEN.search(doc, pos)) is not None:
        c, pos = m.group(), m.end()
        if c == '"':
            key, pos = _PLAIN.raw_decode(doc, m.start())
            colon = _skip(doc, pos)
            seen = keys[-1] if keys else None
            if seen is None or not doc.startswith(":", colon):
                continue  # a value, not a key
            if key in seen:  # where, not what: the values may be a secret's
                line, column = line_column(doc, seen[key])
                return json.JSONDecodeError(
                    f"key {_short(key)} is given twice in one object: first at line {line}, "
                    f"column {column}", doc, m.start())
            seen[key] = m.start()
        elif c == "{" or c == "[":
            keys.append({} if c == "{" else None)
        elif (c == "}" or c == "]") and keys:  # else a number
            keys.pop()
    return json.JSONDecodeError("a key is given twice in one object", doc, 0)


def _too_long(doc: str) -> json.JSONDecodeError:
    """The first integer of `doc` with more digits than Python converts to an `int`."""
    most = sys.get_int_max_str_digits()
    pos = 0
    while most and (m := _TOKEN.search(doc, pos)) is not None:
        pos = m.end()
        if m.group() == '"':
            pos = _PLAIN.raw_decode(doc, m.start())[1]
        elif m.group(1) is not None and m.group(2) is None and m.group(3) is None:
            digits = len(m.group(1).lstrip("-"))
            if digits > most:
                return json.JSONDecodeError(f"number too long: an integer of {digits:,} "
                                            f"digits (at most {most:,})", doc, m.start())
    return json.JSONDecodeError("number too long", doc, 0)


def _skip(doc: str, pos: int) -> int:
    """`pos` past the blanks there."""
    m = _BLANK.match(doc, pos)
    return m.end() if m else pos


def _short(value: Any) -> str:
    """A value from the input as a message shows it: JSON, a string's control characters
    escaped, cut at 40 characters; a list or an object by its size."""
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, dict):
        return f"an object of {len(value)} key(s)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else f"{text[:39]}…"


class Locator:
    """Where the value at a path (object keys and list indices from the top) is in `text`,
    valid JSON as `loads` read it: its start and end offsets in the text after a byte order
    mark; an object or a list ends after its opening bracket. A step that does not exist
    stops at the deepest value found (the document itself for none).

    Read only when a reader reports a problem: each container on a path has its members'
    offsets found once (one pass of the C parser over them), so a hundred reports about the
    end of a 100,000-entry list cost one pass over the list, not a hundred."""

    def __init__(self, text: str) -> None:
        self.doc = text.removeprefix(_BOM)
        self._members: dict[int, dict[str | int, int]] = {}

    def __call__(self, path: Sequence[str | int]) -> tuple[int, int]:
        doc = self.doc
        pos = _skip(doc, 0)
        for step in path:
            members = self._members.get(pos)
            if members is None:
                members = self._members[pos] = _members(doc, pos)
            found = members.get(step)
            if found is None:
                break
            pos = found
        if doc.startswith(("{", "["), pos):
            return pos, pos + 1
        try:
            return pos, _PLAIN.raw_decode(doc, pos)[1]
        except (json.JSONDecodeError, RecursionError):
            return pos, pos + 1


    def key(self, path: Sequence[str | int]) -> tuple[int, int] | None:
        """Where the key of the member at `path` (its last step, a key of the object at
        the rest) is: its quotes included; None where the object has no such key."""
        start, _ = self(path[:-1])
        if not self.doc.startswith("{", start):
            return None
        pos = _skip(self.doc, start + 1)
        while self.doc.startswith('"', pos):
            key, end = _PLAIN.raw_decode(self.doc, pos)
            if key == path[-1]:
                return pos, end
            pos = _next(self.doc, _skip(self.doc, _skip(self.doc, end) + 1))
        return None


def _members(doc: str, pos: int) -> dict[str | int, int]:
    """The offsets of the members of the object (by key) or list (by index) at `pos`."""
    found: dict[str | int, int] = {}
    if doc.startswith("{", pos):
        pos = _skip(doc, pos + 1)
        while doc.startswith('"', pos):
            key, pos = _PLAIN.raw_decode(doc, pos)
            pos = _skip(doc, _skip(doc, pos) + 1)  # past the colon
            found[key] = pos  # keys are unique: `loads` refuses a key given twice
            pos = _next(doc, pos)
    elif doc.startswith("[", pos):
        pos = _skip(doc, pos + 1)
        while pos < len(doc) and not doc.startswith("]", pos):
            found[len(found)] = pos
            pos = _next(doc, pos)
    return found


def _next(doc: str, pos: int) -> int:
    """Past the value at `pos` and the comma after it, at the next member (or the
    closing bracket)."""
    pos = _skip(doc, _PLAIN.raw_decode(doc, pos)[1])
    return _skip(doc, pos + 1) if doc.startswith(",", pos) else pos


def line_column(text: str, pos: int) -> tuple[int, int]:
    """The 1-based line and column of offset `pos` of `text` (after a byte order mark),
    where `\r\n`, a lone `\r` and `\n` each end a line, as the excerpts' lines are split
    (`spec.lex.line_ends`; before, a file of lone `\r` put everything on line 1)."""
    doc = text.removeprefix(_BOM)
    # at the `\n` of a `\r\n`, the line its `\r` ends: as though at the `\r`
    end = pos - 1 if pos > 0 and doc.startswith("\r\n", pos - 1) else pos
    breaks = doc.count("\n", 0, end) + doc.count("\r", 0, end) - doc.count("\r\n", 0, end)
    start = max(doc.rfind("\n", 0, end), doc.rfind("\r", 0, end)) + 1
    return breaks + 1, pos - start + 1
