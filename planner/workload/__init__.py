"""The intermediate form: a neutral, mutable op graph that importers and generators build,
and its `.plan` text.

Importers (`planner.io`: ONNX, PyTorch, PipeDream, JSON) and generators
(`planner.generate`: Transformer, GNMT) all produce a `Workload`; `render_spec` prints it,
with clusters imported and plans defined, in the canonical layout of `planner fmt` (2-space
indent, one-line blocks of at most 100 columns with attributes two spaces apart, otherwise
one attribute per line with aligned values; names bare when they match
`[A-Za-z_][A-Za-z0-9_.-]*`, JSON strings otherwise). Beside it, the transforms both sides
share: `roofline` (reference device profiles and the roofline time of an op) and
`training` (a forward graph into a training step).

Layer: above `planner.spec` (whose formatter prints the text), below `io` and `generate`.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..errors import Diagnostic, Span
from ..model import Cluster
from ..spec.format import format_source
from ..units import UNITS, format_quantity, parse_number, range_side
from .roofline import round_sig

_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")
MAX_LINE = 100


@dataclass
class WorkOp:
    """One op: compute cost (seconds on the reference device and/or FLOPs) and memory."""

    name: str
    time_s: float | None = None
    flops: float | None = None
    params_bytes: int = 0
    output_bytes: int = 0
    temp_bytes: int = 0
    time_by_kind: dict[str, float] = field(default_factory=dict)
    #: printed as a comment line above the op (e.g. the source layer's description)
    comment: str = ""
    #: the forward op whose gradient this backward op computes (training graphs)
    backward_of: str = ""
    #: the op's kind as its source names it (a module's class): `type` in the spec
    type: str = ""


@dataclass
class WorkEdge:
    """A tensor of `bytes` bytes from op `src` to op `dst` (names)."""

    src: str
    dst: str
    bytes: int


@dataclass
class Workload:
    """A graph under construction: ops, edges, colocation groups (lists of op names) and
    ties (op names, the bytes of the weight they share: `tie` in the spec)."""

    name: str
    ops: list[WorkOp] = field(default_factory=list)
    edges: list[WorkEdge] = field(default_factory=list)
    colocations: list[list[str]] = field(default_factory=list)
    #: (op names, bytes, the weight's name or "")
    ties: list[tuple[list[str], int, str]] = field(default_factory=list)

    def add(self, op: WorkOp) -> WorkOp:
        """Append `op` and return it."""
        self.ops.append(op)
        return op

    def connect(self, src: str, dst: str, nbytes: int) -> None:
        """Add an edge `src -> dst` carrying `nbytes` bytes."""
        self.edges.append(WorkEdge(src, dst, int(nbytes)))

    def totals(self) -> dict[str, float]:
        """Sums over ops: time_s, flops, params, outputs (for headers and reports)."""
        return {
            "time_s": sum(o.time_s or 0.0 for o in self.ops),
            "flops": sum(o.flops or 0.0 for o in self.ops),
            "params_bytes": sum(o.params_bytes for o in self.ops),
            "output_bytes": sum(o.output_bytes for o in self.ops),
        }


@dataclass
class PlanDef:
    """A `plan` block: a graph on a cluster, settings, and hard pins (ops, device)."""

    name: str
    graph: str
    cluster: str
    memory: str = "static"
    contention: str = "link"
    pins: list[tuple[list[str], str]] = field(default_factory=list)
    comment: str = ""
    #: a given placement, `place` statements (ops, device): `--algo expert` and `simulate`
    places: list[tuple[list[str], str]] = field(default_factory=list)
    #: the settings (`memory`, `contention`) that the input file gives this plan, which
    #: the command's --memory and --contention may not contradict
    given: set[str] = field(default_factory=set)
    #: `objective pipeline` settings as (key, value) text, in order (empty: makespan)
    pipeline: list[tuple[str, str]] = field(default_factory=list)
    #: where the input file gives a line of the block, by the word the line begins with
    #: (`plan` for its head, a setting's key, `pin`, `place`), or None: the spec's text is
    #: never written, so a rule of the language that the file's values break is reported
    #: there (called only then: locating reads the file's text)
    origin: Callable[[str], Span | None] | None = None
    #: how to rename, in the input file, what a line beginning with a word (`cluster`,
    #: `plan`) names, where the format names it otherwise than by a `name` field
    renames: dict[str, str] = field(default_factory=dict)


@dataclass
class Imported:
    """An importer's or generator's result: a workload and what its spec file needs.

    `clusters` are cluster blocks already rendered (lines); `exact` prints times and FLOPs
    so that they parse back to the very same floats (the planner-graph JSON interchange
    alone, whose round trip is exact); otherwise they get 4 significant digits in the unit
    that reads best, measured ones included (a profiler's 17 digits are noise).
    """

    workload: Workload
    header: str
    warnings: list[Diagnostic] = field(default_factory=list)
    #: totals for reports and tests (e.g. forward FLOPs, parameter count)
    stats: dict[str, float] = field(default_factory=dict)
    imports: list[str] = field(default_factory=list)
    clusters: list[list[str]] = field(default_factory=list)
    plans: list[PlanDef] = field(default_factory=list)
    exact: bool = False

    def to_spec(self) -> str:
        """The whole `.plan` file: header, imports, graph, clusters, plans."""
        return render_spec(self.header, [self.workload], self.imports, self.plans,
                           self.clusters, self.exact)


#: an op's quantities: (the spec's attribute, the `WorkOp` field, its dimension)
_OP_QUANTITIES = (("time", "time_s", "time"), ("flops", "flops", "work"),
                  ("params", "params_bytes", "size"), ("output", "output_bytes", "size"),
                  ("temp", "temp_bytes", "size"))


def out_of_range(w: Workload) -> tuple[str, str, float, str, str] | None:
    """The first quantity of `w` that a spec may not hold (`units.range_side`), as (the op
    or edge, its attribute, the value, its dimension, "above" or "below"), or None: an
    importer or a generator reports it at its own input before it writes the spec."""
    for op in w.ops:
        values = [(key, getattr(op, name), dim) for key, name, dim in _OP_QUANTITIES]
        values += [(f"time[{kind}]", t, "time") for kind, t in op.time_by_kind.items()]
        for key, value, dim in values:
            side = None if value is None else range_side(value, dim)
            if side is not None:
                return f"op `{op.name}`", key, value, dim, side
    for e in w.edges:
        side = range_side(e.bytes, "size")
        if side is not None:
            return f"edge `{e.src}` -> `{e.dst}`", "bytes", e.bytes, "size", side
    return None


def quote(name: str) -> str:
    """A name as the canonical layout prints it: bare when possible, else a JSON string."""
    return name if _BARE.match(name) else json.dumps(name, ensure_ascii=False)


def quantity_text(value: float, dim: str, exact: bool = False) -> str:
    """`value` (base units) as a quantity; `exact` guarantees it parses back to `value`.

    Exact mode keeps the readable form when it parses back exactly, else takes the shortest
    text (over decimal units, and the base unit with the full float) that does.
    """
    text = format_quantity(value, dim)
    if not exact or _parses_to(text, dim, value):
        return text
    base = {"time": "s", "size": "B", "bandwidth": "B/s", "work": "FLOP", "rate": "FLOPS"}[dim]
    candidates = [f"{float(value)!r} {base}"]
    for unit, factor in UNITS[dim].items():
        if "bps" in unit or "i" in unit:  # bit rates and binary units read worse here
            continue
        for digits in range(1, 18):
            number = f"{value / factor:.{digits}g}"
            if "e" not in number and _parses_to(f"{number} {unit}", dim, value):
                candidates.append(f"{number} {unit}")
                break
    return min(candidates, key=len)


def size_text(nbytes: int) -> str:
    """A size as a quantity that parses back to every byte (`1000000000001 B`, not `1 TB`:
    `format_quantity` allows a relative 1e-12, a byte in a terabyte)."""
    return quantity_text(nbytes, "size", exact=True)


def _parses_to(text: str, dim: str, value: float) -> bool:
    number, unit = text.split(" ")
    return parse_number(number) * UNITS[dim][unit] == value


def time_text(seconds: float, digits: int | None = 4) -> str:
    """A time quantity; rounded to `digits` significant digits, exact when `digits` is None."""
    if digits is None:
        return quantity_text(seconds, "time", exact=True)
    return rounded_text(seconds, "time", digits)


#: units that `rounded_text` writes, largest first
ROUNDED_UNITS = {"time": ("s", "ms", "us", "ns"),
                 "work": ("PFLOP", "TFLOP", "GFLOP", "MFLOP", "KFLOP", "FLOP")}


def rounded_text(value: float, dim: str, digits: int = 4) -> str:
    """`value` with `digits` significant digits in the largest unit that keeps it >= 1
    (the smallest unit below that): `16.73 us`, never `16734.99991738936 ns`.

    The number is rounded after scaling to its unit, so no float noise is printed.
    """
    units = ROUNDED_UNITS[dim]
    rounded = round_sig(value, digits)  # picks 1 ms, not 1000 us, for 0.99995 ms
    unit = next((u for u in units if abs(rounded) >= UNITS[dim][u]), units[-1])
    number = repr(round_sig(value / UNITS[dim][unit], digits)).removesuffix(".0")
    return f"{number} {unit}"


def block(head: str, attrs: Sequence[tuple[str, str]], indent: str = "  ") -> list[str]:
    """`head { k v  k v }` on one line when it fits in 100 columns, else one per line."""
    if not attrs:
        return [f"{indent}{head}"]
    one = f"{indent}{head} {{ " + "  ".join(f"{k} {v}" for k, v in attrs) + " }"
    if len(one) <= MAX_LINE:
        return [one]
    width = max(len(k) for k, _ in attrs) + 1
    return ([f"{indent}{head} {{"]
            + [f"{indent}  {k.ljust(width)}{v}" for k, v in attrs]
            + [f"{indent}}}"])


def op_attrs(op: WorkOp, exact: bool = False) -> list[tuple[str, str]]:
    """The attributes of an op, in the order `time`, `time[kind]`, `flops`, memory.

    Times are rounded to 4 significant digits (they are estimates) unless `exact`, and
    FLOPs likewise; sizes are exact.
    """
    digits = None if exact else 4
    out: list[tuple[str, str]] = []
    if op.time_s is not None:
        out.append(("time", time_text(op.time_s, digits)))
    for kind, t in op.time_by_kind.items():
        out.append((f"time[{quote(kind)}]", time_text(t, digits)))
    if op.flops is not None and (op.flops > 0 or op.time_s is None or exact):
        out.append(("flops", quantity_text(op.flops, "work", True) if exact
                    else rounded_text(op.flops, "work")))
    for key, value in (("params", op.params_bytes), ("output", op.output_bytes),
                       ("temp", op.temp_bytes)):
        if value:
            out.append((key, size_text(value)))
    if op.backward_of:
        out.append(("backward_of", quote(op.backward_of)))
    if op.type:
        out.append(("type", quote(op.type)))
    return out


def comment_lines(text: str, indent: str = "") -> list[str]:
    """`text` as `#` comment lines of at most 100 columns (runs of spaces collapsed).

    Lines starting with `$ ` (commands) are kept whole, however long.
    """
    out: list[str] = []
    for para in text.splitlines() or [""]:
        if para.startswith("$ "):  # a command line: kept whole so it can be copied
            out.append(f"{indent}# {para}")
            continue
        wrapped = textwrap.wrap(" ".join(para.split()), MAX_LINE - len(indent) - 2,
                                break_long_words=False, break_on_hyphens=False)
        out.extend(f"{indent}# {line}" for line in wrapped or [""])
    return [line.rstrip() for line in out]


def render_graph(w: Workload, exact: bool = False) -> list[str]:
    """The `graph` block of `w`: ops, then edges, then colocation groups and ties."""
    lines = [f"graph {quote(w.name)} {{"]
    out_bytes = {o.name: o.output_bytes for o in w.ops}
    for op in w.ops:
        if op.comment:
            lines.extend(comment_lines(op.comment, "  "))
        lines.extend(block(f"op {quote(op.name)}", op_attrs(op, exact)))
    if w.edges:
        lines.append("")
    for e in w.edges:
        head = f"{quote(e.src)} -> {quote(e.dst)}"
        attrs = [] if e.bytes == out_bytes.get(e.src) else [("bytes", size_text(e.bytes))]
        lines.extend(block(head, attrs))
    if w.colocations or w.ties:
        lines.append("")
    for group in w.colocations:
        lines.append("  colocate " + ", ".join(quote(n) for n in group))
    for names, nbytes, weight in w.ties:
        named = f"  weight {quote(weight)}" if weight else ""
        lines.append("  tie " + ", ".join(quote(n) for n in names)
                     + f" {{ bytes {size_text(nbytes)}{named} }}")
    lines.append("}")
    return lines


def render_cluster(cluster: Cluster, exact: bool = False, comment: str = "") -> list[str]:
    """A `cluster` block: one device per line, then links (`<->` where both directions
    match), with the `{` of consecutive one-line links aligned as `planner fmt` does."""
    lines = comment_lines(comment) if comment else []
    lines.append(f"cluster {quote(cluster.name)} {{")
    for d in cluster.devices:
        attrs: list[tuple[str, str]] = []
        if d.kind is not None:
            attrs.append(("kind", quote(d.kind)))
        attrs.append(("memory", quantity_text(d.memory_bytes, "size", exact)))
        if d.flop_rate is not None:
            attrs.append(("flops", quantity_text(d.flop_rate, "rate", exact)))
        if d.speed != 1.0:
            speed = repr(float(d.speed))
            attrs.append(("speed", speed.removesuffix(".0")))
        lines.extend(block(f"device {quote(d.name)}", attrs))
    names = [d.name for d in cluster.devices]
    table = {(lk.src, lk.dst): lk for lk in cluster.links}
    heads: list[tuple[str, list[tuple[str, str]]]] = []
    for (a, b), lk in sorted(table.items()):
        back = table.get((b, a))
        same = back is not None and (back.bandwidth_Bps, back.latency_s) == (
            lk.bandwidth_Bps, lk.latency_s)
        if same and a > b:
            continue
        arrow = "<->" if same else "->"
        attrs = [("bandwidth", quantity_text(lk.bandwidth_Bps, "bandwidth", exact))]
        if lk.latency_s:
            attrs.append(("latency", quantity_text(lk.latency_s, "time", exact)))
        heads.append((f"link {quote(names[a])} {arrow} {quote(names[b])}", attrs))
    if heads:
        lines.append("")
    width = max((len(h) for h, _ in heads), default=0)
    for head, attrs in heads:
        one = block(head.ljust(width), attrs)
        lines.extend(one if len(one) == 1 else block(head, attrs))
    lines.append("}")
    return lines


def render_plan(p: PlanDef) -> list[str]:
    """The `plan` block of `p`, settings aligned like `planner fmt` aligns them."""
    lines = comment_lines(p.comment) if p.comment else []
    lines.append(f"plan {quote(p.name)} {{")
    settings = [("graph", quote(p.graph)), ("cluster", quote(p.cluster)),
                ("memory", p.memory), ("contention", p.contention), *p.pipeline]
    width = max(len(k) for k, _ in settings) + 1
    lines.extend(f"  {k.ljust(width)}{v}" for k, v in settings)
    for ops, dev in p.pins:
        lines.append(f"  pin {', '.join(quote(o) for o in ops)} to {quote(dev)}")
    for ops, dev in p.places:
        lines.append(f"  place {', '.join(quote(o) for o in ops)} on {quote(dev)}")
    lines.append("}")
    return lines


def plan_origin(text: str, line: int, plans: Sequence[PlanDef]) -> Span | None:
    """Where the input file gives line `line` (1-based) of `text`, a spec rendered with
    `plans`: a line of a plan block that the plan's `origin` locates, else None."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    head = next((h for h in reversed(lines[:line]) if h[:1] not in ("", " ", "#")), "")
    plan = next((p for p in plans if head == f"plan {quote(p.name)} {{"), None)
    if plan is None or plan.origin is None:
        return None
    words = lines[line - 1].split()
    return plan.origin(words[0] if words else "")


def render_spec(header: str, workloads: Iterable[Workload], imports: Sequence[str] = (),
                plans: Sequence[PlanDef] = (), clusters: Sequence[list[str]] = (),
                exact: bool = False) -> str:
    """A whole spec file: header comment, imports, graphs, clusters (pre-rendered), plans.

    The result is passed through `planner fmt` when the formatter is available, so it is
    canonical by construction.
    """
    items: list[list[str]] = [[f"import {json.dumps(path)}" for path in imports]] if imports else []
    items.extend(render_graph(w, exact) for w in workloads)
    items.extend(clusters)
    items.extend(render_plan(p) for p in plans)
    head = comment_lines(header)
    parts: list[str] = []
    for k, item in enumerate(items):
        parts.append("\n".join((head if k == 0 else []) + item))
    return canonical("\n\n".join(parts) + "\n")


def canonical(text: str, file: str = "<generated>") -> str:
    """`text` in the canonical layout of `planner fmt`."""
    return format_source(text, file)


def find_cycle_edge(names: list[str], pairs: list[tuple[str, str]]) -> tuple[str, str] | None:
    """None if the graph is acyclic, else an edge between ops that lie on or between cycles.

    Kahn's algorithm from both ends: what survives pruning sources and sinks has cycles.
    """
    left = set(names)
    for forward in (True, False):
        deg = dict.fromkeys(left, 0)
        nxt: dict[str, list[str]] = {n: [] for n in left}
        for a, b in pairs:
            if a in left and b in left:
                src, dst = (a, b) if forward else (b, a)
                nxt[src].append(dst)
                deg[dst] += 1
        ready = [n for n in left if deg[n] == 0]
        while ready:
            n = ready.pop()
            left.discard(n)
            for m in nxt[n]:
                deg[m] -= 1
                if deg[m] == 0:
                    ready.append(m)
    return next(((a, b) for a, b in pairs if a in left and b in left), None)
