"""Syntax trees -> the frozen model: resolve names, expand ranges and globs, convert units,
apply defaults, validate. Every problem of every file is collected, then raised at once.
"""

from __future__ import annotations

import bisect
import fnmatch
import itertools
import math
import operator
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal, TypeVar

from .. import limits, schedules
from ..cost import compute_time
from ..disjoint import Disjoint
from ..errors import DiagnosticSink, Span, did_you_mean
from ..model import (
    CONTENTIONS,
    MEMORY_MODELS,
    OBJECTIVES,
    PIPELINE_COUNTS,
    SCHEDULES,
    Cluster,
    Device,
    Graph,
    Link,
    Op,
    Pipeline,
    Problem,
    Spec,
    Tie,
    indexed_graph,
    new_edges,
)
from ..units import (
    EXAMPLES,
    NON_FINITE,
    RANGES,
    SPEED_RANGE,
    UNIT_TABLE,
    format_bytes,
    format_quantity,
    parse_number,
    underflows,
)
from . import ast
from .ast import DEVICE_ATTRS, EDGE_ATTRS, LINK_ATTRS, OP_ATTRS, PLAN_SETTINGS, TIE_ATTRS
from .names import check_names
from .parse import paused_gc

_GLOB = re.compile(r"[*?\[]")
_TRAILING_DIGITS = re.compile(r"[0-9]+\Z")
_T = TypeVar("_T")


def _hints(sink: DiagnosticSink, name: str, candidates: Iterable[str]) -> tuple[str, ...]:
    """`did_you_mean`, unless the sink is full: past the diagnostics limit every report is
    only counted, and a hint costs a pass over every candidate."""
    return () if sink.full else did_you_mean(name, candidates)


class OpSpans(Mapping[tuple[str, str], Span]):
    """Where each op was declared, by (graph name, op name).

    Kept per graph as the name index lowering builds anyway and the spans by op index:
    a dict of 100,000 (graph, name) pairs cost a tuple and a hash-table slot per op, and
    its look-ups miss the cache as the table outgrows it.
    """

    def __init__(self) -> None:
        self._graphs: dict[str, tuple[Mapping[str, int], Sequence[Span]]] = {}

    def add(self, graph: str, index: Mapping[str, int], spans: Sequence[Span]) -> None:
        """The ops of `graph`: `spans[index[name]]` is where op `name` was declared."""
        self._graphs[graph] = (index, spans)

    def __getitem__(self, key: tuple[str, str]) -> Span:
        try:
            graph, name = key
        except (TypeError, ValueError):
            raise KeyError(key) from None
        index, spans = self._graphs[graph]
        return spans[index[name]]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for graph, (index, _) in self._graphs.items():
            for name in index:
                yield graph, name

    def __len__(self) -> int:
        return sum(len(index) for index, _ in self._graphs.values())


@dataclass
class Locations:
    """Where things were declared, for diagnostics raised after lowering."""

    ops: OpSpans = field(default_factory=OpSpans)
    devices: dict[tuple[str, str], Span] = field(default_factory=dict)
    plans: dict[str, Span] = field(default_factory=dict)
    graphs: dict[str, Span] = field(default_factory=dict)
    clusters: dict[str, Span] = field(default_factory=dict)
    #: per graph, each edge's span (its first declaration), by edge index
    edges: dict[str, list[Span]] = field(default_factory=dict)
    pins: dict[tuple[str, int], Span] = field(default_factory=dict)


class _Attrs:
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

    def name(self, key: str) -> str | None:
        attr = self.values.get(key)
        if attr is None:
            return None
        if attr.value.kind != "name" or attr.value.name is None:
            self.sink.error("E213", f"`{key}` expects a name, not a number", attr.value.span,
                            f"quote it to use it as a name: `{key} \"{_value_text(attr.value)}\"`")
            return None
        return attr.value.name.text

    def number(self, key: str) -> float | None:
        attr = self.values.get(key)
        if attr is None:
            return None
        if attr.value.kind != "number":
            self.sink.error("E214", f"`{key}` expects a plain number (no unit)", attr.value.span,
                            f"for example `{key} 0.5`")
            return None
        value = _finite(self.sink, attr, parse_number(attr.value.number))
        if value is None or value <= 0:
            return value  # not positive (a literal 0; an underflow is E260): E241 by the caller
        lo, hi = SPEED_RANGE
        if not lo <= value <= hi:
            code, side = ("E223", "above") if value > hi else ("E260", "below")
            self.sink.error(code, f"`{key}` {value:g} is {side} its valid range", attr.value.span,
                            f"`{key}` is from {lo:g} to {hi:g}")
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
        sink.error("E260", f"`{attr.key}` {_value_text(attr.value, 40)} is below the valid "
                   f"range{_of(dim)} (it is not 0, but a 64-bit float rounds it to 0)",
                   attr.value.span, _range_hint(attr.key, dim))
        return None
    if dim is None:
        return value
    lo, hi = RANGES[dim]
    if lo <= value <= hi:
        return value
    code, side = ("E223", "above") if value > hi else ("E260", "below")
    sink.error(code, f"`{attr.key}` {_value_text(attr.value, 40)} is {side} the valid "
               f"range{_of(dim)}", attr.value.span, _range_hint(attr.key, dim))
    return None


#: the dimensions whose attributes are all positive (`bandwidth`, a device's `flops`)
_POSITIVE = frozenset({"bandwidth", "rate"})


def _of(dim: str | None) -> str:
    return "" if dim is None else f" of a {_dim_word(dim)}"


def _range_hint(key: str, dim: str | None) -> str:
    """The valid range of `key` (a quantity of `dim`, or the plain number `speed`)."""
    if dim is None:
        lo, hi = SPEED_RANGE
        return f"`{key}` is from {lo:g} to {hi:g}"
    lo, hi = RANGES[dim]
    zero = "" if dim in _POSITIVE else "0 or "
    return (f"a {_dim_word(dim)} is {zero}from {format_quantity(lo, dim)} "
            f"to {format_quantity(hi, dim)}")


def _value_text(v: ast.Value, most: int = 0) -> str:
    """The value as written; with `most`, a number longer than that is cut in its middle
    (`0.000…0001 ms`: a literal of 100,000 zeros is not printed whole)."""
    number = v.number
    if most and len(number) > most:
        number = f"{number[: most // 2]}…{number[-(most // 2):]}"
    return f"{number} {v.unit}" if v.kind == "quantity" else number


def _dim_word(dim: str) -> str:
    return {"time": "time", "size": "size", "bandwidth": "bandwidth", "work": "work (FLOP)",
            "rate": "FLOP rate"}.get(dim, dim)


def _bytes(x: float | None) -> int:
    return 0 if x is None else round(x)


# ---- the pass ---------------------------------------------------------------------------


def lower(modules: Sequence[ast.Module], sink: DiagnosticSink | None = None,
          sources: Mapping[str, str] | None = None) -> tuple[Spec, Locations]:
    """Lower parsed modules (a file and its imports) into a `Spec`; `sources`, the texts
    of the modules' files when known, let the name rules skip files of plain ASCII.

    Raises `SpecError` with every error found (warnings are kept on the sink).
    """
    with paused_gc():
        return _lower(modules, sink or DiagnosticSink(), sources)


