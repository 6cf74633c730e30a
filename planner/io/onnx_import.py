"""ONNX models -> workloads: one op per compute node, weights as params, roofline times.

Reading. The model is read with the `onnx` package and its shape inference (symbolic
dimensions of the graph inputs are fixed to 1 first), its nodes taken in an order where
each follows the producers of its inputs (graph order where it is one; a cycle is E902). A
tensor is *constant* when it is an initializer or the output of a node whose inputs are
all constant (`Constant`, `ConstantOfShape` fed by an initializer, as in the weightless
"light" model-zoo files, or an `Unsqueeze`/`Reshape` of a weight); constant nodes are
folded away. A node with no input but `Constant` (`RandomNormal`, a custom generator), and
a random one whatever it reads (`RandomUniformLike`, `Bernoulli`, `Multinomial`), is no
constant: it computes a fresh tensor each run, an op with its output bytes, not a weight.
`RandomUniformLike` and `RandomNormalLike` read only their input's shape, known when the
model is imported: that input is no param of theirs, moves no bytes, and its edge from its
producer carries 0 bytes (an order, not a transfer).
Every other node becomes one op, and every graph input that is not an initializer becomes
a data op taking the time to write its bytes to memory. The constants
a node reads are the `params` of its op (a constant read by two ops is charged to both);
the number of parameters counts the distinct floating-point constants once. A node with
subgraphs (`If`, `Loop`, `Scan`) reads what their nodes read from the graph around them,
as if those tensors were inputs of its own.

Sizes. Floating-point tensors take the chosen dtype's size (fp32: 4 bytes, fp16: 2);
integer tensors keep theirs. `--batch N` (default: the model's own) scales every
activation (tensor that depends on a graph input), and every op's FLOPs, by N / the
model's own batch (the first dimension of its first data input): exact for the per-sample
layers of these models, and immune to reshapes that hard-code the batch. An op's output is
the sum of its outputs that some op or the graph consumes; an edge carries the tensors its
producer sends to its consumer.

Time. `time = max(FLOPs / peak, bytes moved / memory bandwidth)` on a reference profile
(`planner.workload.roofline`), where bytes moved are the op's inputs (activations and weights)
plus its outputs.

FLOP formulas (1 FLOP = one add or one multiply; a multiply-add counts 2; shapes are the
inferred ones; "elements" are output elements unless said otherwise):

======================================  ===================================================
op type                                 FLOPs
======================================  ===================================================
Conv                                    2 · out elements · (C_in / group) · kernel area,
                                        + out elements if it has a bias
ConvTranspose                           2 · in elements · (C_out / group) · kernel area,
                                        + out elements if it has a bias
Gemm                                    2 · M · N · K, + M · N if it has C
MatMul                                  2 · out elements · K (K = last dim of A)
BatchNormalization                      2 per element (folded scale and shift)
LayerNormalization, InstanceNorm.,      7 per element (mean, centre, square, variance,
GroupNormalization                      normalise, scale, shift)
MaxPool, AveragePool, LpPool            out elements · kernel area
GlobalAveragePool, GlobalMaxPool,       in elements
ReduceMean, ReduceSum, ReduceMax, ...
LRN                                     (2 · size + 3) per element
Softmax, LogSoftmax                     5 per element (max, subtract, exp, sum, divide)
Add, Sub, Mul, Div, Relu, Clip, ...     1 per element
Sum, Max, Min (k inputs)                k - 1 per element; Mean: k per element
Exp, Log, Sqrt, Sigmoid, Tanh, Erf,     4 per element (transcendental)
Gelu, Pow, Softplus, Elu, ...
RandomUniform, RandomUniformLike,       1 per element
Bernoulli
RandomNormal, RandomNormalLike          4 per element (a logarithm, a root, a cosine)
Concat, Split, Slice, Transpose,        0 (data movement: only bytes moved count)
Gather, Pad, Tile, Expand, Cast, ...
Reshape, Flatten, Squeeze, Unsqueeze,   0, and no bytes moved (views)
Identity, Dropout
any other type                          1 per element; listed in a warning
======================================  ===================================================

ResNet-50 at batch 1 counts 8.2 GFLOP this way (4.1 G multiply-adds in its convolutions
and its classifier, plus about 0.02 GFLOP of normalisation, activations and pooling).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Diagnostic, Severity, Span, SpecError, UsageError
from ..spec.load import read_bytes
from ..workload import Imported, Workload, WorkOp
from ..workload.roofline import DTYPE_BYTES, PROFILES, DeviceProfile
from ..workload.training import BACKWARD_FLOP_FACTOR, add_backward
from .onnx_header import spec_header

if TYPE_CHECKING:
    from onnx import ModelProto

CONV = {"Conv", "ConvTranspose"}
MATMUL = {"Gemm", "MatMul"}
VIEWS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"}
MOVES = {"Concat", "Split", "Slice", "Transpose", "Gather", "GatherElements", "GatherND",
         "Pad", "Tile", "Expand", "Cast", "CastLike", "DepthToSpace", "SpaceToDepth", "Shape",
         "Size", "ConstantOfShape", "Resize", "Upsample", "ScatterND", "ScatterElements",
         "OneHot", "Range", "NonZero", "TopK"}
POOLS = {"MaxPool", "AveragePool", "LpPool"}
GLOBAL_REDUCE = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "ReduceMean",
                 "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                 "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin"}
NORMS = {"LayerNormalization", "InstanceNormalization", "GroupNormalization"}
SOFTMAX = {"Softmax", "LogSoftmax"}
ARITH = {"Add", "Sub", "Mul", "Div", "Relu", "LeakyRelu", "PRelu", "Clip", "Abs", "Neg",
         "Floor", "Ceil", "Round", "Sign", "Reciprocal", "Where", "Equal", "Greater",
         "GreaterOrEqual", "Less", "LessOrEqual", "Not", "And", "Or", "Xor", "Mod",
         "ThresholdedRelu", "BitShift", "IsNaN", "IsInf"}
NARY = {"Sum", "Max", "Min"}
TRANSCENDENTAL = {"Exp", "Log", "Sqrt", "Sigmoid", "Tanh", "Erf", "Gelu", "Pow", "Softplus",
                  "Softsign", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Mish", "Sin",
                  "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
                  "Atanh"}
#: random generators: a fresh tensor each run, never a constant (4 FLOPs per normal sample)
RANDOM = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli",
          "Multinomial"}
_NORMAL = {"RandomNormal", "RandomNormalLike"}
#: generators that read their input's shape (and dtype) alone: no params, 0-byte in-edges
SHAPE_ONLY = {"RandomNormalLike", "RandomUniformLike"}
#: every op type with a formula (the rest get the default and a warning)
KNOWN = (CONV | MATMUL | VIEWS | MOVES | POOLS | GLOBAL_REDUCE | NORMS | SOFTMAX | ARITH | NARY
         | TRANSCENDENTAL | (RANDOM - {"Multinomial"}) | {"BatchNormalization", "LRN", "Mean"})

_FLOAT_TYPES = {1, 10, 11, 16}  # FLOAT, FLOAT16, DOUBLE, BFLOAT16


def _per_output(*groups: tuple[float, set[str]]) -> dict[str, float]:
    """FLOPs per output element by op type, the first group naming a type taking it."""
    table: dict[str, float] = {}
    for flops, types in groups:
        for t in types:
            table.setdefault(t, flops)
    return table


#: the op types whose FLOPs are a constant times their output's elements
PER_OUTPUT = _per_output((0.0, VIEWS | MOVES), (2.0, {"BatchNormalization"}), (7.0, NORMS),
                         (5.0, SOFTMAX), (1.0, ARITH), (4.0, TRANSCENDENTAL | _NORMAL),
                         (1.0, RANDOM - {"Multinomial"}))


def node_flops(op_type: str, attrs: dict[str, Any], ins: Sequence[tuple[int, ...] | None],
               outs: Sequence[tuple[int, ...] | None]) -> float | None:
    """FLOPs of one node from its input and output shapes (table in the module docstring).

    Returns None for an unknown op type (the caller applies the default).
    """
    out = outs[0] if outs else None
    n_out = _prod(out)
    if op_type in PER_OUTPUT:
        return PER_OUTPUT[op_type] * n_out
    if op_type in POOLS:
        return float(n_out * _prod(tuple(attrs.get("kernel_shape", ()))))
    if op_type in GLOBAL_REDUCE:
        return float(_prod(ins[0]))
    if op_type == "LRN":
        size: int = attrs.get("size", 1)
        return (2.0 * size + 3.0) * n_out
    if op_type in NARY:
        return float(max(1, len(ins) - 1) * n_out)
    if op_type == "Mean":
        return float(len(ins) * n_out)
    return _linear_flops(op_type, attrs, ins, n_out)


def _linear_flops(op_type: str, attrs: dict[str, Any], ins: Sequence[tuple[int, ...] | None],
                  n_out: int) -> float | None:
    """FLOPs of the convolutions and matrix products (a multiply-add per weight a output
    element, and the bias), None for any other op type."""
    bias = n_out if len(ins) > 2 and ins[2] is not None else 0.0
    if op_type == "Conv":
        w = ins[1]
        return (2.0 * n_out * _prod(w[1:]) if w else 0.0) + bias
    if op_type == "ConvTranspose":
        w, x = ins[1], ins[0]
        return (2.0 * _prod(x) * _prod(w[1:]) if w and x else 0.0) + bias
    if op_type == "Gemm":
        a = ins[0] or (1, 1)
        k = a[0] if attrs.get("transA", 0) else a[-1]
        return 2.0 * n_out * k + bias
    if op_type == "MatMul":
        a = ins[0] or (1,)
        return 2.0 * n_out * a[-1]
    return None


def _prod(shape: Sequence[int] | None) -> int:
    return math.prod(shape) if shape else (1 if shape == () else 0)


def zoo_dir() -> Path:
    """The folder of the model zoo's weightless "light" files inside the onnx package."""
    # lazy: start-up (onnx loads protobuf; only importing an ONNX file needs it)
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def zoo_path(name: str) -> Path:
    """The "light" file of zoo model `name` (`resnet50`, `inception_v2`, ...)."""
    path = zoo_dir() / f"light_{name.removeprefix('light_')}.onnx"
    if not path.is_file():
        have = sorted(p.stem.removeprefix("light_") for p in zoo_dir().glob("light_*.onnx"))
        raise UsageError(Diagnostic("E933", f"no model `{name}` in the onnx package's zoo", None,
                                    ("available: " + ", ".join(have),)))
    return path



