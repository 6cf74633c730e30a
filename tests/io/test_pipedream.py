"""The PipeDream profile importer: a hand-checked fixture, bad input, the real profiles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import planner
from planner.errors import SpecError
from planner.io.pipedream import import_pipedream, parse_pipedream

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
    ("garbage\n", "E911", 1),
    ("", "E911", 1),
])
def test_bad_profiles_are_spec_errors_with_lines(text: str, code: str, line: int) -> None:
    with pytest.raises(SpecError) as err:
        parse_pipedream(text, "p.txt")
    d = err.value.diagnostics[0]
    assert d.code == code and d.span is not None
    assert d.span.line == line


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
