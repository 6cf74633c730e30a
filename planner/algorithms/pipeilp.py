r"""pipeilp: the general pipeline split as an integer linear program (Pyomo), with each
device's activation recomputation as a decision.

pipedp (`planner.algorithms.pipedp`) cuts the pipeline units into contiguous stages on a
chain of devices. Here a device may hold units from anywhere in the pipeline order, and a
device may **recompute** its activations: it then keeps only the tensors it receives
(its stages' inputs) for each micro-batch in flight, not its forward outputs, and runs
its forward ops once more during backward (activation checkpointing per stage, as
Megatron's full recomputation and `torch.utils.checkpoint` do). That is what lets a model
fit that otherwise would not.

**Replicated stages.** Under `data_parallel N` it plans one of N identical pipelines over
the first device of each block of N (`pipehybrid.identical_pipelines`: the replicas'
all-reduce is the simulator's alone, so the plan is at best `feasible`); under
`data_parallel auto` it plans one pipeline (`hybrid` and `auto` choose replicas).

**What is minimised** is the pipeline's period T (`planner.pipeline.split`), for any
placement: its stages are the maximal runs of consecutive units on one device; every
boundary x between units x - 1 and x whose two units sit on devices a ≠ b carries its
forward tensors a -> b and its backward tensors b -> a (`units.forward_count/bytes`,
`backward_count/bytes`: a tensor that skips a stage is relayed by it), each
`count * latency + bytes / bandwidth` of its directed pair; T is the busiest resource per
micro-batch: each device's compute (plus its forward compute again when it recomputes)
and, by the plan's `contention`, each directed link (`link`), each device's one transfer
channel (`device`), or nothing (`none`).

**The memory model** is the pipeline's (`split.stage_bytes`): a device holds its units'
params, its largest transient, and per stage the activations of each micro-batch in
flight: the stage's forward outputs (kept) and the forward tensors crossing its first
boundary (received). A device that recomputes holds its kept activations once (rebuilt
for one backward pass at a time) and only the received ones per micro-batch in flight.

The model (units k with allowed devices A(k); C_kd, F_kd the compute and forward compute
of unit k on d; P_k, K_k, tau_k its params, kept activations and largest transient;
boundary x's traffic f_x(a, b) (forward tensors sent a -> b) and r_x(a, b) (backward
tensors, sent b -> a, when a is left of x and b right of it) and received bytes R_x;
quantities in units of 10^i s and 2^j B):

    minimise  T
    x_kd ∈ {0,1}                 Σ_{d ∈ A(k)} x_kd = 1                         (assign)
    z_xab ≥ x_{x-1,a} + x_{x,b} − 1        a ≠ b: boundary x crosses a -> b    (cross)
    x_{x-1,a} + x_{x,b} ≤ 1                when that crossing has no link      (nolink)
    q_d ≥ Σ_k F_kd x_kd − F̄_d (1 − ρ_d),  ρ_d ∈ {0,1}                        (recompute)
    T ≥ Σ_k C_kd x_kd + q_d                                                    (compute)
    T ≥ Σ_x f_x(a,b) z_xab + r_x(b,a) z_xba          per link a -> b   (`link` transfer)
    T ≥ Σ_x Σ_{a≠d} (f_x(a,d) + r_x(a,d)) z_xad
         + Σ_x Σ_{b≠d} (f_x(d,b) + r_x(d,b)) z_xdb    per device d   (`device` transfer)
    h_d ≥ Σ_k K_k x_kd − K̄_d ρ_d                                             (kept)
    t_d ≥ tau_k x_kd                                                          (transient)
    Σ_k (P_k + K_k) x_kd + t_d + c Σ_x R_x Σ_{a≠d} z_xad + (c − 1) h_d
        ≤ cap_d + big_dc (1 − used_e)                                         (memory)
    used_e ≥ x_ke                                                             (inuse)
    o_ka ≤ o_(k−1)a + x_ka,   x_kb ≤ o_(k−1)a   for consecutive a, b of an order (order)
    x_0d + Σ_x Σ_{a≠d} z_xad ≤ 1           one stage per device (not interleaved) (runs)
    Σ_x Σ_{a≠b} z_xab ≤ M − 1              at most M stages (1F1B only)      (stages)

with F̄_d, K̄_d the sums over the units d may hold. The z need not be integer: every
row holds them from below. ρ, q and h exist only where a count above 1 makes
recomputation worth anything (training).

**The in-flight count c.** GPipe holds M micro-batches on every stage, inference one: c
does not depend on the placement, the memory rows are `stage_bytes` exactly, and the
model covers every placement (only interchangeable devices are ordered, within their
class, which loses nothing). Under 1F1B, stage k of S holds min(S − k, M): the model
then keeps each device to **one stage** (`runs`), so that S is the number of devices in
use and k a device's rank among them by first unit; the rank is fixed by an order of the
devices (`order`: device b holds a unit only after device a holds an earlier one) and
device d of rank r gets one memory row per distinct count over D = r + 1 .. m devices
in use, switched on by `used_e` of the device e of rank D_min − 1 (the row for D = r + 1
always holds; counts never fall as D grows). Under `interleaved` the count is
Megatron's, by rank, applied to the sum of a device's stages' activations (the rule
takes the largest stage's): the rows over-count, so every plan they admit fits. Either
way the model covers only some placements (`info["scope"]`) and its optimum is proved
only among them. The order is the index order when all devices are alike, else the warm
start's (its devices by first unit, then the unused ones by index).

**Status.** The answer is re-checked exactly (`evaluate`: `split.period_s`, `stage_bytes`
with recomputation only where a device would not fit without it) and the better of it
and the warm start is returned. `optimal` when the gap to a valid bound is within
`OPTIMAL_GAP` (1e-6): the solver's bound when its model covers every placement, else
`pipeline.bound.pipeline_bound`; a solver that proved such a model optimal within `--gap`,
the plan's exact period no more than its objective, proves objective / (1 + `--gap`).
Otherwise `feasible`, with `info["period_bound_s"]` and `info["period_gap"]`; `fallback`
(the warm start) when the solver is missing, fails or finds nothing. T is the objective
here, so the figures are `period_s` / `period_bound_s` / `period_gap`, not the makespan's
`bound_s` / `gap`. The plan is a placement; `info["recompute"]` names the devices that
recompute, `info["held_bytes"]` what each device holds, and `info["memory_note"]` says it
in words for the report.

**Warm starts.** The best, by exact period, of: `pipedp`'s plan; the best **recomputing
contiguous split** per stage count (`contiguous_splits`: pipedp's chains and cuts, each
stage's device recomputing exactly when that makes it fit, by a bottleneck DP on the
period above); and `Options.warm_start` when given. Its placement is the MIP start, its
period the upper bound on T, and it is the plan returned when the solver does no better,
so that pipeilp never ends without a plan where a recomputing contiguous split fits.
Without one, where the order matters and the devices differ, the order is taken from a
first solve of a relaxation (every device holding one micro-batch, no order): infeasible,
it proves that nothing fits (E708, exit 3; not under `interleaved`); else its devices by
first unit give the order.

**Nothing found.** A proof that nothing fits is E708 (exit 3); a search that ended at its
time limit or covered only some placements without finding one is E709 (exit 6: not a
proof; a longer `--time-limit` or another schedule may find one); a solver that failed is
E711 (exit 4).

**Budget.** HiGHS stops at a number of branch-and-bound nodes that is a function of
`--time-limit` and the model's rows alone (`node_budget`), so where it stops does not
depend on the machine's load, and the clock is a safety cap of 3x the limit plus 1 s (as
CP-SAT's, `exact/budget.py`). Models of more than `BUDGETED_ROWS` rows stop at the limit
itself, and `info["reason"]` says when the clock ended a search: another run may differ.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..bounds import OPTIMAL_GAP, relative_gap
from ..cost import INF, costs
from ..errors import Diagnostic, InfeasibleError, SearchLimitError, SolverError
from ..model import Pipeline, Problem, derived
from ..pipeline.bound import pipeline_bound
from ..pipeline.split import Split, in_flight, resource_loads, split_of, stage_bytes
from ..pipeline.units import units
from ..plan import Plan
from ..units import format_bytes, format_seconds
from . import pipedp, pipehybrid
from .base import Interrupted, Options, Solution, Status
from .exact import backends
from .exact.budget import WALL_CAP_EXTRA_S, WALL_CAP_FACTOR
from .exact.common import Clock, empty_solution
from .exact.ilp import IlpModel

log = logging.getLogger("planner")

#: relative slack on the warm start's period as the upper bound on T (floats)
_UB_SLACK = 1e-6
#: relative tolerance when comparing periods computed two ways
_TOL = 1e-9
#: HiGHS's node budget: this many rows times nodes per second of `--time-limit` (on a
#: 2-core machine, the fork-join spec's 547-row model ran about 320 nodes a second, 1.7e5
#: row-nodes; a third of that, so the budget ends well within the limit when a core is free)
NODE_ROWS_PER_S = 3e4
#: models up to this many rows stop at the node budget, with the clock as a safety cap of
#: `WALL_CAP_FACTOR` times the limit plus `WALL_CAP_EXTRA_S` (as CP-SAT's); larger ones at
#: the limit itself: their root node alone can take longer than any budget, so a budget
#: would not keep the time limit's promise
BUDGETED_ROWS = 4000
#: candidate cuts of the recomputing DP at most (its tables are cuts x cuts)
MAX_DP_CUTS = 1200

#: a term of a linear row: (coefficient, Pyomo variable), or (constant, None)
Term = tuple[float, Any]


@dataclass(frozen=True, slots=True)
class _Data:
    """A problem's pipeline units as the model's dense tables (per unit k, device d; per
    boundary x, 0..n)."""

    n: int
    m: int
    allowed: tuple[tuple[int, ...], ...]
    compute: tuple[tuple[float, ...], ...]
    forward: tuple[tuple[float, ...], ...]
    params: tuple[float, ...]
    kept: tuple[float, ...]
    transient: tuple[float, ...]
    #: per boundary: forward (count, bytes) and backward (count, bytes) crossing it
    fc: tuple[float, ...]
    fb: tuple[float, ...]
    bc: tuple[float, ...]
    bb: tuple[float, ...]
    caps: tuple[int, ...]
    training: bool
    #: [a][b]: latency and seconds per byte from a to b (INF latency: no link)
    latency: tuple[tuple[float, ...], ...]
    inv_bandwidth: tuple[tuple[float, ...], ...]

    def sent(self, count: float, nbytes: float, a: int, b: int) -> float:
        """Seconds of `count` tensors of `nbytes` in all from a to b (INF: no link)."""
        if not count or a == b:
            return 0.0
        lat = self.latency[a][b]
        if lat >= INF:
            return INF
        return float(count * lat + nbytes * self.inv_bandwidth[a][b])

    def forward_s(self, x: int, a: int, b: int) -> float:
        """f_x(a, b): boundary x's forward tensors, a (left) -> b (right)."""
        return self.sent(self.fc[x], self.fb[x], a, b)

    def backward_s(self, x: int, a: int, b: int) -> float:
        """r_x(a, b): boundary x's backward tensors when a is left and b right of it,
        sent b -> a."""
        return self.sent(self.bc[x], self.bb[x], b, a)


