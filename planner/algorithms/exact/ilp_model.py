r"""The `ilp` model: placement and scheduling as a mixed-integer linear program, in Pyomo.

The model (contention `none`, static memory; notation of `instance.py`: units `u` are
colocation groups or lone ops, `A(u)` a unit's allowed devices, `p_id` op `i`'s time on
`d`, `T_ab(B) = latency_ab + B / bandwidth_ab`, `U` the warm start's makespan):

    minimise  C
    x_ud ∈ {0,1}                     Σ_{d ∈ A(u)} x_ud = 1                 (assignment)
    P_i = Σ_d p_id x_{u(i)d}         head_i ≤ s_i ≤ U − tail_i − pmin_i   (windows)
    arc i → j, same unit:            s_j ≥ s_i + P_i
    arc i → j, units u ≠ v:          s_j ≥ s_i + P_i + c_iv
      c_iv ≥ Σ_{b ≠ a} T_ab(B_iv) x_vb − M_a (1 − x_ua)          ∀ a ∈ A(u)   (transfer)
      c_iv ≥ T_ab(B_iv') (x_ua + x_vb + x_v'b − 2)   when T_ab(B_iv') > T_ab(B_iv) (one copy)
      x_ua + x_vb ≤ 1                                when no link goes from a to b  (nolink)
    pairs i, j with no path between them whose windows overlap, units u, v:
      z_uv ≥ x_ud + x_vd − 1   ∀ d ∈ A(u) ∩ A(v)    (same device; ≡ 1 when u = v)
      s_j ≥ s_i + P_i − M_ij (2 − y_ij − z_uv)       (i before j, y_ij = 1)
      s_i ≥ s_j + P_j − M_ji (1 + y_ij − z_uv)       (j before i)
      z_uv ≤ 0                                       (when neither order fits the windows)
    memory, per device d whose cap can bind (bytes, in units of 2^k B):
      Σ_u W_u x_ud + Σ_i r_id + t_d ≤ cap_d
      r_id ≥ B_iv (x_vd − x_{u(i)d})                 (the copy of i's output on d)
      t_d ≥ temp_u x_ud                              (largest temp)
    makespan:  C ≥ s_i + P_i (sinks);  C ≥ Σ_i p_id x_{u(i)d} ∀ d (load);  LB ≤ C ≤ U
    symmetry, per class of identical devices d_0 < d_1 < …:
      x_{u d_k} ≤ Σ_{u' < u} x_{u' d_(k−1)}          (devices ordered by their first unit)

`B_iv` is the largest `bytes` from op `i` into unit `v`; the copy a device receives is the
largest among the units there (the cost model sends a producer's output to a device once),
so the one-copy rows cover every other unit `v'` that `b` may hold with `B_iv' > B_iv`.
`M_a = max_b T_ab(B_iv)` over the linked `b ≠ a`; `c_iv` exists only when some transfer
from `i` into `v` takes time, and is the constant `T_ab(B_iv)` when both units are fixed
(to `a ≠ b`) and no larger copy can land on `b`. `M_ij = U − tail_i − head_j`
(pair-specific, from the windows), and pairs whose windows admit only one order get one
row and no `y`; pairs that can never overlap get none. Ordering binaries exist only for
pairs with no path between them.

Build: `families.families` reduces the instance to each family's data (seconds, bytes,
indices), shared with `cpsat_model.py`; `IlpModel.build` declares `x`, `s`, `C`, then translates
one family per method, each into its own `ConstraintList` (`ROW_FAMILIES`, the row names
of an emitted file): `_assignment`; `_transfers` (the `c` variables and the nolink,
`_transfer_rows` and `_copy_rows`); `_precedence`; `_ordering` (the pairs of
`families.ordering_pairs`: `_same_rows` for `z`, `_order_rows` for the big-M rows: this
family is the ILP's own, CP-SAT orders with intervals); `_memory` and `_cap_row`;
`_makespan` (sinks and load cuts); `_symmetry`. Every test on a number (is a term zero, is
a delay needed) is made in the model's own units, as when the rows were built inline.

Numerics: times are in units of `10^k` s chosen so that `U` is 10^3–10^4 units, so the
solvers' absolute feasibility (~1e-6) and integrality tolerances cost far less than the
relative gap `Options.gap` (default 1e-6). Memory rows are in units of `2^k` bytes with
the largest cap at most ~10^6 units; the plan is checked against the caps in exact bytes
afterwards (`common.conclude`), so tolerances can never yield an over-full device.

The algorithm that builds, seeds and solves it is `ilp.py`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ...cost import INF
from . import backends
from .common import Warm
from .families import (
    Delay,
    Families,
    MemoryRow,
    Windows,
    copy_bytes,
    families,
    held_temp,
    ordering_pairs,
    scaled_windows,
)
from .instance import Instance, choice_term
from .model_file import write_model

#: a tiny slack on `U` so a warm start timed in floats never misses its own bound
_UB_SLACK = 1e-9
#: the build reads the clock every this many rows of its two largest families
_CHECK_EVERY = 4096

#: the row families, one ConstraintList each, in the order the model file lists them
ROW_FAMILIES = ("assign", "nolink", "transfer", "copy", "precedence", "same", "order",
                "memory", "makespan", "loadcut", "symmetry")

#: a term of a linear row: (coefficient, Pyomo variable), or (constant, None)
Term = tuple[float, Any]


def model_units(top_s: float, caps: Sequence[int]) -> tuple[float, float]:
    """The (time, memory) units a model's rows are written in (module docstring, Numerics):
    10^k s with `top_s` at 10^3 to 10^4 units, and 2^k B with the largest cap at most about
    10^6 units. The pipeline ILP writes its rows in the same units."""
    top = top_s if top_s > 0 else 1.0
    cap = max(caps, default=1)
    return (10.0 ** (math.floor(math.log10(top)) - 3),
            float(2 ** max(0, math.ceil(math.log2(max(1, cap) / 1e6)))))


def chosen_device(x: Mapping[tuple[int, int], Any], u: int, allowed: Sequence[int]
                  ) -> int | None:
    """The device a loaded solution gives unit `u`: its only allowed one, else the one whose
    binary x_ud is largest (ties to the lowest); None when a value is missing or fractional
    (an LP point, not a solution). The pipeline ILP reads its units the same way."""
    if len(allowed) == 1:
        return allowed[0]
    vals = [(x[(u, d)].value, d) for d in allowed]
    if any(v is None for v, _ in vals):
        return None
    best, d = max(vals, key=lambda t: (t[0], -t[1]))
    if best < 0.5 or any(abs(v - round(v)) > 1e-4 for v, _ in vals):
        return None
    return d


class OutOfTime(Exception):
    """The build passed its deadline (`IlpModel.build`), with `rows` rows built."""

    def __init__(self, rows: int) -> None:
        super().__init__(f"{rows} rows built")
        self.rows = rows


class IlpModel:
    """A built Pyomo model and the handles needed to seed it and read its answer."""

    def __init__(self, inst: Instance, upper_s: float, lower_s: float) -> None:
        self.inst = inst
        self.upper_s = upper_s * (1 + _UB_SLACK)
        self.lower_s = min(lower_s, self.upper_s)
        self.time_unit, self.mem_unit = model_units(self.upper_s, inst.caps)
        self.model: Any = None
        self.x: dict[tuple[int, int], Any] = {}
        self.z: dict[tuple[int, int], Any] = {}
        self.y: dict[tuple[int, int], Any] = {}
        self.c: dict[tuple[int, int], Any] = {}
        self.r: dict[tuple[int, int], Any] = {}
        self.t: dict[int, Any] = {}
        self.s: list[Any] = []
        self.n_rows = 0
        self._allowed = inst.allowed
        # set by `build`: Pyomo's LinearExpression, the windows in time units, p_id in time
        # units, each family's ConstraintList.add
        self._linear: Any = None
        self._eps = 0.0
        self._win = Windows((), (), (), 0.0)
        self._proc: list[list[float]] = []
        self._add: dict[str, Any] = {}
        self._deadline: float | None = None

    # -- building -----------------------------------------------------------------------

    def build(self, deadline: float | None = None) -> None:
        """Build the Pyomo model: the variables, then each row family of `families.py`
        in turn (the module docstring lists every row). Raises `OutOfTime` once
        `time.perf_counter()` passes `deadline`, checked between families and every
        `_CHECK_EVERY` rows of the three largest (a model of millions of rows takes
        minutes)."""
        self._deadline = deadline
        pyo = backends.import_pyomo()
        # lazy: start-up (Pyomo, loaded by `import_pyomo` just above)
        from pyomo.core.expr.numeric_expr import LinearExpression

        self._linear = LinearExpression
        inst = self.inst
        fam = families(inst)
        self._in_time()  # the families alone: 2.8 s of a random 10,000-op DAG
        tu = self.time_unit
        ub = self.upper_s / tu
        self._eps = 1e-9 * ub
        self._win = scaled_windows(inst, tu, ub)
        self._proc = [[p / tu if p < INF else INF for p in row] for row in inst.proc]
        mdl = pyo.ConcreteModel(name=_lp_name(inst.problem.name))
        self.model = mdl
        self._declare(pyo, fam)
        for name in ROW_FAMILIES:
            mdl.add_component(name, pyo.ConstraintList())
        self._add = {name: getattr(mdl, name).add for name in ROW_FAMILIES}
        self._in_time()
        self._assignment(fam)
        self._in_time()
        delay = self._transfers(pyo, fam)
        self._in_time()
        self._precedence(fam, delay)
        self._in_time()
        self._ordering(pyo)
        self._in_time()
        self._memory(pyo, fam)
        self._in_time()
        self._makespan(fam)
        self._symmetry(fam)
        mdl.obj = pyo.Objective(expr=mdl.C, sense=pyo.minimize)

    def _in_time(self, rows: int = 0) -> None:
        """Raise `OutOfTime` when the build's deadline has passed (`rows`: the rows a hot
        loop has added and not yet counted in `n_rows`)."""
        if self._deadline is not None and time.perf_counter() > self._deadline:
            raise OutOfTime(self.n_rows + rows)

    def _declare(self, pyo: Any, fam: Families) -> None:
        """x_ud per unit with a choice; s_i within its window; LB ≤ C ≤ U."""
        mdl = self.model
        xkeys = [(u, d) for u, a in fam.choices for d in a]
        mdl.x = pyo.Var(xkeys, domain=pyo.Binary)
        for key in xkeys:
            self.x[key] = mdl.x[key]
        n = self.inst.n
        mdl.s = pyo.Var(range(n), domain=pyo.Reals)
        self.s = [mdl.s[i] for i in range(n)]
        win, eps = self._win, self._eps
        for i, var in enumerate(self.s):
            var.setlb(win.head[i])
            var.setub(max(win.head[i], win.upper - win.tail[i] - win.pmin[i]) + eps)
        mdl.C = pyo.Var(domain=pyo.Reals, bounds=(self.lower_s / self.time_unit, win.upper))

    # -- terms --------------------------------------------------------------------------

    def _X(self, u: int, d: int) -> Term:
        """(constant, var) of x_ud: (1, None) fixed there, (0, None) impossible."""
        return choice_term(self._allowed[u], d, self.x, (u, d), 1.0, 0.0)

    def _xt(self, u: int, d: int) -> Term:
        """x_ud as a term: (1, var), or (constant, None)."""
        c, v = self._X(u, d)
        return (1.0, v) if v is not None else (c, None)

    def _lin(self, const: float, terms: Sequence[Term]) -> Any:
        """Σ terms (+ const) as one Pyomo linear expression, constants folded."""
        coefs = [c for c, v in terms if v is not None and c != 0]
        vars_ = [v for c, v in terms if v is not None and c != 0]
        const += sum(c for c, v in terms if v is None)
        return self._linear(constant=const, linear_coefs=coefs, linear_vars=vars_)

    def _proc_terms(self, i: int, sign: float = 1.0) -> list[Term]:
        """P_i (times `sign`): a constant when every allowed device takes as long."""
        u = self.inst.unit_of[i]
        a = self._allowed[u]
        proc = self._proc[i]
        vals = {proc[d] for d in a}
        if len(vals) == 1 or len(a) == 1:
            return [(sign * proc[a[0]], None)]
        return [(sign * proc[d], self.x[(u, d)]) for d in a]

    def _row(self, family: str, row: tuple[Any, Any, Any]) -> None:
        """Add `(lower, body, upper)` to the ConstraintList of `family`."""
        self._add[family](row)
        self.n_rows += 1

    def _row_ge(self, family: str, rhs: float, terms: list[Term]) -> None:
        """Σ terms ≥ rhs in `family`."""
        self._row(family, (rhs, self._lin(0.0, terms), None))

    # -- row families -------------------------------------------------------------------

    def _assignment(self, fam: Families) -> None:
        """Σ_d x_ud = 1 per unit with a choice."""
        for u, au in fam.choices:
            self._row("assign", (1, self._lin(0.0, [(1.0, self.x[(u, d)]) for d in au]), 1))

    def _transfers(self, pyo: Any, fam: Families) -> dict[tuple[int, int], list[Term]]:
        """One delay c_pv per (producer, consumer unit) that needs one (a constant when
        both ends are fixed), its transfer and copy rows, and the no-link rows; returns
        the delay terms each arc p → v adds to its precedence row."""
        tu = self.time_unit
        delay: dict[tuple[int, int], list[Term]] = {}
        ckeys: list[tuple[int, int]] = []
        for dl in fam.delays:
            key = (dl.p, dl.v)
            if dl.fixed_s is not None:
                delay[key] = [(dl.fixed_s / tu, None)]
            elif dl.top_s > 0:
                ckeys.append(key)
            else:
                delay[key] = []
        mdl = self.model
        mdl.c = pyo.Var(ckeys, domain=pyo.NonNegativeReals)
        for key in ckeys:
            self.c[key] = mdl.c[key]
            delay[key] = [(1.0, mdl.c[key])]
        checked = self.n_rows
        for dl in fam.delays:
            for a, b in dl.nolink:  # links that do not exist: never both ends there
                self._row("nolink", (None, self._lin(0.0, [self._xt(dl.u, a),
                                                           self._xt(dl.v, b)]), 1.0))
            cvar = self.c.get((dl.p, dl.v))
            if cvar is not None:
                self._transfer_rows(dl, cvar)
                self._copy_rows(dl, cvar)
            if self.n_rows - checked >= _CHECK_EVERY:  # the largest family of some graphs:
                checked = self.n_rows  # 700,000 rows, 18 s, of a random 10,000-op DAG
                self._in_time()
        return delay

    def _transfer_rows(self, dl: Delay, cvar: Any) -> None:
        """c ≥ Σ_{b≠a} T_ab x_vb − M_a (1 − x_ua), per a ∈ A(u)."""
        tu = self.time_unit
        for a, to_b in dl.rows:
            big = max((t / tu for _, t in to_b), default=0.0)
            if big == 0:
                continue
            expr: list[Term] = [(1.0, cvar)]
            rhs = 0.0
            for b, t in to_b:
                coef = t / tu
                cx, vx = self._X(dl.v, b)
                if vx is None:
                    rhs += coef * cx
                else:
                    expr.append((-coef, vx))
            _, va = self._X(dl.u, a)
            if va is not None:
                rhs -= big
                expr.append((-big, va))
            self._row_ge("transfer", rhs, expr)

    def _copy_rows(self, dl: Delay, cvar: Any) -> None:
        """One copy per device: a larger copy for another unit v' on b delays v too:
        c ≥ T_ab(B') (x_ua + x_vb + x_v'b − 2)."""
        for cp in dl.copies:
            t2 = cp.time_s / self.time_unit
            rhs = -2.0 * t2
            expr: list[Term] = [(1.0, cvar)]
            for cx, vx in (self._X(dl.u, cp.a), self._X(dl.v, cp.b), self._X(cp.v2, cp.b)):
                if vx is None:
                    rhs += t2 * cx
                else:
                    expr.append((-t2, vx))
            self._row_ge("copy", rhs, expr)

    def _precedence(self, fam: Families, delay: dict[tuple[int, int], list[Term]]) -> None:
        """s_j ≥ s_i + P_i (+ c_iv) per arc."""
        s = self.s
        for i, j, dl in fam.precedence:
            terms: list[Term] = [(1.0, s[j]), (-1.0, s[i])]
            terms += self._proc_terms(i, -1.0)
            if dl is not None:
                terms += [(-cf, vv) for cf, vv in delay[(i, dl.v)]]
            self._row("precedence", (0.0, self._lin(0.0, terms), None))

    def _ordering(self, pyo: Any) -> None:
        """The ordering family: z_uv (same device), y_ij (i first) and the big-M rows."""
        pairs = ordering_pairs(self.inst, self._win, self._eps)
        self._same_rows(pyo, pairs)
        mdl = self.model
        ykeys = [(i, j) for i, j, ij, ji in pairs if ij and ji]
        mdl.y = pyo.Var(ykeys, domain=pyo.Binary)
        for key in ykeys:
            self.y[key] = mdl.y[key]
        self._order_rows(pairs)

    def _same_rows(self, pyo: Any, pairs: list[tuple[int, int, bool, bool]]) -> None:
        """z_uv ≥ x_ud + x_vd − 1 for the unit pairs of `pairs` that both have a choice."""
        allowed, unit_of = self.inst.allowed, self.inst.unit_of
        zkeys: list[tuple[int, int]] = []
        for i, j, _, _ in pairs:
            ui, uj = unit_of[i], unit_of[j]
            if ui != uj and len(allowed[ui]) > 1 and len(allowed[uj]) > 1:
                key = (min(ui, uj), max(ui, uj))
                if key not in self.z:
                    self.z[key] = None
                    zkeys.append(key)
        mdl = self.model
        mdl.z = pyo.Var(zkeys, bounds=(0, 1))
        x, add, linear = self.x, self._add["same"], self._linear  # hot: most rows are here
        rows = 0
        for key in zkeys:
            zv = self.z[key] = mdl.z[key]
            u, v = key
            for d in allowed[u]:
                if d in allowed[v]:
                    add((-1.0, linear(constant=0.0, linear_coefs=[1.0, -1.0, -1.0],
                                      linear_vars=[zv, x[(u, d)], x[(v, d)]]), None))
                    rows += 1
                    if not rows % _CHECK_EVERY:
                        self._in_time(rows)
        self.n_rows += rows

    def _same(self, ui: int, uj: int) -> Term | None:
        """z_uv as (constant, var), or None when the units can never share."""
        if ui == uj:
            return 1.0, None
        ai, aj = self._allowed[ui], self._allowed[uj]
        if len(ai) == 1 and len(aj) == 1:
            return (1.0, None) if ai[0] == aj[0] else None
        if len(ai) == 1:
            return self._X(uj, ai[0])
        if len(aj) == 1:
            return self._X(ui, aj[0])
        return 0.0, self.z[(min(ui, uj), max(ui, uj))]

    def _neg_proc(self, i: int) -> tuple[float, list[float], list[Any]]:
        """−P_i as (constant, coefficients, variables)."""
        terms = self._proc_terms(i, -1.0)
        return (sum(c for c, v in terms if v is None), [c for c, v in terms if v is not None],
                [v for c, v in terms if v is not None])

    def _order_rows(self, pairs: list[tuple[int, int, bool, bool]]) -> None:
        """Per pair on one device, the order (or orders) its windows allow (big-M)."""
        n, unit_of = self.inst.n, self.inst.unit_of
        head, tail, ub = self._win.head, self._win.tail, self._win.upper
        s, add, linear = self.s, self._add["order"], self._linear  # hot: most rows are here
        rows = 0
        neg_p = [self._neg_proc(i) for i in range(n)]
        for i, j, ij, ji in pairs:
            zz = self._same(unit_of[i], unit_of[j])
            if zz is None:
                continue
            zc, zv = zz
            if zv is None and zc == 0:
                continue
            if not ij and not ji:  # they cannot share a device at all
                if zv is None:
                    continue  # both fixed to one device: impossible below a valid U
                add((None, self._lin(0.0, [(1.0, zv)]), 0.0))
                rows += 1
                continue
            both = ij and ji
            yv = self.y[(i, j)] if both else None
            for a, b, ok, first in ((i, j, ij, True), (j, i, ji, False)):
                if not ok:
                    continue
                big = ub - tail[a] - head[b]
                # s_b - s_a - P_a >= -big (2 - y - z) (a = i), -big (1 + y - z) (a = j),
                # -big (1 - z) when only this order fits the windows
                pc, coefs, vars_ = neg_p[a]
                coefs = [1.0, -1.0, *coefs]
                vars_ = [s[b], s[a], *vars_]
                rhs = pc
                if both:
                    rhs -= 2 * big if first else big
                    coefs.append(-big if first else big)
                    vars_.append(yv)
                else:
                    rhs -= big
                if zv is None:
                    rhs += big * zc
                else:
                    coefs.append(-big)
                    vars_.append(zv)
                add((-pc + rhs, linear(constant=pc, linear_coefs=coefs, linear_vars=vars_),
                     None))
                rows += 1
                if not rows % _CHECK_EVERY:
                    self._in_time(rows)
        self.n_rows += rows

    def _memory(self, pyo: Any, fam: Families) -> None:
        """r_pd ≥ B_pv (x_vd − x_{u(p)d}) for the copies, then each device's cap row."""
        mu = self.mem_unit
        mdl = self.model
        rkeys = [(p, row.d) for row in fam.memory for p, _, _ in row.copies]
        mdl.r = pyo.Var(rkeys, domain=pyo.NonNegativeReals)
        for key in rkeys:
            self.r[key] = mdl.r[key]
        for row in fam.memory:
            d = row.d
            for p, up, cands in row.copies:
                rv = mdl.r[(p, d)]
                for v, b in cands:
                    terms: list[Term] = [(1.0, rv)]
                    cv, vv = self._X(v, d)
                    cp, vp = self._X(up, d)
                    const = b / mu * (cv - cp)
                    if vv is not None:
                        terms.append((-b / mu, vv))
                    if vp is not None:
                        terms.append((b / mu, vp))
                    self._row("memory", (const, self._lin(0.0, terms), None))
        mdl.t = pyo.Var([row.d for row in fam.memory], domain=pyo.NonNegativeReals)
        for row in fam.memory:
            self._cap_row(row, mdl.t[row.d])

    def _cap_row(self, row: MemoryRow, tv: Any) -> None:
        """t_d ≥ temp_u x_ud, and Σ_u W_u x_ud + Σ_p r_pd + t_d ≤ cap_d."""
        d, mu = row.d, self.mem_unit
        allowed = self.inst.allowed
        self.t[d] = tv
        fixed = row.fixed_temp
        tv.setlb(fixed / mu)
        for u, temp in row.temps:
            if len(allowed[u]) > 1 and temp > fixed:
                self._row("memory", (0.0, self._lin(0.0, [(1.0, tv),
                                                          (-temp / mu, self.x[(u, d)])]), None))
        terms = [(w / mu * c, v) for u, w in row.weights if w > 0 for c, v in [self._xt(u, d)]]
        terms += [(1.0, self.r[(p, d)]) for p, _, _ in row.copies]
        terms.append((1.0, tv))
        self._row("memory", (None, self._lin(0.0, terms), row.cap / mu))

    def _makespan(self, fam: Families) -> None:
        """C ≥ s_i + P_i for every sink; C ≥ the load of every device (a cut)."""
        C, s = self.model.C, self.s
        for i in self.inst.sinks:
            self._row("makespan", (0.0, self._lin(0.0, [(1.0, C), (-1.0, s[i]),
                                                        *self._proc_terms(i, -1.0)]), None))
        unit_of, proc = self.inst.unit_of, self._proc
        for d, ops in enumerate(fam.loads):
            terms: list[Term] = [(1.0, C)]
            for i in ops:
                if proc[i][d] > 0:
                    c, v = self._xt(unit_of[i], d)
                    terms.append((-proc[i][d] * c, v))
            if len(terms) > 1:
                self._row("loadcut", (0.0, self._lin(0.0, terms), None))

    def _symmetry(self, fam: Families) -> None:
        """x_{u d_k} ≤ Σ_{u' < u} x_{u' d_(k−1)} per class of identical devices."""
        x = self.x
        for cls, members in fam.symmetry:
            for k in range(1, len(cls)):
                prev: list[Any] = []
                for u in members:
                    xv = x[(u, cls[k])]
                    if not prev:
                        xv.fix(0)
                    else:
                        self._row("symmetry", (None, self._lin(
                            0.0, [(1.0, xv)] + [(-1.0, w) for w in prev]), 0.0))
                    prev.append(x[(u, cls[k - 1])])

    # -- warm start ---------------------------------------------------------------------

    def seed(self, warm: Warm) -> None:
        """Give every variable its value in the warm start (CBC drops partial starts)."""
        assert warm.placement is not None and warm.order is not None and warm.start_s
        inst = self.inst
        tu, mu = self.time_unit, self.mem_unit
        place = warm.placement
        for (u, d), var in self.x.items():
            if not var.fixed:
                var.set_value(1 if place[inst.units[u][0]] == d else 0)
        for i, var in enumerate(self.s):
            var.set_value(min(max(warm.start_s[i] / tu, var.lb), var.ub))
        self.model.C.set_value(min(max(warm.makespan_s / tu, self.model.C.lb), self.model.C.ub))
        dev_of_unit = [place[mem[0]] for mem in inst.units]
        tt = inst.costs.transfer_time
        for (p, v), var in self.c.items():
            a, b = place[p], dev_of_unit[v]
            nbytes = copy_bytes(inst, dev_of_unit, p, b)
            var.set_value(tt(nbytes, a, b) / tu if a != b else 0.0)
        for (u, v), var in self.z.items():
            var.set_value(1 if dev_of_unit[u] == dev_of_unit[v] else 0)
        pos = {op: k for k, op in enumerate(warm.order)}
        for (i, j), var in self.y.items():
            var.set_value(1 if pos[i] < pos[j] else 0)
        for (p, d), var in self.r.items():
            b = copy_bytes(inst, dev_of_unit, p, d)
            var.set_value(b / mu if place[p] != d else 0.0)
        for d, var in self.t.items():
            var.set_value(max(var.lb or 0.0, held_temp(inst, dev_of_unit, d) / mu))

    # -- reading ------------------------------------------------------------------------

    def answer(self) -> tuple[list[int], list[float]] | None:
        """(placement, start times in seconds) from the loaded solution, or None."""
        inst = self.inst
        place = [-1] * inst.n
        for u, mem in enumerate(inst.units):
            d = chosen_device(self.x, u, inst.allowed[u])
            if d is None:
                return None
            for i in mem:
                place[i] = d
        start = [var.value for var in self.s]
        if any(t is None for t in start):
            return None
        return place, [float(t) * self.time_unit for t in start]

    # -- emitting -----------------------------------------------------------------------

    def emit(self, path: str) -> None:
        """Write the model to `path` (`.lp` or `.mps`), with a legend of indices to names."""
        write_model(self.model, path, self.legend())

    def legend(self) -> list[str]:
        """Comment lines explaining the variables and naming units and devices."""
        inst = self.inst
        ops = inst.problem.graph.ops
        devs = inst.problem.cluster.devices
        lines = [
            f"planner ILP of plan `{inst.problem.name}`: {inst.n} ops, {inst.m} devices",
            f"times in units of {self.time_unit:g} s; memory in units of {self.mem_unit:g} B",
            "x(u_d): unit u on device d   s(i): start of op i   C: makespan",
            "c(i_u): transfer delay from op i into unit u   z(u_v): units u, v share a device",
            "y(i_j): op i before op j   r(i_d): copy of op i's output on d   t(d): largest temp",
            ("rows: assign, nolink, transfer, copy (one copy per device), precedence, same "
             "(z), order (pairs), memory, makespan, loadcut, symmetry"),
            "devices: " + ", ".join(f"{d}={dev.name}" for d, dev in enumerate(devs)),
        ]
        for u, mem in enumerate(inst.units):
            names = ", ".join(f"{i}={ops[i].name}" for i in mem)
            lines.append(f"unit {u}: {names}")
        return lines


def _lp_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name) or "plan"
