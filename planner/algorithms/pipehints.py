"""The hints of a message that no pipeline split fits the memory (pipedp's E707, hybrid's
E712, pipeilp's E708): each change they suggest (more or fewer `microbatches`, `schedule
1f1b`) is checked by the split search first, for a hint is a claim. Before, E707 suggested
fewer micro-batches whatever helped (a 6-unit chain on three 8 MB devices under
interleaved, where none fits even with one), and E712 and E708 said "(`schedule 1f1b`,
fewer `microbatches`)" to plans already on 1F1B. Where the algorithm recomputes (`auto`'s
E707, `pipeilp`'s E708), a change is checked by the recomputing contiguous split too
(`Recomputing`): before, a 2-layer GPT on two 2 MiB GPUs, GPipe, 8 micro-batches, was told
"a split fits with `microbatches 1`", where both plan with `schedule 1f1b` or
`microbatches 6`, recomputing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass

from ..model import MAX_MICROBATCHES, Pipeline, Problem
from ..pipeline.splitdp import MAX_CELLS, best_splits
from ..pipeline.units import units

__all__ = ["PlanTerms", "Recomputing", "cap_words", "in_flight_hints", "largest_fitting",
           "most_fitting", "stage_cap_words"]

#: the stage counts of a problem's recomputing contiguous splits that fit
#: (`pipeilp.warm.recomputing_stages`): what `auto` and `pipeilp` plan where no split fits
#: without recomputing, so their hints check each change by them too
Recomputing = Callable[[Problem], Collection[int]]


@dataclass(frozen=True, slots=True)
class PlanTerms:
    """How a message that nothing fits speaks of the user's plan where the problem solved is
    a part of it (one of N identical pipelines, `pipeblocks`): its caller's words and
    hints, which the solver's E708 (and the E707 before it) take in place of its own, so
    that no message is rewritten after and no hint of its own is drawn unseen."""

    #: what was planned, after "fits the devices' memory": e.g. "as 2 identical pipelines
    #: (4 micro-batches each)" (one pipeline's own: "as a pipeline")
    planned: str
    #: the hints, drawn only where a message needs them (each is a search or more)
    hints: Callable[[], tuple[str, ...]]


def stage_cap_words(problem: Problem, pipeline: Pipeline) -> str:
    """The cap the micro-batches put on the stages (`_stage_cap`), in words for a message
    that no split fits (pipedp's E707, hybrid's E712, pipeilp's E708); empty where none."""
    return cap_words(_stage_cap(problem, pipeline), pipeline)


def cap_words(capped_at: int | None, pipeline: Pipeline) -> str:
    """`stage_cap_words` of a cap counted elsewhere (pipeilp's, whose stages are not one
    a device); empty for None."""
    return ("" if capped_at is None else f" in at most {capped_at} stage(s) "
            f"(`{pipeline.schedule}` runs no more stages than micro-batches)")


def in_flight_hints(problem: Problem, pipeline: Pipeline, one: bool,
                    cells: float = MAX_CELLS,
                    recomputing: Recomputing | None = None) -> tuple[str, ...]:
    """The hints of a message that no split fits the memory (E707; E712 and E708, whose
    plans include pipedp's split: a split it finds fits theirs), each change checked by
    the split search within `cells` (a hint is a claim), and by `recomputing` where the
    algorithm recomputes: more micro-batches where they cap the stages and a split of
    more fits (`_more_stages`), the changes that hold fewer in flight with which one fits
    (`_fewer_in_flight`; `one`: a split of one stage per device fits, run as the
    fallback, `pipedp.one_fits`), else more memory."""
    capped = _stage_cap(problem, pipeline) is not None
    more = _more_stages(problem, pipeline, cells, recomputing) if capped else None
    fewer = _fewer_in_flight(problem, pipeline, cells, one, recomputing)
    return (*((f"`microbatches {more}` allows {more} stages, and a split into "
               f"{more} stages fits: each holds less",) if more else ()),
            (f"{fewer_words(problem)}: a split fits with "
             f"{' or with '.join(fewer)}; or give the devices more `memory`") if fewer
            else "give the devices more `memory`")


def fewer_words(problem: Problem) -> str:
    """Why fewer micro-batches fit, in words: training holds the activations of those in
    flight and a receive buffer per micro-batch; inference every micro-batch's stage inputs
    and outputs (`split.stage_bytes`)."""
    return ("fewer micro-batches in flight hold fewer activations, and fewer micro-batches "
            "fewer receive buffers" if units(problem).training
            else "fewer micro-batches hold fewer stage inputs and outputs (inference keeps "
            "every micro-batch's)")


def _fewer_in_flight(problem: Problem, pipeline: Pipeline, cells: float, one: bool,
                     recomputing: Recomputing | None) -> list[str]:
    """E707's changes that hold fewer micro-batches in flight, each where a split fits with
    it (a hint is a claim): `schedule 1f1b` under a schedule with a fallback (interleaved)
    where a split of one stage per device fits as 1F1B (`one`), under one of every
    micro-batch in flight (GPipe) where the search finds a split under 1F1B, never under
    1F1B (its own); then the fewer `microbatches` with which one fits
    (`_fewer_microbatches`)."""
    spec = pipeline.schedule_spec
    if spec.fallback is not None:
        one_f = one or bool(recomputing and recomputing(dataclasses.replace(
            problem, pipeline=dataclasses.replace(pipeline, schedule=spec.fallback))))
    else:
        one_f = spec.all_in_flight and _fits(problem, dataclasses.replace(
            pipeline, schedule="1f1b"), cells, recomputing)
    return [*(["`schedule 1f1b`"] if one_f else []),
            *_fewer_microbatches(problem, pipeline, cells, recomputing)]


def _fits(problem: Problem, pipeline: Pipeline, cells: float,
          recomputing: Recomputing | None) -> bool:
    """Whether the split search (within `cells`, every chain) finds a split that fits,
    else, where given, the recomputing one."""
    return bool(best_splits(problem, pipeline, cells=cells, every_chain=True)) or bool(
        recomputing and recomputing(dataclasses.replace(problem, pipeline=pipeline)))


def _fewer_microbatches(problem: Problem, pipeline: Pipeline, cells: float,
                        recomputing: Recomputing | None) -> list[str]:
    """E707's `microbatches N` below the plan's with which the split search (`_fits`) finds
    a split that fits: M - 1, else bisected down from the plan's count to the fewest that
    cap no split's stages (`_fewest_uncapped`): N holds a split, N + 1 none (in-flight
    counts are not monotone in M under interleaved, whose rounds take 7 micro-batches at
    once on 4 devices, 4 of 8: not always the most); else each count below those, down to
    one. Fewer micro-batches hold fewer activations and receive buffers, but under 1F1B no
    more stages than micro-batches: one micro-batch allows one stage (all params on one
    device), so where the buffers (training) or the outputs (inference: 2M on the last
    stage) bind, 2 may fit and 1 not. Empty where the search finds none."""

    def fits(m: int) -> bool:
        return _fits(problem, dataclasses.replace(pipeline, microbatches=m), cells, recomputing)

    below = pipeline.microbatches - 1
    if below < 1:
        return []
    if fits(below):
        return [f"`microbatches {below}`"]
    most = most_fitting(below, fits, _fewest_uncapped(problem, pipeline))
    return [] if most is None else [f"`microbatches {most}`"]


def _fewest_uncapped(problem: Problem, pipeline: Pipeline) -> int:
    """The fewest micro-batches that cap no split's stages (1F1B: a stage per device, a unit
    each; else 1): from there on, more micro-batches hold no less."""
    if not pipeline.schedule_spec.stages_at_most_microbatches:
        return 1
    return _uncapped(problem, units(problem).count)


def most_fitting(hi: int, fits: Callable[[int], bool], floor: int) -> int | None:
    """The most count below `hi` (which fits not) with which `fits`: bisected down to
    `floor`, from where `fits` is monotone (`largest_fitting`), else each count below it
    tried, the most first (one that caps the stages may fit where more do not: E707's and
    E708's micro-batches under 1F1B); None where none does."""
    floor = min(floor, hi)
    most = largest_fitting(hi, fits, floor)
    return most if most is not None else next(
        (k for k in range(floor - 1, 0, -1) if fits(k)), None)


def largest_fitting(hi: int, fits: Callable[[int], bool], lo: int = 1) -> int | None:
    """A count below `hi` (which fits not) with which `fits`, bisected down from `hi` to
    `lo` in log2(hi - lo) checks: k fits, k + 1 not (the largest where `fits` is
    monotone); None where `lo` does not fit, or `hi` is no more than `lo` (E707's
    micro-batches, E712's `data_parallel`)."""
    # fits with lo, not with hi
    if hi <= lo or not fits(lo):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _stage_cap(problem: Problem, pipeline: Pipeline) -> int | None:
    """The micro-batches, where they cap the stages below what the devices and units allow
    (`1f1b`: torch's `Schedule1F1B` runs no more stages than micro-batches); else None."""
    if not pipeline.schedule_spec.stages_at_most_microbatches:
        return None
    n = units(problem).count
    return pipeline.microbatches if pipeline.microbatches < _uncapped(problem, n) else None


def _uncapped(problem: Problem, n: int) -> int:
    """Stages at most but for the micro-batches' cap: a stage per device, a unit each."""
    return min(len(problem.cluster.devices), n)


def _more_stages(problem: Problem, pipeline: Pipeline, cells: float,
                 recomputing: Recomputing | None) -> int | None:
    """The fewest stages, more than the micro-batches that cap them (`_stage_cap`), of a
    split that fits with as many micro-batches, within `cells`, or recomputing; None where
    none fits. 1F1B holds S - k micro-batches in flight on stage k of S however many more
    there are, but a stage holds a receive buffer per micro-batch (training) or every
    micro-batch's inputs and outputs (inference): more micro-batches may not fit where
    fewer do, so each count is tried, the fewest first."""
    most = min(_uncapped(problem, units(problem).count), MAX_MICROBATCHES)
    for m in range(pipeline.microbatches + 1, most + 1):
        wider = dataclasses.replace(pipeline, microbatches=m)
        found = [*best_splits(problem, wider, cells=cells, every_chain=True),
                 *(recomputing(dataclasses.replace(problem, pipeline=wider)) if recomputing
                   else ())]
        fit = [s for s in found if s > pipeline.microbatches]
        if fit:
            return min(fit)
    return None
