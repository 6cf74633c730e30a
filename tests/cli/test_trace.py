"""`solve --trace` and `simulate --trace`: a Chrome/Perfetto trace of the simulated schedule.

The trace is read back by a structural check of the Trace Event Format written from its
specification (the "Trace Event Format" document: the JSON object form, complete events
`X`, metadata `M`, flow events `s`/`f` with binding point `e`), plus the rule Perfetto's
importer applies to complete events on one track (they nest or are disjoint). Perfetto's
own `TraceProcessor` needs a `trace_processor_shell` binary that it downloads, which an
offline machine cannot; `test_perfetto_reads_the_trace` uses it where one is given
(`PERFETTO_TRACE_PROCESSOR=/path/to/trace_processor_shell`) and skips otherwise.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
US = 1e6
NS = 1e-3  # in the trace's unit, µs
DEVICES, TASKS, ALLREDUCES = 1, 3, 4  # the processes (pids)

# Two transfers from `a` to d1 at once with contention `none`: they overlap on one pair.
OVERLAP = """
cluster c { device d[0..1] { memory 1 GiB } link d[*] <-> d[*] { bandwidth 1 GB/s } }
graph g {
  op a { time 1 ms  output 4 MiB }
  op z { time 0 ms  output 2 MiB }
  op b { time 2 ms }
  op c { time 1 ms }
  a -> b  z -> c
}
plan p { graph g  cluster c  contention none  place a, z on d0  place b, c on d1 }
"""


def cli(*args: str) -> tuple[int, str, str]:
    res = runner.invoke(app, list(args))
    return res.exit_code, res.stdout, res.stderr


# -- the structural check -----------------------------------------------------------------

NUMBER = (int, float)


def check_trace_format(doc: Any) -> list[str]:
    """Problems with `doc` as a Trace Event Format JSON object; [] when none."""
    bad: list[str] = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not a JSON object with a traceEvents array"]
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        bad.append("displayTimeUnit must be ms or ns")
    for k, ev in enumerate(doc["traceEvents"]):
        where = f"event {k}"
        if not isinstance(ev, dict):
            bad.append(f"{where}: not an object")
            continue
        ph = ev.get("ph")
        if not isinstance(ev.get("pid"), int):
            bad.append(f"{where}: pid must be an integer")
        if ph == "M":
            if ev.get("name") not in ("process_name", "thread_name", "process_sort_index",
                                      "thread_sort_index"):
                bad.append(f"{where}: unknown metadata {ev.get('name')!r}")
            key = "sort_index" if ev.get("name", "").endswith("sort_index") else "name"
            value = ev.get("args", {}).get(key)
            if not isinstance(value, int if key == "sort_index" else str):
                bad.append(f"{where}: metadata needs args.{key}")
            if ev.get("name", "").startswith("thread") and not isinstance(ev.get("tid"), int):
                bad.append(f"{where}: thread metadata needs a tid")
            continue
        if ph not in ("X", "s", "f"):
            bad.append(f"{where}: unexpected phase {ph!r}")
            continue
        for field, kind in (("tid", int), ("ts", NUMBER), ("name", str), ("cat", str)):
            if not isinstance(ev.get(field), kind):
                bad.append(f"{where}: {field} missing or of the wrong type")
        if isinstance(ev.get("ts"), NUMBER) and ev["ts"] < 0:
            bad.append(f"{where}: negative ts")
        if ph == "X" and not (isinstance(ev.get("dur"), NUMBER) and ev["dur"] >= 0):
            bad.append(f"{where}: a complete event needs dur >= 0")
        if ph in ("s", "f") and not isinstance(ev.get("id"), (int, str)):
            bad.append(f"{where}: a flow event needs an id")
        if ph == "f" and ev.get("bp", "e") != "e":
            bad.append(f"{where}: bp must be e")
    return bad


def slices_by_track(events: list[dict[str, Any]]) -> dict[tuple[int, int], list[dict[str, Any]]]:
    tracks: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for ev in events:
        if ev["ph"] == "X":
            tracks[(ev["pid"], ev["tid"])].append(ev)
    return tracks


def check_nesting(events: list[dict[str, Any]]) -> list[str]:
    """Complete events on one track must nest or be disjoint (Perfetto drops the rest), at
    Perfetto's resolution of 1 ns."""
    bad = []
    for track, evs in slices_by_track(events).items():
        evs = sorted(evs, key=lambda e: (e["ts"], -e["dur"]))
        for a, b in itertools.pairwise(evs):
            if a["ts"] < b["ts"] < a["ts"] + a["dur"] - NS < b["ts"] + b["dur"] - NS:
                bad.append(f"{track}: {a['name']} and {b['name']} overlap")
    return bad


