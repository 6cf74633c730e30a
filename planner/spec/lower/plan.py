"""A plan's declaration lowered: its graph and cluster, memory model, contention,
pins, and a pipeline's settings and rules.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Literal, TypeVar

from ... import limits, schedules
from ...cost import compute_time
from ...disjoint import Disjoint
from ...errors import DiagnosticSink, Span, did_you_mean
from ...model import (
    CONTENTIONS,
    MEMORY_MODELS,
    OBJECTIVES,
    PIPELINE_COUNTS,
    SCHEDULES,
    Cluster,
    Graph,
    Pipeline,
    Problem,
)
from ...units import (
    parse_number,
)
from .. import ast
from ..ast import PLAN_SETTINGS
from .attrs import LISTED, Attrs, device_hints, not_a_plain_number, value_text
from .locations import Locations
from .resolve import GlobTable, resolve_ops

_T = TypeVar("_T")


def lower_plan(sink: DiagnosticSink, decl: ast.PlanDecl, graphs: dict[str, Graph | None],
               clusters: dict[str, Cluster | None], loc: Locations,
               unrunnable: dict[tuple[str, str], list[tuple[int, int]]],
               globs: GlobTable) -> Problem | None:
    """The problem of `decl` over the graphs and clusters lowered (None when it names
    one that failed, or breaks a rule: reported); `unrunnable` caches, per (graph,
    cluster), the ops that a device of it cannot run (E253, said once per plan)."""
    pname = decl.name.text
    loc.plans[pname] = decl.name.span
    settings = Attrs(sink, [i for i in decl.items if isinstance(i, ast.Attr)], PLAN_SETTINGS,
                     f"plan `{pname}`")
    graph = _lookup(sink, settings, "graph", graphs, decl, clusters)
    cluster = _lookup(sink, settings, "cluster", clusters, decl, graphs)
    memory = _choice(sink, settings, "memory", MEMORY_MODELS, "static")
    contention = _choice(sink, settings, "contention", CONTENTIONS, "link")
    pipeline = _pipeline(sink, settings, pname)
    # a cluster whose devices all failed (E242, E246, E247: said) has none to check against
    if graph is None or cluster is None or not cluster.devices:
        return None
    if pipeline is not None:
        _check_copies(sink, settings, decl, graph, pipeline)
        _check_interleaving(sink, settings, decl, graph, cluster, pipeline)
        _check_pipelines(sink, settings, cluster, pipeline)
    pins, placement, pin_spans, place_spans = _plan_pins(sink, decl, graph, cluster, globs)
    _check_pins(sink, graph, cluster, pins, placement, pin_spans)
    _check_placed_apart(sink, graph, cluster, pins, placement, place_spans)
    _check_runnable(sink, pname, graph, cluster, loc, unrunnable)
    for i in pins:
        loc.pins[(pname, i)] = pin_spans[i]
    if pipeline is not None:
        _pipeline_rules(sink, graph, cluster, pipeline, pins, pin_spans, settings, loc, pname)
    return Problem(pname, graph, cluster, memory, contention,  # type: ignore[arg-type]
                   MappingProxyType(dict(sorted(pins.items()))),
                   MappingProxyType(dict(sorted(placement.items()))), pipeline)


def _plan_pins(sink: DiagnosticSink, decl: ast.PlanDecl, graph: Graph, cluster: Cluster,
               globs: GlobTable
               ) -> tuple[dict[int, int], dict[int, int], dict[int, Span], dict[int, Span]]:
    """A plan's `pin` and `place` lines: (pins, placement, each pinned op's first pin's
    span, each placed op's first `place`'s span); E207 for an unknown device, E250 for an
    op pinned (or placed) on two."""
    op_index = graph.op_index
    dev_index = cluster.device_index
    pins: dict[int, int] = {}
    placement: dict[int, int] = {}
    pin_spans: dict[int, Span] = {}
    place_spans: dict[int, Span] = {}
    for item in decl.items:
        if not isinstance(item, ast.PinDecl):
            continue
        d = dev_index.get(item.device.text)
        if d is None:
            sink.error("E207", f"unknown device `{item.device.text}` in cluster `{cluster.name}`",
                       item.device.span,
                       *device_hints(sink, item.device.text, dev_index, cluster.name))
        ops = resolve_ops(sink, item.ops, op_index, graph.name, globs)
        if d is None:
            continue
        table = pins if item.hard else placement
        for i in ops:
            if i in table and table[i] != d:
                verb = "pinned" if item.hard else "placed"
                sink.error("E250", f"op `{graph.ops[i].name}` is {verb} on both "
                           f"`{cluster.devices[table[i]].name}` and `{item.device.text}`",
                           item.span, f"an op is {verb} on one device; keep one of the two")
            table[i] = d
            (pin_spans if item.hard else place_spans).setdefault(i, item.span)
    return pins, placement, pin_spans, place_spans


def _check_pins(sink: DiagnosticSink, graph: Graph, cluster: Cluster, pins: dict[int, int],
                placement: dict[int, int], pin_spans: dict[int, Span]) -> None:
    """E251 for a placement that breaks a pin, E252 for colocated ops pinned apart."""
    for i, d in placement.items():
        if i in pins and pins[i] != d:
            sink.error("E251", f"op `{graph.ops[i].name}` is pinned to "
                       f"`{cluster.devices[pins[i]].name}` but placed on "
                       f"`{cluster.devices[d].name}`", pin_spans[i],
                       "a given placement must respect the pins; change the `place`")
    for group in graph.colocations:
        pinned = {pins[i] for i in group if i in pins}
        if len(pinned) > 1:
            names = ", ".join(f"`{graph.ops[i].name}` to `{cluster.devices[pins[i]].name}`"
                              for i in group if i in pins)
            first_pinned = next(i for i in group if i in pins)
            sink.error("E252", f"colocated ops are pinned apart: {names}",
                       pin_spans[first_pinned], "colocated ops must share one device")


def _check_placed_apart(sink: DiagnosticSink, graph: Graph, cluster: Cluster,
                        pins: dict[int, int], placement: dict[int, int],
                        place_spans: dict[int, Span]) -> None:
    """E252 for a colocation group that its `place` lines split across devices, or put
    off its pinned device, at the first `place` that leaves the group's device (the pinned
    one, else its first placed op's); pins apart (E252) and a `place` against its own op's
    pin (E251) are `_check_pins`'s."""
    devs = cluster.devices
    for group in graph.colocations:
        pinned = {pins[i] for i in group if i in pins}
        placed = [i for i in group if i in placement and pins.get(i, placement[i]) == placement[i]]
        if not placed or len(pinned) > 1:
            continue
        home = next(iter(pinned)) if pinned else placement[placed[0]]
        odd = next((i for i in placed if placement[i] != home), None)
        if odd is None:
            continue
        where = {i: placement.get(i, pins.get(i)) for i in group}
        names = ", ".join(f"`{graph.ops[i].name}` on `{devs[d].name}`"
                          for i, d in where.items() if d is not None)
        sink.error("E252", f"colocated ops are placed apart: {names}", place_spans[odd],
                   f"colocated ops must share one device: place `{graph.ops[odd].name}` on "
                   f"`{devs[home].name}` too, or take it out of the `colocate`")


