"""The problem's pipeline units as the model's dense tables, and the in-flight count."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...cost import INF, costs, transfer_seconds
from ...model import Pipeline, Problem, derived
from ...pipeline.split import in_flight
from ...pipeline.units import units


@dataclass(frozen=True, slots=True)
class _Data:
    """A problem's pipeline units as the model's dense tables (per unit k, device d; per
    boundary x, 0..n)."""

    n: int
    m: int
    allowed: tuple[tuple[int, ...], ...]
    compute: tuple[tuple[float, ...], ...]
    forward: tuple[tuple[float, ...], ...]
    params: tuple[float, ...]
    kept: tuple[float, ...]
    #: of `kept`: the model's data inputs and its outputs (`units.input_prefix`, ...)
    inputs: tuple[float, ...]
    outputs: tuple[float, ...]
    transient: tuple[float, ...]
    #: per boundary: forward (count, bytes) and backward (count, bytes) crossing it
    fc: tuple[float, ...]
    fb: tuple[float, ...]
    bc: tuple[float, ...]
    bb: tuple[float, ...]
    caps: tuple[int, ...]
    training: bool
    #: [a][b]: latency and seconds per byte from a to b (INF latency: no link)
    latency: tuple[tuple[float, ...], ...]
    inv_bandwidth: tuple[tuple[float, ...], ...]

    def sent(self, count: float, nbytes: float, a: int, b: int) -> float:
        """Seconds of `count` tensors of `nbytes` in all from a to b (INF: no link)."""
        if a == b:
            return 0.0
        return float(transfer_seconds(self.latency[a][b], self.inv_bandwidth[a][b], nbytes,
                                      count))

    def forward_s(self, x: int, a: int, b: int) -> float:
        """f_x(a, b): boundary x's forward tensors, a (left) -> b (right)."""
        return self.sent(self.fc[x], self.fb[x], a, b)

    def backward_s(self, x: int, a: int, b: int) -> float:
        """r_x(a, b): boundary x's backward tensors when a is left and b right of it,
        sent b -> a."""
        return self.sent(self.bc[x], self.bb[x], b, a)


def _data(problem: Problem) -> _Data:
    return derived(problem, "pipeilp.data", lambda: _derive(problem))


def _derive(problem: Problem) -> _Data:
    u = units(problem)
    c = costs(problem)
    m = len(problem.cluster.devices)
    compute, forward, params, kept, transient = [], [], [], [], []
    inputs, outputs = np.diff(u.input_prefix), np.diff(u.output_prefix)
    for k, ops in enumerate(u.members):
        allowed = set(u.allowed[k])
        compute.append(tuple(sum(c.compute[i][d] for i in ops) if d in allowed else INF
                             for d in range(m)))
        forward.append(tuple(sum(c.compute[i][d] for i in ops if not u.backward[i])
                             if d in allowed else INF for d in range(m)))
        params.append(float(u.params_prefix[k + 1] - u.params_prefix[k]))
        kept.append(float(u.kept_prefix[k + 1] - u.kept_prefix[k]))
        transient.append(float(u.transient[k]))

    def floats(t: NDArray[np.float64]) -> tuple[float, ...]:
        return tuple(float(v) for v in t)

    return _Data(u.count, m, u.allowed, tuple(compute), tuple(forward), tuple(params),
                 tuple(kept), floats(inputs), floats(outputs), tuple(transient),
                 floats(u.forward_count),
                 floats(u.forward_bytes), floats(u.backward_count), floats(u.backward_bytes),
                 tuple(d.memory_bytes for d in problem.cluster.devices), u.training,
                 tuple(tuple(float(v) for v in row) for row in c.latency),
                 tuple(tuple(float(v) for v in row) for row in c.inv_bandwidth))


def _pipeline(problem: Problem) -> Pipeline:
    return problem.pipeline or Pipeline()


def _count(problem: Problem, data: _Data, devices: int, rank: int) -> int:
    """Micro-batches in flight on the device of `rank` among `devices` in use, each
    holding one stage (the `runs` rows)."""
    return in_flight(_pipeline(problem), devices, rank, data.training, rank, devices)
