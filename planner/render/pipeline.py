"""A pipeline plan for people and machines: its run, its bound, and the plans beside it.

`pipeline_json` is the `pipeline` object of `solve --json` and `simulate --json` under
`objective pipeline`; `pipeline_report` the terminal section. Both show the same figures:
the iteration and the time per micro-batch (simulated), the period T (the busiest
device's compute and transfers for one micro-batch) with its lower bound and the gap
between them, the bubble, each stage, each device's memory under the pipeline model, and
the comparison rows (`report.pipecompare`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..model import Problem
from ..pipeline.bound import PipelineBound
from ..pipeline.schedule import PipelineRun
from ..pipeline.split import fits
from ..pipeline.units import units
from ..pipeline.verdict import memory_words
from ..report.views import PipelineRow
from ..units import format_bytes_of, format_seconds
from .figures import format_gap


def _t(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def period_gap(run: PipelineRun, bound: PipelineBound) -> float | None:
    """(T - bound) / bound: how far above the best possible period T is, at most (None
    where a proof says no plan fits: there is no best period; `PipelineBound.gap`)."""
    return bound.gap(run.period_s)


def pipeline_json(problem: Problem, rows: Sequence[PipelineRow], bound: PipelineBound,
                  notes: Sequence[str] = ()) -> dict[str, Any]:
    """The `pipeline` object (the last row is the plan reported; `notes`: how memory
    shaped the plan, rows left out)."""
    run = rows[-1].run
    pipeline = problem.pipeline
    assert pipeline is not None
    ops, devs = problem.graph.ops, problem.cluster.devices
    return {
        "schedule": pipeline.schedule,
        "schedule_run": run.schedule,
        "microbatches": pipeline.microbatches,
        "stages_per_device": pipeline.stages_per_device,
        "data_parallel": pipeline.data_parallel,
        "microbatch_size": pipeline.microbatch_size,
        "iteration_s": _t(run.iteration_s),
        "time_per_microbatch_s": _t(run.time_per_microbatch_s),
        "bubble_fraction": run.bubble_fraction,
        "period_s": _t(run.period_s),
        "period_bound_s": bound.period_s,
        "period_bound_reason": bound.reason,
        "period_gap": period_gap(run, bound),
        "no_plan": bound.no_plan or None,
        "iteration_bound_s": bound.iteration_s,
        "allreduce_s": _t(run.allreduce_s),
        "fits": fits(problem, run.memory_bytes),
        "notes": [n for n in (run.note, *notes) if n],
        "throughput": run.throughput,
        "stages": [{"devices": [devs[d].name for d in s.devices],
                    "ops": [ops[i].name for i in s.ops], "replicas": len(s.devices),
                    "busy_s": s.busy_s, "load_s": _t(s.load_s),
                    "allreduce_s": s.allreduce_s} for s in run.stages],
        "devices": [{"name": dev.name, "busy_s": run.busy_s[d], "load_s": run.loads_s[d],
                     "memory_bytes": int(run.memory_bytes[d]),
                     "memory_cap_bytes": dev.memory_bytes} for d, dev in enumerate(devs)],
        "compared": [{"plan": r.label, "algorithm": r.algorithm,
                      "stages": len(r.run.stages), "period_s": _t(r.run.period_s),
                      "iteration_s": _t(r.run.iteration_s),
                      "time_per_microbatch_s": _t(r.run.time_per_microbatch_s),
                      "bubble_fraction": r.run.bubble_fraction, "fits": r.fits}
                     for r in rows],
    }


def pipeline_report(problem: Problem, rows: Sequence[PipelineRow], bound: PipelineBound,
                    notes: Sequence[str] = ()) -> Group:
    """The terminal section of a pipeline plan (the last row is the plan reported)."""
    run = rows[-1].run
    pipeline = problem.pipeline
    assert pipeline is not None
    devs = problem.cluster.devices
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    asked = pipeline.schedule + (f" ({pipeline.stages_per_device} stages per device)"
                                 if pipeline.schedule_spec.virtual_stages else "")
    head.add_row("pipeline", f"{asked}, {pipeline.microbatches} micro-batch(es), "
                 f"{len(run.stages)} stage(s)")
    head.add_row("iteration (simulated)", f"{format_seconds(run.iteration_s)} "
                 f"({format_seconds(run.time_per_microbatch_s)} per micro-batch), bound "
                 f"{format_seconds(bound.iteration_s)}")
    gap = (f"no gap: no plan fits ({bound.no_plan})" if bound.no_plan else
           f"at most {format_gap(period_gap(run, bound))} above the best period")
    head.add_row("period T", f"{format_seconds(run.period_s)}, bound "
                 f"{format_seconds(bound.period_s)} ({bound.reason}): {gap}")
    head.add_row("bubble", f"{run.bubble_fraction:.1%}")
    head.add_row("throughput", f"{rate(run.throughput)} samples/s "
                 f"({pipeline.microbatch_size} per micro-batch)")
    if run.allreduce_s:
        head.add_row("all-reduce", allreduce_line(problem, run))
    if not fits(problem, run.memory_bytes):
        head.add_row("memory", Text.assemble(("does not fit", "red"), ": ",
                                             memory_words(problem, run), " (devices below)"))
    for note in (run.note, *notes):
        if note:
            head.add_row("note", note)
    stages = _stages_table(problem, run)
    memory = Table(title="pipeline memory (params once, " + (
        "activations per micro-batch in flight, a receive buffer per micro-batch)"
        if units(problem).training else
        "every micro-batch's stage inputs and outputs, one's activations: inference)"),
        title_justify="left")
    for col in ("device", "held", "cap"):
        memory.add_column(col, justify="left" if col == "device" else "right")
    for d, dev in enumerate(devs):
        if run.memory_bytes[d]:
            held, cap = format_bytes_of(int(run.memory_bytes[d]), dev.memory_bytes)
            if run.memory_bytes[d] > dev.memory_bytes:
                held = f"[red]{held}[/red]"
            memory.add_row(dev.name, held, cap)
    compared = Table(title="compared, under the same pipeline", title_justify="left")
    for col in ("plan", "algorithm", "stages", "period T", "iteration", "per micro-batch",
                "bubble", "fits"):
        compared.add_column(col, justify="left" if col in ("plan", "algorithm") else "right")
    for r in rows:
        compared.add_row(r.label, r.algorithm, str(len(r.run.stages)),
                         format_seconds(r.run.period_s), format_seconds(r.run.iteration_s),
                         format_seconds(r.run.time_per_microbatch_s),
                         f"{r.run.bubble_fraction:.1%}", "yes" if r.fits else "[red]no[/red]")
    return Group(Text(""), head, Text(""), stages, memory, compared)


def allreduce_line(problem: Problem, run: PipelineRun) -> str:
    """What the iteration's all-reduces are: the replicated stages', the tied weights'."""
    what = []
    if any(len(s.devices) > 1 for s in run.stages):
        what.append("the replicated stages' gradients among their replicas")
    if problem.graph.ties:
        what.append("the tied weights' gradients, summed across their holders' devices")
    side = ""
    if run.allreduces:  # rings on other devices overlap: their sum may pass the iteration
        span = max(a.end_s for a in run.allreduces) - min(a.start_s for a in run.allreduces)
        if run.allreduce_s > span * (1 + 1e-9):
            side = (f" (summed over rings that overlap: {format_seconds(span)} from the "
                    "first start to the last end)")
    return f"{format_seconds(run.allreduce_s)} per iteration{side}: " + "; ".join(what)


