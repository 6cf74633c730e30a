"""The frozen problem model: what the spec language lowers to and the algorithms consume.

Units are in field names (`_s` seconds, `_bytes` bytes, `_Bps` bytes per second,
`_flops` FLOP, `_flop_rate` FLOP per second). Ops and devices are addressed by dense
integer indices; the name -> index maps are built once. Depends on nothing of ours but
`errors` and `schedules` (leaves; the latter the pipeline schedules' table): a constructor
given an index out of range raises `SpecError` located at the caller's line
(`_check_indices`), not a raw `IndexError` later in an algorithm.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal, TypeVar

from . import schedules
from .errors import (
    Diagnostic,
    PlanChoiceError,
    SpecError,
    call_site,
    did_you_mean,
    site_span,
)

T = TypeVar("T")

MemoryModel = Literal["static", "liveness"]
Contention = Literal["none", "link", "device"]
#: a name of `schedules.TABLE` (a `Literal` cannot be derived from the table)
Schedule = str
MEMORY_MODELS: tuple[str, ...] = ("static", "liveness")
CONTENTIONS: tuple[str, ...] = ("none", "link", "device")
OBJECTIVES: tuple[str, ...] = ("makespan", "pipeline")
SCHEDULES: tuple[str, ...] = schedules.NAMES
#: the most micro-batches a plan may ask for (the simulator runs that many copies of the graph)
MAX_MICROBATCHES = 1024
#: the most stages a device may run under `interleaved`
MAX_STAGES_PER_DEVICE = 64
#: the most identical pipelines `data_parallel N` may ask for (N is at most the device count)
MAX_DATA_PARALLEL = 1024
#: the most samples a micro-batch may hold (`microbatch_size`, for the throughput only)
MAX_MICROBATCH_SIZE = 1_048_576
#: each whole-number pipeline setting's largest value (the least is 1): the one table the
#: language (`spec.lower`) and the API (`api.checks`) both check a `Pipeline` against
PIPELINE_COUNTS: Mapping[str, int] = MappingProxyType({
    "microbatches": MAX_MICROBATCHES, "stages_per_device": MAX_STAGES_PER_DEVICE,
    "data_parallel": MAX_DATA_PARALLEL, "microbatch_size": MAX_MICROBATCH_SIZE})


def derived(owner: Any, key: str, build: Callable[[], T]) -> T:
    """`build()`, computed once per `owner` (a frozen `Graph` or `Problem`) and cached on it.

    The model is immutable, so anything computed from it alone (cost tables, placement
    facts, ranks, a scheduler's dense arrays) may be kept beside it under `key`; objects
    made by `dataclasses.replace` start with no cache.
    """
    cache = owner.__dict__
    if key not in cache:
        cache[key] = build()
    return cache[key]  # type: ignore[no-any-return]


def forget(owner: Any) -> None:
    """Drop what `derived` cached on `owner` (keys starting with `_`; the dataclass's own
    fields stay): a command that goes through many problems once each (`check` of a spec
    with thousands of plans) keeps its memory to one problem's tables at a time."""
    cache = owner.__dict__
    for key in [k for k in cache if k.startswith("_")]:
        del cache[key]


@dataclass(frozen=True, slots=True)
class Op:
    """An operator of the graph.

    Its compute time on a device is `time_by_kind[device.kind]` if present, else
    `time_s / device.speed`, else `flops / device.flop_rate` (see `cost.compute_time`).
    """

    name: str
    time_s: float | None = None
    flops: float | None = None
    time_by_kind: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    params_bytes: int = 0
    output_bytes: int = 0
    temp_bytes: int = 0
    #: what kind of op it is, as its source says (`Conv2d`, a module's class, for a model
    #: from PyTorch; `type` in a spec); charts group by it. "" = read from the name
    type: str = ""


@dataclass(frozen=True, slots=True)
class Edge:
    """A tensor from op `src` to op `dst` (indices into `Graph.ops`)."""

    src: int
    dst: int
    bytes: int


_EDGE_SRC, _EDGE_DST, _EDGE_BYTES = (getattr(Edge, f).__set__ for f in ("src", "dst", "bytes"))


def new_edges(src: Iterable[int], dst: Iterable[int], nbytes: Iterable[int]) -> tuple[Edge, ...]:
    """`tuple(map(Edge, src, dst, nbytes))`, built faster by setting the slots (a frozen
    dataclass's `__init__` sets each field through `object.__setattr__`, and a 100k-op graph
    has 200k edges; `Edge` checks nothing in `__init__`)."""
    out: list[Edge] = []
    append = out.append
    new = object.__new__
    for a, b, size in zip(src, dst, nbytes, strict=True):
        e = new(Edge)
        _EDGE_SRC(e, a)
        _EDGE_DST(e, b)
        _EDGE_BYTES(e, size)
        append(e)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Tie:
    """Ops that share one weight of `bytes` (`tie a, b { bytes N }`): each holds a copy,
    counted in its `params`, so the ops may run on different devices.

    Where the holders are forward ops of a training graph, each micro-batch's gradient of
    the weight is summed across the holders' devices after their backward ops (one
    all-reduce of `bytes` per iteration, `cost.allreduce_time`), as Megatron's embedding
    group does; a tie of backward ops (their gradients and optimizer state) or of an
    inference graph costs only memory. Holders on one device keep one copy
    (`cost.tied_duplicate_bytes`).
    """

    ops: tuple[int, ...]  # sorted, at least two
    bytes: int
    #: the weight's name in its model (`shared.weight`), "" when not given: an accelerate
    #: `device_map` key for the module that registers it places no op
    weight: str = ""


@dataclass(frozen=True)
class Graph:
    """Ops, edges, colocation groups (each a sorted tuple of op indices) and ties.

    `backward_of` maps each backward op of a training graph to the forward op it belongs
    to (`op x.bwd { ...; backward_of x }`); every other op is a forward op. A pipeline
    runs the forward ops of a micro-batch, then (in training) its backward ops.

    Not slotted, so derived tables can be cached per instance (`cached_property`).
    """

    name: str
    ops: tuple[Op, ...]
    edges: tuple[Edge, ...]
    colocations: tuple[tuple[int, ...], ...] = ()
    backward_of: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))
    ties: tuple[Tie, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.ops)
        if not _fits(lambda: all(0 <= e.src < n and 0 <= e.dst < n for e in self.edges)
                     and all(0 <= i < n for grp in self.colocations for i in grp)
                     and all(0 <= i < n for t in self.ties for i in t.ops)):
            _bad_index("E203", "op", n, f"graph `{self.name}`", itertools.chain(
                ((f"edges[{k}].{end}", getattr(e, end)) for k, e in enumerate(self.edges)
                 for end in ("src", "dst")),
                ((f"colocations[{g}][{k}]", i) for g, grp in enumerate(self.colocations)
                 for k, i in enumerate(grp)),
                ((f"ties[{g}].ops[{k}]", i) for g, t in enumerate(self.ties)
                 for k, i in enumerate(t.ops))))
        if not _fits(functools.partial(_pairs_below, self.backward_of, n, n)):
            _bad_index("E203", "op", n, f"graph `{self.name}`", itertools.chain.from_iterable(
                ((f"backward_of key {b!r}", b), (f"backward_of[{b!r}]", f))
                for b, f in self.backward_of.items()))

    @cached_property
    def op_index(self) -> Mapping[str, int]:
        """Op name -> index."""
        return MappingProxyType({o.name: i for i, o in enumerate(self.ops)})

    @cached_property
    def successors(self) -> tuple[tuple[int, ...], ...]:
        """Per op, the indices of the edges leaving it (in edge order)."""
        return self._edges_by(0)

    @cached_property
    def predecessors(self) -> tuple[tuple[int, ...], ...]:
        """Per op, the indices of the edges entering it (in edge order)."""
        return self._edges_by(1)

    def _edges_by(self, end: int) -> tuple[tuple[int, ...], ...]:
        """Per op, the indices of the edges whose source (`end` 0) or destination (1) it is."""
        out: list[list[int]] = [[] for _ in self.ops]
        for k, e in enumerate(self.edges):
            out[e.dst if end else e.src].append(k)
        return tuple(tuple(x) for x in out)

    @cached_property
    def topological_order(self) -> tuple[int, ...]:
        """Ops in topological order, ties by smallest index (Kahn with a heap).

        Raises ValueError on a cycle (lowering reports cycles before this can happen).
        """
        n = len(self.ops)
        indeg = [0] * n
        for e in self.edges:
            indeg[e.dst] += 1
        succ = self.successors
        heap = [i for i in range(n) if indeg[i] == 0]
        heapq.heapify(heap)
        order: list[int] = []
        while heap:
            i = heapq.heappop(heap)
            order.append(i)
            for k in succ[i]:
                j = self.edges[k].dst
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(heap, j)
        if len(order) != n:
            raise ValueError(f"graph `{self.name}` has a cycle")
        return tuple(order)

    @cached_property
    def colocation_of(self) -> tuple[int, ...]:
        """Per op, the index of its colocation group in `colocations`, or -1."""
        group = [-1] * len(self.ops)
        for g, members in enumerate(self.colocations):
            for i in members:
                group[i] = g
        return tuple(group)


