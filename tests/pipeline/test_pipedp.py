"""pipedp: exact over contiguous splits (issue 26, item 3a).

Brute force enumerates every contiguous split of the units into S stages and every
sequence of S distinct devices, and keeps the least period among those that fit the
memory model; pipedp's best split per stage count must equal it, on random graphs up to
12 units and 4 heterogeneous devices (speeds, memories, link bandwidths and latencies).
"""

from __future__ import annotations

import itertools
import math

import pytest
from pipe_support import chain_spec, random_spec

from planner import loads
from planner.algorithms import pipedp, run
from planner.errors import InfeasibleError
from planner.model import Problem
from planner.pipeline.bound import pipeline_bound
from planner.pipeline.split import Split, fits, stage_bytes, stage_loads
from planner.pipeline.splitdp import best_splits, search_space
from planner.pipeline.units import units
from planner.simulate import simulate


def _brute_force(problem: Problem) -> dict[int, float]:
    """Per stage count: the least period of a split that fits (module docstring)."""
    pipeline = problem.pipeline
    assert pipeline is not None
    n, m = units(problem).count, len(problem.cluster.devices)
    caps = [d.memory_bytes for d in problem.cluster.devices]
    best: dict[int, float] = {}
    for s in range(1, min(n, m) + 1):
        for cuts in itertools.combinations(range(1, n), s - 1):
            bounds = (0, *cuts, n)
            for chain in itertools.permutations(range(m), s):
                split = Split(bounds, chain)
                held = stage_bytes(problem, split, pipeline)
                if any(h > c for h, c in zip(held, caps, strict=True)):
                    continue
                period = max(stage_loads(problem, split))
                if period < best.get(s, math.inf):
                    best[s] = period
    return best


CASES = [(seed, u, d, training, sched)
         for seed, (u, d) in enumerate([(5, 2), (6, 3), (8, 3), (9, 4), (12, 4), (12, 3),
                                        (7, 4), (10, 2)])
         for training, sched in [(True, "1f1b"), (True, "gpipe"), (False, "1f1b")]]


