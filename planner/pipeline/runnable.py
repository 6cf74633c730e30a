"""What torch's pipeline schedules cannot run as placed, for any plan of a pipeline.

planner simulates every placement under the plan's schedule (`planner.pipeline.schedule`:
1F1B with fewer micro-batches than stages warms up min(S - k - 1, M) forward passes, as
Megatron does; stages that do not loop over one chain under `interleaved` run as 1F1B).
`torch.distributed.pipelining`, which `planner export torch --pipeline` writes, is stricter:
`Schedule1F1B` needs at least as many micro-batches as stages, and
`ScheduleInterleaved1F1B` stage k on rank k mod D and micro-batches a multiple of its
rounds, max(1, M // D). `refusal` says which of these a plan breaks, so that `check` and
`solve` say it (`unrunnable`: W626), and `planner.solve` and `planner.read_plan` warn it,
before `export` refuses (E947) a plan planner has just reported.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import Diagnostic, Severity, Span
from ..model import Problem
from ..schedules import rounds
from .split import runs_as, split_of


def refusal(problem: Problem, placement: Sequence[int]) -> tuple[str, str] | None:
    """(why, what to change) when torch's schedule for `problem`'s pipeline cannot run
    `placement` as placed, else None (also for `objective makespan` and for a schedule
    torch runs whatever the micro-batches, `gpipe`)."""
    pipeline = problem.pipeline
    if pipeline is None or not problem.graph.ops:
        return None
    if not pipeline.schedule_spec.torch_limited:
        return None
    split = split_of(problem, placement)
    # as it runs, and is exported: `interleaved` stages that do not loop over the devices
    # (one stage per device) run as 1F1B, torch's `Schedule1F1B`, with its stage cap
    # (before, such a split was judged by the interleaved rounds: W626 of a plan the export
    # took, none of one with more stages than micro-batches, which it refused)
    ran = runs_as(split, pipeline)
    schedule = ran.schedule_spec
    m, s = pipeline.microbatches, split.stages
    names = [problem.cluster.devices[d].name for d in split.devices]
    cap = ran.stage_cap
    if pipeline.schedule_spec.virtual_stages and not schedule.virtual_stages \
            and len(set(names)) < s:  # interleaved stages that do not loop: torch cannot
        return (f"plan `{problem.name}`'s stages are on " + " -> ".join(names) + ": torch's "
                f"{pipeline.schedule_spec.torch_class} runs stage k on rank k mod D, and "
                "these do not loop over one chain of devices", "solve the plan with `--algo "
                "pipedp`: under `schedule interleaved` its stages loop over one chain")
    if cap is not None:
        if cap >= s or len(set(names)) < s:  # several stages on a device: one pass's plan
            return None
        n = ran.data_parallel if isinstance(ran.data_parallel, int) else 1  # N pipelines
        each = f" (each of its {n} pipelines runs {cap})" if n > 1 else ""
        return (f"plan `{problem.name}` runs {s} stages with {m} micro-batch(es){each}: "
                f"torch's {schedule.torch_class} (what `export torch --pipeline` writes) "
                "needs at least as many micro-batches as stages, and refuses it (planner "
                "simulates it as Megatron does, with fewer forward passes in flight)",
                f"set `microbatches {s * n}` (or more), or `schedule gpipe`")
    if not schedule.virtual_stages:
        return None
    chain = list(dict.fromkeys(names))
    r = rounds(len(chain), m)
    if m % r == 0:
        return None
    return (f"plan `{problem.name}` runs {m} micro-batches on {len(chain)} devices: torch's "
            f"{schedule.torch_class} needs a multiple of its rounds, max(1, {m} // "
            f"{len(chain)}) = {r}, and refuses it",
            f"set `microbatches` to a multiple of {len(chain)}")


def unrunnable(problem: Problem, placement: Sequence[int], span: Span | None = None
               ) -> Diagnostic | None:
    """W626 (at `span`) when torch's schedule cannot run `placement` as placed, else None:
    the one warning `check`, `solve`, `simulate` and the Python API give for it."""
    found = refusal(problem, placement)
    if found is None:
        return None
    why, change = found
    return Diagnostic("W626", why, span, (change,), severity=Severity.WARNING)
