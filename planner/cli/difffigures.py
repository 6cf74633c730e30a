"""The figures `diff` reads from a `--json` report, checked before they are compared.

`diff` compares two reports' own figures (with `--spec` too, where both sides have them):
the times and sizes each run measured and whether its plan fits. planner writes each
figure as a number >= 0 or null (no finite value), and each verdict as true, false or
null; anything else (`"makespan_s": true`, `-1`, `"feasible": "no"`, `1e400`) is a report
edited by hand or another program's, and was compared as if measured (`true` as 1 s, `"no"`
as feasible). Now it is E642 at the value, as a report that holds no plan is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..errors import DiagnosticSink, JsonSpans, json_type, quoted

#: a report's figures: its own, each device row's, and its pipeline's (`result.pipeline`)
_FIGURES = ("makespan_s", "lower_bound_s")
_VERDICTS = ("feasible",)
_DEVICE_FIGURES = ("busy_s", "memory_peak_bytes", "memory_cap_bytes")
_PIPELINE_FIGURES = ("iteration_s", "iteration_bound_s")
_PIPELINE_VERDICTS = ("fits",)
_PIPELINE_DEVICE_FIGURES = ("memory_bytes", "busy_s")

_HINT = ("give the report as `planner solve --json` or `planner simulate --json` wrote it, or "
         "its plan (`solve --out`) with --spec: diff then simulates both sides")


def check_figures(data: Mapping[str, Any], shown: str, text: str | None,
                  at: tuple[str, ...]) -> None:
    """Raise E642 (every finding, each at its value) for a figure of `data`, a report's
    result, that is not a number >= 0 or null, or a verdict that is not a boolean or null."""
    sink = DiagnosticSink()
    where = JsonSpans(shown, text, at, sink)
    check = _Checker(shown, sink, where)
    check.fields(data, (), _FIGURES, _VERDICTS)
    check.rows(data, (), _DEVICE_FIGURES)
    pipeline = data.get("pipeline")
    if pipeline is not None and not isinstance(pipeline, Mapping):
        check.wrong(("pipeline",), pipeline, "an object")
    elif pipeline is not None:
        check.fields(pipeline, ("pipeline",), _PIPELINE_FIGURES, _PIPELINE_VERDICTS)
        check.rows(pipeline, ("pipeline",), _PIPELINE_DEVICE_FIGURES)
    sink.raise_if_errors()


class _Checker:
    def __init__(self, shown: str, sink: DiagnosticSink, where: JsonSpans) -> None:
        self.shown, self.sink, self.where = shown, sink, where

    def wrong(self, path: tuple[str | int, ...], value: Any, expected: str) -> None:
        dotted = ".".join(f"[{p}]" if isinstance(p, int) else p for p in path)
        what = ("a number beyond a double's range" if isinstance(value, float)
                else f"{json_type(value)} {quoted(value)}" if not isinstance(value, (list, dict))
                else json_type(value))
        self.sink.error("E642", f"no plan in {self.shown}: `{dotted.replace('.[', '[')}` is "
                        f"{what}, not {expected}", self.where(*path), _HINT)

    def fields(self, obj: Mapping[str, Any], path: tuple[str | int, ...],
               figures: tuple[str, ...], verdicts: tuple[str, ...]) -> None:
        for key in figures:
            value = obj.get(key)
            if value is not None and not _figure(value):
                self.wrong((*path, key), value, "a number >= 0 or null")
        for key in verdicts:
            value = obj.get(key)
            if value is not None and not isinstance(value, bool):
                self.wrong((*path, key), value, "true, false or null")

    def rows(self, obj: Mapping[str, Any], path: tuple[str | int, ...],
             figures: tuple[str, ...]) -> None:
        """`obj["devices"]`: null, or a list of objects whose `figures` are figures (a
        row's names and ops are `reportrows`' to check)."""
        rows = obj.get("devices")
        if rows is None:
            return
        if not isinstance(rows, list):
            self.wrong((*path, "devices"), rows, "a list of device rows")
            return
        for k, row in enumerate(rows):
            if not isinstance(row, Mapping):
                self.wrong((*path, "devices", k), row, "a device row (an object)")
                continue
            if row.get("name") is not None and not isinstance(row["name"], str):
                self.wrong((*path, "devices", k, "name"), row["name"], "a device name")
            self.fields(row, (*path, "devices", k), figures, ())


def _figure(value: Any) -> bool:
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value) and value >= 0)
