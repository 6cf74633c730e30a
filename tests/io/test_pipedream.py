"""The PipeDream profile importer: a hand-checked fixture, bad input, the real profiles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from reports import first_report
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.errors import SpecError
from planner.io.pipedream import import_pipedream, parse_pipedream
from planner.plan import Plan
from planner.simulate import simulate

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DATASETS = Path(__file__).resolve().parents[2] / "../shared/datasets"
PROFILES = sorted((DATASETS / "pipedream").glob("*/*/graph.txt"))


def test_fixture_maps_measured_times_sizes_and_getitem_edges() -> None:
    result = import_pipedream(FIXTURES / "pipedream_small.txt")
    ops = {o.name: o for o in result.workload.ops}
    assert list(ops) == ["node1", "node2", "node3", "node4", "node5"]
    lstm = ops["node2"]
    assert lstm.time_s == pytest.approx(1.5e-3)
    assert (lstm.params_bytes, lstm.output_bytes) == (8192, 4096 + 256 + 256)
    assert lstm.comment == "LSTM(16, 16)"
    edges = {(e.src, e.dst): e.bytes for e in result.workload.edges}
    # from a multi-output layer, `__getitem__(k)` receives the k-th output only
    assert edges[("node2", "node3")] == 4096
    assert edges[("node2", "node4")] == 256
    assert edges[("node1", "node2")] == 1024
    spec = planner.loads(result.to_spec())
    (graph,) = spec.graphs.values()
    assert graph.ops[graph.op_index["node5"]].time_s == pytest.approx(0.125e-3)


def test_training_adds_measured_backward_ops() -> None:
    result = import_pipedream(FIXTURES / "pipedream_small.txt", training=True, optimizer="sgd")
    ops = {o.name: o for o in result.workload.ops}
    assert "node1.bwd" not in ops  # the data input has no backward op
    assert ops["node2.bwd"].time_s == pytest.approx(2.25e-3)
    assert ops["node2.bwd"].params_bytes == 8192  # the gradient (sgd keeps no state)
    assert ["node2", "node2.bwd"] in result.workload.colocations
    edges = {(e.src, e.dst): e.bytes for e in result.workload.edges}
    assert edges[("node3.bwd", "node2.bwd")] == 4096
    assert ("node2.bwd", "node1.bwd") not in edges
    planner.loads(result.to_spec())


def test_data_inputs_take_no_time_as_in_pipedreams_optimizer() -> None:
    # the profiler times `Input` as the wait for the data loader (AlexNet's: 635.9 ms of
    # an 85.3 ms model); PipeDream's optimizer zeroes it, and so does the importer
    text = ("node1 -- Input -- forward_compute_time=635.902, backward_compute_time=0.000, "
            "activation_size=4096.0, parameter_size=0.000\n"
            "node2 -- Conv2d(3, 64) -- forward_compute_time=2.500, backward_compute_time=5.000, "
            "activation_size=2048.0, parameter_size=512.000\n"
            "\tnode1 -- node2\n")
    result = parse_pipedream(text, "p.txt", training=True)
    ops = {o.name: o for o in result.workload.ops}
    assert ops["node1"].time_s == 0.0
    assert ops["node1"].output_bytes == 4096  # the batch the first layer reads is still held
    assert ops["node2"].time_s == pytest.approx(2.5e-3)
    assert "node1.bwd" not in ops
    assert result.stats["forward_ms"] == pytest.approx(2.5)
    assert result.stats["input_ms"] == pytest.approx(635.902)
    assert "Data inputs (node1) take no time" in result.to_spec()
    (graph,) = planner.loads(result.to_spec()).graphs.values()
    assert graph.ops[graph.op_index["node1"]].time_s == 0.0


def test_the_batch_is_held_until_the_backward_op_of_the_layer_that_reads_it() -> None:
    # A conv's weight gradient reads its input: the data input (which has no backward op
    # to keep it) goes to node2.bwd too. On one device under liveness, during node3.bwd
    # the device holds the batch (4 MB), node2's and node3's outputs (2 + 2 MB) and
    # node3.bwd's gradient (2 MB), beside the params (512 B, and 1536 B of gradient and
    # Adam state): 10 MB + 2048 B (before: the batch was freed as node2 ended, 6 MB + 2048 B,
    # and a 8 MB device was said to hold the step).
    text = ("node1 -- Input -- forward_compute_time=0.000, backward_compute_time=0.000, "
            "activation_size=4000000.0, parameter_size=0.000\n"
            "node2 -- Conv2d(3, 64) -- forward_compute_time=2.500, backward_compute_time=5.000, "
            "activation_size=2000000.0, parameter_size=512.000\n"
            "node3 -- ReLU() -- forward_compute_time=1.000, backward_compute_time=1.000, "
            "activation_size=2000000.0, parameter_size=0.000\n"
            "\tnode1 -- node2\n\tnode2 -- node3\n")
    result = parse_pipedream(text, "p.txt", training=True)
    cluster = ("cluster c { device gpu0 { memory 8 MB  flops 1 TFLOPS } }\n"
               "plan p { graph pipedream cluster c memory liveness }\n")
    problem = planner.loads(result.to_spec() + cluster).plan()
    r = simulate(problem, Plan((0,) * len(problem.graph.ops)))
    assert r.makespan_s == pytest.approx(9.5e-3)
    assert r.memory_peak_bytes == (10_002_048,)
    assert not r.feasible
    edges = {(e.src, e.dst): e.bytes for e in result.workload.edges}
    assert edges[("node1", "node2.bwd")] == 4_000_000


def test_malformed_node_line_is_reported_at_file_and_line() -> None:
    path = FIXTURES / "pipedream_bad_line.txt"
    with pytest.raises(SpecError) as err:
        import_pipedream(path)
    (d,) = err.value.diagnostics
    assert d.code == "E911" and "forward_compute_time" in d.message
    assert d.span is not None and (d.span.file, d.span.line) == (str(path), 2)
    assert d.span.column == path.read_text().splitlines()[1].index("abc") + 1


@pytest.mark.parametrize(("text", "code", "line"), [
    (("node1 -- A -- forward_compute_time=1, backward_compute_time=1, activation_size=1, "
     "parameter_size=0\n\tnode1 -- node9\n"), "E912", 2),
    (("node1 -- A -- forward_compute_time=1, backward_compute_time=1, activation_size=1, "
     "parameter_size=0\nnode1 -- A -- forward_compute_time=1, backward_compute_time=1, "
     "activation_size=1, parameter_size=0\n"), "E915", 2),
    ("node1 -- A -- forward_compute_time=1, backward_compute_time=1, activation_size=1\n",
     "E911", 1),
    (("node1 -- A -- forward_compute_time=1, backward_compute_time=1, activation_size=1, "
     "parameter_size=0\n\tnode1 node1\n"), "E911", 2),
    ("garbage\n", "E911", None),  # no profile at all: its content is not shown
    ("", "E911", None),
])
def test_bad_profiles_are_spec_errors_with_lines(text: str, code: str, line: int | None
                                                 ) -> None:
    place = "p.txt" if line else None
    assert first_report(lambda: parse_pipedream(text, "p.txt")) == (code, place, line)


@pytest.mark.parametrize("text", ["# Generated by:\nop a { time 1 ms }\n",
                                  "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI\n" * 300])
def test_a_file_that_is_no_profile_is_one_error_that_quotes_nothing(
        tmp_path: Path, text: str) -> None:
    """Before: one E911 per line (a spec gave 100 and "292 more"), each quoting its line."""
    with pytest.raises(SpecError) as err:
        parse_pipedream(text, "p.txt")
    (d,) = err.value.diagnostics
    assert d.code == "E911" and d.span is None
    assert d.message == ("p.txt is not a PipeDream profile: no line is a node or an edge "
                         "line (its content is not shown)")
    (tmp_path / "p.txt").write_text(text)
    run = CliRunner().invoke(app, ["import", "pipedream", str(tmp_path / "p.txt"), "-o",
                                   str(tmp_path / "p.plan")])
    assert run.exit_code == 1 and run.output.count("error[E911]") == 1, run.output
    assert all(line not in run.output for line in text.splitlines() if line)


def test_a_cycle_is_reported() -> None:
    line = ("node{k} -- A -- forward_compute_time=1, backward_compute_time=1, "
            "activation_size=1, parameter_size=0\n")
    text = line.format(k=1) + line.format(k=2) + "\tnode1 -- node2\n\tnode2 -- node1\n"
    with pytest.raises(SpecError) as err:
        parse_pipedream(text, "p.txt")
    assert err.value.diagnostics[0].code == "E914"


@pytest.mark.skipif(not PROFILES, reason="../shared/datasets/pipedream is absent")
@pytest.mark.parametrize("path", PROFILES, ids=[p.parent.name for p in PROFILES])
def test_real_profiles_import_and_load(path: Path) -> None:
    text = path.read_text()
    nodes = re.findall(r"^(node\d+) -- (.*) -- forward_compute_time=([0-9.]+)", text,
                       re.MULTILINE)
    edges = set(re.findall(r"^\t(node\d+) -- (node\d+)$", text, re.MULTILINE))
    result = import_pipedream(path)
    assert len(result.workload.ops) == len(nodes)
    assert len(result.workload.edges) == len(edges)
    # data inputs take no time (the data loader's wait), as in PipeDream's optimizer
    total_ms = sum(float(t) for _, module, t in nodes if not module.startswith("Input"))
    assert result.stats["forward_ms"] == pytest.approx(total_ms)
    spec = planner.loads(result.to_spec(), f"{path.parent.name}.plan")
    (graph,) = spec.graphs.values()
    # each time is written with 4 significant digits, so the sum is within half a unit of the 4th
    assert sum(op.time_s or 0.0 for op in graph.ops) == pytest.approx(total_ms * 1e-3, rel=5e-4)
    numbers = re.findall(r"\btime ([0-9.]+) [mun]?s\b", result.to_spec())
    assert numbers and all(len(n.replace(".", "").strip("0")) <= 4 for n in numbers)
    train = import_pipedream(path, training=True)
    planner.loads(train.to_spec())
    assert len(train.workload.ops) > len(result.workload.ops)


def test_real_profiles_are_all_there() -> None:
    if not (DATASETS / "pipedream").is_dir():
        pytest.skip("../shared/datasets/pipedream is absent")
    assert len(PROFILES) == 8


@pytest.mark.parametrize(("field", "value"), [
    ("activation_size", "1e400"), ("activation_size", "[1e15; 1e15]"),
    ("parameter_size", "2e15"), ("forward_compute_time", "1e10"),
    ("backward_compute_time", "1e-12")])
def test_a_value_outside_the_language_is_e911_at_it(field: str, value: str) -> None:
    """`activation_size=1e400` was E999 (an OverflowError in round()); the others E932,
    "the generated spec does not load", with no place."""
    fields = {"forward_compute_time": "1", "backward_compute_time": "1",
              "activation_size": "1", "parameter_size": "1", field: value}
    text = "node1 -- Conv -- " + ", ".join(f"{k}={v}" for k, v in fields.items()) + "\n"
    with pytest.raises(SpecError) as err:
        parse_pipedream(text, "g.txt", training=True)
    (d,) = err.value.diagnostics
    assert d.code == "E911" and f"`{field}`" in d.message and "valid range" in d.message
    assert d.span is not None and text[d.span.column - 1:].startswith(value)


@pytest.mark.parametrize("field", ["forward_compute_time", "backward_compute_time",
                                   "parameter_size"])
def test_a_list_where_one_number_goes_is_e911_at_it(field: str) -> None:
    """`forward_compute_time=[1.0; 5.0]` was read as 1 ms, the rest dropped without a word
    (as `parameter_size=[3; 4]` as 3 B): only `activation_size` lists a layer's outputs."""
    fields = {"forward_compute_time": "1", "backward_compute_time": "1",
              "activation_size": "[1; 2]", "parameter_size": "1", field: "[3.0; 4.0]"}
    text = "node1 -- LSTM -- " + ", ".join(f"{k}={v}" for k, v in fields.items()) + "\n"
    with pytest.raises(SpecError) as err:
        parse_pipedream(text, "g.txt", training=True)
    (d,) = err.value.diagnostics
    assert d.code == "E911" and d.message == (f"`{field}` is a list, and it takes one "
                                              "number: `[3.0; 4.0]`")
    assert d.span is not None and text[d.span.column - 1:].startswith("[3.0; 4.0]")
    assert d.hints == ("only `activation_size` lists values, one per output of the layer",)


