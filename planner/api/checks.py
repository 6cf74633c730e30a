"""The language's checks, on a `Problem` built in Python.

`lower` validates a spec while it reads it; a `Problem` made by `ProblemBuilder` or by the
`planner.model` constructors never went through it. `problem_diagnostics` finds the same
mistakes on the model, with the same codes (a negative quantity is E105 as `-1 ms` is in a
spec, a cluster with a missing link E244, an op that cannot run E253, ...). Each message
names the model path (`graph.ops[3].time_s`); `locate` turns a path into a `Span` (the
builder's call that made it), else every diagnostic points at the user's call into planner.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from os import PathLike
from typing import Any

from .. import limits, schedules
from ..cost import compute_time
from ..errors import Diagnostic, DiagnosticSink, Span, call_site, site_span
from ..model import (
    CONTENTIONS,
    MEMORY_MODELS,
    PIPELINE_COUNTS,
    SCHEDULES,
    Device,
    Graph,
    Op,
    Pipeline,
    Problem,
    Spec,
)
from ..spec.lower import backward_first, pipeline_units, units_pinned_apart
from ..spec.names import name_rule
from ..units import RANGES, SPEED_RANGE, format_bytes, range_side

#: model path (`graph.ops[3].time_s`) -> where it was made, or None
Locate = Callable[[str], Span | None]


def check_problem(problem: Problem, locate: Locate | None = None,
                  warned: Sequence[Diagnostic] = ()) -> None:
    """Raise `SpecError` with every diagnostic of `problem` (checked once per problem), and
    the warnings `warned` found before (the builder's) among them;
    `TypeError` for anything that is no `Problem` (a `Spec`, a path, a `Result`), which
    raised `AttributeError: ... no attribute '__dict__'` from here before."""
    if not isinstance(problem, Problem):
        raise TypeError(f"`problem` must be a planner.Problem, not {_what(problem)}")
    if problem.__dict__.get(_CHECKED):  # a frozen model: its verdict cannot change
        return
    if locate is None:
        here = site_span(call_site())

        def locate(path: str) -> Span | None:  # one place: the user's call into planner
            return here

    sink = DiagnosticSink(list(warned))
    for d in problem_diagnostics(problem, locate):
        sink.error(d.code, d.message, d.span, *d.hints)
    sink.raise_if_errors()
    problem.__dict__[_CHECKED] = True


_CHECKED = "api.checked"


def _what(value: object) -> str:
    """`value`'s type, and how to get a `Problem` from it where there is a way."""
    kind = type(value).__name__
    if isinstance(value, Spec):
        names = ", ".join(repr(n) for n in value.plans) or "none"
        return f"a {kind}: pick one of its plans with .plan(NAME) (its plans: {names})"
    if isinstance(value, (str, PathLike)):
        return f"{kind} {value!r}: load a spec first, planner.load(PATH).plan(NAME)"
    if isinstance(getattr(value, "problem", None), Problem):
        return f"a {kind}: its problem is .problem"
    return kind


def problem_diagnostics(problem: Problem, locate: Locate) -> list[Diagnostic]:
    """Every mistake of `problem` a spec could not contain (see the module docstring)."""
    out: list[Diagnostic] = []

    def err(code: str, path: str, message: str, *hints: str) -> None:
        out.append(Diagnostic(code, f"`{path}`: {message}", locate(path),
                              tuple(h for h in hints if h)))

    _names(problem, err)
    _ops(problem, err)
    _graph(problem, err)
    _cluster(problem, err)
    _plan(problem, err)
    return out


Err = Callable[..., None]


#: a model field's unit -> its dimension, whose range a spec may give it (`units.range_side`)
_DIM_OF_UNIT = {"seconds": "time", "FLOP": "work", "bytes": "size", "FLOP/s": "rate",
                "B/s": "bandwidth", "": "speed"}


def _quantity(err: Err, path: str, what: str, value: Any, unit: str, *, positive: bool = False,
              optional: bool = True) -> None:
    if value is None and optional:
        return
    a_number = f"a number of {unit}" if unit else "a number"
    dim = _DIM_OF_UNIT[unit]
    lo, hi = SPEED_RANGE if dim == "speed" else RANGES[dim]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        err("E290", path, f"{what} must be {a_number}, not {value!r}")
    elif math.isnan(value):
        err("E290", path, f"{what} is NaN", f"give {a_number}")
    elif math.isinf(value):
        err("E223", path, f"{what} is infinite", f"give {a_number}")
    elif positive and value <= 0:
        err("E241", path, f"{what} must be positive, not {value!r}")
    elif value < 0:
        err("E105", path, f"{what} is negative ({value!r} {unit})".replace(" )", ")"),
            "quantities cannot be negative")
    elif (side := range_side(value, dim) if value else None) == "above":
        # the language's ranges: every later stage stays exact and finite
        err("E223", path, f"{what} ({_apart(value, hi)} {unit}) is above the valid range (at "
            f"most {hi:g} {unit})".replace(" )", ")"))
    elif side == "below":
        err("E260", path, f"{what} ({_apart(value, lo)} {unit}) is below the valid range (at "
            f"least {lo:g} {unit})".replace(" )", ")"), "0 is allowed where the quantity may "
            "be 0" if not positive else "")


def _apart(value: float, bound: float) -> str:
    """`value` with the digits that tell it from `bound` (before: 1000001 s read `1e+06`,
    "above ... at most 1e+06")."""
    return next((f"{value:.{p}g}" for p in range(6, 17) if f"{value:.{p}g}" != f"{bound:.{p}g}"),
                repr(value))


def _names(problem: Problem, err: Err) -> None:
    """The rules a quoted name of a spec keeps (E261, E264, E262: no control, bidi or
    invisible character, NFKC, one script), on every name: a name that breaks one could
    fake or reorder a line that planner prints, and no spec could hold it."""
    graph, cluster = problem.graph, problem.cluster
    named: list[tuple[str, object]] = [
        ("name", problem.name), ("graph.name", graph.name), ("cluster.name", cluster.name)]
    for i, op in enumerate(graph.ops):
        named += [(f"graph.ops[{i}].name", op.name),
                  *((f"graph.ops[{i}].time_by_kind", k) for k in op.time_by_kind)]
    for d, dev in enumerate(cluster.devices):
        named += [(f"cluster.devices[{d}].name", dev.name),
                  (f"cluster.devices[{d}].kind", dev.kind)]
    for path, text in named:
        found = name_rule(text) if isinstance(text, str) else None
        if found is not None:
            err(found[0], path, found[1], *found[2])


def _ops(problem: Problem, err: Err) -> None:
    seen: dict[str, int] = {}
    for i, op in enumerate(problem.graph.ops):
        at = f"graph.ops[{i}]"
        if op.name in seen:
            err("E202", f"{at}.name", f"op `{op.name}` is defined twice (first: "
                f"graph.ops[{seen[op.name]}])")
        seen.setdefault(op.name, i)
        _quantity(err, f"{at}.time_s", f"the time of op `{op.name}`", op.time_s, "seconds")
        _quantity(err, f"{at}.flops", f"the FLOP of op `{op.name}`", op.flops, "FLOP")
        for kind, t in op.time_by_kind.items():
            _quantity(err, f"{at}.time_by_kind[{kind!r}]",
                      f"the time of op `{op.name}` on `{kind}`", t, "seconds", optional=False)
        for key in ("params_bytes", "output_bytes", "temp_bytes"):
            _quantity(err, f"{at}.{key}", f"`{key}` of op `{op.name}`", getattr(op, key),
                      "bytes", optional=False)
        if op.time_s is None and op.flops is None and not op.time_by_kind:
            err("E232", at, f"op `{op.name}` has neither a time nor FLOP",
                "give its compute cost, e.g. time=\"1.5 ms\" or flops=\"2.4 GFLOP\"")


def _graph(problem: Problem, err: Err) -> None:
    graph = problem.graph
    for k, e in enumerate(graph.edges):
        if e.src == e.dst:
            err("E230", f"graph.edges[{k}]", f"edge from `{graph.ops[e.src].name}` to itself",
                "an op cannot consume its own output")
        _quantity(err, f"graph.edges[{k}].bytes", "the bytes of an edge", e.bytes, "bytes",
                  optional=False)
    _groups_and_ties(graph, err)
    if any(e.src == e.dst for e in graph.edges):
        return
    try:
        _ = graph.topological_order  # raises on a cycle
    except ValueError:
        cycle = _cycle(len(graph.ops), ((e.src, e.dst) for e in graph.edges))
        names = " -> ".join(graph.ops[i].name for i in cycle)
        first = next(k for k, e in enumerate(graph.edges)
                     if (e.src, e.dst) == (cycle[0], cycle[1]))
        err("E231", f"graph.edges[{first}]", f"graph `{graph.name}` has a cycle: {names}",
            "a graph must be acyclic; remove one of these edges")


def _groups_and_ties(graph: Graph, err: Err) -> None:
    """Colocation groups that share an op (E239: the language merges `colocate a, b` and
    `colocate b, c` into one group; overlapping groups left a heuristic splitting them),
    ties of one op (E236), of no bytes or of more than an op's `params`, all its ties
    together (E237), as the language checks them."""
    first: dict[int, int] = {}
    for k, group in enumerate(graph.colocations):
        for i in group:
            if first.setdefault(i, k) != k:
                err("E239", f"graph.colocations[{k}]", f"op `{graph.ops[i].name}` is in "
                    f"colocation groups {first[i]} and {k}", "merge groups that share an op "
                    "into one (a spec's `colocate` statements are merged so)")
                break
    tied: dict[int, int] = {}
    for k, tie in enumerate(graph.ties):
        if len(set(tie.ops)) < 2:
            err("E236", f"graph.ties[{k}]", "a tie needs two ops or more",
                "list the ops that share the weight")
        elif tie.bytes <= 0:
            err("E237", f"graph.ties[{k}].bytes", "the tied ops share no bytes",
                "give the shared weight's size")
        for i in set(tie.ops):
            tied[i] = tied.get(i, 0) + max(tie.bytes, 0)
    for i, total in tied.items():
        if total > graph.ops[i].params_bytes:
            err("E237", f"graph.ops[{i}].params_bytes", f"`{graph.ops[i].name}` is tied to "
                f"{format_bytes(total)} but holds `params` "
                f"{format_bytes(graph.ops[i].params_bytes)}",
                "each tied op keeps a copy of the weight: its `params` include it")


def _cycle(n: int, edges: Iterable[tuple[int, int]]) -> list[int]:
    """A cycle `a -> ... -> a` of a graph known to have one (iterative depth-first)."""
    succ: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        succ[a].append(b)
    state = [0] * n  # 0 new, 1 on the path, 2 done
    for root in range(n):
        if state[root]:
            continue
        path, stack = [root], [iter(succ[root])]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(succ[nxt]))
    raise ValueError("no cycle")  # pragma: no cover - called only when there is one


