"""Where things were declared, kept while lowering for diagnostics raised after it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ...errors import Span


class OpSpans(Mapping[tuple[str, str], Span]):
    """Where each op was declared, by (graph name, op name).

    Kept per graph as the name index lowering builds anyway and the spans by op index:
    a dict of 100,000 (graph, name) pairs cost a tuple and a hash-table slot per op, and
    its look-ups miss the cache as the table outgrows it.
    """

    def __init__(self) -> None:
        self._graphs: dict[str, tuple[Mapping[str, int], Sequence[Span]]] = {}

    def add(self, graph: str, index: Mapping[str, int], spans: Sequence[Span]) -> None:
        """The ops of `graph`: `spans[index[name]]` is where op `name` was declared."""
        self._graphs[graph] = (index, spans)

    def __getitem__(self, key: tuple[str, str]) -> Span:
        try:
            graph, name = key
        except (TypeError, ValueError):
            raise KeyError(key) from None
        index, spans = self._graphs[graph]
        return spans[index[name]]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for graph, (index, _) in self._graphs.items():
            for name in index:
                yield graph, name

    def __len__(self) -> int:
        return sum(len(index) for index, _ in self._graphs.values())


@dataclass
class Locations:
    """Where things were declared, for diagnostics raised after lowering."""

    ops: OpSpans = field(default_factory=OpSpans)
    devices: dict[tuple[str, str], Span] = field(default_factory=dict)
    plans: dict[str, Span] = field(default_factory=dict)
    graphs: dict[str, Span] = field(default_factory=dict)
    clusters: dict[str, Span] = field(default_factory=dict)
    #: per graph, each edge's span (its first declaration), by edge index
    edges: dict[str, list[Span]] = field(default_factory=dict)
    pins: dict[tuple[str, int], Span] = field(default_factory=dict)
