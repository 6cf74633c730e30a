"""The cost model: the one place its formulas live.

- compute time of op `i` on device `d` (`compute_time`),
- transfer time of `bytes` from device `a` to device `b`: `latency + bytes / bandwidth`
  (0 on the same device, infinite without a link); of `count` tensors over one link,
  `count * latency + bytes / bandwidth` (`transfer_seconds`, and `transfer_seconds_array`
  over numpy arrays: a pipeline boundary's tensors, the simulator's checks),
- one transfer per producer and destination (`copies`, `copies_array`): a tensor goes to
  each device (or pipeline unit) that consumes it once, carrying the largest `bytes` among
  the edges to its consumers there,
- static memory of a placement (`static_memory`): per device, the `params` and `output` of
  its ops, each tensor it receives from another device (one copy, as `copies` says), and
  the largest `temp` among its ops,
- a pipeline stage's memory (`stage_memory`): its params, the activations of each
  micro-batch in flight, its largest transient; a device holding several stages
  (`interleaved`) gives each an equal share of its memory where stages are judged one at
  a time (`stage_share`),
- tied weights (`tie`): each holder keeps a copy in its `params`; holders on one device
  keep one (`repeated_tie_bytes`; per device `tied_duplicate_bytes`, subtracted by the
  pipeline's stage memory and, over the ties of backward ops and of forward ops, by the
  optimizer state an export reports; the one-pass static memory counts each holder's, an
  over-count where holders share a device); in training the holders' devices all-reduce
  the weight's gradient once per iteration (`allreduce_time`, a ring all-reduce over the
  slowest link among them: `2 (n - 1) / n * bytes / bandwidth + 2 (n - 1) * latency`).

Algorithms and the simulator both call these; `Costs` holds them as dense tables built
once per problem (`costs(problem)`), `Columns` the graph's sizes and edges as numpy arrays
built once per graph (`columns(graph)`; numpy is imported on first use, not with this
module, so that `planner check` on a small spec never loads it).

Twin: `planner.algorithms.listsched._engine_kernel` repeats `StaticMemoryTracker.extra` and
`place` (the ETF engine's memory), and `transfer_seconds`; `planner.fastsim._kernel` and
the simulator's event loop repeat `transfer_seconds` and `copies` (compiled code calls no
Python; a call per transfer costs the event loop 3%); `planner.bounds._kernel` repeats
`transfer_seconds` over the links the numpy passes give `transfer_seconds_array`. The
hand-derived battery (`tests/algorithms`, with the `list_engine` fixture),
`tests/algorithms/test_engine_kernel.py`, `tests/test_fastsim.py` and
`tests/test_bounds_kernel.py` run over both. The list schedulers' Python engines
(`listsched.etf`, `insertion`, `floating`, `solution`: inner loops over ops' inputs, the
first three for every candidate device) and HEFT's upward rank (`listsched.ranks`) also write
`latency + bytes * inv_bandwidth` inline, `insertion`, `floating` and the rank as
`t + latency + bytes * inv_bandwidth` (a call would round that sum otherwise); the
hand-derived battery runs them.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, TypeVar

from .model import Cluster, Device, Graph, Op, Problem, Tie, derived, repeated_graph

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

INF = math.inf
Bytes = TypeVar("Bytes", int, float)
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
        return transfer_seconds(self.latency[a][b], self.inv_bandwidth[a][b], nbytes)

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
                    total += self.transfer_time(nbytes, a, b)
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


def transfer_seconds(latency: float, inv_bandwidth: float, nbytes: float,
                     count: float = 1.0) -> float:
    """Seconds `count` tensors of `nbytes` bytes in all take over one directed link of
    `latency` seconds and `inv_bandwidth` seconds per byte: `count * latency + nbytes /
    bandwidth`; 0 when nothing crosses (`count` 0), `inf` without a link (`latency` inf,
    also for 0 bytes: inf + 0 * inf would be NaN)."""
    if not count:
        return 0.0
    if latency >= INF:
        return INF
    return count * latency + nbytes * inv_bandwidth  # 1.0 * latency is latency, exactly


def transfer_seconds_array(latency: float | np.ndarray, inv_bandwidth: float | np.ndarray,
                           nbytes: float | np.ndarray, count: float | np.ndarray = 1.0,
                           ) -> NDArray[np.float64]:
    """`transfer_seconds` elementwise over numpy arrays (any argument may be a scalar),
    the same floats operation for operation."""
    import numpy as np  # noqa: PLC0415 - not on `planner check`'s path for small specs

    with np.errstate(invalid="ignore"):  # 0 * inf where there is no link: masked below
        sent = count * latency + nbytes * inv_bandwidth
    out: NDArray[np.float64] = np.where(np.equal(count, 0), 0.0, np.where(
        np.greater_equal(latency, INF), INF, sent))
    return out


def copies(edges: Iterable[tuple[int, int, Bytes]]) -> dict[tuple[int, int], Bytes]:
    """One transfer per producer and destination: for edges (producer, destination,
    bytes), where the destination is a consumer's device (or pipeline unit), the copy of
    each (producer, destination) pair and its bytes, the largest of its edges; in the
    order the pairs first appear."""
    out: dict[tuple[int, int], Bytes] = {}
    for src, dest, nbytes in edges:
        key = (src, dest)
        if nbytes > out.get(key, -1):
            out[key] = nbytes
    return out


def copies_array(src: np.ndarray, dest: np.ndarray, nbytes: np.ndarray, n_dest: int,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`copies` over numpy arrays of edges (`dest` in 0 .. n_dest - 1): the pairs as keys
    `src * n_dest + dest`, ascending; each edge's pair (an index into the keys); each
    pair's bytes (the largest of its edges)."""
    import numpy as np  # noqa: PLC0415

    keys, slot = np.unique(src * n_dest + dest, return_inverse=True)
    largest = np.zeros(len(keys), dtype=nbytes.dtype)
    np.maximum.at(largest, slot, nbytes)
    return keys, slot.reshape(-1), largest


