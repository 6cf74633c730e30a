"""A block's attributes read into base units: unknown keys, duplicates, units and
ranges, every mistake reported with its span and a hint.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Iterable, Sequence

from ...errors import DiagnosticSink, did_you_mean
from ...units import (
    DIM_WORDS,
    EXAMPLES,
    NON_FINITE,
    RANGES,
    UNIT_TABLE,
    parse_number,
    range_side,
    range_text,
    underflows,
    whole_bytes,
)
from .. import ast

#: the most names a hint lists
LISTED = 8

#: the codes of a quantity's value (no unit, a name, the wrong unit, above or below its
#: range): their message names the value, not whose it is (an importer adds whose)
QUANTITY_CODES = frozenset({"E220", "E221", "E222", "E223", "E260"})


def hints(sink: DiagnosticSink, name: str, candidates: Iterable[str]) -> tuple[str, ...]:
    """`did_you_mean`, unless the sink is full: past the diagnostics limit every report is
    only counted, and a hint costs a pass over every candidate."""
    return () if sink.full else did_you_mean(name, candidates)


def device_hints(sink: DiagnosticSink, name: str, devices: Collection[str], cluster: str
                 ) -> tuple[str, ...]:
    """`hints` for an unknown device, else the cluster's devices (the first `LISTED`):
    `d9` is not close to `d0` by spelling, and a cluster's names are few to read."""
    if sink.full:
        return ()
    close = did_you_mean(name, devices)
    if close or not devices:
        return close
    shown = ", ".join(f"`{d}`" for d in itertools.islice(devices, LISTED))
    more = f" and {len(devices) - LISTED} more" if len(devices) > LISTED else ""
    noun = "device" if len(devices) == 1 else "devices"
    return (f"cluster `{cluster}` has the {noun} {shown}{more}",)


class Attrs:
    """Reads a block's attributes: unknown keys, duplicates, dimensions, all reported."""

    def __init__(self, sink: DiagnosticSink, attrs: Sequence[ast.Attr],
                 allowed: dict[str, str], what: str, selectable: frozenset[str] = frozenset()):
        self.sink = sink
        self.values: dict[str, ast.Attr] = {}
        self.selected: dict[str, dict[str, tuple[ast.Attr, ast.Name]]] = {}
        self.what = what
        #: an attribute was rejected (unknown key, misplaced selector): a required one that
        #: seems missing is then most likely that one, misspelt; `missing` stays quiet
        self.rejected = False
        for a in attrs:
            if a.key not in allowed:
                sink.error("E210", f"unknown attribute `{a.key}` in {what}", a.span,
                           *did_you_mean(a.key, allowed),
                           "allowed here: " + ", ".join(f"`{k}`" for k in allowed))
                self.rejected = True
                continue
            if a.selector is not None:
                if a.key not in selectable:
                    sink.error("E211", f"`{a.key}` takes no `[...]` selector in {what}",
                               a.selector.span,
                               "a selector gives an op's time per device kind: `time[cpu] 3 ms`")
                    self.rejected = True
                    continue
                per = self.selected.setdefault(a.key, {})
                if a.selector.text in per:
                    sink.error("E212", f"`{a.key}[{a.selector.text}]` is given twice in {what}",
                               a.span, notes=(("first given here", per[a.selector.text][0].span),))
                per[a.selector.text] = (a, a.selector)
                continue
            if a.key in self.values:
                sink.error("E212", f"`{a.key}` is given twice in {what}", a.span,
                           notes=(("first given here", self.values[a.key].span),))
                continue
            self.values[a.key] = a
        self.allowed = allowed

    def missing(self, *keys: str) -> bool:
        """Whether none of `keys` was written (and nothing was rejected, see `rejected`)."""
        return not self.rejected and not any(k in self.values for k in keys)

    def quantity(self, key: str, attr: ast.Attr | None = None) -> float | None:
        """The value of `key` in base units, or None if absent or wrong (reported)."""
        attr = attr or self.values.get(key)
        if attr is None:
            return None
        return quantity(self.sink, attr, self.allowed[key])

    def size(self, key: str, down: bool = False) -> int | None:
        """The size `key` in whole bytes (`whole`), or None if absent or wrong (reported)."""
        attr = self.values.get(key)
        value = self.quantity(key)
        return None if attr is None or value is None else whole(self.sink, attr, value, down)

    def name(self, key: str) -> str | None:
        attr = self.values.get(key)
        if attr is None:
            return None
        if attr.value.kind != "name" or attr.value.name is None:
            self.sink.error("E213", f"`{key}` expects a name, not a number", attr.value.span,
                            f"quote it to use it as a name: `{key} \"{value_text(attr.value)}\"`")
            return None
        return attr.value.name.text

    def number(self, key: str) -> float | None:
        attr = self.values.get(key)
        if attr is None:
            return None
        if attr.value.kind != "number":
            not_a_plain_number(self.sink, attr, f"for example `{key} 0.5`")
            return None
        value = _finite(self.sink, attr, parse_number(attr.value.number))
        if value is None or value <= 0:
            return value  # not positive (a literal 0; an underflow is E260): E241 by the caller
        side = range_side(value, "speed")
        if side is not None:
            self.sink.error("E223" if side == "above" else "E260",
                            f"`{key}` {value:g} is {side} its valid range", attr.value.span,
                            f"`{key}` is {range_text('speed')}")
            return None
        return value