#: the codes whose span is an ONNX file: a protobuf, never quoted in a report, even where its
#: first bytes happen to decode as text (`render.diagnostics.source_texts`)
ONNX_FILE_CODES = frozenset({"E902", "W940", "W941"})

def load_model(path: str | os.PathLike[str]) -> ModelProto:
    """Read an ONNX file, turning every failure into a `SpecError` at the file."""
    # lazy: start-up (onnx loads protobuf; only importing an ONNX file needs it)
    import onnx
    from google.protobuf.message import DecodeError

    shown = str(path)
    where = Span.start_of(shown)
    data = read_bytes(Path(path), shown, kind="ONNX")
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError) as err:
        raise SpecError(Diagnostic(
            "E902", f"{shown} is not a valid ONNX model ({type(err).__name__}: {err})".rstrip(),
            where, ("the file may be truncated, or not an ONNX protobuf",))) from None
    if not model.graph.node:
        raise SpecError(Diagnostic("E902", f"{shown} holds no ONNX graph (no nodes)", where,
                                   ("the file may be truncated, or not an ONNX model",)))
    return model


def import_onnx(path: str | os.PathLike[str], batch: int | None = None, dtype: str = "fp32",
                profile: str = "v100", training: bool = False, optimizer: str = "adam",
                name: str | None = None, command: str | None = None) -> Imported:
    """Import the ONNX file at `path` (see the module docstring for the model)."""
    model = load_model(path)
    graph_name = name or _graph_name(Path(path).stem)
    origin = ("the ONNX model zoo's weightless 'light' file shipped inside the onnx package "
              "(onnx/backend/test/data/light)" if "backend/test/data/light" in Path(path).as_posix()
              else "ONNX")
    source = (f"{Path(path).name}, {origin}; opset {_opset(model)}, producer "
              f"{model.producer_name or 'unknown'}")
    return import_model(model, batch, dtype, profile, training, optimizer, graph_name,
                        source=source, file=str(path), command=command)