def names_of(events: list[dict[str, Any]]) -> dict[tuple[int, int | None], str]:
    return {(e["pid"], e.get("tid")): e["args"]["name"] for e in events
            if e["ph"] == "M" and e["name"] in ("process_name", "thread_name")}


def check_against_report(doc: dict[str, Any], report: dict[str, Any]) -> None:
    """Every op once on its device with its start and duration; every transfer once on
    its link; every flow an `s` and an `f` inside the slices they join."""
    events = doc["traceEvents"]
    assert check_trace_format(doc) == []
    assert check_nesting(events) == []
    names = names_of(events)
    ops = [e for e in events if e["ph"] == "X" and e["pid"] == 1]
    assert Counter(e["name"] for e in ops) == Counter(s["op"] for s in report["schedule"])
    by_op = {e["name"]: e for e in ops}
    for s in report["schedule"]:
        ev = by_op[s["op"]]
        assert names[(1, ev["tid"])] == s["device"]
        assert ev["ts"] == pytest.approx(s["start_s"] * US, abs=1e-5)
        assert ev["dur"] == pytest.approx((s["end_s"] - s["start_s"]) * US, abs=1e-5)
    xfers = [e for e in events if e["ph"] == "X" and e["pid"] == 2]
    assert len(xfers) == len(report["transfers"])
    got = Counter((e["args"]["op"], names[(2, e["tid"])].split(" #")[0], e["ts"])
                  for e in xfers)
    want = Counter((t["src_op"], f"{t['src_device']} → {t['dst_device']}",
                    round(t["start_s"] * US, 6)) for t in report["transfers"])
    assert got == want
    # flows: one producer -> transfer flow per transfer, one per consumer on the far side
    flows: dict[Any, dict[str, dict[str, Any]]] = defaultdict(dict)
    for e in events:
        if e["ph"] in ("s", "f"):
            assert e["ph"] not in flows[e["id"]], f"flow {e['id']} has two {e['ph']} ends"
            flows[e["id"]][e["ph"]] = e
    assert all(set(f) == {"s", "f"} for f in flows.values())
    tracks = slices_by_track(events)
    placement = report["placement"]
    consumers = sum(1 for t in report["transfers"] for c in report["_edges"].get(t["src_op"], ())
                    if placement[c] == t["dst_device"])
    assert len(flows) == len(report["transfers"]) + consumers
    for f in flows.values():
        ends = []
        for e in f.values():  # each end lies inside a slice on its own track
            inside = [x for x in tracks[(e["pid"], e["tid"])]
                      if x["ts"] <= e["ts"] <= x["ts"] + x["dur"]]
            assert inside, f"flow end {e} is in no slice"
            ends.append(inside[0])
        assert ends[0]["ts"] <= ends[1]["ts"]  # arrows go forward in time


def edges_of(spec: Path) -> dict[str, list[str]]:
    """Op name -> its consumers' names, from `planner export json`."""
    code, out, _ = cli("export", "json", str(spec))
    assert code == 0
    succ: dict[str, list[str]] = defaultdict(list)
    for e in json.loads(out)["edges"]:
        succ[e["src"]].append(e["dst"])
    return succ


# -- tests --------------------------------------------------------------------------------


def test_solve_trace_matches_the_simulated_schedule(tmp_path: Path) -> None:
    trace = tmp_path / "resnet.trace.json"
    spec = ROOT / "specs" / "resnet.plan"
    code, out, err = cli("solve", str(spec), "--algo", "msct", "--json", "--trace", str(trace))
    assert code == 0, err
    report = json.loads(out)["result"]
    report["_edges"] = edges_of(spec)
    doc = json.loads(trace.read_text(encoding="utf-8"))
    assert len(report["schedule"]) == 177 and report["transfers"]
    check_against_report(doc, report)
    assert doc["otherData"]["ops_traced"] == 177
    # op types as categories, named tracks for every device
    cats = {e["cat"] for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == 1}
    assert {"Conv", "Relu", "BatchNormalization"} <= cats
    assert sorted(v for (pid, tid), v in names_of(doc["traceEvents"]).items()
                  if pid == 1 and tid is not None) == [d["name"] for d in report["devices"]]


