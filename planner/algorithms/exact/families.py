r"""The exact models' constraint families, once, as data both back-ends translate.

The ILP (`ilp_model.py`, Pyomo) and the CP-SAT model (`cpsat_model.py`) are one model of the
problem (contention `none`, static memory, pins, colocation, links) in two modelling APIs.
This module reduces an `Instance` to the data of each family of constraints, in seconds and
bytes, indexed by op, unit and device (plain dataclasses and tuples of numbers); each
back-end hands that data to its API, one function per family (cvxpy's "reduce, then hand the
data over"). A change to the cost model's terms is made here, or in `instance.py`, and both
models follow.

Notation of `instance.py`: units `u, v` (colocation groups or lone ops), `A(u)` a unit's
allowed devices, `x_ud` "unit u on device d" (the constant 1 when `A(u) = (d,)`, 0 off
`A(u)`: both back-ends fold constants in), `T_ab(B) = latency_ab + B / bandwidth_ab`,
`B_pv` the largest bytes from producer op `p` into unit `v` (`Instance.fanout`).

- **assignment** (`Families.choices`): the units with a choice of device, and their
  devices: `Σ_{d ∈ A(u)} x_ud = 1`.
- **windows** (`Windows`, in a back-end's time unit): `head_i ≤ s_i ≤ U − tail_i − pmin_i`.
- **transfer** (`Families.delays`, one `Delay` per producer `p` and other unit `v` it feeds,
  in `Instance.fanout` order): the delay `c_pv` every arc `p → v` waits for,
  `c_pv ≥ Σ_{b ≠ a} T_ab(B_pv) x_vb` when `x_ua` (`Delay.rows`: per `a`, the linked `b`);
  `¬(x_ua ∧ x_vb)` when no link goes from `a` to `b` (`Delay.nolink`).
- **copy** (`Delay.copies`, "one copy per device"): `p`'s output goes to a device once, the
  largest copy any unit there needs; so `c_pv ≥ T_ab(B_pv')` when `x_ua ∧ x_vb ∧ x_v'b`
  for every other unit `v'` with `B_pv' > B_pv` and `T_ab(B_pv') > T_ab(B_pv)`.
- **precedence** (`Families.precedence`): per arc `i → j`, `s_j ≥ s_i + P_i` (+ `c_iv`
  when `j`'s unit `v` is not `i`'s).
- **ordering** (`ordering_pairs`): the pairs of ops with no path between them that may
  share a device and whose windows overlap, and which of the two orders fit the windows.
  The ILP orders them with big-M rows; CP-SAT covers this family with optional intervals
  and one no-overlap per device, and reads only the windows.
- **memory** (`Families.memory`, one `MemoryRow` per device whose cap can bind):
  `Σ_u W_u x_ud + Σ_p r_pd + t_d ≤ cap_d`, `r_pd ≥ B_pv (x_vd − x_{u(p)d})` (the copy of
  `p`'s output held on `d`), `t_d ≥ temp_u x_ud` (the largest temp).
- **makespan** (`Instance.sinks`, `Families.loads`): `C ≥ s_i + P_i` for every sink;
  `C ≥ Σ_i p_id x_{u(i)d}` over the ops that may run on `d`.
- **symmetry** (`Families.symmetry`): per class of identical devices `d_0 < d_1 < …`, the
  units that may use it; `x_{u d_k}` only when an earlier unit uses `d_(k−1)`.

The data stays in seconds and bytes and holds every term a back-end may need; each
back-end scales it (the ILP to `10^k` s and `2^k` B, CP-SAT to integer ticks and exact
bytes) and applies its tests in its own units: a delay that rounds to 0 ticks has no
CP-SAT variable, while the ILP keeps it; the ILP folds a delay between two fixed devices
into a constant (`Delay.fixed_s`), while CP-SAT keeps a variable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...cost import INF
from .instance import Instance

#: per `a ∈ A(u)`, `(a, ((b, T_ab(B_pv)), ...))` for every linked `b ∈ A(v)`, `b ≠ a`
TransferRows = tuple[tuple[int, tuple[tuple[int, float], ...]], ...]


@dataclass(frozen=True, slots=True)
class Copy:
    """One "one copy per device" term of a `Delay` (p into v): with `p` on `a` and both
    `v` and `v2` on `b`, `b` receives `v2`'s larger copy, so `c_pv ≥ time_s`
    (= `T_ab(B_pv2)`, greater than `own_s` = `T_ab(B_pv)`)."""

    v2: int
    a: int
    b: int
    time_s: float
    own_s: float


@dataclass(frozen=True, slots=True)
class Delay:
    """The transfer and copy families of producer op `p` (unit `u`) into unit `v ≠ u`.

    `nbytes` is `B_pv`. `top_s` is the largest finite `T_ab` of `p`'s largest copy over
    `a ∈ A(u)`, `b ∈ A(v)`, `a ≠ b`: 0 when `v` can never wait (then `rows` and `copies`
    are empty). `fixed_s`: both units fixed to devices `a ≠ b` and no unit that `b` may
    hold receives a larger copy: the delay is this constant `T_ab(B_pv)`. `nolink`: the
    pairs `(a, b)`, `a ≠ b`, with no link from `a` to `b`.
    """

    p: int
    u: int
    v: int
    nbytes: int
    top_s: float
    fixed_s: float | None
    nolink: tuple[tuple[int, int], ...]
    rows: TransferRows
    copies: tuple[Copy, ...]


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """The memory family of device `d` (cap `cap`, bytes).

    `weights`: `(u, W_u)` for every unit that may use `d` (params + outputs, possibly 0);
    `copies`: `(p, u(p), ((v, B_pv), ...))` for every producer not fixed on `d` and the
    units that may use `d` it sends a non-empty copy to; `temps`: `(u, temp_u)` for the
    units that may use `d` with a temp; `fixed_temp`: the largest temp of the units fixed
    on `d` (0 when none).
    """

    d: int
    cap: int
    weights: tuple[tuple[int, int], ...]
    copies: tuple[tuple[int, int, tuple[tuple[int, int], ...]], ...]
    temps: tuple[tuple[int, int], ...]
    fixed_temp: int


@dataclass(frozen=True, slots=True)
class Windows:
    """Time windows in one back-end's time unit: per op its earliest start `head`, its
    least time from end to makespan `tail`, its fastest time `pmin`; `upper` is `U`."""

    head: Sequence[float]
    tail: Sequence[float]
    pmin: Sequence[float]
    upper: float


@dataclass(frozen=True, slots=True)
class Families:
    """Every constraint family's data (see the module docstring); from `families(inst)`."""

    choices: tuple[tuple[int, tuple[int, ...]], ...]
    delays: tuple[Delay, ...]
    precedence: tuple[tuple[int, int, Delay | None], ...]
    memory: tuple[MemoryRow, ...]
    loads: tuple[tuple[int, ...], ...]
    symmetry: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]