def import_model(model: Any, batch: int | None = None, dtype: str = "fp32", profile: str = "v100",
                 training: bool = False, optimizer: str = "adam", name: str = "model",
                 source: str = "an in-memory ONNX model", file: str = "<onnx>",
                 command: str | None = None) -> Imported:
    """Import an in-memory `onnx.ModelProto` (see the module docstring)."""
    # lazy: start-up (onnx loads protobuf; only importing an ONNX file needs it)
    import onnx

    where = Span.start_of(file)
    prof = _profile(profile)
    _check_options(dtype, batch)
    g = _with_shapes(model, file, where).graph
    info = _tensor_info(g)
    inits = {t.name for t in g.initializer}
    data_inputs = [i.name for i in g.input if i.name not in inits]
    constant, compute_nodes = _fold_constants(g, inits)
    model_batch = _model_batch(data_inputs, info)
    batch = batch or model_batch
    consumed: set[str] = {t.name for t in g.output}
    for node in compute_nodes:
        consumed.update(_reads(node))

    b = _Build(Workload(name), prof, dtype, info, constant, consumed, batch / model_batch)
    for t in data_inputs:
        if t in consumed:
            b.add_input(t)
    for node in compute_nodes:
        b.add_node(node, {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute})
    w = b.w
    if not w.ops:  # every node folded away: was a spec of an empty graph, "optimal" at 0 ns
        raise SpecError(Diagnostic(
            "E902", f"{file} computes nothing from its inputs: its {len(g.node)} node(s) read "
            "only constants, and no graph input is read", where,
            ("planner places the nodes that depend on a graph input; constants are folded "
             "away",)))
    n_params = sum(math.prod(info[t][1] or ()) for t in b.param_tensors)
    stats = {"flops": b.total_flops, "params": float(n_params),
             "ops_forward": float(len(w.ops))}
    if training:
        def backward(op: WorkOp) -> tuple[float, float | None]:
            f, moved = b.fwd_cost[op.name]
            bf = f * (BACKWARD_FLOP_FACTOR if op.name in b.matmul_like else 1.0)
            return prof.time_s(bf, 2 * moved, dtype), bf

        add_backward(w, backward, optimizer, skip=[b.producer[t] for t in data_inputs
                                                   if t in b.producer])
    header = spec_header(command, source, prof, dtype, batch, model_batch, training, optimizer,
                         w, stats)
    return Imported(w, header, b.warnings(where), stats)


