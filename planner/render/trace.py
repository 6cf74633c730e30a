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

import io
import itertools
import json
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, TextIO

from ..files import atomic_file
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

#: one trace event, JSON-ready
Event = dict[str, Any]
#: one end of a flow: the pid, tid and (ts, dur) of the slice it sits in
FlowEnd = tuple[int, int, tuple[float, float]]
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
    other, events = _trace(problem, result)
    return {"traceEvents": list(events), "displayTimeUnit": "ns", "otherData": other}


def _trace(problem: Problem, result: SimResult) -> tuple[dict[str, Any], Iterator[Event]]:
    """`trace_document`'s `otherData`, and its events as they are made."""
    ops = problem.graph.ops
    other = {**_head(problem, result.makespan_s,
                     [f"{v.kind}: {v.message}" for v in result.violations]),
             "ops": len(ops), "ops_traced": _count_ran(result),
             "transfers": len(result.transfers), "transfers_traced": len(result.sent())}
    return other, _schedule_events(
        problem, result, lambda i: (ops[i].name, op_type(ops[i].name, ops[i].type), {}))


def _head(problem: Problem, makespan_s: float, breaks: Sequence[str]) -> dict[str, Any]:
    return {"generator": "planner", "plan": problem.name, "contention": problem.contention,
            "memory_model": problem.memory_model,
            "makespan_us": _us(makespan_s) if math.isfinite(makespan_s) else None,
            "feasible": not breaks, "violations": list(breaks)}


def _count_ran(result: SimResult) -> int:
    """The ops that ran (`SimResult.ran`), which the devices' tracks draw."""
    return sum(1 for _ in result.ran())


def _schedule_events(problem: Problem, result: SimResult, label: Label) -> Iterator[Event]:
    """The devices' and the links' events (metadata, slices, flows), one at a time: a
    pipeline's trace at the `pipeline_copies` limit held every event as a dict before the
    first was written (5.6 GB, where the run without `--trace` takes 2.1 GB)."""
    ops, devs, edges = problem.graph.ops, problem.cluster.devices, problem.graph.edges
    yield _meta(DEVICES_PID, None, "process_name", {"name": f"devices · plan {problem.name}"})
    yield _meta(DEVICES_PID, None, "process_sort_index", {"sort_index": 0})
    yield _meta(LINKS_PID, None, "process_name",
                {"name": f"links · contention {problem.contention}"})
    yield _meta(LINKS_PID, None, "process_sort_index", {"sort_index": 1})
    for d, dev in enumerate(devs):
        yield _meta(DEVICES_PID, d + 1, "thread_name", {"name": dev.name})
        yield _meta(DEVICES_PID, d + 1, "thread_sort_index", {"sort_index": d})
    done = result.sent()
    pairs, track_of = _tracks([((t.src_device, t.dst_device), t.start_s, t.end_s)
                               for t in done])
    for j, ((src, dst), lane) in enumerate(pairs):
        name = f"{devs[src].name} → {devs[dst].name}" + (f" #{lane + 1}" if lane else "")
        yield _meta(LINKS_PID, j + 1, "thread_name", {"name": name})
        yield _meta(LINKS_PID, j + 1, "thread_sort_index", {"sort_index": j})

    for d, i, s, e in result.ran():
        op = ops[i]
        ts, dur = _span(s, e)
        name, cat, more = label(i)
        yield {"ph": "X", "pid": DEVICES_PID, "tid": d + 1, "ts": ts, "dur": dur,
               "name": name, "cat": cat,
               "args": {"op": op.name, **more, "device": devs[d].name,
                        "output_bytes": op.output_bytes, "params_bytes": op.params_bytes,
                        "temp_bytes": op.temp_bytes}}
    for tr, track in zip(done, track_of, strict=True):
        ts, dur = _span(tr.start_s, tr.end_s)
        producer, _, more = label(tr.src_op)
        yield {"ph": "X", "pid": LINKS_PID, "tid": track + 1, "ts": ts, "dur": dur,
               "name": f"{producer} → {devs[tr.dst_device].name}", "cat": "transfer",
               "args": {"op": ops[tr.src_op].name, **more,
                        "from": devs[tr.src_device].name,
                        "to": devs[tr.dst_device].name, "bytes": tr.bytes}}
    # the flows after every slice, as before: each end inside a slice the trace drew
    start, end, succ = result.start_s, result.end_s, problem.graph.successors

    def slice_of(i: int) -> tuple[float, float] | None:
        return _span(start[i], end[i]) if math.isfinite(start[i]) and math.isfinite(end[i]) \
            else None

    fid = 0
    for tr, track in zip(done, track_of, strict=True):
        transfer, tid = _span(tr.start_s, tr.end_s), track + 1
        ends: list[tuple[FlowEnd, FlowEnd]] = []
        made = slice_of(tr.src_op)
        if made is not None:
            ends.append(((DEVICES_PID, tr.src_device + 1, made), (LINKS_PID, tid, transfer)))
        for c in sorted({edges[k].dst for k in succ[tr.src_op]
                         if result.placement[edges[k].dst] == tr.dst_device}):
            consumer = slice_of(c)
            if consumer is not None:
                ends.append(((LINKS_PID, tid, transfer),
                             (DEVICES_PID, tr.dst_device + 1, consumer)))
        for pair in ends:
            fid += 1
            yield from _flow(fid, pair)