def stage_columns(run: PipelineRun) -> tuple[str, str]:
    """The stage table's busy and load headers: a replicated stage's busy time is the sum
    of its replicas' (`Stage.busy_s`, past the iteration where they run side by side) and
    its load each replica's, so the headers say which where a stage has replicas (short:
    the device column names the replicas, and wraps first)."""
    if any(len(s.devices) > 1 for s in run.stages):
        return "busy (sum)", "load (each)"
    return "busy", "load"


def _stages_table(problem: Problem, run: PipelineRun) -> Table:
    """Each stage: its device (and its replicas'), ops, busy time and load."""
    devs = problem.cluster.devices
    stages = Table(title="stages", title_justify="left")
    for col in ("stage", "device", "ops", *stage_columns(run)):
        stages.add_column(col, justify="left" if col in ("device",) else "right")
    for k, s in enumerate(run.stages):
        others = [devs[d].name for d in s.devices[1:]]
        noun = "replica" if len(others) == 1 else "replicas"
        where = devs[s.device].name + (f" (+{len(others)} {noun}: {', '.join(others)})"
                                       if others else "")
        stages.add_row(str(k), where, str(len(s.ops)), format_seconds(s.busy_s),
                       format_seconds(s.load_s))
    return stages


def rate(x: float) -> str:
    """Four significant digits, never an exponent (`3.615e+06` read as an error; now
    `3615000`, `0.0004938`, `87.4`)."""
    if not math.isfinite(x) or x <= 0:
        return f"{x:g}"
    digits = max(0, 3 - math.floor(math.log10(x)))
    text = f"{float(f'{x:.4g}'):.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
