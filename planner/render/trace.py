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
infeasible plan) are left out and counted in `otherData`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..files import write_text_atomic
from ..model import Problem
from ..simulate import SimResult, Transfer
from .groups import op_type

__all__ = ["trace_document", "trace_json", "write_trace"]

DEVICES_PID = 1
LINKS_PID = 2


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


def _link_tracks(done: list[Transfer]) -> tuple[list[tuple[int, int, int]], list[int]]:
    """Tracks as (src, dst, lane), sorted, and per transfer in `done` its track index.

    Each transfer, in order of start, goes to the first lane of its device pair whose last
    transfer has ended: transfers on one track never overlap."""
    lanes: dict[tuple[int, int], list[float]] = {}
    lane_of: list[tuple[int, int, int]] = [(0, 0, 0)] * len(done)
    for j in sorted(range(len(done)), key=lambda j: (done[j].start_s, done[j].end_s, j)):
        tr = done[j]
        ends = lanes.setdefault((tr.src_device, tr.dst_device), [])
        k = next((k for k, end in enumerate(ends) if end <= tr.start_s), len(ends))
        if k == len(ends):
            ends.append(tr.end_s)
        else:
            ends[k] = tr.end_s
        lane_of[j] = (tr.src_device, tr.dst_device, k)
    tracks = sorted(set(lane_of))
    index = {t: k for k, t in enumerate(tracks)}
    return tracks, [index[t] for t in lane_of]


def trace_document(problem: Problem, result: SimResult) -> dict[str, Any]:
    """The trace as a JSON-ready dict (`traceEvents`, `displayTimeUnit`, `otherData`)."""
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
    tracks, track_of = _link_tracks(done)
    for j, (src, dst, lane) in enumerate(tracks):
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
        events.append({"ph": "X", "pid": DEVICES_PID, "tid": d + 1, "ts": ts, "dur": dur,
                       "name": op.name, "cat": op_type(op.name, op.type),
                       "args": {"op": op.name, "device": devs[d].name,
                                "output_bytes": op.output_bytes,
                                "params_bytes": op.params_bytes,
                                "temp_bytes": op.temp_bytes}})
    flows: list[dict[str, Any]] = []
    succ = problem.graph.successors
    for tr, track in zip(done, track_of, strict=True):
        ts, dur = _span(tr.start_s, tr.end_s)
        tid = track + 1
        producer = ops[tr.src_op].name
        events.append({"ph": "X", "pid": LINKS_PID, "tid": tid, "ts": ts, "dur": dur,
                       "name": f"{producer} → {devs[tr.dst_device].name}", "cat": "transfer",
                       "args": {"op": producer, "from": devs[tr.src_device].name,
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
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"generator": "planner", "plan": problem.name,
                      "contention": problem.contention, "memory_model": problem.memory_model,
                      "makespan_us": _us(result.makespan_s)
                      if math.isfinite(result.makespan_s) else None,
                      "ops": len(ops), "ops_traced": ran,
                      "transfers": len(result.transfers), "transfers_traced": len(done)},
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


def trace_json(problem: Problem, result: SimResult) -> str:
    """The trace as text: one event per line, keys in a fixed order (diffable)."""
    doc = trace_document(problem, result)
    lines = [json.dumps(ev, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
             for ev in doc["traceEvents"]]
    other = json.dumps(doc["otherData"], ensure_ascii=False, allow_nan=False,
                       separators=(",", ":"))
    return ('{"displayTimeUnit":"ns","otherData":' + other + ',\n"traceEvents":[\n'
            + ",\n".join(lines) + "\n]}\n")


def write_trace(path: str, problem: Problem, result: SimResult) -> None:
    """Write `trace_json` atomically."""
    write_text_atomic(path, trace_json(problem, result))