@pytest.mark.parametrize(("seed", "n_units", "devices", "training", "schedule"), CASES)
def test_the_dp_equals_brute_force(seed: int, n_units: int, devices: int, training: bool,
                                   schedule: str) -> None:
    p = random_spec(seed, n_units, devices, training=training, schedule=schedule)
    space = search_space(p, p.pipeline)
    assert space.tried == space.total  # every distinct chain was tried: the claim is exactness
    assert len(space.cuts) == units(p).count + 1  # and every boundary
    found = best_splits(p, p.pipeline)
    expected = _brute_force(p)
    assert sorted(found) == sorted(expected)
    for s, f in found.items():
        assert f.period_s == pytest.approx(expected[s], rel=1e-12, abs=1e-15), s
        assert max(stage_loads(p, f.split)) == pytest.approx(f.period_s, rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_every_pipedp_plan_is_simulated_valid_and_above_the_bound(seed: int) -> None:
    p = random_spec(100 + seed, 10, 3, training=seed % 2 == 0)
    try:
        sol = run("pipedp", p)
    except InfeasibleError as err:
        assert "E707" in str(err)
        assert not _brute_force(p)
        return
    result = simulate(p, sol.plan)
    # the one-pass simulation judges pins, colocation and the static memory of one
    # micro-batch; the pipeline's own memory is the split model's, checked here
    assert not [v for v in result.violations if v.kind != "memory"], result.violations
    from planner.pipeline.schedule import run as run_pipeline

    r = run_pipeline(p, sol.plan.placement, p.pipeline)
    caps = [d.memory_bytes for d in p.cluster.devices]
    assert all(h <= c for h, c in zip(r.memory_bytes, caps, strict=True))
    assert r.period_s >= pipeline_bound(p).period_s * (1 - 1e-12)
    assert r.iteration_s >= pipeline_bound(p).iteration_s * (1 - 1e-12)
    assert sol.info["iteration_s"] == pytest.approx(r.iteration_s)


def test_memory_shapes_the_split_and_says_how() -> None:
    # under 1F1B stage 1 of 4 holds 3 micro-batches of its own 100 MB and the 100 MB it
    # receives, and a receive buffer per micro-batch for its input and its output's
    # gradient: 3 * (100 + 100) + 4 * (100 + 100) = 1400 MB > 1300 MB; one stage per unit
    # does not fit, three stages (16 ms) do: [f0 f1 | f2 | f3] holds at most 2 * (100 +
    # 100) + 4 * (100 + 100) = 1200 MB (on d1)
    roomy = chain_spec([4, 4, 4, 4], [4, 4, 4, 4], microbatches=4, activation="100 MB",
                       memory="2 GiB")
    tight = chain_spec([4, 4, 4, 4], [4, 4, 4, 4], microbatches=4, activation="100 MB",
                       memory="1300 MB")
    free = run("pipedp", roomy)
    shaped = run("pipedp", tight)
    assert "memory_note" not in free.info
    assert "memory shaped this split" in str(shaped.info["memory_note"])
    assert shaped.info["period_s"] > free.info["period_s"]
    assert shaped.info["stages"] == 3 and free.info["stages"] == 4  # by simulated iteration
    # 1400 MB = 1.30 GiB, 1300 MB = 1.21 GiB; [f0 f1 | f2 | f3] runs in 64 ms ([f0 | f1 |
    # f2 f3], 80 ms, fits too)
    assert ("without the caps, 4 stage(s) would give a period of 8.000 ms and a simulated "
            "iteration of 56.001 ms (this split: 16.000 ms and 64.001 ms), but need 1.30 GiB "
            "on d1, which holds 1.21 GiB") in str(shaped.info["memory_note"])


def test_no_split_fits_is_e707() -> None:
    p = chain_spec([4, 4], [4, 4], microbatches=8, activation="1 GB", memory="1 GB")
    with pytest.raises(InfeasibleError, match="E707"):
        run("pipedp", p)


def test_pins_are_kept() -> None:
    # d0 200 MB, d1 and d2 60 MB; 2 micro-batches, so that with the receive buffers a
    # split still fits with the first unit on d2
    p = random_spec(7, 8, 3, training=True, microbatches=2, memories=(60, 60, 200))
    from dataclasses import replace
    from types import MappingProxyType

    first = units(p).members[0][0]
    assert run("pipedp", p).plan.placement[first] != 2  # the pin binds
    pinned = replace(p, pins=MappingProxyType({first: 2}))
    sol = run("pipedp", pinned)
    assert sol.plan.placement[first] == 2
    assert not [v for v in simulate(pinned, sol.plan).violations if v.kind == "pin"]


@pytest.mark.parametrize("seed", range(4))
def test_pipedp_keeps_the_candidate_with_the_shortest_simulated_iteration(seed: int) -> None:
    from planner.pipeline.schedule import run as run_pipeline
    from planner.pipeline.splitdp import split_candidates

    p = random_spec(300 + seed, 9, 4, training=True)
    sol = run("pipedp", p)
    candidates = [f for found in split_candidates(p, p.pipeline).values() for f in found]
    runs = [run_pipeline(p, f.split.placement(p), p.pipeline).iteration_s for f in candidates]
    assert sol.info["iteration_s"] == min(runs)
    # the least period of each stage count is among them, and never faster
    for s, f in best_splits(p, p.pipeline).items():
        assert f in split_candidates(p, p.pipeline)[s]
        assert run_pipeline(p, f.split.placement(p), p.pipeline).iteration_s >= min(runs)


@pytest.mark.parametrize(("seed", "training"), [(43, True), (11, False), (0, True),
                                              (5, False)])
def test_auto_keeps_the_split_that_simulates_faster(seed: int, training: bool) -> None:
    from planner.pipeline.schedule import run_fits, run_planned

    # inference: more memory, every stage keeps every micro-batch's inputs and outputs
    p = random_spec(seed, 10, 4, training=training,
                    memories=(40, 60, 200) if training else (120, 180, 600))
    sol = run("auto", p)
    candidates = dict(sol.info["candidates"])
    fit = {}
    for name in ("pipedp", "uniform"):  # each as its own algorithm plans it
        ran, fit[name] = run_fits(p, run(name, p).plan.placement, p.pipeline)
        assert candidates[name] == ran
    # the cut moves start from pipedp's best candidates: never slower than pipedp
    assert candidates.get("pipedp, cuts moved", candidates["pipedp"]) <= candidates["pipedp"]
    # the fastest that fits (seed 43: the uniform split is faster, but with its receive
    # buffers needs 96 MB on d0 of 60 MB and 78 MB on d3 of 40 MB: without them it fit, and won)
    fastest = min(t for name, t in candidates.items() if fit.get(name, True))
    assert candidates[sol.info["chosen"]] == fastest
    # (a recomputing split, where the memory shaped pipedp's, runs with its `recompute`)
    chosen = run_planned(p, sol.plan.placement, p.pipeline, sol.info)
    assert chosen.iteration_s == fastest == sol.info["iteration_s"]
    assert fits(p, chosen.memory_bytes)


def test_auto_sizes_the_dp_to_its_time_limit() -> None:
    from planner.algorithms import Options
    from planner.pipeline.splitdp import (
        CELLS_PER_SECOND,
        DP_PASSES,
        MAX_CELLS,
        MIN_CELLS,
        cells_for,
    )

    assert cells_for(0.0) == MAX_CELLS  # no limit: all of it
    assert cells_for(10.0) == 10 * CELLS_PER_SECOND < MAX_CELLS
    assert cells_for(1.0) == CELLS_PER_SECOND and cells_for(1e-6) == MIN_CELLS
    # memories above the default: inference keeps every micro-batch's inputs and outputs
    p = random_spec(2, 40, 4, training=False, memories=(120, 180, 600))
    rows = sum(s * len(c) for s, c in search_space(p, p.pipeline).chains.items())
    tight = MIN_CELLS
    assert DP_PASSES * rows * 41**2 > tight  # so that the cuts are thinned below: the test can fail
    thinned = search_space(p, p.pipeline, tight)
    assert len(thinned.cuts) < units(p).count + 1
    sol = run("auto", p, Options(time_limit_s=tight / CELLS_PER_SECOND))
    # auto's pipedp candidate is the thinned DP's (here auto keeps it: the uniform split
    # runs faster but does not fit, hybrid's layout is no faster)
    dp = pipedp.place_within(p, Options(time_limit_s=tight / CELLS_PER_SECOND), tight).info
    assert dp["candidate_cuts"] == f"{len(thinned.cuts) - 1} of 40 unit boundaries"
    assert sol.info["candidates"]["pipedp"] == dp["iteration_s"] != pipedp.place(
        p, Options(time_limit_s=tight / CELLS_PER_SECOND)).info["iteration_s"]
    assert sol.info["compared_by"] == "simulated iteration"
    assert not [v for v in simulate(p, sol.plan).violations if v.kind != "memory"]
    again = run("auto", p, Options(time_limit_s=tight / CELLS_PER_SECOND))
    assert again.plan == sol.plan  # the limit, not the clock, sizes the work


def _brute_force_interleaved(problem: Problem, per: int) -> dict[int, float]:
    """Per stage count D * K: the least period (`resource_loads`) of a split that fits by
    the report's memory rule (`stage_bytes`), over every chain of D distinct devices
    repeated K times."""
    from planner.pipeline.split import fits, resource_loads

    pipeline = problem.pipeline
    assert pipeline is not None
    n, m = units(problem).count, len(problem.cluster.devices)
    best: dict[int, float] = {}
    for width in range(1, m + 1):
        s = width * per
        if s > n:
            break
        for cuts in itertools.combinations(range(1, n), s - 1):
            for chain in itertools.permutations(range(m), width):
                split = Split((0, *cuts, n), chain * per)
                if not fits(problem, stage_bytes(problem, split, pipeline)):
                    continue
                best[s] = min(best.get(s, math.inf), resource_loads(problem, split).period_s)
    return best


@pytest.mark.parametrize("seed", range(30))
def test_interleaved_with_caps_equals_brute_force_by_the_reports_rule(seed: int) -> None:
    import dataclasses

    from planner.model import Pipeline
    from planner.pipeline.splitdp import interleaved_exact

    inter = Pipeline(4, "interleaved", 2)
    p = dataclasses.replace(random_spec(500 + seed, 6 + seed % 4, 2 + seed % 2,
                                        training=True, microbatches=4), pipeline=inter)
    assert interleaved_exact(p, inter)
    found = {s: f.period_s for s, f in best_splits(p, inter).items() if s > 1}
    expected = {s: t for s, t in _brute_force_interleaved(p, 2).items() if s > 1}
    assert found == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("algo", ["pipedp", "auto"])
def test_no_time_limit_simulates_every_candidate(algo: str) -> None:
    # `--time-limit 0` (no limit) made the simulation budget inf // copies = nan: E999
    from planner.algorithms import Options

    p = random_spec(3, 8, 3, training=True)
    solution = run(algo, p, Options(time_limit_s=0))
    assert math.isfinite(solution.info["iteration_s"])
    if algo == "pipedp":
        assert solution.info["candidates_compared_by"].startswith("simulation")


def _pinned_on_twins(pins: str) -> Problem:
    """Four identical devices; five units of a training chain, some pinned."""
    ops = "\n".join(f"  op u{k} {{ time {2 + k % 3} ms; output 1 MB; params 1 MB }}\n"
                    f"  op u{k}.bwd {{ time 4 ms; output 1 MB; backward_of u{k} }}\n"
                    f"  u{k} -> u{k}.bwd" for k in range(5))
    chain = "\n".join(f"  u{k} -> u{k + 1}\n  u{k + 1}.bwd -> u{k}.bwd" for k in range(4))
    return loads("cluster c { device d[0..3] { memory 1 GB }\n"
                 "  link d[*] <-> d[*] { bandwidth 10 GB/s } }\n"
                 f"graph g {{\n{ops}\n{chain}\n}}\n"
                 f"plan p {{ graph g; cluster c; objective pipeline; microbatches 4\n{pins} }}"
                 ).plan("p")


@pytest.mark.parametrize("pins", ["pin u0 to d3", "pin u0 to d1; pin u4 to d0",
                                  "pin u2 to d2"])
def test_pins_tell_identical_devices_apart(pins: str) -> None:
    """Before: the chains of identical devices were tried once, from d0 up, whatever the
    pins: a unit pinned to d3 made every split E707 ("no contiguous pipeline split")."""
    p = _pinned_on_twins(pins)
    found = best_splits(p, p.pipeline)
    expected = {s: v for s, v in _brute_force(p).items() if v < math.inf}
    assert sorted(found) == sorted(expected)
    for s, f in found.items():
        assert f.period_s == pytest.approx(expected[s], rel=1e-12), s
    plan = run("pipedp", p).plan
    assert not simulate(p, plan).violations


def test_a_split_that_breaks_a_pin_neither_fits_nor_wins() -> None:
    """Before: the uniform split (which reads no pins) put u0 on d0 against `pin u0 to
    d3`, its comparison row said `fits yes`, and `auto` could choose it (E401)."""
    from planner.report.pipecompare import rows

    p = _pinned_on_twins("pin u0 to d3")
    uniform = run("uniform", p).plan.placement
    assert uniform[0] == 0
    compared, _, _ = rows(p, uniform, "uniform", (), {})
    assert [r.fits for r in compared if r.label.startswith("uniform")] == [False]
    chosen = run("auto", p)
    assert chosen.info["chosen"] != "uniform"
    assert chosen.plan.placement[0] == 3 and not simulate(p, chosen.plan).violations


@pytest.mark.parametrize(("seed", "schedule"), [(0, "1f1b"), (1, "gpipe")])
def test_the_dps_blocks_change_no_split(seed: int, schedule: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`splitdp.BLOCK_CELLS` sizes the DP's (starts x ends) blocks for speed alone: a block
    holds whole columns of ends, so blocks of two ends find every split and period that one
    block of them all does."""
    from planner.pipeline import splitdp

    p = random_spec(900 + seed, 20, 4, training=True, schedule=schedule,
                    memories=(100, 400))
    assert p.pipeline is not None
    space = splitdp.search_space(p, p.pipeline)
    found = {}
    for cells in (42, 1 << 30):  # 21 cuts: 2 ends a block, and all in one
        monkeypatch.setattr(splitdp, "BLOCK_CELLS", cells)
        # the DP itself: `split_candidates` keeps its first answer per problem
        candidates = splitdp._split_candidates(p, p.pipeline, None, True, space, True, {})
        found[cells] = {s: [(f.period_s, f.split) for f in fs]
                        for s, fs in candidates.items()}
    assert found[42] == found[1 << 30] and found[42]
