"""The ONNX importer: the nine model-zoo files, FLOP formulas by hand, ResNet-50 totals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import planner
from planner.errors import Severity, SpecError, UsageError
from planner.io.onnx_import import KNOWN, import_model, import_onnx, zoo_dir, zoo_path
from planner.workload import Imported, WorkOp
from planner.workload.roofline import PROFILES

V100 = PROFILES["v100"]
ZOO = sorted(zoo_dir().glob("light_*.onnx"))


def _model(op_type: str, inputs: list[tuple[str, list[int]]],
           weights: dict[str, list[int]] | None = None, opset: int = 17,
           **attrs: Any) -> onnx.ModelProto:
    """One node `op_type` reading data inputs and weights (initializers), output `y`."""
    weights = weights or {}
    node = helper.make_node(op_type, [n for n, _ in inputs] + list(weights), ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.zeros(s, np.float32), n)
                     for n, s in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _node_op(result: Imported) -> WorkOp:
    """The op of the model's one compute node (the others are data inputs)."""
    (op,) = [o for o in result.workload.ops if "." in o.name or o.name == "y"]
    return op


# Hand-computed FLOPs: (op type, data inputs, weights, attributes, FLOPs)
CASES = [
    # 2 · out(1·4·8·8) · (3·3·3) + bias out = 13824 + 256
    ("Conv", [("x", [1, 3, 8, 8])], {"w": [4, 3, 3, 3], "b": [4]}, {"pads": [1, 1, 1, 1]},
     14080),
    # groups: 2 · out(1·6·4·4) · (4/2 · 3·3)
    ("Conv", [("x", [1, 4, 6, 6])], {"w": [6, 2, 3, 3]}, {"group": 2}, 3456),
    # 2 · in(1·2·4·4) · (Cout 3 · 3·3)
    ("ConvTranspose", [("x", [1, 2, 4, 4])], {"w": [2, 3, 3, 3]}, {}, 1728),
    # 2 · M2 · N3 · K5 + M·N for C
    ("Gemm", [("a", [2, 5])], {"bw": [3, 5], "c": [3]}, {"transB": 1}, 66),
    # batched: 2 · out(2·4·3) · K5
    ("MatMul", [("a", [2, 4, 5]), ("b", [2, 5, 3])], {}, {}, 240),
    ("BatchNormalization", [("x", [1, 4, 3, 3])],
     {"s": [4], "bb": [4], "m": [4], "v": [4]}, {}, 72),
    ("LayerNormalization", [("x", [2, 5])], {"g": [5], "bb": [5]}, {}, 70),
    # out(1·2·2·2) · kernel 2·2
    ("MaxPool", [("x", [1, 2, 4, 4])], {}, {"kernel_shape": [2, 2], "strides": [2, 2]}, 32),
    ("AveragePool", [("x", [1, 2, 4, 4])], {}, {"kernel_shape": [3, 3]}, 72),
    ("GlobalAveragePool", [("x", [1, 2, 4, 4])], {}, {}, 32),
    # (2 · size 5 + 3) · 32 elements
    ("LRN", [("x", [1, 8, 2, 2])], {}, {"size": 5}, 416),
    ("Softmax", [("x", [2, 5])], {}, {}, 50),
    ("Relu", [("x", [2, 5])], {}, {}, 10),
    ("Add", [("x", [2, 5]), ("z", [2, 5])], {}, {}, 10),
    ("Sum", [("x", [2, 5]), ("z", [2, 5]), ("u", [2, 5])], {}, {}, 20),
    ("Sigmoid", [("x", [2, 5])], {}, {}, 40),
    ("Concat", [("x", [2, 5]), ("z", [2, 3])], {}, {"axis": 1}, 0),
    ("Transpose", [("x", [2, 5])], {}, {}, 0),
]