def indexed_graph(name: str, ops: tuple[Op, ...], edges: tuple[Edge, ...],
                  colocations: tuple[tuple[int, ...], ...], op_index: dict[str, int],
                  backward_of: Mapping[int, int] = MappingProxyType({}),
                  ties: tuple[Tie, ...] = (),
                  topological_order: tuple[int, ...] | None = None) -> Graph:
    """A `Graph` from a builder whose indices all come from its own name table `op_index`
    (lowering: each edge's ends and each group's members are looked up there), which maps
    every op's name to its index; with `topological_order` when the builder knows it.

    Built without `Graph.__post_init__`'s pass over every edge (which such indices cannot
    fail), and with `op_index` as the property's table instead of a second pass over
    100,000s of names.
    """
    graph = object.__new__(Graph)
    for key, value in (("name", name), ("ops", ops), ("edges", edges),
                       ("colocations", colocations), ("backward_of", backward_of),
                       ("ties", ties)):
        object.__setattr__(graph, key, value)  # as the frozen dataclass's __init__ does
    graph.__dict__["op_index"] = MappingProxyType(op_index)  # where cached_property keeps it
    if topological_order is not None:
        graph.__dict__["topological_order"] = topological_order
    return graph


def repeated_graph(graph: Graph, times: int) -> Graph:
    """`times` independent copies of `graph` as one graph, op i of copy k its op
    i + k * n (a pipeline's micro-batches, `planner.pipeline.schedule`): no name table (the
    copies share their names, and nothing looks a copy up by name), colocations, backward
    ops or ties. Its topological order is the graph's, copy after copy, given rather than
    derived again (the copies share no edge)."""
    n = len(graph.ops)
    src = [e.src for e in graph.edges]
    dst = [e.dst for e in graph.edges]
    size = [e.bytes for e in graph.edges]
    edges = new_edges((i + k * n for k in range(times) for i in src),
                      (i + k * n for k in range(times) for i in dst), size * times)
    topo = graph.topological_order
    return indexed_graph(f"{graph.name}*{times}", graph.ops * times, edges, (), {},
                         topological_order=tuple(i + k * n for k in range(times) for i in topo))


