"""The memory model counts the micro-batches in flight of the schedule a split runs: under
`interleaved`, a split whose stages are not K per device in a repeating chain (or are
replicated) runs as 1F1B (`split.runs_as`), and `stage_bytes` counts 1F1B's for it, as
the run does, not the interleaved warm-up (which judged splits that fit as run too big)."""

from __future__ import annotations

import dataclasses
import random

import pytest
from pipe_support import random_spec

from planner.algorithms import autopipe
from planner.model import Pipeline, Problem
from planner.pipeline.schedule import run
from planner.pipeline.split import Split, fits, split_of, stage_bytes

INTERLEAVED = Pipeline(4, "interleaved", 2)


def _problem(seed: int, pipe: Pipeline,
             memories: tuple[int, ...] = (40, 60, 200)) -> Problem:
    return dataclasses.replace(random_spec(seed, 6, 3, training=True, memories=memories),
                               pipeline=pipe)


def test_split_run_as_1f1b_fits_by_the_model() -> None:
    # seed 900, memories doubled (the same graph): d1 holds 80 MB; two stages on d0, d1 run
    # as 1F1B, d1 holding 76 MB: 40 MB of its micro-batch in flight and 4 x 9 MB receive
    # buffers for its input (was judged 102 MB, 138 MB with those buffers: the interleaved
    # warm-up's micro-batches in flight). Before 2026-12-07's buffers: 40 MB on 40 MB.
    p = _problem(900, INTERLEAVED, memories=(80, 120, 400))
    split = Split((0, 2, 6), (0, 1))
    ran = run(p, split.placement(p), INTERLEAVED)
    assert ran.schedule == "1f1b"
    assert fits(p, ran.memory_bytes)
    held = stage_bytes(p, split, INTERLEAVED)
    assert held == pytest.approx(list(ran.memory_bytes), rel=1e-12)
    assert held[1] == pytest.approx((40 + 4 * 9) * 1e6, rel=1e-12)
    assert fits(p, held)
    # auto judges a graph too big to simulate by the model: the same verdict as the run
    assert autopipe._iteration(p, split.placement(p), INTERLEAVED, simulated=False)[1]


def test_replicated_split_counts_1f1b() -> None:
    p = _problem(901, INTERLEAVED)
    split = Split((0, 1, 3, 4, 6), (0, 1, 0, 1))  # interleaves, but d1 is replicated
    replicas = {1: (1, 2)}
    one = dataclasses.replace(INTERLEAVED, schedule="1f1b")
    assert stage_bytes(p, split, INTERLEAVED, replicas=replicas) == stage_bytes(
        p, split, one, replicas=replicas)


@pytest.mark.parametrize("pipe", [INTERLEAVED, Pipeline(8, "interleaved", 2),
                                  Pipeline(4, "1f1b"), Pipeline(4, "gpipe")],
                         ids=lambda x: f"{x.schedule}-{x.microbatches}")
def test_model_never_below_the_run(pipe: Pipeline) -> None:
    """On random splits that run without a deadlock, the model holds at least what the
    run holds (a deadlock runs GPipe's order, which only the simulation finds)."""
    checked = 0
    for seed in range(900, 904):
        p = _problem(seed, pipe)
        rng = random.Random(seed)
        for _ in range(12):
            s = rng.randint(2, 6)
            cuts = sorted(rng.sample(range(1, 6), s - 1))
            devices = tuple(rng.randrange(3) for _ in range(s))
            split = split_of(p, Split((0, *cuts, 6), devices).placement(p))
            ran = run(p, split.placement(p), pipe)
            if "deadlock" in ran.note:
                continue
            checked += 1
            model = stage_bytes(p, split, pipe)
            for a, b in zip(model, ran.memory_bytes, strict=True):
                assert a >= b * (1 - 1e-12), (seed, split)
    assert checked >= 10
