"""A fast simulator for search loops, with results identical to `planner.simulate`.

`Evaluator(problem)` builds the placement-independent tables once (topological order,
upward rank, compute times, edge arrays in CSR form, link tables, memory figures, pins,
colocation groups); each evaluation then runs one compiled kernel (numba) that follows
`planner.simulate` step by step, in the same order of floating-point operations, so
makespans, start and end times, transfers and memory peaks are bit-identical to the
reference (tests/test_fastsim.py checks this on random problems in every contention and
memory mode). `planner.simulate` stays the judge: reports, violation messages and
intended start times are its business; this module answers "how long, and is it
feasible" thousands of times a second.

The kernel is never compiled on a command's clock (`planner.compiled`): an evaluation
uses it when numba's on-disk cache holds it (about 0.35 s to load), and otherwise goes
through `planner.simulate` while a background build compiles it (about 12 s of CPU) for
later evaluations and commands. `prepare()` compiles it here and now and says how long
it took; `python -m planner.fastsim` fills the cache at build time. Without numba
(`backend="reference"`, or numba not installed) every call goes through
`planner.simulate`: the same answers, slower.

    ev = evaluator(problem)                     # cached on the problem
    ev.makespan(placement)                      # dynamic dispatch; inf when infeasible
    ev.makespan(placement, order)               # per-device order, as `Plan.order`
    ev.makespan(placement, priority=ranked)     # each device runs its ops in `ranked`
    ev.run(placement).start_s                   # the full timing (`FastResult`)
    ev.repeated(8)                              # 8 copies of the problem (micro-batches)
"""

from __future__ import annotations

import array
import math
import operator
import time
from collections.abc import Sequence
from copy import copy
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .. import compiled
from ..cost import Columns, columns, costs, repeated_problem
from ..model import Cluster, Device, Edge, Graph, Op, Problem, derived
from ..plan import Plan
from ..signals import deferred, shielded
from ..simulate import KINDS, simulate, upward_rank

__all__ = ["Evaluator", "FastResult", "evaluator", "loaded", "numba_available", "prepare",
           "ready"]

Backend = Literal["auto", "numba", "reference"]
#: violation kinds by bit (`simulate.KINDS` order; `precedence` and `overlap` need a
#: plan's intended start times, which an evaluation never has)
_BITS = {k: 1 << b for b, k in enumerate(KINDS)}
_DISPATCH, _GIVEN, _PRIORITY = 0, 1, 2
_CONTENTION = {"none": 0, "link": 1, "device": 2}
_SAFE_BYTES = 1 << 62  # byte sums stay in int64 below this; above, use the reference
_EMPTY = np.zeros(0, np.int64)
_RETRY = 1 << 20  # `_kernel.RETRY`


_compiled: Any = None  # `_kernel.evaluate` once prepared
#: seconds between two looks at numba's cache while the kernel is not loaded
LOOK_EVERY_S = 1.0
_next_look = 0.0


class _Retry(Exception):
    """The kernel met a case it does not handle exactly (see `_kernel.execute`)."""


def numba_available() -> bool:
    """Whether numba can be imported (checked without importing it)."""
    return compiled.numba_available()


def prepare() -> float:
    """Import numba and compile (or load from its cache) the kernel; return the seconds.

    0.0 when it is ready already. Only for processes that choose to pay the compile
    (`python -m planner.fastsim`, `python -m planner.cli.warm`, tests): evaluations never
    compile (`ready`), unless an `Evaluator` was built with `backend="numba"`.
    """
    global _compiled
    if _compiled is not None:
        return 0.0
    t0 = time.perf_counter()
    from . import _kernel  # lazy: numba (heavy to import): only when a search runs

    _compiled = _kernel.evaluate
    ev = Evaluator(_tiny_problem(), backend="numba")
    ev.makespan(np.zeros(2, np.int64))  # compiles (or loads) the one specialisation
    return time.perf_counter() - t0


def ready() -> bool:
    """Whether evaluations run on the compiled kernel now: it is loaded, or numba's cache
    holds it (then it is loaded, in about 0.3 s). Never compiles: when the cache does not
    hold it, a background build starts (`planner.compiled`) and evaluations go through
    `simulate` (the same answers, slower) until a later look finds it built. Looks at the
    cache at most every `LOOK_EVERY_S` seconds."""
    global _compiled, _next_look
    if _compiled is not None:
        return True
    now = time.monotonic()
    if now < _next_look or not numba_available():
        return False
    _next_look = now + LOOK_EVERY_S
    # in one piece: a Ctrl-C inside numba's loading left llvmlite objects half-built
    with deferred():
        return compiled.load_kernel("planner.fastsim._kernel", "evaluate", prepare,
                                    "the fast simulator")


