"""The exact check of a placement: its period and memory by the shared rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...model import Problem
from ...pipeline.split import resource_loads, split_of, stage_bytes
from .data import _data, _pipeline


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A placement under the pipeline's model of time and memory (package docstring)."""

    #: T: the busiest resource, with the recomputation's forward compute
    period_s: float
    #: per device: its busiest resource
    loads_s: tuple[float, ...]
    #: per device: the bytes it holds (`stage_bytes`, with recomputation where it recomputes)
    held_bytes: tuple[float, ...]
    #: the devices that recompute (those that would not fit otherwise), by rank
    recompute: tuple[int, ...]
    #: the devices in use, by their first unit in pipeline order (their rank)
    ranks: tuple[int, ...]
    #: whether every device holds what it needs
    fits: bool


def evaluate(problem: Problem, placement: Sequence[int]) -> Evaluation:
    """The period and memory of `placement` by the shared rules (`split.stage_bytes`, the
    period of the package docstring); a device recomputes only when it would not fit
    otherwise and holds less so (its cheapest choice)."""
    data = _data(problem)
    split = split_of(problem, placement)
    pipe = _pipeline(problem)
    ranks = tuple(dict.fromkeys(split.devices))
    keep = stage_bytes(problem, split, pipe)
    over = [d for d in ranks if keep[d] > data.caps[d]]
    held = stage_bytes(problem, split, pipe, over) if over else keep
    chosen = tuple(d for d in over if held[d] < keep[d])
    held = [held[d] if d in chosen else keep[d] for d in range(data.m)]
    loads = resource_loads(problem, split, chosen).device_s
    fits = all(h <= cap for h, cap in zip(held, data.caps, strict=True))
    return Evaluation(max(loads, default=0.0), loads, tuple(held), chosen, ranks, fits)
