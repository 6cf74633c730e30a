"""The hints of pipeilp's E708 (and the E707 before it, and pipeblocks' E709) under
`data_parallel N` (N > 1: N identical pipelines, `pipeblocks.identical_pipelines`), in the
user's terms: the micro-batch counts they name are the whole plan's (multiples of N, a
pipeline taking its share), and each change is checked with the DDP bucket every replica
holds, as the plan counts it first (`fits`: the solver's cheap check, pipeilp's recomputing
contiguous split of one pipeline, whose plan pipeilp keeps where it finds no better).
Before, they were the single pipeline's, checked without the bucket: a 6-unit chain of 4
MB activations on four 16 MB devices, GPipe, 8 micro-batches, `data_parallel 2` was told
"a split fits with `microbatches 1`" (one a pipeline), and plans with 4; 1F1B fits too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..model import Pipeline
from .pipehints import largest_fitting, most_fitting

__all__ = ["Fits", "identical_hints"]

#: whether N identical pipelines fit under the (user's) pipeline given, bucket counted:
#: True, False, or None where the check cannot tell (they fit without the bucket, and the
#: check charges every replica a bucket of every gradient, more than a stage holds)
Fits = Callable[[Pipeline], bool | None]


def identical_hints(pipeline: Pipeline, stages: int, fits: Fits) -> tuple[str, ...]:
    """The hints where no placement of N identical pipelines fits (module docstring): the
    most pipelines below N that fit (bisected, as E712's `dphints`: `data_parallel 1` is
    the plan's own problem), more micro-batches where they cap a pipeline's stages below
    `stages` (its devices and units) and N pipelines of more stages fit (`_more_stages`),
    the changes that hold fewer in flight with which they fit (`_fewer_in_flight`), else
    what was tried; and more memory."""
    n, m = int(pipeline.data_parallel), pipeline.microbatches
    share = -(-m // n)
    why = (f"`data_parallel {n}` runs {n} identical pipelines, each on 1/{n} of the "
           f"devices with {share} of the {m} micro-batches, every replica holding a DDP "
           "bucket of its gradients too")
    more = _more_stages(pipeline, share, stages, fits)
    flight = _fewer_in_flight(pipeline, share, stages, fits)
    fewer = largest_fitting(n, lambda k: fits(dataclasses.replace(pipeline,
                                                                   data_parallel=k)) is True)
    said = [f"`microbatches {more * n}` allows {more} stages a pipeline, and "
            f"{n} pipelines of {more} stages fit: each holds less"] if more else []
    if flight:
        said.append("fewer micro-batches in flight hold fewer activations, and fewer "
                    f"micro-batches fewer receive buffers: {n} pipelines fit with "
                    f"{' or with '.join(flight)}")
    elif not more:
        said += _tried_words(pipeline, share, fits)
    if fewer:
        said.insert(0, f"`data_parallel {fewer}` fits")
    memory = "give the devices more `memory`"
    if not said:
        return (f"{why}; {memory}",)
    said[-1] += f"; or {memory}" if more or flight or fewer else f"; {memory}"
    return (f"{why}; {said[0]}", *said[1:])

def _more_stages(pipeline: Pipeline, share: int, stages: int, fits: Fits) -> int | None:
    """Under a schedule whose micro-batches cap the stages (1F1B), where a pipeline's share
    caps them below `stages`: the fewest stages S with which N pipelines of S micro-batches
    each fit; None where none does. 1F1B holds S - k in flight on stage k of S however
    many more there are, but a stage holds a receive buffer per micro-batch: more may not
    fit where fewer do, so each S is tried, the fewest first."""
    if not pipeline.schedule_spec.stages_at_most_microbatches or share >= stages:
        return None
    n = int(pipeline.data_parallel)
    return next((s for s in range(share + 1, stages + 1)
                 if fits(dataclasses.replace(pipeline, microbatches=s * n))), None)


def _fewer_in_flight(pipeline: Pipeline, share: int, stages: int, fits: Fits) -> list[str]:
    """`schedule 1f1b` under a schedule of every micro-batch in flight (GPipe), then the
    most micro-batches below the plan's (a multiple of N: one a pipeline at least, as fewer
    leave a pipeline idle, W257) with which N pipelines fit: bisected down to the share
    that caps no pipeline's `stages` (1F1B; else one), then each share below it tried (a
    share caps a pipeline's stages there, so fewer may not fit where more do)."""
    n = int(pipeline.data_parallel)
    out = []
    if pipeline.schedule_spec.all_in_flight and fits(dataclasses.replace(
            pipeline, schedule="1f1b")):
        out.append("`schedule 1f1b`")

    def fit(k: int) -> bool:
        return fits(dataclasses.replace(pipeline, microbatches=k * n)) is True

    capped = pipeline.schedule_spec.stages_at_most_microbatches
    most = most_fitting(share, fit, stages if capped else 1)
    if most is not None:
        out.append(f"`microbatches {most * n}`")
    return out


def _tried(pipeline: Pipeline, share: int) -> list[tuple[str, Pipeline]]:
    """The changes of micro-batches in flight `_fewer_in_flight` checked, in words."""
    n = int(pipeline.data_parallel)
    return [*([("`schedule 1f1b`", dataclasses.replace(pipeline, schedule="1f1b"))]
              if pipeline.schedule_spec.all_in_flight else []),
            *([(f"`microbatches {n}`", dataclasses.replace(pipeline, microbatches=n))]
              if share > 1 else [])]


def _tried_words(pipeline: Pipeline, share: int, fits: Fits) -> list[str]:
    """What `_tried`'s changes gave where none fits for sure: that they do not, and those
    the check cannot tell of (before: "do not fit either" of changes with which the plan's
    own solver finds N pipelines that fit, their stages' buckets smaller than its check's)."""
    n = int(pipeline.data_parallel)
    tried = _tried(pipeline, share)
    out = []
    if no := " or ".join(words for words, pipe in tried if fits(pipe) is False):
        out.append(f"{n} pipelines do not fit with {no} either")
    if maybe := " or ".join(words for words, pipe in tried if fits(pipe) is None):
        out.append(f"{n} pipelines may fit with {maybe}: they do without the DDP buckets, "
                   "which decide (each stage's replicas hold their own gradients'); try it")
    return out
