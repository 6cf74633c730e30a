"""The optimizer state an export reports (`torch_pipeline.optimizer_state`) counts a tied
weight's copies on one device once by the memory model's rule, `cost.tied_duplicate_bytes`
(over the ties of backward ops, whose gradient and state the device keeps once, and of
their forward ops, whose weight the state leaves out once): it ran a loop of its own over
`graph.ties` beside that rule. GPT-2 style: the head tied to the embedding, Adam (each
backward op holds its forward op's params three times: gradient, two moments)."""

from __future__ import annotations

import itertools

import pytest

from planner import loads
from planner.cost import tied_duplicate_bytes
from planner.io.torch_pipeline import optimizer_state
from planner.model import Problem

MB = 1_000_000
UNITS = ("emb", "L0", "L1", "head")
SIZE = {"emb": 40, "L0": 7, "L1": 8, "head": 40}  # MB of params
BOTH = "tie emb, head { bytes 40 MB }  tie emb.bwd, head.bwd { bytes 120 MB }"


def _spec(devices: int, ties: str = BOTH, training: bool = True) -> Problem:
    last = devices - 1
    ops = [f"op {o} {{ time 1 ms; params {SIZE[o]} MB; output 1 MB }}" for o in UNITS]
    edges = [f"{a} -> {b}" for a, b in itertools.pairwise(UNITS)]
    if training:
        ops += [f"op {o}.bwd {{ time 2 ms; params {3 * SIZE[o]} MB; output 1 MB; "
                f"backward_of {o} }}" for o in UNITS]
        edges += [f"{o} -> {o}.bwd" for o in UNITS]
        edges += [f"{b}.bwd -> {a}.bwd" for a, b in itertools.pairwise(UNITS)]
        edges += [f"colocate {o}, {o}.bwd" for o in UNITS]
    else:
        ties = ties.split("  ")[0]  # the forward ops' tie alone
    return loads(f"""
cluster c {{ device d[0..{last}] {{ memory 1 GiB }}
            link d[0..{last}] <-> d[0..{last}] {{ bandwidth 10 GB/s }} }}
graph g {{
  {" ".join(ops)}
  {" ".join(edges)}
  {ties}
}}
plan p {{ graph g; cluster c; objective pipeline; microbatches 4; schedule 1f1b }}
""").plan("p")


def _placement(problem: Problem, where: tuple[int, ...]) -> list[int]:
    """Each op on its unit's device (`where`, in `UNITS` order)."""
    device = dict(zip(UNITS, where, strict=True))
    return [device[op.name.removesuffix(".bwd")] for op in problem.graph.ops]


def _state(problem: Problem, where: tuple[int, ...]) -> dict[str, int]:
    return optimizer_state(problem, _placement(problem, where),
                           range(len(problem.cluster.devices)))


@pytest.mark.parametrize(("devices", "where", "ties", "want"), [
    # the tie split over two devices: each holds its copy's state (2 x 40 MB)
    (2, (0, 0, 1, 1), BOTH, [80 + 14, 16 + 80]),
    # interleaved: rank 0 runs stages 0 and 3 of 3 ranks, so holds both copies, one state
    (3, (0, 1, 2, 0), BOTH, [80, 14, 16]),
    (4, (0, 1, 2, 3), BOTH, [80, 14, 16, 80]),
    (4, (0, 0, 0, 0), BOTH, [80 + 14 + 16 + 80 - 80, 0, 0, 0]),
    (2, (1, 0, 0, 1), BOTH, [14 + 16, 80]),
    # only the backward ops tied: 160 MB of state less the 120 MB of one copy
    (3, (0, 1, 2, 0), "tie emb.bwd, head.bwd { bytes 120 MB }", [40, 14, 16]),
    # only the forward ops tied: the weight, subtracted twice, added back once
    (3, (0, 1, 2, 0), "tie emb, head { bytes 40 MB }", [200, 14, 16]),
], ids=["split", "interleaved", "4-devices", "1-device", "head-first", "backward-tie",
        "forward-tie"])
def test_the_state_of_a_tied_embedding_as_before(devices: int, where: tuple[int, ...],
                                                 ties: str, want: list[int]) -> None:
    """The figures of the loop optimizer_state ran before (the same with the rule)."""
    got = _state(_spec(devices, ties), where)
    assert got == {f"d{d}": w * MB for d, w in enumerate(want)}


def _counted(problem: Problem, placement: list[int]) -> list[int]:
    """Per device, the params the plan's memory counts: each op's, less the tied copies
    `cost.tied_duplicate_bytes` counts once."""
    n = len(problem.cluster.devices)
    held = [0] * n
    for op, d in zip(problem.graph.ops, placement, strict=True):
        held[d] += op.params_bytes
    twice = tied_duplicate_bytes(problem.graph, placement, n)
    return [h - t for h, t in zip(held, twice, strict=True)]


@pytest.mark.parametrize("devices", [2, 3, 4])
def test_the_state_is_the_trained_params_less_the_weights_by_the_memory_rule(
        devices: int) -> None:
    """Under every placement of the units, the state on a device is what the memory model
    counts of the training graph's params there (weight, gradient, state) less twice what
    it counts of the weights alone (the inference graph; a gradient is a weight's size):
    both by `cost.tied_duplicate_bytes`, so a rule of its own that disagreed with the
    memory model's fails here."""
    train, infer = _spec(devices), _spec(devices, training=False)
    for where in itertools.product(range(devices), repeat=len(UNITS)):
        trained = _counted(train, _placement(train, where))
        weights = _counted(infer, _placement(infer, where))
        want = {f"d{d}": t - 2 * w for d, (t, w) in enumerate(zip(trained, weights, strict=True))}
        assert _state(train, where) == want, where


def test_the_rule_over_chosen_ties() -> None:
    """`tied_duplicate_bytes(..., among)` counts only the ties whose holders are all
    `among`: the backward ops' or the forward ops'."""
    p = _spec(3)
    g, place = p.graph, _placement(p, (0, 1, 2, 0))
    assert tied_duplicate_bytes(g, place, 3) == [160 * MB, 0, 0]
    assert tied_duplicate_bytes(g, place, 3, g.backward_of) == [120 * MB, 0, 0]
    assert tied_duplicate_bytes(g, place, 3, set(g.backward_of.values())) == [40 * MB, 0, 0]
    assert tied_duplicate_bytes(g, place, 3, ()) == [0, 0, 0]