def _data(problem: Problem) -> _Data:
    return derived(problem, "pipeilp.data", lambda: _derive(problem))


def _derive(problem: Problem) -> _Data:
    u = units(problem)
    c = costs(problem)
    m = len(problem.cluster.devices)
    compute, forward, params, kept, transient = [], [], [], [], []
    for k, ops in enumerate(u.members):
        allowed = set(u.allowed[k])
        compute.append(tuple(sum(c.compute[i][d] for i in ops) if d in allowed else INF
                             for d in range(m)))
        forward.append(tuple(sum(c.compute[i][d] for i in ops if not u.backward[i])
                             if d in allowed else INF for d in range(m)))
        params.append(float(u.params_prefix[k + 1] - u.params_prefix[k]))
        kept.append(float(u.kept_prefix[k + 1] - u.kept_prefix[k]))
        transient.append(float(u.transient[k]))

    def floats(t: NDArray[np.float64]) -> tuple[float, ...]:
        return tuple(float(v) for v in t)

    return _Data(u.count, m, u.allowed, tuple(compute), tuple(forward), tuple(params),
                 tuple(kept), tuple(transient), floats(u.forward_count),
                 floats(u.forward_bytes), floats(u.backward_count), floats(u.backward_bytes),
                 tuple(d.memory_bytes for d in problem.cluster.devices), u.training,
                 tuple(tuple(float(v) for v in row) for row in c.latency),
                 tuple(tuple(float(v) for v in row) for row in c.inv_bandwidth))


def _pipeline(problem: Problem) -> Pipeline:
    return problem.pipeline or Pipeline()


def _count(problem: Problem, data: _Data, devices: int, rank: int) -> int:
    """Micro-batches in flight on the device of `rank` among `devices` in use, each
    holding one stage (the `runs` rows)."""
    return in_flight(_pipeline(problem), devices, rank, data.training, rank, devices)


# -- the exact check ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A placement under the pipeline's model of time and memory (module docstring)."""

    #: T: the busiest resource, with the recomputation's forward compute
    period_s: float
    #: per device: its busiest resource
    loads_s: tuple[float, ...]
    #: per device: the bytes it holds (`stage_bytes`, with recomputation where it recomputes)
    held_bytes: tuple[float, ...]
    #: the devices that recompute (those that would not fit otherwise), by rank
    recompute: tuple[int, ...]
    #: the devices in use, by their first unit in pipeline order (their rank)
    ranks: tuple[int, ...]
    #: whether every device holds what it needs
    fits: bool


def evaluate(problem: Problem, placement: Sequence[int]) -> Evaluation:
    """The period and memory of `placement` by the shared rules (`split.stage_bytes`, the
    period of the module docstring); a device recomputes only when it would not fit
    otherwise and holds less so (its cheapest choice)."""
    data = _data(problem)
    split = split_of(problem, placement)
    pipe = _pipeline(problem)
    ranks = tuple(dict.fromkeys(split.devices))
    keep = stage_bytes(problem, split, pipe)
    over = [d for d in ranks if keep[d] > data.caps[d]]
    held = stage_bytes(problem, split, pipe, over) if over else keep
    chosen = tuple(d for d in over if held[d] < keep[d])
    held = [held[d] if d in chosen else keep[d] for d in range(data.m)]
    loads = resource_loads(problem, split, chosen).device_s
    fits = all(h <= cap for h, cap in zip(held, data.caps, strict=True))
    return Evaluation(max(loads, default=0.0), loads, tuple(held), chosen, ranks, fits)