def test_overlapping_transfers_get_their_own_tracks(tmp_path: Path) -> None:
    spec = tmp_path / "overlap.plan"
    spec.write_text(OVERLAP)
    trace = tmp_path / "t.json"
    code, out, err = cli("simulate", str(spec), "--json", "--trace", str(trace))
    assert code == 0, err
    report = json.loads(out)["result"]
    report["_edges"] = {"a": ["b"], "z": ["c"]}
    doc = json.loads(trace.read_text(encoding="utf-8"))
    check_against_report(doc, report)
    link_tracks = sorted(v for (pid, tid), v in names_of(doc["traceEvents"]).items()
                         if pid == 2 and tid is not None)
    assert link_tracks == ["d0 → d1", "d0 → d1 #2"]
    # the zero-time op `z` is traced too, with duration 0
    z = next(e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"] == "z")
    assert z["dur"] == 0


def test_trace_is_deterministic_and_written_atomically(tmp_path: Path) -> None:
    spec = ROOT / "tests" / "compare" / "fixtures" / "fork.plan"
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        code, _, err = cli("solve", str(spec), "--algo", "heft", "--trace", str(path))
        assert code == 0, err
    assert a.read_bytes() == b.read_bytes()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_unwritable_trace_path_is_a_usage_error(tmp_path: Path) -> None:
    spec = ROOT / "tests" / "compare" / "fixtures" / "fork.plan"
    code, _, err = cli("solve", str(spec), "--algo", "heft", "--trace",
                       str(tmp_path / "missing" / "t.json"))
    assert code == 2 and "E604" in err and "--trace" in err
    code, _, err = cli("simulate", str(spec), "--trace", str(tmp_path))
    assert code == 2 and "E604" in err and "it is a folder" in err


def test_the_check_catches_broken_traces() -> None:
    good = {"ph": "X", "pid": 1, "tid": 1, "ts": 0.0, "dur": 5.0, "name": "a", "cat": "c"}
    assert check_trace_format({"traceEvents": [good]}) == []
    assert check_trace_format([good]) != []
    assert check_trace_format({"traceEvents": [{**good, "dur": -1}]}) != []
    assert check_trace_format({"traceEvents": [{**good, "ph": "f", "id": 1, "bp": "s"}]})
    crossing = [good, {**good, "name": "b", "ts": 3.0}]
    assert check_nesting(crossing) == ["(1, 1): a and b overlap"]


def test_perfetto_reads_the_trace(tmp_path: Path) -> None:
    shell = os.environ.get("PERFETTO_TRACE_PROCESSOR")
    if not shell or not os.access(shell, os.X_OK):
        pytest.skip("Perfetto's trace processor downloads its binary (offline here): set "
                    "PERFETTO_TRACE_PROCESSOR=/path/to/trace_processor_shell to run this")
    tp_mod = pytest.importorskip("perfetto.trace_processor")
    trace = tmp_path / "t.json"
    spec = ROOT / "tests" / "compare" / "fixtures" / "fork.plan"
    code, out, err = cli("solve", str(spec), "--algo", "heft", "--json", "--trace", str(trace))
    assert code == 0, err
    report = json.loads(out)["result"]
    tp = tp_mod.TraceProcessor(trace=str(trace),
                               config=tp_mod.TraceProcessorConfig(bin_path=shell))
    try:
        n_slices = next(iter(tp.query("select count(*) as n from slice"))).n
        n_flows = next(iter(tp.query("select count(*) as n from flow"))).n
    finally:
        tp.close()
    assert n_slices == len(report["schedule"]) + len(report["transfers"])
    assert n_flows >= len(report["transfers"])


DEADLOCK = """
cluster c { device d[0..1] { memory 1 GiB }  link d0 <-> d1 { bandwidth 1 GB/s } }
graph g { op a { time 1 ms  output 1 MiB }  op b { time 1 ms }  op z { time 2 ms }  a -> b }
plan p { graph g  cluster c  place a, b on d0  place z on d1 }
"""


def test_an_infeasible_plan_traces_what_ran(tmp_path: Path) -> None:
    # an order that runs b before its input a on d0: both never run (times inf); z does
    spec = tmp_path / "deadlock.plan"
    spec.write_text(DEADLOCK)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"format": "planner.plan", "version": 1, "plan": "p",
                                "placement": {"a": "d0", "b": "d0", "z": "d1"},
                                "order": {"d0": ["b", "a"], "d1": ["z"]}}))
    trace = tmp_path / "t.json"
    code, _, err = cli("simulate", str(spec), "--placement", str(plan), "--trace", str(trace))
    assert code == 3 and "order" in err, err
    doc = json.loads(trace.read_text(encoding="utf-8"))
    assert check_trace_format(doc) == []
    assert [e["name"] for e in doc["traceEvents"] if e["ph"] == "X"] == ["z"]
    assert doc["otherData"]["ops_traced"] == 1 and doc["otherData"]["ops"] == 3
    assert doc["otherData"]["makespan_us"] is None
    # the trace says the plan is infeasible and why (before: nothing in it did)
    assert doc["otherData"]["feasible"] is False
    assert any(v.startswith("order:") for v in doc["otherData"]["violations"])