def _check_runnable(sink: DiagnosticSink, pname: str, graph: Graph, cluster: Cluster,
                    loc: Locations, unrunnable: dict[tuple[str, str], list[tuple[int, int]]]
                    ) -> None:
    """E253 for each op that cannot run on a device of the cluster (found once per graph
    and cluster, in `unrunnable`, and said once per plan)."""
    key = (graph.name, cluster.name)  # the same for every plan of this graph and cluster
    if key not in unrunnable:
        unrunnable[key] = _unrunnable(graph, cluster)
    for i, d in unrunnable[key]:
        op, dev = graph.ops[i], cluster.devices[d]
        kind = f"kind `{dev.kind}`" if dev.kind else "no kind"
        if op.flops is not None and not op.time_by_kind:
            why = f"has only `flops` and device `{dev.name}` has no `flops` rate"
            hint = f"give it `time`, or give device `{dev.name}` a `flops` rate"
        elif op.flops is not None:  # (was "only `flops`" beside its `time[cpu]`)
            why = (f"has `flops` and no time for device `{dev.name}` ({kind}), which has no "
                   "`flops` rate")
            hint = (f"give it `time`{f' or `time[{dev.kind}]`' if dev.kind else ''}, or give "
                    f"device `{dev.name}` a `flops` rate")
        else:
            why = f"has no `time` for device `{dev.name}` ({kind})"
            hint = (f"give it `time[{dev.kind}]`, `time` or `flops`" if dev.kind
                    else "give it `time` or `flops`")
        sink.error("E253", f"op `{op.name}` cannot run in plan `{pname}`: it {why}",
                   loc.ops[(graph.name, op.name)], hint)


