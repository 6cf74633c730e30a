"""`ProblemBuilder`: a `Problem` declared by names in Python, checked like a spec.

Each method records what it was given and where it was called from (`errors.call_site`);
`build()` resolves the names and runs the language's checks (`checks.problem_diagnostics`),
then raises one `SpecError` with every mistake, each located at the user's line that made
it. Quantities are numbers in base units (seconds, bytes, FLOP, FLOP/s, B/s) or strings with
a unit as in a spec (`"1.5 ms"`, `"16 GiB"`, `"25 GB/s"`). A problem built is warned about
what its spec would be (W256, W257, W258: `advice`; W236, W266: its calls), with
`warnings.warn` (`errors.warn_user`), each at the call that made the item; a build that
raises holds the calls' W236 and W266 with its errors, as a spec's `SpecError` holds its
warnings.
"""

from __future__ import annotations

import itertools
import json
import math
import numbers
import re
import reprlib
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from .. import schedules
from ..disjoint import Disjoint
from ..errors import (
    CallSite,
    DiagnosticSink,
    Severity,
    Span,
    call_site,
    did_you_mean,
    site_span,
    warn_user,
)
from ..model import Cluster, Device, Edge, Graph, Link, Op, Pipeline, Problem
from ..units import (
    EXAMPLES,
    UNIT_TABLE,
    closest_unit,
    parse_number,
    range_side,
    range_text,
    underflows,
    whole_bytes,
)
from .advice import problem_warnings
from .checks import check_problem

if TYPE_CHECKING:
    import networkx  # type: ignore[import-untyped, unused-ignore]

#: a quantity: a number in base units, or text with a unit (`"1.5 ms"`)
Quantity: TypeAlias = "float | int | str"
#: one name, or several
Names: TypeAlias = "str | Iterable[str]"
#: a name and the call that used it -> its index, or None (an error in the build's sink)
_Resolve: TypeAlias = "Callable[[str, CallSite | None], int | None]"

_QUANTITY = re.compile(r"\s*([+-]?(?:[0-9][0-9_]*\.?[0-9_]*|\.[0-9_]+)(?:[eE][+-]?[0-9]+)?)"
                       r"\s*([A-Za-z][A-Za-z/]*)?\s*")
_OP_KEYS = ("time", "flops", "time_by_kind", "params", "output", "temp", "backward_of")
_WORDS = {"time": "time", "size": "size", "bandwidth": "bandwidth", "work": "FLOP count",
          "rate": "FLOP rate"}