#: tensor name -> (ONNX element type, shape, or None where shape inference left none)
_Info = dict[str, tuple[int, tuple[int, ...] | None]]


def _check_options(dtype: str, batch: int | None) -> None:
    """`import_model`'s `dtype` and `batch`, checked before the model is read (UsageError)."""
    if dtype not in DTYPE_BYTES:
        raise UsageError(Diagnostic("E930", f"unknown dtype `{dtype}`", None,
                                   ("one of: " + ", ".join(DTYPE_BYTES),)))
    if batch is not None and batch < 1:
        raise UsageError(Diagnostic("E930", "--batch must be at least 1", None))


def _fold_constants(g: Any, inits: set[str]) -> tuple[set[str], list[Any]]:
    """(the constant tensors: `inits` and the outputs of nodes that read only constants, at
    least one, or are `Constant`, and are no random generator; the other nodes: the compute
    nodes, in graph order)."""
    constant = set(inits)
    compute_nodes = []
    for node in g.node:
        ins = _reads(node)
        if node.op_type not in RANDOM and all(t in constant for t in ins) and (
                ins or node.op_type == "Constant" and node.domain in ("", "ai.onnx")):
            constant.update(t for t in node.output if t)
        else:
            compute_nodes.append(node)
    return constant, compute_nodes


