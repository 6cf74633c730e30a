"""`planner simulate`: the spec's placement or a file, JSON report, exit 3 when infeasible."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .helpers import invoke

COST_MODEL = Path(__file__).resolve().parents[2] / "docs" / "cost-model.md"

SPEC = """
cluster c {
  device gpu[0..1] { memory 10 MB }
  link gpu0 <-> gpu1 { bandwidth 1 GB/s  latency 0 s }
}
graph g {
  op a { time 1 ms  output 1 MB }
  op b { time 2 ms }
  op c { time 2 ms }
  a -> b
  a -> c
}
plan p {
  graph g
  cluster c
  contention none
  place a, b on gpu0
  place c on gpu1
}
"""


def test_spec_placement_is_simulated_and_reported_as_json(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    code, out, err = invoke(["simulate", "s.plan", "--json"], tmp_path)
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["ok"], doc["exit_code"], doc["diagnostics"]) == (True, 0, [])
    rep = doc["result"]
    # a: 0-1 ms on gpu0; b: 1-3 ms on gpu0; a's 1 MB to gpu1 takes 1 MB / 1 GB/s = 1 ms,
    # 1-2 ms; c: 2-4 ms on gpu1. Makespan 4 ms, the optimum. Bound: 4 ms (the paths say 3:
    # a->b; but b or c away from a waits 1 ms for a's tensor, 1 + 1 + 2 ms, and all three
    # on one device take 5 ms: `forced_colocation_s`)
    assert rep["makespan_s"] == 0.004
    assert rep["lower_bound_s"] == 0.004
    assert rep["feasible"] is True and rep["violations"] == []
    assert rep["placement"] == {"a": "gpu0", "b": "gpu0", "c": "gpu1"}
    sched = {s["op"]: (s["device"], s["start_s"], s["end_s"]) for s in rep["schedule"]}
    assert sched == {"a": ("gpu0", 0.0, 0.001), "b": ("gpu0", 0.001, 0.003),
                     "c": ("gpu1", 0.002, 0.004)}
    assert rep["transfers"] == [{"src_op": "a", "src_device": "gpu0", "dst_device": "gpu1",
                                 "bytes": 1_000_000, "start_s": 0.001, "end_s": 0.002}]
    mem = {d["name"]: d["memory_peak_bytes"] for d in rep["devices"]}
    assert mem == {"gpu0": 1_000_000, "gpu1": 1_000_000}
    # the same input gives the same bytes
    assert invoke(["simulate", "s.plan", "--json"], tmp_path)[1] == out


def test_the_cost_model_pages_worked_example_gives_these_figures(tmp_path: Path) -> None:
    # docs/cost-model.md shows SPEC's figures; its bound said 3 ms (the paths') where the
    # report's is 4 ms (forced colocation)
    page = COST_MODEL.read_text(encoding="utf-8")
    example = page[page.index("**A worked example.**"):]
    block = example.split("```")[1]
    (tmp_path / "s.plan").write_text(SPEC)
    rep = json.loads(invoke(["simulate", "s.plan", "--json"], tmp_path)[1])["result"]
    makespan = re.search(r"→ makespan (\S+) ms", block)
    bound = re.search(r"lower bound:.*→ (\S+) ms", block, flags=re.DOTALL)
    assert makespan and bound, block
    assert float(makespan.group(1)) * 1e-3 == rep["makespan_s"]
    assert float(bound.group(1)) * 1e-3 == rep["lower_bound_s"]


def test_placement_file_overrides_and_infeasible_exits_3(tmp_path: Path) -> None:
    # gpu1 would hold b's 1 MB output and a received copy of a's 1 MB: 2 MB > 1.5 MB
    spec = SPEC.replace("memory 10 MB", "memory 1500 KB")
    (tmp_path / "s.plan").write_text(spec.replace("op b { time 2 ms }",
                                                  "op b { time 2 ms  output 1 MB }"))
    (tmp_path / "p.json").write_text(json.dumps({"placement": {"a": "gpu0", "b": "gpu1",
                                                               "c": "gpu1"}}))
    code, out, err = invoke(["simulate", "s.plan", "--placement", "p.json", "--json"], tmp_path)
    assert code == 3
    doc = json.loads(out)
    assert (doc["ok"], doc["exit_code"]) == (False, 3)
    assert [d["code"] for d in doc["diagnostics"]] == ["E401"]
    rep = doc["result"]  # the report of the plan that was simulated, violations listed
    assert rep["feasible"] is False and rep["gap"] is None
    assert [v["kind"] for v in rep["violations"]] == ["memory"]
    assert rep["violations"][0]["devices"] == ["gpu1"]
    code, out, err = invoke(["simulate", "s.plan", "--placement", "p.json"], tmp_path)
    assert code == 3
    assert "error[E401]: plan `p` is infeasible" in err


def test_unknown_plan_and_incomplete_placement_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC.replace("  place c on gpu1\n", ""))
    code, _, err = invoke(["simulate", "s.plan", "--plan", "q"], tmp_path)
    assert code == 2 and "no plan named `q`" in err
    code, _, err = invoke(["simulate", "s.plan"], tmp_path)
    assert code == 1 and "places only 2 of 3 ops; unplaced: `c`" in err
    (tmp_path / "bad.json").write_text("{not json")
    code, _, err = invoke(["simulate", "s.plan", "--placement", "bad.json"], tmp_path)
    assert code == 1 and "bad.json:1:2: error[E500]: invalid JSON" in err


def test_a_device_busy_for_a_sliver_of_a_bucket_is_never_blank(tmp_path: Path) -> None:
    """The timeline: a 20 ns op in a 10 us schedule drew ` `, lighter than idle `·`."""
    spec = tmp_path / "t.plan"
    spec.write_text("""cluster c {
  device gpu[0..1] { memory 1 GiB }
  link gpu0 <-> gpu1 { bandwidth 10 GB/s  latency 5 us }
}
graph tiny {
  op x { time 10 us  output 1 KiB }
  op y { time 20 ns  output 1 KiB }
  op z { time 1 ns }
  x -> y -> z
}
plan t { graph tiny  cluster c  place x on gpu0  place y on gpu1  place z on gpu0 }
""")
    code, out, _ = invoke(["simulate", str(spec)], tmp_path)
    rows = [line.split("│")[1] for line in out.splitlines()
            if line.startswith(("gpu0 ", "gpu1 ")) and line.count("│") == 2]
    assert code == 0 and len(rows) == 2, out
    assert all(" " not in row for row in rows) and "░" in rows[1], rows


#: a (1 ms) and b (1 ms) share gpu0; c (4 ms, on gpu1) needs b: b first ends at 5 ms, a first 6
ORDERED = """
cluster c { device gpu[0..1] { memory 1 GiB } link gpu0 <-> gpu1 { bandwidth 1 TB/s } }
graph g { op a { time 1 ms } op b { time 1 ms } op c { time 4 ms } b -> c }
plan p { graph g cluster c }
"""


def _simulated(tmp_path: Path, placement: str) -> dict[str, object]:
    code, out, err = invoke(["simulate", "s.plan", "--placement", placement, "--json"],
                            tmp_path)
    assert code == 0, err
    result: dict[str, object] = json.loads(out)["result"]
    return result


def test_a_json_report_reads_back_as_its_plan(tmp_path: Path) -> None:
    """`simulate --placement` of a `solve --json` / `simulate --json` document runs its plan:
    its placement in the order its devices ran (a before b here, not the simulator's own
    choice). Before: E501, "a placement file must be a JSON object with a `placement`
    object", while `simulate --stages` and `diff` read the same document."""
    (tmp_path / "s.plan").write_text(ORDERED)
    (tmp_path / "plan.json").write_text(json.dumps({
        "placement": {"a": "gpu0", "b": "gpu0", "c": "gpu1"},
        "order": {"gpu0": ["a", "b"], "gpu1": ["c"]}}))
    first = _simulated(tmp_path, "plan.json")
    assert first["makespan_s"] == 6e-3  # the order given, not b first (5 ms)
    code, out, _ = invoke(["simulate", "s.plan", "--placement", "plan.json", "--json"],
                          tmp_path)
    (tmp_path / "report.json").write_text(out)
    again = _simulated(tmp_path, "report.json")
    assert (again["makespan_s"], again["placement"]) == (6e-3, first["placement"])
    code, out, _ = invoke(["solve", "s.plan", "--algo", "heft", "--json"], tmp_path)
    (tmp_path / "solved.json").write_text(out)
    solved = json.loads(out)["result"]
    back = _simulated(tmp_path, "solved.json")
    assert (back["makespan_s"], back["placement"]) == (solved["makespan_s"],
                                                        solved["placement"])


