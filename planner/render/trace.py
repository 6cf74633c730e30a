"""A simulated schedule as a Chrome/Perfetto trace (`solve --trace`, `simulate --trace`).

The Trace Event Format's JSON object form (the format `torch.profiler` exports), so the
plan opens in ui.perfetto.dev or chrome://tracing next to real profiles:

- process 1, `devices`: one thread (track) per device; each op that ran is a complete
  event (`ph: X`) on its device's track, `cat` its op type, `args` its bytes.
- process 2, `links`: one track per directed device pair that carried a transfer; each
  transfer is a complete event there. Transfers that overlap on one pair (contention
  `none` lets them) go to numbered extra tracks, because complete events on one track
  must nest.
- flows (`ph: s` / `ph: f`, bound to the enclosing slices): producer op → transfer, and
  transfer → each consumer of it on the receiving device, so Perfetto draws the arrows.
- metadata (`ph: M`) names and orders the processes and tracks.

Times are microseconds (the format's unit), rounded to picoseconds so that output is
deterministic and readable. Ops or transfers that never happen (`inf` times, in an
infeasible plan) are left out and counted in `otherData`, which says whether the plan is
feasible and, when not, what breaks it (`violations`: a trace of a plan that does not fit
looks like any other in Perfetto).

A pipeline plan's trace (`pipeline_trace_json`) is its iteration as the pipeline ran it
(`pipeline.schedule.simulation`): every op of every micro-batch (`name · mb3`, its
micro-batch in `args`) and the zero-time relays that pass a tensor on through a stage, with
their transfers and flows as above; then process 3, `pipeline`, with a track per device and
a slice per task (a device's forward or backward ops of one micro-batch, as the HTML
report's timeline draws them), and process 4, `all-reduces`, with the gradient
all-reduces (a tied weight's, a replicated stage's buckets), a track per ring of devices.
Its `otherData` carries the figures `solve` prints, under their names: `iteration_us`
(where the trace ends) and `makespan_us`, the one-pass makespan of one micro-batch, which
this trace does not draw.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ..files import write_text_atomic
from ..model import Problem
from ..pipeline.allreduce import AllReduce
from ..pipeline.schedule import Simulation
from ..schedules import of as schedule_of
from ..simulate import SimResult
from .groups import op_type

__all__ = ["pipeline_trace_document", "pipeline_trace_json", "trace_document", "trace_json",
           "write_pipeline_trace", "write_trace"]

DEVICES_PID = 1
LINKS_PID = 2
TASKS_PID = 3
ALLREDUCE_PID = 4

#: op -> (slice name, category, args beyond the op's bytes)
Label = Callable[[int], tuple[str, str, dict[str, Any]]]


def _us(t_s: float) -> float:
    """Seconds to microseconds, rounded to 1e-6 µs; `-0.0` becomes `0.0`."""
    return round(t_s * 1e6, 6) + 0.0


def _span(start_s: float, end_s: float) -> tuple[float, float]:
    """(ts, dur) in µs such that ts + dur is the rounded end: back-to-back slices stay
    back to back instead of overlapping by a rounding error."""
    ts = _us(start_s)
    return ts, round(_us(end_s) - ts, 6) + 0.0


def _mid(ts: float, dur: float) -> float:
    """A time strictly inside a slice of positive duration, where flows bind."""
    return round(ts + dur / 2, 6) + 0.0


def _meta(pid: int, tid: int | None, name: str, args: dict[str, Any]) -> dict[str, Any]:
    ev: dict[str, Any] = {"ph": "M", "pid": pid}
    if tid is not None:
        ev["tid"] = tid
    ev.update(name=name, args=args)
    return ev


def _tracks(items: Sequence[tuple[Any, float, float]]
            ) -> tuple[list[tuple[Any, int]], list[int]]:
    """Tracks as (key, lane), sorted, and per item (key, start, end) its track index.

    Each item, in order of start, goes to the first lane of its key (a device pair, a ring
    of devices) whose last item has ended: items on one track never overlap."""
    lanes: dict[Hashable, list[float]] = {}
    lane_of: list[tuple[Any, int]] = [((), 0)] * len(items)
    for j in sorted(range(len(items)), key=lambda j: (items[j][1], items[j][2], j)):
        key, start, end = items[j]
        ends = lanes.setdefault(key, [])
        k = next((k for k, last in enumerate(ends) if last <= start), len(ends))
        if k == len(ends):
            ends.append(end)
        else:
            ends[k] = end
        lane_of[j] = (key, k)
    tracks = sorted(set(lane_of))
    index = {t: k for k, t in enumerate(tracks)}
    return tracks, [index[t] for t in lane_of]


def trace_document(problem: Problem, result: SimResult) -> dict[str, Any]:
    """The trace as a JSON-ready dict (`traceEvents`, `displayTimeUnit`, `otherData`)."""
    ops = problem.graph.ops
    events, ran, traced = _schedule_events(
        problem, result, lambda i: (ops[i].name, op_type(ops[i].name, ops[i].type), {}))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {**_head(problem, result.makespan_s,
                            [f"{v.kind}: {v.message}" for v in result.violations]),
                      "ops": len(ops), "ops_traced": ran,
                      "transfers": len(result.transfers), "transfers_traced": traced},
    }


def _head(problem: Problem, makespan_s: float, breaks: Sequence[str]) -> dict[str, Any]:
    return {"generator": "planner", "plan": problem.name, "contention": problem.contention,
            "memory_model": problem.memory_model,
            "makespan_us": _us(makespan_s) if math.isfinite(makespan_s) else None,
            "feasible": not breaks, "violations": list(breaks)}


def _schedule_events(problem: Problem, result: SimResult, label: Label
                     ) -> tuple[list[dict[str, Any]], int, int]:
    """The devices' and the links' events (metadata, slices, flows), the ops traced and the
    transfers traced."""
    ops, devs, edges = problem.graph.ops, problem.cluster.devices, problem.graph.edges
    events: list[dict[str, Any]] = [
        _meta(DEVICES_PID, None, "process_name", {"name": f"devices · plan {problem.name}"}),
        _meta(DEVICES_PID, None, "process_sort_index", {"sort_index": 0}),
        _meta(LINKS_PID, None, "process_name",
              {"name": f"links · contention {problem.contention}"}),
        _meta(LINKS_PID, None, "process_sort_index", {"sort_index": 1}),
    ]
    for d, dev in enumerate(devs):
        events.append(_meta(DEVICES_PID, d + 1, "thread_name", {"name": dev.name}))
        events.append(_meta(DEVICES_PID, d + 1, "thread_sort_index", {"sort_index": d}))
    done = result.sent()
    pairs, track_of = _tracks([((t.src_device, t.dst_device), t.start_s, t.end_s)
                               for t in done])
    for j, ((src, dst), lane) in enumerate(pairs):
        name = f"{devs[src].name} → {devs[dst].name}" + (f" #{lane + 1}" if lane else "")
        events.append(_meta(LINKS_PID, j + 1, "thread_name", {"name": name}))
        events.append(_meta(LINKS_PID, j + 1, "thread_sort_index", {"sort_index": j}))

    slices: dict[int, tuple[float, float]] = {}  # op -> (ts, dur) of its slice
    ran = 0
    for d, i, s, e in result.ran():
        op = ops[i]
        ts, dur = _span(s, e)
        slices[i] = (ts, dur)
        ran += 1
        name, cat, more = label(i)
        events.append({"ph": "X", "pid": DEVICES_PID, "tid": d + 1, "ts": ts, "dur": dur,
                       "name": name, "cat": cat,
                       "args": {"op": op.name, **more, "device": devs[d].name,
                                "output_bytes": op.output_bytes,
                                "params_bytes": op.params_bytes,
                                "temp_bytes": op.temp_bytes}})
    flows: list[dict[str, Any]] = []
    succ = problem.graph.successors
    for tr, track in zip(done, track_of, strict=True):
        ts, dur = _span(tr.start_s, tr.end_s)
        tid = track + 1
        producer, _, more = label(tr.src_op)
        events.append({"ph": "X", "pid": LINKS_PID, "tid": tid, "ts": ts, "dur": dur,
                       "name": f"{producer} → {devs[tr.dst_device].name}", "cat": "transfer",
                       "args": {"op": ops[tr.src_op].name, **more,
                                "from": devs[tr.src_device].name,
                                "to": devs[tr.dst_device].name, "bytes": tr.bytes}})
        consumers = sorted({edges[k].dst for k in succ[tr.src_op]
                            if result.placement[edges[k].dst] == tr.dst_device
                            and edges[k].dst in slices})
        ends = [(DEVICES_PID, tr.src_device + 1, tr.src_op, "s"),
                (LINKS_PID, tid, -1, "f")]
        if tr.src_op in slices:
            _flow(flows, ends, slices, (ts, dur))
        for c in consumers:
            _flow(flows, [(LINKS_PID, tid, -1, "s"), (DEVICES_PID, tr.dst_device + 1, c, "f")],
                  slices, (ts, dur))
    events.extend(flows)
    return events, ran, len(done)


def pipeline_trace_document(problem: Problem, sim: Simulation, breaks: Sequence[str],
                            makespan_s: float) -> dict[str, Any]:
    """A pipeline plan's trace (the module docstring) as a JSON-ready dict; `problem` is
    the plan's own, `sim` its simulation as the pipeline, `breaks` what keeps the plan from
    running as that pipeline (`pipeline.verdict.pipeline_breaks`; the copies' own
    simulation has memory unbounded, so it cannot say), `makespan_s` the plan's one-pass
    makespan (the figure `solve` prints as the makespan)."""
    ops, devs, run = problem.graph.ops, problem.cluster.devices, sim.run

    def label(i: int) -> tuple[str, str, dict[str, Any]]:
        m, k = divmod(i, sim.width)
        if k >= sim.n_ops:
            stage = sim.relay_stage[k - sim.n_ops]
            return f"relay · stage {stage} · mb{m}", "relay", {"microbatch": m,
                                                               "stage": stage}
        return f"{ops[k].name} · mb{m}", op_type(ops[k].name, ops[k].type), {"microbatch": m}

    events, ran, traced = _schedule_events(sim.problem, sim.result, label)
    events += [
        _meta(TASKS_PID, None, "process_name",
              {"name": f"pipeline · {run.schedule}, {run.microbatches} micro-batches"}),
        _meta(TASKS_PID, None, "process_sort_index", {"sort_index": 2}),
    ]
    for d in sorted({t.device for t in run.tasks}):
        events.append(_meta(TASKS_PID, d + 1, "thread_name", {"name": devs[d].name}))
        events.append(_meta(TASKS_PID, d + 1, "thread_sort_index", {"sort_index": d}))
    stages_on = Counter(s.device for s in run.stages)
    per_stage = schedule_of(run.schedule).task_per_stage
    for t in run.tasks:
        # a task is one stage's where its device has several, each a task (`interleaved`)
        staged = per_stage and stages_on[run.stages[t.stage].device] > 1
        ts, dur = _span(t.start_s, t.end_s)
        way = "forward" if t.forward else "backward"
        events.append({"ph": "X", "pid": TASKS_PID, "tid": t.device + 1, "ts": ts, "dur": dur,
                       "name": f"{way} mb{t.microbatch}" + (f" · stage {t.stage}"
                                                             if staged else ""),
                       "cat": way, "args": {"microbatch": t.microbatch, "stage": t.stage,
                                            "device": devs[t.device].name}})
    events += _allreduce_events(problem, run.allreduces)
    # the plan's own model (the copies are simulated with memory unbounded, `static`); not
    # the copies' makespan, a third figure (their last op, before the all-reduces)
    other = _head(problem, makespan_s, breaks)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {**other, "schedule": run.schedule, "microbatches": run.microbatches,
                      "iteration_us": _us(run.iteration_s)
                      if math.isfinite(run.iteration_s) else None,
                      "ops": len(ops) * run.microbatches,
                      "relays": (sim.width - sim.n_ops) * run.microbatches,
                      "ops_traced": ran, "transfers": len(sim.result.transfers),
                      "transfers_traced": traced, "tasks": len(run.tasks),
                      "allreduces": len(run.allreduces)},
    }


def _flow(flows: list[dict[str, Any]], ends: list[tuple[int, int, int, str]],
          slices: dict[int, tuple[float, float]], transfer: tuple[float, float]) -> None:
    """One flow (an `s` and its `f`, the same id) between two slices; `op -1` is the
    transfer's own slice. Each end sits inside its slice, bound to it (`bp: e`)."""
    fid = len(flows) // 2 + 1
    for pid, tid, op, ph in ends:
        ts, dur = slices[op] if op >= 0 else transfer
        ev: dict[str, Any] = {"ph": ph, "pid": pid, "tid": tid, "ts": _mid(ts, dur),
                              "id": fid, "name": "tensor", "cat": "flow"}
        if ph == "f":
            ev["bp"] = "e"
        flows.append(ev)