def held_bytes(graph: Graph, ops: Iterable[int]) -> tuple[int, int, int]:
    """What a pipeline stage holds for `ops`, one micro-batch: their params (with the
    gradients and optimizer state of training), the forward outputs kept from the forward
    pass to the backward pass, and the largest transient (a backward op's output and
    temp, a forward op's temp); `stage_memory` adds them up."""
    params = kept = transient = 0
    for i in ops:
        op = graph.ops[i]
        params += op.params_bytes
        if i in graph.backward_of:
            transient = max(transient, op.output_bytes + op.temp_bytes)
        else:
            kept += op.output_bytes
            transient = max(transient, op.temp_bytes)
    return params, kept, transient


def stage_memory(params: float | np.ndarray, in_flight: float | np.ndarray,
                 activations: float | np.ndarray, transient: float | np.ndarray,
                 ) -> float | np.ndarray:
    """Bytes a pipeline stage holds at its peak: its params (with their gradients and
    optimizer state), the `activations` of each of its `in_flight` micro-batches, and its
    largest transient (scalars or numpy arrays alike)."""
    return params + in_flight * activations + transient


def stage_share(memory_bytes: float, stages_per_device: int) -> float:
    """The memory of a device running `stages_per_device` stages (`interleaved`) that one
    of them may use where stages are judged one at a time (the DPs): an equal share. A
    heuristic; the exact check holds a device's stages together (`stage_bytes`)."""
    return memory_bytes / stages_per_device


def allreduce_time(c: Costs, nbytes: float, devices: Sequence[int]) -> float:
    """Seconds a ring all-reduce of `nbytes` takes among `devices` (distinct): `2 (n - 1)`
    steps, each sending `nbytes / n` over the slowest link among them, so
    `2 (n - 1) / n * nbytes / bandwidth + 2 (n - 1) * latency` with the least bandwidth and
    the largest latency of any pair; 0 on one device, `inf` where a pair has no link."""
    n = len(devices)
    if n < 2:
        return 0.0
    return float(allreduce_seconds(nbytes, n, *ring_link(c, devices)))


