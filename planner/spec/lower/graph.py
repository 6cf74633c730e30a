"""A graph's declaration lowered: its ops (times, memory, kinds), edges and chains,
colocations, ties, backward ops, and the cycle check.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping, Sequence
from dataclasses import fields
from types import MappingProxyType

from ... import limits
from ...disjoint import Disjoint
from ...errors import DiagnosticSink, Span
from ...model import (
    Cluster,
    Graph,
    Op,
    Tie,
    indexed_graph,
    new_edges,
)
from ...units import (
    RANGES,
    UNIT_TABLE,
    format_bytes,
    parse_number,
    underflows,
    whole_bytes,
)
from .. import ast
from ..ast import EDGE_ATTRS, OP_ATTRS, TIE_ATTRS
from .attrs import Attrs, hints
from .locations import Locations
from .resolve import GlobTable, resolve_op, resolve_ops


# complex: a graph's edges and colocations: the inlined two-op edge (hot at 200k edges), then
# E012 and the other chains (`_chain_edges`), the colocations, ties and the E231 cycle
def lower_graph(sink: DiagnosticSink, decl: ast.GraphDecl, loc: Locations,
                globs: GlobTable, time_kinds: dict[str, list[Span]]) -> Graph | None:
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
                if explicit is not None:
                    edges.given.add(len(src))
                src.append(a)
                dst.append(b)
                nbytes.append(ops[a].output_bytes if explicit is None else explicit)
                edge_spans.append(second.span)
                continue
        if isinstance(item, ast.ChainDecl):
            n_edges += len(item.names) - 1
            if n_edges > lim.edges:
                # every hop written, counted in the tree read already: a hint that suffices
                hops = sum(len(x.names) - 1 for x in decl.items if isinstance(x, ast.ChainDecl))
                sink.error("E012", f"graph `{gname}` has more than {lim.edges:_} edges",
                           item.span, limits.raise_hint("edges", hops, 2 * lim.edges))
                return None
            _chain_edges(sink, item, index, ops, edges, gname)
        elif isinstance(item, ast.ColocateDecl):
            grouped = _colocate(sink, item, index, ops, groups, gname, globs) or grouped
        elif isinstance(item, ast.TieDecl):
            before = len(sink.items) + sink.dropped
            members = resolve_ops(sink, item.ops, index, gname, globs)
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
    """A chain's edges into `edges`: E233 for `<->`, unknown ops said by `resolve_op`,
    E230 for an edge from an op to itself."""
    if item.both_ways is not None:
        sink.error("E233", "an edge has one direction; `<->` is for links",
                   item.both_ways, "write `a -> b`; `a -> b` and `b -> a` would be a cycle")
    ids = [index.get(n.text) for n in item.names]
    if None in ids:
        ids = [resolve_op(sink, n, index, gname) for n in item.names]
    explicit = _edge_bytes(sink, item.attrs) if item.attrs else None
    for n, a, b in zip(item.names[1:], ids, ids[1:], strict=False):
        if a is None or b is None:
            continue
        if a == b:
            sink.error("E230", f"edge from `{n.text}` to itself", n.span,
                       "an op cannot consume its own output")
            continue
        edges.add(a, b, explicit if explicit is not None else ops[a].output_bytes,
                  n.span, explicit is not None)


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


def _colocate(sink: DiagnosticSink, item: ast.ColocateDecl, index: dict[str, int],
              ops: list[Op], groups: Disjoint[int], gname: str, globs: GlobTable) -> bool:
    """Join the ops of one `colocate` in `groups` (whether it named two or more); W236 when
    all its names were found and they are one op, which it cannot constrain (not once
    E015 has stopped the matching of patterns: an unmatched one found nothing)."""
    before = len(sink.items) + sink.dropped
    members = resolve_ops(sink, item.ops, index, gname, globs)
    for m in members[1:]:
        groups.union(members[0], m)
    if (len(set(members)) == 1 and len(sink.items) + sink.dropped == before
            and not globs.budget.glob_reported):
        sink.warning("W236", "a `colocate` needs two ops or more; this one names only "
                     f"`{ops[members[0]].name}`, so it does nothing", item.span,
                     "list the ops that must share one device (`colocate a, b`), or delete it")
    return len(members) > 1


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
        attrs = Attrs(sink, decl.attrs, TIE_ATTRS, "a tie") if decl.attrs else None
        given = attrs.size("bytes") if attrs is not None else None
        if members is None:
            continue
        if len(members) < 2:
            sink.error("E236", "a `tie` needs two ops or more; this one names only "
                       f"`{ops[members[0]].name}`", decl.span,
                       "list the ops that share the weight: `tie wte, lm_head`")
            continue
        at = attrs.values["bytes"].value.span if attrs is not None and "bytes" in attrs.values \
            else decl.span
        nbytes = given if given is not None else min(ops[i].params_bytes for i in members)
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
        f = resolve_op(sink, name, index, gname)
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
            # every op written, counted in the tree read already: a hint that suffices
            written = sum(isinstance(x, ast.OpDecl) for x in decl.items)
            sink.error("E011", f"graph `{gname}` has more than {lim.ops:_} ops",
                       item.name.span, limits.raise_hint("ops", written, 2 * lim.ops))
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
    span. A repeat that gives no `bytes` keeps those given before it (`a -> b { bytes 2 MiB }`
    then the chain `a -> b -> c`): only an edge written with `bytes` is in `given`.

    Repeats are found after reading, by sorting the pairs' int keys `a * n + b` (nearly
    sorted as written, so timsort takes about one pass) rather than by a dict per edge:
    at 200,000 edges such a table outgrows the cache, and its look-ups cost ever more.
    """

    def __init__(self) -> None:
        self.src: list[int] = []
        self.dst: list[int] = []
        self.bytes: list[int] = []
        self.span: list[Span] = []
        #: the edges written with `bytes`, by their place in the lists above
        self.given: set[int] = set()

    def add(self, a: int, b: int, nbytes: int, span: Span, given: bool) -> None:
        if given:
            self.given.add(len(self.src))
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
        given: set[int] = set()
        for i, (key, a, b, nbytes, where) in enumerate(zip(keys, self.src, self.dst,
                                                           self.bytes, self.span, strict=True)):
            k = at.setdefault(key, len(src))
            if k == len(src):
                src.append(a)
                dst.append(b)
                size.append(nbytes)
                span.append(where)
            elif i not in self.given and k in given:
                continue  # written again without `bytes`: the size given before stands
            else:
                size[k] = nbytes
            if i in self.given:
                given.add(k)
        self.src, self.dst, self.bytes, self.span, self.given = src, dst, size, span, given


