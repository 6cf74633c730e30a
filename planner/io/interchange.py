"""The JSON interchange: a neutral, versioned graph format other tools can hand us.

Format `planner-graph`, version 1 (JSON Schema: `interchange.schema.json` beside this
module; units are in the field names: seconds, bytes, FLOP, bytes per second)::

    {
      "format": "planner-graph", "version": 1,
      "name": "GRAPH",                        # graph name (required)
      "source": "free text",                  # provenance (optional, not exported)
      "ops": [                                # in order; each needs a time or flops
        {"name": "conv1", "time_s": 1.2e-4, "time_by_kind_s": {"cpu": 3e-3},
         "flops": 2.4e9, "params_bytes": 37632, "output_bytes": 3211264, "temp_bytes": 0,
         "colocation": "conv1",              # ops with equal strings share a device
         "backward_of": null,                # a backward op: its forward op's name
         "type": "Conv2d"}                   # optional: the op's kind (for charts)
      ],
      "edges": [{"src": "conv1", "dst": "bn1", "bytes": 3211264}],  # bytes: default the
                                                                     # src's output_bytes
      "cluster": {                            # optional
        "name": "box",
        "devices": [{"name": "gpu0", "memory_bytes": 17179869184, "kind": "v100",
                     "speed": 1.0, "flop_rate": 1.57e13}],
        "links": [{"src": "gpu0", "dst": "gpu1", "bandwidth_Bps": 5e10,
                   "latency_s": 2e-6}]},     # directed; every ordered pair needs one
      "plan": {"name": "P", "memory": "static", "contention": "link",
               "pins": {"conv1": "gpu0"},    # optional; needs "cluster"
               "placement": {"bn1": "gpu1"}, # optional: a given placement (`place`)
               "objective": "pipeline", "microbatches": 8, "schedule": "1f1b"}
    }

`planner import json` turns such a file into a spec (times printed so that they parse
back to the same floats); `planner export json` writes one from a spec, in the canonical
form: every op field present (absent times and FLOPs as `null`), a colocation group named
after its first op, every edge with its bytes; `backward_of` only on the backward ops of a
training graph, `type` only on ops that declare one, and the plan's `objective`,
`microbatches`, `schedule` (and `stages_per_device`; `data_parallel` and `microbatch_size`
where not 1) only under `objective pipeline`, the plan's `placement` (its `place`
statements, which `--algo expert` and `planner simulate` run) only where it has one, and
`ties` (ops sharing a weight: `[{"ops": [...], "bytes": N, "weight": NAME}]`) only where
the graph has them. For a
file in canonical form, export(import(x)) == x for the ops and edges.

`import json` also accepts the operator and layer graphs of msr-fiddle/dnn-partitioning
(`planner.io.dnn_partitioning` says how they map).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from .. import schedules
from ..errors import Diagnostic, PlanChoiceError, Span, SpecError, UsageError, did_you_mean
from ..model import (
    CONTENTIONS,
    MEMORY_MODELS,
    OBJECTIVES,
    PIPELINE_COUNTS,
    Cluster,
    Device,
    Graph,
    Link,
    Problem,
    Spec,
)
from ..spec.load import read_source
from ..strictjson import loads as strict_loads
from ..workload import (
    Imported,
    PlanDef,
    Workload,
    WorkOp,
    find_cycle_edge,
    render_cluster,
)
from .dnn_partitioning import from_dnn_partitioning
from .json_checks import JsonChecker

FORMAT = "planner-graph"
VERSION = 1
TOP_FIELDS = ("format", "version", "name", "source", "ops", "edges", "cluster", "plan", "ties")
TIE_FIELDS = ("ops", "bytes", "weight")
OP_FIELDS = ("name", "time_s", "time_by_kind_s", "flops", "params_bytes", "output_bytes",
             "temp_bytes", "colocation", "backward_of", "type")
PIPELINE_FIELDS = ("objective", "microbatches", "schedule", "stages_per_device", "data_parallel",
                   "microbatch_size")
EDGE_FIELDS = ("src", "dst", "bytes")


def schema() -> dict[str, Any]:
    """The JSON Schema of the interchange format (shipped inside the package), with the
    schedules' names from their table (`planner.schedules`)."""
    text = resources.files("planner.io").joinpath("interchange.schema.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    data["$defs"]["plan"]["properties"]["schedule"]["enum"] = list(schedules.NAMES)
    return data


# ---- import -------------------------------------------------------------------------------


def import_json(path: str | os.PathLike[str], name: str | None = None,
                command: str | None = None) -> Imported:
    """Read an interchange (or dnn-partitioning) JSON file into an `Imported` spec."""
    shown = str(path)
    text = read_source(Path(path), shown, kind="graph JSON")  # E001-E004
    return parse_json(text, shown, name, command)


def parse_json(text: str, file: str = "<json>", name: str | None = None,
               command: str | None = None) -> Imported:
    """Parse interchange (or dnn-partitioning) JSON text; errors carry file:line (E920 for
    text that `strictjson.loads` refuses: invalid JSON, a key given twice, an integer too
    long to convert, nesting too deep)."""
    try:
        data = strict_loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(Diagnostic("E920", f"invalid JSON: {err.msg}",
                                   Span.at_json_error(file, err))) from None
    check = JsonChecker(file, text, f"{FORMAT} v{VERSION}")
    if isinstance(data, dict) and data.get("format") == FORMAT:
        return _from_interchange(check, data, name, command)
    if isinstance(data, dict) and "nodes" in data and "maxFPGAs" in data:
        return from_dnn_partitioning(check, data, name or Path(file).stem, command)
    raise SpecError(Diagnostic(
        "E921", f"{file} is neither a `{FORMAT}` file nor a dnn-partitioning graph",
        Span.start_of(file), ((f'a planner graph starts with {{"format": "{FORMAT}", '
                              f'"version": {VERSION}, ...}}'),)))


def _text(check: JsonChecker, raw: Mapping[str, Any], key: str, path: str, near: str,
          expected: str) -> str:
    """The non-empty string `raw[key]`, a name in the spec, "" when absent or null (else
    an error)."""
    value = raw.get(key)
    if value is None:
        return ""
    if isinstance(value, str) and value:
        return value if check.name(f"{path}.{key}", value, near) else ""
    check.error(f"{path}.{key}", f"must be {expected}", near)
    return ""


# complex: validates the interchange JSON: a check and a message per op field (name, time_s,
# flops, time_by_kind_s, sizes, colocation), then cluster, plan and header
def _from_interchange(check: JsonChecker, data: dict[str, Any], name: str | None,
                      command: str | None) -> Imported:
    version = data.get("version")
    if version != VERSION or type(version) is not int:  # true, 1.0 == 1 in Python, not JSON
        check.sink.error("E923", f"unsupported {FORMAT} version {json.dumps(version)}",
                         check.at("version"), f"this planner reads version {VERSION}")
        check.sink.raise_if_errors()
    check.keys(data, TOP_FIELDS, "")
    graph_name = name or check.string(data, "name", "", '"name"', name=True) or "graph"
    w = Workload(graph_name)
    groups: dict[str, list[str]] = {}
    paths: dict[str, str] = {}  # op name -> its path in the file
    for path, raw, op_name, near in check.named(data, "ops", "ops", OP_FIELDS, "op"):
        time_s = check.number(raw, "time_s", path, near, dim="time")
        flops = check.number(raw, "flops", path, near, dim="work")
        by_kind: dict[str, float] = {}
        # only null is absent: `[]`, `0` or `""` was read as {} without a word
        kinds = {} if (given := raw.get("time_by_kind_s")) is None else given
        if not isinstance(kinds, dict):
            check.error(f"{path}.time_by_kind_s", "must be an object {kind: seconds}", near)
            kinds = {}
        for kind in kinds:
            t = check.number(kinds, kind, f"{path}.time_by_kind_s", near, required=True,
                             dim="time")
            if check.name(f"{path}.time_by_kind_s", kind, json.dumps(kind, ensure_ascii=False)) \
                    and t is not None:
                by_kind[kind] = t
        if raw.get("time_s") is None and raw.get("flops") is None and not kinds:
            check.error(path, "needs `time_s`, `flops` or a `time_by_kind_s` entry", near,
                        "give its compute cost, e.g. \"time_s\": 0.0015")
        sizes = [check.number(raw, key, path, near, integer=True, dim="size") or 0
                 for key in ("params_bytes", "output_bytes", "temp_bytes")]
        group = raw.get("colocation")
        if group is not None:
            if isinstance(group, str):
                groups.setdefault(group, []).append(op_name)
            else:
                check.error(f"{path}.colocation", "must be a string or null", near)
        op = w.add(WorkOp(op_name, time_s, flops, sizes[0], sizes[1], sizes[2], by_kind))
        op.backward_of = _text(check, raw, "backward_of", path, near, "an op name or null")
        paths[op_name] = path
        op.type = _text(check, raw, "type", path, near, "a non-empty string or null")
    names = {o.name: o for o in w.ops}
    _check_backward(check, names, paths)
    if not w.ops and not check.sink.has_errors:
        check.error("ops", "must hold at least one op", '"ops"')
    _read_edges(check, data.get("edges", []), names, w)
    w.colocations = [m for m in groups.values() if len(m) > 1]
    _read_ties(check, data.get("ties", []), names, w)
    out = Imported(w, "", exact=True)
    cluster = data.get("cluster")
    if cluster is not None:
        built = _read_cluster(check, cluster)
        if built is not None:
            out.clusters.append(render_cluster(built, exact=True))
            plan = data.get("plan")
            out.plans.append(_read_plan(check, {} if plan is None else plan, w, built))
    elif data.get("plan") is not None:
        check.error("plan", "needs a `cluster` to run on", '"plan"')
    check.sink.raise_if_errors()
    source = data.get("source")
    out.header = "\n".join([
        f"Generated by:\n$ {command}" if command else "Generated by planner.io.interchange",
        f"Source: {check.file} ({FORMAT} v{VERSION})"
        + (f"; provenance: {source}" if isinstance(source, str) and source else ""),
        f"Graph: {len(w.ops)} ops, {len(w.edges)} edges; values as given in the file.",
    ])
    return out


def _check_backward(check: JsonChecker, names: Mapping[str, WorkOp],
                    paths: Mapping[str, str]) -> None:
    """Each `backward_of` names another op of the file, one that is not itself a backward
    op (E203, E234 in the language)."""
    for op in names.values():
        target = names.get(op.backward_of)
        why = ("" if not op.backward_of else "names no op of the file" if target is None
               else "names the op itself" if target is op
               else f"names `{target.name}`, itself a backward op" if target.backward_of
               else "")
        if why:
            check.error(f"{paths[op.name]}.backward_of", why, None,
                        "name the forward op whose gradient this op computes")


def _read_ties(check: JsonChecker, raw_ties: Any, names: Mapping[str, WorkOp],
               w: Workload) -> None:
    """`ties`: [{"ops": [names], "bytes": N, "weight": NAME}] (`bytes` defaults to the least
    `params_bytes` of the ops; the spec's lowering checks the rest: E236-E238)."""
    if not isinstance(raw_ties, list):
        check.error("ties", "must be a list", '"ties"')
        return
    for k, raw in enumerate(raw_ties):
        path = f"ties[{k}]"
        ops = raw.get("ops") if isinstance(raw, dict) else None
        if not isinstance(ops, list) or len(ops) < 2 or not all(
                isinstance(o, str) and o in names for o in ops):
            check.error(path, "must be an object whose `ops` lists two op names or more",
                        '"ties"')
            continue
        check.keys(raw, TIE_FIELDS, path)
        given = check.number(raw, "bytes", path, '"ties"', integer=True, dim="size")
        nbytes = int(given) if given is not None else min(names[o].params_bytes for o in ops)
        weight = _text(check, raw, "weight", path, '"ties"', "a non-empty string or null")
        w.ties.append((list(ops), nbytes, weight or ""))


def _read_edges(check: JsonChecker, raw_edges: Any, names: Mapping[str, WorkOp],
                w: Workload) -> None:
    if not isinstance(raw_edges, list):
        check.error("edges", "must be a list", '"edges"')
        return
    seen: set[tuple[str, str]] = set()
    for k, raw in enumerate(raw_edges):
        path = f"edges[{k}]"
        if not isinstance(raw, dict):
            check.error(path, "must be an object", None)
            continue
        src = check.string(raw, "src", path, None)
        dst = check.string(raw, "dst", path, None)
        if src is None or dst is None:
            continue
        near = json.dumps(dst, ensure_ascii=False)
        check.keys(raw, EDGE_FIELDS, path)
        bad = [n for n in (src, dst) if n not in names]
        for n in bad:
            check.error(path, f"names unknown op {json.dumps(n, ensure_ascii=False)}", near)
        if bad:
            continue
        if src == dst:
            check.error(path, f"goes from {near} to itself", near)
            continue
        if (src, dst) in seen:
            check.error(path, f"repeats the edge {json.dumps(src)} -> {near}", near,
                        "give one edge per pair, with the bytes of all its tensors")
            continue
        seen.add((src, dst))
        nbytes = check.number(raw, "bytes", path, near, integer=True, dim="size")
        w.connect(src, dst, names[src].output_bytes if nbytes is None else nbytes)
    if not check.sink.has_errors:
        cycle = find_cycle_edge(list(names), [(e.src, e.dst) for e in w.edges])
        if cycle is not None:
            k = next(k for k, raw in enumerate(raw_edges)
                     if (raw.get("src"), raw.get("dst")) == cycle)
            check.sink.error("E924", f"the edges form a cycle through `{cycle[0]}` -> "
                             f"`{cycle[1]}`", check.at(f"edges[{k}]"), "a graph must be acyclic")


# complex: validates the interchange cluster: a check and a message per device and link
# field, then the ordered pairs without a link; errors are collected, not raised one by one
def _read_cluster(check: JsonChecker, raw: Any) -> Cluster | None:
    if not isinstance(raw, dict):
        check.error("cluster", "must be an object", '"cluster"')
        return None
    check.keys(raw, ("name", "devices", "links"), "cluster")
    cname = check.string(raw, "name", "cluster", '"cluster"', name=True) or "cluster"
    devices: list[Device] = []
    index: dict[str, int] = {}
    for path, d, dname, near in check.named(
            raw, "devices", "cluster.devices",
            ("name", "memory_bytes", "kind", "speed", "flop_rate"), "device"):
        memory = check.number(d, "memory_bytes", path, near, required=True, integer=True,
                              dim="size")
        speed = check.number(d, "speed", path, near, positive=True, dim="speed")
        rate = check.number(d, "flop_rate", path, near, positive=True, dim="rate")
        kind = check.string(d, "kind", path, near, required=False, name=True)
        index[dname] = len(devices)
        devices.append(Device(dname, memory or 0, kind, 1.0 if speed is None else speed, rate))
    links: dict[tuple[int, int], Link] = {}
    for k, lk in enumerate(check.items(raw, "links", required=False)):
        path = f"cluster.links[{k}]"
        if not isinstance(lk, dict):
            check.error(path, "must be an object", None)
            continue
        check.keys(lk, ("src", "dst", "bandwidth_Bps", "latency_s"), path)
        a, b = (check.string(lk, key, path, None) for key in ("src", "dst"))
        if a is None or b is None:
            continue
        bad = [n for n in (a, b) if n not in index]
        for n in bad:
            check.error(path, f"names unknown device {json.dumps(n)}", json.dumps(n))
        bw = check.number(lk, "bandwidth_Bps", path, None, required=True, positive=True,
                          dim="bandwidth")
        lat = check.number(lk, "latency_s", path, None, dim="time") or 0.0
        if bad or bw is None or _repeated_link(check, path, a, b, links, index):
            continue
        links[(index[a], index[b])] = Link(index[a], index[b], bw, lat)
    missing = [(a, b) for a in range(len(devices)) for b in range(len(devices))
               if a != b and (a, b) not in links]
    if missing:
        shown = ", ".join(f"{devices[a].name} -> {devices[b].name}" for a, b in missing[:4])
        check.error("cluster.links", f"lack a link for {len(missing)} ordered device pair(s): "
                    f"{shown}", '"links"', "every ordered pair of devices needs a link")
    if not devices:
        check.error("cluster.devices", "must hold at least one device", '"devices"')
    return Cluster(cname, tuple(devices), tuple(links[k] for k in sorted(links)))


def _repeated_link(check: JsonChecker, path: str, a: str, b: str,
                   links: Mapping[tuple[int, int], Link], index: Mapping[str, int]) -> bool:
    """E922 for a link from a device to itself or one of a pair already linked (before:
    the first was dropped and the second silently replaced the earlier one)."""
    near = json.dumps(b, ensure_ascii=False)
    if a == b:
        check.error(path, f"links device {near} to itself", near,
                    "a device needs no link to itself: remove this one")
    elif (index[a], index[b]) in links:
        check.error(path, f"repeats the link {json.dumps(a, ensure_ascii=False)} -> {near}",
                    near, "give one link per ordered pair of devices")
    else:
        return False
    return True


def _read_plan(check: JsonChecker, raw: Any, w: Workload, cluster: Cluster) -> PlanDef:
    if not isinstance(raw, dict):
        check.error("plan", "must be an object", '"plan"')
        raw = {}
    check.keys(raw, ("name", "memory", "contention", "pins", "placement", *PIPELINE_FIELDS),
               "plan")
    plan = PlanDef(check.string(raw, "name", "plan", '"plan"', required=False, name=True)
                   or w.name,
                   w.name, cluster.name)
    for key, options in (("memory", MEMORY_MODELS), ("contention", CONTENTIONS)):
        value = raw.get(key)
        if value is None:
            continue
        if value not in options:
            check.error(f"plan.{key}", f"must be one of {', '.join(options)}", f'"{key}"')
        else:
            setattr(plan, key, value)
            plan.given.add(key)
    plan.pipeline = _read_pipeline(check, raw)
    plan.origin = functools.partial(_plan_origin, check, raw)
    ops = {o.name for o in w.ops}
    plan.pins = _read_op_devices(check, raw, "pins", ops, cluster)
    plan.places = _read_op_devices(check, raw, "placement", ops, cluster)
    return plan


#: the JSON field of the plan's lines that begin with a word other than their setting's key
_PLAN_LINES = {"plan": "name", "pin": "pins", "place": "placement"}


def _plan_origin(check: JsonChecker, raw: Mapping[str, Any], word: str) -> Span | None:
    """Where the file gives the plan's line that begins with `word` (`PlanDef.origin`): its
    field of `plan`; the cluster's name for `cluster`; the plan's object for its head when
    the plan has no `name`. None for a line the file does not give (`--memory`'s setting)."""
    if word == "cluster":
        return check.at("cluster.name")
    key = _PLAN_LINES.get(word, word)
    if key in raw:
        return check.at(f"plan.{key}")
    return check.at("plan") if word == "plan" else None


def _read_op_devices(check: JsonChecker, raw: dict[str, Any], key: str, ops: set[str],
                     cluster: Cluster) -> list[tuple[list[str], str]]:
    """The plan's `pins` or `placement`, {op: device}, as (ops, device) groups in the order
    of their devices' first ops."""
    table = {} if (given := raw.get(key)) is None else given
    if not isinstance(table, dict):
        check.error(f"plan.{key}", "must be an object {op: device}", f'"{key}"')
        return []
    by_device: dict[str, list[str]] = {}
    for op_name, dev in table.items():
        if op_name not in ops:
            check.error(f"plan.{key}", f"names unknown op {json.dumps(op_name)}",
                        json.dumps(op_name))
        elif not isinstance(dev, str) or dev not in cluster.device_index:
            check.error(f"plan.{key}", f"{'pins' if key == 'pins' else 'places'} "
                        f"{json.dumps(op_name)} {'to' if key == 'pins' else 'on'} unknown "
                        f"device {json.dumps(dev)}", json.dumps(op_name))
        else:
            by_device.setdefault(dev, []).append(op_name)
    return [(members, dev) for dev, members in by_device.items()]


def _read_pipeline(check: JsonChecker, raw: dict[str, Any]) -> list[tuple[str, str]]:
    """The plan's pipeline settings as spec text, each checked as the language checks a
    setting alone (`_pipeline_problem`); how they fit the graph and the cluster is the
    lowering's to judge."""
    out: list[tuple[str, str]] = []
    for key in PIPELINE_FIELDS:
        value = raw.get(key)
        if value is None:
            continue
        problem = _pipeline_problem(key, value)
        if problem:
            check.error(f"plan.{key}", problem[0], f'"{key}"', *problem[1:])
        else:  # names the language reads bare (`1f1b` is a name there), or numbers
            out.append((key, str(value)))
    given = [k for k in PIPELINE_FIELDS[1:] if raw.get(k) is not None]
    if given and raw.get("objective") in (None, "makespan"):
        check.error(f"plan.{given[0]}", "is a pipeline setting, and the plan's objective is "
                    "makespan", f'"{given[0]}"', 'add "objective": "pipeline"')
    return out


#: the pipeline settings that name one of a few choices
_CHOICES = {"objective": OBJECTIVES, "schedule": schedules.NAMES}


def _pipeline_problem(key: str, value: Any) -> tuple[str, ...]:
    """Why the pipeline setting `key` may not be `value` (its message and hints), or ():
    a known `objective` or `schedule` (E256 in the language), each count a whole number
    from 1 to its `PIPELINE_COUNTS` (E257), `data_parallel` also "auto"."""
    options = _CHOICES.get(key)
    if options is not None:
        if isinstance(value, str) and value in options:
            return ()
        return (f"must be one of {', '.join(options)}, not {json.dumps(value)}",
                *(did_you_mean(value, options) if isinstance(value, str) else ()))
    most = PIPELINE_COUNTS[key]
    if value == "auto" and key == "data_parallel" or (
            isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most):
        return ()
    auto = ' or "auto"' if key == "data_parallel" else ""
    return (f"must be a whole number from 1 to {most}{auto}, not {json.dumps(value)}",)


# ---- export -------------------------------------------------------------------------------


def export_graph(graph: Graph, problem: Problem | None = None) -> dict[str, Any]:
    """The canonical interchange dict of `graph`, with `problem`'s cluster and plan if given."""
    group_name: dict[int, str] = {}
    for members in graph.colocations:
        for i in members:
            group_name[i] = graph.ops[members[0]].name
    ops = [{
        "name": op.name,
        "time_s": op.time_s,
        "time_by_kind_s": dict(op.time_by_kind),
        "flops": op.flops,
        "params_bytes": op.params_bytes,
        "output_bytes": op.output_bytes,
        "temp_bytes": op.temp_bytes,
        "colocation": group_name.get(i),
        **({"backward_of": graph.ops[graph.backward_of[i]].name}
           if i in graph.backward_of else {}),
        **({"type": op.type} if op.type else {}),
    } for i, op in enumerate(graph.ops)]
    edges = [{"src": graph.ops[e.src].name, "dst": graph.ops[e.dst].name, "bytes": e.bytes}
             for e in graph.edges]
    data: dict[str, Any] = {"format": FORMAT, "version": VERSION, "name": graph.name,
                            "ops": ops, "edges": edges}
    if graph.ties:  # only where there are, so that a graph without keeps its form
        data["ties"] = [{"ops": [graph.ops[i].name for i in t.ops], "bytes": t.bytes,
                         **({"weight": t.weight} if t.weight else {})} for t in graph.ties]
    if problem is not None:
        c = problem.cluster
        data["cluster"] = {
            "name": c.name,
            "devices": [{"name": d.name, "memory_bytes": d.memory_bytes, "kind": d.kind,
                         "speed": d.speed, "flop_rate": d.flop_rate} for d in c.devices],
            "links": [{"src": c.devices[lk.src].name, "dst": c.devices[lk.dst].name,
                       "bandwidth_Bps": lk.bandwidth_Bps, "latency_s": lk.latency_s}
                      for lk in c.links],
        }
        data["plan"] = _export_plan(graph, problem)
    return data


def _export_plan(graph: Graph, problem: Problem) -> dict[str, Any]:
    """The canonical `plan` object of `problem` (on `graph`)."""
    devices = problem.cluster.devices
    plan: dict[str, Any] = {"name": problem.name, "memory": problem.memory_model,
                            "contention": problem.contention,
                            "pins": {graph.ops[i].name: devices[d].name
                                     for i, d in problem.pins.items()}}
    if problem.placement:  # only where given, so that other plans keep their form
        plan["placement"] = {graph.ops[i].name: devices[d].name
                             for i, d in sorted(problem.placement.items())}
    if problem.pipeline is not None:
        pipe = problem.pipeline
        plan.update(objective="pipeline", microbatches=pipe.microbatches,
                    schedule=pipe.schedule)
        if pipe.schedule_spec.virtual_stages:
            plan["stages_per_device"] = pipe.stages_per_device
        if pipe.data_parallel != 1:  # only where set, so that other plans keep their form
            plan["data_parallel"] = pipe.data_parallel
        if pipe.microbatch_size != 1:
            plan["microbatch_size"] = pipe.microbatch_size
    return plan


def export_spec(spec: Spec, plan: str | None = None, graph: str | None = None) -> dict[str, Any]:
    """Choose what to export from `spec`: a plan (with its cluster) or a bare graph.

    `plan` or `graph` names it; otherwise the spec's only plan, else its only graph.
    `UsageError` (E925) when the choice is ambiguous, names nothing, or is both, or there
    is nothing to choose."""
    if plan is not None and graph is not None:  # the graph was ignored, even one not there
        raise UsageError(Diagnostic(
            "E925", f"both a plan (`{plan}`) and a graph (`{graph}`) are chosen; choose one",
            None, ("--plan exports a plan with its graph and cluster; --graph a graph alone",)))
    if plan is not None:
        try:
            problem = spec.plan(plan)
        except PlanChoiceError as err:
            raise UsageError(Diagnostic("E925", err.reason, None)) from None
        return export_graph(problem.graph, problem)
    if graph is not None:
        if graph not in spec.graphs:
            raise UsageError(Diagnostic("E925", f"no graph named `{graph}`", None, (
                f"the spec defines: {', '.join(spec.graphs) or 'no graph'}",)))
        return export_graph(spec.graphs[graph])
    if len(spec.plans) == 1:
        problem = next(iter(spec.plans.values()))
        return export_graph(problem.graph, problem)
    if len(spec.graphs) == 1 and not spec.plans:
        return export_graph(next(iter(spec.graphs.values())))
    if not spec.plans and not spec.graphs:  # "several ... one of: none" said it did
        raise UsageError(Diagnostic("E925", "the spec defines no plan and no graph: nothing "
                                    "to export", None, ("export a spec with a `graph`",)))
    raise UsageError(Diagnostic(
        "E925", "the spec defines several plans or graphs; choose one", None,
        ((f"--plan one of: {', '.join(spec.plans) or 'none'}; --graph one of: "
         f"{', '.join(spec.graphs) or 'none'}"),)))


def dumps(data: Mapping[str, Any]) -> str:
    """Interchange JSON text: one op, edge, device or link per line (diff-friendly)."""
    def one(x: Any) -> str:
        return json.dumps(x, ensure_ascii=False)

    lines = ["{"]
    keys = list(data)
    for k, key in enumerate(keys):
        comma = "," if k < len(keys) - 1 else ""
        value = data[key]
        if key in ("ops", "edges") and isinstance(value, list):
            lines.append(f"  {one(key)}: [")
            lines.extend(f"    {one(v)}{',' if j < len(value) - 1 else ''}"
                         for j, v in enumerate(value))
            lines.append(f"  ]{comma}")
        elif key == "cluster" and isinstance(value, dict):
            lines.append(f'  {one(key)}: {{"name": {one(value["name"])},')
            for sub, last in (("devices", False), ("links", True)):
                items = value.get(sub, [])
                lines.append(f"    {one(sub)}: [")
                lines.extend(f"      {one(v)}{',' if j < len(items) - 1 else ''}"
                             for j, v in enumerate(items))
                lines.append("    ]" + ("" if last else ","))
            lines.append(f"  }}{comma}")
        else:
            lines.append(f"  {one(key)}: {one(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"