def _allreduce_events(problem: Problem, allreduces: Sequence[AllReduce]
                      ) -> list[dict[str, Any]]:
    """Process 4: a track per ring of devices (and lane), a slice per all-reduce."""
    if not allreduces:
        return []
    devs = problem.cluster.devices
    events = [_meta(ALLREDUCE_PID, None, "process_name", {"name": "all-reduces"}),
              _meta(ALLREDUCE_PID, None, "process_sort_index", {"sort_index": 3})]
    rings, track_of = _tracks([(a.devices, a.start_s, a.end_s) for a in allreduces])
    for j, (ring, lane) in enumerate(rings):
        name = " + ".join(devs[d].name for d in ring) + (f" #{lane + 1}" if lane else "")
        events.append(_meta(ALLREDUCE_PID, j + 1, "thread_name", {"name": name}))
        events.append(_meta(ALLREDUCE_PID, j + 1, "thread_sort_index", {"sort_index": j}))
    for a, track in zip(allreduces, track_of, strict=True):
        ts, dur = _span(a.start_s, a.end_s)
        events.append({"ph": "X", "pid": ALLREDUCE_PID, "tid": track + 1, "ts": ts,
                       "dur": dur, "name": f"all-reduce ({a.kind})", "cat": "all-reduce",
                       "args": {"bytes": round(a.bytes),
                                "devices": [devs[d].name for d in a.devices]}})
    return events