@dataclass(frozen=True, slots=True)
class Device:
    """A device: memory cap, optional kind, relative speed, optional FLOP rate."""

    name: str
    memory_bytes: int
    kind: str | None = None
    speed: float = 1.0
    flop_rate: float | None = None


@dataclass(frozen=True, slots=True)
class Link:
    """A directed link between devices `src` and `dst` (indices into `Cluster.devices`)."""

    src: int
    dst: int
    bandwidth_Bps: float
    latency_s: float = 0.0


@dataclass(frozen=True)
class Cluster:
    """Devices and the directed links between them (at most one per ordered pair)."""

    name: str
    devices: tuple[Device, ...]
    links: tuple[Link, ...]

    def __post_init__(self) -> None:
        m = len(self.devices)
        if not _fits(lambda: all(0 <= lk.src < m and 0 <= lk.dst < m for lk in self.links)):
            _bad_index("E207", "device", m, f"cluster `{self.name}`",
                       ((f"links[{k}].{end}", getattr(lk, end))
                        for k, lk in enumerate(self.links) for end in ("src", "dst")))

    @cached_property
    def device_index(self) -> Mapping[str, int]:
        """Device name -> index."""
        return MappingProxyType({d.name: i for i, d in enumerate(self.devices)})

    @cached_property
    def _link_table(self) -> dict[tuple[int, int], Link]:
        return {(lk.src, lk.dst): lk for lk in self.links}

    def link(self, src: int, dst: int) -> Link | None:
        """The link from device `src` to device `dst`, or None."""
        return self._link_table.get((src, dst))


