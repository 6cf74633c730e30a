"""The pipeline JSON records the optimizer step the script takes and the state the plan
counts: `planner export torch --pipeline -o` wrote the split, the schedule and the costs,
not the optimizer, though the script steps one (its OPTIMIZER, `--optimizer`, `--lr`) and
the plan's memory holds its state. Now `optimizer`: the name and learning rate the script
runs, the spec's optimizer (`counted`) and, per device, the state its memory counts (a
tied weight's copies on one device once). No torch needed."""

from __future__ import annotations

import dataclasses

from planner import loads
from planner.io.torch_pipeline import (
    SCRIPT_LR,
    Cost,
    TorchPipeline,
    TorchStage,
    optimizer_state,
    pipeline_document,
)

MB = 1_000_000

# Adam: each backward op holds its forward op's params three times (gradient, two moments);
# `e` and `o` share a 4 MB weight, as do their backward ops (gradient and state)
SPEC = """
cluster c { device d[0..1] { memory 1 GiB }  link d[0..1] <-> d[0..1] { bandwidth 10 GB/s } }
graph g {
  op e { time 1 ms; params 4 MB; output 1 MB }
  op h { time 1 ms; params 2 MB; output 1 MB }
  op o { time 1 ms; params 6 MB; output 1 MB }
  op e.bwd { time 2 ms; params 12 MB; output 0 B; backward_of e }
  op h.bwd { time 2 ms; params 6 MB; output 0 B; backward_of h }
  op o.bwd { time 2 ms; params 18 MB; output 0 B; backward_of o }
  e -> h  h -> o  e -> e.bwd  h -> h.bwd  o -> o.bwd  o.bwd -> h.bwd  h.bwd -> e.bwd
  colocate e, e.bwd  colocate h, h.bwd  colocate o, o.bwd
  tie e, o { bytes 4 MB }
  tie e.bwd, o.bwd { bytes 12 MB }
}
plan p { graph g; cluster c; objective pipeline; microbatches 2; schedule 1f1b }
"""


def _placement(devices: dict[str, int]) -> list[int]:
    problem = loads(SPEC).plan("p")
    return [devices[op.name.removesuffix(".bwd")] for op in problem.graph.ops]


def test_the_state_the_plan_counts_per_device() -> None:
    problem = loads(SPEC).plan("p")
    # the tie's holders on two devices: each holds its copy's state (8 MB of e's, 12 of o's)
    split = optimizer_state(problem, _placement({"e": 0, "h": 0, "o": 1}), [0, 1])
    assert split == {"d0": 8 * MB + 4 * MB, "d1": 12 * MB}
    # on one device the tied weight's state once: 8 + 4 + 12, less the 8 MB of its copy
    assert optimizer_state(problem, _placement({"e": 0, "h": 0, "o": 0}), [0]) == {
        "d0": 16 * MB}


def _pipeline(training: bool, optimizer: str | None) -> TorchPipeline:
    cost = Cost(1e-3, 4e-3, "1f1b", "", True)
    stages = (TorchStage(0, 0, "d0", "cpu", None, ("e", "h")),
              TorchStage(1, 1, "d1", "cpu", "o", ("o",)))
    return TorchPipeline("p", "1f1b", 2, training, stages, {"d0": "cpu", "d1": "cpu"},
                         {"e": "d0", "h": "d0", "o": "d1"}, cost, True, "", (), cost,
                         (("d0", "e"), ("d1", "o")), optimizer=optimizer,
                         optimizer_state={"d0": 12 * MB, "d1": 12 * MB})


def test_the_document_records_the_scripts_optimizer_and_the_state_counted() -> None:
    doc = pipeline_document(_pipeline(True, "adam"))
    assert doc["optimizer"] == {"name": "adam", "lr": SCRIPT_LR, "counted": "adam",
                                "state_bytes": {"d0": 12 * MB, "d1": 12 * MB}}
    # a spec that says no optimizer: the script steps SGD, which the plan did not count
    none = pipeline_document(_pipeline(True, None))["optimizer"]
    assert (none["name"], none["counted"]) == ("sgd", None)
    # inference: no step
    tp = dataclasses.replace(_pipeline(False, None), optimizer_state={"d0": 0, "d1": 0})
    assert pipeline_document(tp)["optimizer"] == {"name": None, "lr": None, "counted": None,
                                                  "state_bytes": {"d0": 0, "d1": 0}}
