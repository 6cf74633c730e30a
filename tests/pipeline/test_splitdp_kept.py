"""The split DP keeps what it computed (`splitdp.KEEP_CELLS`): a block's memory test for the
other chains and kinds of its stage count, a split's loads for its even pass. Both are the
same floats recomputed; keeping nothing must find the same splits and periods.
"""

from __future__ import annotations

from collections import Counter

import pytest
from pipe_support import random_spec

from planner.model import Problem
from planner.pipeline import splitdp
from planner.pipeline.units import units


def _problem(seed: int) -> Problem:
    return random_spec(700 + seed, 16, 4, training=True, memories=(60, 100, 400))


def _found(p: Problem) -> dict[int, list[tuple[float, object]]]:
    """Every kind's best split per stage count (not the problem's cached answer)."""
    assert p.pipeline is not None
    space = splitdp.search_space(p, p.pipeline)
    found = splitdp._split_candidates(p, p.pipeline, None, True, space, True, {})
    return {s: [(f.period_s, f.split) for f in fs] for s, fs in found.items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_keeping_nothing_finds_the_same_splits(seed: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    p = _problem(seed)
    kept = _found(p)
    monkeypatch.setattr(splitdp, "KEEP_CELLS", 0)
    assert _found(p) == kept and kept


def test_each_memory_test_once_and_the_even_pass_reuses_the_loads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    p = _problem(0)
    tests: Counter[tuple[object, ...]] = Counter()
    too_big = splitdp._Stage.too_big

    def counted(self: splitdp._Stage, *args: object) -> object:
        out = too_big(self, *args)  # type: ignore[arg-type]
        tests[args[2].tobytes(), args[3].tobytes(), self.in_flight, self.cap] += 1  # type: ignore[attr-defined]
        return out

    monkeypatch.setattr(splitdp._Stage, "too_big", counted)
    _found(p)
    assert tests and max(tests.values()) == 1  # 4 kinds x chains asked each block before
    loads = Counter[bool]()
    load = splitdp._Stage.load

    def each(self: splitdp._Stage, *args: object) -> object:
        loads[args[-1] is not None] += 1
        return load(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(splitdp._Stage, "load", each)
    assert p.pipeline is not None
    space = splitdp.search_space(p, p.pipeline)
    chain = space.chains[3][0]
    for even in (False, True):
        loads.clear()
        splitdp._best_split(p, units(p), space, chain, p.pipeline, True, "period", even)
        assert loads[True] > 0
        if not even:
            once = loads[True]
    assert loads[True] == once  # the even pass read the first pass's loads
