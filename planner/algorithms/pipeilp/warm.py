"""Warm starts: pipedp's plan, the recomputing contiguous splits, `Options.warm_start`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...errors import Diagnostic, InfeasibleError
from ...model import Pipeline, Problem
from ...pipeline import splitdp
from ...pipeline.schedule import run
from ...pipeline.split import fits
from ...pipeline.splitdp import MAX_CELLS
from ...pipeline.units import units
from .. import pipedp
from ..base import Options
from ..pipehints import PlanTerms
from . import contiguous
from .check import Evaluation, evaluate
from .contiguous import contiguous_splits


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


@dataclass(frozen=True, slots=True)
class WarmSearch:
    """What the warm starts searched, within the work of the limit (pipedp's DP
    `splitdp.cells_for`, the recomputing DP `contiguous.cells_for`; a limit of 0 or the
    default, 60 s: all of it), for the diagnostics where pipeilp finds nothing: pipedp's
    E707 (its hints take more of the DP's runs than its search, so they are drawn only
    then, `notes`) and what the recomputing DP left out (`contiguous`); and the plan's terms
    for those diagnostics where the problem is a part of the user's plan."""

    problem: Problem
    options: Options
    #: pipedp's diagnostics where it raised them (`ChainsLeftOut`, check_units' E707)
    drawn: tuple[Diagnostic, ...] = ()
    #: pipedp found no split (its E707 is drawn by `notes`)
    no_split: bool = False
    #: the caller's words and hints for E708 and the E707 before it (None: one pipeline's)
    terms: PlanTerms | None = None

    @property
    def cells(self) -> float:
        """pipedp's work."""
        return splitdp.cells_for(self.options.time_limit_s)

    @property
    def left_out(self) -> bool:
        """Whether pipedp searches the chains its work left out, before its E707: with the
        whole of its work (`pipedp.place`'s), not within a smaller limit's."""
        return self.cells >= MAX_CELLS

    def recomputing(self, problem: Problem) -> list[int]:
        """`recomputing_stages` within the work of the limit, as the warm starts: the
        check of E707's and E708's hints (`pipehints.Recomputing`), for pipeilp plans a
        recomputing split that fits."""
        return recomputing_stages(problem, contiguous.cells_for(self.options.time_limit_s))

    def notes(self, hints: Callable[[], tuple[str, ...]] | None = None) -> list[Diagnostic]:
        """pipedp's diagnostics where no contiguous split fits without recomputing, less
        the hint to recompute (pipeilp does), each of its hints' changes checked by the
        recomputing split too (`recomputing`); `hints`: its E707's where the memory leaves
        no split, in place of its own (`pipehints.PlanTerms`). Its E707 says what was
        planned in the plan's `terms`, where given (N identical pipelines, not one)."""
        drawn = self.drawn
        if self.no_split:
            try:  # its search is derived once: this draws the words alone
                pipedp.search_within(self.problem, self.options, self.cells, self.left_out,
                                     hints=hints,
                                     planned=self.terms.planned if self.terms else "",
                                     recomputing=self.recomputing)
            except InfeasibleError as err:
                drawn = err.diagnostics
        return [dataclasses.replace(d, hints=tuple(h for h in d.hints
                                                   if h != pipedp.pipeilp_hint(self.problem)))
                for d in drawn]

    def contiguous(self) -> str:
        """'no contiguous split fits, even recomputing', with what the recomputing DP
        left out where it did not search every split (`contiguous.unsearched`)."""
        left = contiguous.unsearched(self.problem,
                                     contiguous.cells_for(self.options.time_limit_s))
        return ("no contiguous split fits, even recomputing"
                + (f", among those its DP searched ({left})" if left else ""))


def _warm_starts(problem: Problem, options: Options) -> tuple[_Warm | None, WarmSearch]:
    """The best warm start (package docstring), its DPs' work sized to the limit, and
    what they searched (`WarmSearch`)."""
    found: list[_Warm] = []
    if options.warm_start is not None:
        given = _as_warm(problem, options.warm_start.placement,
                         options.warm_start.algorithm or "given")
        if given is not None:
            found.append(given)
    options = dataclasses.replace(options, warm_start=None)
    searched = WarmSearch(problem, options)
    try:
        dp = pipedp.search_if_any(problem, options, searched.cells, searched.left_out)
    except InfeasibleError as err:
        if not any(d.code == "E707" for d in err.diagnostics):
            raise  # a proof that no placement exists at all (planner.facts)
        searched = dataclasses.replace(searched, drawn=err.diagnostics)
    else:
        mine = None if dp is None else _as_warm(problem, dp.solution.plan.placement,
                                                 _pipedp_source(problem))
        if mine is not None:
            found.append(mine)
        searched = dataclasses.replace(searched, no_split=dp is None)
    cells = contiguous.cells_for(options.time_limit_s)
    return _running(problem, [*found, *_contiguous_warms(problem, cells)], cells), searched


def _pipedp_source(problem: Problem) -> str:
    """The name of pipedp's warm start: its search's split, which under a schedule with a
    fallback (`interleaved`) may not be `--algo pipedp`'s plan (it keeps the split for the
    fallback where faster: 0.155 s a micro-batch where this split ran 0.205 s), so there
    its name says which ("pipedp interleaved split")."""
    pipeline = problem.pipeline or Pipeline()
    if pipedp.fallback_pipeline(pipeline) is None:
        return "pipedp"
    return f"pipedp {pipeline.schedule} split"


