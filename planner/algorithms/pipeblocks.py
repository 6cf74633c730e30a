"""`data_parallel N` for a solver of one pipeline (`pipeilp`): N identical pipelines
planned as one over the first device of each block of N, each stage then replicated over
its block (`identical_pipelines`); split from `pipehybrid`, whose `data_parallel N` reads
the same blocks (`check_pins`). Where nothing fits, the solver's messages speak of the
plan (`pipehints.PlanTerms`: the N pipelines, and the hints of `blockhints`, each change
checked by the solver's own `Checks`)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ..errors import Diagnostic, InfeasibleError, SearchLimitError
from ..model import Cluster, Pipeline, Problem
from ..pipeline import hybrid
from ..pipeline.schedule import run as run_pipeline
from ..pipeline.split import fits
from ..pipeline.units import units
from ..plan import Plan
from ..units import format_bytes
from . import blockhints, dphints
from .base import Options, Solution
from .pipehints import PlanTerms


@dataclass(frozen=True, slots=True)
class Checks:
    """A solver's cheap checks of a change, for the hints where nothing fits (the callers'
    own: `pipehybrid` imports this module)."""

    #: whether one pipeline (the problem of one) fits by a check whose plan the solver
    #: keeps where it finds no better (pipeilp: its recomputing contiguous split)
    alone: Callable[[Problem], bool]
    #: hybrid's DP (`pipehybrid.fitting`): a layout's replicas per stage, or None
    hybrid: Callable[[Problem, Pipeline], tuple[int, ...] | None]


def identical_pipelines(problem: Problem, options: Options,
                        solve: Callable[[Problem, Options, PlanTerms], Solution], name: str,
                        checks: Checks) -> Solution:
    """`data_parallel N` for a solver of one pipeline (`pipeilp`): N identical pipelines,
    stage k of each on device k of its block of N consecutive devices, so the solver plans
    one pipeline over the first device of each block (its links, its pins), with its
    share of the micro-batches, ceil(M / N), in flight, and the least memory of its block
    (each device of a block holds a replica of its stages) less a DDP bucket of every
    gradient, at most 25 MiB; each of its stages is then replicated over its block. A
    stage with fewer gradients holds a smaller bucket, so where nothing fits so, the
    solver runs again with no bucket (a relaxation): its proof stands, and its plan is
    kept where it fits as simulated, else E709 (no proof). The all-reduce is not in the
    solver's model: the plan is judged by the simulator, and the solver's proof makes it no
    better than `feasible` (its period meeting the bound makes it `optimal`). Where
    nothing fits, the solver speaks in the user's terms (`_terms`)."""
    pipeline = problem.pipeline or Pipeline()
    n = int(pipeline.data_parallel)
    check_pins(problem, n)
    reps = list(range(0, len(problem.cluster.devices) - n + 1, n))
    every_op = range(len(problem.graph.ops))  # a stage's bucket holds its gradients at most
    bucket = hybrid.bucket_bytes(hybrid.gradient_bytes(problem, every_op), n)
    terms = _terms(problem, checks)
    # where a relaxation follows, its error is the one shown: this one draws no hints
    first = dataclasses.replace(terms, hints=lambda: ()) if bucket else terms
    planned: Solution | None = None
    try:
        planned = solve(_one_pipeline(problem, n, reps, bucket), options, first)
    except InfeasibleError:
        if not bucket:
            raise
    relaxed = planned is None
    if planned is None:
        planned = solve(_one_pipeline(problem, n, reps, 0.0), options, terms)
    placement = tuple(reps[d] for d in planned.plan.placement)
    groups = {reps[d]: tuple(range(reps[d], reps[d] + n)) for d in set(planned.plan.placement)}
    index = problem.cluster.device_index
    ran = run_pipeline(problem, placement, pipeline,
                       [index[x] for x in planned.info.get("recompute") or ()], groups)
    if relaxed and not fits(problem, ran.memory_bytes):
        raise SearchLimitError(Diagnostic(
            "E709", f"{name} found no placement of plan `{problem.name}` as {n} identical "
            f"pipelines: none fits with a DDP bucket of {format_bytes(int(bucket))} on every "
            "replica, and the one that fits without the bucket does not with its own; this "
            "is not a proof that none exists", None,
            (_hybrid_hint(problem, pipeline, checks), *terms.hints())))
    info = {**planned.info, "replicas": hybrid.replica_names(problem, groups),
            "layout": [len(groups[s.device]) for s in ran.stages],
            "iteration_s": ran.iteration_s,
            "data_parallel": f"{name} planned one of {n} identical pipelines over the first "
                             f"device of each block of {n} ({ceil_share(pipeline, n)} "
                             "micro-batches each); the all-reduce is the simulator's alone"}
    if "why" in info:  # the solver's verdict is one pipeline's, its figures per own micro-batch
        info["why"] = (f"for one of the {n} pipelines alone, its period per own micro-batch: "
                       f"{info['why']}; the all-reduce is outside its model, so its proof "
                       "makes no plan `optimal` (its period meeting the bound does)")
    status = "feasible" if planned.status in ("feasible", "optimal") else planned.status
    return Solution(Plan(placement, algorithm=name), status, MappingProxyType(info))


