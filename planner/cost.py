"""The cost model: the one place its formulas live.

- compute time of op `i` on device `d` (`compute_time`),
- transfer time of `bytes` from device `a` to device `b`: `latency + bytes / bandwidth`
  (0 on the same device, infinite without a link),
- static memory of a placement (`static_memory`): per device, the `params` and `output` of
  its ops, each tensor it receives from another device (once per producer, the largest
  `bytes` among the edges to that device), and the largest `temp` among its ops,
- tied weights (`tie`): each holder keeps a copy in its `params`; holders on one device
  keep one (`tied_duplicate_bytes`, subtracted by the pipeline's stage memory; the
  one-pass static memory counts each holder's, an over-count where holders share a
  device); in training the holders' devices all-reduce the weight's gradient once per
  iteration (`allreduce_time`, a ring all-reduce over the slowest link among them:
  `2 (n - 1) / n * bytes / bandwidth + 2 (n - 1) * latency`).

Algorithms and the simulator both call these; `Costs` holds them as dense tables built
once per problem (`costs(problem)`), `Columns` the graph's sizes and edges as numpy arrays
built once per graph (`columns(graph)`; numpy is imported on first use, not with this
module, so that `planner check` on a small spec never loads it).

Twin: `planner.algorithms.listsched._engine_kernel` repeats `StaticMemoryTracker.extra` and
`place` (the ETF engine's memory); the hand-derived battery (`tests/algorithms`, with the
`list_engine` fixture) and `tests/algorithms/test_engine_kernel.py` run over both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING

from .model import Cluster, Device, Graph, Op, Problem, derived

if TYPE_CHECKING:
    import numpy as np

INF = math.inf
#: from this many ops on, `static_memory` sums with numpy over `columns(graph)`; below,
#: a Python loop is faster than the arrays' set-up
VECTOR_MIN_OPS = 2_000
_EXACT_LIMIT = float(2**62)  # sums of int64 arrays below this cannot overflow


def compute_time(op: Op, device: Device) -> float:
    """Seconds `op` takes on `device`; `inf` if the device cannot run it.

    `time[kind]` for the device's kind, else `time / speed`, else `flops / flop rate`.
    """
    if device.kind is not None and device.kind in op.time_by_kind:
        return op.time_by_kind[device.kind]
    if op.time_s is not None:
        return op.time_s / device.speed
    if op.flops is not None and device.flop_rate:
        return op.flops / device.flop_rate
    return INF


@dataclass(frozen=True)
class Costs:
    """Dense cost tables of one problem, indexed by op and device indices.

    `compute[i][d]` seconds; `latency[a][b]` seconds and `inv_bandwidth[a][b]` s/B
    (both `inf` where no link exists, 0 on the diagonal).
    """

    compute: tuple[tuple[float, ...], ...]
    latency: tuple[tuple[float, ...], ...]
    inv_bandwidth: tuple[tuple[float, ...], ...]

    def transfer_time(self, nbytes: float, a: int, b: int) -> float:
        """Seconds to move `nbytes` from device `a` to device `b` (0 when a == b)."""
        if a == b:
            return 0.0
        lat = self.latency[a][b]
        # no link: never, also for 0 bytes (inf + 0 * inf would be NaN)
        return lat + nbytes * self.inv_bandwidth[a][b] if lat < INF else INF

    def mean_compute(self, i: int) -> float:
        """Mean compute time of op `i` over the devices that can run it."""
        finite = [t for t in self.compute[i] if t < INF]
        return sum(finite) / len(finite) if finite else INF

    def mean_transfer(self, nbytes: float) -> float:
        """Mean transfer time of `nbytes` over all ordered pairs of distinct linked devices."""
        n = len(self.latency)
        if n < 2:
            return 0.0
        total, count = 0.0, 0
        for a in range(n):
            for b in range(n):
                if a != b and self.latency[a][b] < INF:
                    total += self.latency[a][b] + nbytes * self.inv_bandwidth[a][b]
                    count += 1
        return total / count if count else 0.0

    @property
    def mean_latency(self) -> float:
        """Mean latency over ordered pairs of distinct linked devices."""
        return self.mean_transfer(0.0)

    @property
    def mean_inv_bandwidth(self) -> float:
        """Mean seconds per byte over ordered pairs of distinct linked devices."""
        return self.mean_transfer(1.0) - self.mean_transfer(0.0)


def allreduce_time(c: Costs, nbytes: float, devices: Sequence[int]) -> float:
    """Seconds a ring all-reduce of `nbytes` takes among `devices` (distinct): `2 (n - 1)`
    steps, each sending `nbytes / n` over the slowest link among them, so
    `2 (n - 1) / n * nbytes / bandwidth + 2 (n - 1) * latency` with the least bandwidth and
    the largest latency of any pair; 0 on one device, `inf` where a pair has no link."""
    n = len(devices)
    if n < 2:
        return 0.0
    inv_bw = max(c.inv_bandwidth[a][b] for a in devices for b in devices if a != b)
    latency = max(c.latency[a][b] for a in devices for b in devices if a != b)
    if inv_bw >= INF or latency >= INF:
        return INF
    steps = 2 * (n - 1)
    return steps * latency + steps / n * nbytes * inv_bw


def tied_duplicate_bytes(graph: Graph, placement: Sequence[int], n_devices: int) -> list[int]:
    """Per device, the bytes its ops' `params` count more than once because several
    holders of one tie run there (each holds the weight; the device keeps one copy)."""
    out = [0] * n_devices
    for tie in graph.ties:
        held: dict[int, int] = {}
        for i in tie.ops:
            held[placement[i]] = held.get(placement[i], 0) + 1
        for d, k in held.items():
            if 0 <= d < n_devices:
                out[d] += (k - 1) * tie.bytes
    return out


def build_costs(problem: Problem) -> Costs:
    """Build the dense tables of `problem` (prefer the cached `costs`)."""
    devices = problem.cluster.devices
    speeds = [d.speed for d in devices]
    compute = tuple(
        # the common case (a plain `time`, no per-kind times) without a call per device
        tuple(op.time_s / sp for sp in speeds) if op.time_s is not None and not op.time_by_kind
        else tuple(compute_time(op, d) for d in devices)
        for op in problem.graph.ops)
    n = len(devices)
    lat = [[INF] * n for _ in range(n)]
    inv = [[INF] * n for _ in range(n)]
    for a in range(n):
        lat[a][a] = inv[a][a] = 0.0
    for lk in problem.cluster.links:
        lat[lk.src][lk.dst] = lk.latency_s
        inv[lk.src][lk.dst] = 1.0 / lk.bandwidth_Bps
    return Costs(compute, tuple(map(tuple, lat)), tuple(map(tuple, inv)))


def costs(problem: Problem) -> Costs:
    """The cost tables of `problem`, built on first use and cached on the problem. They
    depend on its graph and cluster alone, so the plans that share both share one table
    (kept on the graph, by cluster): thousands of plans of one graph cost one table."""
    return derived(problem, "_costs", lambda: _shared_costs(problem))


def with_costs(problem: Problem, table: Costs) -> Problem:
    """`problem`, new and not yet costed, with `table` as its cost tables (`costs`): for a
    problem built from another whose tables give its own (a pipeline's micro-batch copies,
    `planner.pipeline.schedule`)."""
    derived(problem, "_costs", lambda: table)
    return problem


def _shared_costs(problem: Problem) -> Costs:
    by_cluster: dict[int, tuple[Cluster, Costs]] = derived(problem.graph, "_costs_by_cluster",
                                                           dict)
    entry = by_cluster.get(id(problem.cluster))
    if entry is None or entry[0] is not problem.cluster:  # (the cluster is kept alive too)
        entry = by_cluster[id(problem.cluster)] = (problem.cluster, build_costs(problem))
    return entry[1]


@dataclass(frozen=True)
class Columns:
    """A graph's edges and sizes as numpy arrays (indexed like `edges` and `ops`).

    Read from the model's objects once per graph (`columns`): the simulator and the
    memory accounting work on these instead of touching 100,000s of `Op` and `Edge`
    objects, scattered over memory, on every call. `src` and `dst` are int64; the sizes
    are int64 when every one is a whole number below `2**53` (`integral`; a spec's are at
    most `2**50`), else float64 (a model built in code with float or huge sizes: users of
    the arrays then take the objects' own values).
    """

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    params: np.ndarray
    output: np.ndarray
    temp: np.ndarray
    #: every size a whole number below `2**53`, held exactly as int64
    integral: bool
    #: integral, and every sum of sizes fits int64 (their absolute total is below `2**62`)
    exact: bool


def columns(graph: Graph) -> Columns:
    """`Columns` of `graph`, built on first use and cached on it."""
    return derived(graph, "_columns", lambda: _build_columns(graph))


def _build_columns(graph: Graph) -> Columns:
    import numpy as np  # noqa: PLC0415 - not on `planner check`'s path for small specs

    ops, edges = graph.ops, graph.edges

    def index(name: str) -> np.ndarray:  # every index checked (by `Graph` or lowering)
        return np.fromiter(map(attrgetter(name), edges), np.int64, len(edges))

    def size(items: Sequence[object], name: str) -> np.ndarray:
        # read as float64 (exact below 2**53, where every size of a spec is), then int64
        # when every value is whole: `fromiter` into int64 would truncate a float silently
        found = np.fromiter(map(attrgetter(name), items), np.float64, len(items))
        whole = (np.floor(found) == found).all() and float(np.abs(found).max(initial=0)) < 2**53
        return found.astype(np.int64) if whole else found

    sizes = (size(edges, "bytes"), size(ops, "params_bytes"), size(ops, "output_bytes"),
             size(ops, "temp_bytes"))
    integral = all(a.dtype == np.int64 for a in sizes)
    total = sum(float(np.abs(a).sum(dtype=np.float64)) for a in sizes)  # bounds any sum
    return Columns(index("src"), index("dst"), *sizes, integral=integral,
                   exact=integral and total < _EXACT_LIMIT)


def static_memory(graph: Graph, placement: Sequence[int], n_devices: int) -> list[int]:
    """Static memory per device of a complete placement (op index -> device index)."""
    if len(graph.ops) >= VECTOR_MIN_OPS:
        found = _static_memory_arrays(graph, placement, n_devices)
        if found is not None:
            return found
    mem = [0] * n_devices
    temp = [0] * n_devices
    for i, op in enumerate(graph.ops):
        d = placement[i]
        mem[d] += op.params_bytes + op.output_bytes
        temp[d] = max(temp[d], op.temp_bytes)
    received: dict[tuple[int, int], int] = {}
    for e in graph.edges:
        d = placement[e.dst]
        if d != placement[e.src]:
            key = (e.src, d)
            if e.bytes > received.get(key, -1):
                received[key] = e.bytes
    for (_, d), b in received.items():
        mem[d] += b
    return [m + t for m, t in zip(mem, temp, strict=True)]


def _static_memory_arrays(graph: Graph, placement: Sequence[int], n_devices: int
                          ) -> list[int] | None:
    """`static_memory` with numpy, the same integers; None where it cannot be exact (a
    size that is no int64, sums that could overflow, a device index out of range: the
    loop then answers, or fails, as it always has)."""
    import numpy as np  # noqa: PLC0415

    c = columns(graph)
    place = np.asarray(placement)
    if (not c.exact or place.dtype.kind not in "iu" or place.shape != (len(graph.ops),)
            or (len(place) and not 0 <= place.min() <= place.max() < n_devices)):
        return None
    place = place.astype(np.int64, copy=False)
    mem = np.zeros(n_devices, np.int64)
    np.add.at(mem, place, c.params + c.output)
    temp = np.zeros(n_devices, np.int64)
    np.maximum.at(temp, place, c.temp)
    # each tensor a device receives once per producer: the largest bytes of the edges
    d_dst = place[c.dst]
    remote = d_dst != place[c.src]
    key = c.src[remote] * n_devices + d_dst[remote]
    size = c.nbytes[remote]
    order = np.lexsort((size, key))
    key, size = key[order], size[order]
    last = np.ones(len(key), dtype=bool)
    last[:-1] = key[1:] != key[:-1]
    np.add.at(mem, key[last] % n_devices, size[last])
    return (mem + temp).tolist()  # type: ignore[no-any-return]


class StaticMemoryTracker:
    """Incremental static memory of a partial placement, for list schedulers.

    `extra(i, d)` is how many bytes placing op `i` on device `d` would add, given the ops
    placed so far: its params and output, the tensors it would receive from producers on
    other devices, and its temp above the device's current largest temp. Copies of its
    output to consumers placed later are charged when those are placed.
    """

    def __init__(self, graph: Graph, n_devices: int) -> None:
        self.graph = graph
        self.used = [0] * n_devices
        self.temp = [0] * n_devices
        self.device_of = [-1] * len(graph.ops)
        # (producer, device) -> bytes of the copy held there
        self.copies: dict[tuple[int, int], int] = {}
        self._pred = graph.predecessors
        self._succ = graph.successors

    def extra(self, i: int, d: int) -> int:
        """Bytes that placing op `i` on device `d` would add to device `d` (and only `d`).

        Consumers of `i` already placed elsewhere cannot exist (ops are placed after their
        producers), except in algorithms that place out of order; those are charged too.
        """
        g = self.graph
        op = g.ops[i]
        add = op.params_bytes + op.output_bytes + max(0, op.temp_bytes - self.temp[d])
        edges = g.edges
        need: dict[int, int] = {}
        for k in self._pred[i]:
            e = edges[k]
            src_dev = self.device_of[e.src]
            if src_dev != -1 and src_dev != d:
                held = self.copies.get((e.src, d), 0)
                b = max(need.get(e.src, held), e.bytes)
                need[e.src] = b
        for src, b in need.items():
            add += b - self.copies.get((src, d), 0)
        return add

    def fits(self, i: int, d: int, caps: Sequence[int]) -> bool:
        """Whether placing op `i` on device `d` keeps every device within `caps`.

        Checks `d` itself and, for algorithms that place out of topological order, the
        devices of consumers already placed (they would receive a copy of `i`'s output).
        """
        if self.used[d] + self.extra(i, d) > caps[d]:
            return False
        g = self.graph
        need: dict[int, int] = {}
        for k in self._succ[i]:
            e = g.edges[k]
            cd = self.device_of[e.dst]
            if cd != -1 and cd != d:
                need[cd] = max(need.get(cd, 0), e.bytes)
        return all(
            self.used[cd] + max(0, b - self.copies.get((i, cd), 0)) <= caps[cd]
            for cd, b in need.items()
        )

    def place(self, i: int, d: int) -> None:
        """Record op `i` on device `d` and charge every device it affects."""
        g = self.graph
        op = g.ops[i]
        self.used[d] += op.params_bytes + op.output_bytes
        if op.temp_bytes > self.temp[d]:
            self.used[d] += op.temp_bytes - self.temp[d]
            self.temp[d] = op.temp_bytes
        self.device_of[i] = d
        for k in self._pred[i]:
            e = g.edges[k]
            sd = self.device_of[e.src]
            if sd != -1 and sd != d:
                self._charge_copy(e.src, d, e.bytes)
        for k in self._succ[i]:
            e = g.edges[k]
            cd = self.device_of[e.dst]
            if cd != -1 and cd != d:
                self._charge_copy(i, cd, e.bytes)

    def _charge_copy(self, src: int, d: int, nbytes: int) -> None:
        held = self.copies.get((src, d), 0)
        if nbytes > held:
            self.copies[(src, d)] = nbytes
            self.used[d] += nbytes - held
