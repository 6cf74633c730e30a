"""The cost rules of `planner.cost` that engines share: each scalar form and its numpy form
agree to the bit, and the one-transfer rule sends a tensor once per destination."""

from __future__ import annotations

import math

import numpy as np
import pytest
from exact.instances import random_problem

from planner.algorithms.listsched.instance import Instance
from planner.algorithms.listsched.ranks import downward_rank, upward_rank
from planner.cost import (
    INF,
    allreduce_seconds,
    copies,
    copies_array,
    stage_memory,
    stage_share,
    transfer_seconds,
    transfer_seconds_array,
)


def _links(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """n random links and loads: some without a link (latency inf, seconds per byte inf),
    some with nothing to send (count 0, bytes 0)."""
    latency = rng.uniform(0.0, 1e-4, n)
    inv = rng.uniform(1e-12, 1e-9, n)
    none = rng.random(n) < 0.2
    latency[none], inv[none] = INF, INF
    count = rng.integers(0, 4, n).astype(float)
    nbytes = np.where(count > 0, rng.integers(0, 1 << 30, n), 0).astype(float)
    return latency, inv, nbytes, count


@pytest.mark.parametrize("seed", range(5))
def test_transfer_seconds_array_is_the_scalar_rule(seed: int) -> None:
    latency, inv, nbytes, count = _links(np.random.default_rng(seed), 500)
    got = transfer_seconds_array(latency, inv, nbytes, count)
    want = [transfer_seconds(*x) for x in zip(latency, inv, nbytes, count, strict=True)]
    assert got.tolist() == want  # to the bit; inf where a link is missing, 0 with nothing
    # one tensor each (the default count): latency + bytes / bandwidth, inf without a link
    one = transfer_seconds_array(latency, inv, nbytes)
    assert one.tolist() == [transfer_seconds(a, b, c) for a, b, c in zip(latency, inv, nbytes,
                                                                         strict=True)]
    # a scalar link over arrays of loads, as the pipeline's boundaries have it
    assert transfer_seconds_array(2e-6, 1e-10, nbytes, count).tolist() == [
        transfer_seconds(2e-6, 1e-10, b, k) for b, k in zip(nbytes, count, strict=True)]


def test_transfer_seconds_rule() -> None:
    assert transfer_seconds(2e-6, 1e-10, 1e6) == 2e-6 + 1e6 * 1e-10
    assert transfer_seconds(2e-6, 1e-10, 3e6, 3) == 3 * 2e-6 + 3e6 * 1e-10
    assert transfer_seconds(2e-6, 1e-10, 0.0, 0) == 0.0  # nothing crosses
    assert transfer_seconds(INF, INF, 0.0) == INF  # no link: never, even for 0 bytes
    assert transfer_seconds(INF, INF, 5.0, 0) == 0.0  # no link, but nothing to send


def test_copies_one_transfer_per_producer_and_destination() -> None:
    # producer 0 feeds three consumers on device 1 (10, 30, 20 bytes) and one on device 2;
    # producer 1 feeds one on device 1
    edges = [(0, 1, 10), (0, 2, 5), (0, 1, 30), (1, 1, 7), (0, 1, 20)]
    assert copies(edges) == {(0, 1): 30, (0, 2): 5, (1, 1): 7}
    assert list(copies(edges)) == [(0, 1), (0, 2), (1, 1)]  # first appearance
    assert copies([(3, 0, 0)]) == {(3, 0): 0}  # an empty tensor is still a copy


@pytest.mark.parametrize("seed", range(5))
def test_copies_array_is_the_scalar_rule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = 400, 5
    src = rng.integers(0, 60, n)
    dest = rng.integers(0, m, n)
    nbytes = rng.integers(0, 1000, n)
    keys, slot, largest = copies_array(src, dest, nbytes, m)
    want = copies(zip(src.tolist(), dest.tolist(), nbytes.tolist(), strict=True))
    assert dict(zip(zip((keys // m).tolist(), (keys % m).tolist(), strict=True),
                    largest.tolist(), strict=True)) == want
    assert (np.diff(keys) > 0).all()
    # each edge's copy is its own pair's
    assert (keys[slot] == src * m + dest).all()
    assert (largest[slot] >= nbytes).all()


@pytest.mark.parametrize("seed", range(3))
def test_stage_memory_array_is_the_scalar_rule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    params, acts, transient = (rng.integers(0, 1 << 34, 200).astype(float) for _ in range(3))
    flight = rng.integers(1, 17, 200)
    got = stage_memory(params, flight, acts, transient)
    assert isinstance(got, np.ndarray)
    assert got.tolist() == [stage_memory(*x) for x in zip(params.tolist(), flight.tolist(),
                                                          acts.tolist(), transient.tolist(),
                                                          strict=True)]
    assert stage_memory(100, 3, 10, 7) == 137
    assert stage_share(8 * 2**30, 2) == 4 * 2**30


def test_allreduce_seconds_over_arrays_and_links() -> None:
    grads = np.array([0.0, 1e6, 3.5e7])
    got = allreduce_seconds(grads, 4, 5e-6, 1e-10)
    assert isinstance(got, np.ndarray)
    assert got.tolist() == [allreduce_seconds(float(b), 4, 5e-6, 1e-10) for b in grads]
    assert allreduce_seconds(1e6, 4, 5e-6, 1e-10) == 6 * 5e-6 + 6 / 4 * 1e6 * 1e-10
    assert allreduce_seconds(1e6, 1, INF, INF) == 0.0  # one device: nothing to reduce
    assert allreduce_seconds(1e6, 2, INF, 1e-10) == INF
    assert math.isinf(allreduce_seconds(1e6, 2, 1e-6, INF))


@pytest.mark.parametrize("seed", range(4))
def test_the_ranks_mean_transfer_is_the_rule(seed: int) -> None:
    """HEFT's and CPOP's ranks (`listsched.ranks`) take an edge's mean transfer as
    `transfer_seconds` over the mean link (`Instance.mean_comm`), 0 on forced-local edges;
    the upward rank writes it inline, summed as `own + latency + bytes * inv`: the same
    rule, to rounding."""
    inst = Instance(random_problem(seed, 40, 3, colocate=True, pins=3))
    comm = [[0.0 if local else inst.mean_comm(nbytes)
             for (_, nbytes), local in zip(inst.pred[i], inst.local[i], strict=True)]
            for i in range(inst.n)]
    up, best = [0.0] * inst.n, [0.0] * inst.n
    for i in reversed(inst.topo):
        up[i] = inst.mean_compute[i] + best[i]
        for (p, _), c in zip(inst.pred[i], comm[i], strict=True):
            best[p] = max(best[p], up[i] + c)
    assert upward_rank(inst) == pytest.approx(up, rel=1e-12, abs=0.0)
    down = [0.0] * inst.n
    for j in inst.topo:
        down[j] = max((down[p] + inst.mean_compute[p] + c
                       for (p, _), c in zip(inst.pred[j], comm[j], strict=True)), default=0.0)
    assert downward_rank(inst) == down
    assert any(c > 0 for row in comm for c in row)
