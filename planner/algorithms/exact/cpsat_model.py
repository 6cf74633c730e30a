"""The `cpsat` model: the ILP's problem in OR-Tools CP-SAT, and its search.

The same problem as `ilp.py` (contention `none`, static memory, pins, colocation, links,
symmetry breaking among identical devices), built from the same family data
(`families.py`), in CP-SAT's terms:

- a literal `x_ud` per unit and allowed device (`Σ_d x_ud = 1`), integer start `s_i` and
  end `e_i` per op, and per allowed device an optional interval `[s_i, e_i)` of length
  `p_id` present iff `x_ud`; one `NoOverlap` per device, and a redundant cumulative of
  the fastest times on `m` devices (the ordering family: the ILP's big-M pairs);
- per arc `i → j` between units `u ≠ v`: `s_j ≥ e_i + c_iv`, with
  `c_iv ≥ Σ_{b ≠ a} T_ab(B_iv) x_vb` enforced by `x_ua`, and `c_iv ≥ T_ab(B_iv')`
  enforced by `x_ua ∧ x_vb ∧ x_v'b` when another unit `v'` receives a larger copy
  (one copy per device); `¬x_ua ∨ ¬x_vb` where no link joins `a` to `b`; `c_iv` exists
  only when some transfer takes at least one tick;
- memory per device in exact bytes: `Σ_u W_u x_ud + Σ_i r_id + t_d ≤ cap_d`,
  `r_id ≥ B_iv (x_vd − x_{u(i)d})`, `t_d ≥ temp_u x_ud`;
- `C ≥ e_i` (sinks), `C ≥ Σ_i p_id x_ud` (loads), `C ≤ U` (the warm start's makespan), and
  time windows `s_i ∈ [head_i, U − tail_i − pmin_i]` (`Instance.windows` in ticks);
  minimise `C`;
- symmetry: per class of identical devices, `x_{u d_k}` implies a chain literal "an
  earlier unit uses `d_(k−1)`".

Build: `CpsatModel.build` takes `families.families(inst)` (seconds and bytes), converts
each number to ticks (`ticks`, `xfer`) and translates one family per method:
`_assignment`, `_intervals`, `_transfers` (no-link clauses, `_transfer_rows`,
`_copy_rows`), the precedence rows, `_memory`, `_makespan`, `_symmetry`. A term that
rounds to 0 ticks is left out, as a dominated copy is whose ticks do not exceed its own.

Integer time ("ticks"): when every duration and transfer time is a whole number of some
power of ten at least as coarse as the bound below, that power is the tick and the model
is exact. Otherwise the tick is the largest power of ten with `n · tick ≤ gap · LB / 2`
(LB the lower bound): each duration is rounded to the nearest tick, a chain of at most `n`
ops and `n − 1` transfers moves by less than `n · tick`, so rounding costs less than half
the relative gap; the reported bound subtracts that slack. The plan is re-timed in
seconds (and judged by the simulator) afterwards.

Every variable is hinted from the warm start. The search is reproducible: CP-SAT's
portfolio of `num_workers` strategies (8 from the profile: its bound-proving workers
matter more than cores, see `solvers/profiles.toml`) runs interleaved, one task at a time
in a fixed order (`interleave_search`, batch size 1: deterministic whatever the number of
cores), with `random_seed` = `Options.seed`, to a work limit (`max_deterministic_time`)
derived from `--time-limit` and the model's size; the wall clock is only a safety cap
(`budget.py`).
The log goes to the `planner.solver` logger at DEBUG (CP-SAT prints "The solution hint
is complete and is feasible." when it takes the start), never to stdout.

The algorithm that runs it, within `--time-limit`, is `cpsat.py`.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

from ...cost import INF
from ...errors import Diagnostic, UsageError
from ...files import atomic_file
from . import backends
from .budget import BATCH_SIZE, Budget
from .common import Warm
from .families import Delay, Families, copy_bytes, families, held_temp
from .instance import Instance, choice_term
from .quiet import quiet_stdout
from .watched import Watched, first_line

#: the largest makespan in ticks we let the model reach (CP-SAT is int64; leave headroom)
_MAX_TICKS = 10**12

#: x_ud as (constant, literal): (1, None) fixed there, (0, None) impossible, (0, literal)
Lit = tuple[int, Any]


def choose_tick(values: list[float], lower_s: float, upper_s: float, n: int,
                gap: float) -> tuple[float, bool]:
    """(tick in seconds, whether every value is an exact multiple of it)."""
    positive = [v for v in values if 0 < v < INF]
    scale = lower_s if lower_s > 0 else max(positive, default=1.0)
    target = max(gap, 1e-9) * scale / (2 * max(1, n))
    target = max(target, upper_s / _MAX_TICKS, 1e-300)
    lo = math.floor(math.log10(target))
    if positive:
        hi = math.ceil(math.log10(max(positive)))
        for k in range(hi, lo - 1, -1):
            t = 10.0 ** k
            if all(abs(v / t - round(v / t)) <= 1e-9 * max(1.0, v / t) for v in positive):
                return t, True
    return 10.0 ** lo, not positive


class CpsatModel:
    """The CP-SAT model of one instance, in integer ticks."""

    #: the warm start's start times in ticks (set by `build`; None without a usable one)
    warm_start: list[float] | None

    def __init__(self, inst: Instance, warm: Warm, lower_s: float, gap: float) -> None:
        self.inst = inst
        self.warm = warm
        tt = inst.costs.transfer_time
        values = [p for row in inst.proc for p in row if p < INF]
        for p in range(inst.n):
            au = inst.allowed[inst.unit_of[p]]
            for v, b in inst.fanout[p]:
                values.extend(tt(b, a, bb) for a in au for bb in inst.allowed[v] if a != bb)
        upper = warm.makespan_s if warm.usable else inst.horizon
        self.tick, self.exact = choose_tick(values, lower_s, upper, inst.n, gap)
        self.slack_s = 0.0 if self.exact else inst.n * self.tick
        t = self.tick
        self.dur = [[round(p / t) if p < INF else -1 for p in row] for row in inst.proc]
        self.model: Any = None
        self.x: dict[tuple[int, int], Any] = {}

    def ticks(self, seconds: float) -> int:
        """`seconds` rounded to the nearest tick."""
        return round(seconds / self.tick)

    def xfer(self, nbytes: float, a: int, b: int) -> int:
        """Transfer time in ticks (the cost model's, rounded); -1 without a link."""
        if a == b:
            return 0
        sec = self.inst.costs.transfer_time(nbytes, a, b)
        return -1 if sec == INF else self.ticks(sec)

    def build(self, lower_s: float) -> None:
        """Build the CP-SAT model: the variables, then each constraint family of
        `families.py` in turn (see the module docstring)."""
        # lazy: start-up (OR-Tools is slow to import; only cpsat needs it)
        from ortools.sat.python import cp_model

        fam = families(self.inst)
        head, tail, pmin = self._windows()
        self.model = cp_model.CpModel()
        self._declare(head, tail, pmin, lower_s)
        self._assignment(fam)
        self._intervals(pmin)
        delay = self._transfers(fam)
        mdl = self.model
        for i, j, dl in fam.precedence:
            mdl.add(self.s[j] >= self.e[i] + (delay[(i, dl.v)] if dl is not None else 0))
        self._memory(fam)
        self._makespan(fam)
        self._symmetry(fam)
        mdl.minimize(self.C)
        if self.warm_start is not None:
            self._hint()

    def _windows(self) -> tuple[list[float], list[float], list[int]]:
        """(head, tail, pmin) in ticks; sets `ub` (U in ticks) and `warm_start`."""
        inst, dur, warm = self.inst, self.dur, self.warm
        allowed, unit_of = inst.allowed, inst.unit_of
        pmin = [min(dur[i][d] for d in allowed[unit_of[i]]) for i in range(inst.n)]

        def min_xfer(k: int) -> float:
            return self.ticks(inst.min_transfer(k))

        head, tail = inst.windows(pmin, min_xfer)
        if warm.usable:
            assert warm.placement is not None and warm.order is not None
            self.warm_start, ub = inst.timing(warm.placement, warm.order,
                                              lambda i, d: dur[i][d], self.xfer)
            self.ub = round(ub)
        else:
            self.warm_start = None
            self.ub = self.ticks(inst.horizon) + 2 * inst.n + len(inst.arcs) + 1
        return head, tail, pmin

    def _declare(self, head: list[float], tail: list[float], pmin: list[int],
                 lower_s: float) -> None:
        """Start s_i and end e_i within the windows; LB ≤ C ≤ U."""
        mdl, ub_t = self.model, self.ub
        n = self.inst.n
        self.s = [mdl.new_int_var(int(head[i]),
                                  max(int(head[i]), ub_t - int(tail[i]) - pmin[i]), f"s{i}")
                  for i in range(n)]
        self.e = [mdl.new_int_var(int(head[i]) + pmin[i], max(int(head[i]) + pmin[i],
                                                              ub_t - int(tail[i])), f"e{i}")
                  for i in range(n)]
        lb_t = max(0, math.floor((lower_s - self.slack_s) / self.tick))
        self.C = mdl.new_int_var(min(lb_t, ub_t), ub_t, "C")

    # -- terms --------------------------------------------------------------------------

    def _X(self, u: int, d: int) -> Lit:
        """(constant, literal) of x_ud."""
        return choice_term(self.inst.allowed[u], d, self.x, (u, d), 1, 0)

    @staticmethod
    def _lits(*pairs: Lit) -> list[Any] | None:
        """The literals among the pairs; None when a constant is false."""
        out = []
        for c, v in pairs:
            if v is None:
                if c == 0:
                    return None
            else:
                out.append(v)
        return out

    @staticmethod
    def _affine(terms: list[tuple[int, Lit]]) -> Any:
        """Σ coef · x as a CP-SAT expression (constants folded)."""
        const = 0
        expr: Any = 0
        for coef, (c, v) in terms:
            if v is None:
                const += coef * c
            else:
                expr = expr + coef * v
        return expr + const

    # -- constraint families ------------------------------------------------------------

    def _assignment(self, fam: Families) -> None:
        """A literal x_ud per unit with a choice and allowed device; exactly one holds."""
        mdl, x = self.model, self.x
        for u, au in fam.choices:
            for d in au:
                x[(u, d)] = mdl.new_bool_var(f"x{u}_{d}")
            mdl.add_exactly_one(x[(u, d)] for d in au)

    def _intervals(self, pmin: list[int]) -> None:
        """The ordering family: per op and allowed device an (optional) interval, one
        NoOverlap per device, and a redundant cumulative over the fastest times."""
        inst, mdl, dur = self.inst, self.model, self.dur
        per_device: list[list[Any]] = [[] for _ in range(inst.m)]
        for i in range(inst.n):
            u = inst.unit_of[i]
            au = inst.allowed[u]
            for d in au:
                if len(au) == 1:
                    iv = mdl.new_interval_var(self.s[i], dur[i][d], self.e[i], f"I{i}_{d}")
                else:
                    iv = mdl.new_optional_interval_var(self.s[i], dur[i][d], self.e[i],
                                                       self.x[(u, d)], f"I{i}_{d}")
                if dur[i][d] > 0:
                    per_device[d].append(iv)
        for d in range(inst.m):
            if len(per_device[d]) > 1:
                mdl.add_no_overlap(per_device[d])
        # redundant: at most m ops run at once, each for at least its fastest time; this
        # gives CP-SAT energetic reasoning across devices (decisive on P|prec|Cmax)
        if inst.m > 1:
            main = [mdl.new_interval_var(self.s[i], pmin[i], self.s[i] + pmin[i], f"R{i}")
                    for i in range(inst.n) if pmin[i] > 0]
            if len(main) > inst.m:
                mdl.add_cumulative(main, [1] * len(main), inst.m)

    def _transfers(self, fam: Families) -> dict[tuple[int, int], Any]:
        """The no-link clauses, and a delay c_pv (with its transfer and copy rows) per
        (producer, consumer unit) whose transfer takes at least a tick; returns each
        one's delay (0 or the variable)."""
        mdl = self.model
        self.c: dict[tuple[int, int], Any] = {}
        delay: dict[tuple[int, int], Any] = {}
        for dl in fam.delays:
            key = (dl.p, dl.v)
            for a, b in dl.nolink:
                ls = self._lits(self._X(dl.u, a), self._X(dl.v, b))
                if ls is not None:
                    mdl.add_bool_or([lit.Not() for lit in ls])
            top = self.ticks(dl.top_s)
            if top == 0:
                delay[key] = 0
                continue
            cvar = mdl.new_int_var(0, top, f"c{dl.p}_{dl.v}")
            self.c[key] = cvar
            delay[key] = cvar
            self._transfer_rows(dl, cvar)
            self._copy_rows(dl, cvar)
        return delay

    def _transfer_rows(self, dl: Delay, cvar: Any) -> None:
        """c_pv ≥ Σ_{b ≠ a} T_ab(B_pv) x_vb, enforced by x_ua, per a ∈ A(u)."""
        for a, to_b in dl.rows:
            terms = [(k, self._X(dl.v, b)) for b, t in to_b for k in (self.ticks(t),) if k > 0]
            if not terms:
                continue
            ct = self.model.add(cvar >= self._affine(terms))
            ls = self._lits(self._X(dl.u, a))
            if ls is None:
                continue
            if ls:
                ct.OnlyEnforceIf(ls)

    def _copy_rows(self, dl: Delay, cvar: Any) -> None:
        """One copy per device: c_pv ≥ T_ab(B_pv'), enforced by x_ua ∧ x_vb ∧ x_v'b."""
        for cp in dl.copies:
            t2 = self.ticks(cp.time_s)
            if t2 <= self.ticks(cp.own_s):
                continue
            ls = self._lits(self._X(dl.u, cp.a), self._X(dl.v, cp.b), self._X(cp.v2, cp.b))
            if ls is None:
                continue
            ct = self.model.add(cvar >= t2)
            if ls:
                ct.OnlyEnforceIf(ls)

    def _memory(self, fam: Families) -> None:
        """Per device whose cap can bind, in exact bytes: the copies r_pd, the largest
        temp t_d and the cap row."""
        mdl = self.model
        self.r: dict[tuple[int, int], Any] = {}
        self.t: dict[int, Any] = {}
        for row in fam.memory:
            d = row.d
            expr = self._affine([(w, self._X(u, d)) for u, w in row.weights])
            for p, up, cands in row.copies:
                rv = mdl.new_int_var(0, max(b for _, b in cands), f"r{p}_{d}")
                self.r[(p, d)] = rv
                for v, b in cands:
                    mdl.add(rv >= self._affine([(b, self._X(v, d)), (-b, self._X(up, d))]))
                expr = expr + rv
            temps = [(tp, self._X(u, d)) for u, tp in row.temps]
            if temps:
                fixed = row.fixed_temp
                tv = mdl.new_int_var(fixed, max(tp for tp, _ in temps), f"t{d}")
                self.t[d] = tv
                for tp, (_c, v) in temps:
                    if v is not None and tp > fixed:
                        mdl.add(tv >= tp * v)
                expr = expr + tv
            mdl.add(expr <= row.cap)

    def _makespan(self, fam: Families) -> None:
        """C ≥ e_i for every sink; C ≥ the load of every device."""
        mdl, dur, unit_of = self.model, self.dur, self.inst.unit_of
        for i in self.inst.sinks:
            mdl.add(self.C >= self.e[i])  # noqa: SIM300 - `C` is the makespan variable
        for d, ops in enumerate(fam.loads):
            terms = [(dur[i][d], self._X(unit_of[i], d)) for i in ops if dur[i][d] > 0]
            if terms:
                mdl.add(self.C >= self._affine(terms))  # noqa: SIM300 - as above

    def _symmetry(self, fam: Families) -> None:
        """Symmetry among identical devices: unit u may use d_k only when an earlier unit
        uses d_(k-1); "an earlier unit uses d_(k-1)" is a chain of literals g, linear in
        size (a sum over all earlier units per row was quadratic: 10 s on gnmt)."""
        mdl, x = self.model, self.x
        self.sym: list[tuple[int, list[int], list[Any]]] = []
        for cls, members in fam.symmetry:
            for k in range(1, len(cls)):
                seen: Any = None
                chain: list[Any] = []
                for u in members:
                    if seen is None:
                        mdl.add(x[(u, cls[k])] == 0)
                    else:
                        mdl.add_implication(x[(u, cls[k])], seen)
                    cur = x[(u, cls[k - 1])]
                    if seen is None:
                        seen = cur
                    else:
                        g = mdl.new_bool_var(f"g{u}_{cls[k - 1]}")
                        mdl.add_implication(seen, g)
                        mdl.add_implication(cur, g)
                        mdl.add_bool_or([seen, cur, g.Not()])
                        seen = g
                    chain.append(seen)
                self.sym.append((cls[k - 1], list(members), chain))

    def _hint(self) -> None:
        """Hint every variable with its value in the warm start."""
        inst, mdl, warm = self.inst, self.model, self.warm
        assert warm.placement is not None and self.warm_start is not None
        place = warm.placement
        start = [round(t) for t in self.warm_start]
        for (u, d), var in self.x.items():
            mdl.add_hint(var, place[inst.units[u][0]] == d)
        makespan = 0
        for i in range(inst.n):
            end = start[i] + self.dur[i][place[i]]
            mdl.add_hint(self.s[i], start[i])
            mdl.add_hint(self.e[i], end)
            makespan = max(makespan, end)
        mdl.add_hint(self.C, makespan)
        dev_of_unit = [place[mem[0]] for mem in inst.units]
        for (p, v), var in self.c.items():
            a, b = place[p], dev_of_unit[v]
            nbytes = copy_bytes(inst, dev_of_unit, p, b)
            mdl.add_hint(var, self.xfer(nbytes, a, b) if a != b else 0)
        for (p, d), var in self.r.items():
            b = copy_bytes(inst, dev_of_unit, p, d)
            mdl.add_hint(var, b if place[p] != d else 0)
        for d_prev, members, chain in self.sym:
            on = False
            for u, lit in zip(members, chain, strict=True):
                on = on or dev_of_unit[u] == d_prev
                if lit is not self.x.get((u, d_prev)):
                    mdl.add_hint(lit, on)
        for d, var in self.t.items():
            mdl.add_hint(var, held_temp(inst, dev_of_unit, d))

    def emit(self, path: str) -> None:
        """Write the CP-SAT model as a text protocol buffer (`.pbtxt` or `.txt`: the
        endings `algorithms.check_emit` lets through)."""
        # E622 and E623 as every output; the suffix makes OR-Tools write text
        with atomic_file(path, suffix=".pbtxt") as tmp:
            if not self.model.export_to_file(tmp):
                raise UsageError(Diagnostic("E815", f"cannot write {path}", None))

    def solve(self, bud: Budget, gap: float, workers: int, seed: int,
              progress: Any = None) -> Answer:
        """Run CP-SAT within `bud` (see `budget.py`); Ctrl-C stops the search, keeping
        its incumbent (`Answer.interrupted`)."""
        # lazy: start-up (OR-Tools, as in `build`)
        from ortools.sat.python import cp_model

        solver = cp_model.CpSolver()
        prm = solver.parameters
        prm.max_deterministic_time = bud.work
        prm.max_time_in_seconds = bud.wall_cap_s
        prm.relative_gap_limit = gap
        prm.num_workers = max(1, workers)
        prm.interleave_search = True  # the portfolio in deterministic batches
        prm.interleave_batch_size = BATCH_SIZE
        prm.random_seed = seed
        prm.catch_sigint_signal = False  # Ctrl-C reaches Python, which stops the search
        prm.log_to_stdout = False
        if backends.solver_log.isEnabledFor(logging.DEBUG):
            prm.log_search_progress = True
            solver.log_callback = lambda line: backends.solver_log.debug("%s", line)
        callback = None
        if progress is not None:
            callback = _Progress(progress, self.tick, bud.limit_s)
        interrupted = False
        with quiet_stdout():
            run = Watched(lambda: solver.Solve(self.model, callback), "planner-cpsat")
            try:
                run.wait()
            except KeyboardInterrupt:
                interrupted = True
                solver.StopSearch()
                run.wait()
        if run.error is not None:  # OR-Tools raised: the warm start stands, with the reason
            return Answer("error", f"CP-SAT failed: {first_line(run.error)}",
                          interrupted=interrupted)
        status = run.value()
        name = solver.StatusName(status)
        outcome = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible",
                   cp_model.INFEASIBLE: "infeasible", cp_model.UNKNOWN: "nosolution"}.get(
            status, "error")
        proved = status in (cp_model.OPTIMAL, cp_model.INFEASIBLE)
        work_done = solver.ResponseProto().deterministic_time
        capped = not proved and not interrupted and work_done < bud.work * 0.999
        answer = Answer(outcome, _said(name, capped, interrupted), work_done=work_done,
                        capped=capped, interrupted=interrupted)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN):
            raw = solver.BestObjectiveBound()
            if math.isfinite(raw):
                answer.bound_s = max(0.0, raw * self.tick - self.slack_s)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return answer
        inst = self.inst
        place = [-1] * inst.n
        for u, mem in enumerate(inst.units):
            a = inst.allowed[u]
            d = a[0] if len(a) == 1 else next(dd for dd in a if solver.Value(self.x[(u, dd)]))
            for i in mem:
                place[i] = d
        answer.placement = place
        answer.start_s = [solver.Value(v) * self.tick for v in self.s]
        return answer