# two training units, each 4 MiB of params, on two stages of two replicas each
HYBRID = ("cluster c { device d[0..3] { memory 1 GiB }\n"
          "  link d[0..3] <-> d[0..3] { bandwidth 1 GB/s  latency 10 us } }\ngraph g {\n"
          + "".join(f"  op {n} {{ time 1 ms  params 4 MiB  output 1 MB }}\n"
                    f"  op {n}.bwd {{ time 2 ms  output 1 MB  backward_of {n} }}\n"
                    for n in "ab")
          + "  a -> b -> b.bwd -> a.bwd\n}\n"
          "plan p { graph g  cluster c  objective pipeline  microbatches 4  data_parallel 2 }\n")


def test_a_pipeline_plan_traces_its_iteration(tmp_path: Path) -> None:
    """Before: the trace of a pipeline plan was one pass of one micro-batch (4 ops, 8 ms),
    while `solve` reported an iteration of 4 micro-batches (15 ms) and its all-reduces."""
    spec = tmp_path / "hybrid.plan"
    spec.write_text(HYBRID)
    trace, plan = tmp_path / "t.json", tmp_path / "plan.json"
    code, out, err = cli("solve", str(spec), "--algo", "hybrid", "--json", "--trace",
                         str(trace), "--out", str(plan))
    assert code == 0, err
    pipeline = json.loads(out)["result"]["pipeline"]
    doc = json.loads(trace.read_text(encoding="utf-8"))
    events = doc["traceEvents"]
    assert check_trace_format(doc) == [] and check_nesting(events) == []
    other = doc["otherData"]
    assert other["iteration_us"] == pytest.approx(pipeline["iteration_s"] * US, abs=1e-5)
    assert (other["schedule"], other["microbatches"]) == ("1f1b", 4)
    slices = [e for e in events if e["ph"] == "X"]
    # every op of every micro-batch once, named for both
    ops = [e for e in slices if e["pid"] == DEVICES]
    assert Counter((e["args"]["op"], e["args"]["microbatch"]) for e in ops) == Counter(
        (op, m) for op in ("a", "b", "b.bwd", "a.bwd") for m in range(4))
    assert {e["name"] for e in ops} >= {"a · mb0", "a.bwd · mb3"}
    # each task covers its device's ops of its micro-batch and direction, first to last
    names = names_of(events)
    tasks = [e for e in slices if e["pid"] == TASKS]
    assert len(tasks) == 16  # 2 stages x (forward, backward) x 4 micro-batches
    for t in tasks:
        device = names[(TASKS, t["tid"])]
        mine = [e for e in ops if e["args"]["device"] == device
                and e["args"]["microbatch"] == t["args"]["microbatch"]
                and e["args"]["op"].endswith(".bwd") == (t["cat"] == "backward")]
        assert min(e["ts"] for e in mine) == t["ts"]
        assert max(e["ts"] + e["dur"] for e in mine) == pytest.approx(t["ts"] + t["dur"])
    # micro-batches alternate over a stage's replicas; each group all-reduces its gradients
    assert {names[(DEVICES, e["tid"])] for e in ops if e["args"]["op"] == "a"} == {"d0", "d1"}
    reduces = [e for e in slices if e["pid"] == ALLREDUCES]
    assert sorted(tuple(e["args"]["devices"]) for e in reduces) == [("d0", "d1"), ("d2", "d3")]
    assert all(e["args"]["bytes"] == 4 * 2**20 for e in reduces)
    last = max(e["ts"] + e["dur"] for e in slices)
    assert last == pytest.approx(other["iteration_us"]) and last in {
        e["ts"] + e["dur"] for e in reduces}
    # `simulate` of the plan written traces the same iteration, byte for byte
    again = tmp_path / "again.json"
    code, _, err = cli("simulate", str(spec), "--placement", str(plan), "--trace", str(again))
    assert code == 0, err
    assert again.read_bytes() == trace.read_bytes()
    assert other["feasible"] is True and other["violations"] == []
    # on devices too small for the micro-batches in flight (one pass fits), the trace says
    # the pipeline does not fit, as simulate's exit 3 does
    small = tmp_path / "small.plan"
    small.write_text(HYBRID.replace("memory 1 GiB", "memory 10 MiB"))
    code, _, err = cli("simulate", str(small), "--placement", str(plan), "--trace", str(again))
    assert code == 3 and "in flight" in err, err
    other = json.loads(again.read_text(encoding="utf-8"))["otherData"]
    assert other["feasible"] is False and "in flight" in other["violations"][0]