def _cluster(problem: Problem, err: Err) -> None:
    cluster = problem.cluster
    if not cluster.devices:
        err("E247", "cluster.devices", f"cluster `{cluster.name}` has no devices",
            "add one, for example `b.device(\"gpu0\", memory=\"16 GiB\")`")
    seen: dict[str, int] = {}
    for d, dev in enumerate(cluster.devices):
        at = f"cluster.devices[{d}]"
        if dev.name in seen:
            err("E205", f"{at}.name", f"device `{dev.name}` is defined twice (first: "
                f"cluster.devices[{seen[dev.name]}])")
        seen.setdefault(dev.name, d)
        _quantity(err, f"{at}.memory_bytes", f"the memory of device `{dev.name}`",
                  dev.memory_bytes, "bytes", optional=False)
        _quantity(err, f"{at}.speed", f"the speed of device `{dev.name}`", dev.speed, "",
                  positive=True, optional=False)
        _quantity(err, f"{at}.flop_rate", f"the FLOP rate of device `{dev.name}`",
                  dev.flop_rate, "FLOP/s", positive=True)
    pairs = set()
    for k, lk in enumerate(cluster.links):
        _quantity(err, f"cluster.links[{k}].bandwidth_Bps", "the bandwidth of a link",
                  lk.bandwidth_Bps, "B/s", positive=True, optional=False)
        _quantity(err, f"cluster.links[{k}].latency_s", "the latency of a link",
                  lk.latency_s, "seconds", optional=False)
        pairs.add((lk.src, lk.dst))
    n = len(cluster.devices)
    missing = [(a, b) for a in range(n) for b in range(n) if a != b and (a, b) not in pairs]
    if missing:
        devs = cluster.devices
        shown = ", ".join(f"{devs[a].name} -> {devs[b].name}" for a, b in missing[:4])
        more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
        err("E244", f"cluster.devices[{missing[0][1]}]",
            f"cluster `{cluster.name}` has devices with no link between them: {shown}{more}",
            "a transfer between them would be impossible; add a link")


