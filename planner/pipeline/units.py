"""The units a pipeline splits, in pipeline order, and the tables its splits are costed by.

A **unit** is a placement unit (`facts`: a colocation group, or a lone op) merged with the
backward ops of its forward ops (`Graph.backward_of`): a layer's forward and backward run
on one stage. Units are ordered by their first forward op in the graph's topological
order; a **split** cuts that order into contiguous stages.

The tables are prefix sums over that order, so that a stage `[i, j)` is costed in O(1):

- per device, the compute of one micro-batch (forward and backward ops);
- per boundary `x` (between units `x - 1` and `x`), the tensors that cross it: forward
  ones (produced before `x`, consumed at or after it) and backward ones (the other way),
  one transfer per producer, as the simulator sends a tensor once per destination. A
  tensor that skips stages is relayed across every boundary in between (under every
  schedule; torch passes it so under `interleaved`, and under `gpipe` and `1f1b` sends it
  straight to its readers: docs/pipelines.md), each hop carrying the largest bytes of the
  producer's consumers beyond it (what the later stages still need);
- per unit, the bytes a stage holds for it: params (with the gradients and optimizer
  state the backward ops hold, once), the activations one micro-batch keeps from its
  forward pass to its backward pass (forward outputs), and the transient bytes (backward
  outputs, temps); of those kept, the model's data inputs (forward ops a training graph
  gives no backward op and no forward op feeds: a placeholder) and its outputs (forward
  ops no forward op reads), which a recomputing stage holds per micro-batch in flight as
  torch's stage does its inputs and outputs, and an inference stage holds for every
  micro-batch and once more merged (`split.stage_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..cost import copies, costs, held_bytes
from ..facts import facts
from ..model import Graph, Problem, derived
from ..stagefacts import unit_roots


@dataclass(frozen=True, slots=True)
class Units:
    """A problem's pipeline units and their cost tables (see the module docstring)."""

    #: the units in pipeline order, each its ops in topological order
    members: tuple[tuple[int, ...], ...]
    #: per op: the position of its unit in `members`
    unit_of: tuple[int, ...]
    #: per op: whether it is a backward op
    backward: tuple[bool, ...]
    #: per unit: the devices it may use (pins, and devices that can run every member)
    allowed: tuple[tuple[int, ...], ...]
    #: [device, x]: compute seconds of units [0, x) on the device (0 where one cannot run)
    compute_prefix: NDArray[np.float64]
    #: [device, x]: the forward ops' share of `compute_prefix` (run again by recomputation)
    forward_prefix: NDArray[np.float64]
    #: [device, x]: how many of units [0, x) may not use the device
    banned_prefix: NDArray[np.float64]
    #: [x]: forward transfers across boundary x (count, bytes); x = 0 and x = n are 0
    forward_count: NDArray[np.float64]
    forward_bytes: NDArray[np.float64]
    #: [x]: backward transfers across boundary x (count, bytes)
    backward_count: NDArray[np.float64]
    backward_bytes: NDArray[np.float64]
    #: [x]: prefix sums over units of params, kept activations, and transient bytes
    params_prefix: NDArray[np.float64]
    kept_prefix: NDArray[np.float64]
    #: [x]: prefix sums over units of the kept bytes of the model's data inputs and of its
    #: outputs (module docstring; the inputs 0 outside training)
    input_prefix: NDArray[np.float64]
    output_prefix: NDArray[np.float64]
    #: per unit: its largest transient (a backward output or a temp)
    transient: NDArray[np.float64]
    #: whether the graph has backward ops (a field: the DP asks per stage and chain)
    training: bool = False

    @property
    def count(self) -> int:
        """How many units there are."""
        return len(self.members)



def units(problem: Problem) -> Units:
    """The pipeline units of `problem`, derived once and cached on it."""
    return derived(problem, "pipeline.units", lambda: _derive(problem))