def test_a_pipeline_trace_carries_the_figures_solve_prints(tmp_path: Path) -> None:
    """Before: a pipeline trace's `makespan_us` was a third figure, the last op of the
    iteration before its all-reduces (11 ms here), beside solve's one-pass makespan (8 ms)
    and the iteration (`iteration_us`)."""
    spec = tmp_path / "hybrid.plan"
    spec.write_text(HYBRID)
    trace = tmp_path / "t.json"
    code, out, err = cli("solve", str(spec), "--algo", "hybrid", "--json", "--trace",
                         str(trace))
    assert code == 0, err
    result = json.loads(out)["result"]
    other = json.loads(trace.read_text(encoding="utf-8"))["otherData"]
    assert other["makespan_us"] == pytest.approx(result["makespan_s"] * US, abs=1e-5)
    assert other["iteration_us"] == pytest.approx(result["pipeline"]["iteration_s"] * US,
                                                  abs=1e-5)
    assert other["makespan_us"] < other["iteration_us"]


def test_interleaved_tasks_name_their_stage(tmp_path: Path) -> None:
    layers = [f"l{k}" for k in range(1, 5)]
    ops = "\n".join(f"  op {n} {{ time 4 ms  output 1 KB }}\n"
                    f"  op {n}.bwd {{ time 8 ms  output 1 KB  backward_of {n} }}"
                    for n in layers)
    chain = " -> ".join(layers + [f"{n}.bwd" for n in reversed(layers)])
    spec = tmp_path / "il.plan"
    spec.write_text(
        "cluster c { device d[0..1] { memory 1 GiB }  link d0 <-> d1 { bandwidth 100 GB/s } }\n"
        f"graph g {{\n{ops}\n  {chain}\n}}\n"
        "plan p { graph g  cluster c  objective pipeline  microbatches 4  memory liveness\n"
        "  schedule interleaved  stages_per_device 2 }\n")
    trace = tmp_path / "t.json"
    code, out, err = cli("solve", str(spec), "--json", "--trace", str(trace))
    assert code == 0, err
    pipeline = json.loads(out)["result"]["pipeline"]
    assert pipeline["schedule_run"] == "interleaved"
    doc = json.loads(trace.read_text(encoding="utf-8"))
    assert check_nesting(doc["traceEvents"]) == []
    tasks = Counter(e["name"] for e in doc["traceEvents"] if e["ph"] == "X"
                    and e["pid"] == TASKS)
    # four stages on two devices: a task per stage, micro-batch and direction
    assert tasks == Counter(f"{way} mb{m} · stage {k}" for way in ("forward", "backward")
                            for m in range(4) for k in range(4))
    assert doc["otherData"]["iteration_us"] == pytest.approx(pipeline["iteration_s"] * US)
    # the plan's model, not the copies' (simulated with memory unbounded, `static`)
    assert doc["otherData"]["memory_model"] == "liveness"
