"""The syntax tree: frozen dataclasses, each with the span it came from.

It mirrors the text (names unresolved, ranges unexpanded, numbers unconverted) so that
`planner fmt` can print it back and the lowering pass can point at exact places.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import Span

# The attributes each statement takes: key -> expected dimension ("number" for unitless,
# "name" for a name). The lowering checks them; the parser's hints read them too.
OP_ATTRS = {"time": "time", "flops": "work", "params": "size", "output": "size", "temp": "size",
            "backward_of": "name", "type": "name"}
EDGE_ATTRS = {"bytes": "size"}
TIE_ATTRS = {"bytes": "size", "weight": "name"}
DEVICE_ATTRS = {"kind": "name", "memory": "size", "flops": "rate", "speed": "number"}
LINK_ATTRS = {"bandwidth": "bandwidth", "latency": "time"}
PLAN_SETTINGS = {"graph": "name", "cluster": "name", "memory": "name", "contention": "name",
                 "objective": "name", "microbatches": "number", "schedule": "name",
                 "stages_per_device": "number", "data_parallel": "number",  # or `auto`
                 "microbatch_size": "number"}


@dataclass(frozen=True, slots=True)
class Name:
    """A bare identifier or a double-quoted string (`text` is the decoded value)."""

    text: str
    quoted: bool
    span: Span


@dataclass(frozen=True, slots=True)
class Value:
    """An attribute's value as written: `16 GiB` (quantity), `0.05` (number), `v100` (name)."""

    kind: Literal["quantity", "number", "name"]
    number: str  # the number's text ("" for names)
    unit: str  # the unit ("" unless a quantity)
    name: Name | None
    span: Span


@dataclass(frozen=True, slots=True)
class Attr:
    """`key[selector] value` inside a block, or a plan setting (no selector)."""

    key: str
    selector: Name | None
    value: Value
    span: Span  # the key


@dataclass(frozen=True, slots=True)
class DevRef:
    """A device reference: a name, `prefix[lo..hi]` or `prefix[*]`."""

    kind: Literal["name", "range", "wild"]
    name: Name  # the name, or the prefix of a range or wildcard
    lo: int
    hi: int
    span: Span
    #: a range's digits per name: a bound written with leading zeros pads every name to
    #: its length (`gpu[00..15]` is `gpu00` … `gpu15`, as Slurm's node lists read)
    width: int = 1

    def member(self, i: int) -> str:
        """The name of a range's device `i`."""
        return f"{self.name.text}{i:0{self.width}d}"

    def bounds(self, lo: int | None = None, hi: int | None = None) -> str:
        """`[lo..hi]` as the range writes them (its own bounds by default)."""
        lo, hi = self.lo if lo is None else lo, self.hi if hi is None else hi
        return f"[{lo:0{self.width}d}..{hi:0{self.width}d}]"


def range_width(lo: str, hi: str) -> int:
    """The digits per name of `[lo..hi]` (`DevRef.width`): the longest bound written with
    a leading zero, else 1."""
    return max((len(b) for b in (lo, hi) if len(b) > 1 and b[0] == "0"), default=1)


@dataclass(frozen=True, slots=True)
class DeviceDecl:
    """`device REF { attrs }`."""

    ref: DevRef
    attrs: tuple[Attr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class LinkDecl:
    """`link SRCS <-> DSTS { attrs }` (or `->` for one direction)."""

    srcs: tuple[DevRef, ...]
    both_ways: bool
    dsts: tuple[DevRef, ...]
    attrs: tuple[Attr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class ClusterDecl:
    """`cluster NAME { device... link... }`."""

    name: Name
    devices: tuple[DeviceDecl, ...]
    links: tuple[LinkDecl, ...]
    items: tuple[DeviceDecl | LinkDecl, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class OpDecl:
    """`op NAME { attrs }`."""

    name: Name
    attrs: tuple[Attr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class ChainDecl:
    """`a -> b -> c { attrs }`: one edge per hop, each with the attrs.

    `both_ways` holds the span of a `<->` written between ops (the grammar shares arrows
    with links; lowering rejects it, since an edge has one direction).
    """

    names: tuple[Name, ...]
    attrs: tuple[Attr, ...]
    span: Span
    both_ways: Span | None = None


@dataclass(frozen=True, slots=True)
class ColocateDecl:
    """`colocate OPS` (names or glob patterns)."""

    ops: tuple[Name, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class TieDecl:
    """`tie OPS { bytes N  weight NAME }`: ops that share one weight of N bytes (names or
    glob patterns; `bytes` defaults to the smallest `params` among them; `weight`, the
    weight's name in its model, is optional)."""

    ops: tuple[Name, ...]
    attrs: tuple[Attr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class GraphDecl:
    """`graph NAME { op... chain... colocate... tie... }`."""

    name: Name
    items: tuple[OpDecl | ChainDecl | ColocateDecl | TieDecl, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class PinDecl:
    """`pin OPS to DEVICE` (hard constraint) or `place OPS on DEVICE` (given placement)."""

    ops: tuple[Name, ...]
    device: Name
    hard: bool
    span: Span


@dataclass(frozen=True, slots=True)
class PlanDecl:
    """`plan NAME { settings, pins, places }`."""

    name: Name
    items: tuple[Attr | PinDecl, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class ImportDecl:
    """`import "path"` (relative to the importing file)."""

    path: Name
    span: Span


@dataclass(frozen=True, slots=True)
class Comment:
    """A comment, kept for `planner fmt`."""

    text: str
    span: Span


TopLevel = ImportDecl | ClusterDecl | GraphDecl | PlanDecl


@dataclass(frozen=True, slots=True)
class Module:
    """One parsed file."""

    file: str
    items: tuple[TopLevel, ...]
    comments: tuple[Comment, ...] = ()
