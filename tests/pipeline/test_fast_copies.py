"""A pipeline run through the compiled simulator equals the reference's, to the bit.

`schedule.run` times the micro-batch copies with `fastsim.Evaluator.repeated` where the
kernel is loaded (the session's fixture loads it), and with `simulate` otherwise. On
random training and inference graphs, under GPipe, 1F1B and interleaved 1F1B, with
recomputation, replicated stages, tied weights, every contention model, splits whose
devices are not a chain (GPipe's stage-by-stage or micro-batch-first choice, 1F1B's
deadlock fallback): every field of the `PipelineRun` is the same float.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from pipe_support import random_spec

from planner import fastsim
from planner.fastsim import FastResult
from planner.model import Pipeline, Problem
from planner.pipeline import schedule
from planner.pipeline.schedule import PipelineRun, run
from planner.pipeline.split import Split
from planner.pipeline.units import units
from planner.simulate import SimResult


def _case(seed: int) -> tuple[Problem, tuple[int, ...], Pipeline, set[int], dict[int, Any]]:
    """A random problem, a split's placement, a pipeline, devices that recompute, and
    replica groups (representative -> group)."""
    rng = random.Random(seed)
    devices = rng.randint(2, 4)
    contention = rng.choice(["link", "device", "none"])
    p = random_spec(seed, rng.randint(2, 6), devices, training=rng.random() < 0.8,
                    microbatches=rng.randint(1, 6), tie=rng.random() < 0.3,
                    settings=f"; contention {contention}")
    n = units(p).count
    stages = rng.randint(1, min(n, 4))
    bounds = (0, *sorted(rng.sample(range(1, n), stages - 1)), n)
    kind = rng.choice(["gpipe", "1f1b", "interleaved"])
    if kind == "interleaved" and stages % 2 == 0 and devices >= stages // 2:
        where = tuple(k % (stages // 2) for k in range(stages))  # 2 virtual stages each
        pipeline = Pipeline(p.pipeline.microbatches, "interleaved", 2)  # type: ignore[union-attr]
    else:  # any devices, repeated or not: not always a chain
        where = tuple(rng.randrange(devices) for _ in range(stages))
        pipeline = Pipeline(p.pipeline.microbatches,  # type: ignore[union-attr]
                            "1f1b" if kind == "interleaved" else kind)
    placement = Split(bounds, where).placement(p)
    used = sorted(set(where))
    free = [d for d in range(devices) if d not in used]
    replicas = {}
    if free and rng.random() < 0.4:  # a stage's device and the idle devices
        rep = rng.choice(used)
        replicas[rep] = (rep, *free)
    recompute = {d for d in used if rng.random() < 0.3}
    return p, placement, pipeline, recompute, replicas


def _run(seed: int, monkeypatch: pytest.MonkeyPatch, fast: bool
         ) -> tuple[PipelineRun, list[type]]:
    """The case's run (on a problem of its own: runs are cached on the problem) and the
    types of the simulations behind it."""
    p, placement, pipeline, recompute, replicas = _case(seed)
    kinds: list[type] = []
    timed = schedule._timed

    def recorded(*args: Any) -> Any:
        out = timed(*args)
        kinds.append(type(out))
        return out

    with monkeypatch.context() as m:
        m.setattr(schedule, "_timed", recorded)
        if not fast:
            m.setattr(fastsim, "ready", lambda: False)
        return run(p, placement, pipeline, recompute, replicas), kinds


@pytest.mark.skipif(not fastsim.numba_available(), reason="numba is not installed")
@pytest.mark.parametrize("seed", range(60))
def test_runs_through_both_simulators_are_equal(seed: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    fast, kinds = _run(seed, monkeypatch, fast=True)
    ref, ref_kinds = _run(seed, monkeypatch, fast=False)
    assert set(kinds) <= {FastResult} and set(ref_kinds) <= {SimResult}
    assert len(kinds) == len(ref_kinds)
    assert repr(fast) == repr(ref)  # repr: every float to the bit (and -0.0 from 0.0)
    assert fast == ref


def test_the_random_cases_reach_each_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases above simulate copies (not only one device's sum), under each schedule,
    with replicas, recomputation, tied weights and a deadlock's fallback."""
    seen: set[str] = set()
    for seed in range(60):
        p, _, pipeline, recompute, replicas = _case(seed)
        got, kinds = _run(seed, monkeypatch, fast=False)
        if not kinds:
            continue
        seen.add(got.schedule)
        seen |= {"replicas"} if replicas else set()
        seen |= {"recompute"} if recompute else set()
        seen |= {"tie"} if p.graph.ties and got.allreduce_s else set()
        seen |= {"fallback"} if "deadlock" in got.note else set()
        seen |= {"inference"} if not units(p).training else set()
    assert seen >= {"gpipe", "1f1b", "interleaved", "replicas", "recompute", "tie",
                    "fallback", "inference"}, seen


def test_the_trace_keeps_the_reference_result() -> None:
    """`simulation` (`--trace`) reports `simulate`'s full result of the order run, whose
    figures are the run's (timed by the compiled simulator)."""
    for seed in range(60):
        p, placement, pipeline, recompute, replicas = _case(seed)
        sim = schedule.simulation(p, placement, pipeline, recompute, replicas)
        assert isinstance(sim.result, SimResult)
        if len(set(placement)) > 1:
            assert sim.result.busy_s == sim.run.busy_s, seed


@pytest.mark.skipif(not fastsim.numba_available(), reason="numba is not installed")
def test_a_process_loads_the_kernel_only_after_enough_copied_ops(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Not loaded yet, the kernel waits until `simulate` has run `FAST_AFTER_OPS` copied
    ops in the process (loading numba costs more than a short command's simulations)."""
    seed = next(s for s in range(60) if _run(s, monkeypatch, fast=False)[1])
    monkeypatch.setattr(fastsim, "loaded", lambda: False)
    monkeypatch.setattr(schedule, "_reference_ops", 0)
    monkeypatch.setattr(schedule, "FAST_AFTER_OPS", 1)
    _, kinds = _run(seed, monkeypatch, fast=True)
    assert kinds[0] is SimResult and set(kinds[1:]) <= {FastResult}
    assert schedule._reference_ops > 0
    _, kinds = _run(seed, monkeypatch, fast=True)
    assert set(kinds) == {FastResult}


def test_the_twins_page_gives_the_threshold() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "twins.md").read_text()
    assert f"simulated {schedule.FAST_AFTER_OPS:,} copied ops" in page