def _lower(modules: Sequence[ast.Module], sink: DiagnosticSink,
           sources: Mapping[str, str] | None = None) -> tuple[Spec, Locations]:
    check_names(modules, sink, sources)
    loc = Locations()
    max_plans = limits.active().plans
    graph_decls: dict[str, ast.GraphDecl] = {}
    cluster_decls: dict[str, ast.ClusterDecl] = {}
    plan_decls: dict[str, ast.PlanDecl] = {}
    first: dict[str, Span] = {}
    for module in modules:
        for item in module.items:
            if isinstance(item, ast.ImportDecl):
                continue
            kind = {ast.GraphDecl: "graph", ast.ClusterDecl: "cluster", ast.PlanDecl: "plan"}[
                type(item)]
            # the declarations of `kind`, by name (`item` is of the type this table holds)
            tables: dict[str, dict[str, Any]] = {
                "graph": graph_decls, "cluster": cluster_decls, "plan": plan_decls}
            table = tables[kind]
            key = f"{kind}:{item.name.text}"
            if key in first:
                sink.error("E201", f"{kind} `{item.name.text}` is defined twice", item.name.span,
                           "names of graphs, clusters and plans are global across imports",
                           notes=((f"first definition of `{item.name.text}`", first[key]),))
                continue
            if kind == "plan" and len(plan_decls) == max_plans:
                sink.error("E014", f"more than {max_plans} plans", item.name.span,
                           limits.raise_hint("plans", max_plans + 1, 2 * max_plans))
                continue
            first[key] = item.name.span
            table[item.name.text] = item
    budget = _Budget.active()
    globs = _GlobTable(budget)  # graph name -> its op names, for glob patterns
    # per graph, each `time[KIND]` selector's span by kind, gathered while reading the ops
    time_kinds: dict[str, dict[str, list[Span]]] = {}
    graphs = {n: _lower_graph(sink, d, loc, globs, time_kinds.setdefault(n, {}))
              for n, d in graph_decls.items()}
    clusters = {n: _lower_cluster(sink, d, loc, budget) for n, d in cluster_decls.items()}
    if clusters:
        _unknown_time_kinds(sink, time_kinds, clusters)
    plans: dict[str, Problem] = {}
    unrunnable: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for n, d in plan_decls.items():
        p = _lower_plan(sink, d, graphs, clusters, loc, unrunnable, globs)
        if p is not None:
            plans[n] = p
    sink.raise_if_errors()
    files = tuple(m.file for m in modules)
    spec = Spec(MappingProxyType({k: v for k, v in graphs.items() if v is not None}),
                MappingProxyType({k: v for k, v in clusters.items() if v is not None}),
                MappingProxyType(plans), files)
    return spec, loc


# complex: a graph's edges and colocations: the inlined two-op edge (hot at 200k edges), then
# E012 and the other chains (`_chain_edges`), the colocations, ties and the E231 cycle
def _lower_graph(sink: DiagnosticSink, decl: ast.GraphDecl, loc: Locations,
                 globs: _GlobTable, time_kinds: dict[str, list[Span]]) -> Graph | None:
    """The graph of `decl` (None past a limit); `time_kinds` gets each `time[KIND]`
    selector's span by kind."""
    gname = decl.name.text
    loc.graphs[gname] = decl.name.span
    # the limits stop the loops below at the first op or edge past them: what is built
    # stays within them
    lim = limits.active()
    backward: list[tuple[int, ast.Name]] = []
    lowered = _graph_ops(sink, decl, loc, lim, time_kinds, backward)
    if lowered is None:
        return None
    index, ops = lowered
    backward_of = _backward_of(sink, backward, index, ops, gname)
    n_edges = 0
    n_ops = len(ops)
    edges = _Edges()
    src, dst, nbytes, edge_spans = edges.src, edges.dst, edges.bytes, edges.span
    groups: Disjoint[int] = Disjoint(range(len(ops)))
    grouped = False
    tie_decls: list[tuple[ast.TieDecl, list[int] | None]] = []
    chain_t = ast.ChainDecl
    for item in decl.items:
        if type(item) is chain_t and len(item.names) == 2 and item.both_ways is None \
                and n_edges < lim.edges:
            # one edge between two ops of the graph, as nearly all are written: `_Edges.add`
            # inlined (100k ops, 200k edges: 0.3 s)
            first, second = item.names
            a, b = index.get(first.text), index.get(second.text)
            if a is not None and b is not None and a != b:
                explicit = _edge_bytes(sink, item.attrs) if item.attrs else None
                n_edges += 1
                src.append(a)
                dst.append(b)
                nbytes.append(ops[a].output_bytes if explicit is None else round(explicit))
                edge_spans.append(second.span)
                continue
        if isinstance(item, ast.ChainDecl):
            n_edges += len(item.names) - 1
            if n_edges > lim.edges:
                sink.error("E012", f"graph `{gname}` has more than {lim.edges:_} edges",
                           item.span, limits.raise_hint("edges", lim.edges + 1, 2 * lim.edges))
                return None
            _chain_edges(sink, item, index, ops, edges, gname)
        elif isinstance(item, ast.ColocateDecl):
            members = _resolve_ops(sink, item.ops, index, gname, globs)
            for m in members[1:]:
                groups.union(members[0], m)
            grouped = grouped or len(members) > 1
        elif isinstance(item, ast.TieDecl):
            before = len(sink.items) + sink.dropped
            members = _resolve_ops(sink, item.ops, index, gname, globs)
            tie_decls.append((item, members if len(sink.items) + sink.dropped == before
                              else None))
    ties = _ties(sink, tie_decls, ops) if tie_decls else ()
    edges.merge_repeated(n_ops)
    src, dst, edge_spans = edges.src, edges.dst, edges.span
    edge_list = new_edges(src, dst, edges.bytes)
    loc.edges[gname] = edge_spans
    _report_cycle(sink, decl, ops, src, dst, edge_spans)
    colocations = tuple(map(tuple, groups.groups(range(len(ops))))) if grouped else ()
    if len(index) == len(ops):  # no name twice (E202): `index` is what op_index would be
        return indexed_graph(gname, tuple(ops), edge_list, colocations, index, backward_of,
                             ties)
    return Graph(gname, tuple(ops), edge_list, colocations, backward_of, ties)


def _chain_edges(sink: DiagnosticSink, item: ast.ChainDecl, index: dict[str, int],
                 ops: list[Op], edges: _Edges, gname: str) -> None:
    """A chain's edges into `edges`: E233 for `<->`, unknown ops said by `_resolve_op`,
    E230 for an edge from an op to itself."""
    if item.both_ways is not None:
        sink.error("E233", "an edge has one direction; `<->` is for links",
                   item.both_ways, "write `a -> b`; `a -> b` and `b -> a` would be a cycle")
    ids = [index.get(n.text) for n in item.names]
    if None in ids:
        ids = [_resolve_op(sink, n, index, gname) for n in item.names]
    explicit = _edge_bytes(sink, item.attrs) if item.attrs else None
    for n, a, b in zip(item.names[1:], ids, ids[1:], strict=False):
        if a is None or b is None:
            continue
        if a == b:
            sink.error("E230", f"edge from `{n.text}` to itself", n.span,
                       "an op cannot consume its own output")
            continue
        edges.add(a, b, _bytes(explicit) if explicit is not None else ops[a].output_bytes,
                  n.span)


def _report_cycle(sink: DiagnosticSink, decl: ast.GraphDecl, ops: list[Op], src: list[int],
                  dst: list[int], edge_spans: list[Span]) -> None:
    """E231 at an edge that closes a cycle of the graph, if it has one."""
    cycle = _find_cycle(len(ops), src, dst)
    if cycle:
        names = " -> ".join(ops[i].name for i in cycle + [cycle[0]])
        a, b = cycle[0], cycle[1 % len(cycle)]
        closing = next((k for k, (x, y) in enumerate(zip(src, dst, strict=True))
                        if x == a and y == b), None)
        sink.error("E231", f"graph `{decl.name.text}` has a cycle: {names}",
                   decl.name.span if closing is None else edge_spans[closing],
                   "a graph must be acyclic; remove one of these edges")