def families(inst: Instance) -> Families:
    """The data of every constraint family of `inst` (module docstring)."""
    allowed = inst.allowed
    unit_of = inst.unit_of
    delays = transfer_delays(inst)
    by_key = {(dl.p, dl.v): dl for dl in delays}
    precedence = tuple(
        (a.src, a.dst, by_key[(a.src, unit_of[a.dst])]
         if unit_of[a.dst] != unit_of[a.src] else None) for a in inst.arcs)
    loads = tuple(tuple(i for i in range(inst.n) if d in allowed[unit_of[i]])
                  for d in range(inst.m))
    symmetry = tuple((cls, tuple(u for u, a in enumerate(allowed) if cls[0] in a))
                     for cls in inst.classes)
    return Families(
        choices=tuple((u, a) for u, a in enumerate(allowed) if len(a) > 1),
        delays=delays, precedence=precedence, memory=memory_rows(inst), loads=loads,
        symmetry=symmetry)


def transfer_delays(inst: Instance) -> tuple[Delay, ...]:
    """One `Delay` per producer op and other unit it feeds, in `Instance.fanout` order."""
    tt = inst.costs.transfer_time
    allowed, unit_of = inst.allowed, inst.unit_of
    out: list[Delay] = []
    for p, fan in enumerate(inst.fanout):
        au = allowed[unit_of[p]]
        biggest = max((b for _, b in fan), default=0)
        # T_ab(B_pv) per consumer unit v, for a ∈ A(u), b ∈ A(v), a ≠ b: each time once
        own = {v: {(a, b): tt(nbytes, a, b) for a in au for b in allowed[v] if a != b}
               for v, nbytes in fan}
        out.extend(_delay(inst, p, v, nbytes, fan, biggest, own) for v, nbytes in fan)
    return tuple(out)