def _check_copies(sink: DiagnosticSink, settings: Attrs, decl: ast.PlanDecl, graph: Graph,
                  pipeline: Pipeline) -> None:
    """E016 when simulating the pipeline would copy more ops and edges than the
    `pipeline_copies` limit: its simulation (`pipeline.schedule`) copies the graph once
    per micro-batch, and every command that plans or reports the pipeline runs it."""
    lim = limits.active().pipeline_copies
    n_ops, n_edges = len(graph.ops), len(graph.edges)
    copies = limits.pipeline_copies(pipeline.microbatches, n_ops, n_edges)
    if copies <= lim:
        return
    attr = settings.values.get("microbatches") or settings.values.get("objective")
    span = attr.span if attr is not None else decl.name.span
    most = lim // (n_ops + n_edges)
    gb = copies * limits.BYTES_PER_COPIED_ITEM / 1e9
    sink.error("E016", f"plan `{decl.name.text}` would simulate {pipeline.microbatches} "
               f"copies of graph `{graph.name}` ({n_ops:_} ops, {n_edges:_} edges): "
               f"{copies:_} ops and edges, about {gb:.3g} GB, more than the "
               f"`pipeline_copies` limit ({lim:_})", span,
               (f"at most {most} micro-batches fit the limit for this graph"
                if most >= 1 else "no number of micro-batches fits the limit for this graph"),
               limits.raise_hint("pipeline_copies", copies,
                                 lead="or, with the memory for it, raise the limit with"))


def _check_interleaving(sink: DiagnosticSink, settings: Attrs, decl: ast.PlanDecl,
                        graph: Graph, cluster: Cluster, pipeline: Pipeline) -> None:
    """W258 when no split can interleave (`interleave_blocked`): every plan runs as
    `1f1b` (`pipeline.schedule`)."""
    why = interleave_blocked(graph, cluster, pipeline)
    if why is None:
        return
    per, schedule = pipeline.stages_per_device, pipeline.schedule_spec
    attr = settings.values.get("stages_per_device") or settings.values.get("schedule")
    most = (len(graph.ops) - len(graph.backward_of)) // 2
    sink.warning("W258", f"plan `{decl.name.text}` cannot interleave: `stages_per_device "
                 f"{per}` needs {2 * per} stages ({per} on each of at least two devices) "
                 f"and {why}; every plan of it runs as `{schedule.fallback}`",
                 attr.span if attr is not None else decl.name.span,
                 f"write `schedule {schedule.fallback}`"
                 + (f", or `stages_per_device {most}` or fewer"
                    if most >= 2 and len(cluster.devices) >= 2 else ""))


def interleave_blocked(graph: Graph, cluster: Cluster, pipeline: Pipeline) -> str | None:
    """Why no split of `graph` can interleave, or None where one can (or where E259 says
    more: fewer units than K): `stages_per_device K` needs K stages on each of at least two
    devices, so 2K pipeline units, and a unit holds a forward op (one not in
    `backward_of`). The language's W258 and the builder's (`planner.api.advice`)."""
    per = pipeline.stages_per_device
    if not pipeline.schedule_spec.virtual_stages or per < 2:
        return None
    forward = len(graph.ops) - len(graph.backward_of)
    if (forward >= 2 * per and len(cluster.devices) >= 2) or forward < per:
        return None
    return (f"cluster `{cluster.name}` has one device" if len(cluster.devices) < 2 else
            f"graph `{graph.name}` has at most {forward} pipeline unit(s) (one per forward op)")