def _ties(sink: DiagnosticSink, decls: list[tuple[ast.TieDecl, list[int] | None]],
          ops: list[Op]) -> tuple[Tie, ...]:
    """The graph's ties: each of two ops or more (E236), its `bytes` (default: the least
    `params` of its ops) within every op's `params`, all the op's ties together (E237), and
    no two ops tied together twice (E238: one weight, one `tie`). `None` for the ops of a
    tie whose names were not all found (reported already)."""
    out: list[Tie] = []
    tied: dict[int, int] = {}  # op -> its ties' bytes, so far
    pairs: dict[tuple[int, int], ast.TieDecl] = {}
    for decl, members in decls:
        attrs = _Attrs(sink, decl.attrs, TIE_ATTRS, "a tie") if decl.attrs else None
        given = attrs.quantity("bytes") if attrs is not None else None
        if members is None:
            continue
        if len(members) < 2:
            sink.error("E236", "a `tie` needs two ops or more; this one names only "
                       f"`{ops[members[0]].name}`", decl.span,
                       "list the ops that share the weight: `tie wte, lm_head`")
            continue
        at = attrs.values["bytes"].value.span if attrs is not None and "bytes" in attrs.values \
            else decl.span
        nbytes = _bytes(given) if given is not None else min(ops[i].params_bytes
                                                             for i in members)
        if nbytes <= 0:
            empty = next((ops[i].name for i in members if ops[i].params_bytes == 0), "")
            sink.error("E237", "the tied ops share no bytes" if given is not None else
                       f"`{empty}` has no `params`, so the tie shares nothing", at,
                       "give the shared weight's size (`tie a, b { bytes 64 KiB }`) and each "
                       "op's `params` including it")
            continue
        if _tied_twice(sink, decl, members, pairs, ops):
            continue
        if not _tie_fits(sink, members, nbytes, tied, ops, at):
            continue
        for i in members:
            tied[i] = tied.get(i, 0) + nbytes
        out.append(Tie(tuple(members), nbytes, (attrs.name("weight") or "") if attrs else ""))
    return tuple(out)


def _tied_twice(sink: DiagnosticSink, decl: ast.TieDecl, members: list[int],
                pairs: dict[tuple[int, int], ast.TieDecl], ops: list[Op]) -> bool:
    """Whether two of `members` were tied by an earlier `tie` (E238); records their pairs
    in `pairs` either way."""
    twice = next(((x, y) for x, y in itertools.combinations(members, 2) if (x, y) in pairs),
                 None)
    for x, y in itertools.combinations(members, 2):
        pairs.setdefault((x, y), decl)
    if twice is None:
        return False
    x, y = twice
    sink.error("E238", f"`{ops[x].name}` and `{ops[y].name}` are tied twice", decl.span,
               "ops that share several weights share them in one `tie` with their bytes "
               "summed", notes=(("first tied here", pairs[x, y].span),))
    return True


def _tie_fits(sink: DiagnosticSink, members: list[int], nbytes: int, tied: dict[int, int],
              ops: list[Op], at: Span) -> bool:
    """Whether each op's `params` hold `nbytes` more than its ties so far (`tied`); E237
    for each that does not."""
    fits = True
    for i in members:
        total = tied.get(i, 0) + nbytes
        if total > ops[i].params_bytes:
            more = f" ({format_bytes(total)} with its other ties)" if i in tied else ""
            sink.error("E237", f"`{ops[i].name}` is tied to {format_bytes(nbytes)}{more} "
                       f"but holds `params` {format_bytes(ops[i].params_bytes)}", at,
                       "each tied op keeps a copy of the weight: its `params` include it")
            fits = False
    return fits


def _backward_of(sink: DiagnosticSink, backward: list[tuple[int, ast.Name]],
                 index: dict[str, int], ops: list[Op], gname: str) -> Mapping[int, int]:
    """Backward op -> its forward op, from the `backward_of` names: each names another op
    of the graph, one that is not itself a backward op (E234)."""
    out: dict[int, int] = {}
    for b, name in backward:
        f = _resolve_op(sink, name, index, gname)
        if f is not None:
            out[b] = f
    for b, f in out.items():
        if f == b:
            sink.error("E234", f"op `{ops[b].name}` is its own `backward_of`", _backward_span(
                backward, b), "name the forward op whose gradient this op computes")
        elif f in out:
            sink.error("E234", f"`backward_of {ops[f].name}`: `{ops[f].name}` is itself a "
                       f"backward op (of `{ops[out[f]].name}`)", _backward_span(backward, b),
                       "name the forward op whose gradient this op computes")
    return MappingProxyType(dict(sorted(out.items())))


def _backward_span(backward: list[tuple[int, ast.Name]], op: int) -> Span:
    """The span of the name in op `op`'s `backward_of`."""
    return next(name.span for b, name in backward if b == op)


def _graph_ops(sink: DiagnosticSink, decl: ast.GraphDecl, loc: Locations, lim: limits.Limits,
               time_kinds: dict[str, list[Span]], backward: list[tuple[int, ast.Name]],
               ) -> tuple[dict[str, int], list[Op]] | None:
    """The ops of a graph, in order, and their indices by name; None past the op limit.
    Each `backward_of` goes to `backward` as (op's index, the forward op's name).

    Each `time[KIND]` selector's span goes to `time_kinds` by kind, gathered here, while
    each op's attributes are at hand (a second pass over a 100k-op tree, for W256 alone,
    cost 5% of lowering)."""
    gname = decl.name.text
    index: dict[str, int] = {}
    ops: list[Op] = []
    spans: list[Span] = []
    loc.ops.add(gname, index, spans)
    for item in decl.items:
        if not isinstance(item, ast.OpDecl):
            continue
        name = item.name.text
        if len(ops) == lim.ops:
            sink.error("E011", f"graph `{gname}` has more than {lim.ops:_} ops",
                       item.name.span, limits.raise_hint("ops", lim.ops + 1, 2 * lim.ops))
            return None
        first = index.setdefault(name, len(ops))
        if first != len(ops):
            sink.error("E202", f"op `{name}` is defined twice in graph `{gname}`", item.name.span,
                       notes=(("first definition", spans[first]),))
            _time_kinds(item, time_kinds)
            continue
        spans.append(item.name.span)
        ops.append(_lower_op(sink, item, f"op `{name}`", time_kinds, backward, len(ops)))
    return index, ops


class _Edges:
    """A graph's edges as written (ends, bytes, span), then `merge_repeated`: one edge per
    pair of ops, in order of first appearance, with the last bytes given and the first
    span.

    Repeats are found after reading, by sorting the pairs' int keys `a * n + b` (nearly
    sorted as written, so timsort takes about one pass) rather than by a dict per edge:
    at 200,000 edges such a table outgrows the cache, and its look-ups cost ever more.
    """

    def __init__(self) -> None:
        self.src: list[int] = []
        self.dst: list[int] = []
        self.bytes: list[int] = []
        self.span: list[Span] = []

    def add(self, a: int, b: int, nbytes: int, span: Span) -> None:
        self.src.append(a)
        self.dst.append(b)
        self.bytes.append(nbytes)
        self.span.append(span)

    def merge_repeated(self, n: int) -> None:
        """Merge each repeated pair into its first appearance (`n`: the graph's ops)."""
        keys = list(map(operator.add, map(operator.mul, self.src, itertools.repeat(n)),
                        self.dst))
        ordered = sorted(keys)
        if not any(map(operator.eq, ordered, itertools.islice(ordered, 1, None))):
            return
        at: dict[int, int] = {}
        src: list[int] = []
        dst: list[int] = []
        size: list[int] = []
        span: list[Span] = []
        for key, a, b, nbytes, where in zip(keys, self.src, self.dst, self.bytes, self.span,
                                            strict=True):
            k = at.setdefault(key, len(src))
            if k == len(src):
                src.append(a)
                dst.append(b)
                size.append(nbytes)
                span.append(where)
            else:
                size[k] = nbytes
        self.src, self.dst, self.bytes, self.span = src, dst, size, span


def _edge_bytes(sink: DiagnosticSink, attrs: Sequence[ast.Attr]) -> float | None:
    """A chain's `bytes`: a lone plain quantity directly, anything else through `_Attrs`
    (which reports)."""
    first, *more = attrs
    if first.key == "bytes" and not more and first.selector is None:
        plain = _plain_quantity(first, "size")
        if plain is not None:
            return plain
    return _Attrs(sink, attrs, EDGE_ATTRS, "an edge").quantity("bytes")