def loaded() -> bool:
    """Whether the kernel is loaded in this process: `ready`, without looking at the cache
    (nor loading numba, 0.5 s of CPU)."""
    return _compiled is not None


def _tiny_problem() -> Problem:
    g = Graph("warm", (Op("a", time_s=1.0), Op("b", time_s=1.0)), (Edge(0, 1, 1),))
    return Problem("warm", g, Cluster("c", (Device("d", 1 << 30),), ()))


@dataclass(frozen=True, eq=False)
class FastResult:
    """One evaluation in full: what `simulate` would report, as arrays, less the messages.

    `makespan_s` is the simulated makespan even when the plan is infeasible (a memory
    violation leaves it finite); `violations` names the kinds broken, in `simulate.KINDS`
    order. Per-op arrays are indexed by op, per-device ones by device; `placement` has -1
    for an unplaced op. `transfers` rows are (src op, src device, dst device, bytes) with
    `transfer_times` rows (start, end), in commit order. `busy_s` per device: the
    `math.fsum` of the compute times of the ops it started, as `simulate` adds them.
    """

    makespan_s: float
    violations: tuple[str, ...]
    placement: np.ndarray
    order: tuple[np.ndarray, ...]
    start_s: np.ndarray
    end_s: np.ndarray
    transfers: np.ndarray
    transfer_times: np.ndarray
    memory_static_bytes: np.ndarray
    memory_peak_bytes: np.ndarray
    busy_s: tuple[float, ...]

    @property
    def feasible(self) -> bool:
        """Whether the plan broke no rule."""
        return not self.violations