#: the pipeline settings in the order `pipeline(...)` takes them and specs write them: the
#: mistakes of several, all at one place (the builder's `pipeline` call), come in this
#: order, as a spec's come by line (before, E256 of `data_parallel` came before E259 of
#: `stages_per_device`: their spec, the other way round)
_SETTINGS = ("microbatches", "schedule", "stages_per_device", "data_parallel",
             "microbatch_size")


def _setting_order(path: str) -> int:
    """Where a mistake at model path `path` comes among a pipeline's: the graph's first (a
    spec declares it before the plan), then the settings in `_SETTINGS` order, then pins."""
    if path.startswith("graph."):
        return -1
    field = path.removeprefix("pipeline.")
    return _SETTINGS.index(field) if field in _SETTINGS else len(_SETTINGS)


def _pipeline(problem: Problem, err: Err) -> None:
    """The pipeline settings and backward ops, as the language checks them (E256, E257,
    E259 for a graph of no ops, E234; E235, E258, E259 in `_pipeline_units`), the
    pipeline's in the order of `_setting_order`."""
    pipe, graph = problem.pipeline, problem.graph
    if pipe is not None:
        held: list[tuple[str, str, str, tuple[str, ...]]] = []
        _pipeline_settings(problem, pipe, lambda code, path, message, *hints: held.append(
            (code, path, message, hints)))
        for code, path, message, hints in sorted(held, key=lambda h: _setting_order(h[1])):
            err(code, path, message, *hints)
    for b, f in graph.backward_of.items():
        if f == b or f in graph.backward_of:
            err("E234", f"graph.backward_of[{b}]", f"op `{graph.ops[b].name}` is marked the "
                f"backward op of `{graph.ops[f].name}`, which is "
                + ("itself" if f == b else "a backward op too"),
                "name the forward op whose gradient it computes")