def _unknown_time_kinds(sink: DiagnosticSink, time_kinds: dict[str, dict[str, list[Span]]],
                        clusters: dict[str, Cluster | None]) -> None:
    """W256 for `time[KIND]` naming a kind no device of the load has, once per graph and
    kind (a generated graph repeats it on every op); `time_kinds`: per graph, each
    selector's span by kind, as `_graph_ops` gathered them.

    A warning, not an error: a graph file may serve clusters that other specs import.
    A typo of a real kind usually also leaves the op without a time there (E253).
    """
    kinds = list(dict.fromkeys(d.kind for c in clusters.values() if c is not None
                               for d in c.devices if d.kind))
    for gname, seen in time_kinds.items():
        for kind, where in seen.items():
            if kind in kinds:
                continue
            n = len(where) - 1
            more = f" (and {n} more op{'s' if n > 1 else ''})" if n else ""
            known = ", ".join(f"`{k}`" for k in kinds) if kinds else "none"
            sink.warning("W256", f"`time[{kind}]`{more} in graph `{gname}`: no device of "
                         f"this spec has kind `{kind}`", where[0],
                         *_hints(sink, kind, kinds), f"device kinds here: {known}")


def _plain_quantity(a: ast.Attr, dim: str) -> float | None:
    """`a`'s value in base units when it is a quantity of `dim` within range (what
    `quantity` returns without a word); None when `quantity` has something to say."""
    v = a.value
    if v.kind != "quantity":
        return None
    got, factor = UNIT_TABLE[v.unit]
    if got != dim:
        return None
    value = parse_number(v.number) * factor
    lo, hi = RANGES[dim]
    return value if lo <= value <= hi or (value == 0 and not underflows(v.number)) else None


#: (key, unit) -> (factor, lo, hi) for each op key and each unit of its dimension: what
#: `_plain_op` reads a value with in one look-up (a number or a name has unit "", which
#: no key takes)
_OP_UNITS: dict[tuple[str, str], tuple[float, float, float]] = {
    (key, unit): (factor, *RANGES[dim]) for key, dim in OP_ATTRS.items() if dim in RANGES
    for unit, (got, factor) in UNIT_TABLE.items() if got == dim}


def _plain_op(item: ast.OpDecl, time_kinds: dict[str, list[Span]]) -> Op | None:
    """The op of a block as most are written (each key known and given once, a selector
    only on `time`, every value a quantity of its key's dimension within range, a time or
    FLOPs given), read without `_Attrs`' bookkeeping (100k ops: 1.5 s); None for any other
    block, which `_lower_op` reads and reports on. (`_plain_quantity` for each value, with
    `parse_number` and the unit table inlined.) The op's `time[KIND]` selectors go to
    `time_kinds` when it returns an op."""
    given: dict[str, float] = {}
    by_kind: dict[str, float] = {}
    units = _OP_UNITS
    for a in item.attrs:
        v = a.value
        key = a.key
        entry = units.get((key, v.unit))
        if entry is None:
            return None
        factor, lo, hi = entry
        value = float(v.number.replace("_", "")) * factor
        if not (lo <= value <= hi or (value == 0 and not underflows(v.number))):
            return None
        if a.selector is None:
            if key in given:
                return None
            given[key] = value
        elif key == "time" and a.selector.text not in by_kind:
            by_kind[a.selector.text] = value
        else:
            return None
    time_s, flops = given.get("time"), given.get("flops")
    if time_s is None and flops is None and not by_kind:
        return None
    if by_kind:  # each selector is a `time` one, given once
        _time_kinds(item, time_kinds)
    params, output, temp = given.get("params"), given.get("output"), given.get("temp")
    op = _new(Op)
    _OP_NAME(op, item.name.text)
    _OP_TIME(op, time_s)
    _OP_FLOPS(op, flops)
    _OP_KINDS(op, MappingProxyType(by_kind) if by_kind else _NO_KINDS)
    _OP_PARAMS(op, 0 if params is None else round(params))
    _OP_OUTPUT(op, 0 if output is None else round(output))
    _OP_TEMP(op, 0 if temp is None else round(temp))
    _OP_TYPE(op, "")  # a `type` sends the block to `_lower_op`
    return op


# The model's ops and edges built by setting their slots (as `fastparse` builds the tree):
# a frozen dataclass's `__init__` sets each field through `object.__setattr__`, and a
# 100k-op graph has 300k of them (0.2 s). Neither class checks anything in `__init__`.
_new = object.__new__
_OP_NAME, _OP_TIME, _OP_FLOPS, _OP_KINDS, _OP_PARAMS, _OP_OUTPUT, _OP_TEMP, _OP_TYPE = (
    getattr(Op, f.name).__set__ for f in fields(Op))
#: the per-kind times of every op without any, shared: read-only, and nothing else holds
#: the dict behind it (a dict and a proxy per op were 11 MB of a 100k-op graph)
_NO_KINDS: Mapping[str, float] = MappingProxyType({})


def _time_kinds(item: ast.OpDecl, time_kinds: dict[str, list[Span]]) -> None:
    """Add the spans of `item`'s `time[KIND]` selectors to `time_kinds`, by kind."""
    for a in item.attrs:
        if a.key == "time" and a.selector is not None:
            time_kinds.setdefault(a.selector.text, []).append(a.selector.span)


def _lower_op(sink: DiagnosticSink, item: ast.OpDecl, what: str,
              time_kinds: dict[str, list[Span]], backward: list[tuple[int, ast.Name]],
              position: int) -> Op:
    """The op of `item`; its `backward_of` name, if any, goes to `backward` with the op's
    `position` (resolved once every op of the graph is known)."""
    plain = _plain_op(item, time_kinds)
    if plain is not None:
        return plain
    _time_kinds(item, time_kinds)
    attrs = _Attrs(sink, item.attrs, OP_ATTRS, what, frozenset({"time"}))
    if attrs.name("backward_of") is not None:
        forward = attrs.values["backward_of"].value.name
        assert forward is not None  # `name` said it is a name
        backward.append((position, forward))
    by_kind = {
        sel.text: t
        for a, sel in attrs.selected.get("time", {}).values()
        if (t := attrs.quantity("time", a)) is not None
    }
    time_s = attrs.quantity("time")
    flops = attrs.quantity("flops")
    if time_s is None and flops is None and not by_kind and attrs.missing("time", "flops"):
        sink.error("E232", f"{what} has neither `time` nor `flops`", item.name.span,
                   "give its compute cost, e.g. `time 1.5 ms` or `flops 2.4 GFLOP`")
    return Op(item.name.text, time_s, flops, MappingProxyType(by_kind),
              _bytes(attrs.quantity("params")), _bytes(attrs.quantity("output")),
              _bytes(attrs.quantity("temp")), attrs.name("type") or "")


def _resolve_op(sink: DiagnosticSink, n: ast.Name, index: Mapping[str, int],
                g: str) -> int | None:
    i = index.get(n.text)
    if i is None:
        sink.error("E203", f"unknown op `{n.text}` in graph `{g}`", n.span,
                   *_hints(sink, n.text, index), "declare it with `op NAME { ... }`")
    return i


@dataclass
class _Budget:
    """What is left of the limits that all the declarations of one load share
    (`limits.py`): counted across clusters and graphs, so that many small declarations
    cannot add up to what one may not ask for (200 clusters of `gpu[0..1023]` in 10 KB)."""

    devices: int
    link_pairs: int
    glob_names: int
    glob_reported: bool = False  # E015 is said once; later patterns are not matched

    @classmethod
    def active(cls) -> _Budget:
        lim = limits.active()
        return cls(lim.devices, lim.link_pairs, lim.glob_names)


class _Globs:
    """Glob patterns over the op names of one graph: each pattern is matched once, and
    only against the names that start with its literal prefix (found by bisection), so
    `colocate "layer12/*"` on a 100,000-op graph does not scan every name. A pattern that
    starts with `*` does scan every name, and every use of a pattern hands its ops over,
    so both are charged to the load's `glob_names` budget before they are done."""

    def __init__(self, index: Mapping[str, int]) -> None:
        self.names = sorted(index)
        self.index = index
        self.done: dict[str, list[int]] = {}

    def match(self, pattern: str, budget: _Budget) -> list[int] | None:
        """The indices of the ops whose name matches `pattern`; None when the budget
        cannot pay for it."""
        hits = self.done.get(pattern)
        if hits is None:
            m = _GLOB.search(pattern)
            prefix = pattern[: m.start()] if m else pattern
            lo = bisect.bisect_left(self.names, prefix)
            hi = bisect.bisect_left(self.names, prefix + "\U0010ffff", lo)
            if hi - lo > budget.glob_names:
                return None
            budget.glob_names -= hi - lo
            test = re.compile(fnmatch.translate(pattern)).match
            hits = [self.index[n] for n in self.names[lo:hi] if test(n)]
            self.done[pattern] = hits
        if len(hits) > budget.glob_names:
            return None
        budget.glob_names -= len(hits)
        return hits