class Evaluator:
    """Placement → makespan for one problem, thousands of times a second.

    Placements are sequences of device indices (an `np.int64` array is used without a
    copy); -1, None or an index out of range leave an op unplaced, as in `simulate`.
    `order` is per device the ops it runs, as `Plan.order` or as int64 arrays (entries
    that contradict the placement are dropped, left-out ops run last, as in `simulate`,
    and make the plan infeasible). `priority`, instead, lists ops from first to last
    (`priority_from` builds one from keys): each device runs its own ops in that order,
    so moving an op keeps a valid order. Neither: dynamic dispatch. The evaluator keeps
    no reference to its arguments, so a search may mutate one placement array in place.
    """

    # complex: the backend choice, then the kernel's arrays (CSR successors, ranks, pins, groups,
    # sizes), each a numpy expression; the branches are mostly their comprehensions
    def __init__(self, problem: Problem, *, backend: Backend = "auto") -> None:
        g = problem.graph
        n, m = len(g.ops), len(problem.cluster.devices)
        self._problem: Problem | None = problem
        self._copies = (problem, 1)  # what `problem` is: `times` copies of one problem
        self.n, self.m = n, m
        cols = columns(g)
        self._total_bytes = _total_bytes(g, cols)
        #: (rank, by rank, sources) for dynamic dispatch, built on first use (`_ranked`)
        self._ranks: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.backend = self._backend(backend)
        topo = np.array(g.topological_order, dtype=np.int64)
        pos = np.empty(n, np.int64)
        pos[topo] = np.arange(n, dtype=np.int64)
        self._topo, self._pos = topo, pos
        if backend == "reference":
            return
        c = costs(problem)
        nbytes, self._params, self._output, self._temp = _int64_sizes(g, cols)
        self._compute = np.array(c.compute, dtype=float).reshape(n, m)
        self._lat = np.array(c.latency, dtype=float).reshape(m, m)
        self._inv = np.array(c.inv_bandwidth, dtype=float).reshape(m, m)
        # successors in CSR form: the edges by source, each source's in edge order
        by_src = np.argsort(cols.src, kind="stable")
        out_degree = np.bincount(cols.src, minlength=n)
        self._pred = np.bincount(cols.dst, minlength=n).astype(np.int64)
        self._succ_ptr = np.zeros(n + 1, np.int64)
        self._succ_ptr[1:] = np.cumsum(out_degree)
        self._succ_dst = cols.dst[by_src]
        self._succ_bytes = nbytes[by_src]
        self._tr_cap = int(np.minimum(out_degree, max(m - 1, 0)).sum())
        self._mode = _CONTENTION[problem.contention]
        self._liveness = problem.memory_model == "liveness"
        self._pins = np.full(n, -1, np.int64)
        for i, d in problem.pins.items():
            self._pins[i] = d
        groups = g.colocations
        self._grp_ptr = np.zeros(len(groups) + 1, np.int64)
        self._grp_ptr[1:] = np.cumsum([len(x) for x in groups])
        self._grp_ops = np.array([i for x in groups for i in x], dtype=np.int64)
        self._caps = np.array([min(d.memory_bytes, (1 << 63) - 1)
                               for d in problem.cluster.devices], dtype=np.int64)

    def _backend(self, asked: Backend) -> Literal["numba", "reference"]:
        """The backend to use, from the one asked for and the problem's size."""
        # the kernel sums bytes in int64 and packs (instant, rank) keys into 32 + 32 bits
        wide = self._total_bytes >= _SAFE_BYTES or self.n >= 1 << 30
        #: the kernel was asked for by name: compile it if need be (tests, benchmarks)
        self._compile = asked == "numba"
        if asked == "numba" and wide:
            raise ValueError("the problem is too large for the compiled kernel's int64 sums")
        if asked == "auto":
            return "reference" if wide or not numba_available() else "numba"
        return asked

    # -- public -----------------------------------------------------------------------

    def makespan(self, placement: Sequence[int | None] | np.ndarray,
                 order: Sequence[Sequence[int] | np.ndarray] | None = None, *,
                 priority: np.ndarray | None = None) -> float:
        """The simulated makespan in seconds, or `inf` if the plan breaks any rule.

        Rules checked before running (pins, colocation, unplaced or unrunnable ops, a
        contradictory order, static memory) skip the simulation.
        """
        try:
            if self.backend == "numba" and self._kernel_ready():
                bad, ms = self._call(placement, order, priority, full=False)[:2]
                return math.inf if bad else float(ms)
        except _Retry:
            pass
        r = self._reference(placement, order, priority)
        return r.makespan_s if r.feasible else math.inf

    def run(self, placement: Sequence[int | None] | np.ndarray,
            order: Sequence[Sequence[int] | np.ndarray] | None = None, *,
            priority: np.ndarray | None = None) -> FastResult:
        """The full timing of one evaluation (see `FastResult`)."""
        try:
            if self.backend == "reference" or not self._kernel_ready():
                raise _Retry
            bad, ms, start, end, run, tr_i, tr_t, static, peak, place = self._call(
                placement, order, priority, full=True)
        except _Retry:
            return self._reference(placement, order, priority)
        place = np.where((place >= 0) & (place < self.m), place, -1)
        devs = place[run]
        seqs = tuple(run[devs == d] for d in range(self.m))
        return FastResult(
            makespan_s=float(ms),
            violations=tuple(k for k in KINDS if bad & _BITS[k]),
            placement=place, order=seqs,
            start_s=start, end_s=end, transfers=tr_i, transfer_times=tr_t,
            memory_static_bytes=static, memory_peak_bytes=peak,
            busy_s=tuple(math.fsum(self._compute[o, d].tolist()) for d, o in enumerate(seqs)))

    @property
    def problem(self) -> Problem:
        """The problem evaluated (`repeated`'s copies are built on first use: only a
        dispatch's rank and an evaluation handed to `simulate` need them)."""
        if self._problem is None:
            self._problem = repeated_problem(*self._copies)
        return self._problem

    def repeated(self, times: int) -> Evaluator:
        """The evaluator of `cost.repeated_problem(self.problem, times)`: `times` copies of
        the graph with no edge between them (a pipeline's micro-batches), with no pins nor
        colocation. Its tables are this one's tiled with numpy (op i of copy k is op
        i + k * n, as `model.repeated_graph` numbers them), not derived op by op: the
        same arrays, in a fraction of the time."""
        if times < 1:
            raise ValueError(f"need at least one copy, got {times}")
        out = copy(self)
        n, big = self.n, self.n * times
        out._problem, out._copies, out._ranks = None, (self.problem, times), None
        out.n, out._total_bytes = big, self._total_bytes * times
        if self.backend == "numba":  # (else numba is absent, or asked off, or sums wide)
            out.backend = out._backend("numba" if self._compile else "auto")
        out._topo = _tiled(self._topo, times, n)
        out._pos = np.empty(big, np.int64)
        out._pos[out._topo] = np.arange(big, dtype=np.int64)
        if out.backend == "reference":
            return out
        e = len(self._succ_dst)
        out._compute = np.tile(self._compute, (times, 1))
        out._pred = np.tile(self._pred, times)
        out._succ_ptr = np.append(_tiled(self._succ_ptr[:-1], times, e), e * times)
        out._succ_dst = _tiled(self._succ_dst, times, n)
        out._succ_bytes = np.tile(self._succ_bytes, times)
        out._tr_cap = self._tr_cap * times
        out._pins = np.full(big, -1, np.int64)
        out._grp_ptr, out._grp_ops = np.zeros(1, np.int64), _EMPTY
        out._params, out._output, out._temp = (
            np.tile(a, times) for a in (self._params, self._output, self._temp))
        return out

    def priority_from(self, keys: Sequence[float] | np.ndarray) -> np.ndarray:
        """Ops by increasing key, ties by topological position (a `priority` argument).

        E.g. the start times of a schedule (`FastResult.start_s`): each device then runs
        its ops in the order they started there, whatever ops move.
        """
        k = np.asarray(keys, dtype=float)
        if k.shape != (self.n,):
            raise ValueError(f"need one key per op ({self.n}), got shape {k.shape}")
        return np.lexsort((self._pos, k)).astype(np.int64)

    # -- internals --------------------------------------------------------------------

    def _kernel_ready(self) -> bool:
        if self._compile:
            prepare()
            return True
        return ready()

    def _call(self, placement: Any, order: Any, priority: Any, *, full: bool) -> tuple[Any, ...]:
        place, bad = self._placement(placement)
        if priority is not None:
            kind, ord_dev, ord_op = _PRIORITY, _EMPTY, self._priority(priority)
        elif order is not None:
            kind, (ord_dev, ord_op) = _GIVEN, _order_arrays(order)
        else:
            kind, ord_dev, ord_op = _DISPATCH, _EMPTY, _EMPTY
        if bad and not full:
            return bad, math.inf
        # a given order never reads the ranks (the reference's `Run` neither computes them)
        rank, byrank, sources = self._ranked() if kind == _DISPATCH else (_EMPTY,) * 3
        # a stop waits for the call: one during its return was an E999 (`signals`)
        out = shielded(_compiled, place, self.m, self._compute, kind, ord_dev, ord_op, full,
                       self._liveness, rank, byrank, sources, self._topo,
                       self._pos, self._pred,
                       self._succ_ptr, self._succ_dst, self._succ_bytes, self._lat, self._inv,
                       self._mode, self._tr_cap, self._pins, self._grp_ptr, self._grp_ops,
                       self._params, self._output, self._temp, self._caps)
        if out[0] & _RETRY:
            raise _Retry
        return (out[0] | bad, *out[1:], place)

    def _ranked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Dynamic dispatch's tables: each op's place in (larger upward rank, then smaller
        index) order, the ops in that order, and those without inputs in it."""
        if self._ranks is None:
            n = self.n
            upward = np.array(upward_rank(self.problem), dtype=float)
            byrank = np.lexsort((np.arange(n), -upward))
            rank = np.empty(n, np.int64)
            rank[byrank] = np.arange(n, dtype=np.int64)
            self._ranks = rank, byrank, byrank[self._pred[byrank] == 0]
        return self._ranks

    def _placement(self, placement: Any) -> tuple[np.ndarray, int]:
        """An int64 array of length n and the `unplaced` bit for entries beyond it."""
        n = self.n
        if isinstance(placement, np.ndarray):
            if placement.ndim == 1 and placement.dtype.kind in "iu" and len(placement) == n:
                return np.ascontiguousarray(placement, dtype=np.int64), 0
        else:
            a = _int64s(placement)
            if a is not None and len(a) == n:
                return a, 0
        given = list(placement)
        out = np.full(n, -1, np.int64)
        for i, raw in enumerate(given[:n]):
            d = _index(raw)
            out[i] = d if 0 <= d < self.m else -1
        return out, _BITS["unplaced"] if len(given) > n else 0

    def _priority(self, priority: Any) -> np.ndarray:
        p = np.ascontiguousarray(priority, dtype=np.int64)
        if p.shape != (self.n,) or not np.array_equal(np.sort(p), np.arange(self.n)):
            raise ValueError("priority must list every op exactly once (see priority_from)")
        return p

    def _reference(self, placement: Any, order: Any, priority: Any) -> FastResult:
        if priority is not None:
            place, _ = self._placement(placement)
            p = self._priority(priority)
            order = tuple(tuple(int(i) for i in p if place[i] == d) for d in range(self.m))
        r = simulate(self.problem, Plan(tuple(placement), order))
        place = np.array(r.placement, dtype=np.int64)
        tr = r.transfers
        return FastResult(
            makespan_s=r.makespan_s,
            violations=tuple(k for k in KINDS if any(v.kind == k for v in r.violations)),
            placement=place,
            order=tuple(np.array(s, dtype=np.int64) for s in r.order),
            start_s=np.array(r.start_s), end_s=np.array(r.end_s),
            transfers=np.array([(x.src_op, x.src_device, x.dst_device, x.bytes) for x in tr],
                               dtype=np.int64).reshape(-1, 4),
            transfer_times=np.array([(x.start_s, x.end_s) for x in tr]).reshape(-1, 2),
            memory_static_bytes=np.array(r.memory_static_bytes, dtype=np.int64),
            memory_peak_bytes=np.array(r.memory_peak_bytes, dtype=np.int64),
            busy_s=r.busy_s)


def _index(raw: object) -> int:
    """`operator.index`, with -1 for anything that is not an integer."""
    try:
        return operator.index(raw)  # type: ignore[arg-type]
    except TypeError:
        return -1


def _tiled(a: np.ndarray, times: int, step: int) -> np.ndarray:
    """`a` repeated `times` times, copy k's entries raised by k * `step`."""
    return (a[None, :] + np.arange(times, dtype=np.int64)[:, None] * step).ravel()