@pytest.mark.parametrize(("op_type", "inputs", "weights", "attrs", "flops"), CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_flop_formulas_match_hand_counts(op_type: str, inputs: list[tuple[str, list[int]]],
                                         weights: dict[str, list[int]], attrs: dict[str, Any],
                                         flops: int) -> None:
    result = import_model(_model(op_type, inputs, weights, **attrs))
    op = _node_op(result)
    assert op.flops == flops
    assert op.params_bytes == sum(4 * int(np.prod(s)) for s in weights.values())
    assert not result.warnings


def test_views_take_no_time_and_copies_take_memory_time() -> None:
    reshape = _node_op(import_model(_model("Reshape", [("x", [2, 6])], {"shape": [2]})))
    assert reshape.flops == 0 and reshape.time_s == 0
    concat = _node_op(import_model(_model("Concat", [("x", [2, 5]), ("z", [2, 3])], axis=1)))
    moved = 4 * (10 + 6 + 16)  # both inputs read, the output written
    assert concat.time_s == pytest.approx(moved / V100.memory_Bps)


def test_roofline_time_is_the_larger_of_compute_and_memory() -> None:
    small = _node_op(import_model(_model("Gemm", [("a", [2, 5])], {"bw": [3, 5], "c": [3]},
                                         transB=1)))
    moved = 4 * (10 + 15 + 3 + 6)
    assert small.time_s == pytest.approx(moved / V100.memory_Bps)  # memory-bound
    big = _node_op(import_model(_model("MatMul", [("a", [512, 512]), ("b", [512, 512])])))
    assert big.time_s == pytest.approx(2 * 512**3 / V100.peak_flop_rate["fp32"])
    fp16 = _node_op(import_model(_model("MatMul", [("a", [512, 512]), ("b", [512, 512])]),
                                 dtype="fp16"))
    assert fp16.time_s == pytest.approx(2 * 512**3 / V100.peak_flop_rate["fp16"])
    assert fp16.output_bytes == big.output_bytes // 2


def test_unknown_op_type_gets_default_and_a_warning() -> None:
    result = import_model(_model("Hardmax", [("x", [2, 5])]))
    assert "Hardmax" not in KNOWN
    assert _node_op(result).flops == 10
    (w,) = result.warnings
    assert w.code == "W940" and w.severity is Severity.WARNING and "Hardmax (1)" in w.message


def test_constant_of_shape_weights_are_params_of_their_consumer() -> None:
    shape = numpy_helper.from_array(np.array([4, 3, 3, 3], np.int64), "w_shape")
    nodes = [helper.make_node("ConstantOfShape", ["w_shape"], ["w"],
                              value=numpy_helper.from_array(np.array([0.02], np.float32))),
             helper.make_node("Conv", ["x", "w"], ["y"])]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [1, 3, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    result = import_model(model)
    assert [o.name for o in result.workload.ops] == ["x", "y.Conv"]
    conv = result.workload.ops[1]
    assert conv.params_bytes == 4 * 108
    assert conv.flops == 2 * (4 * 3 * 3) * 27
    assert result.stats["params"] == 108


def test_resnet50_totals_match_published_figures() -> None:
    result = import_onnx(zoo_path("resnet50"))
    # we count FLOPs (a multiply-add is 2): 4.1 G multiply-adds = 8.2 GFLOP
    assert result.stats["flops"] == pytest.approx(8.2e9, rel=0.05)
    assert result.stats["params"] == pytest.approx(25.6e6, rel=0.01)
    convs = [o for o in result.workload.ops if o.name.endswith(".Conv")]
    assert len(convs) == 53


def test_batch_scales_activations_and_flops_not_weights() -> None:
    one = import_onnx(zoo_path("resnet50"))
    four = import_onnx(zoo_path("resnet50"), batch=4)
    assert four.stats["flops"] == pytest.approx(4 * one.stats["flops"])
    assert four.stats["params"] == one.stats["params"]
    for a, b in zip(one.workload.ops, four.workload.ops, strict=True):
        assert (b.params_bytes, b.output_bytes) == (a.params_bytes, 4 * a.output_bytes)


def test_training_adds_colocated_backward_ops() -> None:
    fwd = import_onnx(zoo_path("squeezenet"))
    train = import_onnx(zoo_path("squeezenet"), training=True, optimizer="momentum")
    n = len(fwd.workload.ops)
    assert len(train.workload.ops) == 2 * n - 1  # no backward op for the one data input
    by_name = {o.name: o for o in train.workload.ops}
    conv = next(o for o in fwd.workload.ops if o.name.endswith(".Conv"))
    bwd = by_name[conv.name + ".bwd"]
    assert bwd.params_bytes == 2 * conv.params_bytes  # the gradient and the momentum
    assert bwd.flops == pytest.approx(2 * (conv.flops or 0))
    assert [conv.name, conv.name + ".bwd"] in train.workload.colocations
    edges = {(e.src, e.dst) for e in train.workload.edges}
    for e in fwd.workload.edges:
        if e.src in by_name and e.src + ".bwd" in by_name:
            assert (e.dst + ".bwd", e.src + ".bwd") in edges
    planner.loads(train.to_spec())


@pytest.mark.parametrize("path", ZOO, ids=[p.stem for p in ZOO])
def test_every_zoo_model_imports_and_loads(path: Path) -> None:
    result = import_onnx(path)
    assert not [w for w in result.warnings if w.code == "W940"]
    spec = planner.loads(result.to_spec(), f"{path.stem}.plan")
    (graph,) = spec.graphs.values()
    assert len(graph.ops) == len(result.workload.ops) > 10
    assert all(op.time_s is not None and op.time_s >= 0 for op in graph.ops)
    assert sum(op.params_bytes for op in graph.ops) >= 4 * result.stats["params"]


def test_all_nine_zoo_files_are_there() -> None:
    assert len(ZOO) == 9


def test_truncated_or_missing_file_is_a_spec_error(tmp_path: Path) -> None:
    data = zoo_path("resnet50").read_bytes()
    bad = tmp_path / "cut.onnx"
    bad.write_bytes(data[: len(data) // 3])
    with pytest.raises(SpecError) as err:
        import_onnx(bad)
    (d,) = err.value.diagnostics
    assert d.code == "E902" and d.span is not None and d.span.file == str(bad)
    with pytest.raises(SpecError) as err:
        import_onnx(tmp_path / "nope.onnx")
    assert err.value.diagnostics[0].code == "E001"  # as for any missing input file
    garbage = tmp_path / "text.onnx"
    garbage.write_text("this is not a protobuf at all\n")
    with pytest.raises(SpecError):
        import_onnx(garbage)


def test_bad_options_are_usage_errors() -> None:
    with pytest.raises(UsageError):
        import_onnx(zoo_path("squeezenet"), dtype="fp8")
    with pytest.raises(UsageError):
        import_onnx(zoo_path("squeezenet"), profile="tpu")
    with pytest.raises(UsageError):
        import_onnx(zoo_path("squeezenet"), training=True, optimizer="lion")
    with pytest.raises(UsageError):
        zoo_path("resnet999")


def _chain(nodes: list[onnx.NodeProto], name: str = "g") -> onnx.ModelProto:
    """Nodes in the order given, reading data input `x` [2, 4] and weight `w` [4, 4]."""
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 4])],
        initializer=[numpy_helper.from_array(np.ones((4, 4), np.float32), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_nodes_out_of_graph_order_keep_their_edges() -> None:
    """A node listed before the producer of its input lost that edge: the Relu below read
    nothing and could run first, and the MatMul's output counted 32 B for nothing read."""
    mm = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    relu = helper.make_node("Relu", ["y"], ["z"], name="relu")
    in_order = import_model(_chain([mm, relu]))
    shuffled = import_model(_chain([relu, mm]))
    edges = [(e.src, e.dst, e.bytes) for e in shuffled.workload.edges]
    assert edges == [(e.src, e.dst, e.bytes) for e in in_order.workload.edges]
    assert ("mm.MatMul", "relu", 32) in edges
    assert [o.name for o in shuffled.workload.ops] == ["x", "mm.MatMul", "relu"]
    assert shuffled.to_spec().split("\n\n", 1)[1] == in_order.to_spec().split("\n\n", 1)[1]


def test_nodes_that_form_a_cycle_are_e902() -> None:
    a = helper.make_node("Add", ["x", "b"], ["a"], name="first")
    b = helper.make_node("Relu", ["a"], ["b"], name="second")
    z = helper.make_node("Relu", ["b"], ["z"], name="last")
    with pytest.raises(SpecError) as err:
        import_model(_chain([a, b, z]), file="loop.onnx")
    (d,) = err.value.diagnostics
    assert d.code == "E902" and "form a cycle through node `first` (Add)" in d.message
    assert d.span is not None and d.span.file == "loop.onnx"


def test_a_tensor_read_inside_a_subgraph_is_an_edge_to_its_node() -> None:
    """An `If` whose branches read the MatMul's output `y` from the graph around them had no
    edge from the MatMul (free to run before it), and `y` counted 0 bytes as read by none;
    the weight `w` a branch reads is a param of the `If`."""
    vi = helper.make_tensor_value_info
    then = helper.make_graph([helper.make_node("Relu", ["y"], ["t"])], "then", [],
                             [vi("t", TensorProto.FLOAT, [2, 4])])
    other = helper.make_graph([helper.make_node("MatMul", ["y", "w"], ["e"])], "else", [],
                              [vi("e", TensorProto.FLOAT, [2, 4])])
    model = _chain([
        helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="rs"),
        helper.make_node("Greater", ["s", "s"], ["c"], name="gt"),
        helper.make_node("If", ["c"], ["z"], then_branch=then, else_branch=other, name="iff")])
    result = import_model(model)
    edges = {(e.src, e.dst): e.bytes for e in result.workload.edges}
    assert edges[("mm.MatMul", "iff")] == 32 and edges[("gt.Greater", "iff")] == 1
    ops = {o.name: o for o in result.workload.ops}
    assert ops["mm.MatMul"].output_bytes == 32 and ops["iff"].params_bytes == 64
    planner.loads(result.to_spec())


def test_a_tensor_without_a_shape_is_counted_once() -> None:
    """W941 said "2 tensor(s) without a shape (`y`, `y`)" for one tensor `y`, the output of
    one op and the input of another."""
    model = _chain([helper.make_node("FusedMatMul", ["x", "w"], ["y"], name="fm",
                                     domain="com.microsoft"),
                    helper.make_node("Relu", ["y"], ["z"], name="r")])
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    warnings = {w.code: w.message for w in import_model(model).warnings}
    assert "1 tensor(s) without a shape (`y`);" in warnings["W941"]


def test_a_model_that_computes_only_constants_is_e902() -> None:
    """A model whose every node reads only initializers (no graph input) made a spec of an
    empty graph, which `solve` called optimal at 0 ns."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["w"], ["z"], name="r")], "consts", [],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 4])],
        initializer=[numpy_helper.from_array(np.ones((4, 4), np.float32), "w")])
    with pytest.raises(SpecError) as err:
        import_model(helper.make_model(graph), file="consts.onnx")
    (d,) = err.value.diagnostics
    assert d.code == "E902" and d.message == (
        "consts.onnx computes nothing from its inputs: its 1 node(s) read only constants, "
        "and no graph input is read")
    assert d.span is not None and d.span.file == "consts.onnx"


def _zeros_1x256(name: str) -> Any:
    """A `Constant` node of fp32 zeros, shape (1, 256), as output `name`."""
    return helper.make_node("Constant", [], [name], name="cst",
                            value=numpy_helper.from_array(np.zeros((1, 256), np.float32)))


def _import_1x256(nodes: list[Any]) -> Imported:
    """`nodes` imported as a graph (opset 17) from input `x` to output `y`, both fp32
    (1, 256)."""
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256])])
    return import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def test_a_random_generator_is_an_op_not_a_weight() -> None:
    """`RandomNormal` (no input) and `RandomUniformLike` of a constant were folded as
    constants: their 1 KiB outputs counted as `params` of the Add and the Mul that read
    them, and no op computed them. They draw a fresh tensor each run: ops with their output
    bytes; a `Constant` stays a weight."""
    nodes = [helper.make_node("RandomNormal", [], ["n"], name="noise", shape=[1, 256],
                              dtype=1),
             _zeros_1x256("c"),
             helper.make_node("RandomUniformLike", ["c"], ["u"], name="unif"),
             helper.make_node("Add", ["x", "n"], ["s"], name="add"),
             helper.make_node("Mul", ["s", "u"], ["t"], name="mul"),
             helper.make_node("Add", ["t", "c"], ["y"], name="bias")]
    result = _import_1x256(nodes)
    ops = {o.name: o for o in result.workload.ops}
    assert list(ops) == ["x", "noise.RandomNormal", "unif.RandomUniformLike", "add", "mul",
                         "bias.Add"]
    noise, unif = ops["noise.RandomNormal"], ops["unif.RandomUniformLike"]
    assert (noise.output_bytes, noise.params_bytes, noise.flops) == (1024, 0, 4 * 256)
    assert (unif.output_bytes, unif.flops) == (1024, 256)
    assert ops["add"].params_bytes == 0 and ops["mul"].params_bytes == 0
    assert ops["bias.Add"].params_bytes == 1024  # the Constant: a weight
    edges = {(e.src, e.dst): e.bytes for e in result.workload.edges}
    assert edges[("noise.RandomNormal", "add")] == 1024
    assert edges[("unif.RandomUniformLike", "mul")] == 1024
    assert not result.warnings and result.stats["params"] == 256  # `c`, counted once


@pytest.mark.parametrize("generator", ["RandomUniformLike", "RandomNormalLike"])
def test_a_like_generator_reads_only_the_shape_of_its_input(generator: str) -> None:
    """The constant `c` that a *Like generator reads was its 1 KiB of params (and of bytes
    moved), and `x` a 1 KiB edge: it reads only their shapes, known at import."""
    nodes = [_zeros_1x256("c"),
             helper.make_node(generator, ["c"], ["u"], name="gen"),
             helper.make_node(generator, ["x"], ["v"], name="gen_x"),
             helper.make_node("Add", ["x", "u"], ["s"], name="add"),
             helper.make_node("Mul", ["s", "v"], ["y"], name="mul")]
    result = _import_1x256(nodes)
    ops = {o.name: o for o in result.workload.ops}
    gen, gen_x = ops[f"gen.{generator}"], ops[f"gen_x.{generator}"]
    assert (gen.params_bytes, gen.output_bytes) == (0, 1024)
    assert (gen_x.params_bytes, gen_x.output_bytes) == (0, 1024)
    assert result.stats["params"] == 0  # `c` is read by no op as a weight
    edges = {(e.src, e.dst): e.bytes for e in result.workload.edges}
    assert edges[("x", f"gen_x.{generator}")] == 0  # an order, not a transfer
    assert edges[("x", "add")] == 1024
    flops = 256.0 * (4 if generator == "RandomNormalLike" else 1)
    moved = 1024.0  # its output alone (was 2048: `x`'s bytes read too)
    assert gen_x.time_s == PROFILES["v100"].time_s(flops, moved, "fp32")