class _GlobTable(dict[str, _Globs]):
    """Graph name -> its `_Globs`, with the load's budget they draw on."""

    def __init__(self, budget: _Budget) -> None:
        super().__init__()
        self.budget = budget


def _resolve_ops(sink: DiagnosticSink, names: Iterable[ast.Name], index: Mapping[str, int],
                 g: str, globs: _GlobTable) -> list[int]:
    """Op names or glob patterns -> sorted unique op indices (unknowns reported)."""
    out: set[int] = set()
    budget = globs.budget
    for n in names:
        if n.text in index:
            out.add(index[n.text])
        elif _GLOB.search(n.text):
            if budget.glob_reported:
                continue
            if g not in globs:
                globs[g] = _Globs(index)
            hits = globs[g].match(n.text, budget)
            if hits is None:
                budget.glob_reported = True
                lim = limits.active().glob_names
                sink.error("E015", f"glob patterns would test more than {lim:_} op names",
                           n.span, "name the ops, give patterns a literal prefix (`layer1/*`), "
                           "or " + limits.raise_hint("glob_names", lim + 1, 2 * lim))
                continue
            if not hits:
                sink.error("E204", f"pattern `{n.text}` matches no op of graph `{g}`", n.span)
            out.update(hits)
        else:
            _resolve_op(sink, n, index, g)
    return sorted(out)


# complex: validates each device statement: a check and a message per attribute and rule
# (E240, E241, E242, E246, E205), then the links and the E244 pairs without one
def _lower_cluster(sink: DiagnosticSink, decl: ast.ClusterDecl, loc: Locations,
                   budget: _Budget) -> Cluster | None:
    cname = decl.name.text
    loc.clusters[cname] = decl.name.span
    if budget.devices < 0 or budget.link_pairs < 0:  # an earlier cluster used them up (said)
        return None
    devices: list[Device] = []
    index: dict[str, int] = {}
    for d in decl.devices:
        attrs = _Attrs(sink, d.attrs, DEVICE_ATTRS, "a device")
        memory = attrs.quantity("memory")
        if memory is None and attrs.missing("memory"):
            sink.error("E240", "device needs `memory`", d.ref.span,
                       "for example `memory 16 GiB`")
        speed = attrs.number("speed")
        if speed is not None and speed <= 0:
            sink.error("E241", "`speed` must be positive", attrs.values["speed"].value.span)
            speed = None
        flop_rate = attrs.quantity("flops")
        if flop_rate is not None and flop_rate <= 0:
            sink.error("E241", "`flops` must be positive", attrs.values["flops"].value.span)
            flop_rate = None
        kind = attrs.name("kind")
        if d.ref.kind == "wild":
            sink.error("E242", "`[*]` selects existing devices; declare a range instead",
                       d.ref.span, f"for example `device {d.ref.name.text}[0..3]`")
            continue
        names = _expand_decl(sink, d.ref)
        if len(names) > budget.devices:
            max_devices = limits.active().devices
            where = (f"cluster `{cname}` would have" if len(devices) + len(names) > max_devices
                     else "the clusters of this load would have")
            sink.error("E246", f"{where} more than {max_devices} devices",
                       d.ref.span, limits.raise_hint("devices", max_devices + 1, 2 * max_devices))
            budget.devices = -1  # said once: later clusters are not expanded
            return None  # nor this one's links (each would be an unknown device)
        budget.devices -= len(names)
        for name in names:
            if name in index:
                sink.error("E205", f"device `{name}` is defined twice in cluster `{cname}`",
                           d.ref.span, notes=(("first definition", loc.devices[(cname, name)]),))
                continue
            index[name] = len(devices)
            loc.devices[(cname, name)] = d.ref.span
            devices.append(Device(name, _bytes(memory), kind, speed or 1.0, flop_rate))
    links = _lower_links(sink, decl, index, budget)
    if links is None:
        return None
    # counted, not listed: 1,024 devices and no link miss a million pairs (every key of
    # `links` is a pair of two devices of this cluster)
    n = len(devices)
    n_missing = n * (n - 1) - len(links)
    if n_missing and not sink.has_errors:
        pairs = ((a, b) for a in range(n) for b in range(n) if a != b and (a, b) not in links)
        first = [next(pairs) for _ in range(min(4, n_missing))]
        shown = ", ".join(f"{devices[a].name} -> {devices[b].name}" for a, b in first)
        more = f" and {n_missing - 4} more" if n_missing > 4 else ""
        sink.error("E244", f"cluster `{cname}` has devices with no link between them: "
                   f"{shown}{more}", decl.name.span,
                   "a transfer between them would be impossible; add a `link` statement")
    ordered = tuple(links[k] for k in sorted(links))
    return Cluster(cname, tuple(devices), ordered)


def _lower_links(sink: DiagnosticSink, decl: ast.ClusterDecl, index: dict[str, int],
                 left: _Budget) -> dict[tuple[int, int], Link] | None:
    """The links of a cluster by (src, dst); None (reported, E013) when its statements,
    with those of the load's clusters before it, name more device pairs than the
    `link_pairs` limit, counted before any pair is built. A device listed twice on one side
    (`gpu[*], gpu[*]`) counts once."""
    budget = start = left.link_pairs
    cname = decl.name.text
    groups: dict[str, list[int]] = {}  # `gpu[*]` -> the devices `gpu` + digits, found once
    for name, i in index.items():
        m = _TRAILING_DIGITS.search(name)
        if m:  # `gpu12` is `gpu` + digits and `gpu1` + digits
            for cut in range(m.start(), m.end()):
                groups.setdefault(name[:cut], []).append(i)
    links: dict[tuple[int, int], Link] = {}
    for lk in decl.links:
        attrs = _Attrs(sink, lk.attrs, LINK_ATTRS, "a link")
        bw = attrs.quantity("bandwidth")
        if bw is None and attrs.missing("bandwidth"):
            sink.error("E243", "link needs `bandwidth`", lk.span, "for example `bandwidth 25 GB/s`")
        if bw is not None and bw <= 0:
            sink.error("E241", "`bandwidth` must be positive", attrs.values["bandwidth"].value.span)
            bw = None
        lat = attrs.quantity("latency") or 0.0
        srcs = _resolve_side(sink, lk.srcs, index, groups, cname)
        dsts = _resolve_side(sink, lk.dsts, index, groups, cname)
        pairs = len(srcs) * len(dsts) * (2 if lk.both_ways else 1)
        if pairs > budget:
            lim = limits.active().link_pairs
            whose = (f"cluster `{cname}`" if start - budget + pairs > lim
                     else "the clusters of this load")
            sink.error("E013", f"the links of {whose} name more than {lim:_} device "
                       f"pairs", lk.span, f"this statement alone names {pairs:_}; "
                       + limits.raise_hint("link_pairs", pairs, 2 * lim))
            left.link_pairs = -1  # said once: later clusters' links are not built
            return None
        budget -= pairs
        if bw is None:
            continue
        for a in srcs:
            for b in dsts:
                if a != b:
                    links[(a, b)] = Link(a, b, bw, lat)
                    if lk.both_ways:
                        links[(b, a)] = Link(b, a, bw, lat)
    left.link_pairs = budget
    return links


