"""Tests of the saga benchmark's own parts: instances, the spec writer, schedule checks.

Run with `python -m pytest bench/saga -q` (the project's `pytest` collects `tests/` only).
The last test needs the saga venv (see README.md) and is skipped without it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from planner.cost import costs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "saga"))  # not a package
import compare_saga as cs


def _instances(per_edge: bool = False) -> list[cs.Instance]:
    return [cs.make_instance(f"t{k}", fam, 11 + k, (10, 30), (3, 5), per_edge)
            for k, fam in enumerate(cs.FAMILIES)]


def test_instances_are_seeded_and_sized() -> None:
    a, b = _instances(), _instances()
    assert a == b
    for inst in a:
        assert 10 <= len(inst.tasks) <= 30
        assert 3 <= len(inst.nodes) <= 5
        m = len(inst.nodes)
        assert len(inst.links) == m * (m - 1) // 2
        assert all(0 < c <= 2 for _, c in inst.tasks)
    assert a[0].family == "out_tree" and a[0].tasks[-1][1] == 1e-9  # saga's tiny sink
    assert a[1].family == "in_tree" and a[1].tasks[0][1] == 1e-9  # ... as the source


def test_one_size_per_task_unless_per_edge() -> None:
    for inst in _instances():
        sizes: dict[str, set[int]] = {}
        for src, _, nbytes in inst.edges:
            sizes.setdefault(src, set()).add(nbytes)
        assert all(len(s) == 1 for s in sizes.values())
    dag = _instances(per_edge=True)[3]
    sizes = {}
    for src, _, nbytes in dag.edges:
        sizes.setdefault(src, set()).add(nbytes)
    assert any(len(s) > 1 for s in sizes.values())


def test_plan_text_carries_the_exact_numbers(tmp_path: Path) -> None:
    inst = _instances()[3]
    problem = cs.load_problem(inst, tmp_path).problem
    assert problem.contention == "none" and problem.memory_model == "static"
    c = costs(problem)
    speeds = [s for _, s in inst.nodes]
    for i, (_, cost) in enumerate(inst.tasks):
        assert c.compute[i] == tuple(cost / s for s in speeds)
    assert [(problem.graph.ops[e.src].name, problem.graph.ops[e.dst].name, e.bytes)
            for e in problem.graph.edges] == list(inst.edges)
    for a, b, bw in inst.links:
        da, db = int(a[1:]), int(b[1:])
        for x, y in ((da, db), (db, da)):
            assert c.latency[x][y] == 0.0
            assert c.inv_bandwidth[x][y] == 1.0 / bw


def _chain_result(tmp_path: Path) -> tuple[cs.Loaded, dict[str, Any]]:
    """T0 -> T1 -> T2, all on N0 back to back, as saga would report it."""
    inst = cs.Instance("c", "chain", (("T0", 1.0), ("T1", 2.0), ("T2", 0.5)),
                       (("T0", "T1", 10**9), ("T1", "T2", 10**9)),
                       (("N0", 1.0), ("N1", 2.0)), (("N0", "N1", 1e9),))
    loaded = cs.load_problem(inst, tmp_path)
    sched = [{"task": "__super_source__", "node": "N1", "start": 0.0, "end": 0.0},
             {"task": "T0", "node": "N0", "start": 0.0, "end": 1.0},
             {"task": "T1", "node": "N0", "start": 1.0, "end": 3.0},
             {"task": "T2", "node": "N1", "start": 4.0, "end": 4.25}]
    return loaded, {"ok": True, "error": None, "scheduler": "X", "makespan": 4.25,
                    "schedule": sched}


def test_check_saga_accepts_a_valid_schedule(tmp_path: Path) -> None:
    loaded, res = _chain_result(tmp_path)
    chk = cs.check_saga(loaded, res)
    assert chk.valid, chk.why
    assert chk.sim_makespan == pytest.approx(4.25)  # 1 + 2 + 1 s transfer + 0.25


def test_check_saga_rejects_bad_schedules(tmp_path: Path) -> None:
    loaded, res = _chain_result(tmp_path)
    early = json.loads(json.dumps(res))
    early["schedule"][3]["start"] = 3.5  # before T1's tensor (1 s transfer) arrives
    chk = cs.check_saga(loaded, early)
    assert not chk.valid and "precedence" in chk.why
    missing = json.loads(json.dumps(res))
    del missing["schedule"][2]
    chk = cs.check_saga(loaded, missing)
    assert not chk.valid and "1 task(s) not scheduled" in chk.why
    failed = {**res, "ok": False, "error": "boom"}
    assert cs.check_saga(loaded, failed).why == "boom"


def test_without_saga_it_explains_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cs.main(["--saga-python", "/nonexistent/python"]) == 0
    out = capsys.readouterr().out
    assert "-m venv /tmp/saga-venv" in out
    assert "/tmp/saga-venv/bin/pip install anrg-saga" in out


@pytest.mark.skipif(cs.find_saga_python(None) is None, reason="saga venv absent (README.md)")
def test_run_saga_heft_matches_planner(tmp_path: Path) -> None:
    saga_py = cs.find_saga_python(None)
    assert saga_py is not None
    insts = _instances()[:2]
    results = cs.run_saga(saga_py, insts, tmp_path, "t", "Heft,HeftPairMean", 60, 120)
    assert [(r["instance"], r["scheduler"]) for r in results] == [
        ("t0", "Heft"), ("t0", "HeftPairMean"), ("t1", "Heft"), ("t1", "HeftPairMean")]
    pairs = zip(results[::2], results[1::2], strict=True)
    for inst, (heft, pair_mean) in zip(insts, pairs, strict=True):
        loaded = cs.load_problem(inst, tmp_path)
        chk = cs.check_saga(loaded, heft)
        assert chk.valid, chk.why
        assert chk.sim_makespan == pytest.approx(heft["makespan"], rel=1e-9)
        ours, _, _ = cs.run_planner("heft", loaded.problem, 60)
        assert ours == pytest.approx(pair_mean["makespan"], rel=1e-9)