_OK = "node1 -- Input0() -- forward_compute_time=1.0, backward_compute_time=0.0, " \
      "activation_size=4.0, parameter_size=0.0\n"


_RUN_ON = "no `,` before `backward_compute_time`: it reads as part of the field before it"


@pytest.mark.parametrize(("fields", "marked", "message"), [
    # negative: was the whole line (2:1 to its end)
    ("forward_compute_time=-1.000, backward_compute_time=2.000, activation_size=8.0, "
     "parameter_size=16.000", "-1.000", "`forward_compute_time` is negative: `-1.000`"),
    ("forward_compute_time=1, backward_compute_time=1, activation_size=[4.0; -2.0], "
     "parameter_size=0", "-2.0", "`activation_size` is negative: `-2.0`"),
    ("forward_compute_time=1, backward_compute_time= -3 , activation_size=1, "
     "parameter_size=0", "-3", "`backward_compute_time` is negative: `-3`"),
    # `key = value`: was the column of a search for `key=` that failed (`orward_...`)
    ("forward_compute_time = abc, backward_compute_time=1, activation_size=1, "
     "parameter_size=0", "abc", "`forward_compute_time` is not a number or a `[a; b]` "
     "list: `abc`"),
    ("forward_compute_time=1, backward_compute_time=1, activation_size= x , "
     "parameter_size=0", "x", "`activation_size` is not a number or a `[a; b]` list: `x`"),
    # a missing field: was the whole line; now the fields that lack it
    ("forward_compute_time=1, backward_compute_time=1, activation_size=4.0",
     "forward_compute_time=1, backward_compute_time=1, activation_size=4.0",
     "node line lacks `parameter_size`"),
    # no `,` before a field (or `;`): was "lacks" it and the fields after it, over all
    ("forward_compute_time=1 backward_compute_time=1, activation_size=1, parameter_size=0",
     "backward_compute_time", _RUN_ON),
    ("forward_compute_time=1; backward_compute_time=1; activation_size=1; parameter_size=0",
     "backward_compute_time", _RUN_ON),
])
def test_a_fields_error_marks_the_value_not_the_line(fields: str, marked: str,
                                                     message: str) -> None:
    line = f"node3 -- Conv2d(3, 64) -- {fields}"
    with pytest.raises(SpecError) as err:
        parse_pipedream(f"{_OK}{line}\n\tnode1 -- node3\n", "g.txt")
    (d,) = err.value.diagnostics
    assert (d.code, d.message) == ("E911", message)
    assert d.span is not None and (d.span.line, d.span.end_line) == (2, 2)
    assert line[d.span.column - 1:d.span.end_column - 1] == marked
    assert d.hints  # how to write it