def pipeline_trace_document(problem: Problem, sim: Simulation, breaks: Sequence[str],
                            makespan_s: float) -> dict[str, Any]:
    """A pipeline plan's trace (the module docstring) as a JSON-ready dict; `problem` is
    the plan's own, `sim` its simulation as the pipeline, `breaks` what keeps the plan from
    running as that pipeline (`pipeline.verdict.pipeline_breaks`; the copies' own
    simulation has memory unbounded, so it cannot say), `makespan_s` the plan's one-pass
    makespan (the figure `solve` prints as the makespan)."""
    other, events = _pipeline_trace(problem, sim, breaks, makespan_s)
    return {"traceEvents": list(events), "displayTimeUnit": "ns", "otherData": other}


def _pipeline_trace(problem: Problem, sim: Simulation, breaks: Sequence[str],
                    makespan_s: float) -> tuple[dict[str, Any], Iterator[Event]]:
    """`pipeline_trace_document`'s `otherData`, and its events as they are made."""
    ops, run = problem.graph.ops, sim.run

    def label(i: int) -> tuple[str, str, dict[str, Any]]:
        m, k = divmod(i, sim.width)
        if k >= sim.n_ops:
            stage = sim.relay_stage[k - sim.n_ops]
            return f"relay · stage {stage} · mb{m}", "relay", {"microbatch": m,
                                                               "stage": stage}
        return f"{ops[k].name} · mb{m}", op_type(ops[k].name, ops[k].type), {"microbatch": m}

    # the plan's own model (the copies are simulated with memory unbounded, `static`); not
    # the copies' makespan, a third figure (their last op, before the all-reduces)
    other = {**_head(problem, makespan_s, breaks), "schedule": run.schedule,
             "microbatches": run.microbatches,
             "iteration_us": _us(run.iteration_s) if math.isfinite(run.iteration_s) else None,
             "ops": len(ops) * run.microbatches,
             "relays": (sim.width - sim.n_ops) * run.microbatches,
             "ops_traced": _count_ran(sim.result), "transfers": len(sim.result.transfers),
             "transfers_traced": len(sim.result.sent()), "tasks": len(run.tasks),
             "allreduces": len(run.allreduces)}
    return other, itertools.chain(_schedule_events(sim.problem, sim.result, label),
                                  _task_events(problem, sim),
                                  _allreduce_events(problem, run.allreduces))


