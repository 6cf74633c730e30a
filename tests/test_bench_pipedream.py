"""The PipeDream-profile benchmark's splits (bench/bench_pipedream.py), not its timings.

Needs PipeDream's profiles (../shared/datasets/pipedream, or `$PIPEDREAM_PROFILES`); the
tests that read them skip without. The one that runs PipeDream's optimizer needs
`$PIPEDREAM_SRC` (a checkout of github:msr-fiddle/pipedream) and skips without it.
"""

from __future__ import annotations

import itertools
import random
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from planner.model import Problem
from planner.pipeline.split import split_of
from planner.pipeline.units import units

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # not a package
import bench_pipedream as bp

ALEXNET = bp.profile("alexnet")
needs_profiles = pytest.mark.skipif(
    ALEXNET is None, reason=f"PipeDream's profiles absent: {bp.profile_dir().resolve()}")


def largest(times: Sequence[float], bounds: Sequence[int]) -> float:
    return max(sum(times[a:b]) for a, b in itertools.pairwise(bounds))


def least_largest(times: Sequence[float], blocks: int) -> float:
    """Brute force: the least largest block over every contiguous partition."""
    n = len(times)
    return min(largest(times, (0, *cuts, n))
               for cuts in itertools.combinations(range(1, n), blocks - 1))


def is_partition(bounds: Sequence[int], n: int, blocks: int) -> bool:
    return (len(bounds) == blocks + 1 and bounds[0] == 0 and bounds[-1] == n
            and all(a < b for a, b in itertools.pairwise(bounds)))


def test_block_partition_is_the_least_largest_block_on_random_sequences() -> None:
    rng = random.Random(38)
    for _ in range(200):
        n = rng.randint(1, 9)
        times = [rng.choice((0.0, rng.random(), float(rng.randint(1, 4)))) for _ in range(n)]
        blocks = rng.randint(1, n)
        bounds = bp.block_partition(times, blocks)
        assert is_partition(bounds, n, blocks), (times, blocks, bounds)
        assert largest(times, bounds) <= least_largest(times, blocks) * (1 + 1e-12)


def test_block_partition_breaks_ties_by_balance() -> None:
    # largest block 4 either way ([4 | 1 1 | 1] or [4 | 1 | 1 1]...); the least sum of
    # squares also evens out the rest: [4 | 1 1 | 1 1] over [4 | 1 | 1 1 1]
    assert bp.block_partition([4, 1, 1, 1, 1], 3) == [0, 1, 3, 5]
    with pytest.raises(ValueError, match="3 items into 4"):
        bp.block_partition([1, 2, 3], 4)


@pytest.fixture(scope="module")
def alexnet4(tmp_path_factory: pytest.TempPathFactory) -> Problem:
    assert ALEXNET is not None
    tmp = tmp_path_factory.mktemp("alexnet")
    return bp.problem(bp.spec("alexnet", ALEXNET, tmp, (4,)), "alexnet", 4)


@needs_profiles
def test_torchgpipe_split_of_alexnet_is_a_contiguous_least_largest_partition(
        alexnet4: Problem) -> None:
    u = units(alexnet4)
    placement = bp.torchgpipe_placement(alexnet4, 4)
    split = split_of(alexnet4, placement)
    assert split.devices == (0, 1, 2, 3)  # one block per worker, in unit order
    for ops in u.members:  # a layer's forward and backward ops together
        assert len({placement[i] for i in ops}) == 1
    prefix = u.compute_prefix[0]
    times = [float(prefix[x + 1] - prefix[x]) for x in range(u.count)]
    assert largest(times, split.bounds) <= least_largest(times, 4) * (1 + 1e-12)
    # and no contiguous partition has a smaller largest block than the one chosen
    assert all(largest(times, (0, *cuts, u.count)) >= largest(times, split.bounds) * (1 - 1e-12)
               for cuts in itertools.combinations(range(1, u.count), 3))


