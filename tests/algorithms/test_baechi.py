"""The Baechi GNMT loader (skipped when ../shared/datasets is absent) and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from algo_support import check_plan

from planner.algorithms import run
from planner.errors import SpecError
from planner.io.baechi import load_baechi


def test_gnmt_loads_with_baechis_cost_model(gnmt_path: Path) -> None:
    problem = load_baechi(gnmt_path)
    g = problem.graph
    assert (len(g.ops), len(g.edges)) == (2494, 4150)
    assert sum(op.time_s or 0.0 for op in g.ops) == pytest.approx(116_762e-6)
    assert len(g.colocations) == 309  # TF colocation groups of two or more ops
    assert len(problem.cluster.devices) == 4
    assert {d.memory_bytes for d in problem.cluster.devices} == {8 * 1024**3}
    link = problem.cluster.link(0, 3)
    assert link is not None and link.latency_s == 134e-6
    assert 1 / link.bandwidth_Bps == pytest.approx(1.754e-10)
    assert (problem.contention, problem.memory_model) == ("device", "static")
    assert "/" in g.ops[100].name


def test_gnmt_plans_are_feasible(gnmt_path: Path) -> None:
    problem = load_baechi(gnmt_path)
    for algorithm in ("metf", "single"):
        result = check_plan(problem, run(algorithm, problem).plan)
        assert result.makespan_s > 0.0787  # the lower bound's critical path
    assert check_plan(problem, run("single", problem).plan).makespan_s == pytest.approx(
        116.762e-3)


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    return path


def test_small_graph_round_trip(tmp_path: Path) -> None:
    data = {"name": "tiny", "ops": [
        {"name": "a", "time_us": 10, "params_bytes": 4, "output_bytes": 8, "temp_bytes": 0,
         "colocation": "g"},
        {"name": "b", "time_us": 20, "colocation": "g"},
        {"name": "c", "time_us": 5, "colocation": None}],
        "edges": [{"src": "a", "dst": "b", "bytes": 8}, {"src": "a", "dst": "b", "bytes": 16},
                  {"src": "b", "dst": "c", "bytes": 2}]}
    problem = load_baechi(_write(tmp_path, data), devices=2, contention="none")
    g = problem.graph
    assert [op.name for op in g.ops] == ["a", "b", "c"]
    assert [(e.src, e.dst, e.bytes) for e in g.edges] == [(0, 1, 16), (1, 2, 2)]
    assert g.colocations == ((0, 1),)
    assert g.ops[1].time_s == pytest.approx(20e-6)
    assert len(problem.cluster.devices) == 2 and problem.contention == "none"


@pytest.mark.parametrize(("data", "code", "words"), [
    ("{not json", "E920", "not valid JSON"),
    ({"ops": []}, "E922", "`ops` and `edges`"),
    ({"ops": [{"name": "a"}], "edges": []}, "E922", "op #0"),
    ({"ops": [{"name": "a", "time_us": 1}], "edges": [{"src": "a", "dst": "z", "bytes": 1}]},
     "E922", "unknown op 'z'"),
    ({"ops": [{"name": "a", "time_us": 1}, {"name": "b", "time_us": 1}],
      "edges": [{"src": "a", "dst": "b", "bytes": 1}, {"src": "b", "dst": "a", "bytes": 1}]},
     "E922", "cycle"),
])
def test_malformed_input_is_a_spec_error(tmp_path: Path, data: object, code: str,
                                         words: str) -> None:
    path = tmp_path / "g.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(SpecError) as err:
        load_baechi(path)
    assert err.value.diagnostics[0].code == code
    assert words in err.value.diagnostics[0].message


def test_missing_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        load_baechi(tmp_path / "absent.json")
    assert err.value.diagnostics[0].code == "E001"  # the spec loader's code for it


def test_a_file_that_is_not_utf8_is_located(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_bytes(b'{"ops": [\n  "\xff"]}')
    with pytest.raises(SpecError) as err:
        load_baechi(path)
    diag = err.value.diagnostics[0]
    assert (diag.code, diag.span.line if diag.span else None) == ("E004", 2)