# -- the recomputing contiguous splits (warm starts) ---------------------------------------


def contiguous_splits(problem: Problem) -> dict[int, Split]:
    """Per stage count, the contiguous split of least period over pipedp's chains and
    cuts, each stage's device recomputing exactly when that makes it fit (module
    docstring); counts where nothing fits are left out."""
    return derived(problem, "pipeilp.contiguous", lambda: _contiguous(problem))


def _contiguous(problem: Problem) -> dict[int, Split]:
    pipe = _pipeline(problem)
    space = pipedp.search_space(problem, pipe)
    if len(space.cuts) > MAX_DP_CUTS:
        rows = sum(s * len(c) for s, c in space.chains.items())
        space = pipedp.search_space(problem, pipe, float(rows * MAX_DP_CUTS ** 2))
    tables = _Tables.of(problem, space.cuts, space.largest)
    out: dict[int, Split] = {}
    for stages, chains in space.chains.items():
        if stages > len(space.cuts) - 1:
            continue
        best: tuple[float, Split] | None = None
        for chain in chains:
            found = _chain_split(problem, tables, chain)
            if found is not None and (best is None or found[0] < best[0]):
                best = found
        if best is not None:
            out[stages] = best[1]
    return out


@dataclass(frozen=True, slots=True)
class _Tables:
    """Prefix tables over candidate cuts for the recomputing DP."""

    cuts: NDArray[np.int64]
    compute: NDArray[np.float64]
    forward: NDArray[np.float64]
    banned: NDArray[np.float64]
    params: NDArray[np.float64]
    kept: NDArray[np.float64]
    received: NDArray[np.float64]
    largest: NDArray[np.float64]

    @staticmethod
    def of(problem: Problem, cuts: NDArray[np.int64], largest: NDArray[np.float64]
           ) -> _Tables:
        """The tables of `problem` at `cuts` (`largest`: pipedp's largest transients)."""
        u = units(problem)
        return _Tables(cuts, u.compute_prefix[:, cuts], u.forward_prefix[:, cuts],
                       u.banned_prefix[:, cuts], u.params_prefix[cuts], u.kept_prefix[cuts],
                       u.forward_bytes[cuts], largest)


