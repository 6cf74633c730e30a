"""Replicated stages (data parallelism inside a pipeline stage): the groups, the schedule's
in-flight counts, and the gradient all-reduce.

A hybrid plan is a pipeline whose stage may run on a **group** of devices holding replicas
of it (PipeDream's optimizer, DAPPLE, Piper): the plan places every op on its stage's
first device (the representative) and `replicas` maps that device to its group, itself
first. The groups are disjoint.

- **Micro-batches.** Micro-batch m of a stage runs on replica `m mod r` of its group of r
  (round robin, as PipeDream's 1F1B-RR); the simulator places each micro-batch's copy of
  the graph so, and the transfers between stages go between those replicas.
- **Schedule.** Each replica runs 1F1B (or GPipe) over its own micro-batches. Under 1F1B a
  replica of stage k keeps `ceil((r_k + ... + r_{S-1}) / r_k)` micro-batches in flight (the
  replicas from it to the last stage each hold one, spread over its r_k replicas; with one
  device a stage, Schedule1F1B's S - k), at most its share `ceil(M / r_k)`; GPipe, its
  share. The memory model counts the same (`in_flight`).
- **Gradients.** A replicated stage's parameter gradients are accumulated over its
  micro-batches and all-reduced among its replicas once per iteration, as DDP does under
  `no_sync` until the last micro-batch: in buckets of `DDP_BUCKET_BYTES` (DDP's
  `bucket_cap_mb` of 25 MiB), filled in the order the last backward pass produces the
  gradients; a bucket is all-reduced once every replica's last backward pass has produced
  it, after the bucket before it (one communication stream), each a ring all-reduce over
  the group's slowest link: `2 (r - 1) / r * bytes / bandwidth + 2 (r - 1) * latency`
  (`cost.allreduce_time`). The iteration ends when the pipeline's last op and the last
  all-reduce have. The ring's links join devices of one group, which no pipeline transfer
  uses (those go between groups), so under `link` contention (and `none`) the all-reduce
  and the pipeline never share a link; under `device` contention they would share each
  device's one channel, which this timing leaves out.
- **Memory.** A replica holds what its stage holds with one device (params, gradients and
  optimizer state, activations of its micro-batches in flight, the largest transient;
  the receive buffers of its share of the micro-batches, and in inference their inputs and
  outputs: `step_bytes`), plus one DDP bucket (at most the stage's gradients).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..cost import allreduce_time, costs
from ..model import Pipeline, Problem
from .units import Units

#: DDP's default `bucket_cap_mb` (25 MiB): the gradients all-reduced at once
DDP_BUCKET_BYTES = 25 * 2**20

Groups = Mapping[int, tuple[int, ...]]


def replica_groups(problem: Problem, info: Mapping[str, Any]) -> dict[int, tuple[int, ...]]:
    """`info["replicas"]` (representative device name -> its group's names) as device
    indices; groups of one device left out."""
    index = problem.cluster.device_index
    out: dict[int, tuple[int, ...]] = {}
    for rep, names in (info.get("replicas") or {}).items():
        group = tuple(index[n] for n in names if n in index)
        if rep in index and len(group) > 1:
            out[index[rep]] = group
    return out


def replica_names(problem: Problem, groups: Groups) -> dict[str, list[str]]:
    """The inverse of `replica_groups`: names, for a solution's `info["replicas"]`."""
    devs = problem.cluster.devices
    return {devs[d].name: [devs[e].name for e in g] for d, g in sorted(groups.items())
            if len(g) > 1}


def group(groups: Groups, d: int) -> tuple[int, ...]:
    """Device `d`'s group (itself alone when it has no replicas)."""
    return groups.get(d) or (d,)


def in_flight(pipeline: Pipeline, sizes: Sequence[int], k: int, training: bool) -> int:
    """Micro-batches a replica of stage `k` holds at once, its stages' replica counts
    `sizes` in pipeline order (the module docstring; `Schedule.in_flight`)."""
    return pipeline.schedule_spec.in_flight(pipeline.microbatches, sizes, k, training)


def cached_copies(pipeline: Pipeline, r: int, training: bool) -> int:
    """Micro-batches beyond the one in flight whose inputs and outputs a replica of a stage
    (of `r`) still holds at the step's end, inference only: torch's stage receives each
    micro-batch into its own buffers and caches its outputs (`fwd_cache`) for a backward
    pass that inference never runs, freed at the next step: its share ceil(M / r) - 1
    more. 0 in training (the backward pops them: `in_flight` counts those held)."""
    return 0 if training else -(-pipeline.microbatches // r) - 1


def returned_copies(pipeline: Pipeline, r: int, training: bool) -> int:
    """Copies of each model output a replica of the last stage (of `r`) holds beyond those
    it caches (`cached_copies`), inference only: `step` returns its share ceil(M / r)
    merged (`torch.cat` of `output_chunks`, while they are alive). 0 in training
    (`return_outputs=False`)."""
    return 0 if training else -(-pipeline.microbatches // r)


def buffer_copies(pipeline: Pipeline, r: int, training: bool) -> int:
    """Receive buffers a replica of a stage (of `r`) keeps per boundary tensor, training
    only: at its first step torch's stage makes one buffer per micro-batch of its share
    ceil(M / r) for its input (`args_recv_info`) and one for the gradient of its output
    (`grad_recv_info`), kept for the stage's life, beside the inputs of the micro-batches
    in flight. 0 in inference (`cached_copies` counts its input buffers there)."""
    return -(-pipeline.microbatches // r) if training else 0


def step_bytes(u: Units, i: Any, j: Any, pipeline: Pipeline, r: int, last: bool) -> Any:
    """The bytes a replica (of `r`) of the stage of units [i, j) holds beyond its
    micro-batches in flight (indices or arrays of them). Training: `buffer_copies` of its
    input and of its output's gradient (0 at the model's ends). Inference: `cached_copies`
    of what it receives and sends and of the model's outputs it computes, and the `last`
    stage's outputs merged (`returned_copies`). The rule of `split.stage_bytes`, read by
    every split solver that judges memory."""
    if u.training:
        return buffer_copies(pipeline, r, True) * (u.forward_bytes[i] + u.backward_bytes[j])
    cached = cached_copies(pipeline, r, False)
    outputs = u.output_prefix[j] - u.output_prefix[i]
    return cached * (u.forward_bytes[i] + u.forward_bytes[j] + outputs) + (
        returned_copies(pipeline, r, False) * outputs if last else 0.0)


def kept_sends(u: Units, i: Any, j: Any, pipeline: Pipeline) -> Any:
    """The most a stage of units [i, j) holds of its sends, training under a schedule that
    keeps them to the step's end (`Schedule.keeps_sends`: interleaved): every micro-batch's
    output and its input's gradient (0 at the model's ends); else 0. The bound the DPs judge
    a stage by alone; `split.stage_bytes` walks the device's order for when they are held."""
    if not (u.training and pipeline.schedule_spec.keeps_sends):
        return 0.0
    return pipeline.microbatches * (u.forward_bytes[j] + u.backward_bytes[i])


def bucket_bytes(gradient: float, r: int) -> float:
    """The extra bytes a replica of a stage with `gradient` bytes of gradients holds: one
    DDP bucket, none without replicas."""
    return min(float(gradient), float(DDP_BUCKET_BYTES)) if r > 1 else 0.0


def gradient_buckets(problem: Problem, ops: Sequence[int]) -> list[tuple[list[int], float]]:
    """The DDP buckets of `ops`' parameter gradients: (the backward ops that produce them,
    their bytes), in the order a backward pass produces them (topological order of the
    backward ops); a forward op's params counted at its first backward op, a tied weight
    once however many of its holders are here (DDP reduces a shared parameter once; before,
    once per holder: a tie on one replicated stage doubled its all-reduce, 7.56 -> 15.12 ms,
    where memory counted it once)."""
    g = problem.graph
    position = {i: k for k, i in enumerate(g.topological_order)}
    mine = sorted((i for i in ops if i in g.backward_of), key=position.__getitem__)
    ties_of: dict[int, list[int]] = {}
    for t, tie in enumerate(g.ties):
        for i in tie.ops:
            ties_of.setdefault(i, []).append(t)
    out: list[tuple[list[int], float]] = []
    ops_now: list[int] = []
    size = 0.0
    counted: set[int] = set()
    shared: set[int] = set()  # the ties whose weight is counted already
    for b in mine:
        f = g.backward_of[b]
        ops_now.append(b)
        if f not in counted:
            counted.add(f)
            size += g.ops[f].params_bytes - sum(g.ties[t].bytes for t in ties_of.get(f, ())
                                                if t in shared)
            shared.update(ties_of.get(f, ()))
        if size >= DDP_BUCKET_BYTES:
            out.append((ops_now, size))
            ops_now, size = [], 0.0
    if size > 0:
        out.append((ops_now, size))
    return out


def gradient_bytes(problem: Problem, ops: Sequence[int]) -> float:
    """The bytes of `ops`' parameter gradients (their forward ops' params, once)."""
    return math.fsum(b for _, b in gradient_buckets(problem, ops))


def allreduces(problem: Problem, groups: Groups, ops_of: Mapping[int, Sequence[int]],
               end: NDArray[np.float64]
               ) -> tuple[float, dict[int, float], list[tuple[tuple[int, ...], float, float,
                                                              float]]]:
    """When the replicated stages' gradient all-reduces end (the module docstring), each
    group's seconds of all-reduce, by representative, and each bucket's all-reduce as
    (group, start, end, bytes). `ops_of[d]`: the graph ops of representative `d`'s stages;
    `end[m, i]`: when op i of micro-batch m ended."""
    c = costs(problem)
    mb = end.shape[0]
    finish = 0.0
    took: dict[int, float] = {}
    spans: list[tuple[tuple[int, ...], float, float, float]] = []
    for d, members in sorted(groups.items()):
        r = len(members)
        if r < 2:
            continue
        last = [max(range(j, mb, r)) for j in range(min(r, mb))]
        clock = total = 0.0
        for backward, nbytes in gradient_buckets(problem, ops_of.get(d, ())):
            ready = float(end[last][:, backward].max())
            step = allreduce_time(c, nbytes, members)
            spans.append((members, max(clock, ready), max(clock, ready) + step, nbytes))
            clock = max(clock, ready) + step
            total += step
        took[d] = total
        finish = max(finish, clock)
    return finish, took, spans