def _edge_bytes(sink: DiagnosticSink, attrs: Sequence[ast.Attr]) -> int | None:
    """A chain's `bytes` in whole bytes: a lone plain quantity of whole bytes directly,
    anything else through `Attrs` (which reports, and rounds a fraction up: W266)."""
    first, *more = attrs
    if first.key == "bytes" and not more and first.selector is None:
        plain = _plain_quantity(first, "size")
        if plain is not None:
            n, exact = whole_bytes(first.value.number, UNIT_TABLE[first.value.unit][1], plain)
            if exact:
                return n
    return Attrs(sink, attrs, EDGE_ATTRS, "an edge").size("bytes")


def unknown_time_kinds(sink: DiagnosticSink, time_kinds: dict[str, dict[str, list[Span]]],
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
                         *hints(sink, kind, kinds), f"device kinds here: {known}")


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
_OP_UNITS: dict[tuple[str, str], tuple[float, float, float, bool]] = {
    (key, unit): (factor, *RANGES[dim], dim == "size") for key, dim in OP_ATTRS.items()
    if dim in RANGES for unit, (got, factor) in UNIT_TABLE.items() if got == dim}


def _plain_op(item: ast.OpDecl, time_kinds: dict[str, list[Span]]) -> Op | None:
    """The op of a block as most are written (each key known and given once, a selector
    only on `time`, every value a quantity of its key's dimension within range, a size in
    whole bytes, a time or FLOPs given), read without `Attrs`' bookkeeping (100k ops:
    1.5 s); None for any other block, which `_lower_op` reads and reports on.
    (`_plain_quantity` for each value, with `parse_number` and the unit table inlined.)
    The op's `time[KIND]` selectors go to `time_kinds` when it returns an op."""
    given: dict[str, float] = {}
    by_kind: dict[str, float] = {}
    units = _OP_UNITS
    for a in item.attrs:
        v = a.value
        key = a.key
        entry = units.get((key, v.unit))
        if entry is None:
            return None
        factor, lo, hi, size = entry
        value = float(v.number.replace("_", "")) * factor
        if not (lo <= value <= hi or (value == 0 and not underflows(v.number))):
            return None
        if size:  # whole bytes, or `_lower_op` rounds it and says so (W266)
            n, exact = whole_bytes(v.number, factor, value)
            if not exact:
                return None
            value = n
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
    _OP_PARAMS(op, 0 if params is None else int(params))
    _OP_OUTPUT(op, 0 if output is None else int(output))
    _OP_TEMP(op, 0 if temp is None else int(temp))
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
    attrs = Attrs(sink, item.attrs, OP_ATTRS, what, frozenset({"time"}))
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
              attrs.size("params") or 0, attrs.size("output") or 0, attrs.size("temp") or 0,
              attrs.name("type") or "")


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
