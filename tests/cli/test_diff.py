"""`planner diff OLD NEW`: figures before and after, the ops that moved, the devices whose
load changed, and `--fail-if-slower` as a pull-request gate (exit 5)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from .helpers import invoke, valid_sarif

# a (1 ms) -> b (2 ms); a's 1 MB output crosses 1 GB/s in 1 ms when b runs elsewhere
SPEC = """
cluster c { device gpu[0..1] { memory 3 MB } link gpu0 <-> gpu1 { bandwidth 1 GB/s } }
graph g { op a { time 1 ms  output 1 MB }  op b { time 2 ms  output 1 MB }  a -> b }
plan p { graph g cluster c  contention none }
"""


def _plan(tmp: Path, name: str, placement: dict[str, str]) -> str:
    data = {"format": "planner.plan", "version": 1, "plan": "p", "algorithm": "test",
            "placement": placement}
    (tmp / name).write_text(json.dumps(data))
    return name


@pytest.fixture
def plans(tmp_path: Path) -> Path:
    (tmp_path / "s.plan").write_text(SPEC)
    _plan(tmp_path, "old.json", {"a": "gpu0", "b": "gpu0"})  # 1 + 2 = 3 ms
    _plan(tmp_path, "new.json", {"a": "gpu0", "b": "gpu1"})  # 1 + 1 + 2 = 4 ms
    return tmp_path


def _json(args: list[str], cwd: Path) -> tuple[int, dict[str, Any]]:
    code, out, _ = invoke([*args, "--format", "json"], cwd)
    return code, json.loads(out)


def test_plan_files_are_simulated_on_the_spec(plans: Path) -> None:
    code, doc = _json(["diff", "old.json", "new.json", "--spec", "s.plan"], plans)
    res = doc["result"]
    assert code == 0 and doc["command"] == "diff"
    assert (res["old"]["source"], res["new"]["source"]) == ("simulated", "simulated")
    assert res["old"]["makespan_s"] == pytest.approx(3e-3)
    assert res["new"]["makespan_s"] == pytest.approx(4e-3)
    assert res["slower_pct"] == pytest.approx(100 / 3)
    assert res["old"]["lower_bound_s"] == pytest.approx(3e-3)
    assert res["moved"] == [{"op": "b", "from": "gpu0", "to": "gpu1"}]
    assert res["devices_changed"] == ["gpu0", "gpu1"]
    peak = {d["name"]: d["memory_peak_bytes"] for d in res["new"]["devices"]}
    assert peak["gpu1"] == 2_000_000  # b's output and the received copy of a's
    assert [d["code"] for d in doc["diagnostics"]] == ["W645"]  # slower: a warning


def test_text_output_for_review(plans: Path) -> None:
    code, out, err = invoke(["diff", "old.json", "new.json", "--spec", "s.plan"], plans)
    assert code == 0
    assert re.search(r"^  makespan +3\.000 ms +4\.000 ms +\+33\.33%$", out, re.MULTILINE)
    assert re.search(r"^  peak memory gpu1 +0 B +1\.91 MiB +\+1\.91 MiB$", out, re.MULTILINE)
    assert "1 of 2 op(s) moved:\n  b: gpu0 -> gpu1\n" in out
    assert "gpu1: 0 -> 1 ops, busy 0 ns -> 2.000 ms" in out
    assert "new.json:1:1: warning[W645]: the new plan is 33.33% slower" in err
    assert invoke(["diff", "old.json", "new.json", "--spec", "s.plan"], plans)[1] == out


def test_the_gate(plans: Path) -> None:
    args = ["diff", "old.json", "new.json", "--spec", "s.plan"]
    assert invoke([*args, "--fail-if-slower", "50"], plans)[0] == 0
    code, out, _ = invoke([*args, "--fail-if-slower", "10", "--format", "github"], plans)
    assert code == 5
    assert out.startswith("::error file=new.json,line=1,col=1,endLine=1,endColumn=1,"
                          "title=E645::the new plan is 33.33%25 slower than the old one")
    code, out, _ = invoke([*args, "--fail-if-slower", "10", "--format", "sarif"], plans)
    result = valid_sarif(out)["runs"][0]["results"][0]
    assert code == 5 and (result["ruleId"], result["level"]) == ("E645", "error")
    code, doc = _json([*args, "--fail-if-slower", "10"], plans)
    assert doc["result"]["gate"] == {"fail_if_slower_pct": 10.0, "passed": False}
    # faster passes any gate
    assert invoke(["diff", "new.json", "old.json", "--spec", "s.plan", "--fail-if-slower",
                   "0"], plans)[0] == 0


def test_an_infeasible_new_plan_fails_the_gate(plans: Path) -> None:
    # each op's 1 MB of params: together they exceed one device's 1.5 MB
    tight = SPEC.replace("memory 3 MB", "memory 1500 KB").replace(
        "output 1 MB", "output 1 KB  params 1 MB")
    (plans / "s.plan").write_text(tight)
    code, doc = _json(["diff", "new.json", "old.json", "--spec", "s.plan",
                       "--fail-if-slower", "1000"], plans)
    assert code == 5 and doc["result"]["new"]["feasible"] is False
    assert [d["code"] for d in doc["diagnostics"]] == ["E645"]
    assert "violates the spec" in doc["diagnostics"][0]["message"]


def test_an_infeasible_new_plan_is_a_warning_without_a_gate(plans: Path) -> None:
    """Before: nothing at all, exit 0 (the gate alone looked)."""
    tight = SPEC.replace("memory 3 MB", "memory 1500 KB").replace(
        "output 1 MB", "output 1 KB  params 1 MB")
    (plans / "s.plan").write_text(tight)
    code, doc = _json(["diff", "new.json", "old.json", "--spec", "s.plan"], plans)
    assert code == 0 and [d["code"] for d in doc["diagnostics"]] == ["W645"]
    assert doc["diagnostics"][0]["message"] == ("the new plan violates the spec (the old one "
                                                "did not)")
    assert "--placement old.json` lists its violations" in doc["diagnostics"][0]["hints"][0]


def test_a_plan_that_does_not_finish_counts_its_placed_ops(plans: Path) -> None:
    """A deadlocked order: before, the op count was the ops that ran (gpu0: 2 -> 1) and the
    text asked for the --spec it was given."""
    data = json.loads((plans / "old.json").read_text())
    data["order"] = {"gpu0": ["b", "a"]}
    (plans / "stuck.json").write_text(json.dumps(data))
    code, doc = _json(["diff", "old.json", "stuck.json", "--spec", "s.plan"], plans)
    new = {d["name"]: d["ops"] for d in doc["result"]["new"]["devices"]}
    assert code == 0 and new == {"gpu0": 2, "gpu1": 0}
    code, out, _ = invoke(["diff", "old.json", "stuck.json", "--spec", "s.plan"], plans)
    assert "give --spec" not in out and "(no finite makespan" in out, out


def test_plans_of_different_graphs_are_e647(plans: Path) -> None:
    """Before: every op added or removed, and --fail-if-slower passed (exit 0)."""
    _plan(plans, "other.json", {"x": "gpu0", "y": "gpu1"})
    code, doc = _json(["diff", "old.json", "other.json", "--fail-if-slower", "5"], plans)
    assert code == 2 and [d["code"] for d in doc["diagnostics"]] == ["E647"]


def test_e644_is_placed_on_the_file_that_lacks_figures(plans: Path) -> None:
    """Before: `--format github` annotated the new file whichever lacked the figures."""
    code, out, _ = invoke(["solve", "s.plan", "--algo", "single", "--json"], plans)
    assert code == 0
    (plans / "solved.json").write_text(out)  # figures; old.json has none
    for old, new in (("old.json", "solved.json"), ("solved.json", "old.json")):
        code, annotations, _ = invoke(["diff", old, new, "--fail-if-slower", "5",
                                       "--format", "github"], plans)
        assert code == 2 and annotations.startswith(
            "::error file=old.json,line=1,col=1,endLine=1,endColumn=1,title=E644::"
            "--fail-if-slower needs both makespans, and old.json has none"), annotations
        code, doc = _json(["diff", old, new, "--fail-if-slower", "5"], plans)
        assert (doc["diagnostics"][0]["code"], doc["diagnostics"][0]["file"]) == (
            "E644", "old.json")


def test_a_plan_file_older_than_the_graph_points_to_solve_json(plans: Path) -> None:
    """docs/ci.md's recipe after a PR renames op `b` (or adds `c`): the old plan file fails
    on the new spec. Before: E503's only hint was `did you mean`; E505 had the generic one.
    Now both say that two `solve --json` outputs need no spec, and that works."""
    hint = ("if old.json was made before the graph changed (an op renamed or added), diff "
            "the two `planner solve SPEC --json` outputs instead: each carries its own "
            "figures, and needs no --spec")
    for name, graph, code_ in (("renamed.plan", "op b2 { time 2 ms }  a -> b2", "E503"),
                               ("added.plan", "op b { time 2 ms }  op c { time 1 ms }  a -> b",
                                "E505")):
        graph = f"graph g {{ op a {{ time 1 ms  output 1 MB }}  {graph} }}"
        (plans / name).write_text(SPEC.replace(SPEC.splitlines()[2], graph))
        code, doc = _json(["diff", "old.json", "new.json", "--spec", name], plans)
        assert code == 1 and doc["diagnostics"][0]["code"] == code_, doc
        assert doc["diagnostics"][0]["hints"][-1] == hint
        assert [d["hints"].count(hint) for d in doc["diagnostics"]][1:] == \
            [0] * (len(doc["diagnostics"]) - 1)
    code, out, _ = invoke(["solve", "s.plan", "--algo", "single", "--json"], plans)
    (plans / "old.solve.json").write_text(out)
    code, out, _ = invoke(["solve", "renamed.plan", "--algo", "single", "--json"], plans)
    (plans / "new.solve.json").write_text(out)
    code, doc = _json(["diff", "old.solve.json", "new.solve.json", "--fail-if-slower", "2"],
                      plans)
    assert code == 0 and doc["result"]["gate"]["passed"], doc


def test_without_a_spec_only_placements_are_compared(plans: Path) -> None:
    code, doc = _json(["diff", "old.json", "new.json"], plans)
    assert code == 0 and doc["result"]["new"]["makespan_s"] is None
    assert doc["result"]["moved"] == [{"op": "b", "from": "gpu0", "to": "gpu1"}]
    code, _, err = invoke(["diff", "old.json", "new.json", "--fail-if-slower", "5"], plans)
    assert code == 2 and "error[E644]" in err and "--spec" in err
    code, _, err = invoke(["diff", "old.json", "new.json", "--fail-if-slower", "-1"], plans)
    assert code == 2 and "error[E643]" in err
    code, _, err = invoke(["diff", "old.json", "new.json", "--plan", "p"], plans)
    assert code == 2 and "error[E640]: --plan applies only with --spec" in err


def test_solve_json_outputs_carry_their_figures(plans: Path) -> None:
    for algo in ("single", "heft"):
        code, out, _ = invoke(["solve", "s.plan", "--algo", algo, "--json"], plans)
        assert code == 0
        (plans / f"{algo}.json").write_text(out)
    code, doc = _json(["diff", "single.json", "heft.json"], plans)
    single = json.loads((plans / "single.json").read_text())["result"]
    assert code == 0 and doc["result"]["old"]["source"] == "figures"
    assert doc["result"]["old"]["makespan_s"] == single["makespan_s"]
    assert {d["name"]: d["memory_peak_bytes"] for d in doc["result"]["old"]["devices"]} == {
        d["name"]: d["memory_peak_bytes"] for d in single["devices"]}


def test_one_plan_in_two_forms_changes_no_device(plans: Path) -> None:
    """`solve --json` beside its own `--out`: the busy time is known on one side only.
    Before: every device was listed as changed (`gpu0: 2 -> 2 ops`)."""
    code, out, _ = invoke(["solve", "s.plan", "--algo", "heft", "--out", "plan.json",
                           "--json"], plans)
    assert code == 0
    (plans / "plan.out.json").write_text(out)
    code, doc = _json(["diff", "plan.out.json", "plan.json"], plans)
    assert code == 0 and doc["result"]["moved"] == []
    assert doc["result"]["devices_changed"] == []
    code, out, _ = invoke(["diff", "plan.out.json", "plan.json"], plans)
    assert code == 0 and "0 device(s) whose load changed\n" in out, out


def test_long_lists_are_capped(tmp_path: Path) -> None:
    names = [f"op{i:02d}" for i in range(14)]
    _plan(tmp_path, "a.json", dict.fromkeys(names, "gpu0"))
    _plan(tmp_path, "b.json", dict.fromkeys(names, "gpu1"))
    code, out, _ = invoke(["diff", "a.json", "b.json"], tmp_path)
    assert code == 0 and "14 of 14 op(s) moved:" in out
    assert "  op09: gpu0 -> gpu1\n  and 4 more\n" in out and "op10" not in out


def test_files_without_a_plan_are_located_errors(plans: Path) -> None:
    (plans / "bad.json").write_text('{"placement": {"a": "gpu0",}}')
    code, _, err = invoke(["diff", "old.json", "bad.json"], plans)
    assert code == 1 and "bad.json:1:28: error[E642]: invalid JSON" in err


def test_invalid_json_is_quoted_and_hinted_as_simulate_does(plans: Path) -> None:
    """Before: diff's E642 had its file:line:col but no excerpt and no hint, where
    `simulate --placement` quoted the line; now both quote it, caret and hint alike."""
    (plans / "bad.json").write_text('{"placement": {"a": "gpu0",}}')
    code, _, err = invoke(["diff", "old.json", "bad.json"], plans)
    assert code == 1
    caret = ' 1 | {"placement": {"a": "gpu0",}}\n   |                            ^\n'
    hint = "= hint: fix the JSON at the caret (no trailing commas"
    assert caret in err and hint in err, err
    code, doc = _json(["diff", "bad.json", "old.json"], plans)
    (diag,) = doc["diagnostics"]
    assert (diag["code"], diag["line"], diag["column"]) == ("E642", 1, 28)
    assert diag["hints"][0].startswith("fix the JSON at the caret"), diag
    code, _, simulated = invoke(["simulate", "s.plan", "--placement", "bad.json"], plans)
    assert code == 1 and caret in simulated and hint in simulated, simulated
    failed = {"format_version": 1, "command": "solve", "ok": False, "result": None}
    (plans / "failed.json").write_text(json.dumps(failed))
    code, _, err = invoke(["diff", "failed.json", "new.json"], plans)
    assert code == 1 and "error[E642]: no plan in failed.json" in err
    assert "the `solve` run it records has no result" in err
    (plans / "bare.json").write_text('{"format_version": 1, "placement": {}}')
    code, _, err = invoke(["diff", "bare.json", "new.json"], plans)
    assert code == 1 and "no plan in bare.json: the run it records has no result" in err


def _pipeline_spec(folder: Path, settings: str = "microbatches 8  schedule 1f1b",
                   memory: str = "1 GiB") -> Path:
    """Four training units on two GPUs, one pipeline plan `pp`, and a second plan `other`."""
    units = "abcd"
    ops = "".join(f"  op {u} {{ time 10 ms  params 1 MiB  output 1 MiB }}\n"
                  f"  op {u}.bwd {{ time 20 ms  output 1 MiB  backward_of {u} }}\n"
                  for u in units)
    chain = " -> ".join([*units, *(f"{u}.bwd" for u in reversed(units))])
    spec = folder / "p.plan"
    spec.write_text(
        f"graph g {{\n{ops}  {chain}\n" + "".join(f"  {u} -> {u}.bwd\n" for u in "abc")
        + f"}}\ncluster two {{ device gpu[0..1] {{ memory {memory} }}\n"
        "  link gpu0 <-> gpu1 { bandwidth 10 GB/s  latency 10 us } }\n"
        f"plan pp {{ graph g  cluster two  objective pipeline  {settings} }}\n"
        "plan other { graph g  cluster two }\n")
    return spec


def test_pipeline_plans_are_judged_by_their_iteration(tmp_path: Path) -> None:
    """Before: diff compared one pass's makespan (120.23 ms -> 120.00 ms, -0.19%): the gate
    passed a pipeline 1.77x slower (540.9 -> 960 ms) and failed the faster one."""
    spec = _pipeline_spec(tmp_path)
    for algo in ("pipedp", "single"):
        code, out, err = invoke(["solve", str(spec), "--plan", "pp", "--algo", algo, "--out",
                                 f"{algo}.json", "--json"], tmp_path)
        assert code == 0, err
        (tmp_path / f"{algo}.solve.json").write_text(out)
    for old, new in (("pipedp.json", "single.json"), ("pipedp.solve.json", "single.solve.json")):
        code, doc = _json(["diff", old, new, "--spec", str(spec), "--fail-if-slower", "2"],
                          tmp_path)
        assert code == 5, doc
        result = doc["result"]
        assert result["measure"] == "iteration"
        assert (result["old"]["iteration_s"], result["new"]["iteration_s"]) == \
            pytest.approx((0.540919, 0.96), rel=1e-5)
        assert result["slower_pct"] == pytest.approx(77.48, abs=0.01)
    code, doc = _json(["diff", "single.json", "pipedp.json", "--spec", str(spec),
                       "--fail-if-slower", "0.1"], tmp_path)
    assert code == 0 and doc["result"]["gate"]["passed"]
    # recomputation costs the iteration a third more: the gate sees it
    plan = json.loads((tmp_path / "pipedp.json").read_text())
    (tmp_path / "again.json").write_text(json.dumps({**plan, "recompute": ["gpu0", "gpu1"]}))
    code, doc = _json(["diff", "pipedp.json", "again.json", "--spec", str(spec),
                       "--fail-if-slower", "1"], tmp_path)
    assert code == 5 and doc["result"]["slower_pct"] == pytest.approx(33.28, abs=0.01)
    # a file made for another plan of the spec is E516, as simulate says
    (tmp_path / "theirs.json").write_text(json.dumps({**plan, "plan": "other"}))
    code, doc = _json(["diff", "pipedp.json", "theirs.json", "--spec", str(spec)], tmp_path)
    assert code == 1 and doc["diagnostics"][0]["code"] == "E516"


def test_a_pipeline_diff_shows_the_iteration_bound(tmp_path: Path) -> None:
    """Before: the `lower bound` row under the iteration (540.9 ms) was one pass's bound
    (the chain alone, 120 ms), unlabelled; the iteration's bound is 8 x the period's."""
    spec = _pipeline_spec(tmp_path)
    code, out, err = invoke(["solve", str(spec), "--plan", "pp", "--algo", "pipedp",
                             "--out", "a.json", "--json"], tmp_path)
    assert code == 0, err
    (tmp_path / "a.solve.json").write_text(out)
    solved = json.loads(out)["result"]
    bound = solved["pipeline"]["iteration_bound_s"]
    assert bound > solved["lower_bound_s"]
    for old in ("a.json", "a.solve.json"):  # simulated, and read from solve's figures
        code, doc = _json(["diff", old, "a.json", "--spec", str(spec)], tmp_path)
        assert code == 0, doc
        assert doc["result"]["old"]["iteration_bound_s"] == pytest.approx(bound)
        assert doc["result"]["new"]["iteration_bound_s"] == pytest.approx(bound)
    code, out, err = invoke(["diff", "a.json", "a.json", "--spec", str(spec)], tmp_path)
    assert code == 0, err
    rows = {re.split(r"\s{2,}", line.strip())[0]: re.split(r"\s{2,}", line.strip())[1:]
            for line in out.splitlines()[2:6]}
    shown = f"{bound * 1e3:.3f} ms"
    assert rows["iteration bound"] == [shown, shown]
    assert "lower bound (one pass)" in rows and "lower bound" not in rows


def test_a_pipeline_plan_that_no_longer_fits_fails_the_gate(tmp_path: Path) -> None:
    """Before: `feasible yes` and exit 0 for a plan that is E401 as the pipeline runs it
    (every micro-batch's activations in flight on one device). GPipe, 32 micro-batches:
    the whole model on gpu0 holds 4 MiB params + 32 x 4 MiB + 1 MiB (a backward's output)
    = 133 MiB; the split, gpu1 the fuller, 2 + 32 x (2 MiB kept + 1 MiB received) + 1 + 32 x
    1 MiB (its input's receive buffers) = 131 MiB: devices of 132 MiB (120 MiB before
    2026-12-07's receive buffers, when the split held 99 MiB)."""
    spec = _pipeline_spec(tmp_path, "microbatches 32  schedule gpipe", "132 MiB")
    _plan_pp = {"format": "planner.plan", "version": 1, "plan": "pp", "algorithm": "test"}
    for name, far in (("split.json", "gpu1"), ("one.json", "gpu0")):
        placement = {op: ("gpu0" if op[0] in "ab" else far)
                     for u in "abcd" for op in (u, f"{u}.bwd")}
        (tmp_path / name).write_text(json.dumps({**_plan_pp, "placement": placement}))
    code, doc = _json(["diff", "split.json", "one.json", "--spec", str(spec),
                       "--fail-if-slower", "200"], tmp_path)
    assert code == 5, doc
    assert (doc["result"]["old"]["feasible"], doc["result"]["new"]["feasible"]) == (True, False)
    peaks = [[d["memory_peak_bytes"] for d in doc["result"][k]["devices"]] for k in ("old", "new")]
    mib = 2**20  # gpu0 of the split: 2 + 32 x 2 + 1 + 32 x 1 MiB (its output's gradient buffers)
    assert peaks == [[(2 + 32 * 2 + 1 + 32 * 1) * mib, (2 + 32 * (2 + 1) + 1 + 32 * 1) * mib],
                     [(4 + 32 * 4 + 1) * mib, 0]]
    assert doc["diagnostics"][0]["message"] == ("the new plan violates the spec (the old one "
                                                "did not)")


def _hybrid(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A pipeline of four units under `data_parallel 2`, and a plan file placing its first
    two units on gpu0 and the last two on gpu2 (its replicas: none yet)."""
    spec = tmp_path / "h.plan"
    ops = "".join(f"  op {u} {{ time 10 ms  params 64 MiB  output 1 MiB }}\n"
                  f"  op {u}.bwd {{ time 20 ms  output 1 MiB  backward_of {u} }}\n"
                  for u in "abcd")
    chain = " -> ".join([*"abcd", *(f"{u}.bwd" for u in "dcba")])
    spec.write_text(
        f"graph g {{\n{ops}  {chain}\n" + "".join(f"  {u} -> {u}.bwd\n" for u in "abc")
        + "}\ncluster four { device gpu[0..3] { memory 4 GiB }\n"
        "  link gpu[0..3] <-> gpu[0..3] { bandwidth 1 GB/s }\n"
        "  link gpu0 <-> gpu1 { bandwidth 100 GB/s }\n"
        "  link gpu2 <-> gpu3 { bandwidth 100 GB/s } }\n"
        "plan pp { graph g  cluster four  objective pipeline  microbatches 8  schedule 1f1b\n"
        "  data_parallel 2 }\n")
    placement = {op: ("gpu0" if op[0] in "ab" else "gpu2") for u in "abcd"
                 for op in (u, f"{u}.bwd")}
    return spec, {"format": "planner.plan", "version": 1, "plan": "pp", "algorithm": "test",
                  "placement": placement}


def test_regrouped_replicas_and_recompute_are_changes(tmp_path: Path) -> None:
    """Before: two hybrid plans whose replica groups differ (the same placement) read `0 of
    8 op(s) moved`, `0 device(s) whose load changed` beside a slower iteration, and the
    gate's hint pointed at the ops that moved; a plan that recomputes read the same."""
    spec, base = _hybrid(tmp_path)
    near = {**base, "replicas": {"gpu0": ["gpu0", "gpu1"], "gpu2": ["gpu2", "gpu3"]}}
    far = {**base, "replicas": {"gpu0": ["gpu0", "gpu3"], "gpu2": ["gpu2", "gpu1"]}}
    (tmp_path / "near.json").write_text(json.dumps(near))
    (tmp_path / "far.json").write_text(json.dumps(far))
    (tmp_path / "again.json").write_text(json.dumps({**near, "recompute": ["gpu2"]}))
    code, doc = _json(["diff", "near.json", "far.json", "--spec", str(spec),
                       "--fail-if-slower", "1"], tmp_path)
    result = doc["result"]
    assert code == 5 and result["slower_pct"] > 1 and result["moved"] == []
    assert result["regrouped"] == [{"stage": "gpu0", "from": ["gpu0", "gpu1"],
                                    "to": ["gpu0", "gpu3"]},
                                   {"stage": "gpu2", "from": ["gpu2", "gpu3"],
                                    "to": ["gpu2", "gpu1"]}]
    assert result["devices_changed"] == ["gpu1", "gpu3"]
    assert "the replicated stages regrouped" in doc["diagnostics"][0]["hints"][0]
    code, out, _ = invoke(["diff", "near.json", "far.json", "--spec", str(spec)], tmp_path)
    assert "2 replicated stage(s) regrouped:\n  stage on gpu0: gpu0, gpu1 -> gpu0, gpu3\n" in out
    assert re.search(r"\n  gpu1: 0 -> 0 ops, busy [1-9][^;]* ms; a replica of the stage on "
                     r"gpu0 -> a replica of the stage on gpu2\n", out), out
    code, doc = _json(["diff", "near.json", "again.json", "--spec", str(spec)], tmp_path)
    # gpu3, gpu2's replica, runs the stage's forward ops again too: busier, no op moved
    assert doc["result"]["recompute_changed"]
    assert doc["result"]["devices_changed"] == ["gpu2", "gpu3"]
    code, out, _ = invoke(["diff", "near.json", "again.json", "--spec", str(spec)], tmp_path)
    assert "recompute: none -> gpu2\n" in out and "gpu2: 4 -> 4 ops" in out


def test_a_replica_is_as_busy_as_solve_says(tmp_path: Path) -> None:
    """A pipeline plan's devices are as busy as the pipeline runs them, in both forms of a
    side, as `solve`'s pipeline view shows them. Before: `diff` read one pass's busy time
    beside the pipeline's memory, so gpu1, a replica running half of stage 0's
    micro-batches (120 ms of `simulate`'s pipeline), read `0 -> 0 ops, busy 0 ns -> 0 ns`."""
    spec, base = _hybrid(tmp_path)
    plan = {**base, "replicas": {"gpu0": ["gpu0", "gpu1"], "gpu2": ["gpu2", "gpu3"]}}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    code, sim = _json(["simulate", str(spec), "--placement", "plan.json"], tmp_path)
    assert code == 0
    busy = {d["name"]: d["busy_s"] for d in sim["result"]["pipeline"]["devices"]}
    assert busy["gpu1"] == busy["gpu0"] > 0
    (tmp_path / "sim.json").write_text(json.dumps(sim))
    # simulated here (a plan file, with the spec), or the figures a --json result carries
    for args in (["plan.json", "plan.json", "--spec", str(spec)], ["sim.json", "sim.json"]):
        code, doc = _json(["diff", *args], tmp_path)
        assert code == 0
        for side in ("old", "new"):
            got = {d["name"]: d["busy_s"] for d in doc["result"][side]["devices"]}
            assert got == pytest.approx(busy), (args, side)


def test_simulate_json_reads_back_to_its_own_run(tmp_path: Path) -> None:
    """`simulate --json` gives the layout it ran, as `solve --json` and the plan file do, so
    that `simulate --placement` and `diff --spec` read it back to the same run. Before: its
    result had no `replicas` nor `recompute`, and read back it ran one pipeline without
    them (`diff` against the plan file itself: a different iteration, 4 devices changed)."""
    spec, base = _hybrid(tmp_path)
    plan = {**base, "replicas": {"gpu0": ["gpu0", "gpu1"], "gpu2": ["gpu2", "gpu3"]},
            "recompute": ["gpu2"]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    code, sim = _json(["simulate", str(spec), "--placement", "plan.json"], tmp_path)
    assert code == 0
    assert (sim["result"]["replicas"], sim["result"]["recompute"]) == (plan["replicas"],
                                                                        ["gpu2"])
    (tmp_path / "sim.json").write_text(json.dumps(sim))
    code, again = _json(["simulate", str(spec), "--placement", "sim.json"], tmp_path)
    assert code == 0
    for key in ("iteration_s", "stages", "devices", "allreduce_s"):
        assert again["result"]["pipeline"][key] == sim["result"]["pipeline"][key], key
    code, doc = _json(["diff", "sim.json", "plan.json", "--spec", str(spec)], tmp_path)
    assert code == 0 and doc["result"]["devices_changed"] == []
    assert doc["result"]["old"]["iteration_s"] == doc["result"]["new"]["iteration_s"]


def test_simulate_json_keeps_the_plan_files_algorithm(tmp_path: Path) -> None:
    """Before: `simulate --json` of a plan file made by pipedp had no `algorithm`, so read
    back (`simulate --placement`, `diff`) its pipeline's row of this plan said `given`."""
    spec = _pipeline_spec(tmp_path)
    code, out, err = invoke(["solve", str(spec), "--plan", "pp", "--algo", "pipedp",
                             "--out", "plan.json"], tmp_path)
    assert code == 0, err
    code, sim = _json(["simulate", str(spec), "--plan", "pp", "--placement", "plan.json"],
                      tmp_path)
    assert code == 0 and sim["result"]["algorithm"] == "pipedp"
    assert sim["result"]["pipeline"]["compared"][-1]["algorithm"] == "pipedp"
    (tmp_path / "sim.json").write_text(json.dumps(sim))
    code, again = _json(["simulate", str(spec), "--plan", "pp", "--placement", "sim.json"],
                        tmp_path)
    assert code == 0 and again["result"]["algorithm"] == "pipedp"
    assert again["result"]["pipeline"]["compared"][-1]["algorithm"] == "pipedp"
    code, doc = _json(["diff", "sim.json", "plan.json", "--spec", str(spec)], tmp_path)
    assert code == 0 and doc["result"]["old"]["algorithm"] == "pipedp"
    # a bare placement names no algorithm: none is made up
    (tmp_path / "bare.json").write_text(json.dumps(
        {"placement": json.loads((tmp_path / "plan.json").read_text())["placement"]}))
    code, bare = _json(["simulate", str(spec), "--plan", "pp", "--placement", "bare.json"],
                       tmp_path)
    assert code == 0 and "algorithm" not in bare["result"]


def _figures(tmp: Path, name: str, makespan_s: float) -> str:
    data = {"plan": "p", "placement": {"a": "gpu0", "b": "gpu0"}, "makespan_s": makespan_s}
    (tmp / name).write_text(json.dumps(data))
    return name


def test_figures_equal_but_for_float_noise_are_no_change(tmp_path: Path) -> None:
    """One iteration summed in two orders (gpt8 p1f1b vs pgpipe under one split). Before:
    `+0.00%`, W645 `0.00% slower (173.564 ms -> 173.564 ms)` and --fail-if-slower 0 exit 5."""
    _figures(tmp_path, "old.json", 0.17356431825166693)
    _figures(tmp_path, "new.json", 0.17356431825166696)
    code, out, err = invoke(["diff", "old.json", "new.json", "--fail-if-slower", "0"], tmp_path)
    assert code == 0 and err == "", err
    assert re.search(r"makespan +173\.564 ms +173\.564 ms +0\.00%\n", out), out
    code, doc = _json(["diff", "new.json", "old.json"], tmp_path)
    assert doc["result"]["slower_pct"] == 0 and doc["diagnostics"] == []
    # a true slowdown too small for two decimals still fails a 0 % gate, and reads as one
    _figures(tmp_path, "slower.json", 0.17356431825166693 * 1.00001)
    code, _, err = invoke(["diff", "old.json", "slower.json", "--fail-if-slower", "0"],
                          tmp_path)
    assert code == 5 and "the new plan is 0.001% slower" in err, err


def test_a_spec_is_read_even_when_both_files_carry_figures(plans: Path) -> None:
    """Before: with two `solve --json` outputs, `--spec` and `--plan` were never read, so a
    wrong path or plan name passed silently (exit 0) as if the spec had judged the plans."""
    _figures(plans, "a.json", 0.003)
    _figures(plans, "b.json", 0.004)
    code, _, err = invoke(["diff", "a.json", "b.json", "--spec", "missing.plan"], plans)
    assert code == 1 and "error[E001]: no such file" in err, err
    code, _, err = invoke(["diff", "a.json", "b.json", "--spec", "s.plan", "--plan", "q"],
                          plans)
    assert code == 2 and "error[E602]: no plan named `q`" in err, err
    code, doc = _json(["diff", "a.json", "b.json", "--spec", "s.plan"], plans)
    assert code == 0 and doc["result"]["new"]["source"] == "figures"
    assert doc["result"]["new"]["makespan_s"] == 0.004


def _one_pass_and_pipeline(tmp_path: Path) -> Path:
    """`solve --json` of `_pipeline_spec`'s plan `other` (one pass) and `pp` (a pipeline),
    as other.json and pp.json."""
    spec = _pipeline_spec(tmp_path)
    for plan in ("other", "pp"):
        code, out, err = invoke(["solve", str(spec), "--plan", plan, "--algo", "single",
                                 "--json"], tmp_path)
        assert code == 0, err
        (tmp_path / f"{plan}.json").write_text(out)
    return spec


def test_a_one_pass_plan_beside_a_pipeline_plan_says_so(tmp_path: Path) -> None:
    """`solve --json` of plan `other` (one pass) and of `pp` (a pipeline): no iteration to
    gate. Before: E644's hint sent the user to `--spec` or `solve --json`, which they had
    given (`give --spec SPEC ...`, or with --spec `its plan may not run on the spec`)."""
    spec = _one_pass_and_pipeline(tmp_path)
    for more in ([], ["--spec", str(spec)]):
        code, _, err = invoke(["diff", "other.json", "pp.json", "--fail-if-slower", "5",
                               *more], tmp_path)
        assert code == 2 and "error[E644]: --fail-if-slower needs both iterations, and " \
            "other.json has none (a one-pass plan: no pipeline runs it)" in err, err
        assert "hint: gate two plans of one objective" in err and "--spec" not in err, err
    code, out, _ = invoke(["diff", "other.json", "pp.json"], tmp_path)
    assert code == 0 and "(other.json is a one-pass plan: no iteration to compare)" in out


def test_the_header_names_both_plans_when_they_differ(tmp_path: Path) -> None:
    """Before: `plan pp: other.json -> pp.json`, as if both files were plans of `pp`."""
    _one_pass_and_pipeline(tmp_path)
    code, out, _ = invoke(["diff", "other.json", "pp.json"], tmp_path)
    assert code == 0 and out.startswith("plan other -> pp: other.json -> pp.json\n"), out
    code, out, _ = invoke(["diff", "pp.json", "pp.json"], tmp_path)
    assert code == 0 and out.startswith("plan pp: pp.json -> pp.json\n"), out


def test_a_peak_near_its_cap_reads_as_solve_shows_it(tmp_path: Path) -> None:
    """resnet on 6 GiB GPUs: solve shows gpu0 at `5.998 GiB / 6.000 GiB`. Before: diff
    printed `6.00 GiB` (full), and a peak just over an 8 GiB cap `8.00 GiB`."""
    gib = 2**30
    for name, peak, cap in (("old.json", 6_440_000_000, 6 * gib),
                            ("new.json", 8 * gib + 2**20, 8 * gib)):
        data = {"plan": "p", "placement": {"a": "gpu0"}, "makespan_s": 0.1,
                "feasible": peak <= cap,
                "devices": [{"name": "gpu0", "memory_peak_bytes": peak,
                             "memory_cap_bytes": cap, "busy_s": 0.1}]}
        (tmp_path / name).write_text(json.dumps(data))
    code, out, _ = invoke(["diff", "old.json", "new.json"], tmp_path)
    assert code == 0 and re.search(r"peak memory gpu0 +5\.998 GiB +8\.001 GiB +\+", out), out


def test_plan_files_of_two_plans_of_the_spec_say_how_to_diff_them(tmp_path: Path) -> None:
    """Before: E516's hint `pass --plan other` for the new file; given, E516 again for the
    old one, with the hint `pass --plan pp`."""
    spec = _pipeline_spec(tmp_path)
    for plan in ("pp", "other"):
        code, _, err = invoke(["solve", str(spec), "--plan", plan, "--algo", "single",
                               "--out", f"{plan}.json"], tmp_path)
        assert code == 0, err
    for more in ([], ["--plan", "pp"], ["--plan", "other"]):
        code, _, err = invoke(["diff", "pp.json", "other.json", "--spec", str(spec), *more],
                              tmp_path)
        assert code == 1 and "other.json:4:11: error[E516]: pp.json and other.json were " \
            "made for two plans of the spec, `pp` and `other`" in err, err
        assert "hint: diff their `planner solve SPEC --plan NAME --json` outputs" in err
        assert "pass --plan" not in err, err


def test_a_run_that_holds_no_plan_is_not_called_failed(plans: Path) -> None:
    """`compare --json` (ok, its result the rows) and `check --json`. Before: compare's
    read `the compare run it records has no result (it failed)`; check's `no placement`."""
    rows = {"format_version": 1, "command": "compare", "ok": True, "result": [{"plan": "p"}]}
    (plans / "rows.json").write_text(json.dumps(rows))
    checked = {"format_version": 1, "command": "check", "ok": True, "result": {"files": 1}}
    (plans / "checked.json").write_text(json.dumps(checked))
    for name, run in (("rows.json", "compare"), ("checked.json", "check")):
        code, _, err = invoke(["diff", name, "new.json"], plans)
        assert code == 1 and f"error[E642]: no plan in {name}: the `{run}` run it records " \
            "holds no plan (a `solve` or `simulate` run's result does)" in err, err


#: a training pipeline whose old plan puts `b1` away from `f1` (a unit split: the stages
#: wait on each other, the iteration never ends) and whose new plan mends it
NEVER_ENDS = """cluster c { device gpu0 { memory 1 GiB }  device gpu1 { memory 1 GiB }
  link gpu0 <-> gpu1 { bandwidth 10 GB/s } }
graph g { op f0 { time 1 ms output 1 MiB }  op f1 { time 1 ms output 1 MiB }
  op b1 { time 2 ms output 1 MiB backward_of f1 }  op b0 { time 2 ms backward_of f0 }
  f0 -> f1 -> b1 -> b0 }
plan p { graph g cluster c objective pipeline microbatches 4 schedule 1f1b }
"""


def test_a_pipeline_that_never_ends_is_no_one_pass_plan(tmp_path: Path) -> None:
    # before: "(old.json is a one-pass plan: no iteration to compare)", and the gate on a
    # plan that mends it was E644, exit 2
    (tmp_path / "s.plan").write_text(NEVER_ENDS)
    _plan(tmp_path, "old.json", {"f0": "gpu0", "f1": "gpu1", "b1": "gpu0", "b0": "gpu0"})
    _plan(tmp_path, "new.json", {"f0": "gpu0", "f1": "gpu1", "b1": "gpu1", "b0": "gpu0"})
    code, out, _ = invoke(["diff", "old.json", "new.json", "--spec", "s.plan"], tmp_path)
    assert code == 0 and "old.json's pipeline never ends" in out and "one-pass" not in out
    code, doc = _json(["diff", "old.json", "new.json", "--spec", "s.plan",
                       "--fail-if-slower", "5"], tmp_path)
    assert code == 0 and doc["result"]["measure"] == "iteration"
    assert doc["result"]["old"]["iteration_never_ends"] is True
    code, doc = _json(["diff", "new.json", "old.json", "--spec", "s.plan",
                       "--fail-if-slower", "5"], tmp_path)
    assert code == 5 and [d["code"] for d in doc["diagnostics"]] == ["E645"]


@pytest.mark.parametrize(("edit", "shown", "why"), [
    (lambda r: r.update(makespan_s=True), "`makespan_s` is a boolean `true`", "a number"),
    (lambda r: r.update(makespan_s=-1), "`makespan_s` is a number `-1`", "a number"),
    (lambda r: r.update(feasible="no"), "`feasible` is a string `no`", "true, false"),
    (lambda r: r["devices"][1].update(busy_s="1"), "`devices[1].busy_s` is a string",
     "a number"),
    (lambda r: r["pipeline"].update(fits=0), "`pipeline.fits` is a number `0`", "true"),
    (lambda r: r["pipeline"].update(devices=5), "`pipeline.devices` is a number `5`",
     "a list of device rows"),
    (lambda r: r["pipeline"]["devices"][0].update(name=["gpu0"]),
     "`pipeline.devices[0].name` is a list", "a device name"),
    (lambda r: r["pipeline"].update(iteration_s=10**400),
     "`pipeline.iteration_s` is a number beyond a double's range", "a number")])
def test_a_reports_figures_are_checked_before_they_are_compared(
        tmp_path: Path, edit: Any, shown: str, why: str) -> None:
    """Before: `true` was compared as 1 s, -1 as a time, `"no"` as feasible, and
    `pipeline.devices: 5`, a list as a device's name and an integer of 400 digits ended in
    E999 (a TypeError, an OverflowError). Now E642 at the value, whatever the other side."""
    spec = _pipeline_spec(tmp_path)
    code, out, err = invoke(["solve", str(spec), "--plan", "pp", "--json"], tmp_path)
    assert code == 0, err
    (tmp_path / "ok.json").write_text(out)
    doc = json.loads(out)
    edit(doc["result"])
    text = json.dumps(doc, indent=1)
    (tmp_path / "edited.json").write_text(text)
    for args in (["edited.json", "ok.json"], ["ok.json", "edited.json", "--spec", str(spec)]):
        code, res = _json(["diff", *args], tmp_path)
        (d,) = res["diagnostics"]
        assert (code, d["code"]) == (1, "E642"), res
        assert shown in d["message"] and f"not {why}" in d["message"]
        assert d["file"] == "edited.json"
        line = text.splitlines()[d["line"] - 1]
        value = line[d["column"] - 1:]
        assert value.startswith(("true", "-1", '"no"', '"1"', "0", "5", "[", "1" + "0" * 9))