@dataclass(frozen=True, slots=True)
class Pipeline:
    """A plan's `objective pipeline` settings: `microbatches` copies of the graph (one
    micro-batch each) flow through contiguous stages under `schedule` (a name of
    `schedules.TABLE`); under one of virtual stages (`interleaved`), each device runs
    `stages_per_device` stages (Megatron's)."""

    microbatches: int = 1
    schedule: Schedule = schedules.DEFAULT
    stages_per_device: int = 1
    #: 1: one pipeline, each stage on one device; N >= 2: N identical pipelines
    #: (Megatron/DAPPLE), every stage replicated N times; "auto": the planner chooses
    #: each stage's replicas (`planner.pipeline.hybrid`)
    data_parallel: int | Literal["auto"] = 1
    #: samples per micro-batch (for the throughput only)
    microbatch_size: int = 1

    @property
    def schedule_spec(self) -> schedules.Schedule:
        """The schedule's rules (`schedules.TABLE`); KeyError for a name not in it."""
        return schedules.of(self.schedule)

    @property
    def per_device(self) -> int:
        """Stages a device runs: `stages_per_device` under virtual stages, else one."""
        return self.schedule_spec.per_device(self.stages_per_device)

    @property
    def stage_cap(self) -> int | None:
        """The most stages a pipeline may have where the schedule's micro-batches cap them
        (`1f1b`: torch's `Schedule1F1B` needs as many micro-batches as stages), else None:
        the micro-batches each pipeline runs as exported, M // N of `data_parallel N`'s
        (at least 1), all M of one pipeline's or under `data_parallel auto`."""
        if not self.schedule_spec.stages_at_most_microbatches:
            return None
        pipelines = self.data_parallel if isinstance(self.data_parallel, int) else 1
        return max(1, self.microbatches // pipelines)

    @property
    def one_stage_cap(self) -> int | None:
        """`stage_cap` of a split of one stage per device, which a schedule of virtual
        stages runs under its fallback (`interleaved`: 1F1B, torch's `Schedule1F1B`, M //
        N; `hybrid`'s layouts and `pipeilp`'s placements are such splits); else `stage_cap`.
        """
        fallback = self.schedule_spec.fallback
        if not self.schedule_spec.virtual_stages or fallback is None:
            return self.stage_cap
        return replace(self, schedule=fallback, stages_per_device=1).stage_cap


@dataclass(frozen=True)
class Problem:
    """One plan of a spec: a graph on a cluster, with a cost model and constraints.

    `pins` and `placement` map op index -> device index. `placement` is the spec's given
    placement (`place` statements; used by `--algo expert` and `planner simulate`).
    `pipeline` is None under `objective makespan` (one pass through the graph, as fast as
    possible), else the pipeline it is planned for (`planner.pipeline`).
    """

    name: str
    graph: Graph
    cluster: Cluster
    memory_model: MemoryModel = "static"
    contention: Contention = "link"
    pins: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))
    placement: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))
    pipeline: Pipeline | None = None

    def __post_init__(self) -> None:
        n, m = len(self.graph.ops), len(self.cluster.devices)
        for what, table in (("pins", self.pins), ("placement", self.placement)):
            if not _fits(functools.partial(_pairs_below, table, n, m)):
                _bad_index("E203", "op", n, f"graph `{self.graph.name}`",
                           ((f"{what} key {i!r}", i) for i in table))
                _bad_index("E207", "device", m, f"cluster `{self.cluster.name}`",
                           ((f"{what}[{i!r}]", d) for i, d in table.items()))


