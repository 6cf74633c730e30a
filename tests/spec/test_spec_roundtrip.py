"""Round trips over every spec in the repository, and the example's numbers.

For each `*.plan` under specs/ and tests/ (the broken fixtures aside): formatting is
idempotent, the formatted text lowers to the same model (or to the same errors), and the
fast parser builds exactly the tree Lark builds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import SpecError
from planner.spec.format import format_source
from planner.spec.load import load_path, load_text
from planner.spec.parse import _fast_parse, parse_lark

REPO = Path(__file__).resolve().parents[2]
BROKEN = REPO / "tests" / "spec" / "broken"
EXAMPLE = REPO / "tests" / "spec" / "valid" / "example"


def _repo_specs() -> list[Path]:
    found = []
    for root in ("specs", "tests"):
        for p in sorted((REPO / root).rglob("*.plan")):
            if p.is_file() and BROKEN not in p.parents:
                found.append(p)
    return found


SPECS = _repo_specs()
# Specs the fast path leaves to Lark on purpose (keywords used where Lark's lookahead decides).
GIVES_UP = {"keywords_as_names.plan"}
IDS = [str(p.relative_to(REPO)) for p in SPECS]
#: the specs with the slowest round trips (GNMT: about 2,500 ops)
SLOW = {"gnmt.plan"}
CASES = [pytest.param(p, id=i, marks=pytest.mark.slow) if p.name in SLOW
         else pytest.param(p, id=i) for p, i in zip(SPECS, IDS, strict=True)]


def outcome(text: str, path: Path) -> object:
    """What a spec text lowers to: its graphs, clusters and plans, or its error messages."""
    try:
        spec = load_text(text, str(path), base=path.parent).spec
    except SpecError as err:
        return sorted((d.code, d.message) for d in err.diagnostics)
    return dict(spec.graphs), dict(spec.clusters), dict(spec.plans)


def test_the_repository_has_specs() -> None:
    """The glob finds the example fixtures at least (a guard against a silent empty run)."""
    assert EXAMPLE / "tiny.plan" in SPECS


@pytest.mark.parametrize("path", CASES)
def test_format_round_trip(path: Path) -> None:
    """format is idempotent and parse -> format -> parse -> lower gives the same model."""
    text = path.read_text(encoding="utf-8")
    formatted = format_source(text, str(path))
    assert format_source(formatted, str(path)) == formatted
    assert outcome(formatted, path) == outcome(text, path)


@pytest.mark.parametrize("path", CASES)
def test_fast_parser_matches_lark(path: Path) -> None:
    """The fast path reads every repository spec, into exactly Lark's tree (spans too)."""
    text = path.read_text(encoding="utf-8")
    fast = _fast_parse(text, "f.plan")
    if path.name in GIVES_UP:
        assert fast is None
    else:
        assert fast is not None, "the fast path gave up on a valid spec"
        assert fast == parse_lark(text, "f.plan")


def test_example_loads_to_the_expected_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The language issue's example, checked number by number."""
    monkeypatch.chdir(EXAMPLE)
    loaded = load_path("tiny.plan")
    spec = loaded.spec
    assert set(spec.graphs) == {"tiny"} and set(spec.clusters) == {"dgx1"}
    assert spec.files == ("clusters/dgx1.plan", "tiny.plan")
    problem = spec.plan()
    assert problem.name == "tiny_on_dgx1"
    g, c = problem.graph, problem.cluster
    assert [op.name for op in g.ops] == ["input", "conv1", "conv2", "head/logits:0"]
    assert [d.name for d in c.devices] == [f"gpu{i}" for i in range(8)] + ["cpu0"]

    ops = {op.name: op for op in g.ops}
    assert ops["input"].time_s == pytest.approx(0.05e-3)
    assert ops["input"].output_bytes == 6 * 2**20
    assert ops["conv1"].time_s is None and ops["conv1"].flops == pytest.approx(2.4e9)
    assert (ops["conv1"].params_bytes, ops["conv1"].temp_bytes) == (36 * 1024, 2**20)
    assert dict(ops["conv2"].time_by_kind) == {"cpu": pytest.approx(24e-3)}
    assert ops["head/logits:0"].output_bytes == 4096

    from planner.cost import compute_time

    cpu0, gpu0 = c.devices[c.device_index["cpu0"]], c.devices[c.device_index["gpu0"]]
    assert compute_time(ops["conv1"], cpu0) == pytest.approx(2.4e9 / 1.2e12)
    assert compute_time(ops["conv1"], gpu0) == pytest.approx(2.4e9 / 15.7e12)
    assert compute_time(ops["conv2"], cpu0) == pytest.approx(24e-3)  # time[cpu] wins
    assert compute_time(ops["input"], cpu0) == pytest.approx(0.05e-3 / 0.05)  # time / speed

    # Edges: each hop of the chain carries the producer's output; the explicit one 2 MiB.
    edges = {(g.ops[e.src].name, g.ops[e.dst].name): e.bytes for e in g.edges}
    assert edges == {("input", "conv1"): 6 * 2**20, ("conv1", "conv2"): 12 * 2**20,
                     ("conv2", "head/logits:0"): 12 * 2**20,
                     ("conv1", "head/logits:0"): 2 * 2**20}

    assert cpu0.memory_bytes == 256 * 2**30 and cpu0.kind == "cpu" and cpu0.speed == 0.05
    assert gpu0.memory_bytes == 16 * 2**30 and gpu0.flop_rate == pytest.approx(15.7e12)
    assert len(c.links) == 72  # every ordered pair of 9 devices
    i = c.device_index
    to_gpu3 = c.link(i["cpu0"], i["gpu3"])
    assert to_gpu3 is not None
    assert to_gpu3.bandwidth_Bps == pytest.approx(12e9)
    assert to_gpu3.latency_s == pytest.approx(10e-6)
    island = c.link(i["gpu1"], i["gpu2"])
    bridge = c.link(i["gpu2"], i["gpu5"])
    assert island is not None and island.bandwidth_Bps == pytest.approx(50e9)
    assert bridge is not None and bridge.bandwidth_Bps == pytest.approx(25e9)
    assert bridge.latency_s == pytest.approx(4e-6)

    op = g.op_index
    assert g.colocations == ((op["conv2"], op["head/logits:0"]),)
    assert dict(problem.pins) == {op["input"]: i["cpu0"]}
    assert dict(problem.placement) == {op["conv1"]: i["gpu0"], op["conv2"]: i["gpu1"],
                                       op["head/logits:0"]: i["gpu1"]}
    assert (problem.memory_model, problem.contention) == ("static", "link")


def test_the_readme_tour_is_the_example_checked_here() -> None:
    # the tour's two files are this folder's, so the checks above hold for what it shows
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    tour = readme[readme.index("## The language"):]
    cluster, tiny = (block.split("\n", 1)[1] for block in tour.split("```")[1:4:2])
    shipped = (EXAMPLE / "clusters" / "dgx1.plan").read_text(encoding="utf-8")
    assert cluster.startswith("# clusters/dgx1.plan of tests/spec/valid/example/")
    assert cluster.split("\n", 2)[2] == shipped.split("\n", 1)[1]
    assert tiny == (EXAMPLE / "tiny.plan").read_text(encoding="utf-8")
