"""Where pipeilp's model has no placement that fits and proves nothing (E709), it still
does what the other algorithms and its docs say: under `interleaved` the contiguous split
planned for 1F1B is returned (docs/pipelines.md: "where ... its model misses a split that
fits, the contiguous split planned for 1F1B (the fallback) is returned"), and its E709
names the changes with which a split fits, as pipedp's E707 and its own E708 do."""

from __future__ import annotations

import pytest

import planner
from planner.algorithms.exact import backends
from planner.errors import SearchLimitError

pytestmark = pytest.mark.skipif(not backends.available("highs"),
                                reason="HiGHS (highspy) is not installed")

#: four layers of 1000 B activations; 5000 B devices hold all four as one stage (1F1B)
LAYERS = ("graph g { " + "".join(
    f"op f{k} {{time 1 ms; params 100 B; output 1000 B}}; op b{k} {{time 2 ms; output 10 B; "
    f"backward_of f{k}}}; " for k in range(4))
    + "f0 -> f1 -> f2 -> f3 -> b3 -> b2 -> b1 -> b0; f0 -> b0; f1 -> b1; f2 -> b2 }\n")


def test_interleaved_returns_the_1f1b_split_its_model_misses() -> None:
    # before: E709 "no contiguous split fits, even recomputing", exit 6, where pipedp and
    # auto plan the four layers on d0, run as 1F1B (4410 B of 5000)
    p = planner.loads(
        "cluster c { device d[0..1] { memory 5000 B }; link d[*] <-> d[*] { bandwidth 1 GB/s } }\n"
        + LAYERS + "plan p { graph g; cluster c; objective pipeline; microbatches 4; "
        "schedule interleaved; stages_per_device 2 }\n").plan("p")
    mine = planner.solve(p, "pipeilp", time_limit_s=5)
    theirs = planner.solve(p, "pipedp")
    assert mine.feasible and mine.status == "fallback", mine.breaks
    assert "1f1b contiguous split" in mine.info["kept"]
    assert mine.pipeline.iteration_s == pytest.approx(theirs.pipeline.iteration_s)
    assert max(mine.pipeline.memory_bytes) <= 5000


def test_e709_names_the_micro_batches_with_which_a_split_fits() -> None:
    # before: "give the devices more `memory`" alone, where pipedp, auto, hybrid and search
    # say "a split fits with `microbatches 3`" (and all of them, pipeilp too, plan it)
    text = (
        "cluster c { device d[0..2] { memory 7803 B }; link d[*] <-> d[*] { bandwidth 1 GB/s } }\n"
        "graph g { op a0 {time 1 ms; params 3000 B; output 500 B}; op ba0 {time 1 ms; "
        "output 10 B; backward_of a0}; op a1 {time 1 ms; params 3000 B; output 100 B}; "
        "op ba1 {time 1 ms; output 1000 B; backward_of a1}; op a2 {time 1 ms; params 3000 B; "
        "output 500 B}; op ba2 {time 1 ms; output 10 B; backward_of a2}; "
        "a0 -> a1 -> a2 -> ba2 -> ba1 -> ba0; a0 -> ba0; a1 -> ba1 }\n"
        "plan p { graph g; cluster c; objective pipeline; microbatches 8; schedule 1f1b }\n")
    with pytest.raises(SearchLimitError) as err:
        planner.solve(planner.loads(text).plan("p"), "pipeilp", time_limit_s=5)
    (d,) = err.value.diagnostics
    assert d.code == "E709"
    assert any("a split fits with `microbatches 3`" in h for h in d.hints), d.hints
    fits = planner.solve(planner.loads(text.replace("microbatches 8", "microbatches 3"))
                         .plan("p"), "pipeilp", time_limit_s=5)
    assert fits.feasible