def _line(node: str, module: str, activation: str, params: str = "0") -> str:
    return (f"{node} -- {module} -- forward_compute_time=1.0, backward_compute_time=1.0, "
            f"activation_size={activation}, parameter_size={params}\n")


def test_a_fraction_of_a_byte_rounds_up_with_w916_naming_the_layer() -> None:
    """`activation_size=1.4` read as 1 B and `parameter_size=2.5` as 2 (round half to even),
    without a word; now rounded up from the digits, as the language reads `output 1.4 B`
    (W266), and said at the value. `activation_size=0.4` was 0 B: below the range of a
    size as written (E260 in a spec), it is E911."""
    text = (_line("node1", "Conv2d(3, 64)", "1.4", "2.5") + _line("node2", "LSTM", "[4.5; 8]")
            + _line("node3", "__getitem__(0)", "4.5") + "\tnode1 -- node2\n\tnode2 -- node3\n")
    result = parse_pipedream(text, "g.txt")
    ops = {o.name: o for o in result.workload.ops}
    assert (ops["node1"].output_bytes, ops["node1"].params_bytes) == (2, 3)
    assert (ops["node2"].output_bytes, ops["node3"].output_bytes) == (13, 5)
    assert {(e.src, e.dst): e.bytes for e in result.workload.edges} == {
        ("node1", "node2"): 2, ("node2", "node3"): 5}
    warned = [(d.code, d.span.line, d.span.column, d.message) for d in result.warnings
              if d.span is not None]
    lines = text.splitlines()
    assert warned == [
        ("W916", 1, lines[0].index("=1.4") + 2, "node `node1` (Conv2d(3, 64)): "
         "`activation_size` 1.4 is not a whole number of bytes: read as 2 B"),
        ("W916", 1, lines[0].index("=2.5") + 2, "node `node1` (Conv2d(3, 64)): "
         "`parameter_size` 2.5 is not a whole number of bytes: read as 3 B"),
        ("W916", 2, lines[1].index("=[") + 2, "node `node2` (LSTM): `activation_size` "
         "[4.5; 8] is not a whole number of bytes: read as [5; 8] B"),
        ("W916", 3, lines[2].index("=4.5") + 2, "node `node3` (__getitem__(0)): "
         "`activation_size` 4.5 is not a whole number of bytes: read as 5 B")]
    with pytest.raises(SpecError) as err:
        parse_pipedream(_line("node1", "Conv2d", "0.4"), "g.txt")
    (d,) = err.value.diagnostics
    assert d.code == "E911" and "below the valid range of a size" in d.message
    # whole sizes, however written, say nothing
    assert parse_pipedream(_line("node1", "Conv2d", "1024.000", "1e3"), "g.txt").warnings == []


