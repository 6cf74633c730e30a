"""Union-find over hashable, ordered members: the colocation groups of the language
(`spec.lower`), of the Python API (`api.builder`) and of `import torch`, and the pipeline
units built from them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Generic, Protocol, TypeVar


class _Ordered(Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


T = TypeVar("T", bound=_Ordered)


class Disjoint(Generic[T]):
    """Disjoint sets (path halving); a set's root is its least member, so that roots, and
    the groups in their order, do not depend on the order of the unions."""

    def __init__(self, members: Iterable[T] = ()) -> None:
        self.parent: dict[T, T] = {m: m for m in members}

    def find(self, x: T) -> T:
        parent = self.parent
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: T, b: T) -> tuple[T, T] | None:
        """Join the sets of `a` and `b`: (the root kept, the root joined to it), or None
        when they were one set."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return None
        lo, hi = (ra, rb) if ra < rb else (rb, ra)
        self.parent[hi] = lo
        return lo, hi

    def groups(self, order: Iterable[T]) -> list[list[T]]:
        """The sets of two members or more, each in `order` (members never seen left out),
        in the order of their first member there."""
        by_root: dict[T, list[T]] = {}
        for x in order:
            if x in self.parent:
                by_root.setdefault(self.find(x), []).append(x)
        return [m for m in by_root.values() if len(m) > 1]