def quantity(sink: DiagnosticSink, attr: ast.Attr, dim: str) -> float | None:
    """Convert an attribute's value to base units of `dim`, reporting mistakes."""
    v = attr.value
    if v.kind == "quantity":  # the usual case first, and no message built for it
        got_dim, factor = UNIT_TABLE[v.unit]
        if got_dim == dim:
            value = parse_number(v.number) * factor
            lo, hi = RANGES[dim]
            if lo <= value <= hi or (value == 0 and not underflows(v.number)):
                return value
            return _finite(sink, attr, value, dim)
    example = f"{attr.key} {EXAMPLES.get(dim, '1')}"
    if v.kind == "number":
        sink.error("E220", f"`{attr.key}` needs a unit", v.span,
                   f"expected a {_dim_word(dim)} such as `{EXAMPLES[dim]}`")
        return None
    if v.kind == "name":
        if v.name is not None and v.name.text.lower() in NON_FINITE:
            sink.error("E221", f"`{attr.key}` expects a {_dim_word(dim)}: `{v.name.text}` is "
                       "not a number", v.span, "quantities are finite numbers, "
                       f"for example `{example}`")
            return None
        sink.error("E221", f"`{attr.key}` expects a {_dim_word(dim)}, not a name", v.span,
                   f"for example `{example}`")
        return None
    got_dim, factor = UNIT_TABLE[v.unit]
    if got_dim != dim:
        sink.error("E222", f"`{attr.key}` expects a {_dim_word(dim)}, but `{v.unit}` is a "
                   f"unit of {_dim_word(got_dim)}", v.span, f"for example `{example}`")
        return None
    return _finite(sink, attr, parse_number(v.number) * factor, dim)


def _finite(sink: DiagnosticSink, attr: ast.Attr, value: float,
            dim: str | None = None) -> float | None:
    """`value`, or None (reported) when it overflowed to infinity (`1e999 GiB`), when a
    number that is not zero underflowed to 0 (`1e-400 ms`, `1e-320 ns`: E260, so it is
    not read as 0), or, for a quantity of `dim`, when it lies outside that dimension's
    range (`units.RANGES`; a plain number's range is checked by the caller)."""
    if value == math.inf:  # numbers are never negative nor NaN
        sink.error("E223", f"`{attr.key}` is too large", attr.value.span,
                   "the value overflows a 64-bit float in base units")
        return None
    if value == 0:
        if not underflows(attr.value.number):
            return value
        sink.error("E260", f"`{attr.key}` {value_text(attr.value, 40)} is below the valid "
                   f"range{_of(dim)} (it is not 0, but a 64-bit float rounds it to 0)",
                   attr.value.span, _range_hint(attr.key, dim))
        return None
    side = None if dim is None else range_side(value, dim)
    if side is None:
        return value
    sink.error("E223" if side == "above" else "E260", f"`{attr.key}` "
               f"{value_text(attr.value, 40)} is {side} the valid range{_of(dim)}",
               attr.value.span, _range_hint(attr.key, dim))
    return None


def _of(dim: str | None) -> str:
    return "" if dim is None else f" of a {_dim_word(dim)}"


def _range_hint(key: str, dim: str | None) -> str:
    """The valid range of `key` (a quantity of `dim`, or the plain number `speed`)."""
    if dim is None:
        return f"`{key}` is {range_text('speed')}"
    return f"a {_dim_word(dim)} is {range_text(dim)}"


def not_a_plain_number(sink: DiagnosticSink, attr: ast.Attr, example: str) -> None:
    """The error of `attr`, whose value is not the plain number its key takes: E214 for a
    quantity (a unit too many), E221 for a name (`inf`, `nan`: not a number; before, both
    were E214 "expects a plain number (no unit)" of a value with no unit)."""
    v = attr.value
    if v.kind == "quantity":
        sink.error("E214", f"`{attr.key}` expects a plain number (no unit)", v.span, example)
    elif v.name is not None and v.name.text.lower() in NON_FINITE:
        sink.error("E221", f"`{attr.key}` expects a plain number: `{v.name.text}` is not a "
                   "number", v.span, f"it takes finite numbers, {example}")
    else:
        sink.error("E221", f"`{attr.key}` expects a plain number, not a name", v.span, example)


def value_text(v: ast.Value, most: int = 0) -> str:
    """The value as written; with `most`, a number longer than that is cut in its middle
    (`0.000…0001 ms`: a literal of 100,000 zeros is not printed whole)."""
    number = v.number
    if most and len(number) > most:
        number = f"{number[: most // 2]}…{number[-(most // 2):]}"
    return f"{number} {v.unit}" if v.kind == "quantity" else number


def _dim_word(dim: str) -> str:
    return DIM_WORDS.get(dim, dim)


def whole(sink: DiagnosticSink, attr: ast.Attr, value: float, down: bool = False) -> int:
    """A size attribute read as `value` (in range) in whole bytes: rounded up (an op's or an
    edge's size), or down (`down`: a device's `memory`), so that a plan called within its
    caps is within them as written; W266 where it was not whole (`params 1.5 B`)."""
    v = attr.value
    n, exact = whole_bytes(v.number, UNIT_TABLE[v.unit][1], value, down)
    if not exact:
        way = "a device's `memory` rounds down, an op's or an edge's size up" if down else \
            "an op's or an edge's size rounds up, a device's `memory` down"
        sink.warning("W266", f"`{attr.key}` {value_text(v, 40)} is not a whole number of "
                     f"bytes: read as {n} B", v.span,
                     f"sizes are whole bytes ({way}); write `{attr.key} {n} B` to say so")
    return n