def test_getitem_past_a_layers_outputs_is_e917_at_it() -> None:
    """`__getitem__(5)` after a layer of 2 outputs carried the sum of both without a word;
    a layer profiled with one output (GNMT's `hidden`) still gives what it holds."""
    text = (_line("node1", "LSTM", "[4; 8]") + _line("node2", "__getitem__(5)", "8")
            + "\tnode1 -- node2\n")
    with pytest.raises(SpecError) as err:
        parse_pipedream(text, "g.txt")
    (d,) = err.value.diagnostics
    assert d.code == "E917" and d.message == (
        "node `node2` is `__getitem__(5)` of node `node1`, whose `activation_size` lists 2 "
        "outputs (0 to 1)")
    assert d.span is not None and (d.span.line, d.span.column) == (2, 10)
    assert text.splitlines()[1][d.span.column - 1:].startswith("__getitem__(5) --")
    assert [(s.line, s.column) for _, s in d.notes] == [(1, text.index("[") + 1)]
    single = _line("node1", "hidden", "16") + _line("node2", "__getitem__(3)", "16") + \
        "\tnode1 -- node2\n"
    assert [e.bytes for e in parse_pipedream(single, "g.txt").workload.edges] == [16]


def test_a_field_written_twice_is_e911_at_the_second() -> None:
    """`forward_compute_time=1.0, forward_compute_time=2.0` was read as 2 ms without a
    word; the second is the error, the first a note."""
    line = ("node3 -- Conv2d(3, 64) -- forward_compute_time=1.0, forward_compute_time=2.0, "
            "backward_compute_time=0.0, activation_size=4.0, parameter_size=0.0")
    with pytest.raises(SpecError) as err:
        parse_pipedream(f"{_OK}{line}\n\tnode1 -- node3\n", "g.txt")
    (d,) = err.value.diagnostics  # its edge says nothing more
    assert (d.code, d.message) == ("E911", "`forward_compute_time` is written twice in a "
                                           "node line")
    second = line.rindex("forward_compute_time=") + 1
    assert d.span is not None and (d.span.line, d.span.column) == (2, second)
    assert line[d.span.column - 1:d.span.end_column - 1] == "forward_compute_time"
    assert [(s.line, s.column) for _, s in d.notes] == [(2, line.index("forward_") + 1)]
    assert d.hints == ("keep one `forward_compute_time=`: each field is written once",)


