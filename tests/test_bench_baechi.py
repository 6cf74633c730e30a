"""The Baechi side-by-side benchmark's paths (bench/bench_baechi.py), not its timings.

Needs ../shared/datasets/baechi-gnmt (skipped without it). The Baechi test needs
BAECHI_SRC pointing at a checkout of github.com/beomyeol/baechi with its placer modules
importable (networkx; see the benchmark's docstring) and is skipped otherwise.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from planner.simulate import simulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # not a package
import bench_baechi as bb

pytestmark = pytest.mark.skipif(
    not bb.DATASET.is_file(), reason=f"dataset absent: {bb.DATASET.resolve()}")


@pytest.mark.slow
def test_planner_only_path_reports_without_baechi(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("BAECHI_SRC", raising=False)
    assert bb.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "Baechi not available (set BAECHI_SRC" in out
    assert "only planner's figures" in out
    assert "not measured (no Baechi)" in out
    for label in ("m-ETF", "m-SCT"):
        assert label in out


def test_planner_plans_are_complete_and_feasible() -> None:
    problem = bb.load_problem()
    for algo, _, _ in bb.PAIRS:
        cpu, wall, plan = bb.run_planner(algo)
        assert cpu > 0 and wall > 0
        assert len(plan.placement) == len(problem.graph.ops)
        result = simulate(problem, plan)
        assert result.feasible, result


def test_bad_checkout_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ImportError, match="not a Baechi checkout"):
        bb.load_placers(tmp_path)
    # --record refuses before any round runs: the message, without the benchmark's cost
    assert bb.main(["--quick", "--record", "--baechi", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"Baechi not available ({tmp_path.resolve()} is not a Baechi checkout" in out
    assert "nothing to record without Baechi" in out


def test_baechi_graph_matches_the_dataset() -> None:
    data = json.loads(bb.DATASET.read_text(encoding="utf-8"))
    ops, devices = bb.baechi_graphs(data)
    assert ops.number_of_nodes() == len(data["ops"])
    assert ops.number_of_edges() == len(data["edges"])
    assert sorted(i for _, _, i in ops.edges(data="id")) == list(range(len(data["edges"])))
    assert devices.number_of_nodes() == bb.DEVICES
    assert all(d["memory_limit"] == bb.MEMORY_BYTES for _, d in devices.nodes(data=True))
    assert bb.comm_cost(0) == 134 and bb.comm_cost(10**6) == 309  # 175.4 + 134, rounded


def _baechi() -> bb.Baechi:
    src = os.environ.get("BAECHI_SRC")
    if not src:
        pytest.skip("BAECHI_SRC not set (a checkout of github.com/beomyeol/baechi)")
    try:
        return bb.load_placers(Path(src).resolve())
    except ImportError as err:
        pytest.skip(f"Baechi's placers not importable from BAECHI_SRC={src}: {err}")


def test_one_baechi_placement_is_complete_and_feasible() -> None:
    baechi = _baechi()
    data = json.loads(bb.DATASET.read_text(encoding="utf-8"))
    cpu, by_name = bb.run_baechi(baechi, "m_etf", data)
    assert cpu > 0
    problem = bb.load_problem()
    assert set(by_name) == {op.name for op in problem.graph.ops}
    assert set(by_name.values()) <= set(range(bb.DEVICES))
    result = simulate(problem, bb.placement_plan(problem, by_name))
    assert result.feasible, result
    assert result.makespan_s > 0