def _resolve_side(sink: DiagnosticSink, refs: Sequence[ast.DevRef], index: dict[str, int],
                  groups: dict[str, list[int]], cname: str) -> list[int]:
    """The devices one side of a link names, each once, in order of first mention; the
    same reference written again is not expanded again."""
    out: dict[int, None] = {}
    done: set[tuple[str, str, int, int]] = set()
    for r in refs:
        key = (r.kind, r.name.text, r.lo, r.hi)
        if key in done:
            continue
        done.add(key)
        if r.kind == "wild":
            hits = groups.get(r.name.text, [])
            if not hits:
                sink.error("E206", f"`{r.name.text}[*]` matches no device of cluster `{cname}`",
                           r.span)
            out.update(dict.fromkeys(hits))
        else:
            out.update(dict.fromkeys(_resolve_devs(sink, r, index, cname)))
    return list(out)


def _expand_decl(sink: DiagnosticSink, ref: ast.DevRef) -> list[str]:
    if ref.kind == "name":
        return [ref.name.text]
    if ref.lo > ref.hi:
        sink.error("E245", f"empty range `{ref.name.text}[{ref.lo}..{ref.hi}]`", ref.span,
                   f"write the smaller bound first: `{ref.name.text}[{ref.hi}..{ref.lo}]`")
        return []
    max_devices = limits.active().devices
    if ref.hi - ref.lo >= max_devices:  # `gpu[0..99999999]` would exhaust memory
        sink.error("E246", f"range `{ref.name.text}[{ref.lo}..{ref.hi}]` has "
                   f"{ref.hi - ref.lo + 1} devices; at most {max_devices} are allowed", ref.span,
                   limits.raise_hint("devices", ref.hi - ref.lo + 1))
        return []
    return [f"{ref.name.text}{i}" for i in range(ref.lo, ref.hi + 1)]


def _resolve_devs(sink: DiagnosticSink, ref: ast.DevRef, index: dict[str, int],
                  cname: str) -> list[int]:
    out = []
    for name in _expand_decl(sink, ref):
        if name in index:
            out.append(index[name])
        else:
            sink.error("E207", f"unknown device `{name}` in cluster `{cname}`", ref.span,
                       *_hints(sink, name, index))
    return out


def _lower_plan(sink: DiagnosticSink, decl: ast.PlanDecl, graphs: dict[str, Graph | None],
                clusters: dict[str, Cluster | None], loc: Locations,
                unrunnable: dict[tuple[str, str], list[tuple[int, int]]],
                globs: _GlobTable) -> Problem | None:
    pname = decl.name.text
    loc.plans[pname] = decl.name.span
    settings = _Attrs(sink, [i for i in decl.items if isinstance(i, ast.Attr)], PLAN_SETTINGS,
                      f"plan `{pname}`")
    graph = _lookup(sink, settings, "graph", graphs, decl)
    cluster = _lookup(sink, settings, "cluster", clusters, decl)
    memory = _choice(sink, settings, "memory", MEMORY_MODELS, "static")
    contention = _choice(sink, settings, "contention", CONTENTIONS, "link")
    pipeline = _pipeline(sink, settings, pname)
    if graph is None or cluster is None:
        return None
    if pipeline is not None:
        _check_copies(sink, settings, decl, graph, pipeline)
        _check_interleaving(sink, settings, decl, graph, cluster, pipeline)
        _check_pipelines(sink, settings, cluster, pipeline)
    pins, placement, pin_spans = _plan_pins(sink, decl, graph, cluster, globs)
    _check_pins(sink, graph, cluster, pins, placement, pin_spans)
    _check_runnable(sink, pname, graph, cluster, loc, unrunnable)
    for i in pins:
        loc.pins[(pname, i)] = pin_spans[i]
    if pipeline is not None:
        _pipeline_rules(sink, graph, cluster, pipeline, pins, pin_spans, settings, loc, pname)
    return Problem(pname, graph, cluster, memory, contention,  # type: ignore[arg-type]
                   MappingProxyType(dict(sorted(pins.items()))),
                   MappingProxyType(dict(sorted(placement.items()))), pipeline)


def _plan_pins(sink: DiagnosticSink, decl: ast.PlanDecl, graph: Graph, cluster: Cluster,
               globs: _GlobTable) -> tuple[dict[int, int], dict[int, int], dict[int, Span]]:
    """A plan's `pin` and `place` lines: (pins, placement, each pinned op's first pin's
    span); E207 for an unknown device, E250 for an op pinned (or placed) on two."""
    op_index = graph.op_index
    dev_index = cluster.device_index
    pins: dict[int, int] = {}
    placement: dict[int, int] = {}
    pin_spans: dict[int, Span] = {}
    for item in decl.items:
        if not isinstance(item, ast.PinDecl):
            continue
        d = dev_index.get(item.device.text)
        if d is None:
            sink.error("E207", f"unknown device `{item.device.text}` in cluster `{cluster.name}`",
                       item.device.span, *_hints(sink, item.device.text, dev_index))
        ops = _resolve_ops(sink, item.ops, op_index, graph.name, globs)
        if d is None:
            continue
        table = pins if item.hard else placement
        for i in ops:
            if i in table and table[i] != d:
                verb = "pinned" if item.hard else "placed"
                sink.error("E250", f"op `{graph.ops[i].name}` is {verb} on both "
                           f"`{cluster.devices[table[i]].name}` and `{item.device.text}`",
                           item.span, f"an op is {verb} on one device; keep one of the two")
            table[i] = d
            if item.hard:
                pin_spans.setdefault(i, item.span)
    return pins, placement, pin_spans


def _check_pins(sink: DiagnosticSink, graph: Graph, cluster: Cluster, pins: dict[int, int],
                placement: dict[int, int], pin_spans: dict[int, Span]) -> None:
    """E251 for a placement that breaks a pin, E252 for colocated ops pinned apart."""
    for i, d in placement.items():
        if i in pins and pins[i] != d:
            sink.error("E251", f"op `{graph.ops[i].name}` is pinned to "
                       f"`{cluster.devices[pins[i]].name}` but placed on "
                       f"`{cluster.devices[d].name}`", pin_spans[i],
                       "a given placement must respect the pins; change the `place`")
    for group in graph.colocations:
        pinned = {pins[i] for i in group if i in pins}
        if len(pinned) > 1:
            names = ", ".join(f"`{graph.ops[i].name}` to `{cluster.devices[pins[i]].name}`"
                              for i in group if i in pins)
            first_pinned = next(i for i in group if i in pins)
            sink.error("E252", f"colocated ops are pinned apart: {names}",
                       pin_spans[first_pinned], "colocated ops must share one device")


def _check_runnable(sink: DiagnosticSink, pname: str, graph: Graph, cluster: Cluster,
                    loc: Locations, unrunnable: dict[tuple[str, str], list[tuple[int, int]]]
                    ) -> None:
    """E253 for each op that cannot run on a device of the cluster (found once per graph
    and cluster, in `unrunnable`, and said once per plan)."""
    key = (graph.name, cluster.name)  # the same for every plan of this graph and cluster
    if key not in unrunnable:
        unrunnable[key] = _unrunnable(graph, cluster)
    for i, d in unrunnable[key]:
        op, dev = graph.ops[i], cluster.devices[d]
        kind = f"kind `{dev.kind}`" if dev.kind else "no kind"
        if op.flops is not None:
            why = f"has only `flops` and device `{dev.name}` has no `flops` rate"
            hint = f"give it `time`, or give device `{dev.name}` a `flops` rate"
        else:
            why = f"has no `time` for device `{dev.name}` ({kind})"
            hint = (f"give it `time[{dev.kind}]`, `time` or `flops`" if dev.kind
                    else "give it `time` or `flops`")
        sink.error("E253", f"op `{op.name}` cannot run in plan `{pname}`: it {why}",
                   loc.ops[(graph.name, op.name)], hint)