# complex: the fields of one `Delay` (fixed, nolink, top, rows, copies), each a filter of the
# pairs a ∈ A(u), b ∈ A(v), a ≠ b by their times in `own`, as the Delay docstring defines it
def _delay(inst: Instance, p: int, v: int, nbytes: int, fan: tuple[tuple[int, int], ...],
           biggest: int, own: dict[int, dict[tuple[int, int], float]]) -> Delay:
    """The `Delay` of `p` into `v`; `own[v']`: `T_ab(B_pv')` for every unit `v'` fed."""
    tt = inst.costs.transfer_time
    allowed = inst.allowed
    u = inst.unit_of[p]
    au, av = allowed[u], allowed[v]
    mine = own[v]
    nolink = tuple(ab for ab, t in mine.items() if t == INF)
    fixed: float | None = None
    if len(au) == 1 and len(av) == 1 and au[0] != av[0] and not any(
            b2 > nbytes and av[0] in allowed[v2] for v2, b2 in fan):
        fixed = mine[(au[0], av[0])]
    times = [tt(biggest, a, b) for a in au for b in av if a != b]
    top = max((t for t in times if t < INF), default=0.0)
    if not top > 0:
        return Delay(p, u, v, nbytes, top, fixed, nolink, (), ())
    rows = tuple((a, tuple((b, t) for b in av if b != a for t in (mine[(a, b)],) if t < INF))
                 for a in au)
    copies: list[Copy] = []
    for v2, b2 in fan:
        if v2 == v or b2 <= nbytes:
            continue
        theirs = own[v2]
        for a in au:
            for b in av:
                if a == b or (a, b) not in theirs:  # b ∉ A(v2)
                    continue
                t2, t1 = theirs[(a, b)], mine[(a, b)]
                if t2 != INF and t2 > t1:
                    copies.append(Copy(v2, a, b, t2, t1))
    return Delay(p, u, v, nbytes, top, fixed, nolink, rows, tuple(copies))


def memory_rows(inst: Instance) -> tuple[MemoryRow, ...]:
    """One `MemoryRow` per device whose cap can bind (`Instance.memory_terms.rows`)."""
    mt = inst.memory_terms
    allowed, unit_of = inst.allowed, inst.unit_of
    out: list[MemoryRow] = []
    for d in range(inst.m):
        if not mt.rows[d]:
            continue
        copies = []
        for p, per in mt.receives:
            up = unit_of[p]
            if allowed[up] == (d,):
                continue
            cands = tuple((v, b) for v, b in per if d in allowed[v] and b > 0)
            if cands:
                copies.append((p, up, cands))
        users = [u for u, a in enumerate(allowed) if d in a]
        out.append(MemoryRow(
            d, inst.caps[d], tuple((u, mt.weight[u]) for u in users), tuple(copies),
            tuple((u, mt.temp[u]) for u in users if mt.temp[u] > 0),
            max((mt.temp[u] for u, a in enumerate(allowed) if a == (d,)), default=0)))
    return tuple(out)


def scaled_windows(inst: Instance, unit: float, upper: float) -> Windows:
    """`inst`'s windows (seconds) in units of `unit` seconds, with `U` = `upper` units."""
    return Windows([h / unit for h in inst.head], [t / unit for t in inst.tail],
                   [p / unit for p in inst.pmin], upper)


def ordering_pairs(inst: Instance, win: Windows,
                   eps: float) -> list[tuple[int, int, bool, bool]]:
    """The ordering family: `(i, j, i_first, j_first)` for ops `i < j` with no path
    between them, whose units may share a device, and whose windows overlap (by more than
    `eps`); `i_first`/`j_first`: whether that order fits the windows (neither: the two
    may not share a device)."""
    head, tail, pmin, ub = win.head, win.tail, win.pmin, win.upper
    unit_of = inst.unit_of
    desc = inst.descendants
    pairs: list[tuple[int, int, bool, bool]] = []
    for i in range(inst.n):
        ui = unit_of[i]
        for j in range(i + 1, inst.n):
            if (desc[i] >> j) & 1 or (desc[j] >> i) & 1:
                continue
            uj = unit_of[j]
            if ui != uj and not inst.can_share(ui, uj):
                continue
            if ub - tail[i] <= head[j] + eps or ub - tail[j] <= head[i] + eps:
                continue  # one always ends before the other starts
            ij = head[i] + pmin[i] <= ub - tail[j] - pmin[j] + eps
            ji = head[j] + pmin[j] <= ub - tail[i] - pmin[i] + eps
            pairs.append((i, j, ij, ji))
    return pairs


# -- the families' values under a placement (the warm start's MIP start and hints) --------


def copy_bytes(inst: Instance, dev_of_unit: Sequence[int], p: int, d: int) -> int:
    """Under a placement (`dev_of_unit`: each unit's device), the bytes of the one copy of
    op `p`'s output device `d` receives: the largest `B_pv` over the units `v` on `d` (0
    when none). `c_pv` is its transfer time when `v` is on `d`; `r_pd` is it."""
    return max((b for v, b in inst.fanout[p] if dev_of_unit[v] == d), default=0)


def held_temp(inst: Instance, dev_of_unit: Sequence[int], d: int) -> int:
    """Under a placement, the largest temp of the units on device `d`: the value of `t_d`."""
    temp = inst.memory_terms.temp
    return max((temp[u] for u in range(len(inst.units)) if dev_of_unit[u] == d), default=0)
