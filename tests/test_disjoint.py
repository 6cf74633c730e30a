"""planner.disjoint: the one union-find (the language's groups and units, import torch's
groups, the device map's, the forced-colocation bound's)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from planner.disjoint import Disjoint

PAIRS = st.lists(st.tuples(st.integers(0, 19), st.integers(0, 19)), max_size=30)


def _components(n: int, pairs: list[tuple[int, int]]) -> list[set[int]]:
    """Connected components of the graph on 0..n-1 with edges `pairs` (a plain search)."""
    adjacent: dict[int, set[int]] = {i: set() for i in range(n)}
    for a, b in pairs:
        adjacent[a].add(b)
        adjacent[b].add(a)
    seen: set[int] = set()
    out = []
    for i in range(n):
        if i not in seen:
            stack, part = [i], set()
            while stack:
                x = stack.pop()
                if x not in part:
                    part.add(x)
                    stack.extend(adjacent[x] - part)
            seen |= part
            out.append(part)
    return out


@given(PAIRS)
def test_groups_are_the_components_in_order_and_each_root_is_its_least_member(
        pairs: list[tuple[int, int]]) -> None:
    sets: Disjoint[int] = Disjoint(range(20))
    for a, b in pairs:
        sets.union(a, b)
    parts = _components(20, pairs)
    assert sets.groups(range(20)) == [sorted(p) for p in parts if len(p) > 1]
    for part in parts:
        assert {sets.find(x) for x in part} == {min(part)}


@given(PAIRS)
def test_the_order_of_the_unions_changes_no_root(pairs: list[tuple[int, int]]) -> None:
    forward: Disjoint[int] = Disjoint(range(20))
    backward: Disjoint[int] = Disjoint(range(20))
    for a, b in pairs:
        forward.union(a, b)
    for a, b in reversed(pairs):
        backward.union(b, a)
    assert [forward.find(i) for i in range(20)] == [backward.find(i) for i in range(20)]


def test_union_says_which_root_it_kept_and_which_it_took_in() -> None:
    sets: Disjoint[str] = Disjoint()
    assert sets.union("b", "a") == ("a", "b")
    assert sets.union("a", "b") is None  # one set already
    assert sets.union("c", "b") == ("a", "c")
    # members never joined are in no group, and only what `order` names is listed
    assert sets.groups(["c", "x", "a"]) == [["c", "a"]]