def _model_batch(data_inputs: list[str], info: _Info) -> int:
    """The model's own batch: the first dimension of the first data input with a known
    shape (at least 1), else 1."""
    for t in data_inputs:
        shape = info.get(t, (0, None))[1]
        if shape:
            return max(1, shape[0])
    return 1


def _with_shapes(model: Any, file: str, where: Span) -> ModelProto:
    """A copy of `model` (the caller's is never edited) with the symbolic dimensions of its
    data inputs fixed to 1 and ONNX's shape inference run."""
    # lazy: start-up (onnx loads protobuf; only importing an ONNX file needs it)
    import onnx
    from onnx import shape_inference

    model = onnx.ModelProto.FromString(model.SerializeToString())
    g = model.graph
    inits = {t.name for t in g.initializer}
    order = _topological_order(g, file, where)
    if order != sorted(order):  # shape inference and the folding read nodes in graph order
        nodes = [g.node[k] for k in order]
        del g.node[:]
        g.node.extend(nodes)
    for inp in g.input:
        if inp.name not in inits:
            for d in inp.type.tensor_type.shape.dim:
                if not d.HasField("dim_value"):
                    d.dim_value = 1
    try:
        return shape_inference.infer_shapes(model)
    except Exception as err:  # noqa: BLE001 - onnx raises several internal types here
        raise SpecError(Diagnostic("E902", f"shape inference failed on {file}: {err}", where,
                                   ("the model may be invalid for its opset",))) from None


def _reads(node: Any) -> list[str]:
    """The tensors `node` reads: its inputs, then those that the nodes of its subgraphs
    (`If`'s branches, `Loop`'s and `Scan`'s bodies) read from the graphs around them."""
    # lazy: start-up (onnx loads protobuf; only importing an ONNX file needs it)
    from onnx import AttributeProto

    out = dict.fromkeys(t for t in node.input if t)
    for a in node.attribute:
        subgraphs = [a.g] if a.type == AttributeProto.GRAPH else (
            list(a.graphs) if a.type == AttributeProto.GRAPHS else [])
        for sub in subgraphs:
            inner = {t.name for t in (*sub.input, *sub.initializer)}
            for inner_node in sub.node:
                out.update(dict.fromkeys(t for t in _reads(inner_node) if t not in inner))
                inner.update(inner_node.output)
    return list(out)


