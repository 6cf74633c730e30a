"""The orders of the model's devices by first unit, and the classes of alike devices."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...model import Problem
from .data import _count, _Data, _pipeline


def _rank_dependent(problem: Problem, data: _Data) -> bool:
    """Whether the in-flight count depends on a device's rank or the devices in use."""
    return len(_counts_all(problem, data)) > 1


def _relaxed(problem: Problem, data: _Data) -> _Orders:
    """No rank, no `runs`: every device holds the fewest micro-batches any rank does, once
    per stage (a relaxation of `stage_bytes` but under `interleaved`; orders only within
    classes of alike devices, which loses nothing)."""
    alike = tuple(tuple(c) for c in _classes(problem, data))
    return _Orders(tuple(c for c in alike if len(c) > 1), None, True, alike,
                   min(_counts_all(problem, data)), exact=_exact(problem),
                   scope=_scope(problem, False))


def _classes(problem: Problem, data: _Data) -> list[list[int]]:
    """Classes of interchangeable devices (swapping two changes nothing the model sees:
    compute, memory, pins, links to every other device), each in index order."""
    m = data.m

    def key(d: int) -> tuple[object, ...]:
        return (tuple(row[d] for row in data.compute), tuple(row[d] for row in data.forward),
                data.caps[d], tuple(d in a for a in data.allowed))

    def swappable(a: int, b: int) -> bool:
        if key(a) != key(b):
            return False
        links = (data.latency, data.inv_bandwidth)
        if any(t[a][b] != t[b][a] for t in links):
            return False
        return all(t[a][e] == t[b][e] and t[e][a] == t[e][b]
                   for t in links for e in range(m) if e not in (a, b))

    classes: list[list[int]] = []
    for d in range(m):
        for cls in classes:
            if swappable(cls[0], d):
                cls.append(d)
                break
        else:
            classes.append([d])
    return classes


def _relabel(dev: Sequence[int], classes: Sequence[Sequence[int]]) -> list[int]:
    """`dev` with each class's devices in use renamed, by first unit, to its first
    members: the representative the order rows admit."""
    rename: dict[int, int] = {}
    first = list(dict.fromkeys(dev))
    for cls in classes:
        used = [d for d in first if d in cls]
        rename.update(zip(used, cls, strict=False))
    return [rename.get(d, d) for d in dev]


@dataclass(frozen=True, slots=True)
class _Orders:
    """The devices the model orders by first unit, and what that costs the claim."""

    #: sequences of devices: each one's devices in use come first, by first unit
    orders: tuple[tuple[int, ...], ...]
    #: the order fixing every device's rank (None: the count does not depend on it)
    ranked: tuple[int, ...] | None
    #: whether every placement has an equivalent the model's orders and `runs` rows admit
    #: (its memory rows aside: `exact`)
    complete: bool
    #: relabel the warm start by these classes (empty: keep its names)
    classes: tuple[tuple[int, ...], ...]
    #: the in-flight count of every device when `ranked` is None
    flat: int = 1
    #: whether each device holds one stage (the `runs` rows: 1F1B)
    runs: bool = False
    #: the placements the model covers when it does not cover all, in words
    scope: str = ""
    #: whether the memory rows are `stage_bytes` (`_exact`); `_relaxed`'s: a relaxation
    exact: bool = True

    @property
    def proves(self) -> bool:
        """Whether the model covers every placement, so that its optimum (or bound, or
        infeasibility) is the problem's."""
        return self.complete and self.exact


def _counts_all(problem: Problem, data: _Data) -> set[int]:
    return {_count(problem, data, big, r) for big in range(1, data.m + 1) for r in range(big)}


def _exact(problem: Problem) -> bool:
    """Whether the memory rows are `stage_bytes` exactly: not under `interleaved` (the rows
    sum a device's stages' activations, the rule takes its largest stage's) nor with tied
    weights (the rows count a holder's copy each, the rule one per device). Else they
    over-count, and the model's optimum, bound or infeasibility holds only among the
    placements it admits."""
    return not (_pipeline(problem).schedule_spec.virtual_stages or problem.graph.ties)


def _scope(problem: Problem, runs: bool) -> str:
    """The placements a model covers, in words ("" for every one)."""
    base = ("placements with one stage per device" if runs else
            "placements whose activations, summed over each device's stages, fit "
            "Megatron's in-flight count" if _pipeline(problem).schedule_spec.virtual_stages
            else "")
    if not problem.graph.ties:
        return base
    tie = "each tied weight counted once per holder, not once per device"
    return f"{base}, {tie}" if base else f"placements that fit with {tie}"


def _orders(problem: Problem, data: _Data, warm: Sequence[int] | None) -> _Orders:
    """The orders of the model (package docstring): none but within classes of alike
    devices when the count does not depend on the rank; else the index order when all
    devices are alike; else the warm start's order (`warm`: devices per unit)."""
    classes = _classes(problem, data)
    alike = tuple(tuple(c) for c in classes)
    # torch's ScheduleGPipe and Schedule1F1B run one stage per rank: so does the model
    runs = not _pipeline(problem).schedule_spec.virtual_stages
    exact, what = _exact(problem), _scope(problem, runs)
    if not _rank_dependent(problem, data):
        return _Orders(tuple(c for c in alike if len(c) > 1), None, not runs, alike,
                       _count(problem, data, 1, 0), runs=runs, scope=what, exact=exact)
    if len(classes) == 1:
        return _Orders(alike, alike[0], False, alike, runs=runs, scope=what, exact=exact)
    if warm is not None:
        first = list(dict.fromkeys(warm))
    else:  # devices that pinned units force early, then the others
        pinned = {a[0]: k for k, a in reversed(list(enumerate(data.allowed))) if len(a) == 1}
        first = sorted(pinned, key=lambda d: (pinned[d], d))
    chain = tuple(first + [d for d in range(data.m) if d not in first])
    names = ", ".join(problem.cluster.devices[d].name for d in chain)
    return _Orders((chain,), chain, False, (), runs=runs, exact=exact,
                   scope=f"{what}, in use in the order {names} by first unit")