@needs_profiles
def test_pipedream_output_maps_back_to_every_op(alexnet4: Problem, tmp_path: Path) -> None:
    """PipeDream's output format (the profile's lines with ` -- stage_id=K`), a layer it
    leaves out placed with its producer, each layer's forward and backward op together."""
    assert ALEXNET is not None
    lines = ALEXNET.read_text().splitlines()
    nodes = [ln for ln in lines if ln and not ln.startswith("\t")]
    edges = [ln for ln in lines if ln.startswith("\t")]
    order = sorted((ln.split(" -- ")[0] for ln in nodes), key=lambda n: int(n[4:]))
    stage = {name: min(3, k * 4 // len(order)) for k, name in enumerate(order)}
    dropped = order[-1]  # as PipeDream drops its `__getitem__` sinks
    out = tmp_path / "gpus=4.txt"
    out.write_text("\n".join([*(f"{ln} -- stage_id={stage[ln.split(' -- ')[0]]}"
                                for ln in nodes if not ln.startswith(dropped + " ")),
                              *edges]) + "\n")
    read = bp.read_stages(out)
    assert dropped not in read and len(read) == len(order) - 1
    stage_of = bp.complete(read, ALEXNET)
    producers = [ln.strip().split(" -- ")[0] for ln in edges
                 if ln.strip().split(" -- ")[1] == dropped]
    assert stage_of[dropped] == max(stage[p] for p in producers)
    placement = bp.placement_of_layers(alexnet4, stage_of)
    names = [op.name for op in alexnet4.graph.ops]
    for i, name in enumerate(names):
        assert placement[i] == stage_of[name.removesuffix(".bwd")]
    assert any(n.endswith(".bwd") for n in names)


def test_compressed_nodes_expand_to_their_layers(tmp_path: Path) -> None:
    out = tmp_path / "gpus=2.txt"
    out.write_text("node1 -- Input -- forward_compute_time=0.000, backward_compute_time=0.000, "
                   "activation_size=0.0, parameter_size=0.000 -- stage_id=0\n"
                   "compressed_node0 -- Branch 0 -- forward_compute_time=1.000, "
                   "backward_compute_time=2.000, activation_size=4.0, parameter_size=0.000 "
                   "-- stage_id=1\n\tnode1 -- compressed_node0\n")
    assert bp.read_stages(out, {"compressed_node0": ["node2", "node3"]}) == {
        "node1": 0, "node2": 1, "node3": 1}


@needs_profiles
@pytest.mark.slow
@pytest.mark.skipif(bp.pipedream_source() is None, reason="PIPEDREAM_SRC is not set")
def test_pipedream_optimizer_runs_on_alexnet(alexnet4: Problem, tmp_path: Path) -> None:
    src = bp.pipedream_source()
    assert src is not None and ALEXNET is not None
    stage_of = bp.complete(bp.pipedream_split(src, ALEXNET, {}, 4, tmp_path)[0], ALEXNET)
    again = bp.complete(bp.pipedream_split(src, ALEXNET, {}, 4, tmp_path)[0], ALEXNET)
    assert stage_of == again  # its ties broken alike run after run
    assert sorted(set(stage_of.values())) == [0, 1, 2, 3]
    placement = bp.placement_of_layers(alexnet4, stage_of)
    assert split_of(alexnet4, placement).devices == (0, 1, 2, 3)


def test_summary_counts_the_cases_pipedream_wins() -> None:
    won = bp.Case("a", 4, {"pipedream": 0.9, "torchgpipe": 2.0, "pipedp": 1.0, "auto": 1.2})
    lost = bp.Case("b", 8, {"pipedream": 2.0, "torchgpipe": 1.5, "pipedp": 1.5, "auto": 1.0,
                            "search": 1.1})
    assert [bp.verdict(c) for c in (won, lost)] == ["no", "yes"]
    assert bp.gains([won, lost]) == pytest.approx({"a/4": -10.0, "b/8": 100.0})
    line = bp.summary([won, lost])
    assert "(pipedp, auto, search) in 1 of 2 cases, by 10.0-10.0% (a/4 -10.0%)" in line
    assert bp.verdict(bp.Case("c", 4, {"torchgpipe": 1.0, "pipedp": 1.0})) == "n/a"