def backward_first(graph: Graph) -> list[tuple[int, int]]:
    """(backward op, its forward op) for each backward op that no path of edges leads to
    from its forward op, whatever order the ops are declared in. A backward op before its
    forward op in a topological order has no such path and one with an edge from it has;
    the pairs left are judged exactly by `_unreached`."""
    if not graph.backward_of:
        return []
    try:
        order = graph.topological_order
    except ValueError:  # a cycle (E231, reported): no order to judge by
        return []
    position = [0] * len(graph.ops)
    for k, i in enumerate(order):
        position[i] = k
    back = graph.backward_of
    read = {e.dst for e in graph.edges if back.get(e.dst, -1) == e.src}  # reads its forward op
    open_ = [(b, f) for b, f in back.items() if position[b] > position[f] and b not in read]
    bad = _unreached(graph, position, open_)
    return [(b, f) for b, f in back.items()
            if position[b] < position[f] or (b, f) in bad]


def _unreached(graph: Graph, position: Sequence[int], pairs: list[tuple[int, int]],
               batch: int = 4096) -> set[tuple[int, int]]:
    """The (target, source) pairs with no path from source to target: per batch of pairs,
    one pass in topological order between the batch's first source and last target, each
    op carrying a bit per pair whose source reaches it (O(edges) a batch; none for the
    graphs `generate --training` writes, whose backward ops all read their forward op)."""
    out: set[tuple[int, int]] = set()
    order, succ, edges = graph.topological_order, graph.successors, graph.edges
    pairs = sorted(pairs, key=lambda p: position[p[1]])
    for k in range(0, len(pairs), batch):
        chunk = pairs[k:k + batch]
        start: dict[int, int] = {}
        for j, (_, f) in enumerate(chunk):
            start[f] = start.get(f, 0) | 1 << j
        targets = {b for b, _ in chunk}
        last = max(position[b] for b in targets)
        reach: dict[int, int] = {}
        seen: dict[int, int] = {}
        for i in order[position[chunk[0][1]]:last + 1]:
            bits = reach.pop(i, 0) | start.get(i, 0)
            if i in targets:
                seen[i] = bits
            if bits:
                for e in succ[i]:
                    s = edges[e].dst
                    if position[s] <= last:
                        reach[s] = reach.get(s, 0) | bits
        out.update(p for j, p in enumerate(chunk) if not seen.get(p[0], 0) >> j & 1)
    return out


def pipeline_units(graph: Graph) -> list[int]:
    """Per op, the smallest op of its pipeline unit (`planner.pipeline.units`: a colocation
    group or a lone op, merged with the backward ops of its forward ops)."""
    units: Disjoint[int] = Disjoint(range(len(graph.ops)))
    for group in graph.colocations:
        first = min(group)
        for i in group:
            units.union(first, i)
    for b, f in graph.backward_of.items():
        units.union(b, f)
    return [units.find(i) for i in range(len(graph.ops))]


def units_pinned_apart(graph: Graph, pins: Mapping[int, int]) -> list[tuple[int, int]]:
    """(op, op) pairs of one pipeline unit pinned to different devices, one per unit, the
    first pinned op of the unit and the first pinned elsewhere; none within one colocation
    group (E252 reports those)."""
    if not pins:
        return []
    unit = pipeline_units(graph)
    group = graph.colocation_of
    first: dict[int, int] = {}
    out: dict[int, tuple[int, int]] = {}
    for i in sorted(pins):
        a = first.setdefault(unit[i], i)
        if pins[a] != pins[i] and unit[i] not in out and (group[a] < 0 or group[a] != group[i]):
            out[unit[i]] = (a, i)
    return list(out.values())


