"""Line diffs that stay fast on big files: difflib's matcher, anchored on unique lines.

`difflib.SequenceMatcher` takes the longest matching block and recurses on both sides of
it. Where every match is short, as in a spec whose 10,000 ops, one attribute a line, each
change a line or two (76,784 lines, 23,906 of them realigned), that recursion is quadratic:
`fmt --check` and `fmt --diff` ran for over 10 minutes where formatting took 0.8 s.

`Matcher` first matches the common head and tail, then takes the lines that occur once in
each side, in the same order on both (the longest increasing run of their positions:
patience diff's anchors), and runs difflib's matcher only between two anchors, where the
same is done again. Inputs of at most `SMALL` lines in all go to difflib alone, so their
diffs are difflib's, as before.
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Iterator, Sequence

__all__ = ["SMALL", "Matcher", "unified_diff"]

#: lines of both sides together up to which difflib's own matcher runs
SMALL = 4_000

#: (start in a, start in b, length) of a run of equal lines
Block = tuple[int, int, int]


class Matcher(difflib.SequenceMatcher[str]):
    """`difflib.SequenceMatcher` over two lists of lines, its matching blocks found as the
    module docstring says; `get_opcodes`, `get_grouped_opcodes` come from difflib."""

    def __init__(self, a: Sequence[str], b: Sequence[str], autojunk: bool = True) -> None:
        super().__init__(None, a, b, autojunk=autojunk)
        self._sides, self._autojunk = (a, b), autojunk
        self._found: list[difflib.Match] | None = None

    def get_matching_blocks(self) -> list[difflib.Match]:
        a, b = self._sides
        if len(a) + len(b) <= SMALL:
            return super().get_matching_blocks()
        if self._found is None:
            merged: list[difflib.Match] = []
            for i, j, n in sorted(_blocks(a, b, self._autojunk)):
                last = merged[-1] if merged else None
                if last is not None and last.a + last.size == i and last.b + last.size == j:
                    merged[-1] = difflib.Match(last.a, last.b, last.size + n)
                else:
                    merged.append(difflib.Match(i, j, n))
            self._found = [*merged, difflib.Match(len(a), len(b), 0)]
        return self._found


def unified_diff(a: Sequence[str], b: Sequence[str], name: str, context: int = 3
                 ) -> Iterator[str]:
    """`difflib.unified_diff(a, b, name, name, n=context)`, line for line, over
    `Matcher`'s blocks."""
    for k, group in enumerate(Matcher(a, b).get_grouped_opcodes(context)):
        if k == 0:
            yield f"--- {name}\n"
            yield f"+++ {name}\n"
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        yield f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            yield from ("-" + line for line in a[i1:i2])
            yield from ("+" + line for line in b[j1:j2])


def _range(start: int, stop: int) -> str:
    """A hunk's range as `diff -u` writes it (difflib's `_format_range_unified`)."""
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"


def _blocks(a: Sequence[str], b: Sequence[str], autojunk: bool) -> list[Block]:
    """The matching blocks of `a` and `b`, unsorted: head, tail, anchors, and difflib's
    blocks between anchors (a stack of ranges, not recursion: the ranges nest deep)."""
    out: list[Block] = []
    todo = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        head = 0
        while alo + head < ahi and blo + head < bhi and a[alo + head] == b[blo + head]:
            head += 1
        tail = 0
        while (alo + head < ahi - tail and blo + head < bhi - tail
               and a[ahi - tail - 1] == b[bhi - tail - 1]):
            tail += 1
        out += [(alo, blo, head)] if head else []
        out += [(ahi - tail, bhi - tail, tail)] if tail else []
        alo, blo, ahi, bhi = alo + head, blo + head, ahi - tail, bhi - tail
        if alo == ahi or blo == bhi:
            continue
        anchors = _anchors(a, b, alo, ahi, blo, bhi)
        if not anchors:
            inner = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=autojunk)
            out += [(alo + i, blo + j, n) for i, j, n in inner.get_matching_blocks() if n]
            continue
        i0, j0 = alo, blo
        for i, j in anchors:
            out.append((i, j, 1))
            todo.append((i0, i, j0, j))
            i0, j0 = i + 1, j + 1
        todo.append((i0, ahi, j0, bhi))
    return out


def _anchors(a: Sequence[str], b: Sequence[str], alo: int, ahi: int, blo: int, bhi: int
             ) -> list[tuple[int, int]]:
    """(i, j) of the lines that occur once in `a[alo:ahi]` and once in `b[blo:bhi]`, the
    longest run of them in the same order on both sides, by increasing i."""
    in_a, in_b = Counter(a[alo:ahi]), Counter(b[blo:bhi])
    where_b = {b[j]: j for j in range(blo, bhi) if in_b[b[j]] == 1 and in_a[b[j]] == 1}
    pairs = [(i, where_b[a[i]]) for i in range(alo, ahi) if a[i] in where_b]
    # longest increasing subsequence of the j's (patience sorting)
    tops: list[int] = []  # the least j ending a run of each length
    ends: list[int] = []  # the index in pairs of that j
    back = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        at = bisect.bisect_left(tops, j)
        back[k] = ends[at - 1] if at else -1
        if at == len(tops):
            tops.append(j)
            ends.append(k)
        else:
            tops[at], ends[at] = j, k
    run: list[tuple[int, int]] = []
    k = ends[-1] if ends else -1
    while k >= 0:
        run.append(pairs[k])
        k = back[k]
    return run[::-1]
