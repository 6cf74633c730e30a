"""The hints of hybrid's E712 under `data_parallel N` (N > 1: N identical pipelines), each
change checked by hybrid's DP with it, for a hint is a claim: `schedule 1f1b` under GPipe
and the most micro-batches below the plan's with which N pipelines fit (bisected: log2 M
checks); the most pipelines below N with which a layout fits (bisected: log2 N checks),
and where one pipeline fits not and no change of the micro-batches does, `data_parallel
auto` (its DP, of every replica count a stage, is the costliest). Each named with the
layout that fits (its stages and replicas). Before, E712 said "a smaller `data_parallel`, or
`auto`, may fit" unchecked: a 6-unit chain of 4 MB activations on four 40 MB devices
under GPipe, 8 micro-batches, `data_parallel 2`, fits with neither (fewer micro-batches
and 1F1B do).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Literal

from ..model import Pipeline, Problem
from ..pipeline.units import units
from . import pipehints
from .pipehints import largest_fitting

__all__ = ["Fitting", "data_parallel_hints", "layout_words", "stage_cap_words"]

#: hybrid's check of a change (`pipehybrid.fitting`): the replicas of each stage of a
#: layout that fits under the pipeline given (the problem's own under `data_parallel auto`
#: where pins bind every replica), None where none does
Fitting = Callable[[Problem, Pipeline], "tuple[int, ...] | None"]


def data_parallel_hints(problem: Problem, pipeline: Pipeline,
                        fitting: Fitting) -> tuple[str, ...]:
    """E712's hints under `data_parallel N` (module docstring): the changes with which a
    layout fits, each with it, else what was tried and more memory."""
    seen: dict[Pipeline, tuple[int, ...] | None] = {}

    def fit(pipe: Pipeline) -> tuple[int, ...] | None:
        if pipe not in seen:
            bound = pipe.data_parallel == "auto" and problem.pins  # `_replicas`' pins
            seen[pipe] = fitting(dataclasses.replace(problem, pipeline=pipe) if bound
                                 else problem, pipe)
        return seen[pipe]

    n = int(pipeline.data_parallel)
    why = (f"`data_parallel {n}` runs {n} identical pipelines, each on 1/{n} of the "
           "devices, every replica holding a DDP bucket of its gradients too")
    flight = _fewer_in_flight(pipeline, fit)
    more = _more_microbatches(pipeline, fit)
    fewer, said_fewer = _fewer_pipelines(pipeline, fit, auto=not flight and not more)
    said = [f"{why}: {said_fewer}"]
    if more:
        said.append(more)
    if flight:
        said.append(f"{pipehints.fewer_words(problem)}: "
                    f"{n} pipelines fit with {' or with '.join(flight)}")
    elif tried := " or ".join(_tried(pipeline)):
        said[0] += (f"; {n} pipelines do not fit with {tried} either" if fewer else
                    f", nor {n} pipelines with {tried}")
    give = "; or give" if fewer or flight or more else "; give"
    return (*said[:-1], f"{said[-1]}{give} the devices more `memory`")


def _fewer_pipelines(pipeline: Pipeline, fit: Callable[[Pipeline], tuple[int, ...] | None],
                     auto: bool) -> tuple[bool, str]:
    """`data_parallel K`, the most below N with which a layout fits (bisected down to one
    pipeline), else, with `auto` (where no change of the micro-batches in flight fits),
    `data_parallel auto` where a layout fits with it (its DP tries every replica count a
    stage: 3.7 s of CPU on Inception-v3's PipeDream profile, six times one of N
    pipelines'); whether one fits, and in words with that layout or what was tried."""
    def with_n(k: int | Literal["auto"]) -> Pipeline:
        return dataclasses.replace(pipeline, data_parallel=k)

    k = largest_fitting(int(pipeline.data_parallel), lambda k: fit(with_n(k)) is not None)
    change: int | Literal["auto"] = "auto" if k is None else k
    found = fit(with_n(change)) if k is not None or auto else None
    if found is not None:
        return True, f"`data_parallel {change}` fits: {layout_words(found)}"
    tried = "`data_parallel 1` or `data_parallel auto`" if auto else "`data_parallel 1`"
    return False, f"hybrid's DP finds no layout that fits with {tried} either"


def _fewer_in_flight(pipeline: Pipeline,
                     fit: Callable[[Pipeline], tuple[int, ...] | None]) -> list[str]:
    """`schedule 1f1b` under a schedule of every micro-batch in flight (GPipe), then the
    most micro-batches below the plan's (a multiple of N, bisected down to N: one each, as
    fewer leave a pipeline idle, W257), each where N pipelines fit with it, in words with
    that layout."""
    out = []
    if pipeline.schedule_spec.all_in_flight and (found := fit(dataclasses.replace(
            pipeline, schedule="1f1b"))) is not None:
        out.append(f"`schedule 1f1b` ({layout_words(found)})")

    def with_m(m: int) -> Pipeline:
        return dataclasses.replace(pipeline, microbatches=m)

    n = int(pipeline.data_parallel)  # a pipeline's share, ceil(M / N), holds the same
    share = largest_fitting(-(-pipeline.microbatches // n),
                            lambda k: fit(with_m(k * n)) is not None)
    if share is not None and (found := fit(with_m(share * n))) is not None:
        out.append(f"`microbatches {share * n}` ({layout_words(found)})")
    return out


def _more_microbatches(pipeline: Pipeline,
                       fit: Callable[[Pipeline], tuple[int, ...] | None]) -> str | None:
    """Under a schedule whose micro-batches cap a pipeline's stages (`1f1b`: M // N each),
    the fewest more (a multiple of N, `_MORE_TRIED` shares at most) with which N pipelines
    fit in more stages than the cap, in words with that layout; None where none does or
    nothing caps (before the cap was a pipeline's, hybrid planned N pipelines of M stages,
    which the export refused)."""
    cap = pipeline.stage_cap
    if cap is None:
        return None
    n = int(pipeline.data_parallel)
    for share in range(cap + 1, cap + 1 + _MORE_TRIED):
        found = fit(dataclasses.replace(pipeline, microbatches=share * n))
        if found is not None and len(found) > cap:
            return (f"under `{pipeline.schedule}` a pipeline runs no more stages than its "
                    f"{cap} micro-batch(es) (M // N): {n} pipelines fit with "
                    f"`microbatches {share * n}` ({layout_words(found)})")
    return None


#: the shares of micro-batches above a pipeline's own `_more_microbatches` tries: a stage
#: more a try, each one DP
_MORE_TRIED = 4


def _tried(pipeline: Pipeline) -> list[str]:
    """The changes of micro-batches in flight `_fewer_in_flight` checked."""
    return [*(["`schedule 1f1b`"] if pipeline.schedule_spec.all_in_flight else []),
            *([f"`microbatches {n}`"] if pipeline.microbatches > (n := int(
                pipeline.data_parallel)) else [])]


def layout_words(replicas: tuple[int, ...]) -> str:
    """A layout that fits, in words: its stages and each one's replicas."""
    stages = f"a layout of {len(replicas)} stage(s)"
    if max(replicas) == 1:
        return f"{stages}, one device each"
    if len(set(replicas)) == 1:
        return f"{stages}, each on {replicas[0]} replicas"
    return f"{stages} on {', '.join(map(str, replicas))} replicas"


def stage_cap_words(problem: Problem, pipeline: Pipeline) -> str:
    """E712's cap on the stages (`pipehints.stage_cap_words`); under `data_parallel N` where
    the micro-batches cap them below a stage per block of N devices (before, 4 micro-batches
    under `1f1b` were said to cap 4 identical pipelines on 8 devices, of 2 stages at most)."""
    if pipeline.data_parallel in ("auto", 1):
        return pipehints.stage_cap_words(problem, pipeline)
    n = int(pipeline.data_parallel)
    most = min(len(problem.cluster.devices) // n, units(problem).count)
    cap = pipeline.stage_cap  # each pipeline's micro-batches, M // N
    return pipehints.cap_words(cap if cap is not None and cap < most else None, pipeline)