def _boundary_s(problem: Problem, cuts: NDArray[np.int64], a: int, b: int
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per candidate cut, between devices a (left) and b (right): (forward a -> b,
    backward b -> a) seconds."""
    data = _data(problem)
    fwd = np.array([data.forward_s(int(x), a, b) for x in cuts])
    bwd = np.array([data.backward_s(int(x), a, b) for x in cuts])
    return fwd, bwd


def _chain_split(problem: Problem, t: _Tables, chain: Sequence[int]
                 ) -> tuple[float, Split] | None:
    """The bottleneck DP of one chain: f[k][j] = min_i max(f[k-1][i], cost_k(i, j)), the
    stage cost its compute (recomputing when only that fits) or its boundaries' transfer
    resources under the contention model."""
    data, pipe = _data(problem), _pipeline(problem)
    s, p = len(chain), len(t.cuts)
    ranks = {d: r for r, d in enumerate(dict.fromkeys(chain))}
    per = pipe.per_device
    i_, j_ = np.arange(p)[:, None], np.arange(p)[None, :]
    zero = np.zeros(p)
    f = np.full(p, INF)
    f[0] = 0.0
    back = np.zeros((s, p), dtype=np.int64)
    left = (zero, zero)
    for k, d in enumerate(chain):
        right = _boundary_s(problem, t.cuts, d, chain[k + 1]) if k + 1 < s else (zero, zero)
        count = in_flight(pipe, s, k, data.training, ranks[d], len(ranks))
        cap = data.caps[d] / per
        base = t.params[j_] - t.params[i_] + t.largest
        kept = t.kept[j_] - t.kept[i_]
        comp = t.compute[d][j_] - t.compute[d][i_]
        redo = comp + t.forward[d][j_] - t.forward[d][i_]
        received = t.received[i_]
        load = np.where(base + count * (kept + received) <= cap, comp,
                        np.where(base + kept + count * received <= cap, redo, INF))
        if problem.contention == "link":
            moves = np.maximum(np.maximum(*left)[i_], np.maximum(*right)[j_])
        elif problem.contention == "device":
            moves = (left[0] + left[1])[i_] + (right[0] + right[1])[j_]
        else:
            moves = np.zeros((p, p))
        bad = (i_ >= j_) | (t.banned[d][j_] - t.banned[d][i_] > 0)
        cost = np.where(bad, INF, np.maximum(load, moves))
        best = np.maximum(f[:, None], cost)
        at = np.argmin(best, axis=0)
        f = best[at, np.arange(p)]
        back[k] = at
        left = right
    if not math.isfinite(f[p - 1]):
        return None
    bounds = pipedp.backtrack(back, s, p - 1)
    if bounds[0] != 0:
        return None
    return float(f[p - 1]), Split(tuple(int(t.cuts[b]) for b in bounds), tuple(chain))


# -- orders, classes and the warm start ---------------------------------------------------


def _rank_dependent(problem: Problem, data: _Data) -> bool:
    """Whether the in-flight count depends on a device's rank or the devices in use."""
    return len(_counts_all(problem, data)) > 1


def _relaxed(problem: Problem, data: _Data) -> _Orders:
    """No rank, no `runs`: every device holds the fewest micro-batches any rank does, once
    per stage (a relaxation of `stage_bytes` but under `interleaved`; orders only within
    classes of alike devices, which loses nothing)."""
    alike = tuple(tuple(c) for c in _classes(problem, data))
    return _Orders(tuple(c for c in alike if len(c) > 1), None, True, alike,
                   min(_counts_all(problem, data)))


def _classes(problem: Problem, data: _Data) -> list[list[int]]:
    """Classes of interchangeable devices (swapping two changes nothing the model sees:
    compute, memory, pins, links to every other device), each in index order."""
    m = data.m

    def key(d: int) -> tuple[object, ...]:
        return (tuple(row[d] for row in data.compute), tuple(row[d] for row in data.forward),
                data.caps[d], tuple(d in a for a in data.allowed))

    def swappable(a: int, b: int) -> bool:
        if key(a) != key(b):
            return False
        links = (data.latency, data.inv_bandwidth)
        if any(t[a][b] != t[b][a] for t in links):
            return False
        return all(t[a][e] == t[b][e] and t[e][a] == t[e][b]
                   for t in links for e in range(m) if e not in (a, b))

    classes: list[list[int]] = []
    for d in range(m):
        for cls in classes:
            if swappable(cls[0], d):
                cls.append(d)
                break
        else:
            classes.append([d])
    return classes


def _relabel(dev: Sequence[int], classes: Sequence[Sequence[int]]) -> list[int]:
    """`dev` with each class's devices in use renamed, by first unit, to its first
    members: the representative the order rows admit."""
    rename: dict[int, int] = {}
    first = list(dict.fromkeys(dev))
    for cls in classes:
        used = [d for d in first if d in cls]
        rename.update(zip(used, cls, strict=False))
    return [rename.get(d, d) for d in dev]


@dataclass(frozen=True, slots=True)
class _Orders:
    """The devices the model orders by first unit, and what that costs the claim."""

    #: sequences of devices: each one's devices in use come first, by first unit
    orders: tuple[tuple[int, ...], ...]
    #: the order fixing every device's rank (None: the count does not depend on it)
    ranked: tuple[int, ...] | None
    #: whether every placement has an equivalent the model admits
    complete: bool
    #: relabel the warm start by these classes (empty: keep its names)
    classes: tuple[tuple[int, ...], ...]
    #: the in-flight count of every device when `ranked` is None
    flat: int = 1
    #: whether each device holds one stage (the `runs` rows: 1F1B)
    runs: bool = False
    #: the placements the model covers when it does not cover all, in words
    scope: str = ""


def _counts_all(problem: Problem, data: _Data) -> set[int]:
    return {_count(problem, data, big, r) for big in range(1, data.m + 1) for r in range(big)}


def _scope(runs: bool) -> str:
    """The placements a rank-dependent model covers, in words."""
    return ("placements with one stage per device" if runs else
            "placements whose activations, summed over each device's stages, fit "
            "Megatron's in-flight count")


def _orders(problem: Problem, data: _Data, warm: Sequence[int] | None) -> _Orders:
    """The orders of the model (module docstring): none but within classes of alike
    devices when the count does not depend on the rank; else the index order when all
    devices are alike; else the warm start's order (`warm`: devices per unit)."""
    classes = _classes(problem, data)
    alike = tuple(tuple(c) for c in classes)
    # torch's ScheduleGPipe and Schedule1F1B run one stage per rank: so does the model
    runs = not _pipeline(problem).schedule_spec.virtual_stages
    if not _rank_dependent(problem, data):
        return _Orders(tuple(c for c in alike if len(c) > 1), None, not runs, alike,
                       _count(problem, data, 1, 0), runs=runs,
                       scope=_scope(True) if runs else "")
    what = _scope(runs)
    if len(classes) == 1:
        return _Orders(alike, alike[0], False, alike, runs=runs, scope=what)
    if warm is not None:
        first = list(dict.fromkeys(warm))
    else:  # devices that pinned units force early, then the others
        pinned = {a[0]: k for k, a in reversed(list(enumerate(data.allowed))) if len(a) == 1}
        first = sorted(pinned, key=lambda d: (pinned[d], d))
    chain = tuple(first + [d for d in range(data.m) if d not in first])
    names = ", ".join(problem.cluster.devices[d].name for d in chain)
    return _Orders((chain,), chain, False, (), runs=runs,
                   scope=f"{what}, in use in the order {names} by first unit")


@dataclass(frozen=True, slots=True)
class _Warm:
    """A warm start: the unit-level devices, its evaluation, where it came from."""

    dev: tuple[int, ...]
    placement: tuple[int, ...]
    evaluation: Evaluation
    source: str


def _as_warm(problem: Problem, placement: Sequence[int], source: str) -> _Warm | None:
    """`placement` as a warm start, or None when it splits a unit, breaks a pin, or does
    not fit."""
    u = units(problem)
    if len(placement) != len(problem.graph.ops):
        return None
    dev = tuple(placement[ops[0]] for ops in u.members)
    if any(placement[i] != dev[k] for k, ops in enumerate(u.members) for i in ops) or any(
            d not in u.allowed[k] for k, d in enumerate(dev)):
        return None
    ev = evaluate(problem, placement)
    if not (ev.fits and math.isfinite(ev.period_s)):
        return None
    return _Warm(dev, tuple(placement), ev, source)


def _warm_starts(problem: Problem, options: Options) -> tuple[_Warm | None, list[Diagnostic]]:
    """The best warm start (module docstring), and pipedp's diagnostics when no
    contiguous split fits without recomputing."""
    found: list[_Warm] = []
    notes: list[Diagnostic] = []
    if options.warm_start is not None:
        given = _as_warm(problem, options.warm_start.placement,
                         options.warm_start.algorithm or "given")
        if given is not None:
            found.append(given)
    try:
        dp = pipedp.place(problem, dataclasses.replace(options, warm_start=None))
    except InfeasibleError as err:
        if not any(d.code == "E707" for d in err.diagnostics):
            raise  # a proof that no placement exists at all (planner.facts)
        notes.extend(err.diagnostics)
    else:
        mine = _as_warm(problem, dp.plan.placement, "pipedp")
        if mine is not None:
            found.append(mine)
    for split in contiguous_splits(problem).values():
        split_warm = _as_warm(problem, split.placement(problem), "contiguous split")
        if split_warm is not None:
            found.append(dataclasses.replace(split_warm, source="recomputing contiguous split")
                         if split_warm.evaluation.recompute else split_warm)
    if not found:
        return None, notes
    return min(found, key=lambda w: (w.evaluation.period_s, len(w.evaluation.ranks))), notes


def _placement(problem: Problem, dev: Sequence[int]) -> tuple[int, ...]:
    u = units(problem)
    return tuple(dev[k] for k in u.unit_of)


# -- the model ------------------------------------------------------------------------------


class _Model:
    """The Pyomo model of the module docstring and the handles to seed and read it."""

    def __init__(self, problem: Problem, data: _Data, orders: _Orders, upper_s: float | None,
                 lower_s: float, scale_s: float) -> None:
        self.problem, self.data, self.orders = problem, data, orders
        self.upper_s = None if upper_s is None else upper_s * (1 + _UB_SLACK)
        self.lower_s = lower_s if upper_s is None else min(lower_s, upper_s)
        top = scale_s if scale_s > 0 else 1.0
        self.time_unit = 10.0 ** (math.floor(math.log10(top)) - 3)
        cap = max(data.caps, default=1)
        self.mem_unit = float(2 ** max(0, math.ceil(math.log2(max(1, cap) / 1e6))))
        self.model: Any = None
        self.x: dict[tuple[int, int], Any] = {}
        self.z: dict[tuple[int, int, int], Any] = {}
        self.rho: dict[int, Any] = {}
        self.q: dict[int, Any] = {}
        self.h: dict[int, Any] = {}
        self.t: dict[int, Any] = {}
        self.used: dict[int, Any] = {}
        self.o: dict[tuple[int, int, int], Any] = {}
        self.rows = 0
        #: a row without variables that cannot hold: the model is infeasible as built
        self.contradiction = False
        self._linear: Any = None
        self._lists: dict[str, Any] = {}

    # -- terms and rows ---------------------------------------------------------------------

    def _x(self, k: int, d: int) -> Term:
        """x_kd: (0, var), or the constant (1, None) / (0, None) for a fixed unit."""
        a = self.data.allowed[k]
        if d not in a:
            return 0.0, None
        if len(a) == 1:
            return 1.0, None
        return 0.0, self.x[(k, d)]

    def _xt(self, k: int, d: int, coef: float = 1.0) -> Term:
        """coef * x_kd as a term."""
        const, var = self._x(k, d)
        return (coef, var) if var is not None else (coef * const, None)

    def _row(self, family: str, lower: float | None, terms: Sequence[Term],
             upper: float | None = None) -> None:
        """lower ≤ Σ terms ≤ upper in `family`; rows without a variable are left out."""
        coefs = [c for c, v in terms if v is not None and c != 0]
        vars_ = [v for c, v in terms if v is not None and c != 0]
        const = sum(c for c, v in terms if v is None)
        if not vars_:  # a constant row: a fixed unit where the orders forbid it
            if (lower is not None and const < lower - 1e-9) or (
                    upper is not None and const > upper + 1e-9):
                self.contradiction = True
            return
        body = self._linear(constant=0.0, linear_coefs=coefs, linear_vars=vars_)
        lo = None if lower is None else lower - const
        hi = None if upper is None else upper - const
        self._lists[family].add((lo, body, hi))
        self.rows += 1

    # -- building -----------------------------------------------------------------------------

    #: the row families, one ConstraintList each, in the order the model file lists them
    FAMILIES = ("assign", "nolink", "cross", "recompute", "compute", "transfer", "kept",
                "transient", "memory", "inuse", "order", "runs", "stages")

    def build(self) -> None:
        """Declare the variables and every row family (module docstring)."""
        pyo = backends.import_pyomo()
        # lazy: start-up (Pyomo, loaded by `import_pyomo` just above)
        from pyomo.core.expr.numeric_expr import LinearExpression

        self._linear = LinearExpression
        data = self.data
        mdl = pyo.ConcreteModel(name="pipeilp")
        self.model = mdl
        for name in self.FAMILIES:
            mdl.add_component(name, pyo.ConstraintList())
        self._lists = {name: getattr(mdl, name) for name in self.FAMILIES}
        xkeys = [(k, d) for k in range(data.n) if len(data.allowed[k]) > 1
                 for d in data.allowed[k]]
        mdl.x = pyo.Var(xkeys, domain=pyo.Binary)
        self.x = {key: mdl.x[key] for key in xkeys}
        tu = self.time_unit
        mdl.T = pyo.Var(domain=pyo.Reals, bounds=(
            self.lower_s / tu, None if self.upper_s is None else self.upper_s / tu))
        for k in range(data.n):
            if len(data.allowed[k]) > 1:
                self._row("assign", 1.0, [(1.0, self.x[(k, d)]) for d in data.allowed[k]],
                          1.0)
        self._crossings(pyo)
        self._recompute(pyo)
        self._period()
        self._memory(pyo)
        self._order(pyo)
        self._runs()
        self._stages()
        mdl.obj = pyo.Objective(expr=mdl.T, sense=pyo.minimize)

    def _crossing_s(self, x: int, a: int, b: int) -> tuple[float, float]:
        """Boundary x crossing a -> b: (forward seconds a -> b, backward seconds b -> a)."""
        return self.data.forward_s(x, a, b), self.data.backward_s(x, a, b)

    def _crossings(self, pyo: Any) -> None:
        """z_xab for each crossing that costs time or memory (or every crossing, for the
        `runs` rows), its rows, and the no-link rows."""
        data = self.data
        keys: list[tuple[int, int, int]] = []
        for x in range(1, data.n):
            needed = (self.orders.runs or self._stage_cap() < data.n
                      or data.fc[x] + data.bc[x] + data.fb[x] > 0)
            if not needed:
                continue
            for a in data.allowed[x - 1]:
                for b in data.allowed[x]:
                    if a == b:
                        continue
                    if INF in self._crossing_s(x, a, b):
                        self._row("nolink", None, [self._xt(x - 1, a), self._xt(x, b)], 1.0)
                    else:
                        keys.append((x, a, b))
        self.model.z = pyo.Var(keys, bounds=(0, 1))
        for key in keys:
            zv = self.z[key] = self.model.z[key]
            x, a, b = key
            self._row("cross", -1.0, [(1.0, zv), self._xt(x - 1, a, -1.0), self._xt(x, b, -1.0)])

    def _recompute(self, pyo: Any) -> None:
        """ρ_d, q_d and h_d on the devices where a count above 1 makes recomputation pay."""
        data, tu, mu = self.data, self.time_unit, self.mem_unit
        devices = [d for d in range(data.m) if data.training and any(
            c > 1 for c, _ in self._counts(d)) and any(
            data.kept[k] > 0 for k in range(data.n) if d in data.allowed[k])]
        mdl = self.model
        mdl.rho = pyo.Var(devices, domain=pyo.Binary)
        mdl.q = pyo.Var(devices, domain=pyo.NonNegativeReals)
        mdl.h = pyo.Var(devices, domain=pyo.NonNegativeReals)
        for d in devices:
            rho, q, h = mdl.rho[d], mdl.q[d], mdl.h[d]
            self.rho[d], self.q[d], self.h[d] = rho, q, h
            mine = [k for k in range(data.n) if d in data.allowed[k]]
            big_f = sum(data.forward[k][d] for k in mine) / tu
            big_k = sum(data.kept[k] for k in mine) / mu
            self._row("recompute", -big_f, [(1.0, q), (-big_f, rho), *(
                self._xt(k, d, -data.forward[k][d] / tu) for k in mine)])
            self._row("kept", 0.0, [(1.0, h), (big_k, rho), *(
                self._xt(k, d, -data.kept[k] / mu) for k in mine)])

    def _period(self) -> None:
        """T ≥ each device's compute, and each transfer resource of the contention model."""
        data, tu, T = self.data, self.time_unit, self.model.T
        for d in range(data.m):
            terms: list[Term] = [(1.0, T)]
            terms += [self._xt(k, d, -data.compute[k][d] / tu) for k in range(data.n)
                      if d in data.allowed[k] and data.compute[k][d] > 0]
            if d in self.q:
                terms.append((-1.0, self.q[d]))
            self._row("compute", 0.0, terms)
        resources: dict[tuple[int, ...], list[Term]] = {}
        contention = self.problem.contention
        for (x, a, b), zv in self.z.items():
            fwd, bwd = self._crossing_s(x, a, b)
            shares: list[tuple[tuple[int, ...], float]] = []
            if contention == "link":  # forward on link a -> b, backward on b -> a
                shares = [((a, b), fwd), ((b, a), bwd)]
            elif contention == "device":  # both on a's channel and on b's
                shares = [((a,), fwd + bwd), ((b,), fwd + bwd)]
            for res, sec in shares:
                if sec > 0:
                    resources.setdefault(res, []).append((-sec / tu, zv))
        for res in sorted(resources):
            self._row("transfer", 0.0, [(1.0, T), *resources[res]])

    def _counts(self, d: int) -> list[tuple[int, int | None]]:
        """Device d's memory rows: (in-flight count, the device whose use switches the row
        on, None: always on)."""
        data, ranked = self.data, self.orders.ranked
        if ranked is None:
            return [(self.orders.flat, None)]
        r = ranked.index(d)
        out: list[tuple[int, int | None]] = []
        for big in range(r + 1, data.m + 1):
            c = _count(self.problem, data, big, r)
            if not out or c > out[-1][0]:
                out.append((c, None if big == r + 1 else ranked[big - 1]))
        return out

    def _received(self, d: int) -> list[Term]:
        """R_x z_xad over the crossings into d: the bytes its stages receive (memory units)."""
        return [(self.data.fb[x] / self.mem_unit, zv) for (x, _, b), zv in self.z.items()
                if b == d and self.data.fb[x] > 0]

    def _memory(self, pyo: Any) -> None:
        """t_d, used_e and each device's memory rows."""
        data, mdl = self.data, self.model
        mdl.t = pyo.Var(range(data.m), domain=pyo.NonNegativeReals)
        switches = sorted({e for d in range(data.m) for _, e in self._counts(d)
                           if e is not None})
        mdl.used = pyo.Var(switches, bounds=(0, 1))
        for e in switches:
            self.used[e] = mdl.used[e]
            for k in range(data.n):
                if e in data.allowed[k]:
                    self._row("inuse", 0.0, [(1.0, self.used[e]), self._xt(k, e, -1.0)])
        for d in range(data.m):
            self._device_memory(d, mdl.t[d])

    def _device_memory(self, d: int, tv: Any) -> None:
        """t_d ≥ tau_k x_kd, then one memory row per count (`_counts`)."""
        data, mu = self.data, self.mem_unit
        self.t[d] = tv
        mine = [k for k in range(data.n) if d in data.allowed[k]]
        fixed = max((data.transient[k] for k in mine if len(data.allowed[k]) == 1), default=0.0)
        tv.setlb(fixed / mu)
        for k in mine:
            if len(data.allowed[k]) > 1 and data.transient[k] > fixed:
                self._row("transient", 0.0, [(1.0, tv),
                                             self._xt(k, d, -data.transient[k] / mu)])
        cap = data.caps[d] / mu
        received = self._received(d)
        for c, switch in self._counts(d):
            terms: list[Term] = [(1.0, tv)]
            for k in mine:
                keep = data.kept[k] if d in self.h else c * data.kept[k]
                terms.append(self._xt(k, d, (data.params[k] + keep) / mu))
            terms += [(c * coef, zv) for coef, zv in received]
            if d in self.h:
                terms.append((float(c - 1), self.h[d]))
            if switch is None:
                self._row("memory", None, terms, cap)
                continue
            most = (sum(data.params[k] + c * data.kept[k] for k in mine)
                    + max((data.transient[k] for k in mine), default=0.0)) / mu + c * sum(
                        coef for coef, _ in received)
            big = max(0.0, most - cap)
            if big > 0:
                self._row("memory", None, [*terms, (big, self.used[switch])], cap + big)

    def _order(self, pyo: Any) -> None:
        """o_ka ≤ o_(k−1)a + x_ka and x_kb ≤ o_(k−1)a for consecutive a, b of each order."""
        data, mdl = self.data, self.model
        okeys = [(oi, k, a) for oi, order in enumerate(self.orders.orders)
                 for a in order[:-1] for k in range(data.n - 1)]
        mdl.o = pyo.Var(okeys, bounds=(0, 1))
        for key in okeys:
            self.o[key] = mdl.o[key]
        for oi, order in enumerate(self.orders.orders):
            for a, b in zip(order, order[1:], strict=False):
                for k in range(data.n):
                    before: Term = (0.0, None) if k == 0 else (-1.0, self.o[(oi, k - 1, a)])
                    if k < data.n - 1:
                        self._row("order", None, [(1.0, self.o[(oi, k, a)]), before,
                                                  self._xt(k, a, -1.0)], 0.0)
                    self._row("order", None, [self._xt(k, b), before], 0.0)

    def _runs(self) -> None:
        """x_0d + Σ_x Σ_a z_xad ≤ 1: each device holds one stage (when `orders.runs`)."""
        if not self.orders.runs:
            return
        into: dict[int, list[Term]] = {d: [self._xt(0, d)] for d in range(self.data.m)}
        for (_, _, b), zv in self.z.items():
            into[b].append((1.0, zv))
        for d in range(self.data.m):
            self._row("runs", None, into[d], 1.0)

    def _stage_cap(self) -> int:
        """Stages at most: under `1f1b`, the micro-batches (torch's `Schedule1F1B` needs
        as many as stages; pipedp's cap too); else one per unit."""
        pipe = _pipeline(self.problem)
        return (min(pipe.microbatches, self.data.n)
                if pipe.schedule_spec.stages_at_most_microbatches else self.data.n)

    def _stages(self) -> None:
        """Σ_x Σ_ab z_xab ≤ cap − 1: the stage boundaries within the schedule's cap."""
        cap = self._stage_cap()
        if cap >= self.data.n:
            return
        self._row("stages", None, [(1.0, zv) for zv in self.z.values()], float(cap - 1))

    # -- seeding and reading ----------------------------------------------------------------

    # complex: a loop per variable family of the model (x, z, rho/q/h, t, used, o, T), each
    # giving its values in the warm start as that family's constraint defines them
    def seed(self, warm: _Warm) -> None:
        """Give every variable its value in the warm start."""
        data, tu, mu, dev = self.data, self.time_unit, self.mem_unit, warm.dev
        for (k, d), var in self.x.items():
            var.set_value(1 if dev[k] == d else 0)
        for (x, a, b), var in self.z.items():
            var.set_value(1 if dev[x - 1] == a and dev[x] == b else 0)
        redo = set(warm.evaluation.recompute)
        for d, var in self.rho.items():
            var.set_value(1 if d in redo else 0)
            mine = [k for k in range(data.n) if dev[k] == d]
            self.q[d].set_value(sum(data.forward[k][d] for k in mine) / tu if d in redo else 0)
            self.h[d].set_value(0.0 if d in redo else sum(data.kept[k] for k in mine) / mu)
        for d, var in self.t.items():
            most = max((data.transient[k] for k in range(data.n) if dev[k] == d), default=0.0)
            var.set_value(max(var.lb or 0.0, most / mu))
        for e, var in self.used.items():
            var.set_value(1 if e in dev else 0)
        for (_, k, a), var in self.o.items():
            var.set_value(1 if a in dev[:k + 1] else 0)
        T = self.model.T
        value = max(T.lb, warm.evaluation.period_s / tu)
        T.set_value(value if T.ub is None else min(T.ub, value))

    def answer(self) -> list[int] | None:
        """The unit-level devices of the loaded solution, or None (missing, fractional)."""
        data = self.data
        dev = []
        for k in range(data.n):
            a = data.allowed[k]
            if len(a) == 1:
                dev.append(a[0])
                continue
            vals = [(self.x[(k, d)].value, d) for d in a]
            if any(v is None for v, _ in vals):
                return None
            best, d = max(vals, key=lambda t: (t[0], -t[1]))
            if best < 0.5 or any(abs(v - round(v)) > 1e-4 for v, _ in vals):
                return None
            dev.append(d)
        return dev

    def objective_s(self) -> float | None:
        """T of the loaded solution, in seconds."""
        value = self.model.T.value
        return None if value is None else float(value) * self.time_unit

    def legend(self) -> list[str]:
        """Comment lines for an emitted model file."""
        p, data = self.problem, self.data
        u = units(p)
        devs = p.cluster.devices
        lines = [
            f"planner pipeilp model of plan `{p.name}`: {data.n} units, {data.m} devices",
            f"times in units of {self.time_unit:g} s; memory in units of {self.mem_unit:g} B",
            "x(k_d): unit k on device d   T: period   z(x_a_b): boundary x crosses from a to b",
            "rho(d): d recomputes   q(d): its forward compute again   h(d): kept unless "
            "recomputing   t(d): largest transient",
            "used(d): d holds a unit   o(i_k_a): in order i, device a holds a unit <= k",
            "devices: " + ", ".join(f"{d}={dev.name}" for d, dev in enumerate(devs)),
        ]
        ops = p.graph.ops
        for k, mem in enumerate(u.members):
            lines.append(f"unit {k}: " + ", ".join(ops[i].name for i in mem))
        return lines


def _emit(model: _Model, path: str) -> None:
    """Write the model to `path` with the `ilp` writer (its formats, errors, legend)."""
    class _Writer(IlpModel):
        def __init__(self) -> None:  # only what `emit` reads
            self.model = model.model

        def legend(self) -> list[str]:
            return model.legend()

    _Writer().emit(path)


# -- the algorithm --------------------------------------------------------------------------


def place(problem: Problem, options: Options) -> Solution:
    """The least period over every placement with per-device recomputation (module
    docstring), as a plan; the devices that recompute in `info["recompute"]`."""
    trivial = empty_solution(problem, "pipeilp")
    if trivial is not None:
        return trivial
    replicated = (problem.pipeline or Pipeline()).data_parallel
    if replicated not in (1, "auto"):  # N identical pipelines: one planned, replicated
        return pipehybrid.identical_pipelines(problem, options, place, "pipeilp")
    pipedp.check_units(problem, problem.pipeline or Pipeline())  # E258, E304, E259: the cause
    clock = Clock(options)
    warm, notes = _warm_starts(problem, options)
    try:
        return _solve(problem, options, clock, warm, notes)
    except KeyboardInterrupt:
        if warm is None:
            raise Interrupted(None) from None
        raise Interrupted(Solution(Plan(warm.placement, algorithm="pipeilp"), "interrupted",
                                   MappingProxyType({"warm_start": warm.source,
                                                     "reason": "interrupted before the "
                                                     "solver answered"}))) from None


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One model built and solved: the model, the solver's outcome, and the figures."""

    ilp: _Model
    outcome: Any
    info: dict[str, Any]


def _attempt(problem: Problem, orders: _Orders, warm: _Warm | None, options: Options,
             clock: Clock) -> _Attempt:
    """Build the model for `orders`, seed it with `warm`, solve it within the budget."""
    data = _data(problem)
    upper = warm.evaluation.period_s if warm else None
    if options.progress:
        options.progress(0.05, "building the pipeline ILP")
    t0 = time.perf_counter()
    ilp = _Model(problem, data, orders, upper, pipeline_bound(problem).period_s,
                 upper if upper else _horizon(problem, data))
    ilp.build()
    if warm is not None:
        ilp.seed(warm)
    build_s = time.perf_counter() - t0
    if options.emit:
        _emit(ilp, options.emit)
    if options.progress:
        options.progress(0.1, f"solving with {options.solver}")
    t1 = time.perf_counter()
    nodes = node_budget(options.time_limit_s, ilp.rows)
    cap_s = options.time_limit_s
    if ilp.rows <= BUDGETED_ROWS:  # the budget ends the search; the clock is a safety cap
        cap_s = WALL_CAP_FACTOR * options.time_limit_s + WALL_CAP_EXTRA_S
    if ilp.contradiction:
        outcome = backends.Outcome("infeasible", "the model is infeasible as built")
    else:
        wall_s = max(0.05, cap_s - clock.elapsed())
        outcome = _run_solver(ilp.model, options, wall_s, nodes, warm is not None)
    info: dict[str, Any] = {"solver": options.solver, "solver_status": outcome.status,
                            "build_s": build_s, "solve_s": time.perf_counter() - t1,
                            "rows": ilp.rows, "nodes": nodes}
    if "time limit" in outcome.message:
        info["reason"] = (f"the clock ({cap_s:.3g} s) ended the search before its budget of "
                          f"{nodes} nodes: another run may give another plan")
    if options.progress:
        options.progress(1.0, f"{options.solver}: {outcome.status}")
    return _Attempt(ilp, outcome, info)


def _answer(problem: Problem, attempt: _Attempt, source: str = "pipeilp") -> _Warm | None:
    """The solver's placement, if it fits when checked exactly."""
    dev = attempt.ilp.answer() if attempt.outcome.loaded else None
    found = None if dev is None else _as_warm(problem, _placement(problem, dev), source)
    if dev is not None and found is None:
        attempt.info["note"] = (f"{attempt.info['solver']}'s answer broke a constraint when "
                                "checked exactly; it was not used")
    return found


def _first_order(problem: Problem, options: Options, clock: Clock,
                 notes: list[Diagnostic]) -> tuple[tuple[int, ...] | None, _Warm | None]:
    """Without a warm start where the order of the devices matters: solve the relaxation
    (`_relaxed`) first. Infeasible, it proves that nothing fits (E708; not under
    `interleaved`, whose rule takes a device's largest stage, not the sum); else its plan
    is a warm start when it fits, and its devices by first unit the order."""
    data = _data(problem)
    first = _attempt(problem, _relaxed(problem, data), None, options, clock)
    if first.outcome.status == "infeasible":
        proof = not _pipeline(problem).schedule_spec.virtual_stages
        raise _none_found(problem, first.outcome, proof, _scope(False), notes)
    dev = first.ilp.answer() if first.outcome.loaded else None
    if dev is None:
        return None, None
    return tuple(dev), _answer(problem, first, "pipeilp (relaxed)")


# complex: solve's steps in order, each reading the ones before: orders and warm start, the
# attempt, the better of warm start and answer, fallback on a failed solve, else the judgement
def _solve(problem: Problem, options: Options, clock: Clock, warm: _Warm | None,
           notes: list[Diagnostic]) -> Solution:
    """Build, seed and solve the model; check its answer exactly; judge (module docstring)."""
    data = _data(problem)
    orders = _orders(problem, data, warm.dev if warm else None)
    if warm is None and not orders.complete:
        order, warm = _first_order(problem, options, clock, notes)
        if order is not None:
            orders = _orders(problem, data, order)
    if warm is not None and orders.classes:
        dev = _relabel(warm.dev, orders.classes)
        placement = _placement(problem, dev)
        warm = _Warm(tuple(dev), placement, evaluate(problem, placement), warm.source)
    admitted = warm if warm is None or not orders.runs or len(
        split_of(problem, warm.placement).devices) == len(warm.evaluation.ranks) else None
    attempt = _attempt(problem, orders, admitted, options, clock)
    outcome, info = attempt.outcome, attempt.info
    info.update(warm_start=warm.source if warm else None,
                warm_start_period_s=warm.evaluation.period_s if warm else None)
    if orders.ranked is not None:
        info["order"] = [problem.cluster.devices[d].name for d in orders.ranked]
    if orders.scope:
        info["scope"] = orders.scope
    found = _answer(problem, attempt)
    best = warm
    if found is not None and (best is None or found.evaluation.period_s
                              < best.evaluation.period_s * (1 - 1e-12)):
        best = found
    if best is None:
        raise _none_found(problem, outcome, orders.complete, orders.scope, notes,
                          attempt.info.get("note", ""))
    if found is not None and best is warm:
        info["kept"] = f"the {best.source} warm start is as good as the solver's answer"
    bound = pipeline_bound(problem).period_s
    if outcome.status not in ("optimal", "feasible"):
        reason = outcome.message or f"{options.solver} found no solution"
        if outcome.status == "infeasible":
            reason = (f"{options.solver} reported the model infeasible although the "
                      f"{best.source} plan satisfies it" if admitted is not None else
                      f"the model ({orders.scope}) is infeasible; the {best.source} plan, "
                      "outside it, is kept")
        log.warning("pipeilp: falling back to the %s plan: %s", best.source, reason)
        info["reason"] = reason
        return _solution(problem, best, "fallback", bound, info)
    objective = attempt.ilp.objective_s() if found is not None else None
    scale = attempt.ilp.time_unit
    solver_bound = outcome.bound * scale if outcome.bound is not None else None
    status, valid = _judge(best.evaluation.period_s, bound, solver_bound, objective,
                           outcome.status == "optimal", orders, options, info)
    return _solution(problem, best, status, valid, info)


def node_budget(limit_s: float, rows: int) -> int:
    """HiGHS's branch-and-bound nodes for `--time-limit` `limit_s` on a model of `rows`
    rows: a deterministic function of the two, so that where HiGHS stops does not depend on
    the machine's load (`budget.py` does the same for CP-SAT)."""
    return max(1, math.floor(NODE_ROWS_PER_S * limit_s / max(rows, 1)))


def _run_solver(model: Any, options: Options, wall_s: float, nodes: int,
                warm: bool) -> Any:
    """Solve with `options.solver`; HiGHS also stops at `nodes` nodes (`node_budget`).

    `backends.solve_pyomo` takes no solver options beyond its profile's, so for HiGHS its
    steps are taken here with `mip_max_nodes` added (the same watchdog, quiet output and
    reading of the outcome).
    """
    name = options.solver
    prof = backends.profile(name)
    threads = backends.threads_for(name)
    if prof.pyomo != "appsi_highs" or not backends.available(name):
        return backends.solve_pyomo(model, name, time_limit_s=wall_s, gap=options.gap,
                                    threads=threads, warm_start=warm, seed=options.seed)
    opt, kwargs = backends._solver(prof, name, time_limit_s=wall_s, gap=options.gap,
                                   threads=threads, warm_start=warm, seed=options.seed)
    kwargs["options"]["mip_max_nodes"] = nodes
    box = backends._run_watched(opt, model, kwargs, name, wall_s)
    if isinstance(box, backends.Outcome):
        return box
    if "error" in box:
        err = box["error"]
        text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return backends.Outcome("error", f"{name} failed: {text}")
    return backends._read(model, name, box["results"])


def _judge(period: float, bound_s: float, solver_bound: float | None,
           objective: float | None, solver_optimal: bool, orders: _Orders, options: Options,
           info: dict[str, Any]) -> tuple[Status, float]:
    """The status of a plan of `period` and the best valid bound (module docstring)."""
    proved = solver_optimal and objective is not None and period <= objective * (1 + _TOL)
    valid = bound_s
    if orders.complete and solver_bound is not None:
        valid = max(valid, solver_bound)
    if proved and orders.complete and objective is not None:  # optimum within --gap of it
        valid = max(valid, objective / (1 + options.gap))
    gap = relative_gap(period, min(valid, period))
    status: Status = "feasible"
    if gap is not None and gap <= OPTIMAL_GAP:
        status, why = "optimal", (
            f"{options.solver} proved the model optimal, and the model is the period and "
            "memory reported" if proved and orders.complete else
            "the period meets a valid lower bound (within 1e-6)")
    elif gap is not None and gap <= options.gap:
        why = ("the solver stopped within --gap of a valid lower bound; `optimal` is kept "
               "for a gap of at most 1e-6")
    elif proved and not orders.complete:
        why = f"proved optimal only among {orders.scope}"
    else:
        why = "no proof of optimality"
    info.update(proved=proved and orders.complete, why=why, solver_bound_s=solver_bound)
    if proved and not orders.complete:
        info["proved_in_order"] = True
    return status, valid


def _solution(problem: Problem, best: _Warm, status: Status, bound_s: float,
              info: dict[str, Any]) -> Solution:
    """The plan of `best` with its figures: period, bound, gap, recomputation."""
    ev = best.evaluation
    names = [d.name for d in problem.cluster.devices]
    bound_s = min(bound_s, ev.period_s)
    info.update(period_s=ev.period_s, period_bound_s=bound_s,
                period_gap=relative_gap(ev.period_s, bound_s), devices_used=len(ev.ranks),
                recompute=[names[d] for d in ev.recompute],
                held_bytes={names[d]: ev.held_bytes[d] for d in ev.ranks})
    if ev.recompute:
        data = _data(problem)
        extra = [sum(data.forward[k][d] for k in range(data.n) if best.dev[k] == d)
                 for d in ev.recompute]
        said = ", ".join(f"{names[d]} (+{format_seconds(t)} per micro-batch, holds "
                         f"{format_bytes(int(ev.held_bytes[d]))})"
                         for d, t in zip(ev.recompute, extra, strict=True))
        info["memory_note"] = (
            f"recomputes activations on {said}: these devices keep, for each micro-batch in "
            "flight, only the tensors their stages receive, and run their forward ops again "
            "in each backward pass (their own activations exist for one micro-batch at a "
            "time)")
    return Solution(Plan(best.placement, algorithm="pipeilp"), status, MappingProxyType(info))


def _horizon(problem: Problem, data: _Data) -> float:
    """A period of the size of the model's (it only scales the model's time unit when
    there is no warm start): all compute on one device plus every boundary crossed once."""
    work = max((sum(row[d] for row in data.compute if row[d] < INF)
                for d in range(data.m)), default=0.0)
    moves = sum(max((t for a in range(data.m) for b in range(data.m)
                     if (t := data.forward_s(x, a, b) + data.backward_s(x, a, b)) < INF),
                    default=0.0) for x in range(1, data.n))
    return work + moves


def _none_found(problem: Problem, outcome: Any, complete: bool, scope: str,
                notes: list[Diagnostic], rejected: str = "") -> Exception:
    """No warm start and no answer: a proof (the solver's, for a model that covers every
    placement: E708, exit 3), a search that ended at its limit or covered only some
    placements without one (E709, exit 6), or a failure (E711, exit 4: the solver's own,
    or an answer that broke a constraint when checked exactly)."""
    said = tuple(d.message for d in notes)
    if outcome.status == "infeasible" and complete:
        return InfeasibleError((*notes, Diagnostic(
            "E708", f"no placement of plan `{problem.name}` fits the devices' memory as a "
            "pipeline, even recomputing activations on every device", None,
            ("fewer micro-batches in flight (`schedule 1f1b`, fewer `microbatches`) hold "
             "fewer activations; or give the devices more `memory`",))))
    if outcome.status == "infeasible":
        return SearchLimitError(Diagnostic(
            "E709", f"pipeilp found no placement of plan `{problem.name}`: none of the "
            f"placements its model covers ({scope}) fits, and no "
            "contiguous split fits, even recomputing; this is not a proof that no other "
            "placement fits", None,
            (*said, "`schedule gpipe` lets pipeilp search every placement; or give the "
             "devices more `memory`")))
    if rejected or "limit" not in outcome.message:
        return SolverError(Diagnostic(
            "E711", f"pipeilp found no placement of plan `{problem.name}`: "
            f"{rejected or outcome.message or outcome.status}; and no contiguous split "
            "fits, even recomputing", None, said))
    return SearchLimitError(Diagnostic(
        "E709", f"pipeilp found no placement of plan `{problem.name}` within its time "
        f"limit ({outcome.message}), and no contiguous split fits, even recomputing: this "
        "is not a proof that none exists", None, (*said, "a longer --time-limit may find one")))