@dataclass(frozen=True, slots=True)
class Spec:
    """Everything one load produced: graphs, clusters and plans by name, files read."""

    graphs: Mapping[str, Graph]
    clusters: Mapping[str, Cluster]
    plans: Mapping[str, Problem]
    files: tuple[str, ...] = ()

    def plan(self, name: str | None = None) -> Problem:
        """The plan called `name`, or the only plan when `name` is None.

        Raises `PlanChoiceError` otherwise (E602, located at the caller's line, with a
        did-you-mean; a `UsageError` and a `LookupError`).
        """
        if name is None and len(self.plans) == 1:
            return next(iter(self.plans.values()))
        if name is not None and name in self.plans:
            return self.plans[name]
        pick = (f"name one, e.g. `spec.plan({next(iter(self.plans))!r})`",) if self.plans else (
            "add a `plan NAME { graph G  cluster C }` block to the spec",)
        if name is None:
            why = ("the spec defines no plan" if not self.plans else
                   "the spec defines several plans; name one (`spec.plan(NAME)`, `--plan "
                   "NAME`): " + ", ".join(self.plans))
            raise PlanChoiceError(Diagnostic("E602", why, site_span(call_site()), pick))
        raise PlanChoiceError(Diagnostic(
            "E602", f"no plan named `{name}`; the spec defines: "
            + (", ".join(self.plans) or "none"), site_span(call_site()),
            (did_you_mean(name, self.plans) if isinstance(name, str) else ()) or pick))


def _fits(check: Callable[[], bool]) -> bool:
    """`check()`, False where it compares a name or None with an index."""
    try:
        return check()
    except TypeError:
        return False


def _bad_index(code: str, what: str, size: int, owner: str,
               named: Iterable[tuple[str, Any]]) -> None:
    """Raise `SpecError` (`code`, at the caller's line) for the first value of `named`
    (`(path, value)`, e.g. `("edges[3].dst", 7)`) that is not an index below `size`."""
    found = next(((p, v) for p, v in named if not _in_range(v, size)), None)
    if found is None:
        return
    path, bad = found
    hint = (f"{owner} has {size} {what}(s): indices 0..{size - 1}" if size
            else f"{owner} has no {what}s")
    if isinstance(bad, str):
        hint = f"`{path}` takes an index, not a name; planner.ProblemBuilder takes names"
    raise SpecError(Diagnostic(code, f"`{path}`: {bad!r} is not the index of any {what} of "
                               f"{owner}", site_span(call_site()), (hint,)))


def _pairs_below(table: Mapping[int, int], n: int, m: int) -> bool:
    return all(0 <= i < n and 0 <= d < m for i, d in table.items())


def _in_range(v: Any, size: int) -> bool:
    return _fits(lambda: bool(0 <= v < size))
