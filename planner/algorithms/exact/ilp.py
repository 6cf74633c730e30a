r"""`ilp`: placement and scheduling as a mixed-integer linear program, built with Pyomo.

The model (contention `none`, static memory; notation of `instance.py`: units `u` are
colocation groups or lone ops, `A(u)` a unit's allowed devices, `p_id` op `i`'s time on
`d`, `T_ab(B) = latency_ab + B / bandwidth_ab`, `U` the warm start's makespan):

    minimise  C
    x_ud ∈ {0,1}                     Σ_{d ∈ A(u)} x_ud = 1                 (assignment)
    P_i = Σ_d p_id x_{u(i)d}         head_i ≤ s_i ≤ U − tail_i − pmin_i   (windows)
    arc i → j, same unit:            s_j ≥ s_i + P_i
    arc i → j, units u ≠ v:          s_j ≥ s_i + P_i + c_iv
      c_iv ≥ Σ_{b ≠ a} T_ab(B_iv) x_vb − M_a (1 − x_ua)          ∀ a ∈ A(u)   (transfer)
      c_iv ≥ T_ab(B_iv') (x_ua + x_vb + x_v'b − 2)   when B_iv' > B_iv          (one copy)
      x_ua + x_vb ≤ 1                                when a, b have no link
    pairs i, j with no path between them whose windows overlap, units u, v:
      z_uv ≥ x_ud + x_vd − 1   ∀ d ∈ A(u) ∩ A(v)    (same device; ≡ 1 when u = v)
      s_j ≥ s_i + P_i − M_ij (2 − y_ij − z_uv)       (i before j, y_ij = 1)
      s_i ≥ s_j + P_j − M_ji (1 + y_ij − z_uv)       (j before i)
    memory, per device d whose cap can bind (bytes, in units of 2^k B):
      Σ_u W_u x_ud + Σ_i r_id + t_d ≤ cap_d
      r_id ≥ B_iv (x_vd − x_{u(i)d})                 (the copy of i's output on d)
      t_d ≥ temp_u x_ud                              (largest temp)
    makespan:  C ≥ s_i + P_i (sinks);  C ≥ Σ_i p_id x_{u(i)d} ∀ d (load);  LB ≤ C ≤ U
    symmetry, per class of identical devices d_0 < d_1 < …:
      x_{u d_k} ≤ Σ_{u' < u} x_{u' d_(k−1)}          (devices ordered by their first unit)

`B_iv` is the largest `bytes` from op `i` into unit `v`; the copy a device receives is the
largest among the units there (the cost model sends a producer's output to a device once).
`M_a = max_b T_ab(B_iv)`; `M_ij = U − tail_i − head_j` (pair-specific, from the windows),
and pairs whose windows admit only one order get one row and no `y`; pairs that can never
overlap get none. Ordering binaries exist only for pairs with no path between them.

Numerics: times are in units of `10^k` s chosen so that `U` is 10^3–10^4 units, so the
solvers' absolute feasibility (~1e-6) and integrality tolerances cost far less than the
relative gap `Options.gap` (default 1e-4). Memory rows are in units of `2^k` bytes with
the largest cap at most ~10^6 units; the plan is checked against the caps in exact bytes
afterwards (`common.conclude`), so tolerances can never yield an over-full device.

Back-ends (`Options.solver`, `backends.py`, `solvers/profiles.toml`): `highs` (embedded,
`appsi_highs`, takes the MIP start), `cbc` (binary, takes the MIP start), `glpk` (binary,
no MIP start: the warm start still bounds `C` and the windows), and any other Pyomo solver
by name (`scip`, `gurobi`, `cplex`). `Options.emit` writes the model as `.lp` or `.mps`.
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
import time
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from ...cost import INF
from ...errors import Diagnostic, UsageError
from ...model import Problem
from ..base import Interrupted, Options, Solution
from . import backends
from .common import Clock, Warm, conclude, empty_solution, lower_bound_s, warm_start
from .instance import Instance

log = logging.getLogger("planner")

#: a tiny slack on `U` so a warm start timed in floats never misses its own bound
_UB_SLACK = 1e-9


def _comment_text(text: str) -> str:
    """`text` safe inside one comment line of an LP or MPS file: names built in Python may
    hold line breaks, which would end the comment and inject rows."""
    return "".join(c if c >= " " or c == "\t" else f"\\x{ord(c):02x}" for c in text
                   ).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


class IlpModel:
    """A built Pyomo model and the handles needed to seed it and read its answer."""

    def __init__(self, inst: Instance, upper_s: float, lower_s: float) -> None:
        self.inst = inst
        self.upper_s = upper_s * (1 + _UB_SLACK)
        self.lower_s = min(lower_s, self.upper_s)
        top = self.upper_s if self.upper_s > 0 else 1.0
        self.time_unit = 10.0 ** (math.floor(math.log10(top)) - 3)
        cap = max(inst.caps, default=1)
        self.mem_unit = float(2 ** max(0, math.ceil(math.log2(max(1, cap) / 1e6))))
        self.model: Any = None
        self.x: dict[tuple[int, int], Any] = {}
        self.z: dict[tuple[int, int], Any] = {}
        self.y: dict[tuple[int, int], Any] = {}
        self.c: dict[tuple[int, int], Any] = {}
        self.r: dict[tuple[int, int], Any] = {}
        self.t: dict[int, Any] = {}
        self.n_rows = 0

    # -- building -----------------------------------------------------------------------

    def build(self) -> None:
        """Build the Pyomo model (see the module docstring for every row)."""
        pyo = backends.import_pyomo()
        from pyomo.core.expr.numeric_expr import LinearExpression

        inst = self.inst
        n, m = inst.n, inst.m
        tu = self.time_unit
        ub = self.upper_s / tu
        eps = 1e-9 * ub
        head = [h / tu for h in inst.head]
        tail = [t / tu for t in inst.tail]
        pmin = [p / tu for p in inst.pmin]
        proc = [[p / tu if p < INF else INF for p in row] for row in inst.proc]
        allowed = inst.allowed
        unit_of = inst.unit_of

        mdl = pyo.ConcreteModel(name=_lp_name(inst.problem.name))
        self.model = mdl
        xkeys = [(u, d) for u, a in enumerate(allowed) if len(a) > 1 for d in a]
        mdl.x = pyo.Var(xkeys, domain=pyo.Binary)
        x = self.x
        for key in xkeys:
            x[key] = mdl.x[key]
        mdl.s = pyo.Var(range(n), domain=pyo.Reals)
        s = [mdl.s[i] for i in range(n)]
        for i in range(n):
            s[i].setlb(head[i])
            s[i].setub(max(head[i], ub - tail[i] - pmin[i]) + eps)
        mdl.C = pyo.Var(domain=pyo.Reals, bounds=(self.lower_s / tu, ub))
        C = mdl.C
        families = ("assign", "nolink", "transfer", "copy", "precedence", "same", "order",
                    "memory", "makespan", "loadcut", "symmetry")
        for fam in families:
            mdl.add_component(fam, pyo.ConstraintList())
        add_to = {fam: getattr(mdl, fam).add for fam in families}

        def X(u: int, d: int) -> tuple[float, Any]:
            """(constant, var) of x_ud: (1, None) fixed there, (0, None) impossible."""
            a = allowed[u]
            if d not in a:
                return 0.0, None
            if len(a) == 1:
                return 1.0, None
            return 0.0, x[(u, d)]

        def xt(u: int, d: int) -> tuple[float, Any]:
            """x_ud as a term: (1, var), or (constant, None)."""
            c, v = X(u, d)
            return (1.0, v) if v is not None else (c, None)

        def lin(const: float, terms: Sequence[tuple[float, Any]]) -> Any:
            coefs = [c for c, v in terms if v is not None and c != 0]
            vars_ = [v for c, v in terms if v is not None and c != 0]
            const += sum(c for c, v in terms if v is None)
            return LinearExpression(constant=const, linear_coefs=coefs, linear_vars=vars_)

        def proc_terms(i: int, sign: float = 1.0) -> list[tuple[float, Any]]:
            u = unit_of[i]
            a = allowed[u]
            vals = {proc[i][d] for d in a}
            if len(vals) == 1 or len(a) == 1:
                return [(sign * proc[i][a[0]], None)]
            return [(sign * proc[i][d], x[(u, d)]) for d in a]

        rows = 0
        # assignment
        for u, au in enumerate(allowed):
            if len(au) > 1:
                add_to["assign"]((1, lin(0.0, [(1.0, x[(u, d)]) for d in au]), 1))
                rows += 1

        # transfers: one delay variable per (producer, consumer unit) that needs one
        tt = inst.costs.transfer_time
        delay: dict[tuple[int, int], list[tuple[float, Any]]] = {}
        ckeys: list[tuple[int, int]] = []
        for p in range(n):
            au = allowed[unit_of[p]]
            biggest = max((bb for _, bb in inst.fanout[p]), default=0)
            for v, nbytes in inst.fanout[p]:
                av = allowed[v]
                if len(au) == 1 and len(av) == 1:
                    a, b = au[0], av[0]
                    if a == b:
                        delay[(p, v)] = []
                        continue
                    if not any(b2 > nbytes and b in allowed[v2] for v2, b2 in inst.fanout[p]):
                        delay[(p, v)] = [(tt(nbytes, a, b) / tu, None)]
                        continue
                times = [tt(biggest, a, b) for a in au for b in av if a != b]
                if not any(0 < t < INF for t in times):
                    delay[(p, v)] = []
                    continue
                ckeys.append((p, v))
        mdl.c = pyo.Var(ckeys, domain=pyo.NonNegativeReals)
        for key in ckeys:
            self.c[key] = mdl.c[key]
            delay[key] = [(1.0, mdl.c[key])]

        def row_ge(fam: str, rhs: float, terms: list[tuple[float, Any]]) -> None:
            """Σ terms ≥ rhs in family `fam`."""
            add_to[fam]((rhs, lin(0.0, terms), None))

        for p in range(n):
            u = unit_of[p]
            au = allowed[u]
            for v, nbytes in inst.fanout[p]:
                av = allowed[v]
                for a in au:  # links that do not exist: never both ends there
                    for b in av:
                        if a != b and tt(nbytes, a, b) == INF:
                            add_to["nolink"]((None, lin(0.0, [xt(u, a), xt(v, b)]), 1.0))
                            rows += 1
                if (p, v) not in self.c:
                    continue
                cvar = self.c[(p, v)]
                # c >= Σ_{b≠a} T_ab x_vb - M_a (1 - x_ua)
                for a in au:
                    to_b = [(tt(nbytes, a, b) / tu, b) for b in av
                            if b != a and tt(nbytes, a, b) < INF]
                    big = max((t for t, _ in to_b), default=0.0)
                    if big == 0:
                        continue
                    expr: list[tuple[float, Any]] = [(1.0, cvar)]
                    rhs = 0.0
                    for coef, b in to_b:
                        cx, vx = X(v, b)
                        if vx is None:
                            rhs += coef * cx
                        else:
                            expr.append((-coef, vx))
                    _, va = X(u, a)
                    if va is not None:
                        rhs -= big
                        expr.append((-big, va))
                    row_ge("transfer", rhs, expr)
                    rows += 1
                # one copy per device: a larger copy for another unit on b delays v too:
                # c >= T_ab(B') (x_ua + x_vb + x_v'b - 2)
                for v2, b2 in inst.fanout[p]:
                    if v2 == v or b2 <= nbytes:
                        continue
                    for a in au:
                        for b in av:
                            if a == b or b not in allowed[v2]:
                                continue
                            t2 = tt(b2, a, b)
                            if t2 == INF or t2 <= tt(nbytes, a, b):
                                continue
                            t2 /= tu
                            rhs = -2.0 * t2
                            expr = [(1.0, cvar)]
                            for cx, vx in (X(u, a), X(v, b), X(v2, b)):
                                if vx is None:
                                    rhs += t2 * cx
                                else:
                                    expr.append((-t2, vx))
                            row_ge("copy", rhs, expr)
                            rows += 1

        # precedence
        for arc in inst.arcs:
            i, j = arc.src, arc.dst
            terms: list[tuple[float, Any]] = [(1.0, s[j]), (-1.0, s[i])]
            terms += proc_terms(i, -1.0)
            v = unit_of[j]
            if v != unit_of[i]:
                terms += [(-cf, vv) for cf, vv in delay[(i, v)]]
            add_to["precedence"]((0.0, lin(0.0, terms), None))
            rows += 1

        # disjunctive pairs
        desc = inst.descendants
        zkeys: list[tuple[int, int]] = []
        pairs: list[tuple[int, int, bool, bool]] = []
        for i in range(n):
            ui = unit_of[i]
            for j in range(i + 1, n):
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
                if ui != uj and len(allowed[ui]) > 1 and len(allowed[uj]) > 1:
                    key = (min(ui, uj), max(ui, uj))
                    if key not in self.z:
                        self.z[key] = None
                        zkeys.append(key)
        mdl.z = pyo.Var(zkeys, bounds=(0, 1))
        add_same, add_order = add_to["same"], add_to["order"]
        for key in zkeys:
            zv = self.z[key] = mdl.z[key]
            u, v = key
            for d in allowed[u]:
                if d in allowed[v]:
                    add_same((-1.0, LinearExpression(
                        constant=0.0, linear_coefs=[1.0, -1.0, -1.0],
                        linear_vars=[zv, x[(u, d)], x[(v, d)]]), None))
                    rows += 1
        ykeys = [(i, j) for i, j, ij, ji in pairs if ij and ji]
        mdl.y = pyo.Var(ykeys, domain=pyo.Binary)
        for key in ykeys:
            self.y[key] = mdl.y[key]

        def same(ui: int, uj: int) -> tuple[float, Any] | None:
            """z_uv as (constant, var), or None when the units can never share."""
            if ui == uj:
                return 1.0, None
            ai, aj = allowed[ui], allowed[uj]
            if len(ai) == 1 and len(aj) == 1:
                return (1.0, None) if ai[0] == aj[0] else None
            if len(ai) == 1:
                return X(uj, ai[0])
            if len(aj) == 1:
                return X(ui, aj[0])
            return 0.0, self.z[(min(ui, uj), max(ui, uj))]

        # -P_i of every op as (constant, coefficients, variables), built once
        neg_p: list[tuple[float, list[float], list[Any]]] = []
        for i in range(n):
            terms = proc_terms(i, -1.0)
            neg_p.append((sum(c for c, v in terms if v is None),
                          [c for c, v in terms if v is not None],
                          [v for c, v in terms if v is not None]))
        for i, j, ij, ji in pairs:
            zz = same(unit_of[i], unit_of[j])
            if zz is None:
                continue
            zc, zv = zz
            if zv is None and zc == 0:
                continue
            if not ij and not ji:  # they cannot share a device at all
                if zv is None:
                    continue  # both fixed to one device: impossible below a valid U
                add_order((None, lin(0.0, [(1.0, zv)]), 0.0))
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
                add_order((-pc + rhs, LinearExpression(constant=pc, linear_coefs=coefs,
                                                       linear_vars=vars_), None))
                rows += 1

        # memory
        mt = inst.memory_terms
        mu = self.mem_unit
        rkeys: list[tuple[int, int]] = []
        recv_rows: list[tuple[int, int, int, int]] = []
        for d in range(m):
            if not mt.rows[d]:
                continue
            for p, per in mt.receives:
                up = unit_of[p]
                if allowed[up] == (d,):
                    continue
                cands = [(v, b) for v, b in per if d in allowed[v] and b > 0]
                if cands:
                    rkeys.append((p, d))
                    recv_rows.extend((p, d, v, b) for v, b in cands)
        mdl.r = pyo.Var(rkeys, domain=pyo.NonNegativeReals)
        for key in rkeys:
            self.r[key] = mdl.r[key]
        for p, d, v, b in recv_rows:
            terms = [(1.0, mdl.r[(p, d)])]
            cv, vv = X(v, d)
            cp, vp = X(unit_of[p], d)
            const = b / mu * (cv - cp)
            if vv is not None:
                terms.append((-b / mu, vv))
            if vp is not None:
                terms.append((b / mu, vp))
            add_to["memory"]((const, lin(0.0, terms), None))
            rows += 1
        tkeys = [d for d in range(m) if mt.rows[d]]
        mdl.t = pyo.Var(tkeys, domain=pyo.NonNegativeReals)
        for d in tkeys:
            tv = mdl.t[d]
            self.t[d] = tv
            fixed = max((mt.temp[u] for u, a in enumerate(allowed) if a == (d,)), default=0)
            tv.setlb(fixed / mu)
            for u, au in enumerate(allowed):
                if len(au) > 1 and d in au and mt.temp[u] > fixed:
                    add_to["memory"]((0.0, lin(0.0, [(1.0, tv), (-mt.temp[u] / mu, x[(u, d)])]),
                                      None))
                    rows += 1
            terms = [(mt.weight[u] / mu * c, v) for u, a in enumerate(allowed)
                     if d in a and mt.weight[u] > 0 for c, v in [xt(u, d)]]
            terms += [(1.0, mdl.r[(p, dd)]) for (p, dd) in rkeys if dd == d]
            terms.append((1.0, tv))
            add_to["memory"]((None, lin(0.0, terms), inst.caps[d] / mu))
            rows += 1

        # makespan: sinks, loads
        for i in inst.sinks:
            add_to["makespan"]((0.0, lin(0.0, [(1.0, C), (-1.0, s[i]), *proc_terms(i, -1.0)]),
                                None))
            rows += 1
        for d in range(m):
            terms = [(1.0, C)]
            for i in range(n):
                u = unit_of[i]
                if d in allowed[u] and proc[i][d] > 0:
                    c, v = xt(u, d)
                    terms.append((-proc[i][d] * c, v))
            if len(terms) > 1:
                add_to["loadcut"]((0.0, lin(0.0, terms), None))
                rows += 1

        # symmetry among identical devices
        for cls in inst.classes:
            members = [u for u, a in enumerate(allowed) if cls[0] in a]
            for k in range(1, len(cls)):
                prev: list[Any] = []
                for u in members:
                    xv = x[(u, cls[k])]
                    if not prev:
                        xv.fix(0)
                    else:
                        add_to["symmetry"]((None, lin(0.0, [(1.0, xv)] + [(-1.0, w) for w in prev]),
                                            0.0))
                        rows += 1
                    prev.append(x[(u, cls[k - 1])])

        mdl.obj = pyo.Objective(expr=C, sense=pyo.minimize)
        self.s = s
        self.n_rows = rows

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
            nbytes = max(bb for vv, bb in inst.fanout[p] if dev_of_unit[vv] == b)
            var.set_value(tt(nbytes, a, b) / tu if a != b else 0.0)
        for (u, v), var in self.z.items():
            var.set_value(1 if dev_of_unit[u] == dev_of_unit[v] else 0)
        pos = {op: k for k, op in enumerate(warm.order)}
        for (i, j), var in self.y.items():
            var.set_value(1 if pos[i] < pos[j] else 0)
        for (p, d), var in self.r.items():
            b = max((bb for vv, bb in inst.fanout[p] if dev_of_unit[vv] == d), default=0)
            var.set_value(b / mu if place[p] != d else 0.0)
        mt = inst.memory_terms
        for d, var in self.t.items():
            var.set_value(max(var.lb or 0.0, max((mt.temp[u] for u in range(len(inst.units))
                                                  if dev_of_unit[u] == d), default=0) / mu))

    # -- reading ------------------------------------------------------------------------

    def answer(self) -> tuple[list[int], list[float]] | None:
        """(placement, start times in seconds) from the loaded solution, or None."""
        inst = self.inst
        place = [-1] * inst.n
        for u, mem in enumerate(inst.units):
            a = inst.allowed[u]
            if len(a) == 1:
                d = a[0]
            else:
                vals = [(self.x[(u, dd)].value, dd) for dd in a]
                if any(v is None for v, _ in vals):
                    return None
                best, d = max(vals, key=lambda t: (t[0], -t[1]))
                if best < 0.5 or any(abs(v - round(v)) > 1e-4 for v, _ in vals):
                    return None  # fractional: an LP point, not a solution
            for i in mem:
                place[i] = d
        start = [var.value for var in self.s]
        if any(t is None for t in start):
            return None
        return place, [float(t) * self.time_unit for t in start]

    # -- emitting -----------------------------------------------------------------------

    def emit(self, path: str) -> None:
        """Write the model to `path` (`.lp` or `.mps`), with a legend of indices to names."""
        ext = os.path.splitext(path)[1].lower()
        fmt = {".lp": "lp", ".mps": "mps"}.get(ext)
        if fmt is None:
            raise UsageError(Diagnostic("E814", f"cannot write the model as `{ext or path}`",
                                        None, ("use a path ending in .lp or .mps",)))
        from ...files import resolve_target

        path = str(resolve_target(path))  # only a regular file is replaced (E622)
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".planner-", suffix=ext, dir=directory)
        os.close(fd)
        try:
            self.model.write(tmp, format=fmt, io_options={"symbolic_solver_labels": True})
            with open(tmp, encoding="utf-8") as f:
                body = f.read()
            mark = "\\" if fmt == "lp" else "*"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write("".join(f"{mark} {_comment_text(line)}\n" for line in self.legend()))
                f.write(body)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

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


def place(problem: Problem, options: Options) -> Solution:
    """Solve `problem` with the ILP and `options.solver`; see the module docstring.

    The model's build counts inside `Options.time_limit_s` (measured: the MIP solvers'
    limits are wall-clock anyway, so a run is reproducible only when the solver ends by
    itself before its limit). Ctrl-C kills a child-process solver and raises
    `Interrupted` with the warm start.
    """
    trivial = empty_solution(problem, "ilp")
    if trivial is not None:
        return trivial
    clock = Clock(options)
    inst = Instance(problem)
    warm = warm_start(inst, options)  # `portfolio.rank` raises Interrupted itself
    try:
        return _solve(inst, warm, clock, options)
    except KeyboardInterrupt:
        if warm.plan is None:
            raise Interrupted(None) from None
        raise Interrupted(Solution(warm.plan, "interrupted", MappingProxyType(
            {"solver": options.solver, "warm_start": warm.source,
             "reason": "interrupted before the solver answered"}))) from None


def _solve(inst: Instance, warm: Warm, clock: Clock, options: Options) -> Solution:
    progress = options.progress
    lower = lower_bound_s(inst)
    upper = warm.makespan_s if warm.usable else inst.horizon
    if progress:
        progress(0.05, "building the ILP")
    t_build = time.perf_counter()
    ilp = IlpModel(inst, upper, lower)
    ilp.build()
    if warm.usable:
        ilp.seed(warm)
    build_s = time.perf_counter() - t_build
    if options.emit:
        ilp.emit(options.emit)
    log.info("ilp: %d ops, %d devices: %d rows built in %.2f s", inst.n, inst.m, ilp.n_rows,
             build_s)
    if progress:
        progress(0.1, f"solving with {options.solver}")
    t_solve = time.perf_counter()
    outcome = backends.solve_pyomo(
        ilp.model, options.solver, time_limit_s=clock.remaining(), gap=options.gap,
        threads=backends.threads_for(options.solver), warm_start=warm.usable,
        seed=options.seed)
    solve_s = time.perf_counter() - t_solve
    if progress:
        progress(1.0, f"{options.solver}: {outcome.status}")
    ans = ilp.answer() if outcome.loaded else None
    if outcome.loaded and ans is None:  # a claim without a whole, integral solution
        outcome = backends.Outcome("nosolution", (
            f"{options.solver} said {outcome.message}, but its solution leaves variables "
            "without a value or fractional; it was not used"))
    bound = outcome.bound * ilp.time_unit if outcome.bound is not None else None
    return conclude(
        inst, warm, algorithm="ilp", solver=options.solver, outcome=outcome.status,
        message=outcome.message, placement=ans[0] if ans else None,
        key=ans[1] if ans else None, solver_bound_s=bound, lower_s=lower,
        build_s=build_s, solve_s=solve_s, tolerance=options.gap,
        extra={"rows": ilp.n_rows})