def _as_text(doc: dict[str, Any]) -> str:
    """One event per line, keys in a fixed order (diffable)."""
    lines = [json.dumps(ev, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
             for ev in doc["traceEvents"]]
    other = json.dumps(doc["otherData"], ensure_ascii=False, allow_nan=False,
                       separators=(",", ":"))
    return ('{"displayTimeUnit":"ns","otherData":' + other + ',\n"traceEvents":[\n'
            + ",\n".join(lines) + "\n]}\n")


def trace_json(problem: Problem, result: SimResult) -> str:
    """The trace as text: one event per line, keys in a fixed order (diffable)."""
    return _as_text(trace_document(problem, result))


def pipeline_trace_json(problem: Problem, sim: Simulation, breaks: Sequence[str],
                        makespan_s: float) -> str:
    """A pipeline plan's trace as text, as `trace_json`."""
    return _as_text(pipeline_trace_document(problem, sim, breaks, makespan_s))


def write_trace(path: str, problem: Problem, result: SimResult) -> None:
    """Write `trace_json` atomically."""
    write_text_atomic(path, trace_json(problem, result))


def write_pipeline_trace(path: str, problem: Problem, sim: Simulation,
                         breaks: Sequence[str], makespan_s: float) -> None:
    """Write `pipeline_trace_json` atomically."""
    write_text_atomic(path, pipeline_trace_json(problem, sim, breaks, makespan_s))
