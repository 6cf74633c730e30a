"""PipeDream profiles (`graph.txt`) -> workloads, keeping the measured times.

The format (msr-fiddle/pipedream's profiler): one node per line,

    nodeK -- <module description> -- forward_compute_time=F, backward_compute_time=B,
    activation_size=A, parameter_size=P

(times in ms, sizes in bytes; `A` may be a list `[a; b; ...]` for a layer with several
outputs), and one edge per line, indented with a tab: `\\tnodeI -- nodeJ`. A size that is
not a whole number of bytes is read rounded up, from its digits, as the language reads
`output 1.5 B` (W916, naming the layer; its range is that of the value as written, E911).

Mapping: each node is an op named `nodeK` (its module is a comment above it) with
`time F ms`, `params P`, `output sum(A)`. An edge carries the producer's activation; from
a multi-output layer to `__getitem__(k)` it carries the k-th output only (E917 where the
layer lists no output k: the profile contradicts itself). Sizes are those of
the batch the profile was taken with. With `training=True` a backward op `nodeK.bwd` of
`time B ms` is added per node (see `planner.workload.training`); data inputs (`Input*` modules)
get none.

Data inputs take no time: the profiler times an `Input*` node as the wait for the data
loader (AlexNet's profile gives it 635.9 ms, against 85.3 ms for the rest of the model,
forward and backward), which is no work of any device; PipeDream's optimizer zeroes it
before it splits the model (`optimizer_graph_hierarchical.py`), and so does the importer:
such a node's op has `time 0 ms`, its measured time is named in the spec's header comment,
and its activation stays its output (the batch the first layers read).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import Diagnostic, DiagnosticSink, Span, SpecError, did_you_mean
from ..spec.load import read_source
from ..units import DIM_WORDS, range_side, range_text, whole_bytes
from ..workload import Imported, Workload, WorkOp, find_cycle_edge
from ..workload.training import add_backward

_FIELDS = ("forward_compute_time", "backward_compute_time", "activation_size",
           "parameter_size")
_NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"  # not `\d`: any script's digits
_VALUE = re.compile(rf"\s*(?:({_NUMBER})|\[\s*({_NUMBER}(?:\s*;\s*{_NUMBER})*)\s*\])\s*\Z")
#: how a node line's fields are written, the hint of an error about them
_FIELDS_HINT = ("a node line's fields: forward_compute_time=F, backward_compute_time=B, "
                "activation_size=A, parameter_size=P (times in ms, sizes in bytes)")
_NAME = re.compile(r"[A-Za-z0-9_]+\Z")
_GETITEM = re.compile(r"__getitem__\((\d+)\)")
#: a key inside a field's value: the field before it lacks its `,`
_RUN_ON = re.compile(r"([A-Za-z_]\w*)\s*=")


#: each field's dimension (times in ms, sizes in bytes)
_DIMS = {"forward_compute_time": "time", "backward_compute_time": "time",
         "activation_size": "size", "parameter_size": "size"}


def _out_of_range(key: str, values: list[float]) -> str | None:
    """"above" or "below" where field `key` (its values summed: a layer's outputs make one
    op's output) is outside what a spec may hold (`units.range_side`), else None: as
    written, before a size is rounded to whole bytes (`output 0.4 B` is E260 in a spec)."""
    total = sum(values)
    return range_side(total * 1e-3 if _DIMS[key] == "time" else total, _DIMS[key])


@dataclass
class _Node:
    name: str
    module: str
    forward_ms: float
    backward_ms: float
    outputs: list[float]
    params: float
    line: int
    #: where its module and its `activation_size` are, for E917
    module_at: Span
    outputs_at: Span


def import_pipedream(path: str | os.PathLike[str], training: bool = False,
                     optimizer: str = "adam", name: str | None = None,
                     command: str | None = None) -> Imported:
    """Import a PipeDream `graph.txt` (see the module docstring)."""
    shown = str(path)
    # missing, a folder, not UTF-8: E001-E004
    text = read_source(Path(path), shown, kind="PipeDream profile")
    graph_name = name or Path(path).resolve().parent.name or "pipedream"
    return parse_pipedream(text, shown, training, optimizer, graph_name, command)


def parse_pipedream(text: str, file: str = "<pipedream>", training: bool = False,
                    optimizer: str = "adam", name: str = "pipedream",
                    command: str | None = None) -> Imported:
    """Parse PipeDream profile text into an `Imported` workload; errors carry file:line."""
    if " -- " not in text:  # no node line, no edge line: another kind of file (a secret?)
        raise SpecError(Diagnostic(  # no span: a caret line would show a line of it
            "E911", f"{file} is not a PipeDream profile: no line is a node or an edge line "
            "(its content is not shown)", None,
            ("expected lines like `node1 -- Conv2d(...) -- forward_compute_time=...` and "
             "`<tab>node1 -- node2`",)))
    sink = DiagnosticSink()
    nodes, edges, broken = _read_lines(sink, text, file)
    pairs = _check_edges(sink, file, nodes, edges, broken)
    edge_bytes = {(a, b): _edge_bytes(sink, nodes[a], nodes[b]) for a, b in pairs}
    sink.raise_if_errors()

    w = Workload(name)
    inputs = [n.name for n in nodes.values() if n.module.strip().startswith("Input")]
    loading = set(inputs)
    for node in nodes.values():
        forward_ms = 0.0 if node.name in loading else node.forward_ms  # the data loader's wait
        w.add(WorkOp(node.name, forward_ms * 1e-3, None, params_bytes=round(node.params),
                     output_bytes=round(sum(node.outputs)), comment=node.module))
    for (a, b), nbytes in edge_bytes.items():
        w.connect(a, b, round(nbytes))
    if training:
        add_backward(w, lambda op: (nodes[op.name].backward_ms * 1e-3, None), optimizer,
                     skip=inputs)
    loading_ms = sum(nodes[n].forward_ms for n in inputs)
    fwd_ms = sum(n.forward_ms for n in nodes.values()) - loading_ms
    bwd_ms = sum(n.backward_ms for n in nodes.values())
    lines = [
        f"Generated by:\n$ {command}" if command else "Generated by planner.io.pipedream",
        f"Source: {file} (PipeDream profiler output, msr-fiddle/pipedream).",
        (f"Graph: {len(w.ops)} ops, {len(w.edges)} edges; measured forward {fwd_ms:.6g} ms, "
         f"backward {bwd_ms:.6g} ms in total."),
        ("Times are as measured by the profiler (on the GPU it ran on, at its batch size); "
         "sizes are its activation and parameter sizes."),
        *([f"Data inputs ({', '.join(inputs)}) take no time, as in PipeDream's optimizer: the "
           f"profiler's {loading_ms:.6g} ms for them is the wait for the data loader."]
          if loading_ms > 0 else []),
        (f"Training step: backward ops with the measured backward times, colocated with "
         f"their forward ops; gradients and {optimizer} state are their params.")
        if training else "Forward pass only (import with --training for backward ops).",
    ]
    stats = {"forward_ms": fwd_ms, "backward_ms": bwd_ms, "nodes": float(len(nodes)),
             "input_ms": loading_ms}
    # 4 significant digits: the profiler's 17 are noise, not precision
    return Imported(w, "\n".join(lines), list(sink.items), stats)


def _read_lines(sink: DiagnosticSink, text: str, file: str
                ) -> tuple[dict[str, _Node], list[tuple[str, str, int]], set[str]]:
    """The node lines (name -> node), the edge lines (src, dst, line number) and the names
    of nodes whose line is malformed; each mistake an error in `sink`."""
    nodes: dict[str, _Node] = {}
    edges: list[tuple[str, str, int]] = []
    broken: set[str] = set()
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        span = Span(file, lineno, 1, lineno, len(line) + 1)
        if line[0] in " \t":
            parts = line.strip().split(" -- ")
            if len(parts) != 2 or not all(_NAME.match(p) for p in parts):
                sink.error("E911", "malformed edge line; expected `<tab>nodeI -- nodeJ`", span)
                continue
            edges.append((parts[0], parts[1], lineno))
            continue
        node = _parse_node(sink, line, span)
        if node is None:
            broken.add(line.partition(" -- ")[0])  # its edges would only repeat the error
            continue
        node.line = lineno
        if node.name in nodes:
            sink.error("E915", f"node `{node.name}` is defined twice", span,
                       f"first defined on line {nodes[node.name].line}")
            continue
        nodes[node.name] = node
    return nodes, edges, broken


def _edge_bytes(sink: DiagnosticSink, src: _Node, dst: _Node) -> float:
    """The bytes from `src` to `dst`: all its outputs, or the k-th alone where `src` lists
    several and `dst` is `__getitem__(k)`; E917 where it lists fewer (was: all of them)."""
    outs = src.outputs
    m = _GETITEM.fullmatch(dst.module.strip())
    if m is None or len(outs) < 2:  # one output (a tuple profiled as one): what it holds
        return sum(outs)
    k = int(m.group(1))
    if k >= len(outs):
        sink.error("E917", f"node `{dst.name}` is `__getitem__({k})` of node `{src.name}`, "
                   f"whose `activation_size` lists {len(outs)} outputs (0 to {len(outs) - 1})",
                   dst.module_at, "the profile contradicts itself: correct the index, or the "
                   f"outputs of `{src.name}`",
                   notes=((f"the outputs of `{src.name}`", src.outputs_at),))
        return 0.0
    return outs[k]


def _check_edges(sink: DiagnosticSink, file: str, nodes: dict[str, _Node],
                 edges: list[tuple[str, str, int]], broken: set[str]) -> list[tuple[str, str]]:
    """The distinct edges between known nodes, in file order; unknown nodes, self-loops,
    an empty profile and a cycle are errors in `sink`."""
    seen: set[tuple[str, str]] = set()
    pairs: list[tuple[str, str]] = []
    for a, b, lineno in edges:
        span = Span(file, lineno, 2, lineno, 2 + len(a) + 4 + len(b))
        for n in (a, b):
            if n not in nodes and n not in broken:
                sink.error("E912", f"edge names unknown node `{n}`", span)
        if a == b:
            sink.error("E913", f"edge from `{a}` to itself", span)
        if a in nodes and b in nodes and a != b and (a, b) not in seen:
            seen.add((a, b))
            pairs.append((a, b))
    if not nodes and not sink.has_errors:
        sink.error("E911", f"{file} holds no PipeDream node lines", Span.start_of(file),
                   "expected lines like `node1 -- Conv2d(...) -- forward_compute_time=...`")
    if not sink.has_errors:
        cycle = find_cycle_edge(list(nodes), pairs)
        if cycle is not None:
            ln = next(ln for a, b, ln in edges if (a, b) == cycle)
            sink.error("E914", f"the edges form a cycle through `{cycle[0]}` -> `{cycle[1]}`",
                       Span(file, ln, 1, ln, 2), "a profile graph must be acyclic")
    return pairs


def _parse_node(sink: DiagnosticSink, line: str, span: Span) -> _Node | None:
    head, sep, rest = line.partition(" -- ")
    module, sep2, fields = rest.rpartition(" -- ")
    if not sep or not sep2 or not _NAME.match(head):
        sink.error("E911", "malformed node line; expected `nodeK -- <module> -- "
                   "forward_compute_time=F, backward_compute_time=B, activation_size=A, "
                   "parameter_size=P`", span)
        return None
    read = _fields(sink, fields, span, len(line) - len(fields) + 1)
    if read is None:
        return None
    values, spans = read
    missing = [k for k in _FIELDS if k not in values]
    if missing:
        at = len(line) - len(fields) + 1
        sink.error("E911", "node line lacks " + ", ".join(f"`{k}`" for k in missing),
                   Span(span.file, span.line, at, span.line, max(len(line.rstrip()) + 1, at + 1)),
                   _FIELDS_HINT)
        return None
    parsed: dict[str, list[float]] = {}
    layer = f"node `{head}` ({_short(module)})"
    for key in _FIELDS:
        numbers = _parse_value(sink, key, values[key], spans[key], layer)
        if numbers is None:
            return None
        parsed[key] = numbers
    col = len(head) + 5
    return _Node(head, module, parsed["forward_compute_time"][0],
                 parsed["backward_compute_time"][0], parsed["activation_size"],
                 parsed["parameter_size"][0], span.line,
                 Span(span.file, span.line, col, span.line, col + len(module)),
                 spans["activation_size"])


def _fields(sink: DiagnosticSink, fields: str, line: Span, column: int
            ) -> tuple[dict[str, str], dict[str, Span]] | None:
    """The `key=value` items of a node line's `fields` (which begin at `column` of `line`):
    each key's value as written, and the span of that value, its spaces left out (a
    diagnostic about it points at it; before, a key written `key = value` got a column
    counted from a search for `key=` that failed). None with E911 at the key where a key
    is unknown (was: reported as the field it misspells, missing) or written twice (was:
    the last kept without a word). PipeDream's own parser (`graph.Node.from_str`) reads the
    four values by position and ignores their keys, and its profiler writes only these
    four, in this order: every real profile passes."""
    values: dict[str, str] = {}
    spans: dict[str, Span] = {}
    keys_at: dict[str, Span] = {}
    ok = True
    for item in fields.split(","):
        key, eq, value = item.partition("=")
        if eq:
            name = key.strip()
            key_col = column + len(key) - len(key.lstrip())
            key_at = Span(line.file, line.line, key_col, line.line, key_col + max(1, len(name)))
            if name not in _DIMS:
                sink.error("E911", f"unknown key `{_short(name)}` in a node line", key_at,
                           *_unknown_key_hints(name))
                ok = False
            elif name in keys_at:
                sink.error("E911", f"`{name}` is written twice in a node line", key_at,
                           f"keep one `{name}=`: each field is written once",
                           notes=(("first written here", keys_at[name]),))
                ok = False
            else:
                start = column + len(key) + 1 + len(value) - len(value.lstrip())
                values[name] = value
                spans[name] = Span(line.file, line.line, start, line.line,
                                   start + max(1, len(value.strip())))
                keys_at[name] = key_at
            ok = _parted(sink, item, value, line, column) and ok
        elif item.strip():  # was: dropped, then reported as a missing field
            at_col = column + len(item) - len(item.lstrip())
            text = item.strip()
            sink.error("E911", f"a node line's field `{_short(text)}` has no `=`",
                       Span(line.file, line.line, at_col, line.line, at_col + len(text)),
                       f"write it `KEY=VALUE`, e.g. `{_field_fix(text)}`", _FIELDS_HINT)
            ok = False
        column += len(item) + 1
    return (values, spans) if ok else None


def _parted(sink: DiagnosticSink, item: str, value: str, line: Span, column: int) -> bool:
    """Whether field `item` (at `column` of `line`; `value`, what follows its `=`) holds no
    second key; else E911 at that key, which lacks the `,` before it (was: one value,
    `0.5 backward_compute_time=1.0`, and every later field reported missing)."""
    m = _RUN_ON.search(value)
    if m is None:
        return True
    at = column + len(item) - len(value) + m.start()
    key = _short(m.group(1))
    sink.error("E911", f"no `,` before `{key}`: it reads as part of the field before it",
               Span(line.file, line.line, at, line.line, at + len(m.group(1))),
               f"write `, ` before `{key}`", _FIELDS_HINT)
    return False


def _field_fix(text: str) -> str:
    """`text`, a field written without `=`, as `KEY=VALUE` where it reads `KEY VALUE` or
    `KEY:VALUE` (any white space around), else `KEY=N`."""
    key, *value = re.split(r"\s*:\s*|\s+", text, maxsplit=1)
    return f"{_short(key)}={_short(value[0]) if value and value[0] else 'N'}"


def _unknown_key_hints(key: str) -> tuple[str, ...]:
    """How to mend unknown key `key`: the field it misspells, if one is close; what a line
    of PipeDream's partitioned graph is, for its ` -- stage_id=N` (read as a fields part)."""
    if key == "stage_id":
        return ("` -- stage_id=N` ends a line of a graph PipeDream's optimizer partitioned "
                "(`gpus=N.txt`): import the profile (`graph.txt`) it was made from",)
    return (*did_you_mean(key[:200], _FIELDS), _FIELDS_HINT)


