"""Random layered DAG problems for the algorithm tests (built directly, no spec text)."""

from __future__ import annotations

import dataclasses
import random

from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem

MIB = 1024**2


def layered_problem(
    n_ops: int,
    n_edges: int,
    n_devices: int,
    seed: int = 0,
    *,
    cap_bytes: int | None = None,
    speeds: tuple[float, ...] | None = None,
    contention: str = "none",
    memory_model: str = "static",
    groups: int = 0,
) -> Problem:
    """A random layered DAG: ~sqrt(n) ops per layer, every op but the first layer fed by the
    previous layer, extra edges from the three layers before; times 0.1-2 ms, params 0-4
    MiB, outputs 0.1-4 MiB; devices linked all-to-all at 10 GB/s and 10 us. `groups`
    colocation groups of 2-3 ops each. Deterministic in `seed`."""
    rng = random.Random(seed)
    width = max(1, int(n_ops**0.5))
    layer = [i // width for i in range(n_ops)]
    ops = tuple(
        Op(f"op{i}", rng.uniform(1e-4, 2e-3), params_bytes=rng.randrange(0, 4 * MIB),
           output_bytes=rng.randrange(MIB // 10, 4 * MIB), temp_bytes=rng.randrange(0, MIB))
        for i in range(n_ops))
    edges: dict[tuple[int, int], int] = {}
    for j in range(width, n_ops):
        lo = (layer[j] - 1) * width
        i = rng.randrange(lo, lo + width)
        edges[(i, j)] = ops[i].output_bytes
    tries = 0
    while len(edges) < n_edges and tries < 20 * n_edges and n_ops > width:
        tries += 1
        j = rng.randrange(width, n_ops)
        lo = max(0, (layer[j] - 3) * width)
        hi = layer[j] * width
        i = rng.randrange(lo, hi)
        edges.setdefault((i, j), ops[i].output_bytes)
    edge_t = tuple(Edge(a, b, nb) for (a, b), nb in sorted(edges.items()))
    members = list(range(n_ops))
    rng.shuffle(members)
    colocations = []
    for _ in range(groups):
        size = rng.choice((2, 3))
        if len(members) < size:
            break
        colocations.append(tuple(sorted(members[:size])))
        del members[:size]
    graph = Graph(f"layered{n_ops}", ops, edge_t, tuple(sorted(colocations)))
    if cap_bytes is None:  # room for everything, received copies included, on every device
        cap_bytes = sum(o.params_bytes + 2 * o.output_bytes + o.temp_bytes for o in ops)
    speeds = speeds or (1.0,) * n_devices
    devices = tuple(Device(f"gpu{d}", cap_bytes, None, speeds[d % len(speeds)])
                    for d in range(n_devices))
    links = tuple(Link(a, b, 10e9, 10e-6)
                  for a in range(n_devices) for b in range(n_devices) if a != b)
    return Problem(graph.name, graph, Cluster("c", devices, links), memory_model,  # type: ignore[arg-type]
                   contention)  # type: ignore[arg-type]


def training_problem(
    n_layers: int,
    n_devices: int,
    seed: int = 0,
    *,
    slack: float = 1.3,
    contention: str = "none",
) -> Problem:
    """A training-like graph, memory-tight: a forward chain `f0 -> f1 -> ...` with some skip
    edges, a `loss` op, and per forward op a backward op `fK.bwd` colocated with it. The
    backward op reads the forward op's output (same device), its input activation and the
    gradient from the next backward op; it holds 3x the forward params (gradients, optimiser
    state) and outputs the gradient of the input. Every device holds `slack` times an even
    share of the total static memory (params, outputs, largest temp). Deterministic in
    `seed`."""
    rng = random.Random(seed)
    params = [rng.randrange(0, 16) * MIB for _ in range(n_layers)]
    out = [rng.randrange(8, 64) * MIB for _ in range(n_layers)]
    times = [rng.uniform(2e-4, 2e-3) for _ in range(n_layers)]
    ops = [Op(f"f{k}", times[k], params_bytes=params[k], output_bytes=out[k])
           for k in range(n_layers)]
    ops.append(Op("loss", 1e-4, output_bytes=out[-1]))
    loss = n_layers
    ops += [Op(f"f{k}.bwd", 2 * times[k], params_bytes=3 * params[k],
               output_bytes=out[k - 1] if k else MIB) for k in range(n_layers)]
    bwd = [loss + 1 + k for k in range(n_layers)]
    edges: dict[tuple[int, int], int] = {}
    for k in range(n_layers - 1):
        edges[(k, k + 1)] = out[k]
        if k + 2 < n_layers and rng.random() < 0.3:
            edges[(k, k + 2)] = out[k]
    edges[(n_layers - 1, loss)] = out[-1]
    for k in range(n_layers):
        edges[(k, bwd[k])] = out[k]
        if k:
            edges[(k - 1, bwd[k])] = out[k - 1]
        edges[(bwd[k + 1] if k + 1 < n_layers else loss, bwd[k])] = out[k]
    graph = Graph("train", tuple(ops),
                  tuple(Edge(a, b, nb) for (a, b), nb in sorted(edges.items())),
                  tuple((k, bwd[k]) for k in range(n_layers)))
    total = sum(o.params_bytes + o.output_bytes for o in ops)
    cap = int(slack * total / n_devices)
    devices = tuple(Device(f"gpu{d}", cap) for d in range(n_devices))
    links = tuple(Link(a, b, 10e9, 10e-6)
                  for a in range(n_devices) for b in range(n_devices) if a != b)
    return Problem("train", graph, Cluster("c", devices, links), "static",  # type: ignore[arg-type]
                   contention)  # type: ignore[arg-type]


def with_zero_time_ops(problem: Problem, seed: int) -> Problem:
    """A third of the ops take no time (shapes, views, casts), with their outputs kept."""
    rng = random.Random(seed)
    ops = tuple(dataclasses.replace(o, time_s=0.0) if rng.random() < 0.33 else o
                for o in problem.graph.ops)
    return dataclasses.replace(problem, graph=dataclasses.replace(problem.graph, ops=ops))
