"""One pipeline cost model (issue 38): the simulator, the split's figures and the DP agree.

Tensors that skip stages are relayed stage to stage (as `torch.distributed.pipelining`
passes them), so the transfers the simulator runs are, link by link, the ones the split's
model charges (`split.resource_loads`); the period T is the busiest resource (a device's
compute, a link or a channel's transfers), and `period_s`, the stage table and the device
view give one figure for it.
"""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
from pipe_support import chain_spec, random_spec

from planner import loads as load_text
from planner import schedules
from planner.cost import costs
from planner.model import Pipeline, Problem
from planner.pipeline import order, schedule
from planner.pipeline.split import Split, resource_loads, split_of
from planner.pipeline.units import units


def _random_split(p: Problem, rng: random.Random, chain: bool) -> Split:
    n, m = units(p).count, len(p.cluster.devices)
    s = rng.randint(2, min(n, 5 if not chain else m))
    bounds = (0, *sorted(rng.sample(range(1, n), s - 1)), n)
    if chain:
        devices = tuple(rng.sample(range(m), s))
    else:  # devices may come back (a plan that is not a chain), never twice in a row
        devices = [rng.randrange(m)]
        while len(devices) < s:
            devices.append(rng.choice([d for d in range(m) if d != devices[-1]]))
        devices = tuple(devices)
    return Split(bounds, devices)


def _link_seconds(p: Problem, placement: tuple[int, ...], split: Split) -> dict[tuple[int, int],
                                                                                  float]:
    """Per directed pair: the seconds the simulator's transfers of one micro-batch took
    (as it runs the pipeline: relays included)."""
    c = costs(p)
    one = dataclasses.replace(p.pipeline, microbatches=1)
    result = schedule._simulate(p, placement, split, one, schedules.of("gpipe"))
    out: dict[tuple[int, int], float] = {}
    for t in result.transfers:
        key = (t.src_device, t.dst_device)
        out[key] = out.get(key, 0.0) + c.transfer_time(t.bytes, *key)
    return out


CASES = [(seed, contention, chain) for seed in range(250)
         for contention, chain in [(("link", "device", "none")[seed % 3], seed % 5 != 0)]]


@pytest.mark.parametrize(("seed", "contention", "chain"), CASES)
def test_period_stage_table_device_view_and_simulator_agree(seed: int, contention: str,
                                                            chain: bool) -> None:
    rng = random.Random(seed)
    p = random_spec(seed, rng.randint(4, 9), rng.randint(2, 4), training=seed % 2 == 0)
    p = dataclasses.replace(p, contention=contention)
    split = _random_split(p, rng, chain)
    placement = split.placement(p)
    assert split_of(p, placement) == split
    loads = resource_loads(p, split)
    # the simulator sends, link by link, what the model charges (relays included)
    simulated = _link_seconds(p, placement, split)
    for key in set(simulated) | {k for k, v in loads.sent_s.items() if v > 0}:
        assert simulated.get(key, 0.0) == pytest.approx(loads.sent_s.get(key, 0.0),
                                                        rel=1e-9, abs=1e-15), key
    r = schedule.run(p, placement, p.pipeline)
    assert r.period_s == loads.period_s == max(r.loads_s)
    stages = max(s.load_s for s in r.stages)
    if len(set(split.devices)) == split.stages:  # one stage per device: the same figure
        assert stages == r.period_s
    else:  # a device's stages share its compute: each stage's own load is at most it
        assert stages <= r.period_s


def test_a_skip_connection_is_relayed_by_the_stage_in_between() -> None:
    # a -> b -> c, and a -> c (4 MB) skipping b's stage; 1 GB/s, no latency
    text = """
    cluster c { device d[0..2] { memory 1 GB }  link d[*] <-> d[*] { bandwidth 1 GB/s } }
    graph g {
      op a { time 1 ms; output 1 MB }  op b { time 1 ms; output 1 MB }  op c { time 1 ms }
      a -> b -> c
      a -> c { bytes 4 MB }
    }
    plan p { graph g; cluster c; objective pipeline; microbatches 4; schedule gpipe }
    """
    p = load_text(text).plan("p")
    split = Split((0, 1, 2, 3), (0, 1, 2))
    loads = resource_loads(p, split)
    # d0 -> d1 carries a's tensor once (the largest its consumers beyond need: 4 MB),
    # d1 -> d2 carries b's 1 MB and the 4 MB relayed: 5 ms; nothing goes d0 -> d2
    assert loads.sent_s[0, 1] == pytest.approx(4e-3)
    assert loads.sent_s[1, 2] == pytest.approx(5e-3)
    assert (0, 2) not in loads.sent_s
    assert loads.period_s == pytest.approx(5e-3)
    assert _link_seconds(p, split.placement(p), split) == pytest.approx(
        {(0, 1): 4e-3, (1, 2): 5e-3})


@pytest.mark.parametrize(("contention", "period_ms"), [("none", 3), ("link", 4),
                                                       ("device", 8)])
def test_the_period_is_the_busiest_resource(contention: str, period_ms: float) -> None:
    # three stages of 3 ms; 4 MB forward over 1 GB/s links (4 ms each way)
    p = chain_spec([3.0] * 3, None, microbatches=16, activation="4 MB", bandwidth="1 GB/s",
                   contention=contention)
    split = Split((0, 1, 2, 3), (0, 1, 2))
    loads = resource_loads(p, split)
    # none: compute; link: each link's 4 ms; device: the middle device's one channel
    # carries its receive and its send, 8 ms
    assert loads.period_s == pytest.approx(period_ms * 1e-3)
    r = schedule.run(p, split.placement(p), p.pipeline)
    # the steady state runs at the period: M periods, plus the fill and drain
    assert r.iteration_s >= 16 * loads.period_s * (1 - 1e-9)
    assert r.iteration_s <= 16 * loads.period_s + 3 * (3e-3 + 8e-3)


def test_the_dp_minimises_the_simulators_period() -> None:
    from planner.pipeline.splitdp import best_splits

    for seed in range(12):
        p = random_spec(seed, 8, 3, training=True)
        for s, found in best_splits(p, p.pipeline).items():
            r = schedule.run(p, found.split.placement(p), p.pipeline)
            assert r.period_s == pytest.approx(found.period_s, rel=1e-12), (seed, s)
            assert math.isfinite(r.iteration_s)


def test_pipeline_unchanged_for_a_plan_without_skips() -> None:
    p = chain_spec([1.0, 2.0], [2.0, 4.0], microbatches=4, activation="1 MB",
                   bandwidth="10 GB/s")
    split = Split((0, 1, 2), (0, 1))
    relayed = order.relayed(p, split.placement(p), split)
    assert relayed.stage == () and len(relayed.graph.edges) == len(p.graph.edges)
    assert isinstance(p.pipeline, Pipeline)
