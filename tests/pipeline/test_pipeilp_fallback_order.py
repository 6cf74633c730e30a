"""pipeilp's fallback warning says the order its plan runs in where that is not the schedule
asked: under `interleaved`, the plan it falls back to is not K stages per device in a
repeating chain (it was the relaxed plan on d1, d0, d2, d1, d3, no chain of stages, run in
GPipe's order; now a contiguous split run as 1F1B). The plan's note said so; the warning,
the line a user reads first on stderr, did not (`split.runs` is the one source of the
order run)."""

from __future__ import annotations

import logging

import pytest

import planner
from planner.algorithms import Options, run
from planner.algorithms.exact import backends
from planner.pipeline.split import runs, split_of

pytestmark = pytest.mark.skipif(not backends.available("highs"),
                                reason="HiGHS (highspy) is not installed")

# ten forward ops, each colocated with its backward op, on four unlike devices; the ILP's
# model in the order d1, d0, d2, d3 has no placement as fast as the relaxed plan outside
# it, which is kept
DEVICES = ((120, 1.0), (120, 0.5), (120, 0.5), (35, 1.0))  # MB, speed
# (d0-d2 of 80 MB and d3 of 20 MB before 2026-12-07's receive buffers, a stage's M x its
# input and output gradient: there pipeilp now finds nothing, E709; the relaxed plan was
# d3, d2, d1, d0, d1)
# (d2 of 40 MB before a recomputing stage held what it sends: the relaxed plan then was
# a chain of stages; d0-d2 of 60 MB before it held the model's outputs, the 4 forward ops
# no other reads, per micro-batch in flight: then nothing was found, E709)
# per link d -> e (every ordered pair, in order): GB/s, us
LINKS = ((20, 0), (5, 10), (1, 0), (20, 10), (1, 0), (1, 10), (5, 0), (20, 10), (5, 0),
         (1, 0), (20, 10), (20, 0))
# per op: forward ms, output MB, params MB, backward ms, backward output MB
OPS = ((4, 6, 4, 12, 4), (5, 6, 4, 3, 3), (3, 8, 4, 15, 1), (3, 3, 4, 11, 4), (4, 2, 0, 4, 3),
       (1, 5, 4, 9, 4), (6, 2, 2, 10, 4), (5, 8, 4, 7, 2), (3, 2, 4, 4, 3), (4, 6, 4, 5, 4))
# per edge between forward ops: producer, consumer, the gradient's MB back
EDGES = ((0, 1, 3), (0, 2, 1), (1, 3, 1), (2, 3, 3), (0, 4, 4), (0, 5, 2), (3, 5, 6),
         (3, 6, 8), (0, 7, 2), (7, 8, 4), (4, 9, 4))


def spec() -> str:
    pairs = [(d, e) for d in range(4) for e in range(4) if d != e]
    lines = ["cluster c {",
             *(f"  device d{d} {{ memory {mb} MB; speed {speed} }}"
               for d, (mb, speed) in enumerate(DEVICES)),
             *(f"  link d{d} -> d{e} {{ bandwidth {gbs} GB/s latency {us} us }}"
               for (d, e), (gbs, us) in zip(pairs, LINKS, strict=True)), "}", "graph g {"]
    for i, (f, out, params, b, grad) in enumerate(OPS):
        lines += [f"  op u{i} {{ time {f} ms; output {out} MB; params {params} MB }}",
                  f"  op u{i}.bwd {{ time {b} ms; output {grad} MB; backward_of u{i} }}",
                  f"  u{i} -> u{i}.bwd", f"  colocate u{i}, u{i}.bwd"]
    for a, c, grad in EDGES:
        lines += [f"  u{a} -> u{c}", f"  u{c}.bwd -> u{a}.bwd {{ bytes {grad} MB }}"]
    lines += ["}", "plan p { graph g; cluster c; objective pipeline; microbatches 2",
              "         schedule interleaved; stages_per_device 2 }"]
    return "\n".join(lines)


def test_the_fallback_warning_says_the_order_the_plan_runs_in(
        caplog: pytest.LogCaptureFixture) -> None:
    problem = planner.loads(spec()).plan("p")
    assert problem.pipeline is not None and problem.pipeline.schedule == "interleaved"
    with caplog.at_level(logging.WARNING, logger="planner"):
        solution = run("pipeilp", problem, Options())
    assert solution.status == "fallback"
    ran = runs(problem, split_of(problem, solution.plan.placement), problem.pipeline)
    # (gpipe's, the relaxed plan's, before the recomputing DP's second pass under GPipe's
    # counts, `warm._deadlock_counts`, gave its warm starts a contiguous split, run as
    # 1f1b: 176.6 ms an iteration, against the relaxed plan's 184.8)
    assert ran.schedule == "1f1b"
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
                 and "falling back" in r.getMessage()]
    # before: "... the pipeilp (relaxed) plan, outside it, is kept", no order named
    assert warning.endswith(f"; it runs in {ran.schedule}'s order, not interleaved's (the "
                            "plan's note says why)")