def _terms(problem: Problem, checks: Checks) -> PlanTerms:
    """The solver's words where one of the N pipelines fits not (without the bucket, so not
    with it): E708 says the N pipelines and their share of the micro-batches, and it and
    the E707 before it (where the memory leaves no split) give `_hints`, drawn once, in
    place of the one pipeline's (their micro-batches a pipeline's share, their changes
    checked without the bucket). Other errors (proofs, pins) are the plan's own."""
    pipeline = problem.pipeline or Pipeline()
    n = int(pipeline.data_parallel)
    share = ceil_share(pipeline, n)
    return PlanTerms(f"as {n} identical pipelines ({share} micro-batch{'es' * (share > 1)} "
                     "each)", functools.cache(lambda: _hints(problem, checks)))


def _hints(problem: Problem, checks: Checks) -> tuple[str, ...]:
    """`blockhints.identical_hints`: each change checked by `checks.alone` on one of the
    pipelines under it (of `data_parallel K`: the first device of each block of K, with
    its bucket, `_one_pipeline`; of `data_parallel 1`, the plan's own problem)."""
    seen: dict[Pipeline, bool | None] = {}

    def fits(pipe: Pipeline) -> bool | None:
        if pipe not in seen:
            seen[pipe] = _fits(problem, pipe, checks)
        return seen[pipe]

    pipeline = problem.pipeline or Pipeline()
    stages = min(len(problem.cluster.devices) // int(pipeline.data_parallel),
                 units(problem).count)
    return blockhints.identical_hints(pipeline, stages, fits)


def _fits(problem: Problem, pipe: Pipeline, checks: Checks) -> bool | None:
    """Whether `checks.alone` finds the plan under `pipe` fits: its own problem under
    `data_parallel 1`, else one of its K pipelines with its bucket (`_one_pipeline`); not
    where a pin starts no block of K (`check_pins`). None where it fits without the bucket
    alone: the bucket of every gradient is more than a stage holds, so it cannot tell."""
    k = int(pipe.data_parallel)
    changed = dataclasses.replace(problem, pipeline=pipe)
    if k == 1:
        return checks.alone(changed)
    reps = range(0, len(problem.cluster.devices) - k + 1, k)
    if any(d not in reps for d in problem.pins.values()):
        return False
    bucket = hybrid.bucket_bytes(hybrid.gradient_bytes(problem, range(len(problem.graph.ops))), k)
    if checks.alone(_one_pipeline(changed, k, reps, bucket)):
        return True
    return None if bucket and checks.alone(_one_pipeline(changed, k, reps, 0.0)) else False


def _hybrid_hint(problem: Problem, pipeline: Pipeline, checks: Checks) -> str:
    """E709's `--algo hybrid`, where its DP finds a layout that fits (it charges each
    stage's replicas the bucket of their own gradients), with that layout; else that it
    finds none."""
    found = checks.hybrid(problem, pipeline)
    if found is None:
        return "`--algo hybrid`'s DP finds no layout that fits either"
    return ("`--algo hybrid` charges each stage's replicas the bucket of their own "
            f"gradients, and finds one that fits: {dphints.layout_words(found)}")


def _one_pipeline(problem: Problem, n: int, reps: Sequence[int], bucket: float) -> Problem:
    """One of the N identical pipelines: the first device of each block, with the least
    memory of the block less `bucket`, and its share of the micro-batches."""
    cluster, slot = problem.cluster, {d: k for k, d in enumerate(reps)}
    sub = Cluster(cluster.name, tuple(
        dataclasses.replace(cluster.devices[d], memory_bytes=max(
            0, min(x.memory_bytes for x in cluster.devices[d:d + n]) - int(bucket)))
        for d in reps),
        tuple(dataclasses.replace(lk, src=slot[lk.src], dst=slot[lk.dst])
              for lk in cluster.links if lk.src in slot and lk.dst in slot))
    pipeline = problem.pipeline or Pipeline()
    one = dataclasses.replace(pipeline, data_parallel=1, microbatches=ceil_share(pipeline, n))
    return Problem(problem.name, problem.graph, sub, problem.memory_model, problem.contention,
                   MappingProxyType({i: slot[d] for i, d in problem.pins.items()}),
                   pipeline=one)


def check_pins(problem: Problem, n: int) -> None:
    """E712 where a pin names a device that starts no block of n: under `data_parallel N`
    a pin names the device of the first of the N pipelines (`hybridstage.replica_units`)."""
    m = len(problem.cluster.devices)
    reps = range(0, m - n + 1, n)
    strays = sorted({d for d in problem.pins.values() if d not in reps})
    if strays:
        devs = problem.cluster.devices
        raise InfeasibleError(Diagnostic(
            "E712", f"`data_parallel {n}` runs stage k of each pipeline on device k of a "
            f"block of {n}, and `{devs[strays[0]].name}` is pinned to but starts no block",
            None, ("pin to the first device of a block of "
                   f"{n} ({', '.join(devs[d].name for d in reps)}), or remove the pins",)))


def ceil_share(pipeline: Pipeline, n: int) -> int:
    """The micro-batches each of n pipelines takes at most."""
    return -(-pipeline.microbatches // n)