def _pipeline_rules(sink: DiagnosticSink, graph: Graph, cluster: Cluster, pipeline: Pipeline,
                    pins: Mapping[int, int], pin_spans: Mapping[int, Span], settings: Attrs,
                    loc: Locations, pname: str) -> None:
    """What a pipeline of `graph` cannot run: a backward op before its forward op (E235),
    pins that split a pipeline unit between devices (E258), and no unit at all or, under
    `interleaved`, more stages per device than the graph has units (E259)."""
    ops, devs = graph.ops, cluster.devices
    for b, f in backward_first(graph):
        sink.error("E235", f"backward op `{ops[b].name}` comes before its forward op "
                   f"`{ops[f].name}` in graph `{graph.name}`: no path of edges leads from "
                   f"`{ops[f].name}` to it, so nothing makes it wait for the forward pass, "
                   f"which pipeline plan `{pname}` needs", loc.ops.get((graph.name, ops[b].name)),
                   f"a backward op consumes what its forward op computed: add an edge from "
                   f"`{ops[f].name}` (or an op after it) to `{ops[b].name}`, and none from "
                   f"`{ops[b].name}` back to the forward pass")
    for a, i in units_pinned_apart(graph, pins):
        sink.error("E258", f"op `{ops[i].name}` is pinned to `{devs[pins[i]].name}` and op "
                   f"`{ops[a].name}` to `{devs[pins[a]].name}`, but they are one pipeline "
                   f"unit of plan `{pname}` (a forward op, its `backward_of` ops and their "
                   "colocation groups run on one stage)", pin_spans[i],
                   "pin them to one device, or plan `objective makespan`",
                   notes=((f"`{ops[a].name}` pinned here", pin_spans[a]),))
    if not ops:  # no unit for a stage, whatever the schedule (pipedp would find no split)
        sink.error("E259", f"graph `{graph.name}` has no ops: pipeline plan `{pname}` has no "
                   "unit to put on a stage", loc.plans.get(pname),
                   f"add ops to graph `{graph.name}`, or remove `objective pipeline`")
    elif pipeline.schedule_spec.virtual_stages:
        count = len(set(pipeline_units(graph)))
        if count < pipeline.stages_per_device:
            attr = settings.values.get("stages_per_device")
            sink.error("E259", f"`stages_per_device {pipeline.stages_per_device}` asks each "
                       f"device for more stages than graph `{graph.name}` has pipeline units "
                       f"({count}): a stage holds one unit at least",
                       attr.span if attr is not None else loc.plans.get(pname),
                       _fewer_stages_hint(count, pipeline))


def _fewer_stages_hint(count: int, pipeline: Pipeline) -> str:
    """E259's hint: the `stages_per_device` values that interleave `count` units (K on each
    of two devices at least: 2K stages; before, values up to `count` that W258 then said
    cannot interleave), else the schedule's fallback."""
    most = count // 2
    if most > 2:
        return f"set `stages_per_device` from 2 to {most}"
    if most == 2:
        return "set `stages_per_device 2`"
    return (f"{count} unit(s) cannot interleave (2 stages on each of two devices need 4): "
            f"use `schedule {pipeline.schedule_spec.fallback}`")


#: the pipeline settings, which need `objective pipeline`
_PIPELINE_KEYS = ("microbatches", "schedule", "stages_per_device", "data_parallel",
                  "microbatch_size")


def _pipeline(sink: DiagnosticSink, settings: Attrs, pname: str) -> Pipeline | None:
    """The plan's pipeline (`objective pipeline` and its settings), or None (`objective
    makespan`, the default). Reports unknown names (E256) and counts that are not whole
    numbers in range (E257)."""
    objective = _named_choice(sink, settings, "objective", OBJECTIVES, "makespan")
    if objective is None:  # unknown (reported): its settings are not judged by a guess
        return None
    if objective != "pipeline":
        for key in _PIPELINE_KEYS:
            if key in settings.values:
                sink.error("E256", f"`{key}` is a pipeline setting, and plan `{pname}` has "
                           f"`objective {objective}`", settings.values[key].span,
                           "add `objective pipeline` to plan a pipeline of micro-batches")
        return None
    schedule = (_named_choice(sink, settings, "schedule", SCHEDULES, schedules.DEFAULT)
                or schedules.DEFAULT)
    rules = schedules.of(schedule)
    microbatches = _count(sink, settings, "microbatches") or 1
    stated = _count(sink, settings, "stages_per_device")
    per_device = stated or 1
    # a value out of range or not a number is reported once, by `_count` (`1000` got a
    # second E257 asking for `stages_per_device 2`)
    reported = stated is None and "stages_per_device" in settings.values
    if rules.virtual_stages and per_device < 2 and not reported:
        span = settings.values.get("stages_per_device", settings.values["schedule"]).span
        sink.error("E257", f"`schedule {schedule}` runs several stages per device",
                   span, "add `stages_per_device 2` (or more); with one, write "
                   f"`schedule {rules.fallback}`")
    elif not rules.virtual_stages and "stages_per_device" in settings.values:
        virtual = " or ".join(f"`schedule {s.name}`" for s in schedules.TABLE
                              if s.virtual_stages)
        sink.error("E256", f"`stages_per_device` is for {virtual}, not "
                   f"`{schedule}`", settings.values["stages_per_device"].span,
                   f"write {virtual}, or remove `stages_per_device`")
    replicas = _data_parallel(sink, settings, rules)
    size = _count(sink, settings, "microbatch_size") or 1
    return Pipeline(microbatches, schedule, per_device, replicas, size)