class ProblemBuilder:
    """Declare ops, edges, devices, links, pins and colocation by name; `build()` a
    `Problem`.

    >>> b = ProblemBuilder("tiny")
    >>> b.op("a", time="1 ms", output="1 MB")
    >>> b.op("b", time="2 ms")
    >>> b.edge("a", "b")
    >>> b.device("gpu0", memory="16 GiB")
    >>> len(b.build().graph.ops)
    2
    """

    def __init__(self, name: str = "problem", *, memory: str = "static",
                 contention: str = "link", graph: str | None = None,
                 cluster: str | None = None) -> None:
        """`name` of the plan; `memory` (`static` | `liveness`) and `contention` (`none` |
        `link` | `device`) pick the cost model; `graph` and `cluster` name the parts
        (`TypeError` for a name that is no str: `ProblemBuilder(3)` planned `3_cluster`)."""
        for label, value in (("name", name), ("graph", graph), ("cluster", cluster)):
            if not isinstance(value, str) and (label == "name" or value is not None):
                raise TypeError(f"ProblemBuilder: `{label}` must be a str, not "
                                f"{type(value).__name__}")
        self.name = name
        self.memory, self.contention = memory, contention
        self.graph_name, self.cluster_name = graph or name, cluster or f"{name}_cluster"
        self._site = call_site()
        self._sink = DiagnosticSink()
        #: what was given where a name belongs and is none (E213 said): not looked up again
        self._not_names: set[str] = set()
        self._ops: list[tuple[Op, CallSite | None]] = []
        self._edges: list[tuple[str, str, int | None, CallSite | None]] = []
        self._devices: list[tuple[Device, CallSite | None]] = []
        self._links: list[tuple[list[str], list[str], float, float, bool,
                                CallSite | None]] = []
        self._pins: list[tuple[list[str], str, bool, CallSite | None]] = []
        self._colocations: list[tuple[list[str], CallSite | None]] = []
        #: backward op -> (its forward op, the call that said so)
        self._backward: dict[str, tuple[str, CallSite | None]] = {}
        self._pipeline: tuple[Pipeline, CallSite | None] | None = None

    # -- the graph ---------------------------------------------------------------------

    def op(self, name: str, *, time: Quantity | None = None, flops: Quantity | None = None,
           time_by_kind: Mapping[str, Quantity] | None = None, params: Quantity = 0,
           output: Quantity = 0, temp: Quantity = 0, backward_of: str | None = None) -> None:
        """An op: its compute `time` (or `flops`, or `time_by_kind` per device kind), its
        resident `params`, its `output` tensor and its `temp` workspace; `backward_of` names
        the forward op whose gradient it computes (a training step's backward op, as
        `backward_of` in a spec: a pipeline runs it in the backward pass)."""
        site = call_site()
        if backward_of is not None:
            self._backward[str(name)] = (self._name(backward_of, "op", site), site)
        by_kind = {str(k): t for k, v in self._by_kind(time_by_kind, site).items()
                   if (t := self._q(v, "time", f"time_by_kind[{k!r}]", site)) is not None}
        self._ops.append((Op(self._name(name, "op", site),
                             self._q(time, "time", "time", site),
                             self._q(flops, "work", "flops", site), MappingProxyType(by_kind),
                             self._bytes(params, "params", site),
                             self._bytes(output, "output", site),
                             self._bytes(temp, "temp", site)), site))

    def edge(self, src: str, dst: str, *, bytes: Quantity | None = None) -> None:
        """A tensor from op `src` to op `dst`: `bytes`, else the producer's `output`."""
        site = call_site()
        self._edges.append((self._name(src, "op", site), self._name(dst, "op", site),
                            self._size(bytes, "bytes", site), site))

    def chain(self, *ops: str, bytes: Quantity | None = None) -> None:
        """Edges `ops[0] -> ops[1] -> ...` (a spec's `a -> b -> c`)."""
        site = call_site()
        size = self._size(bytes, "bytes", site)
        names = [self._name(o, "op", site, "chain") for o in ops]
        self._edges.extend((a, b, size, site) for a, b in itertools.pairwise(names))

    def colocate(self, *ops: str) -> None:
        """Force `ops` onto one device (one op alone: W236 at `build()`, as a spec's
        `colocate a`)."""
        site = call_site()
        self._colocations.append(([self._name(o, "op", site, "colocate") for o in ops], site))

    @classmethod
    def from_networkx(cls, graph: networkx.DiGraph, /, name: str = "problem",
                      **options: Any) -> ProblemBuilder:
        """A builder holding the ops and edges of a `networkx.DiGraph`: node attributes
        are `op`'s keywords (`time`, `flops`, `time_by_kind`, `params`, `output`,
        `temp`, `backward_of`: a node), the edge attribute `bytes`; node names become op
        names (`str(node)`).
        Parallel edges of a `MultiDiGraph` are tensors sent together: one edge of their
        bytes summed (each without `bytes`, the producer's `output`); an undirected graph
        is E233. `options` go to `ProblemBuilder(...)`; add devices and links before
        `build()`."""
        if not callable(getattr(graph, "is_directed", None)):  # before: AttributeError
            raise TypeError(f"`graph` must be a networkx graph (a DiGraph), not a "
                            f"{type(graph).__name__}")
        builder = cls(name, **options)
        site = builder._site
        if not graph.is_directed():  # each edge's direction would be networkx's listing order
            builder._sink.error("E233", "an undirected networkx graph: edges have one "
                                "direction", site_span(site),
                                "give a networkx.DiGraph (graph.to_directed() makes both ways, "
                                "a cycle)")
        for node, attrs in graph.nodes(data=True):
            unknown = sorted(set(attrs) - set(_OP_KEYS), key=str)
            for key in unknown:
                builder._sink.error("E210", f"unknown attribute `{key}` of node `{node}`",
                                    site_span(site), *did_you_mean(str(key), _OP_KEYS),
                                    "node attributes: " + ", ".join(_OP_KEYS))
            keywords: dict[str, Any] = {k: v for k, v in attrs.items() if k in _OP_KEYS}
            if "backward_of" in keywords:  # a node, named as its op is
                keywords["backward_of"] = str(keywords["backward_of"])
            builder.op(str(node), **keywords)
        sizes: dict[tuple[str, str], list[Any]] = {}
        for a, b, attrs in graph.edges(data=True):
            for key in sorted(set(attrs) - {"bytes"}, key=str):
                builder._sink.error("E210", f"unknown attribute `{key}` of edge `{a}` -> "
                                    f"`{b}`", site_span(site), "edge attributes: bytes")
            sizes.setdefault((str(a), str(b)), []).append(attrs.get("bytes"))
        node_of = {str(n): n for n in graph.nodes} if graph.is_multigraph() else {}
        for (a, b), given in sizes.items():
            if len(given) == 1:
                builder.edge(a, b, bytes=given[0])
                continue
            output = graph.nodes[node_of[a]].get("output", 0)
            each = [builder._q(output if g is None else g, "size", "bytes", site)
                    for g in given]
            builder.edge(a, b, bytes=None if None in each else sum(q or 0.0 for q in each))
        return builder  # each op and edge is located at the user's from_networkx call

    # -- the cluster -------------------------------------------------------------------

    def device(self, name: str, *, memory: Quantity, kind: str | None = None,
               speed: float = 1.0, flops: Quantity | None = None) -> None:
        """A device: its `memory` cap, optional `kind` (for `time_by_kind`), relative
        `speed` (divides `time`) and FLOP rate `flops`."""
        site = call_site()
        if memory is None:  # before: a device of 0 bytes, and only the plans that broke it
            self._sink.error("E240", "device needs `memory`", site_span(site),
                             'for example memory="16 GiB"')
        if kind is not None and not isinstance(kind, str):  # before: kept, matching no kind
            self._sink.error("E213", f"`kind` expects a name, not {kind!r}", site_span(site),
                             f'give it as text: kind="{kind}"')
        self._devices.append((Device(self._name(name, "device", site),
                                     self._bytes(memory, "memory", site, down=True),
                                     kind, speed, self._q(flops, "rate", "flops", site)),
                              site))

    def link(self, src: Names, dst: Names, *, bandwidth: Quantity, latency: Quantity = 0,
             both_ways: bool = True) -> None:
        """Links from every device of `src` to every device of `dst` (and back, unless
        `both_ways=False`); a later link overrides an earlier one for the same pair."""
        site = call_site()
        if bandwidth is None:  # `_q`'s "absent": read as 0, it was E241 "not 0.0", twice
            self._sink.error("E290", "`bandwidth` expects a bandwidth, not None",
                             site_span(site), "a number in bytes per second or text such as "
                             f"\"{EXAMPLES['bandwidth']}\"")
            return
        bw = self._q(bandwidth, "bandwidth", "bandwidth", site)
        lat = self._q(latency, "time", "latency", site)
        self._links.append((self._names(src, "device", site), self._names(dst, "device", site),
                            0.0 if bw is None else bw, lat or 0.0, both_ways, site))

    # -- the plan ----------------------------------------------------------------------

    def pipeline(self, microbatches: int, *, schedule: str = schedules.DEFAULT,
                 stages_per_device: int = 1, data_parallel: int | Literal["auto"] = 1,
                 microbatch_size: int = 1) -> None:
        """Plan a pipeline, as a spec's `objective pipeline` with its settings:
        `microbatches` copies of the graph under `schedule` (`gpipe`, `1f1b`,
        `interleaved` with `stages_per_device`), `data_parallel` (N, or `"auto"`: hybrid),
        `microbatch_size` samples each (for the throughput)."""
        counts = [_int(v) for v in (microbatches, stages_per_device, data_parallel,
                                    microbatch_size)]
        self._pipeline = (Pipeline(counts[0], schedule, counts[1], counts[2], counts[3]),
                          call_site())

    def pin(self, ops: Names, device: str) -> None:
        """A hard constraint: `ops` run on `device`, for every algorithm."""
        site = call_site()
        self._pins.append((self._names(ops, "op", site), self._name(device, "device", site),
                           True, site))

    def place(self, ops: Names, device: str) -> None:
        """A given placement (used by `solve(..., "expert")`)."""
        site = call_site()
        self._pins.append((self._names(ops, "op", site), self._name(device, "device", site),
                           False, site))

    # -- build -------------------------------------------------------------------------

    def build(self) -> Problem:
        """The `Problem`; raises `SpecError` with every mistake, each at its call; issues
        its warnings (a spec's W-codes) as `planner.PlannerWarning`s."""
        build_site = call_site()
        # the calls' own mistakes, and this build's: a builder may be fixed and built again
        sink = DiagnosticSink(list(self._sink.items), self._sink.dropped)
        ops, op_sites, op_index = _unique(sink, self._ops, "op", f"graph `{self.graph_name}`")
        devs, dev_sites, dev_index = _unique(sink, self._devices, "device",
                                             f"cluster `{self.cluster_name}`")

        def op_of(name: str, site: CallSite | None) -> int | None:
            i = op_index.get(name)
            if i is None and name not in self._not_names:
                sink.error("E203", f"unknown op `{name}` in graph `{self.graph_name}`",
                           site_span(site), *did_you_mean(name, op_index),
                           "declare it with op(NAME, ...)")
            return i

        def dev_of(name: str, site: CallSite | None) -> int | None:
            d = dev_index.get(name)
            if d is None and name not in self._not_names:
                sink.error("E207", f"unknown device `{name}` in cluster "
                           f"`{self.cluster_name}`", site_span(site),
                           *did_you_mean(name, dev_index), "declare it with device(NAME, ...)")
            return d

        edges = self._edge_table(op_of, ops)
        links = self._link_table(dev_of)
        pins, placement, pin_sites = self._pin_tables(sink, op_of, dev_of, ops, devs)
        groups, group_sites = self._groups(sink, op_of, ops)
        backward = {b: f for name, (fwd, site) in self._backward.items()
                    if (b := op_index.get(name)) is not None
                    and (f := op_of(fwd, site)) is not None}
        sink.raise_if_errors()

        edge_keys = list(edges)
        graph = Graph(self.graph_name, tuple(ops),
                      tuple(Edge(a, b, edges[(a, b)][0]) for a, b in edge_keys), groups,
                      MappingProxyType(backward))
        link_keys = sorted(links)
        cluster = Cluster(self.cluster_name, tuple(devs),
                          tuple(links[k][0] for k in link_keys))
        problem = Problem(self.name, graph, cluster, self.memory,  # type: ignore[arg-type]
                          self.contention,  # type: ignore[arg-type]
                          MappingProxyType(dict(sorted(pins.items()))),
                          MappingProxyType(dict(sorted(placement.items()))),
                          self._pipeline[0] if self._pipeline else None)
        where: dict[str, list[CallSite | None]] = {
            "graph.ops": op_sites, "cluster.devices": dev_sites,
            "graph.edges": [edges[k][1] for k in edge_keys],
            "cluster.links": [links[k][1] for k in link_keys],
            "graph.colocations": group_sites,
            "pins": [pin_sites.get(i) for i in range(len(ops))],
            "graph.backward_of": [self._backward.get(o.name, ("", None))[1] for o in ops]}

        def locate(path: str) -> Span | None:
            if path.startswith("pipeline") and self._pipeline:
                return site_span(self._pipeline[1])
            m = _PATH.match(path)
            sites = where.get(m.group(1), []) if m else []
            k = int(m.group(2)) if m else -1
            site = sites[k] if 0 <= k < len(sites) else None
            return site_span(site or (self._site if m is None else build_site))

        warned = [d for d in sink.items if d.severity is Severity.WARNING]
        check_problem(problem, locate, warned)
        warn_user([*warned, *problem_warnings(problem, locate)])
        return problem

    def _edge_table(self, op_of: _Resolve, ops: list[Op]
                    ) -> dict[tuple[int, int], tuple[int, CallSite | None]]:
        """(src, dst) -> (bytes, the first call that declared it); a repeated edge keeps
        the last size."""
        edges: dict[tuple[int, int], tuple[int, CallSite | None]] = {}
        for a_name, b_name, size, site in self._edges:
            a, b = op_of(a_name, site), op_of(b_name, site)
            if a is not None and b is not None:
                nbytes = ops[a].output_bytes if size is None else size
                edges[(a, b)] = (nbytes, edges.get((a, b), (0, site))[1])
        return edges

    def _link_table(self, dev_of: _Resolve
                    ) -> dict[tuple[int, int], tuple[Link, CallSite | None]]:
        """(src, dst) -> (the link, the call that declared it last)."""
        links: dict[tuple[int, int], tuple[Link, CallSite | None]] = {}
        for srcs, dsts, bw, lat, both, site in self._links:
            s_ids = [d for n in srcs if (d := dev_of(n, site)) is not None]
            d_ids = [d for n in dsts if (d := dev_of(n, site)) is not None]
            for a in s_ids:
                for b in d_ids:
                    if a != b:
                        links[(a, b)] = (Link(a, b, bw, lat), site)
                        if both:
                            links[(b, a)] = (Link(b, a, bw, lat), site)
        return links

    def _pin_tables(self, sink: DiagnosticSink, op_of: _Resolve, dev_of: _Resolve,
                    ops: list[Op], devs: list[Device]
                    ) -> tuple[dict[int, int], dict[int, int], dict[int, CallSite | None]]:
        """(pins, the given placement, op -> the first call that pinned it); an op pinned
        or placed on two devices is an E250 in `sink`."""
        pins: dict[int, int] = {}
        placement: dict[int, int] = {}
        pin_sites: dict[int, CallSite | None] = {}
        for names, dev_name, hard, site in self._pins:
            d = dev_of(dev_name, site)
            table = pins if hard else placement
            for i in (op_of(n, site) for n in names):
                if i is None or d is None:
                    continue
                if table.get(i, d) != d:
                    verb = "pinned" if hard else "placed"
                    sink.error("E250", f"op `{ops[i].name}` is {verb} on both "
                               f"`{devs[table[i]].name}` and `{dev_name}`", site_span(site),
                               f"an op is {verb} on one device; keep one of the two")
                table[i] = d
                if hard:
                    pin_sites.setdefault(i, site)
        return pins, placement, pin_sites

    def _groups(self, sink: DiagnosticSink, op_of: Any, ops: list[Op]
                ) -> tuple[tuple[tuple[int, ...], ...], list[CallSite | None]]:
        """The colocation groups, and the call that first named each; W236 for a
        `colocate(...)` whose names are all ops and one op (a spec's `colocate a`)."""
        n = len(ops)
        sets: Disjoint[int] = Disjoint(range(n))
        first_site: dict[int, CallSite | None] = {}
        for names, site in self._colocations:
            members = [i for name in names if (i := op_of(name, site)) is not None]
            for i in members:
                first_site.setdefault(i, site)
            for m in members[1:]:
                sets.union(members[0], m)
            if len(set(members)) == 1 and len(members) == len(names):
                name = ops[members[0]].name
                sink.warning("W236", "a `colocate` needs two ops or more; this one names only "
                             f"`{name}`, so it does nothing", site_span(site),
                             "name every op that must share one device: colocate("
                             f"{json.dumps(name, ensure_ascii=False)}, \"x\", ...), or delete "
                             "the call")
        groups = sorted(tuple(g) for g in sets.groups(range(n)))
        return tuple(groups), [first_site.get(g[0]) for g in groups]

    # -- values ------------------------------------------------------------------------

    def _by_kind(self, value: Any, site: CallSite | None) -> Mapping[Any, Any]:
        """`time_by_kind` as a mapping ({} with E290 recorded for anything else: before, an
        AttributeError from `.items()`)."""
        if value is None or isinstance(value, Mapping):
            return value or {}
        self._sink.error("E290", f"`time_by_kind` expects a mapping of device kind to time, "
                         f"not {value!r}", site_span(site),
                         'for example time_by_kind={"v100": "1.5 ms"}')
        return {}

    def _name(self, value: Any, what: str, site: CallSite | None, call: str = "") -> str:
        """`value`, a name, or E213; `call`: the method that takes names as arguments
        (`colocate`, `chain`), whose form the hint shows."""
        if isinstance(value, str) and value:
            return value
        if call:  # not `op("x", ...)`: the method's own form, with the names given in a list
            given = list(value) if isinstance(value, (list, tuple)) else []
            names = [n for n in given if isinstance(n, str) and n] or ["a", "b"]
            form = f"{call}({', '.join(json.dumps(n, ensure_ascii=False) for n in names)})"
            hint = f"give the names as separate arguments: {form}, or {call}(*names)" \
                if given else f"for example {form}"
        else:
            hint = f"for example {what}(\"x\", ...)" if what in ("op", "device") else ""
        self._sink.error("E213", f"{what} names are non-empty strings, not {value!r}",
                         site_span(site), hint)
        self._not_names.add(str(value))
        return str(value)

    def _names(self, value: Names, what: str, site: CallSite | None) -> list[str]:
        # one name, or a list of them; anything else is one (wrong) name, E213 below
        items = list(value) if isinstance(value, Iterable) and not isinstance(value, str) \
            else [value]
        return [self._name(v, what, site) for v in items]

    def _bytes(self, value: Quantity, key: str, site: CallSite | None, down: bool = False
               ) -> int:
        n = self._size(value, key, site, down)
        return 0 if n is None else n

    def _size(self, value: Quantity | None, key: str, site: CallSite | None,
              down: bool = False) -> int | None:
        """A size in whole bytes as a spec's: rounded up, or down (`down`: a device's
        `memory`), exactly from a text's digits (`"1.001 KB"`: 1001 B, whatever its float);
        None if absent (or an error recorded)."""
        q = self._q(value, "size", key, site)
        if q is None:
            return None
        m = _QUANTITY.fullmatch(value) if isinstance(value, str) else None
        if m is not None and m.group(2) is not None:
            n, exact = whole_bytes(m.group(1), UNIT_TABLE[m.group(2)][1], q, down)
        else:
            n = math.floor(q) if down else math.ceil(q)
            exact = n == q
        if not exact:  # as a spec's `params 1.5 B` is
            way = "a device's `memory` rounds down, an op's or an edge's size up" if down \
                else "an op's or an edge's size rounds up, a device's `memory` down"
            self._sink.warning("W266", f"`{key}` {value!r} is not a whole number of bytes: "
                               f"read as {n} B", site_span(site),
                               f"sizes are whole bytes ({way}); give {key}={n} to say so")
        return n

    def _q(self, value: Quantity | None, dim: str, key: str,
           site: CallSite | None) -> float | None:
        """`value` in base units, or None (absent, or an error recorded)."""
        if value is None:
            return None
        where, word = site_span(site), _WORDS[dim]
        if isinstance(value, numbers.Real) and not isinstance(value, bool):  # numpy's too
            try:
                number = float(value)
            except OverflowError:  # an int beyond a double (before: a bare OverflowError)
                self._sink.error("E223", f"`{key}` {reprlib.repr(value)} is "
                                 f"{'above' if value > 0 else 'below'} the valid range of a "
                                 f"{word}", where, f"a {word} is {range_text(dim)}")
                return None
            return self._sized(number, dim, key, where)  # the model's checks: the rest

        if not isinstance(value, str):
            self._sink.error("E290", f"`{key}` expects a {word}, not {value!r}", where,
                             f"a number in base units or text such as \"{EXAMPLES[dim]}\"")
            return None
        m = _QUANTITY.fullmatch(value)
        if m is None:
            self._sink.error("E221", f"`{key}` expects a {word}, not {value!r}", where,
                             f"for example \"{EXAMPLES[dim]}\"")
            return None
        number, unit = parse_number(m.group(1)), m.group(2)
        if unit is None:
            self._sink.error("E220", f"`{key}` needs a unit: {value!r}", where,
                             f"for example \"{EXAMPLES[dim]}\", or a number in base units")
            return None
        if unit not in UNIT_TABLE:
            close = closest_unit(unit, (dim,))
            self._sink.error("E103", f"unknown unit `{unit}` in `{key}`", where,
                             *([f"did you mean `{close}`?"] if close else []))
            return None
        unit_dim, factor = UNIT_TABLE[unit]
        if unit_dim != dim:
            self._sink.error("E222", f"`{key}` expects a {word}, but `{unit}` is a unit of "
                             f"{_WORDS[unit_dim]}", where, f"for example \"{EXAMPLES[dim]}\"")
            return None
        if number * factor == 0 and underflows(m.group(1)):  # the language's E260
            self._sink.error("E260", f"`{key}` {value!r} is below the valid range of a {word} "
                             "(it is not 0, but a 64-bit float rounds it to 0)", where,
                             f"a {word} is {range_text(dim)}")
            return None
        return self._sized(number * factor, dim, key, where)

    def _sized(self, q: float, dim: str, key: str, where: Span | None) -> float | None:
        """`q`; for a size, None with E290 (NaN), E223 (infinite, `1e400 B`) or E260 (above
        0 but below 1 B, as a spec's lowering says) recorded: a size becomes whole bytes,
        rounded as a spec's are, which none of those survives (the model's checks judge every
        other quantity, NaN and inf included, and a negative size: E105)."""
        if dim != "size":
            return q
        if math.isnan(q):
            self._sink.error("E290", f"`{key}` is NaN", where, "give a number")
        elif math.isinf(q):
            self._sink.error("E223", f"`{key}` is infinite", where, "give a finite number")
        elif q > 0 and range_side(q, "size") == "below":  # the spec's `params 0.5 B`: not 0
            self._sink.error("E260", f"`{key}` ({q:g} B) is below the valid range of a size",
                             where, f"a size is {range_text('size')}")
        else:
            return q
        return None


_PATH = re.compile(r"(graph\.ops|graph\.edges|graph\.colocations|graph\.backward_of|"
                   r"cluster\.devices|cluster\.links|pins)\[(\d+)\]")


def _int(value: Any) -> Any:
    """A whole number as Python's int (`numpy.int64(4)` micro-batches were E257, "must be a
    whole number from 1 to 1024, not np.int64(4)"); anything else as given, for the checks."""
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    return int(value) if whole else value


def _unique(sink: DiagnosticSink, items: list[tuple[Any, CallSite | None]], what: str,
            owner: str) -> tuple[list[Any], list[CallSite | None], dict[str, int]]:
    """The named items without repeats (E202 / E205 at the repeat), sites, name -> index."""
    kept: list[Any] = []
    sites: list[CallSite | None] = []
    index: dict[str, int] = {}
    for item, site in items:
        if item.name in index:
            first = site_span(sites[index[item.name]])
            sink.error("E202" if what == "op" else "E205",
                       f"{what} `{item.name}` is defined twice in {owner}", site_span(site),
                       notes=(("first definition", first),) if first else ())
            continue
        index[item.name] = len(kept)
        kept.append(item)
        sites.append(site)
    return kept, sites, index