def _task_events(problem: Problem, sim: Simulation) -> Iterator[Event]:
    """Process 3: a track per device, a slice per task."""
    devs, run = problem.cluster.devices, sim.run
    yield _meta(TASKS_PID, None, "process_name",
                {"name": f"pipeline · {run.schedule}, {run.microbatches} micro-batches"})
    yield _meta(TASKS_PID, None, "process_sort_index", {"sort_index": 2})
    for d in sorted({t.device for t in run.tasks}):
        yield _meta(TASKS_PID, d + 1, "thread_name", {"name": devs[d].name})
        yield _meta(TASKS_PID, d + 1, "thread_sort_index", {"sort_index": d})
    stages_on = Counter(s.device for s in run.stages)
    per_stage = schedule_of(run.schedule).task_per_stage
    for t in run.tasks:
        # a task is one stage's where its device has several, each a task (`interleaved`)
        staged = per_stage and stages_on[run.stages[t.stage].device] > 1
        ts, dur = _span(t.start_s, t.end_s)
        way = "forward" if t.forward else "backward"
        yield {"ph": "X", "pid": TASKS_PID, "tid": t.device + 1, "ts": ts, "dur": dur,
               "name": f"{way} mb{t.microbatch}" + (f" · stage {t.stage}" if staged else ""),
               "cat": way, "args": {"microbatch": t.microbatch, "stage": t.stage,
                                    "device": devs[t.device].name}}


def _flow(fid: int, ends: tuple[FlowEnd, FlowEnd]) -> Iterator[Event]:
    """One flow (an `s` and its `f`, id `fid`) between two slices, each end (pid, tid, the
    slice's (ts, dur)) inside its slice, bound to it (`bp: e`)."""
    for (pid, tid, (ts, dur)), ph in zip(ends, ("s", "f"), strict=True):
        ev: Event = {"ph": ph, "pid": pid, "tid": tid, "ts": _mid(ts, dur), "id": fid,
                     "name": "tensor", "cat": "flow"}
        if ph == "f":
            ev["bp"] = "e"
        yield ev


def _allreduce_events(problem: Problem, allreduces: Sequence[AllReduce]) -> list[Event]:
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


def _write(out: TextIO, other: dict[str, Any], events: Iterable[Event]) -> None:
    """The trace as text to `out`, one event per line as it is made, keys in a fixed order
    (diffable)."""
    out.write('{"displayTimeUnit":"ns","otherData":'
              + json.dumps(other, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
              + ',\n"traceEvents":[\n')
    sep = ""
    for ev in events:
        out.write(sep + json.dumps(ev, ensure_ascii=False, allow_nan=False,
                                   separators=(",", ":")))
        sep = ",\n"
    out.write("\n]}\n")


def _text(trace: tuple[dict[str, Any], Iterator[Event]]) -> str:
    out = io.StringIO()
    _write(out, *trace)
    return out.getvalue()


def _write_atomic(path: str, trace: tuple[dict[str, Any], Iterator[Event]]) -> None:
    """Write `trace` to `path` atomically, event by event (`atomic_file`)."""
    with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
        _write(fh, *trace)


def trace_json(problem: Problem, result: SimResult) -> str:
    """The trace as text: one event per line, keys in a fixed order (diffable)."""
    return _text(_trace(problem, result))


def pipeline_trace_json(problem: Problem, sim: Simulation, breaks: Sequence[str],
                        makespan_s: float) -> str:
    """A pipeline plan's trace as text, as `trace_json`."""
    return _text(_pipeline_trace(problem, sim, breaks, makespan_s))


def write_trace(path: str, problem: Problem, result: SimResult) -> None:
    """Write `trace_json` atomically, event by event."""
    _write_atomic(path, _trace(problem, result))


def write_pipeline_trace(path: str, problem: Problem, sim: Simulation,
                         breaks: Sequence[str], makespan_s: float) -> None:
    """Write `pipeline_trace_json` atomically, event by event."""
    _write_atomic(path, _pipeline_trace(problem, sim, breaks, makespan_s))