def _data_parallel(sink: DiagnosticSink, settings: Attrs,
                   schedule: schedules.Schedule) -> int | Literal["auto"]:
    """Setting `data_parallel`: `auto` or a whole number from 1 to its `PIPELINE_COUNTS`
    (E257 otherwise, and E256 under virtual stages, `schedule interleaved`, unless 1); 1 when
    absent or wrong (reported). `_check_pipelines` checks N against the cluster's devices."""
    attr = settings.values.get("data_parallel")
    if attr is None:
        return 1
    value = attr.value
    if value.kind == "name" and value.name is not None and value.name.text == "auto":
        out: int | Literal["auto"] = "auto"
    elif value.kind == "quantity":
        sink.error("E214", "`data_parallel` expects `auto` or a plain number (no unit)",
                   value.span, "for example `data_parallel 2`, or `data_parallel auto`")
        return 1
    else:
        most = PIPELINE_COUNTS["data_parallel"]
        number = parse_number(value.number) if value.kind == "number" else math.nan
        if not (math.isfinite(number) and number == int(number) and 1 <= number <= most):
            written = value.name.text if value.name is not None else value_text(value, 40)
            sink.error("E257", "`data_parallel` must be `auto` or a whole number from 1 to "
                       f"{most}, not `{written}`", value.span,
                       *(did_you_mean(value.name.text, ("auto",)) if value.name else ()),
                       "`data_parallel auto` lets the planner choose each stage's replicas; "
                       "`data_parallel 2` runs two identical pipelines")
            return 1
        out = int(number)
    if out != 1 and schedule.virtual_stages:
        does = "may replicate" if out == "auto" else "replicates"
        sink.error("E256", f"`data_parallel {out}` {does} stages, and replicated stages "
                   f"run under `schedule 1f1b` or `gpipe`, not `{schedule.name}`", value.span,
                   "write `schedule 1f1b` (or `gpipe`), or remove `data_parallel`")
        return 1
    return out


def _check_pipelines(sink: DiagnosticSink, settings: Attrs, cluster: Cluster,
                     pipeline: Pipeline) -> None:
    """E257 when `data_parallel N` asks for more identical pipelines than the cluster has
    devices (each pipeline needs one device at least); W257 when fewer micro-batches than
    pipelines leave some idle (holding the model, joining the all-reduce, running none)."""
    n, have = pipeline.data_parallel, len(cluster.devices)
    if n == "auto":
        return
    if n > pipeline.microbatches and n <= have:
        sink.warning("W257", f"`data_parallel {n}` runs {n} pipelines, and "
                     f"`microbatches {pipeline.microbatches}` feeds {pipeline.microbatches} of "
                     f"them: {n - pipeline.microbatches} idle, holding the model and joining "
                     "the all-reduce", settings.values["data_parallel"].value.span,
                     f"set `microbatches` to {n} or more (a multiple of {n} keeps the "
                     f"pipelines even), or `data_parallel {pipeline.microbatches}`")
    if n <= have:
        return
    sink.error("E257", f"{n} pipelines need at least {n} devices; cluster `{cluster.name}` "
               f"has {have}", settings.values["data_parallel"].value.span,
               f"set `data_parallel` from 1 to {have}, or `data_parallel auto`"
               if have > 1 else "a one-device cluster runs one pipeline: remove "
               "`data_parallel`")