def _check_copies(sink: DiagnosticSink, settings: _Attrs, decl: ast.PlanDecl, graph: Graph,
                  pipeline: Pipeline) -> None:
    """E016 when simulating the pipeline would copy more ops and edges than the
    `pipeline_copies` limit: its simulation (`pipeline.schedule`) copies the graph once
    per micro-batch, and every command that plans or reports the pipeline runs it."""
    lim = limits.active().pipeline_copies
    n_ops, n_edges = len(graph.ops), len(graph.edges)
    copies = limits.pipeline_copies(pipeline.microbatches, n_ops, n_edges)
    if copies <= lim:
        return
    attr = settings.values.get("microbatches") or settings.values.get("objective")
    span = attr.span if attr is not None else decl.name.span
    most = lim // (n_ops + n_edges)
    gb = copies * limits.BYTES_PER_COPIED_ITEM / 1e9
    sink.error("E016", f"plan `{decl.name.text}` would simulate {pipeline.microbatches} "
               f"copies of graph `{graph.name}` ({n_ops:_} ops, {n_edges:_} edges): "
               f"{copies:_} ops and edges, about {gb:.3g} GB, more than the "
               f"`pipeline_copies` limit ({lim:_})", span,
               (f"at most {most} micro-batches fit the limit for this graph"
                if most >= 1 else "no number of micro-batches fits the limit for this graph"),
               limits.raise_hint("pipeline_copies", copies,
                                 lead="or, with the memory for it, raise the limit with"))


def _check_interleaving(sink: DiagnosticSink, settings: _Attrs, decl: ast.PlanDecl,
                        graph: Graph, cluster: Cluster, pipeline: Pipeline) -> None:
    """W258 when no split can interleave: `stages_per_device K` needs K stages on each of
    at least two devices, so 2K pipeline units, and a unit holds a forward op (one not in
    `backward_of`); with fewer, every plan runs as `1f1b` (`pipeline.schedule`)."""
    per = pipeline.stages_per_device
    schedule = pipeline.schedule_spec
    if not schedule.virtual_stages or per < 2:
        return
    forward = len(graph.ops) - len(graph.backward_of)
    if forward >= 2 * per and len(cluster.devices) >= 2:
        return
    if forward < per:  # fewer units than K: E259 says so (`_pipeline_rules`)
        return
    attr = settings.values.get("stages_per_device") or settings.values.get("schedule")
    why = (f"cluster `{cluster.name}` has one device" if len(cluster.devices) < 2 else
           f"graph `{graph.name}` has at most {forward} pipeline unit(s) (one per forward op)")
    most = forward // 2
    sink.warning("W258", f"plan `{decl.name.text}` cannot interleave: `stages_per_device "
                 f"{per}` needs {2 * per} stages ({per} on each of at least two devices) "
                 f"and {why}; every plan of it runs as `{schedule.fallback}`",
                 attr.span if attr is not None else decl.name.span,
                 f"write `schedule {schedule.fallback}`"
                 + (f", or `stages_per_device {most}` or fewer"
                    if most >= 2 and len(cluster.devices) >= 2 else ""))


def backward_first(graph: Graph) -> list[tuple[int, int]]:
    """(backward op, its forward op) for each backward op that comes before its forward op
    in the graph's topological order: no path of edges leads from the forward op to it."""
    if not graph.backward_of:
        return []
    try:
        order = graph.topological_order
    except ValueError:  # a cycle (E231, reported): no order to judge by
        return []
    position = [0] * len(graph.ops)
    for k, i in enumerate(order):
        position[i] = k
    return [(b, f) for b, f in graph.backward_of.items() if position[b] < position[f]]


def pipeline_units(graph: Graph) -> list[int]:
    """Per op, the smallest op of its pipeline unit (`planner.pipeline.units`: a colocation
    group or a lone op, merged with the backward ops of its forward ops)."""
    units: Disjoint[int] = Disjoint(range(len(graph.ops)))
    for group in graph.colocations:
        first = min(group)
        for i in group:
            units.union(first, i)
    for b, f in graph.backward_of.items():
        units.union(b, f)
    return [units.find(i) for i in range(len(graph.ops))]


def units_pinned_apart(graph: Graph, pins: Mapping[int, int]) -> list[tuple[int, int]]:
    """(op, op) pairs of one pipeline unit pinned to different devices, one per unit, the
    first pinned op of the unit and the first pinned elsewhere; none within one colocation
    group (E252 reports those)."""
    if not pins:
        return []
    unit = pipeline_units(graph)
    group = graph.colocation_of
    first: dict[int, int] = {}
    out: dict[int, tuple[int, int]] = {}
    for i in sorted(pins):
        a = first.setdefault(unit[i], i)
        if pins[a] != pins[i] and unit[i] not in out and (group[a] < 0 or group[a] != group[i]):
            out[unit[i]] = (a, i)
    return list(out.values())


def _pipeline_rules(sink: DiagnosticSink, graph: Graph, cluster: Cluster, pipeline: Pipeline,
                    pins: Mapping[int, int], pin_spans: Mapping[int, Span], settings: _Attrs,
                    loc: Locations, pname: str) -> None:
    """What a pipeline of `graph` cannot run: a backward op before its forward op (E235),
    pins that split a pipeline unit between devices (E258), and, under `interleaved`, more
    stages per device than the graph has units (E259)."""
    ops, devs = graph.ops, cluster.devices
    for b, f in backward_first(graph):
        sink.error("E235", f"backward op `{ops[b].name}` comes before its forward op "
                   f"`{ops[f].name}` in graph `{graph.name}`: no path of edges leads from "
                   f"`{ops[f].name}` to it, so nothing makes it wait for the forward pass, "
                   f"which pipeline plan `{pname}` needs", loc.ops.get((graph.name, ops[b].name)),
                   f"a backward op consumes what its forward op computed: add an edge from "
                   f"`{ops[f].name}` (or an op after it) to `{ops[b].name}`, and none from "
                   f"`{ops[b].name}` back to the forward pass")
    for a, i in units_pinned_apart(graph, pins):
        sink.error("E258", f"op `{ops[i].name}` is pinned to `{devs[pins[i]].name}` and op "
                   f"`{ops[a].name}` to `{devs[pins[a]].name}`, but they are one pipeline "
                   f"unit of plan `{pname}` (a forward op, its `backward_of` ops and their "
                   "colocation groups run on one stage)", pin_spans[i],
                   "pin them to one device, or plan `objective makespan`",
                   notes=((f"`{ops[a].name}` pinned here", pin_spans[a]),))
    if pipeline.schedule_spec.virtual_stages:
        count = len(set(pipeline_units(graph)))
        if count < pipeline.stages_per_device:
            attr = settings.values.get("stages_per_device")
            sink.error("E259", f"`stages_per_device {pipeline.stages_per_device}` asks each "
                       f"device for more stages than graph `{graph.name}` has pipeline units "
                       f"({count}): a stage holds one unit at least",
                       attr.span if attr is not None else loc.plans.get(pname),
                       f"set `stages_per_device` from 2 to {count}" if count > 2 else
                       "set `stages_per_device 2`" if count == 2 else
                       "the graph is one unit, one stage: use "
                       f"`schedule {pipeline.schedule_spec.fallback}`")


#: the pipeline settings, which need `objective pipeline`
_PIPELINE_KEYS = ("microbatches", "schedule", "stages_per_device", "data_parallel",
                  "microbatch_size")