def _pipeline_settings(problem: Problem, pipe: Pipeline, err: Err) -> None:
    """`_pipeline`'s checks of a pipeline's settings and units, in the order found."""
    graph = problem.graph
    if pipe.schedule not in SCHEDULES:
        err("E256", "pipeline.schedule", f"unknown schedule `{pipe.schedule}`",
            "one of: " + ", ".join(SCHEDULES))
    for key in ("microbatches", "stages_per_device"):
        _count(pipe, key, err)
    rules = schedules.find(pipe.schedule)  # None: unknown, just reported
    if rules is not None and rules.virtual_stages and pipe.stages_per_device == 1:
        err("E257", "pipeline.stages_per_device", f"`schedule {rules.name}` runs several "
            "stages per device",
            f"give stages_per_device=2 (or more), or schedule `{rules.fallback}`")
    elif rules is not None and not rules.virtual_stages and pipe.stages_per_device != 1:
        # a spec's E256; before, the setting was ignored without a word
        virtual = [s.name for s in schedules.TABLE if s.virtual_stages]
        err("E256", "pipeline.stages_per_device", "`stages_per_device` is for "
            + " or ".join(f"`schedule {v}`" for v in virtual) + f", not `{rules.name}`",
            " or ".join(f"give schedule=\"{v}\"" for v in virtual)
            + ", or leave stages_per_device at 1")
    mb = pipe.microbatches
    if _whole(mb, PIPELINE_COUNTS["microbatches"]):
        copies = limits.pipeline_copies(mb, len(graph.ops), len(graph.edges))
        if copies > limits.active().pipeline_copies:
            err("E016", "pipeline.microbatches", f"{mb} micro-batches would copy "
                f"{copies:_} ops and edges of graph `{graph.name}` in the pipeline's "
                f"simulation, more than the `pipeline_copies` limit "
                f"({limits.active().pipeline_copies:_})",
                limits.raise_hint("pipeline_copies", copies, lead="fewer, or"))
    _replication(problem, pipe, err)
    if not graph.ops:
        err("E259", "graph.ops", "the graph has no ops: a pipeline has no unit to put on "
            "a stage", "add ops, or leave `pipeline` out")
    else:  # a graph without backward ops too (before: its E259 of interleaved was skipped)
        _pipeline_units(problem, err)