def _topological_order(g: Any, file: str, where: Span) -> list[int]:
    """The indices of `g`'s nodes in an order where each node comes after the producers of
    its inputs, graph order wherever it already is (ONNX asks for that order; exporters and
    graph editors do not always keep it, and a node read before its producer lost that edge).
    E902 for nodes that form a cycle."""
    producer = {t: k for k, node in enumerate(g.node) for t in node.output if t}
    needs = [[producer[t] for t in _reads(node) if t in producer] for node in g.node]
    state = [0] * len(g.node)  # 0: not yet reached, 1: its producers being placed, 2: placed
    order: list[int] = []
    for start in range(len(g.node)):
        path = [start]  # a depth-first walk up to the producers not placed yet
        while path:
            k = path[-1]
            if state[k] == 2:
                path.pop()
                continue
            state[k] = 1
            waiting = [j for j in needs[k] if state[j] != 2]
            back = next((j for j in waiting if state[j] == 1), None)
            if back is not None:
                node = g.node[back]
                raise SpecError(Diagnostic(
                    "E902", f"the nodes of {file} form a cycle through node "
                    f"`{node.name or node.output[0]}` ({node.op_type})", where,
                    ("an ONNX graph must be acyclic: each tensor is computed before it is "
                     "read",)))
            if waiting:
                path.extend(reversed(waiting))
            else:
                state[k] = 2
                order.append(k)
                path.pop()
    return order


def _tensor_info(g: Any) -> _Info:
    """The element type and inferred shape of every tensor of graph `g`."""
    info: _Info = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        tt = vi.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim)
        known = tt.HasField("shape") and all(x >= 0 for x in dims)
        info[vi.name] = (tt.elem_type, dims if known else None)
    for t in g.initializer:
        info[t.name] = (t.data_type, tuple(t.dims))
    return info


