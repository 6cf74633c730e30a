"""The Pyomo model of the package docstring and the handles to seed and read it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from ...cost import INF
from ...model import Problem
from ...pipeline import hybrid
from ...pipeline.units import units
from ..exact import backends
from ..exact.ilp_model import OutOfTime, chosen_device, model_units
from ..exact.instance import choice_term
from ..exact.model_file import write_model
from .data import _count, _Data, _pipeline
from .orders import _Orders
from .warm import _Warm

#: relative slack on the warm start's period as the upper bound on T (floats)
_UB_SLACK = 1e-6
#: the build reads the clock every this many rows (ResNet-50's 15,253 rows: about 1 s)
CHECK_EVERY = 1024
#: a term of a linear row: (coefficient, Pyomo variable), or (constant, None)
Term = tuple[float, Any]


class _Model:
    """The Pyomo model of the package docstring and the handles to seed and read it."""

    def __init__(self, problem: Problem, data: _Data, orders: _Orders, upper_s: float | None,
                 lower_s: float, scale_s: float) -> None:
        self.problem, self.data, self.orders = problem, data, orders
        self.upper_s = None if upper_s is None else upper_s * (1 + _UB_SLACK)
        self.lower_s = lower_s if upper_s is None else min(lower_s, upper_s)
        self.time_unit, self.mem_unit = model_units(scale_s, data.caps)
        self.model: Any = None
        self.x: dict[tuple[int, int], Any] = {}
        self.z: dict[tuple[int, int, int], Any] = {}
        self.rho: dict[int, Any] = {}
        self.q: dict[int, Any] = {}
        self.h: dict[int, Any] = {}
        #: v_d: the model's outputs on d while it recomputes (held per micro-batch)
        self.v: dict[int, Any] = {}
        #: r_d: the model's outputs on d when it holds the last unit (inference: kept, merged)
        self.r: dict[int, Any] = {}
        self.returned = 0  # the copies of them merged (`hybrid.returned_copies`)
        #: inference: the other micro-batches whose inputs and outputs a device's stages keep
        self.cached = 0
        #: training: the receive buffers per boundary tensor (`hybrid.buffer_copies`)
        self.buffers = 0
        #: w_xab = z_xab and ρ_a: a recomputing device sends boundary x (held per micro-batch)
        self.w: dict[tuple[int, int, int], Any] = {}
        self.t: dict[int, Any] = {}
        self.used: dict[int, Any] = {}
        self.o: dict[tuple[int, int, int], Any] = {}
        self.rows = 0
        #: a row without variables that cannot hold: the model is infeasible as built
        self.contradiction = False
        self._linear: Any = None
        self._lists: dict[str, Any] = {}
        self._deadline: float | None = None
        #: when the model began (`time.perf_counter()`): its build time is measured from it
        self.t0 = time.perf_counter()

    # -- terms and rows ---------------------------------------------------------------------

    def _x(self, k: int, d: int) -> Term:
        """x_kd: (0, var), or the constant (1, None) / (0, None) for a fixed unit."""
        return choice_term(self.data.allowed[k], d, self.x, (k, d), 1.0, 0.0)

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
        if not self.rows % CHECK_EVERY:
            self._in_time()

    def _in_time(self) -> None:
        """Raise `OutOfTime` once `time.perf_counter()` has passed the build's deadline."""
        if self._deadline is not None and time.perf_counter() > self._deadline:
            raise OutOfTime(self.rows)

    # -- building -----------------------------------------------------------------------------

    #: the row families, one ConstraintList each, in the order the model file lists them
    FAMILIES = ("assign", "nolink", "cross", "recompute", "compute", "transfer", "kept",
                "transient", "memory", "inuse", "order", "runs", "stages")

    def build(self, deadline: float | None = None) -> None:
        """Declare the variables and every row family (package docstring). Raises
        `OutOfTime` once `time.perf_counter()` passes `deadline`, checked before each
        family and every `CHECK_EVERY` rows."""
        self._deadline = deadline
        self._in_time()
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
        families: tuple[Callable[[], None], ...] = (
            lambda: self._crossings(pyo), lambda: self._recompute(pyo), self._period,
            lambda: self._memory(pyo), lambda: self._order(pyo), self._runs, self._stages)
        for family in families:
            self._in_time()
            family()
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
        """ρ_d, q_d, h_d and v_d on the devices where a count above 1 makes recomputation
        pay, and w_xab ≥ z_xab + ρ_a − 1 on their outgoing crossings (what they send, held
        per micro-batch in flight when recomputing; v_d the same of the model's outputs,
        and h_d at least their data inputs, held per micro-batch either way)."""
        data = self.data
        devices = [d for d in range(data.m) if data.training and any(
            c > 1 for c, _ in self._counts(d)) and any(
            data.kept[k] > 0 for k in range(data.n) if d in data.allowed[k])]
        mdl = self.model
        mdl.rho = pyo.Var(devices, domain=pyo.Binary)
        mdl.q = pyo.Var(devices, domain=pyo.NonNegativeReals)
        mdl.h = pyo.Var(devices, domain=pyo.NonNegativeReals)
        ending = [d for d in devices if any(data.outputs[k] > 0 for k in range(data.n)
                                            if d in data.allowed[k])]
        mdl.v = pyo.Var(ending, domain=pyo.NonNegativeReals)
        for d in devices:
            self.rho[d], self.q[d], self.h[d] = mdl.rho[d], mdl.q[d], mdl.h[d]
            if d in ending:
                self.v[d] = mdl.v[d]
            self._device_recompute(d)
        sending = [key for key in self.z if key[1] in self.rho and data.fb[key[0]] > 0]
        mdl.w = pyo.Var(sending, bounds=(0, 1))
        for key in sending:
            self.w[key] = mdl.w[key]
            self._row("recompute", -1.0, [(1.0, self.w[key]), (-1.0, self.z[key]),
                                          (-1.0, self.rho[key[1]])])

    def _device_recompute(self, d: int) -> None:
        """Device d's rows of `_recompute`: q_d, h_d (its kept activations unless
        recomputing, its data inputs either way) and v_d (its outputs while recomputing)."""
        data, tu, mu = self.data, self.time_unit, self.mem_unit
        rho, h = self.rho[d], self.h[d]
        mine = [k for k in range(data.n) if d in data.allowed[k]]
        big_f = sum(data.forward[k][d] for k in mine) / tu
        big_k = sum(data.kept[k] for k in mine) / mu
        self._row("recompute", -big_f, [(1.0, self.q[d]), (-big_f, rho), *(
            self._xt(k, d, -data.forward[k][d] / tu) for k in mine)])
        self._row("kept", 0.0, [(1.0, h), (big_k, rho), *(
            self._xt(k, d, -data.kept[k] / mu) for k in mine)])
        if any(data.inputs[k] > 0 for k in mine):
            self._row("kept", 0.0, [(1.0, h), *(
                self._xt(k, d, -data.inputs[k] / mu) for k in mine)])
        if d in self.v:
            big_o = sum(data.outputs[k] for k in mine) / mu
            self._row("recompute", -big_o, [(1.0, self.v[d]), (-big_o, rho), *(
                self._xt(k, d, -data.outputs[k] / mu) for k in mine)])

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

    def _sent(self, d: int) -> list[Term]:
        """R_x w_xdb over the crossings out of d: the bytes its stages send while it
        recomputes (memory units). The rule, received and sent per micro-batch, is
        `split.stage_bytes`'s; the recomputing DP (`contiguous`) applies it too."""
        return [(self.data.fb[x] / self.mem_unit, wv) for (x, a, _), wv in self.w.items()
                if a == d]

    def _cached(self, d: int) -> tuple[list[Term], float]:
        """What d's stages hold beyond their micro-batches in flight (`hybrid.step_bytes`),
        and the most it sums to (every term's variable at 1). Training: `buffers` times
        R_x z_xad and the gradient's bytes times z_xdb (torch's receive buffers).
        Inference: the inputs and outputs of the other micro-batches, `cached` times
        R_x z_xad, R_x z_xdb and O_k x_kd."""
        data, mu = self.data, self.mem_unit
        if self.buffers:
            terms = [(self.buffers * (data.fb[x] if b == d else data.bb[x]) / mu, zv)
                     for (x, a, b), zv in self.z.items()
                     if (b == d and data.fb[x] > 0) or (a == d and data.bb[x] > 0)]
            return terms, sum(coef for coef, _ in terms)
        if not self.cached:
            return [], 0.0
        terms = [*((self.cached * data.fb[x] / mu, zv) for (x, a, b), zv in self.z.items()
                   if d in (a, b) and data.fb[x] > 0),
                 *(self._xt(k, d, self.cached * data.outputs[k] / mu) for k in range(data.n)
                   if d in data.allowed[k] and data.outputs[k] > 0)]
        return terms, sum(coef for coef, _ in terms)

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
        self.returned = hybrid.returned_copies(_pipeline(self.problem), 1, data.training)
        self.cached = hybrid.cached_copies(_pipeline(self.problem), 1, data.training)
        self.buffers = hybrid.buffer_copies(_pipeline(self.problem), 1, data.training)
        last = data.n - 1  # its device holds the last stage (one stage a device, `runs`)
        ending = [d for d in data.allowed[last] if self.returned and any(
            data.outputs[k] > 0 for k in range(data.n) if d in data.allowed[k])]
        mdl.r = pyo.Var(ending, domain=pyo.NonNegativeReals)
        for d in ending:  # r_d ≥ Σ_k O_k x_kd − Ō_d (1 − x_(n−1)d)
            self.r[d] = mdl.r[d]
            mine = [k for k in range(data.n) if d in data.allowed[k]]
            big_o = sum(data.outputs[k] for k in mine) / self.mem_unit
            self._row("memory", -big_o, [(1.0, self.r[d]), self._xt(last, d, -big_o), *(
                self._xt(k, d, -data.outputs[k] / self.mem_unit) for k in mine)])
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
        received = [*self._received(d), *self._sent(d)]
        cached, cached_most = self._cached(d)
        for c, switch in self._counts(d):
            terms: list[Term] = [(1.0, tv), *cached]
            for k in mine:
                keep = data.kept[k] if d in self.h else c * data.kept[k]
                terms.append(self._xt(k, d, (data.params[k] + keep) / mu))
            if d in self.r:  # inference: the outputs the last stage keeps (`stage_bytes`)
                terms.append((float(self.returned), self.r[d]))
            terms += [(c * coef, zv) for coef, zv in received]
            if d in self.h:
                terms.append((float(c - 1), self.h[d]))
            if d in self.v:
                terms.append((float(c), self.v[d]))
            if switch is None:
                self._row("memory", None, terms, cap)
                continue
            most = (sum(data.params[k] + c * (data.kept[k] + data.outputs[k])
                        + self.returned * data.outputs[k] for k in mine)
                    + max((data.transient[k] for k in mine), default=0.0)) / mu + c * sum(
                        coef for coef, _ in received) + cached_most
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
        """Stages at most: under `1f1b`, a pipeline's micro-batches (`Pipeline.stage_cap`:
        torch's `Schedule1F1B` needs as many as stages; pipedp's cap too); else one per
        unit."""
        cap = _pipeline(self.problem).one_stage_cap  # `interleaved`: one stage a device
        return self.data.n if cap is None else min(cap, self.data.n)

    def _stages(self) -> None:
        """Σ_x Σ_ab z_xab ≤ cap − 1: the stage boundaries within the schedule's cap."""
        cap = self._stage_cap()
        if cap >= self.data.n:
            return
        self._row("stages", None, [(1.0, zv) for zv in self.z.values()], float(cap - 1))

    # -- seeding and reading ----------------------------------------------------------------

    def seed(self, warm: _Warm) -> None:
        """Give every variable its value in the warm start, each family as its constraint
        defines it: where units run, what recomputes, what memory holds, then T."""
        self._seed_placement(warm.dev)
        self._seed_recompute(warm.dev, set(warm.evaluation.recompute))
        self._seed_memory(warm.dev)
        T = self.model.T
        value = max(T.lb, warm.evaluation.period_s / self.time_unit)
        T.set_value(value if T.ub is None else min(T.ub, value))

    def _seed_placement(self, dev: tuple[int, ...]) -> None:
        """x, z, used and o: the units' devices, the boundaries crossed, the devices used,
        and how far along each order a device holds a unit."""
        for (k, d), var in self.x.items():
            var.set_value(1 if dev[k] == d else 0)
        for (x, a, b), var in self.z.items():
            var.set_value(1 if dev[x - 1] == a and dev[x] == b else 0)
        for e, var in self.used.items():
            var.set_value(1 if e in dev else 0)
        for (_, k, a), var in self.o.items():
            var.set_value(1 if a in dev[:k + 1] else 0)

    def _seed_recompute(self, dev: tuple[int, ...], redo: set[int]) -> None:
        """rho, q, h, v and w: which devices recompute, and what that costs and keeps."""
        data, tu, mu = self.data, self.time_unit, self.mem_unit
        for d, var in self.rho.items():
            var.set_value(1 if d in redo else 0)
            mine = [k for k in range(data.n) if dev[k] == d]
            self.q[d].set_value(sum(data.forward[k][d] for k in mine) / tu if d in redo else 0)
            self.h[d].set_value(sum(data.inputs[k] if d in redo else data.kept[k]
                                    for k in mine) / mu)
            if d in self.v:
                self.v[d].set_value(sum(data.outputs[k] for k in mine) / mu if d in redo
                                    else 0.0)
        for (x, a, b), var in self.w.items():
            var.set_value(1 if a in redo and dev[x - 1] == a and dev[x] == b else 0)

    def _seed_memory(self, dev: tuple[int, ...]) -> None:
        """r and t: the model's outputs the last stage's device keeps, each device's
        largest transient."""
        data, mu = self.data, self.mem_unit
        for d, var in self.r.items():
            var.set_value(sum(data.outputs[k] for k in range(data.n) if dev[k] == d) / mu
                          if dev[-1] == d else 0.0)
        for d, var in self.t.items():
            most = max((data.transient[k] for k in range(data.n) if dev[k] == d), default=0.0)
            var.set_value(max(var.lb or 0.0, most / mu))

    def answer(self) -> list[int] | None:
        """The unit-level devices of the loaded solution, or None (missing, fractional)."""
        dev = []
        for k in range(self.data.n):
            d = chosen_device(self.x, k, self.data.allowed[k])
            if d is None:
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
            "recomputing (its data inputs either way)   w(x_a_b): z(x_a_b) while a recomputes"
            "   v(d): its model outputs while it recomputes   t(d): largest transient",
            "used(d): d holds a unit   o(i_k_a): in order i, device a holds a unit <= k",
            "devices: " + ", ".join(f"{d}={dev.name}" for d, dev in enumerate(devs)),
        ]
        ops = p.graph.ops
        for k, mem in enumerate(u.members):
            lines.append(f"unit {k}: " + ", ".join(ops[i].name for i in mem))
        return lines


def _emit(model: _Model, path: str) -> None:
    """Write the model to `path` with the `ilp` model's writer (its formats, errors)."""
    write_model(model.model, path, model.legend())
