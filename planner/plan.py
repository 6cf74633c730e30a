"""A plan: which device runs each op, in what order, and optionally when.

The JSON form is versioned and deterministic: keys in a fixed order, ops in graph order,
devices in cluster order, times in seconds as floats, nothing that varies between runs.
A hybrid pipeline's plan adds `replicas` (`load_replicas`), and a pipeline plan whose
devices recompute their activations (`pipeilp`) adds `recompute` (`load_recompute`), and
the best plan of an interrupted solve `"status": "interrupted"` (which no reader needs),
all optional keys: a plan without them is written as before, byte for byte.

`solve --json` and `simulate --json` read back as plans too: `in_envelope` finds the report
in the document (its `result`), and `load_plan` reads the report's `placement`, with the
order its `devices` ran their `ops` in, and a hybrid plan's `replicas` (`load_replicas`):
the same plan, so the same figures.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .errors import (
    Diagnostic,
    DiagnosticSink,
    JsonSpans,
    SpecError,
    did_you_mean,
    json_type,
    quoted,
    some,
)
from .files import write_text_atomic
from .model import Graph, Problem
from .reportrows import is_report, report_rows
from .strictjson import finite

if TYPE_CHECKING:  # annotations only
    from .errors import Span

#: the most op names a diagnostic lists
LISTED = 5

FORMAT = "planner.plan"
VERSION = 1

#: a hybrid pipeline's replicated stages: representative device -> its group, itself first
Groups = Mapping[int, Sequence[int]]
_NO_GROUPS: Groups = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Plan:
    """Placement (op index -> device index), per-device order, optional start times.

    `order[d]` lists the ops on device `d` in execution order; `None` lets the simulator
    choose (its documented default priority). `start_s`, when given, are the planner's
    intended start times (the simulator never trusts them; it re-times the plan).
    """

    placement: tuple[int, ...]
    order: tuple[tuple[int, ...], ...] | None = None
    start_s: tuple[float, ...] | None = None
    algorithm: str = ""

    @classmethod
    def from_schedule(
        cls,
        placement: Sequence[int],
        start_s: Sequence[float],
        n_devices: int,
        algorithm: str = "",
        graph: Graph | None = None,
    ) -> Plan:
        """A plan whose per-device order is by start time.

        Ties (ops starting at the same instant, e.g. after a zero-time op) are broken by
        topological position when `graph` is given — a zero-time producer then precedes its
        consumer — else by op index. Pass the graph whenever zero-time ops may occur.
        """
        rank: Sequence[int]
        if graph is not None:
            pos = [0] * len(placement)
            for k, i in enumerate(graph.topological_order):
                pos[i] = k
            rank = pos
        else:
            rank = range(len(placement))
        order: list[list[int]] = [[] for _ in range(n_devices)]
        for i in sorted(range(len(placement)), key=lambda i: (start_s[i], rank[i])):
            order[placement[i]].append(i)
        return cls(tuple(placement), tuple(map(tuple, order)), tuple(start_s), algorithm)

    def with_algorithm(self, name: str) -> Plan:
        """A copy labelled with the algorithm that made it."""
        return Plan(self.placement, self.order, self.start_s, name)

    def to_json(self, problem: Problem, replicas: Groups = _NO_GROUPS,
                recompute: Sequence[str] = (), status: str = "") -> dict[str, Any]:
        """The versioned JSON object of this plan (names, not indices); a hybrid pipeline's
        `replicas` (representative device -> its group, itself first: `pipeline.hybrid`)
        as `"replicas": {device: [devices]}`, only when a stage has 2+ replicas; the
        devices that recompute their activations as `"recompute": [devices]`, only when
        some do; `"status": "interrupted"` (`status`) for the best plan of a solve that
        was stopped, only then (readers ignore it: it is the plan all the same)."""
        ops = problem.graph.ops
        devs = problem.cluster.devices
        obj: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "plan": problem.name,
            "algorithm": self.algorithm,
            **({"status": status} if status else {}),
            "placement": {ops[i].name: devs[d].name for i, d in enumerate(self.placement)},
        }
        obj.update(layout_json(problem, replicas, recompute))
        if self.order is not None:
            obj["order"] = {
                devs[d].name: [ops[i].name for i in seq] for d, seq in enumerate(self.order)
            }
        if self.start_s is not None:
            obj["start_s"] = {ops[i].name: float(t) for i, t in enumerate(self.start_s)}
        return obj

    def dumps(self, problem: Problem, replicas: Groups = _NO_GROUPS,
              recompute: Sequence[str] = (), status: str = "") -> str:
        """Deterministic JSON text (the same plan is the same bytes)."""
        return json.dumps(finite(self.to_json(problem, replicas, recompute, status)), indent=2,
                          ensure_ascii=False, allow_nan=False) + "\n"  # strict: no NaN

    def write(self, problem: Problem, path: str, replicas: Groups = _NO_GROUPS,
              recompute: Sequence[str] = (), status: str = "") -> None:
        """Write the plan JSON atomically (with a hybrid pipeline's `replicas`, the
        devices that `recompute`, and a `status` such as `interrupted`)."""
        write_text_atomic(path, self.dumps(problem, replicas, recompute, status))


def layout_json(problem: Problem, replicas: Groups = _NO_GROUPS,
                recompute: Sequence[str] = ()) -> dict[str, Any]:
    """What a pipeline plan holds beyond its placement, as a plan file and every `--json`
    result write it (so that `simulate --placement` and `diff` read any of them back to
    the same run): `"replicas": {device: [devices]}`, only when a stage has 2+ replicas,
    and `"recompute": [devices]`, only when some do."""
    devs = problem.cluster.devices
    obj: dict[str, Any] = {}
    groups = {d: g for d, g in sorted(replicas.items()) if len(g) > 1}
    if groups:
        obj["replicas"] = {devs[d].name: [devs[e].name for e in g] for d, g in groups.items()}
    if recompute:
        obj["recompute"] = list(recompute)
    return obj


def given_placement(problem: Problem, *hints: str) -> tuple[int, ...]:
    """The device of every op from the plan's `place` and `pin` statements (a pin wins).

    Raises `SpecError` (E506) naming the ops with neither; `hints` follow the usual one.
    """
    ops = problem.graph.ops
    given = {**problem.placement, **problem.pins}
    missing = [ops[i].name for i in range(len(ops)) if i not in given]
    if missing:
        first = f"add `place {missing[0]} on DEVICE` (or `pin {missing[0]} to DEVICE`)"
        raise SpecError(Diagnostic(
            "E506", f"plan `{problem.name}` places only {len(given)} of {len(ops)} ops; "
            f"unplaced: {some(missing, LISTED)}", None,
            (f"{first} to plan `{problem.name}`", *hints)))
    return tuple(given[i] for i in range(len(ops)))


def in_envelope(data: Any) -> tuple[Any, tuple[str, ...]]:
    """What a `--json` document carries (its `result`: a plan's report) and where it is in
    the file; any other value as it is, at the top."""
    if isinstance(data, Mapping) and "result" in data:
        return data["result"], ("result",)
    return data, ()


def load_plan(problem: Problem, data: Mapping[str, Any], source: str = "<plan>",
              text: str | None = None, at: Sequence[str | int] = ()) -> Plan:
    """Read a plan JSON object, or a bare `{"placement": {op: device}}`, or the report of a
    `--json` run (`in_envelope`; its order: its `devices`' `ops`), for `problem`.

    Every op must be placed on a known device; `order` must map devices to lists of op
    names and `start_s` ops to finite seconds. Problems are collected (up to the
    diagnostics limit, after which they are only counted and get no did-you-mean) and
    raised together as a `SpecError`. Names from the file are quoted with `repr`-style
    escapes, so a key holding control characters cannot forge output lines. With the
    file's `text` (where `data` is the value at path `at` in it), each problem points at
    its entry; without, at the file's start.
    """
    sink = DiagnosticSink()
    where = JsonSpans(source, text, at, sink)
    if not isinstance(data, Mapping) or not isinstance(data.get("placement"), Mapping):
        wrong = placement_of_wrong_type(data)  # null is absent: no placement
        raise SpecError(
            Diagnostic(
                "E501",
                "a placement file must be a JSON object with a `placement` object"
                + (f", not {wrong}" if wrong else ""),
                where("placement") if wrong else where(),
                ('for example {"placement": {"conv1": "gpu0"}}',),
            )
        )
    version, fmt = data.get("version", VERSION), data.get("format", FORMAT)
    # `true` and `1.0` equal 1 in Python, not in JSON (the interchange reader, E923, alike)
    if fmt != FORMAT or version != VERSION or type(version) is not int:  # at what is wrong
        sink.error("E502", f"unsupported plan format {quoted(data.get('format'))} version "
                   f"{quoted(version)}", where("format" if fmt != FORMAT else "version"),
                   f"this planner reads {FORMAT} version {VERSION}")
    op_index = problem.graph.op_index
    dev_index = problem.cluster.device_index
    placement = [-1] * len(problem.graph.ops)
    for op_name, dev_name in data["placement"].items():
        i = op_index.get(op_name)
        d = dev_index.get(dev_name) if isinstance(dev_name, str) else None
        if i is None:
            sink.error("E503", f"unknown op {quoted(op_name)} in placement",
                       where.key("placement", op_name), *_hints(sink, op_name, op_index))
        elif d is None:
            sink.error("E504", f"op {quoted(op_name)} is placed on unknown device "
                       f"{quoted(dev_name)}", where("placement", op_name),
                       *_hints(sink, dev_name, dev_index))
        else:
            placement[i] = d
    missing = [problem.graph.ops[i].name for i, d in enumerate(placement) if d == -1]
    if missing and not sink.items:
        sink.error("E505", f"the placement leaves {len(missing)} op(s) unplaced: "
                   f"{some(missing, LISTED)}", where("placement"),
                   "place every op of the graph")
    order = _read_rows(problem, data, sink, where) if is_report(data) else \
        _read_order(problem, data.get("order"), placement, sink, where)
    start = _read_start(problem, data.get("start_s"), sink, where)
    sink.raise_if_errors()
    return Plan(tuple(placement), order, start, str(data.get("algorithm", "")))


def placement_of_wrong_type(data: Any) -> str | None:
    """A file's `placement` in words (`a boolean false`) where it is given, not null, and
    not an object; else None."""
    raw = data.get("placement") if isinstance(data, Mapping) else None
    return None if raw is None or isinstance(raw, Mapping) else _kind(raw)


def load_replicas(problem: Problem, data: Mapping[str, Any], placement: Sequence[int],
                  source: str = "<plan>", text: str | None = None,
                  at: Sequence[str | int] = ()) -> dict[int, tuple[int, ...]]:
    """A plan JSON's `replicas` (a hybrid pipeline's replicated stages: `{device: [devices]}`,
    each a stage's device in `placement` mapped to its group, itself first) as device
    indices; {} when absent. The groups are disjoint and no replica holds ops of its own;
    problems are raised together as a `SpecError` (E504 an unknown device, E514 the rest),
    located as `load_plan` locates its own."""
    raw = data.get("replicas") if isinstance(data, Mapping) else None
    if raw is None:
        return {}
    sink = DiagnosticSink()
    where = JsonSpans(source, text, at, sink)
    if not _object(raw, "replicas", "device names to lists of device names", "E514",
                   _REPLICAS_SHAPE, sink, where):
        sink.raise_if_errors()
    used = set(placement)
    taken: dict[int, str] = {}
    out: dict[int, tuple[int, ...]] = {}
    for rep, rep_name, names in _by_device(problem, raw, "replicas", sink, where):
        if not _names_listed(rep_name, names, sink, where):
            continue
        group = _group(sink, where, problem, rep_name, names, used, taken)
        if group is not None and len(group) > 1:
            out[rep] = group
    sink.raise_if_errors()
    return out


def load_recompute(problem: Problem, data: Mapping[str, Any], source: str = "<plan>",
                   text: str | None = None, at: Sequence[str | int] = (),
                   replicas: Mapping[int, tuple[int, ...]] | None = None,
                   placement: Collection[int] | None = None) -> tuple[str, ...]:
    """A plan JSON's `recompute` (the devices that run their forward ops again in each
    backward pass, as `pipeilp` chose) as device names; () when absent. Each name must
    be one the model reads (`check_recompute`, with `placement`'s devices where given).
    Problems are raised together as a `SpecError` (E504 an unknown device, E515 the rest),
    located as `load_plan` locates its own."""
    raw = data.get("recompute") if isinstance(data, Mapping) else None
    if raw is None:
        return ()
    sink = DiagnosticSink()
    where = JsonSpans(source, text, at, sink)
    if _recompute_listed(raw, sink, where):
        check_recompute(problem, raw, sink, lambda k: where("recompute", k), replicas,
                        placement)
    sink.raise_if_errors()
    return tuple(dict.fromkeys(raw))


_REPLICAS_SHAPE = 'for example "replicas": {"gpu0": ["gpu0", "gpu1"]}'


def _names_listed(rep_name: str, names: Any, sink: DiagnosticSink, where: JsonSpans) -> bool:
    """Whether one entry of `replicas` is a list of device names; E514 where it is not."""
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return True
    sink.error("E514", f"the replicas of device {quoted(rep_name)} must be a list of "
               f"device names, not {_kind(names)}", where("replicas", rep_name),
               _REPLICAS_SHAPE)
    return False


def _recompute_listed(raw: Any, sink: DiagnosticSink, where: JsonSpans) -> bool:
    """Whether `recompute` is a list of device names; E515 where it is not."""
    if isinstance(raw, list) and all(isinstance(n, str) for n in raw):
        return True
    sink.error("E515", f"`recompute` must be a list of device names, not {_kind(raw)}",
               where("recompute"), 'for example "recompute": ["gpu0", "gpu1"]')
    return False


def check_shapes(data: Mapping[str, Any], source: str, text: str | None,
                 at: Sequence[str | int] = ()) -> None:
    """The shapes of a plan file's optional `replicas`, `recompute` and `order`, where no
    spec checks their names (`planner diff` without --spec): only null or absence is
    absent; anything else of the wrong type is raised as `load_replicas` (E514),
    `load_recompute` (E515) and `load_plan` (E508) report it, at the value."""
    sink = DiagnosticSink()
    where = JsonSpans(source, text, at, sink)
    raw = data.get("replicas")
    if raw is not None and _object(raw, "replicas", "device names to lists of device "
                                   "names", "E514", _REPLICAS_SHAPE, sink, where):
        for name, names in raw.items():
            _names_listed(name, names, sink, where)
    if data.get("recompute") is not None:
        _recompute_listed(data["recompute"], sink, where)
    if is_report(data):  # its order is its devices' ops (its own `order` is not one)
        report_rows(data, sink, where)
    elif data.get("order") is not None:
        _object(data["order"], "order", "device names to lists of op names", "E508",
                _ORDER_SHAPE, sink, where)
    sink.raise_if_errors()


def check_recompute(problem: Problem, names: Sequence[str], sink: DiagnosticSink,
                    at: Callable[[int], Span | None],
                    replicas: Mapping[int, tuple[int, ...]] | None = None,
                    placement: Collection[int] | None = None) -> None:
    """Reports to `sink`, at `at(k)` for the k-th name, each name of `recompute` that the
    pipeline's model would ignore: E504 an unknown device; E515 any device of a graph
    without backward ops (inference: nothing is recomputed), a device that runs no op
    of `placement` (where given) and holds no replica (no stage of its own to recompute),
    and a later replica of a replicated stage (`replicas`, as `load_replicas` reads them)
    whose stage's device (its group's first) is not named too: a replicated stage
    recomputes on all its replicas or on none, as its first device says."""
    dev_index, devices = problem.cluster.device_index, problem.cluster.devices
    first = {e: group[0] for group in (replicas or {}).values() for e in group[1:]}
    held = set(placement) if placement is not None else None
    named = set(names)
    for k, name in enumerate(names):
        d = dev_index.get(name)
        if d is None:
            sink.error("E504", f"unknown device {quoted(name)} in recompute", at(k),
                       *_hints(sink, name, dev_index))
        elif not problem.graph.backward_of:  # (before: read, and its figures disagreed)
            graph = quoted(problem.graph.name)
            sink.error("E515", f"device {quoted(name)} in recompute, and graph {graph} has "
                       "no backward ops: there is no backward pass to recompute activations "
                       "for", at(k), "leave `recompute` out of an inference plan")
        elif d in first and devices[first[d]].name not in named:
            stage = devices[first[d]].name
            sink.error("E515", f"device {quoted(name)} in recompute holds a replica of the "
                       f"stage of {quoted(stage)}, which is not in recompute: a replicated "
                       "stage recomputes on all its replicas or on none, as its first device "
                       f"says", at(k), f'write "{stage}" for the stage of {quoted(name)} to '
                       "recompute on all its replicas, or leave it out")
        elif held is not None and d not in held and d not in first:
            runs = ", ".join(quoted(devices[e].name) for e in sorted(held) if e >= 0)
            sink.error("E515", f"device {quoted(name)} in recompute runs no stage of the "
                       "plan: it has no activations to recompute", at(k),
                       f"name the devices of the stages that recompute (the plan's stages run "
                       f"on {runs}), or leave it out")


def _group(sink: DiagnosticSink, where: JsonSpans, problem: Problem, rep_name: str,
           names: Sequence[str], used: set[int], taken: dict[int, str]
           ) -> tuple[int, ...] | None:
    """One entry of `replicas` checked (`load_replicas`); `taken`: device -> the group it
    is in so far."""
    dev_index = problem.cluster.device_index
    rep = dev_index[rep_name]
    if rep not in used:
        sink.error("E514", f"device {quoted(rep_name)} has replicas but holds no op of the "
                   "placement", where("replicas", rep_name),
                   "a group is named by its stage's device, the one its ops are placed on")
        return None
    if not names or names[0] != rep_name:
        sink.error("E514", f"the replicas of device {quoted(rep_name)} must list it first",
                   where("replicas", rep_name, 0), f'for example "{rep_name}": ["{rep_name}", ...]')
        return None
    group: list[int] = []
    for k, name in enumerate(names):
        d = dev_index.get(name)
        if d is None:
            sink.error("E504", f"unknown device {quoted(name)} in replicas",
                       where("replicas", rep_name, k), *_hints(sink, name, dev_index))
        elif d in taken:
            sink.error("E514", f"device {quoted(name)} is in the replicas of "
                       f"{quoted(taken[d])} and of {quoted(rep_name)}" if taken[d] != rep_name
                       else f"device {quoted(name)} is listed twice in the replicas of "
                       f"{quoted(rep_name)}", where("replicas", rep_name, k),
                       "a device holds one replica")
        elif d != rep and d in used:
            sink.error("E514", f"device {quoted(name)}, a replica of {quoted(rep_name)}'s "
                       "stage, holds ops of its own in the placement",
                       where("replicas", rep_name, k),
                       "a replica runs its stage's ops and no others")
        else:
            taken[d] = rep_name
            group.append(d)
    return tuple(group)


def _object(raw: Any, key: str, what: str, code: str, example: str, sink: DiagnosticSink,
            where: JsonSpans) -> bool:
    """Whether the file's `key` is an object (of `what`); reports `code` where it is not."""
    if isinstance(raw, Mapping):
        return True
    sink.error(code, f"`{key}` must be an object of {what}, not {_kind(raw)}", where(key),
               example)
    return False


def _by_device(problem: Problem, raw: Mapping[str, Any], key: str, sink: DiagnosticSink,
               where: JsonSpans) -> Iterator[tuple[int, str, Any]]:
    """The entries of the file's `key` (`order`, `replicas`: an object of device names)
    whose name is a device of the cluster, as (device, name, value); E504 for the others."""
    dev_index = problem.cluster.device_index
    for name, value in raw.items():
        d = dev_index.get(name)
        if d is None:
            sink.error("E504", f"unknown device {quoted(name)} in {key}", where(key, name),
                       *_hints(sink, name, dev_index))
            continue
        yield d, name, value


def order_of(data: Mapping[str, Any]) -> Any:
    """A plan's `order`; a `--json` report's (`reportrows.is_report`): each of its
    `devices` (`{"name", "ops"}`) and the ops it ran, in their order, whatever else its
    `order` is (an algorithm's field, such as pipeilp's stage order); None when neither.
    As written: `check_shapes` and `load_plan` check it."""
    if not is_report(data):
        return data.get("order")
    devices = data["devices"]
    if not isinstance(devices, list) or not all(
            isinstance(d, Mapping) and isinstance(d.get("name"), str) for d in devices):
        return None
    return {d["name"]: d.get("ops") for d in devices}


_ORDER_SHAPE = 'for example "order": {"gpu0": ["a", "b"]}'


def _read_order(problem: Problem, raw: Any, placement: Sequence[int], sink: DiagnosticSink,
                where: JsonSpans) -> tuple[tuple[int, ...], ...] | None:
    """`order`: {device: [op, ...]} -> per-device op indices (None when absent or when
    the placement already failed). An op listed under a device other than its
    `placement`'s, or listed twice, is E508 at the entry (the simulator would drop it and
    run the op last)."""
    if raw is None or sink.has_errors:
        return None
    if not _object(raw, "order", "device names to lists of op names", "E508", _ORDER_SHAPE,
                   sink, where):
        return None
    seqs: list[list[int]] = [[] for _ in problem.cluster.devices]
    listed: set[int] = set()
    named: set[int] = set()  # listed anywhere, on its device or not
    for d, dev_name, names in _by_device(problem, raw, "order", sink, where):
        if not isinstance(names, list):
            sink.error("E508", f"`order` of device {quoted(dev_name)} must be a list of op "
                       f"names, not {_kind(names)}", where("order", dev_name))
            continue
        for k, name in enumerate(names):
            if not isinstance(name, str):
                sink.error("E508", f"`order` of device {quoted(dev_name)} holds "
                           f"{_kind(name)} where an op name is expected",
                           where("order", dev_name, k))
                continue
            i = problem.graph.op_index.get(name)
            path = ("order", dev_name, k)
            if i is not None:
                named.add(i)
            if i is None or not _misplaced(problem, i, d, placement, listed, sink, where, path):
                _append(problem, seqs[d], name, "order", sink, where, path)  # E503: unknown
    if not sink.has_errors:  # else a misspelt device would leave out all its ops
        _left_out(problem, raw, placement, named, sink, where)
    return tuple(map(tuple, seqs))


def _left_out(problem: Problem, raw: Mapping[str, Any], placement: Sequence[int],
              named: set[int], sink: DiagnosticSink, where: JsonSpans) -> None:
    """E508 per device with placed ops that `order` (`raw`) does not list (`named`), at its
    list, else at `order` (was: simulated, each a violation "leaves out `c` (run last)")."""
    left: dict[int, list[str]] = {}
    for i, d in enumerate(placement):
        if i not in named:
            left.setdefault(d, []).append(problem.graph.ops[i].name)
    for d, names in sorted(left.items()):
        dev = problem.cluster.devices[d].name
        sink.error("E508", f"`order` leaves out {len(names)} op(s) that `placement` puts on "
                   f"{quoted(dev)}: {some(names, LISTED)}",
                   where("order", dev) if dev in raw else where("order"),
                   f"list every op placed on {quoted(dev)}, in the order it runs, or leave "
                   "`order` out: the simulator then orders them")


def _misplaced(problem: Problem, i: int, d: int, placement: Sequence[int],
               listed: set[int], sink: DiagnosticSink, where: JsonSpans,
               path: tuple[str | int, ...]) -> bool:
    """Whether `order` lists op `i` under device `d` against the file's `placement`, or
    again (it is in `listed`, which gains it otherwise): E508 at `path`."""
    name, devs = problem.graph.ops[i].name, problem.cluster.devices
    if placement[i] != d:
        sink.error("E508", f"`order` lists op {quoted(name)} under device "
                   f"{quoted(devs[d].name)}, but `placement` puts it on "
                   f"{quoted(devs[placement[i]].name)}", where(*path),
                   f"list it under {quoted(devs[placement[i]].name)}, where it runs, or "
                   "change its placement")
        return True
    if i in listed:
        sink.error("E508", f"`order` lists op {quoted(name)} twice under device "
                   f"{quoted(devs[d].name)}", where(*path), "an op runs once: list it once")
        return True
    listed.add(i)
    return False


def _read_rows(problem: Problem, data: Mapping[str, Any], sink: DiagnosticSink,
               where: JsonSpans) -> tuple[tuple[int, ...], ...] | None:
    """A report's order: its `devices`' ops (`reportrows.report_rows`, which checks them
    against its placement), on the spec's devices (E504 at a row's `name`); None when
    the placement already failed, or when no row gives its ops."""
    rows = None if sink.has_errors else report_rows(data, sink, where)
    if rows is None:
        return None
    if not rows:
        return None  # no row gives its ops: the simulator orders them
    dev_index = problem.cluster.device_index
    seqs: list[list[int]] = [[] for _ in problem.cluster.devices]
    for k, dev_name, names in rows:
        d = dev_index.get(dev_name)
        if d is None:
            sink.error("E504", f"unknown device {quoted(dev_name)} in devices",
                       where("devices", k, "name"), *_hints(sink, dev_name, dev_index))
            continue
        for j, name in enumerate(names or ()):
            _append(problem, seqs[d], name, "devices", sink, where, ("devices", k, "ops", j))
    return tuple(map(tuple, seqs))


def _append(problem: Problem, seq: list[int], name: str, key: str, sink: DiagnosticSink,
            where: JsonSpans, path: tuple[str | int, ...]) -> None:
    """Op `name` appended to a device's order `seq`; E503 at `path` for an unknown op."""
    op_index = problem.graph.op_index
    i = op_index.get(name)
    if i is None:
        sink.error("E503", f"unknown op {quoted(name)} in {key}", where(*path),
                   *_hints(sink, name, op_index))
    else:
        seq.append(i)


def _read_start(problem: Problem, raw: Any, sink: DiagnosticSink, where: JsonSpans
                ) -> tuple[float, ...] | None:
    """`start_s`: {op: seconds}; used only when it gives every op a start."""
    if raw is None:
        return None
    if not _object(raw, "start_s", "op names to seconds", "E509",
                   'for example "start_s": {"a": 0.0, "b": 0.0015}', sink, where):
        return None
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not 0 <= value < float("inf"):
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            sink.error("E509", f"`start_s` of op {quoted(name)} must be finite seconds, at "
                       f"least 0, not {quoted(value) if number else _kind(value)}",
                       where("start_s", name),
                       "`start_s` is only the planner's intent (the simulator re-times the "
                       "plan by its `order`): fix the value or leave `start_s` out")
            return None
    if not all(op.name in raw for op in problem.graph.ops):
        return None
    return tuple(float(raw[op.name]) for op in problem.graph.ops)


def _hints(sink: DiagnosticSink, name: Any, candidates: Mapping[str, int]) -> tuple[str, ...]:
    """A did-you-mean hint, but only while diagnostics are still shown."""
    return () if sink.full else did_you_mean(str(name)[:200], candidates)


def _kind(value: Any) -> str:
    """`value` described by its JSON type and a short rendering."""
    return f"{json_type(value)} {quoted(value)}"