def recomputing_split(problem: Problem, cells: float = MAX_CELLS) -> _Warm | None:
    """The contiguous split of least period, each stage's device recomputing exactly when
    that makes it fit (`contiguous_splits`, its DP within `cells`), that fits and whose
    pipeline finishes; None when none does. What `auto` plans where no split fits without
    recomputing."""
    return _running(problem, _contiguous_warms(problem, cells), cells)


def _running(problem: Problem, found: list[_Warm], cells: float) -> _Warm | None:
    """`_first_running` of `found`; where none runs, of the recomputing DP's splits under
    the counts of the schedule's order where it deadlocks (`_deadlock_counts`)."""
    best = _first_running(problem, found)
    wider = _deadlock_counts(problem)
    if best is not None or wider is None:
        return best
    return _first_running(problem, _contiguous_warms(problem, cells, wider))


def _deadlock_counts(problem: Problem) -> Problem | None:
    """`problem` under its schedule's order where that deadlocks (`deadlock_fallback`:
    GPipe's, every micro-batch in flight), for a second DP: the recomputing DP counts the
    schedule's micro-batches in flight, but a split whose devices are no chain of stages (a
    unit spanning others: a residual stream colocated) runs in GPipe's order and holds its
    M (`split.runs`). Under 1F1B, ViT on 4 devices of 2200 KiB had no recomputing split
    that fit as it runs, where GPipe's counts found one (197.2 us an iteration, as `auto`
    plans under `gpipe`). None where the schedule has no such order."""
    pipeline = problem.pipeline or Pipeline()
    wider = pipeline.schedule_spec.deadlock_fallback
    if wider is None:
        return None
    return dataclasses.replace(problem, pipeline=dataclasses.replace(pipeline, schedule=wider))


def recomputing_stages(problem: Problem, cells: float = MAX_CELLS) -> list[int]:
    """The stage counts of the recomputing contiguous splits (`contiguous_splits`, its DP
    within `cells`) that fit by the shared memory rule: where `auto` and `pipeilp` plan
    though no split fits without recomputing, so the hints of their messages that nothing
    fits check each change by it (`pipehints.Recomputing`)."""
    return [stages for stages, split in contiguous_splits(problem, cells).items()
            if _as_warm(problem, split.placement(problem), "") is not None]


def recomputing_fallback(problem: Problem, cells: float = MAX_CELLS) -> _Warm | None:
    """Under a schedule with a fallback (`interleaved`: 1F1B), the recomputing contiguous
    split planned for the fallback (`recomputing_split`: one stage per device), judged as
    it runs under the plan's own schedule (as the fallback, `split.runs_as`), the devices
    recomputing where that makes them fit; None where there is no fallback, or it does
    not fit or run so."""
    pipeline = problem.pipeline or Pipeline()
    fallback = pipeline.schedule_spec.fallback
    if fallback is None:
        return None
    found = recomputing_split(dataclasses.replace(
        problem, pipeline=dataclasses.replace(pipeline, schedule=fallback)), cells)
    mine = None if found is None else _as_warm(problem, found.placement, found.source)
    return mine if mine is not None and runs(problem, mine) else None


def _contiguous_warms(problem: Problem, cells: float = MAX_CELLS,
                      counted: Problem | None = None) -> list[_Warm]:
    """The recomputing contiguous splits that fit, as warm starts; `counted`: the problem
    whose micro-batches in flight the DP counts (`_deadlock_counts`), `problem`'s own if
    None, each split judged as it runs under `problem`'s schedule."""
    found: list[_Warm] = []
    most = splitdp.most_stages(problem, problem.pipeline or Pipeline(), units(problem).count)
    for stages, split in contiguous_splits(counted or problem, cells).items():
        if stages > most:  # `counted`'s order takes more stages than the schedule does
            continue
        split_warm = _as_warm(problem, split.placement(problem), "contiguous split")
        if split_warm is not None:
            found.append(dataclasses.replace(split_warm, source="recomputing contiguous split")
                         if split_warm.evaluation.recompute else split_warm)
    return found


def _first_running(problem: Problem, found: list[_Warm]) -> _Warm | None:
    """The warm start of least period (then fewer devices) whose pipeline finishes."""
    found.sort(key=lambda w: (w.evaluation.period_s, len(w.evaluation.ranks)))
    return next((w for w in found if runs(problem, w)), None)


def runs(problem: Problem, w: _Warm) -> bool:
    """Whether `w`'s pipeline finishes, and fits as it runs (`why_not_run`)."""
    return not why_not_run(problem, w)


def why_not_run(problem: Problem, w: _Warm) -> str:
    """Why `w`'s pipeline does not run as planned ("" when it does). The period model does
    not see that stages can wait on each other (a unit colocated with a later one, on a
    device before the units between them), which no schedule's order runs, nor that
    devices that form no chain run in GPipe's order, every micro-batch in flight (an
    interleaved plan on d1, d0, d1 overflowed d0 so, E401): the simulator does
    (docs/pipelines.md), and the exact check (`evaluate`, by `split.runs`) counts the
    latter's memory too."""
    ran = run(problem, w.placement, problem.pipeline or Pipeline(), w.evaluation.recompute)
    if not math.isfinite(ran.iteration_s):
        return "a pipeline that never finishes (its stages wait on each other)"
    if not fits(problem, ran.memory_bytes):
        return f"a pipeline that does not fit as it runs ({ran.note or 'its memory'})"
    return ""


def _placement(problem: Problem, dev: Sequence[int]) -> tuple[int, ...]:
    u = units(problem)
    return tuple(dev[k] for k in u.unit_of)