def _replication(problem: Problem, pipe: Pipeline, err: Err) -> None:
    """`data_parallel` and `microbatch_size`, as the language checks them (E257, E256)."""
    _count(pipe, "microbatch_size", err,
           "the samples in one micro-batch, for example microbatch_size=8")
    n, have = pipe.data_parallel, len(problem.cluster.devices)
    if n != "auto" and not _whole(n, PIPELINE_COUNTS["data_parallel"]):
        err("E257", "pipeline.data_parallel", "`data_parallel` must be \"auto\" or a whole "
            f"number from 1 to {PIPELINE_COUNTS['data_parallel']}, not {n!r}",
            *_as_int(n, PIPELINE_COUNTS["data_parallel"]),
            "\"auto\" lets the planner choose each stage's replicas; 2 runs two identical "
            "pipelines")
        return
    rules = schedules.find(pipe.schedule)
    if n != 1 and rules is not None and rules.virtual_stages:
        err("E256", "pipeline.data_parallel", f"data_parallel={n!r} "
            + ("may replicate" if n == "auto" else "replicates") + " stages, and replicated "
            f"stages run under schedule `1f1b` or `gpipe`, not `{rules.name}`",
            "give schedule=\"1f1b\" (or \"gpipe\"), or data_parallel=1")
    elif n != "auto" and n > have:
        err("E257", "pipeline.data_parallel", f"{n} pipelines need at least {n} devices; "
            f"cluster `{problem.cluster.name}` has {have}",
            f"give data_parallel from 1 to {have}, or \"auto\"" if have > 1 else
            "a one-device cluster runs one pipeline: give data_parallel=1")