def ring_link(c: Costs, devices: Sequence[int]) -> tuple[float, float]:
    """The link a ring all-reduce among `devices` (two or more, distinct) runs at: the
    largest latency and the most seconds per byte of any pair, each `inf` where a pair has
    no link."""
    latency = max(c.latency[a][b] for a in devices for b in devices if a != b)
    inv_bw = max(c.inv_bandwidth[a][b] for a in devices for b in devices if a != b)
    return latency, inv_bw


def allreduce_seconds(nbytes: float | np.ndarray, n: int, latency: float,
                      inv_bandwidth: float) -> float | np.ndarray:
    """`allreduce_time` of `nbytes` (a number or a numpy array of them) among `n` devices
    whose slowest link (`ring_link`) has `latency` and `inv_bandwidth`."""
    if n < 2:
        return 0.0
    if inv_bandwidth >= INF or latency >= INF:
        return INF
    steps = 2 * (n - 1)
    return steps * latency + steps / n * nbytes * inv_bandwidth


def tied_duplicate_bytes(graph: Graph, placement: Sequence[int], n_devices: int,
                         among: Container[int] | None = None) -> list[int]:
    """Per device, the bytes its ops' `params` count more than once because several
    holders of one tie run there (`repeated_tie_bytes`); only over the ties whose holders
    are all `among` ops where given (a training graph's backward ops, or forward ops)."""
    out = [0] * n_devices
    for tie in graph.ties:
        if among is not None and not all(i in among for i in tie.ops):
            continue
        held: dict[int, int] = {}
        for i in tie.ops:
            held[placement[i]] = held.get(placement[i], 0) + 1
        for d, k in held.items():
            if 0 <= d < n_devices:
                out[d] += repeated_tie_bytes(tie, k)
    return out


def repeated_tie_bytes(tie: Tie, holders: int) -> int:
    """The bytes `holders` holders of `tie` on one device count more than once: each holds
    the weight in its `params`, the device keeps one copy, so `(holders - 1) * bytes` (0
    for one holder or none)."""
    return max(0, holders - 1) * tie.bytes


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


def repeated_problem(problem: Problem, times: int) -> Problem:
    """`times` copies of `problem`'s graph (`model.repeated_graph`) on its cluster, under
    its memory model and contention, each copy costed as the graph (its tables repeated,
    not built again); no pins (a pipeline's micro-batches, `planner.pipeline.schedule`,
    and the compiled simulator's tables of them, `fastsim.Evaluator.repeated`)."""
    c = costs(problem)
    copies = Problem(problem.name, repeated_graph(problem.graph, times), problem.cluster,
                     problem.memory_model, problem.contention)
    return with_costs(copies, Costs(c.compute * times, c.latency, c.inv_bandwidth))


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

    return column_arrays(index("src"), index("dst"), size(edges, "bytes"),
                         size(ops, "params_bytes"), size(ops, "output_bytes"),
                         size(ops, "temp_bytes"))


def column_arrays(src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, params: np.ndarray,
                  output: np.ndarray, temp: np.ndarray) -> Columns:
    """`Columns` of arrays read already (each size int64 where whole, as `columns` reads
    them): for a graph derived from another's columns (`with_columns`)."""
    import numpy as np  # noqa: PLC0415

    sizes = (nbytes, params, output, temp)
    integral = all(a.dtype == np.int64 for a in sizes)
    total = sum(float(np.abs(a).sum(dtype=np.float64)) for a in sizes)  # bounds any sum
    return Columns(src, dst, *sizes, integral=integral, exact=integral and total < _EXACT_LIMIT)


def with_columns(graph: Graph, table: Columns) -> Graph:
    """`graph`, new, with `table` as its `columns` (built with numpy from another graph's,
    e.g. a pipeline's relayed graph, `planner.pipeline.order.relayed`): not read again
    from its edge objects."""
    derived(graph, "_columns", lambda: table)
    return graph


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
    remote = ((e.src, placement[e.dst], e.bytes) for e in graph.edges
              if placement[e.dst] != placement[e.src])
    for (_, d), b in copies(remote).items():
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
    key, _, size = copies_array(c.src[remote], d_dst[remote], c.nbytes[remote], n_devices)
    np.add.at(mem, key % n_devices, size)
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