def test_a_field_without_its_equals_sign_is_e911_at_that_field() -> None:
    """`backward_compute_time 0.5` was dropped, then reported as a field the line lacks,
    over all the fields."""
    line = ("node3 -- Conv2d(3, 64) -- forward_compute_time=1.0, backward_compute_time 0.5, "
            "activation_size=4.0, parameter_size=0.0")
    with pytest.raises(SpecError) as err:
        parse_pipedream(f"{_OK}{line}\n\tnode1 -- node3\n", "g.txt")
    (d,) = err.value.diagnostics
    assert (d.code, d.message) == ("E911", "a node line's field `backward_compute_time 0.5` "
                                           "has no `=`")
    assert d.span is not None and (d.span.line, d.span.column) == (
        2, line.index("backward") + 1)
    assert line[d.span.column - 1:d.span.end_column - 1] == "backward_compute_time 0.5"
    assert d.hints[0] == "write it `KEY=VALUE`, e.g. `backward_compute_time=0.5`"
    for written, fix in (("backward_compute_time\t0.5", "backward_compute_time=0.5"),
                         ("backward_compute_time", "backward_compute_time=N"),
                         # was `backward_compute_time:0.5=N`
                         ("backward_compute_time:0.5", "backward_compute_time=0.5"),
                         ("backward_compute_time : 0.5", "backward_compute_time=0.5")):
        with pytest.raises(SpecError) as err:
            parse_pipedream(f"{_OK}{line.replace('backward_compute_time 0.5', written)}\n"
                            "\tnode1 -- node3\n", "g.txt")
        assert err.value.diagnostics[0].hints[0] == f"write it `KEY=VALUE`, e.g. `{fix}`"