def test_a_deadlocked_orders_report_reads_back_as_that_order(tmp_path: Path) -> None:
    """Before: no op ran, so no device listed one, and the report read back as an order
    that left every op out: makespan 4 ms and three other violations, where the plan's
    verdict is its deadlock (exit 3, makespan null)."""
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "dl.json").write_text(json.dumps({
        "placement": {"a": "gpu0", "b": "gpu0", "c": "gpu1"},
        "order": {"gpu0": ["b", "a"], "gpu1": ["c"]}}))
    code, out, _ = invoke(["simulate", "s.plan", "--placement", "dl.json", "--json"],
                          tmp_path)
    first = json.loads(out)["result"]
    assert code == 3 and first["makespan_s"] is None
    assert [(d["name"], d["ops"]) for d in first["devices"]] == [("gpu0", ["b", "a"]),
                                                                 ("gpu1", ["c"])]
    (tmp_path / "report.json").write_text(out)
    code, out, _ = invoke(["simulate", "s.plan", "--placement", "report.json", "--json"],
                          tmp_path)
    again = json.loads(out)["result"]
    assert code == 3 and again["makespan_s"] is None
    assert again["violations"] == first["violations"]
    assert "deadlocks" in again["violations"][0]["message"]


def test_split_colocation_is_located_by_check_and_hinted_by_simulate(tmp_path: Path) -> None:
    # `place` lines that split a `colocate`: check says where (E252), not "ok"
    spec = SPEC.replace("  a -> c\n", "  a -> c\n  colocate a, c\n")
    (tmp_path / "s.plan").write_text(spec)
    code, _, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 1
    assert "s.plan:19:3: error[E252]: colocated ops are placed apart" in err
    assert "hint: colocated ops must share one device: place `c` on `gpu0` too" in err
    # a placement file that splits it: simulate's E401 says how to mend it
    (tmp_path / "s.plan").write_text(spec.replace("  place a, b on gpu0\n  place c on gpu1\n",
                                                  ""))
    (tmp_path / "p.json").write_text(json.dumps({"placement": {"a": "gpu0", "b": "gpu0",
                                                               "c": "gpu1"}}))
    code, _, err = invoke(["simulate", "s.plan", "--placement", "p.json"], tmp_path)
    assert code == 3
    assert "colocation: colocated ops `a`, `c` are split across `gpu0`, `gpu1`" in err
    assert "hint: put the ops of each `colocate` on one device" in err


def test_a_placement_files_version_is_the_integer_1_not_true_or_1_0(tmp_path: Path) -> None:
    """`true` and `1.0` equal 1 in Python: the plan reader took them as version 1, where
    the interchange reader refused `true` (E923)."""
    (tmp_path / "s.plan").write_text(SPEC)
    placement = {"a": "gpu0", "b": "gpu0", "c": "gpu1"}
    for version, code in (("true", 1), ("1.0", 1), ("1", 0)):
        (tmp_path / "p.json").write_text(
            f'{{"format": "planner.plan", "version": {version}, '
            f'"placement": {json.dumps(placement)}}}')
        got, _, err = invoke(["simulate", "s.plan", "--placement", "p.json"], tmp_path)
        assert got == code, (version, err)
        if code:
            assert f"error[E502]: unsupported plan format `planner.plan` version `{version}`" \
                in err, err
