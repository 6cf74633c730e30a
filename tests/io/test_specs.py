"""The specs in specs/: they load, are canonical, regenerate from their headers, and each
model has a plan that memory forces onto more than one device yet can be placed."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import planner
from planner.cli.export_commands import export_app
from planner.cli.io_commands import generate_app, import_app
from planner.cost import StaticMemoryTracker, static_memory
from planner.model import Problem
from planner.spec.format import format_source

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "specs"
MODELS = sorted(SPECS.glob("*.plan"))
CLUSTERS = sorted((SPECS / "clusters").glob("*.plan"))
GiB = 1024**3


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(import_app, name="import")
    app.add_typer(export_app, name="export")
    app.add_typer(generate_app, name="generate")
    return app


def _command(path: Path) -> list[str]:
    """The `$ planner ...` line of a spec's header, as arguments after `planner`."""
    line = next(x for x in path.read_text().splitlines() if x.startswith("# $ planner "))
    return shlex.split(line.removeprefix("# $ planner "))


def _witness(problem: Problem) -> list[int] | None:
    """A placement that fits: ops in topological order, filling devices one after another."""
    g, devices = problem.graph, problem.cluster.devices
    caps = [d.memory_bytes for d in devices]
    tracker = StaticMemoryTracker(g, len(devices))
    placement = [-1] * len(g.ops)
    d = 0
    for i in g.topological_order:
        while not tracker.fits(i, d, caps):
            d += 1
            if d == len(devices):
                return None
        tracker.place(i, d)
        placement[i] = d
    return placement


def test_the_expected_specs_are_there() -> None:
    assert [p.name for p in MODELS] == ["gnmt.plan", "inception.plan", "resnet.plan",
                                        "transformer.plan"]
    assert [p.name for p in CLUSTERS] == ["dgx1.plan", "pcie4.plan", "small4.plan",
                                          "two-nodes.plan"]


@pytest.mark.parametrize("path", MODELS + CLUSTERS, ids=lambda p: p.name)
def test_specs_are_canonical(path: Path) -> None:
    text = path.read_text()
    assert format_source(text, str(path)) == text


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_model_specs_load_and_some_plan_needs_several_devices(path: Path) -> None:
    spec = planner.load(path)
    assert spec.plans
    forced = 0
    for problem in spec.plans.values():
        ops = problem.graph.ops
        assert all(op.time_s is not None and op.time_s >= 0 for op in ops)
        assert all(d.memory_bytes > 0 for d in problem.cluster.devices)
        need = sum(op.params_bytes + op.output_bytes for op in ops)
        largest = max(d.memory_bytes for d in problem.cluster.devices)
        forced += need > largest
        placement = _witness(problem)
        assert placement is not None, f"{problem.name}: no greedy placement fits"
        used = static_memory(problem.graph, placement, len(problem.cluster.devices))
        assert all(u <= d.memory_bytes for u, d in zip(used, problem.cluster.devices,
                                                       strict=True))
    assert forced >= 1, f"{path.name}: every plan fits on one device"


def test_resnet_has_one_plan_and_gnmt_is_big() -> None:
    assert len(planner.load(SPECS / "resnet.plan").plans) == 1
    (graph,) = planner.load(SPECS / "gnmt.plan").graphs.values()
    assert len(graph.ops) >= 2000


def test_cluster_topologies() -> None:
    dgx1 = planner.load(SPECS / "clusters" / "dgx1.plan").clusters["dgx1"]
    assert len(dgx1.devices) == 8 and len(dgx1.links) == 56
    bandwidth = {(lk.src, lk.dst): lk.bandwidth_Bps for lk in dgx1.links}
    for a in range(8):
        peers = [b for b in range(8) if b != a and bandwidth[(a, b)] >= 25e9]
        assert len(peers) == 4  # NVLink to 4 others, PCIe/QPI to the other 3
        assert sum(bandwidth[(a, b)] for b in peers) == 150e9  # six 25 GB/s bricks
    two = planner.load(SPECS / "clusters" / "two-nodes.plan").clusters["two-nodes"]
    cross = two.link(two.device_index["n0.gpu0"], two.device_index["n1.gpu3"])
    assert cross is not None and cross.bandwidth_Bps == 100e9 / 8
    small = planner.load(SPECS / "clusters" / "small4.plan").clusters["small4"]
    assert [d.memory_bytes for d in small.devices] == [8 * GiB] * 4
    pcie = planner.load(SPECS / "clusters" / "pcie4.plan").clusters["pcie4"]
    assert [d.kind for d in pcie.devices].count("cpu") == 1


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_specs_regenerate_from_their_header(path: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    args = _command(path)
    assert args[args.index("-o") + 1] == f"specs/{path.name}"
    shutil.copytree(SPECS / "clusters", tmp_path / "specs" / "clusters")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(_cli(), args)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "specs" / path.name).read_text() == path.read_text()
