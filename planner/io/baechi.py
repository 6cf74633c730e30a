"""Load the Baechi GNMT dataset (`../shared/datasets/baechi-gnmt/*.json`) into a `Problem`.

The JSON holds ops (`name`, `time_us`, `params_bytes`, `output_bytes`, `temp_bytes`,
`colocation`: a TensorFlow colocation group name or null, `topo_order`, ...) and edges
(`src`, `dst`, `bytes`, `tensors`). The cluster is Baechi's own cost model unless told
otherwise: 4 GPUs of 8 GiB, every ordered pair linked with 134 µs latency and
0.0001754 µs per byte (1 / 1.754e-10 B/s ≈ 5.7 GB/s), contention `device` (one channel per
device shared by its sends and receives), static memory, colocation groups kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import Diagnostic, Span, SpecError
from ..model import Cluster, Contention, Device, Edge, Graph, Link, MemoryModel, Op, Problem
from ..spec.load import read_source
from ..strictjson import loads as strict_loads

GIB = 1024**3
#: Baechi's GNMT cost model: per transfer 134 µs + 0.0001754 µs/B
BAECHI_LATENCY_S = 134e-6
BAECHI_BANDWIDTH_BPS = 1 / 1.754e-10


def baechi_cluster(devices: int = 4, memory_bytes: int = 8 * GIB,
                   latency_s: float = BAECHI_LATENCY_S,
                   bandwidth_Bps: float = BAECHI_BANDWIDTH_BPS) -> Cluster:
    """`devices` identical GPUs `gpu0..`, every ordered pair linked alike."""
    devs = tuple(Device(f"gpu{d}", memory_bytes, "gpu") for d in range(devices))
    links = tuple(Link(a, b, bandwidth_Bps, latency_s)
                  for a in range(devices) for b in range(devices) if a != b)
    return Cluster(f"baechi_{devices}gpu", devs, links)


def load_baechi(
    path: str | os.PathLike[str],
    *,
    devices: int = 4,
    memory_bytes: int = 8 * GIB,
    latency_s: float = BAECHI_LATENCY_S,
    bandwidth_Bps: float = BAECHI_BANDWIDTH_BPS,
    contention: Contention = "device",
    memory_model: MemoryModel = "static",
    colocation: bool = True,
    times: Mapping[str, float] | None = None,
) -> Problem:
    """Read a Baechi graph JSON file into a `Problem` on Baechi's cluster (see module doc).

    `times` (`planner.io.times.read_times` of a `--times` file) replaces the measured time
    of every op it names. Raises `SpecError` (E001-E004 unreadable, E920 not JSON, E922 not
    this format) with the file named, never a raw exception.
    """
    shown = str(path)
    text = read_source(Path(path), shown, kind="Baechi graph")
    try:
        data = strict_loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(Diagnostic(
            "E920", f"{shown} is not valid JSON: {err.msg}",
            Span.at_json_error(shown, err),
        )) from None
    graph = baechi_graph(data, shown, colocation=colocation, times=times)
    cluster = baechi_cluster(devices, memory_bytes, latency_s, bandwidth_Bps)
    return Problem(graph.name, graph, cluster, memory_model, contention)


def baechi_graph(data: Any, source: str = "<baechi>", *, colocation: bool = True,
                 times: Mapping[str, float] | None = None) -> Graph:
    """The `Graph` of a parsed Baechi JSON object (times in µs, sizes in bytes).

    Duplicate edges between one pair of ops are merged (largest `bytes`); colocation groups
    of two or more ops become `Graph.colocations`. Raises `SpecError` (E922) on a malformed
    object, an edge naming an unknown op, or a cycle.
    """
    where = Span.start_of(source)

    def bad(message: str, *hints: str) -> SpecError:
        return SpecError(Diagnostic("E922", f"{source}: {message}", where, hints))

    if not isinstance(data, Mapping) or not isinstance(data.get("ops"), list) \
            or not isinstance(data.get("edges"), list):
        raise bad("expected a Baechi graph object with `ops` and `edges` lists",
                  "see ../shared/datasets/README.md for the format")
    ops: list[Op] = []
    index: dict[str, int] = {}
    groups: dict[str, list[int]] = {}
    for k, o in enumerate(data["ops"]):
        try:
            name = str(o["name"])
            time_s = float(o["time_us"]) * 1e-6
            op = Op(name, times.get(name, time_s) if times else time_s,
                    params_bytes=int(o.get("params_bytes", 0)),
                    output_bytes=int(o.get("output_bytes", 0)),
                    temp_bytes=int(o.get("temp_bytes", 0)))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise bad(f"op #{k} lacks a valid `name` and `time_us`") from None
        if name in index:
            raise bad(f"op `{name}` appears twice")
        index[name] = len(ops)
        ops.append(op)
        group = o.get("colocation")
        if colocation and isinstance(group, str):
            groups.setdefault(group, []).append(index[name])
    merged: dict[tuple[int, int], int] = {}
    for k, e in enumerate(data["edges"]):
        try:
            a, b, nbytes = index[e["src"]], index[e["dst"]], int(e["bytes"])
        except KeyError as err:
            raise bad(f"edge #{k} names unknown op {err}") from None
        except (TypeError, ValueError, AttributeError):
            raise bad(f"edge #{k} lacks valid `src`, `dst` and `bytes`") from None
        if a == b:
            raise bad(f"edge #{k} goes from `{ops[a].name}` to itself")
        merged[(a, b)] = max(merged.get((a, b), 0), nbytes)
    edges = tuple(Edge(a, b, nb) for (a, b), nb in merged.items())
    colocations = tuple(sorted(tuple(sorted(m)) for m in groups.values() if len(m) > 1))
    graph = Graph(str(data.get("name", Path(source).stem)), tuple(ops), edges, colocations)
    try:
        graph.topological_order  # noqa: B018 - validates acyclicity once, and caches it
    except ValueError:
        raise bad("the graph has a cycle") from None
    return graph