@dataclass
class _Build:
    """The workload as `import_model` adds the graph's data inputs and compute nodes."""

    w: Workload
    prof: DeviceProfile
    dtype: str
    info: _Info
    #: initializers and the outputs of nodes folded away
    constant: set[str]
    #: tensors some compute node or the graph's outputs read
    consumed: set[str]
    #: the batch asked for / the model's own
    scale: float
    #: tensor -> the op that produces it
    producer: dict[str, str] = field(default_factory=dict)
    used_names: set[str] = field(default_factory=set)
    #: convolutions and matrix products (their backward costs more)
    matmul_like: set[str] = field(default_factory=set)
    #: op -> (forward FLOPs, bytes moved)
    fwd_cost: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: op type without a FLOP formula -> how many nodes have it
    unknown: dict[str, int] = field(default_factory=dict)
    #: tensors without a shape, each once (as dict keys, in the order met)
    unknown_shapes: dict[str, None] = field(default_factory=dict)
    #: floating-point constants some op reads (the parameters)
    param_tensors: set[str] = field(default_factory=set)
    total_flops: float = 0.0

    def nbytes(self, tensor: str) -> int:
        """The tensor's bytes at the model's own batch (0 without a shape)."""
        elem, shape = self.info.get(tensor, (0, None))
        if shape is None:
            return 0
        size = DTYPE_BYTES[self.dtype] if elem in _FLOAT_TYPES else _itemsize(elem)
        return math.prod(shape) * size

    def add_input(self, t: str) -> None:
        """A data op for graph input `t`: the time to write its bytes to memory."""
        op_name = _unique(t, self.used_names)
        size = round(self.nbytes(t) * self.scale)
        self.w.add(WorkOp(op_name, self.prof.time_s(0.0, size, self.dtype), 0.0,
                          output_bytes=size))
        self.producer[t] = op_name
        self.fwd_cost[op_name] = (0.0, float(size))

    def add_node(self, node: Any, attrs: dict[str, Any]) -> None:
        """The op of compute node `node` (its attributes `attrs`) and its in-edges."""
        base = node.name or node.output[0]
        label = base if node.op_type.lower() in base.lower() else f"{base}.{node.op_type}"
        op_name = _unique(label, self.used_names)
        flops = self._flops(node, attrs)
        params, act_in = self._inputs(node)
        out_bytes = sum(round(self.nbytes(t) * self.scale) for t in node.output
                        if t and t in self.consumed)
        moved = 0.0 if node.op_type in VIEWS else float(params + act_in + out_bytes)
        self.w.add(WorkOp(op_name, self.prof.time_s(flops, moved, self.dtype), flops,
                          params_bytes=params, output_bytes=out_bytes))
        self.fwd_cost[op_name] = (flops, moved)
        self.total_flops += flops
        if node.op_type in CONV or node.op_type in MATMUL:
            self.matmul_like.add(op_name)
        edge_bytes: dict[str, int] = {}
        for t in dict.fromkeys(_reads(node)):
            src = self.producer.get(t)
            if src is not None:
                edge_bytes[src] = edge_bytes.get(src, 0) + (
                    0 if node.op_type in SHAPE_ONLY else round(self.nbytes(t) * self.scale))
        for src, nb in edge_bytes.items():
            self.w.connect(src, op_name, nb)
        self.producer.update((t, op_name) for t in node.output if t)

    def _flops(self, node: Any, attrs: dict[str, Any]) -> float:
        """`node`'s FLOPs at the batch asked for (a default for unknown types); notes the
        tensors without a shape that it reads or writes."""
        info = self.info
        in_shapes = [info.get(t, (0, None))[1] if t else None for t in node.input]
        out_shapes = [info.get(t, (0, None))[1] for t in node.output]
        for t in (*_reads(node), *node.output):
            if t and t in self.consumed and info.get(t, (0, None))[1] is None:
                self.unknown_shapes[t] = None  # once, though several ops read it
        flops = node_flops(node.op_type, attrs, in_shapes, out_shapes)
        if flops is None:
            self.unknown[node.op_type] = self.unknown.get(node.op_type, 0) + 1
            flops = float(_prod(out_shapes[0] if out_shapes else None))
        return flops * self.scale

    def _inputs(self, node: Any) -> tuple[int, int]:
        """(params, activation bytes) `node` reads, each tensor once (those its subgraphs
        read included); a *Like generator reads only its input's shape: neither."""
        params = act_in = 0
        for t in [] if node.op_type in SHAPE_ONLY else _reads(node):
            if t not in self.constant:
                act_in += round(self.nbytes(t) * self.scale)
                continue
            params += self.nbytes(t)
            if self.info.get(t, (0, None))[0] in _FLOAT_TYPES:
                self.param_tensors.add(t)
        return params, act_in

    def warnings(self, where: Span) -> list[Diagnostic]:
        """W940 for op types without a formula, W941 for tensors without a shape."""
        sink: list[Diagnostic] = []
        if self.unknown:
            listed = ", ".join(f"{k} ({v})" for k, v in sorted(self.unknown.items()))
            sink.append(Diagnostic(
                "W940", f"no FLOP formula for op types {listed}; counted 1 FLOP per output "
                "element", where, severity=Severity.WARNING))
        if self.unknown_shapes:
            shapeless = list(self.unknown_shapes)
            shown = ", ".join(f"`{t}`" for t in shapeless[:5])
            more = f" and {len(shapeless) - 5} more" if len(shapeless) > 5 else ""
            sink.append(Diagnostic(
                "W941", f"shape inference left {len(shapeless)} tensor(s) without a shape "
                f"({shown}{more}); they count 0 bytes", where, severity=Severity.WARNING))
        return sink


def _profile(name: str) -> DeviceProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UsageError(Diagnostic("E930", f"unknown device profile `{name}`", None,
                                   ("one of: " + ", ".join(PROFILES),))) from None


def _itemsize(elem: int) -> int:
    # lazy: start-up (onnx loads protobuf; only importing an ONNX file needs it)
    from onnx import helper

    try:
        return int(helper.tensor_dtype_to_np_dtype(elem).itemsize)
    except (KeyError, TypeError, ValueError):
        return 0


def _opset(model: Any) -> int:
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
               default=0)


def _unique(name: str, used: set[str]) -> str:
    out, k = name, 1
    while out in used:
        k += 1
        out = f"{name}#{k}"
    used.add(out)
    return out


def _graph_name(stem: str) -> str:
    for prefix in ("light_",):
        stem = stem.removeprefix(prefix)
    return stem or "model"
