"""The gradient all-reduces of a pipeline's iteration, timed after its simulation
(`planner.pipeline.schedule`): a tied weight's among its holders' devices (Megatron's
embedding group), and a replicated stage's buckets among its replicas
(`planner.pipeline.hybrid`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..cost import allreduce_time, costs
from ..fastsim import FastResult
from ..model import Pipeline, Problem, derived
from ..simulate import SimResult
from . import hybrid
from .split import Split

__all__ = ["AllReduce", "gradient_allreduces", "tied_gradients"]


@dataclass(frozen=True, slots=True)
class AllReduce:
    """One gradient all-reduce of an iteration (a tied weight's, or a bucket of a replicated
    stage's): the devices of its ring, when it ran and the bytes it reduced."""

    devices: tuple[int, ...]
    start_s: float
    end_s: float
    bytes: float
    #: `tie` (a tied weight's holders) or `replicas` (a replicated stage's group)
    kind: str


def tied_gradients(problem: Problem) -> list[tuple[tuple[int, ...], tuple[int, ...], int]]:
    """Per tie whose every holder is a forward op with backward ops: (holders, their
    backward ops, the bytes of the weight's gradient); found once per problem."""

    def build() -> tuple[tuple[tuple[int, ...], tuple[int, ...], int], ...]:
        g = problem.graph
        backward: dict[int, list[int]] = {}
        for b, f in g.backward_of.items():
            backward.setdefault(f, []).append(b)
        return tuple((t.ops, tuple(b for i in t.ops for b in backward[i]), t.bytes)
                     for t in g.ties if all(i in backward for i in t.ops))

    return list(derived(problem, "pipeline.tied_gradients", build))


def gradient_allreduces(problem: Problem, placement: Sequence[int], split: Split,
                        pipeline: Pipeline, result: SimResult | FastResult, iteration: float,
                        groups: Mapping[int, tuple[int, ...]],
                        ) -> tuple[float, float, dict[int, float], tuple[AllReduce, ...]]:
    """(the iteration, the all-reduces' seconds, each replicated group's, each all-reduce)
    with the gradient all-reduces run after the simulation `result` (of the copies, op i
    of micro-batch m at i + m * n): the tied weights' (`pipeline.schedule`'s docstring;
    among every replica of their holders) and the replicated stages'
    (`hybrid.allreduces`)."""
    ties = tied_gradients(problem)
    if not ties and not groups:
        return iteration, 0.0, {}, ()
    c = costs(problem)
    mb = pipeline.microbatches
    n = len(result.end_s) // mb  # the graph's ops and its relays, per micro-batch
    end = np.asarray(result.end_s, dtype=np.float64).reshape(mb, n)
    ops_of: dict[int, list[int]] = {}
    for i, d in enumerate(placement):
        if d in groups:
            ops_of.setdefault(d, []).append(i)
    finish, by_group, buckets = hybrid.allreduces(problem, groups, ops_of, end)
    spans = [AllReduce(ring, start, stop, nbytes, "replicas")
             for ring, start, stop, nbytes in buckets]
    # a device has one stream for its all-reduces: a tie's waits for its devices' buckets
    free: dict[int, float] = {}
    for a in spans:
        for d in a.devices:
            free[d] = max(free.get(d, 0.0), a.end_s)
    ready = []
    for holders, backward, nbytes in ties:
        if len({placement[i] for i in holders}) < 2:  # one stage's weight: DDP's buckets
            continue
        ring = sorted({e for i in holders for e in hybrid.group(groups, placement[i])})
        took = allreduce_time(c, nbytes, ring)
        if took > 0:
            ready.append((float(end[:, list(backward)].max()), took, tuple(ring), nbytes))
    clock = total = 0.0
    for start, took, devices, nbytes in sorted(ready):
        begin = max([clock, start, *(free.get(d, 0.0) for d in devices)])
        spans.append(AllReduce(devices, begin, begin + took, nbytes, "tie"))
        clock = begin + took
        total += took
    spans.sort(key=lambda a: (a.start_s, a.end_s, a.devices))
    return (max(iteration, clock, finish), total + math.fsum(by_group.values()), by_group,
            tuple(spans))