def _short(module: str, most: int = 40) -> str:
    """A layer's module as a message names it: cut after `most` characters."""
    module = module.strip()
    return module if len(module) <= most else module[:most] + "…"


def _parse_value(sink: DiagnosticSink, key: str, text: str, at: Span,
                 layer: str) -> list[float] | None:
    """The numbers of field `key` (`text`, its spaces at `at`, on the node line of `layer`),
    or None with E911 at the value: not a number, a list where one number goes, negative
    (at the negative number; was: the whole line), or out of the language's range; sizes in
    whole bytes, rounded up (W916 where they were not)."""
    m = _VALUE.match(text)
    if m is None:
        sink.error("E911", f"`{key}` is not a number or a `[a; b]` list: `{text.strip()}`", at,
                   f"`{key}` is in {'ms' if _DIMS[key] == 'time' else 'bytes'}: a number "
                   "such as `1.5`" + (", or one per output: `[a; b]`"
                                      if key == "activation_size" else ""))
        return None
    if m.group(2) is not None and key != "activation_size":  # its first was taken
        sink.error("E911", f"`{key}` is a list, and it takes one number: `{text.strip()}`",
                   at, "only `activation_size` lists values, one per output of the layer")
        return None
    numbers = [float(x) or 0.0 for x in (m.group(1) or m.group(2)).split(";")]  # -0.0: 0
    if any(x < 0 for x in numbers):
        _negative(sink, key, text, at)
        return None
    side = _out_of_range(key, numbers)
    if side is not None:
        dim = _DIMS[key]
        sink.error("E911", f"`{key}` is {side} the valid range of a {DIM_WORDS[dim]}", at,
                   f"a {DIM_WORDS[dim]} is {range_text(dim)}")
        return None
    if _DIMS[key] != "size":
        return numbers
    texts = (m.group(1) or m.group(2)).split(";")
    wholes = [whole_bytes(t.strip(), 1.0, x) for t, x in zip(texts, numbers, strict=True)]
    if not all(exact for _, exact in wholes):
        read = "; ".join(str(n) for n, _ in wholes)
        sink.warning("W916", f"{layer}: `{key}` {text.strip()} is not a whole number of "
                     f"bytes: read as {read if len(wholes) == 1 else f'[{read}]'} B", at,
                     "sizes are whole bytes, rounded up as a spec's `output 1.5 B` is")
    return [float(n) for n, _ in wholes]


def _negative(sink: DiagnosticSink, key: str, text: str, at: Span) -> None:
    """E911 at the first negative number of field `key` (`text`, its spaces at `at`)."""
    base = at.column - (len(text) - len(text.lstrip()))
    bad = next(m for m in re.finditer(_NUMBER, text) if float(m.group()) < 0)
    sink.error("E911", f"`{key}` is negative: `{bad.group()}`",
               Span(at.file, at.line, base + bad.start(), at.line, base + bad.end()),
               f"a {DIM_WORDS[_DIMS[key]]} is {range_text(_DIMS[key])}")