def _said(status: str, capped: bool, interrupted: bool = False) -> str:
    """CP-SAT's status in words, for the fallback reason; `interrupted`: Ctrl-C (or
    SIGTERM) stopped the search, which no limit did."""
    if interrupted and status in ("UNKNOWN", "FEASIBLE"):
        return ("CP-SAT found a plan; the interrupt ended its search" if status == "FEASIBLE"
                else "CP-SAT was interrupted before it found a solution")
    if status == "UNKNOWN":
        return ("CP-SAT found no solution in the search time left" if capped else
                "CP-SAT found no solution within its work limit (try a longer --time-limit)")
    if status == "MODEL_INVALID":
        return ("CP-SAT could not use the model planner built (numbers out of its range, "
                "or a bug in planner: please report it with the spec)")
    if status == "FEASIBLE":  # a plan, and the search ended before a proof
        return ("CP-SAT found a plan; the wall-clock safety cap ended its search" if capped
                else "CP-SAT found a plan; its work limit (from --time-limit) ended the search")
    return {"OPTIMAL": "CP-SAT proved its model optimal",
            "INFEASIBLE": "CP-SAT proved its model infeasible"}.get(
        status, f"CP-SAT stopped with status {status}")


@dataclass
class Answer:
    """What one CP-SAT run produced (`solve`); `capped`: the wall-clock safety cap ended
    it before its work limit, so another run may differ."""

    outcome: str
    message: str
    placement: list[int] | None = None
    start_s: list[float] | None = None
    bound_s: float | None = None
    work_done: float = 0.0
    capped: bool = False
    interrupted: bool = False


class _Progress:
    """Reports each improving solution to `Options.progress`."""

    def __new__(cls, progress: Any, tick: float, limit: float) -> Any:
        # lazy: start-up (OR-Tools, as in `build`)
        from ortools.sat.python import cp_model

        class Callback(cp_model.CpSolverSolutionCallback):
            def __init__(self) -> None:
                super().__init__()
                self.t0 = time.perf_counter()

            def on_solution_callback(self) -> None:
                frac = 0.05 + 0.9 * min(1.0, (time.perf_counter() - self.t0) / max(limit, 1e-9))
                progress(frac, f"cpsat incumbent {self.ObjectiveValue() * tick:.6g} s")

        return Callback()
