"""A `--json` report's `devices`, read back with its plan (`plan.load_plan`, `planner diff`).

`solve --json` and `simulate --json` write one row per device of the cluster
(`render/report.py`): `{"name", "ops", "busy_s", "memory_static_bytes",
"memory_peak_bytes", "memory_cap_bytes"}`, `ops` being the ops the device ran, in order.
Read back, `name` and `ops` are the plan's order; the other fields are figures of the run
that made the report: `simulate` computes its own, and `diff` shows them as the report's
(a report may come from an older version of the spec, so they are checked against no spec).

What can contradict the report is checked, each at its value (E517): `devices` that is not
a list of such rows, a device listed twice, an op listed twice or in the row of a device
its `placement` does not put it on, and a device `placement` uses with no row (a report has
a row for every device of its cluster). A row may hold fewer ops than `placement` puts on
its device: a run that deadlocks lists only the ops that ran. Rows without `ops` (figures
only) give no order; the rows give the ops of every device or of none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import DiagnosticSink, JsonSpans, json_type, quoted

#: one report's row, read: its index in `devices`, its device's name, its ops (None: not
#: given, the row holds figures only)
Row = tuple[int, str, list[str] | None]

_SHAPE = ('for example "devices": [{"name": "gpu0", "ops": ["a", "b"]}], as `planner solve '
          '--json` writes it')
_AGREE = ("a report's `devices` lists the ops each device ran, where its `placement` puts "
          "them (`planner solve --json` writes both): fix the one that was edited, or leave "
          "`devices` out and the simulator orders each device's ops")


def is_report(data: Mapping[str, Any]) -> bool:
    """Whether `data` gives its order as a report does, by its `devices` (a plan file has
    a `format` and an `order`); null is absent."""
    return "format" not in data and data.get("devices") is not None


def report_rows(data: Mapping[str, Any], sink: DiagnosticSink,
                where: JsonSpans) -> list[Row] | None:
    """The rows of a report's `devices` (`is_report`), each checked, then together against
    the report's `placement` where it is an object; [] when no row gives its `ops` (no
    order); None after any error (E517)."""
    before = len(sink.items) + sink.dropped
    raw = data["devices"]
    if not isinstance(raw, list):
        sink.error("E517", f"`devices` must be a list of device rows, not {_kind(raw)}",
                   where("devices"), _SHAPE, "or leave `devices` out: the simulator then "
                   "orders each device's ops")
        return None
    rows = [row for k, item in enumerate(raw) if (row := _row(k, item, sink, where))]
    placement = data.get("placement")
    given = [k for k, _, ops in rows if ops is not None]
    if given and len(given) < len(rows):
        k, name, _ = next(row for row in rows if row[2] is None)
        sink.error("E517", f"the row of device {quoted(name)} in `devices` has no `ops`, and "
                   f"the row of {quoted(raw[given[0]]['name'])} has", where("devices", k),
                   "a report gives the ops of every device (its order) or of none (the "
                   "simulator then orders them)")
    elif isinstance(placement, Mapping) and len(rows) == len(raw):  # each row read
        _agree(rows, placement, sink, where)
    if len(sink.items) + sink.dropped > before:
        return None
    return rows if given else []


def _row(k: int, item: Any, sink: DiagnosticSink, where: JsonSpans) -> Row | None:
    """Row `k` of `devices` when it is `{"name": str, "ops": [str, ...], ...}`."""
    if not isinstance(item, Mapping):
        sink.error("E517", f"`devices` holds {_kind(item)} where a device's row is expected",
                   where("devices", k), _SHAPE)
        return None
    name, ops = item.get("name"), item.get("ops")
    if not isinstance(name, str):
        sink.error("E517", f"the row of `devices` at index {k} must have a device's `name`, "
                   f"not {_kind(name)}", where("devices", k, "name") if "name" in item
                   else where("devices", k), _SHAPE)
        return None
    if ops is None:
        return k, name, None
    if not isinstance(ops, list) or not all(isinstance(op, str) for op in ops):
        sink.error("E517", f"the `ops` of device {quoted(name)} in `devices` must be a list "
                   f"of op names, not {_kind(ops)}", where("devices", k, "ops"), _SHAPE)
        return None
    return k, name, ops


def _agree(rows: list[Row], placement: Mapping[Any, Any], sink: DiagnosticSink,
           where: JsonSpans) -> None:
    """E517 where `rows` contradict `placement`: a device listed twice, an op listed
    twice or on a device it is not placed on, a device that `placement` uses and no row
    names."""
    seen_devices: set[str] = set()
    seen_ops: set[str] = set()
    for k, name, ops in rows:
        if name in seen_devices:
            sink.error("E517", f"device {quoted(name)} is listed twice in `devices`",
                       where("devices", k, "name"), "a report has one row per device")
        seen_devices.add(name)
        for j, op in enumerate(ops or ()):
            placed = placement.get(op)
            if op in seen_ops:
                sink.error("E517", f"op {quoted(op)} is listed twice in `devices`",
                           where("devices", k, "ops", j), "an op runs once, on one device")
            elif placed != name:
                said = ("is not in `placement`" if op not in placement else
                        f"`placement` puts it on {quoted(placed)}")
                sink.error("E517", f"op {quoted(op)} is in the `ops` of device {quoted(name)} "
                           f"in `devices`, and {said}", where("devices", k, "ops", j), _AGREE)
            seen_ops.add(op)
    unlisted: dict[str, int] = {}
    for dev in placement.values():
        if isinstance(dev, str) and dev not in seen_devices:
            unlisted[dev] = unlisted.get(dev, 0) + 1
    for dev, n in unlisted.items():
        sink.error("E517", f"`devices` has no row for device {quoted(dev)}, which `placement` "
                   f"puts {n} op(s) on", where("devices"), _AGREE)


def _kind(value: Any) -> str:
    """`value` described by its JSON type and a short rendering."""
    return f"{json_type(value)} {quoted(value)}"