def _whole(value: object, most: int) -> bool:
    """Whether `value` is an int (not a bool) from 1 to `most`."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most


def _count(pipe: Pipeline, key: str, err: Err, *hints: str) -> None:
    """E257 unless the pipeline's setting `key` is a whole number from 1 to its
    `PIPELINE_COUNTS` (the language's `_count`)."""
    value, most = getattr(pipe, key), PIPELINE_COUNTS[key]
    if not _whole(value, most):
        err("E257", f"pipeline.{key}", f"`{key}` must be a whole number from 1 to {most}, "
            f"not {value!r}", *_as_int(value, most), *hints)


def _as_int(value: object, most: int) -> tuple[str, ...]:
    """The hint for a count in range that is no int (`numpy.int64(4)`: a model's counts
    are Python ints, which its JSON and its runs take)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (int, bool)) \
            and 1 <= int(value) <= most:
        return (f"give it as a Python int: int({value!r})",)
    return ()


def _plan(problem: Problem, err: Err) -> None:
    graph, cluster, pins = problem.graph, problem.cluster, problem.pins
    if problem.memory_model not in MEMORY_MODELS:
        err("E255", "memory_model", f"unknown memory model `{problem.memory_model}`",
            "one of: " + ", ".join(MEMORY_MODELS))
    if problem.contention not in CONTENTIONS:
        err("E255", "contention", f"unknown contention model `{problem.contention}`",
            "one of: " + ", ".join(CONTENTIONS))
    _pipeline(problem, err)
    ops, devs = graph.ops, cluster.devices
    for i, d in problem.placement.items():
        if i in pins and pins[i] != d:
            err("E251", f"pins[{i}]", f"op `{ops[i].name}` is pinned to `{devs[pins[i]].name}`"
                f" but placed on `{devs[d].name}`", "a given placement must respect the pins")
    for g, group in enumerate(graph.colocations):
        pinned = {pins[i] for i in group if i in pins}
        if len(pinned) > 1:
            names = ", ".join(f"`{ops[i].name}` to `{devs[pins[i]].name}`"
                              for i in group if i in pins)
            err("E252", f"graph.colocations[{g}]", f"colocated ops are pinned apart: {names}",
                "colocated ops must share one device")
    for i, op in enumerate(ops):
        if op.time_s is not None:  # a time runs everywhere
            continue
        bad = [dev for dev in devs if compute_time(op, dev) == math.inf]
        if bad and (op.flops is not None or op.time_by_kind):
            err("E253", f"graph.ops[{i}]", f"op `{op.name}` cannot run: it "
                f"{_why_not(op, bad[0])}",
                "give it a `time`, or the device a `flops` rate")


def _why_not(op: Op, dev: Device) -> str:
    """Why `op` cannot run on `dev` (E253): FLOP and no rate (`only` where it has no
    per-kind time either), or no time for the device's kind."""
    if op.flops is None:
        return f"has no time for device `{dev.name}` (kind {dev.kind!r})"
    if not op.time_by_kind:
        return f"has only FLOP and device `{dev.name}` has no FLOP rate"
    return (f"has FLOP and no time for device `{dev.name}` (kind {dev.kind!r}), which has no "
            "FLOP rate")


def _pipeline_units(problem: Problem, err: Err) -> None:
    """What a pipeline of the graph cannot run, as the language checks it (E235, E258,
    E259)."""
    graph, pipe, pins = problem.graph, problem.pipeline, problem.pins
    ops, devs = graph.ops, problem.cluster.devices
    assert pipe is not None
    for b, f in backward_first(graph):
        err("E235", f"graph.backward_of[{b}]", f"backward op `{ops[b].name}` comes before its "
            f"forward op `{ops[f].name}`: no path of edges leads from `{ops[f].name}` to it",
            f"add an edge from `{ops[f].name}` (or an op after it) to `{ops[b].name}`")
    for a, i in units_pinned_apart(graph, pins):
        err("E258", f"pins[{i}]", f"op `{ops[i].name}` is pinned to `{devs[pins[i]].name}` and "
            f"op `{ops[a].name}` to `{devs[pins[a]].name}`, but they are one pipeline unit (a "
            "forward op, its backward ops and their colocation groups run on one stage)",
            "pin them to one device, or use objective `makespan`")
    per = pipe.stages_per_device
    rules = schedules.find(pipe.schedule)
    if rules is None or not rules.virtual_stages or not isinstance(per, int) \
            or isinstance(per, bool):
        return  # a bad count is E257's; an unknown schedule E256's
    count = len(set(pipeline_units(graph)))
    if count < per:
        err("E259", "pipeline.stages_per_device", f"{pipe.stages_per_device} stages per device "
            f"are more than the graph's {count} pipeline units", f"give at most {count}")