def unit_arrays(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The units' ops one unit after another (a stage's ops are one run of them), where each
    unit starts among them (and where the last ends), each op's topological position, and
    whether it is a backward op; as arrays, once per problem."""

    def build() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        u = units(problem)
        flat = np.array([i for unit in u.members for i in unit], dtype=np.int64)
        start = np.zeros(u.count + 1, np.int64)
        start[1:] = np.cumsum([len(unit) for unit in u.members])
        topo = np.array(problem.graph.topological_order, dtype=np.int64)
        position = np.empty(len(topo), np.int64)
        position[topo] = np.arange(len(topo), dtype=np.int64)
        return flat, start, position, np.array(u.backward, dtype=bool)

    return derived(problem, "pipeline.unit_arrays", build)


def _derive(problem: Problem) -> Units:
    g = problem.graph
    f = facts(problem)
    n = len(g.ops)
    roots = unit_roots(problem)  # per unit of `facts`, its pipeline unit's
    backward = tuple(i in g.backward_of for i in range(n))
    position = [0] * n
    for k, i in enumerate(g.topological_order):
        position[i] = k
    first: dict[int, int] = {}  # merged unit -> first forward position (else first any)
    for i in g.topological_order:
        r = roots[f.unit_of[i]]
        key = position[i] if not backward[i] else n + position[i]
        first[r] = min(first.get(r, key), key)
    order = sorted(first, key=first.__getitem__)
    slot = {r: k for k, r in enumerate(order)}
    members: list[list[int]] = [[] for _ in order]
    for i in g.topological_order:
        members[slot[roots[f.unit_of[i]]]].append(i)
    unit_of = [0] * n
    for k, ops in enumerate(members):
        for i in ops:
            unit_of[i] = k
    allowed = []
    for ops in members:
        common = set(f.allowed[ops[0]])
        for i in ops[1:]:
            common &= set(f.allowed[i])
        allowed.append(tuple(sorted(common)))
    tables = _tables(problem, members, unit_of, backward, allowed)
    names = ("compute_prefix", "forward_prefix", "banned_prefix", "forward_count",
             "forward_bytes", "backward_count", "backward_bytes", "params_prefix",
             "kept_prefix", "transient", "input_prefix", "output_prefix")
    return Units(tuple(map(tuple, members)), tuple(unit_of), backward, tuple(allowed),
                 training=bool(g.backward_of), **dict(zip(names, tables, strict=True)))


def _tables(problem: Problem, members: list[list[int]], unit_of: list[int],
            backward: tuple[bool, ...], allowed: list[tuple[int, ...]],
            ) -> tuple[NDArray[np.float64], ...]:
    g = problem.graph
    c = costs(problem)
    u = len(members)
    m = len(problem.cluster.devices)
    compute = np.zeros((m, u))
    forward = np.zeros((m, u))
    banned = np.ones((m, u))
    for k, devices in enumerate(allowed):
        banned[list(devices), k] = 0.0
    # per unit: params, kept activations, largest transient (`cost.held_bytes`)
    held = [held_bytes(g, ops) for ops in members]
    params, kept, transient = (np.array([h[j] for h in held], dtype=np.float64)
                               for j in range(3))
    for k, ops in enumerate(members):
        for i in ops:
            compute[:, k] += np.where(banned[:, k] > 0, 0.0, c.compute[i])
            if not backward[i]:
                forward[:, k] += np.where(banned[:, k] > 0, 0.0, c.compute[i])
    fc, fb, bc, bb = _crossings(g, unit_of, u)
    cut = [np.cumsum(t) for t in (fc, fb, bc, bb)]
    for t in cut:
        t[0] = 0.0
        t[u] = 0.0
    zero = np.zeros((m, 1))
    prefix = np.concatenate([zero, np.cumsum(compute, axis=1)], axis=1)
    forward_prefix = np.concatenate([zero, np.cumsum(forward, axis=1)], axis=1)
    banned_prefix = np.concatenate([zero, np.cumsum(banned, axis=1)], axis=1)
    return (prefix, forward_prefix, banned_prefix, *cut, np.concatenate([[0.0], np.cumsum(params)]),
            np.concatenate([[0.0], np.cumsum(kept)]), transient,
            *_ends(g, members, backward))


def _ends(g: Graph, members: list[list[int]], backward: tuple[bool, ...],
          ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Prefix sums over units of the outputs of the model's data inputs (0 without
    backward ops) and of its outputs (module docstring)."""
    n = len(members)
    inputs, outputs = np.zeros(n + 1), np.zeros(n + 1)
    fed = {e.dst for e in g.edges if not backward[e.src]}
    read = {e.src for e in g.edges if not backward[e.dst]}
    graded = set(g.backward_of.values())
    for k, ops in enumerate(members):
        for i in ops:
            if backward[i]:
                continue
            if g.backward_of and i not in graded and i not in fed:
                inputs[k + 1] += g.ops[i].output_bytes
            elif i not in read:
                outputs[k + 1] += g.ops[i].output_bytes
    return np.cumsum(inputs), np.cumsum(outputs)


def _crossings(g: Graph, unit_of: list[int], u: int) -> tuple[NDArray[np.float64], ...]:
    """Per boundary 0..u: forward (count, bytes) and backward (count, bytes) of the
    tensors crossing it. A producer's tensor crosses every boundary between its unit and
    its farthest consumer's, once, carrying the largest bytes of its consumers beyond
    that boundary (what a stage relays on is what the stages after it still need)."""
    consumers: dict[int, dict[int, int]] = {}  # producer -> its consumers' unit -> bytes
    for (src, b), nbytes in copies((e.src, unit_of[e.dst], e.bytes) for e in g.edges).items():
        consumers.setdefault(src, {})[b] = nbytes
    fc, fb, bc, bb = (np.zeros(u + 1) for _ in range(4))
    for src, sizes in consumers.items():
        a = unit_of[src]
        ahead = sorted((b for b in sizes if b > a), reverse=True)
        largest = 0
        for k, b in enumerate(ahead):  # boundaries (next consumer's unit, b]: `largest`
            largest = max(largest, sizes[b])
            lo = ahead[k + 1] if k + 1 < len(ahead) else a
            fb[lo + 1] += largest
            fb[b + 1] -= largest
        if ahead:
            fc[a + 1] += 1
            fc[ahead[0] + 1] -= 1
        behind = sorted(b for b in sizes if b < a)
        largest = 0
        for k, b in enumerate(behind):  # boundaries (b, next consumer's unit]: `largest`
            largest = max(largest, sizes[b])
            hi = behind[k + 1] if k + 1 < len(behind) else a
            bb[b + 1] += largest
            bb[hi + 1] -= largest
        if behind:
            bc[behind[0] + 1] += 1
            bc[a + 1] -= 1
    return fc, fb, bc, bb