def _named_choice(sink: DiagnosticSink, settings: Attrs, key: str, options: Sequence[str],
                  default: str) -> str | None:
    """Setting `key`, one of `options`; `default` when absent, None when unknown (E256)."""
    if key not in settings.values:
        return default
    value = settings.name(key)
    if value not in options:
        if value is not None:
            sink.error("E256", f"unknown {key} `{value}`", settings.values[key].value.span,
                       *did_you_mean(value, options), "one of: " + " | ".join(options))
        return None
    return value


def _count(sink: DiagnosticSink, settings: Attrs, key: str) -> int | None:
    """Setting `key` as a whole number from 1 to its `PIPELINE_COUNTS` (E257 otherwise), or
    None."""
    most = PIPELINE_COUNTS[key]
    attr = settings.values.get(key)
    if attr is None:
        return None
    if attr.value.kind != "number":
        not_a_plain_number(sink, attr, f"for example `{key} 8`")
        return None
    value = parse_number(attr.value.number)
    if not (math.isfinite(value) and value == int(value) and 1 <= value <= most):
        sink.error("E257", f"`{key}` must be a whole number from 1 to {most}, not "
                   f"`{attr.value.number}`", attr.value.span, f"for example `{key} 8`")
        return None
    return int(value)


def _unrunnable(graph: Graph, cluster: Cluster) -> list[tuple[int, int]]:
    """(op, first device it cannot run on) for each op with a compute cost that some
    device cannot run (E253); an op with a plain `time` runs everywhere."""
    out = []
    for i, op in enumerate(graph.ops):
        if op.time_s is not None or (op.flops is None and not op.time_by_kind):
            continue
        bad = next((d for d, dev in enumerate(cluster.devices)
                    if compute_time(op, dev) == float("inf")), None)
        if bad is not None:
            out.append((i, bad))
    return out


def _lookup(sink: DiagnosticSink, settings: Attrs, key: str, table: Mapping[str, _T | None],
            decl: ast.PlanDecl, other: Mapping[str, object]) -> _T | None:
    """The graph or cluster (`key`) the plan names in `table`; E254 when it names none,
    E208 when that name is not in `table` (`other` holds the other kind's names: a cluster
    written after `graph` is said to be one)."""
    name = settings.name(key)
    if name is None:
        if key not in settings.values:
            sink.error("E254", f"plan `{decl.name.text}` needs a `{key}`", decl.name.span,
                       f"add `{key} NAME`" + (f"; defined: {', '.join(table)}" if table else ""))
        return None
    if name not in table:
        kind = "cluster" if key == "graph" else "graph"
        why = f": `{name}` is a {kind}" if name in other else ""
        sink.error("E208", f"unknown {key} `{name}`{why}", settings.values[key].value.span,
                   *(did_you_mean(name, table) or (_defined(key, table),)))
        return None
    return table[name]


def _defined(key: str, table: Mapping[str, object]) -> str:
    """E208's hint when no name is close: the graphs (or clusters) the load defines."""
    if not table:
        return (f"this file and its imports define no {key}: define one with `{key} NAME "
                "{ ... }`, or import the file that does")
    if len(table) == 1:
        return f"the one {key} defined is `{next(iter(table))}`"
    shown = ", ".join(f"`{n}`" for n in itertools.islice(table, LISTED))
    more = f" and {len(table) - LISTED} more" if len(table) > LISTED else ""
    return f"{key}s defined: {shown}{more}"


def _choice(sink: DiagnosticSink, settings: Attrs, key: str, options: Sequence[str],
            default: str) -> str:
    value = settings.name(key)
    if value is None:
        return default
    if value not in options:
        sink.error("E255", f"unknown {key} model `{value}`", settings.values[key].value.span,
                   *did_you_mean(value, options), "one of: " + " | ".join(options))
        return default
    return value