def _pipeline(sink: DiagnosticSink, settings: _Attrs, pname: str) -> Pipeline | None:
    """The plan's pipeline (`objective pipeline` and its settings), or None (`objective
    makespan`, the default). Reports unknown names (E256) and counts that are not whole
    numbers in range (E257)."""
    objective = _named_choice(sink, settings, "objective", OBJECTIVES, "makespan")
    if objective is None:  # unknown (reported): its settings are not judged by a guess
        return None
    if objective != "pipeline":
        for key in _PIPELINE_KEYS:
            if key in settings.values:
                sink.error("E256", f"`{key}` is a pipeline setting, and plan `{pname}` has "
                           f"`objective {objective}`", settings.values[key].span,
                           "add `objective pipeline` to plan a pipeline of micro-batches")
        return None
    schedule = (_named_choice(sink, settings, "schedule", SCHEDULES, schedules.DEFAULT)
                or schedules.DEFAULT)
    rules = schedules.of(schedule)
    microbatches = _count(sink, settings, "microbatches") or 1
    stated = _count(sink, settings, "stages_per_device")
    per_device = stated or 1
    # a value out of range or not a number is reported once, by `_count` (`1000` got a
    # second E257 asking for `stages_per_device 2`)
    reported = stated is None and "stages_per_device" in settings.values
    if rules.virtual_stages and per_device < 2 and not reported:
        span = settings.values.get("stages_per_device", settings.values["schedule"]).span
        sink.error("E257", f"`schedule {schedule}` runs several stages per device",
                   span, "add `stages_per_device 2` (or more); with one, write "
                   f"`schedule {rules.fallback}`")
    elif not rules.virtual_stages and "stages_per_device" in settings.values:
        virtual = " or ".join(f"`schedule {s.name}`" for s in schedules.TABLE
                              if s.virtual_stages)
        sink.error("E256", f"`stages_per_device` is for {virtual}, not "
                   f"`{schedule}`", settings.values["stages_per_device"].span,
                   f"write {virtual}, or remove `stages_per_device`")
    replicas = _data_parallel(sink, settings, rules)
    size = _count(sink, settings, "microbatch_size") or 1
    return Pipeline(microbatches, schedule, per_device, replicas, size)


def _data_parallel(sink: DiagnosticSink, settings: _Attrs,
                   schedule: schedules.Schedule) -> int | Literal["auto"]:
    """Setting `data_parallel`: `auto` or a whole number from 1 to its `PIPELINE_COUNTS`
    (E257 otherwise, and E256 under virtual stages, `schedule interleaved`, unless 1); 1 when
    absent or wrong (reported). `_check_pipelines` checks N against the cluster's devices."""
    attr = settings.values.get("data_parallel")
    if attr is None:
        return 1
    value = attr.value
    if value.kind == "name" and value.name is not None and value.name.text == "auto":
        out: int | Literal["auto"] = "auto"
    elif value.kind == "quantity":
        sink.error("E214", "`data_parallel` expects `auto` or a plain number (no unit)",
                   value.span, "for example `data_parallel 2`, or `data_parallel auto`")
        return 1
    else:
        most = PIPELINE_COUNTS["data_parallel"]
        number = parse_number(value.number) if value.kind == "number" else math.nan
        if not (math.isfinite(number) and number == int(number) and 1 <= number <= most):
            written = value.name.text if value.name is not None else _value_text(value, 40)
            sink.error("E257", "`data_parallel` must be `auto` or a whole number from 1 to "
                       f"{most}, not `{written}`", value.span,
                       *(did_you_mean(value.name.text, ("auto",)) if value.name else ()),
                       "`data_parallel auto` lets the planner choose each stage's replicas; "
                       "`data_parallel 2` runs two identical pipelines")
            return 1
        out = int(number)
    if out != 1 and schedule.virtual_stages:
        does = "may replicate" if out == "auto" else "replicates"
        sink.error("E256", f"`data_parallel {out}` {does} stages, and replicated stages "
                   f"run under `schedule 1f1b` or `gpipe`, not `{schedule.name}`", value.span,
                   "write `schedule 1f1b` (or `gpipe`), or remove `data_parallel`")
        return 1
    return out


def _check_pipelines(sink: DiagnosticSink, settings: _Attrs, cluster: Cluster,
                     pipeline: Pipeline) -> None:
    """E257 when `data_parallel N` asks for more identical pipelines than the cluster has
    devices (each pipeline needs one device at least)."""
    n, have = pipeline.data_parallel, len(cluster.devices)
    if n == "auto" or n <= have:
        return
    sink.error("E257", f"{n} pipelines need at least {n} devices; cluster `{cluster.name}` "
               f"has {have}", settings.values["data_parallel"].value.span,
               f"set `data_parallel` from 1 to {have}, or `data_parallel auto`"
               if have > 1 else "a one-device cluster runs one pipeline: remove "
               "`data_parallel`")


def _named_choice(sink: DiagnosticSink, settings: _Attrs, key: str, options: Sequence[str],
                  default: str) -> str | None:
    """Setting `key`, one of `options`; `default` when absent, None when unknown (E256)."""
    if key not in settings.values:
        return default
    value = settings.name(key)
    if value not in options:
        if value is not None:
            sink.error("E256", f"unknown {key} `{value}`", settings.values[key].value.span,
                       *did_you_mean(value, options), "one of: " + " | ".join(options))
        return None
    return value


def _count(sink: DiagnosticSink, settings: _Attrs, key: str) -> int | None:
    """Setting `key` as a whole number from 1 to its `PIPELINE_COUNTS` (E257 otherwise), or
    None."""
    most = PIPELINE_COUNTS[key]
    attr = settings.values.get(key)
    if attr is None:
        return None
    if attr.value.kind != "number":
        sink.error("E214", f"`{key}` expects a plain number (no unit)", attr.value.span,
                   f"for example `{key} 8`")
        return None
    value = parse_number(attr.value.number)
    if not (math.isfinite(value) and value == int(value) and 1 <= value <= most):
        sink.error("E257", f"`{key}` must be a whole number from 1 to {most}, not "
                   f"`{attr.value.number}`", attr.value.span, f"for example `{key} 8`")
        return None
    return int(value)


def _unrunnable(graph: Graph, cluster: Cluster) -> list[tuple[int, int]]:
    """(op, first device it cannot run on) for each op with a compute cost that some
    device cannot run (E253); an op with a plain `time` runs everywhere."""
    out = []
    for i, op in enumerate(graph.ops):
        if op.time_s is not None or (op.flops is None and not op.time_by_kind):
            continue
        bad = next((d for d, dev in enumerate(cluster.devices)
                    if compute_time(op, dev) == float("inf")), None)
        if bad is not None:
            out.append((i, bad))
    return out


def _lookup(sink: DiagnosticSink, settings: _Attrs, key: str, table: Mapping[str, _T | None],
            decl: ast.PlanDecl) -> _T | None:
    name = settings.name(key)
    if name is None:
        if key not in settings.values:
            sink.error("E254", f"plan `{decl.name.text}` needs a `{key}`", decl.name.span,
                       f"add `{key} NAME`" + (f"; defined: {', '.join(table)}" if table else ""))
        return None
    if name not in table:
        sink.error("E208", f"unknown {key} `{name}`", settings.values[key].value.span,
                   *did_you_mean(name, table))
        return None
    return table[name]


def _choice(sink: DiagnosticSink, settings: _Attrs, key: str, options: Sequence[str],
            default: str) -> str:
    value = settings.name(key)
    if value is None:
        return default
    if value not in options:
        sink.error("E255", f"unknown {key} model `{value}`", settings.values[key].value.span,
                   *did_you_mean(value, options), "one of: " + " | ".join(options))
        return default
    return value


def _find_cycle(n: int, src: Sequence[int], dst: Sequence[int]) -> list[int] | None:
    """One cycle of the edges `src[k] -> dst[k]` as a list of op indices, or None.

    Kahn's peeling first, which answers None for an acyclic graph (the usual case) in
    two passes over flat lists; only a cyclic one takes the depth-first search (iterative,
    no recursion) that names a cycle.
    """
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for a, b in zip(src, dst, strict=True):
        succ[a].append(b)
        indeg[b] += 1
    ready = [i for i in range(n) if not indeg[i]]
    for v in ready:  # the list grows while it is read
        for w in succ[v]:
            indeg[w] -= 1
            if not indeg[w]:
                ready.append(w)
    if len(ready) == n:
        return None
    state = [0] * n  # 0 new, 1 on stack, 2 done
    parent = [-1] * n
    for root in range(n):
        if state[root]:
            continue
        stack = [(root, 0)]
        state[root] = 1
        while stack:
            v, k = stack[-1]
            if k < len(succ[v]):
                stack[-1] = (v, k + 1)
                w = succ[v][k]
                if state[w] == 0:
                    state[w] = 1
                    parent[w] = v
                    stack.append((w, 0))
                elif state[w] == 1:
                    cycle = [v]
                    while cycle[-1] != w:
                        cycle.append(parent[cycle[-1]])
                    return cycle[::-1]
            else:
                state[v] = 2
                stack.pop()
    return None