@pytest.mark.parametrize(("fields", "key", "hint"), [
    # a misspelt key: was "node line lacks `forward_compute_time`", over all the fields
    ("forward_compute_tme=1.0, backward_compute_time=0.0, activation_size=4.0, "
     "parameter_size=0.0", "forward_compute_tme", "did you mean `forward_compute_time`?"),
    (" forward_compute_time=1.0, backward_compute_time=0.0, activation_sizes = 4.0, "
     "parameter_size=0.0", "activation_sizes", "did you mean `activation_size`?"),
    # a fifth key: was ignored (PipeDream's own parser fails on it, it reads four by position)
    ("forward_compute_time=1.0, backward_compute_time=0.0, activation_size=4.0, "
     "parameter_size=0.0, flops=3", "flops", None),
    # a line of the optimizer's partitioned graph: was "lacks" all four fields
    ("forward_compute_time=1.0, backward_compute_time=0.0, activation_size=4.0, "
     "parameter_size=0.0 -- stage_id=0", "stage_id", "` -- stage_id=N` ends a line"),
], ids=["misspelt", "misspelt-spaced", "fifth-key", "partitioned-graph"])
def test_an_unknown_key_is_e911_at_it_with_the_field_it_misspells(
        fields: str, key: str, hint: str | None) -> None:
    line = f"node3 -- Conv2d(3, 64) -- {fields}"
    with pytest.raises(SpecError) as err:
        parse_pipedream(f"{_OK}{line}\n\tnode1 -- node3\n", "g.txt")
    (d,) = err.value.diagnostics
    assert (d.code, d.message) == ("E911", f"unknown key `{key}` in a node line")
    assert d.span is not None and (d.span.line, d.span.end_line) == (2, 2)
    assert line[d.span.column - 1:d.span.end_column - 1] == key
    if hint is None:
        assert not any("did you mean" in h for h in d.hints)
    else:
        assert d.hints[0].startswith(hint)



LINE = ("node1 -- A -- forward_compute_time={}, backward_compute_time=1, activation_size=1, "
        "parameter_size=0\n")


@pytest.mark.parametrize("written", ["١٢", "１"])
def test_a_profile_number_is_written_in_ascii_digits(written: str) -> None:
    """Before: `forward_compute_time=١٢` was read as 12 ms (`\\d` matches any script's
    digits), where `1_000` was E911."""
    assert first_report(lambda: parse_pipedream(LINE.format(written), "p.txt")) == (
        "E911", "p.txt", 1)


def test_a_negative_zero_is_zero() -> None:
    """Before: E932, "the generated spec does not load" (it held `time -0 ns`)."""
    spec = parse_pipedream(LINE.format("-0.0"), "p.txt").to_spec()
    (graph,) = planner.loads(spec, "p.plan").graphs.values()
    assert graph.ops[graph.op_index["node1"]].time_s == 0.0
