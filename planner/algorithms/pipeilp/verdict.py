"""The judgement of the plan found (status, valid bound), its figures, and the
diagnostics when nothing is found."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from ...bounds import OPTIMAL_GAP, relative_gap
from ...errors import Diagnostic, InfeasibleError, SearchLimitError, SolverError
from ...model import Problem
from ...pipeline.split import recompute_note
from ...pipeline.units import units
from ...plan import Plan
from .. import pipedp, pipehints
from ..base import Options, Solution, Status
from ..pipehints import PlanTerms
from .data import _pipeline
from .orders import _Orders
from .warm import WarmSearch, _Warm

#: relative tolerance when comparing periods computed two ways
_TOL = 1e-9


def _judge(period: float, bound_s: float, solver_bound: float | None,
           objective: float | None, solver_optimal: bool, orders: _Orders, options: Options,
           info: dict[str, Any]) -> tuple[Status, float]:
    """The status of a plan of `period` and the best valid bound (package docstring)."""
    proved = solver_optimal and objective is not None and period <= objective * (1 + _TOL)
    # the solver's bound and proof hold for every placement only where the model covers
    # every one with the exact memory rule (`_Orders.proves`); else among its scope alone
    covers = orders.proves
    holds = proved and covers  # the proof, for every placement
    valid = bound_s
    if covers and solver_bound is not None:
        valid = max(valid, solver_bound)
    if holds and objective is not None:  # optimum within --gap of it
        valid = max(valid, objective * (1 - options.gap))  # the solvers' gap: (O - B) / O
    gap = relative_gap(period, min(valid, period))
    status: Status = "feasible"
    if gap is not None and gap <= OPTIMAL_GAP:
        status, why = "optimal", (
            f"{options.solver} proved the model optimal, and the model is the period and "
            "memory reported" if holds else
            "the period meets a valid lower bound (within 1e-6)")
    elif holds or (gap is not None and gap <= options.gap):
        why = ("the solver stopped within --gap, its own measure: (objective - bound) / "
               "objective, against the incumbent; `optimal` is kept for a gap of at most 1e-6")
    elif proved:  # not `covers`
        why = f"proved optimal only among {orders.scope}"
    else:
        why = "no proof of optimality"
    info.update(proved=holds, why=why, solver_bound_s=solver_bound)
    if proved and not covers:
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
        info["memory_note"] = recompute_note(problem, best.placement, ev.recompute,
                                             ev.held_bytes)
    return Solution(Plan(best.placement, algorithm="pipeilp"), status, MappingProxyType(info))



def _none_found(problem: Problem, outcome: Any, complete: bool, scope: str,
                searched: WarmSearch, rejected: str = "") -> Exception:
    """No warm start and no answer: a proof (the solver's, for a model that covers every
    placement: E708, exit 3), a search that ended at its limit or covered only some
    placements without one (E709, exit 6), or a failure (E711, exit 4: the solver's own,
    or an answer that broke a constraint when checked exactly). `searched`: what the warm
    starts searched (pipedp's E707, and the recomputing DP's splits: "no contiguous split
    fits, even recomputing" only where it searched every one). E708 and the E707 before
    it speak in `searched.terms` where the caller gives them."""
    terms = searched.terms
    if outcome.status == "infeasible" and complete:
        return InfeasibleError((*searched.notes(terms.hints if terms else None),
                                _e708(problem, terms, searched.recomputing)))
    # E707's words alone: its hints, each a split search, are not drawn
    said = tuple(d.message for d in searched.notes(lambda: ()))
    # under `data_parallel N`, the problem is one of the N pipelines: say the plan's
    planned = f" {terms.planned}" if terms else ""
    if outcome.status == "infeasible":
        # its first search covers every placement, a proof, where the rows relax the rule
        other = ("`schedule gpipe` or `1f1b` let pipeilp prove it where no placement fits; "
                 if _pipeline(problem).schedule_spec.virtual_stages and not problem.graph.ties
                 else "")
        # the changes with which a split fits, as E707 and E708 draw them (before: E709
        # said only "give the devices more memory" where pipedp names `microbatches 3`)
        drawn = tuple(h for d in searched.notes(terms.hints if terms else None)
                      for h in d.hints)
        return SearchLimitError(Diagnostic(
            "E709", f"pipeilp found no placement of plan `{problem.name}`{planned}: none of the "
            f"placements its model covers ({scope}) fits, and {searched.contiguous()}; this is "
            "not a proof that no other placement fits", None,
            (*said, *drawn, *([other.removesuffix("; ")] if other else ())) if drawn else
            (*said, f"{other}give the devices more `memory`")))
    if rejected or "limit" not in outcome.message:
        return SolverError(Diagnostic(
            "E711", f"pipeilp found no placement of plan `{problem.name}`{planned}: "
            f"{rejected or outcome.message or outcome.status}; and {searched.contiguous()}",
            None, said))
    return SearchLimitError(Diagnostic(
        "E709", f"pipeilp found no placement of plan `{problem.name}`{planned} within its time "
        f"limit ({outcome.message}), and {searched.contiguous()}: this is not a proof that "
        "none exists", None, (*said, "a longer --time-limit may find one")))


def _e708(problem: Problem, terms: PlanTerms | None,
          recomputing: pipehints.Recomputing) -> Diagnostic:
    """E708: the solver proved that no placement fits, in the caller's `terms` (what was
    planned, its hints), else one pipeline's own, each change checked by pipedp's split
    search or the `recomputing` split (pipeilp plans either)."""
    pipe = _pipeline(problem)
    cap = pipe.stage_cap
    if cap is not None and cap >= units(problem).count:
        cap = None  # the cap binds no placement
    within = pipehints.cap_words(cap, pipe)  # E707's and E712's words
    message = (f"no placement of plan `{problem.name}` fits the devices' memory "
               f"{terms.planned if terms else 'as a pipeline'}{within}, even recomputing "
               "activations on every device")
    if terms:
        return Diagnostic("E708", message, None, terms.hints())
    # pipedp's hints, each checked by its split search or the recomputing split (a split
    # either finds fits here too); the cap's own where a split of more stages fits nowhere
    hints = pipehints.in_flight_hints(problem, pipe, pipedp.one_fits(problem, pipe),
                                      recomputing=recomputing)
    more = (f"more `microbatches` than {cap} allow more stages, each holding less",)
    return Diagnostic("E708", message, None, (
        *(more if cap is not None and not hints[0].startswith("`microbatches ") else ()),
        *hints))
