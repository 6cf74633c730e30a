"""Problem makers shared by the exact-solver tests and `bench/bench_exact.py`.

- `random_problem`: a random DAG on a heterogeneous cluster (device speeds, a kind-specific
  time, asymmetric per-pair links, optional memory caps, pins, colocation, a missing link),
  with communication comparable to compute.
- `stg_problem`: a Standard Task Graph Set instance (Tobita & Kasahara 2002) on `P`
  identical processors without communication, as in `../shared/datasets/stg`.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem

MB = 1_000_000


def random_problem(
    seed: int,
    n: int,
    m: int,
    *,
    edge_p: float = 0.35,
    memory: float | None = None,
    pins: int = 0,
    colocate: bool = False,
    missing_link: bool = False,
    identical: bool = False,
    contention: str = "none",
) -> Problem:
    """A random instance; `memory` = each cap as a fraction of the total static bytes."""
    rng = random.Random(seed)
    ops = []
    for i in range(n):
        kinds = {"fast": rng.uniform(0.5, 3) * 1e-3} if (not identical and rng.random() < 0.2) \
            else {}
        ops.append(Op(
            f"op{i}", time_s=rng.uniform(1, 10) * 1e-3, time_by_kind=kinds,
            params_bytes=rng.randint(1, 8) * MB, output_bytes=rng.randint(1, 4) * MB,
            temp_bytes=rng.choice([0, 0, rng.randint(1, 3) * MB])))
    edges = []
    for j in range(1, n):
        preds = [i for i in range(j) if rng.random() < edge_p]
        if not preds and rng.random() < 0.7:
            preds = [rng.randrange(j)]
        edges.extend(Edge(i, j, rng.randint(1, 20) * MB) for i in preds)
    colocations: tuple[tuple[int, ...], ...] = ()
    if colocate and n >= 3:
        a, b = rng.sample(range(n), 2)
        colocations = (tuple(sorted((a, b))),)
    total = sum(o.params_bytes + o.output_bytes + o.temp_bytes for o in ops)
    cap = int(total * memory) if memory else 64 * 1024 * MB
    devices = []
    for d in range(m):
        if identical:
            devices.append(Device(f"gpu{d}", cap, "gpu", 1.0))
        else:
            kind = "fast" if d == m - 1 else "gpu"
            devices.append(Device(f"dev{d}", cap + rng.randint(0, 4) * MB, kind,
                                  rng.choice([0.7, 1.0, 1.5])))
    links = []
    gone = (0, m - 1) if missing_link and m > 2 else None
    for a in range(m):
        for b in range(m):
            if a == b or (a, b) == gone:
                continue
            if identical:
                links.append(Link(a, b, 10e9, 10e-6))
            else:
                links.append(Link(a, b, rng.choice([2e9, 5e9, 10e9, 20e9]),
                                  rng.choice([0.0, 5e-6, 50e-6])))
    pin_map = {}
    for k in range(pins):
        pin_map[rng.randrange(n)] = k % m
    graph = Graph(f"rand{seed}", tuple(ops), tuple(edges), colocations)
    cluster = Cluster("c", tuple(devices), tuple(links))
    return Problem(f"rand{seed}_{n}x{m}", graph, cluster, "static", contention,  # type: ignore[arg-type]
                   pin_map)


def layered_problem(seed: int, n: int, m: int, *, width: int = 6, comm: float = 1.0,
                    contention: str = "none") -> Problem:
    """A layered random DAG on `m` identical devices; `comm` scales transfer times."""
    rng = random.Random(seed)
    ops = [Op(f"op{i}", time_s=rng.uniform(1, 10) * 1e-3, output_bytes=MB) for i in range(n)]
    edges = []
    layers: list[list[int]] = []
    i = 0
    while i < n:
        w = rng.randint(1, width)
        layers.append(list(range(i, min(n, i + w))))
        i += w
    for k in range(1, len(layers)):
        for j in layers[k]:
            srcs = rng.sample(layers[k - 1], min(len(layers[k - 1]), rng.randint(1, 2)))
            if k >= 2 and rng.random() < 0.3:
                srcs.append(rng.choice(layers[k - 2]))
            edges.extend(Edge(s, j, int(rng.uniform(1, 10) * 1e-3 * 1e9 * comm / 2))
                         for s in sorted(set(srcs)))
    devices = tuple(Device(f"gpu{d}", 64 * 1024 * MB, "gpu") for d in range(m))
    links = tuple(Link(a, b, 1e9, 10e-6) for a in range(m) for b in range(m) if a != b)
    graph = Graph(f"layered{seed}", tuple(ops), tuple(edges))
    return Problem(f"layered{seed}_{n}x{m}", graph, Cluster("c", devices, links), "static",
                   contention)  # type: ignore[arg-type]


def stg_problem(path: Path, p: int) -> Problem:
    """An STG file (`n`, then `id cost npred preds...` lines) on `p` identical processors.

    Costs become seconds; no communication (zero bytes, zero latency).
    """
    rows = [ln.split() for ln in path.read_text().splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]
    n = int(rows[0][0])
    ops, edges = [], []
    for r in rows[1:n + 3]:
        tid, cost, npred = int(r[0]), float(r[1]), int(r[2])
        ops.append(Op(f"t{tid}", time_s=cost))
        edges.extend(Edge(int(x), tid, 0) for x in r[3:3 + npred])
    devices = tuple(Device(f"p{d}", 1 << 40, "cpu") for d in range(p))
    links = tuple(Link(a, b, 1e12, 0.0) for a in range(p) for b in range(p) if a != b)
    graph = Graph(path.stem, tuple(ops), tuple(edges))
    return Problem(f"{path.stem}_P{p}", graph, Cluster("procs", devices, links), "static",
                   "none")


def stg_optima(root: Path) -> dict[tuple[str, int], float]:
    """(relative graph path like `50/rand0001.stg`, P) -> published optimal makespan."""
    out: dict[tuple[str, int], float] = {}
    for f in sorted((root / "optimal").glob("Case*_OPT.csv")):
        with f.open() as fh:
            for row in csv.reader(fh):
                if len(row) == 3 and row[1].isdigit():  # 4 fields: not a proven optimum
                    out[(row[0], int(row[1]))] = float(row[2])
    return out


def stg_path(root: Path, rel: str) -> Path | None:
    """The file of graph `rel` (e.g. `50/rand0001.stg`), in the sample or `nontrivial/`."""
    for cand in (root / rel, root / "nontrivial" / rel):
        if cand.is_file():
            return cand
    return None