def _total_bytes(g: Graph, cols: Columns) -> int | float:
    """Every op's and edge's bytes summed: exactly, from the columns where their sums fit
    int64, else from the objects (a model built in code, with float or huge sizes)."""
    if cols.exact:
        return sum(int(a.sum()) for a in (cols.params, cols.output, cols.temp, cols.nbytes))
    total = sum(op.params_bytes + op.output_bytes + op.temp_bytes for op in g.ops)
    return total + sum(e.bytes for e in g.edges)


def _int64_sizes(g: Graph, cols: Columns) -> tuple[np.ndarray, ...]:
    """Edge bytes, then params, output and temp bytes per op, as int64 arrays: the columns
    where they are whole numbers, else the objects' values converted (floats truncated)."""
    if cols.integral:
        return cols.nbytes, cols.params, cols.output, cols.temp
    return (np.array([e.bytes for e in g.edges], dtype=np.int64),
            *(np.array([getattr(op, f) for op in g.ops], dtype=np.int64)
              for f in ("params_bytes", "output_bytes", "temp_bytes")))


def _int64s(values: Any) -> np.ndarray | None:
    """Python ints (or anything with `__index__`) as an int64 array; None if any is not.

    `array.array` converts in C and refuses floats, None and ints beyond int64, which
    `simulate` treats as no device or no op; about twice as fast as `np.asarray`.
    """
    if isinstance(values, np.ndarray):
        ok = values.ndim == 1 and (values.dtype.kind in "iu" or values.size == 0)
        return values.astype(np.int64) if ok else None
    try:
        return np.array(array.array("q", values), dtype=np.int64)
    except (TypeError, OverflowError, ValueError):
        return None


def _order_arrays(order: Sequence[Sequence[int] | np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A `Plan.order` as flat (device position, op) arrays; -1 for a non-integer op."""
    parts: list[np.ndarray] = []
    for seq in order:
        a = _int64s(seq)
        if a is None:
            a = np.array([i if 0 <= i < _SAFE_BYTES else -1 for i in map(_index, seq)],
                         dtype=np.int64)
        parts.append(a)
    if not parts:
        return _EMPTY, _EMPTY
    lens = [len(a) for a in parts]
    return np.repeat(np.arange(len(parts), dtype=np.int64), lens), np.concatenate(parts)


def evaluator(problem: Problem) -> Evaluator:
    """The `Evaluator` of `problem`, built on first use and cached on the problem."""
    return derived(problem, "_fastsim", lambda: Evaluator(problem))
