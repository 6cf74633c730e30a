"""`solve`'s comparison rows under `objective pipeline` are bounded as the plan's own run
is: a one-pass plan run as the pipeline relays every tensor that skips stages, and heft's
plan of a 5,346-op GNMT on 8 GPUs made 447 stages and 318,810 relay hops a micro-batch:
66 s of the report's 80 at 32 micro-batches (the whole `solve --time-limit 1`: 110 s, now
6 s). A row whose run would pass the `pipeline_copies` limit, relays counted, is left out
with a note instead."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import planner
from planner import limits
from planner.report import pipecompare

SPEC = Path(__file__).resolve().parents[2] / "docs" / "examples" / "mlp_pipeline.plan"


def test_a_row_past_the_copies_limit_relays_counted_is_a_note() -> None:
    problem = next(iter(planner.load(SPEC).plans.values()))
    assert problem.pipeline is not None
    plan = planner.solve(problem).plan
    rows, notes, stopped = pipecompare.rows(problem, plan.placement, "auto")
    assert [r.label for r in rows] == ["one device", "uniform split", "makespan plan",
                                       "this plan"] and not notes and not stopped
    # the plan's own copies (micro-batches x (ops + edges)) are within the limit: the
    # spec loads; the makespan plan's 2 relay hops a micro-batch take it past
    own = problem.pipeline.microbatches * (len(problem.graph.ops) + len(problem.graph.edges))
    with limits.using(dataclasses.replace(limits.DEFAULTS, pipeline_copies=own)):
        rows, notes, _ = pipecompare.rows(problem, plan.placement, "auto")
    assert [r.label for r in rows] == ["one device", "uniform split", "this plan"]
    assert notes == [f"makespan plan: msct's, not run as the pipeline: its 2 stages relay 2 "
                     f"tensor hops a micro-batch, {own + 8} copies in all, over the "
                     f"`pipeline_copies` limit ({own})"]
