"""Sweep settings: parse `--bandwidth`, `--memory`, `--devices`, `--objective`,
`--microbatches` values; apply them to a Problem.

A setting is five labels, one per dimension, each in a canonical text form so that the
same setting written two ways (`1GB/s`, `1 GB/s`) is the same point of a sweep and the same
row of a resume file:

- bandwidth: `1x` (the spec's links as they are, the default), a factor `0.5x` (every
  link's bandwidth scaled), or an absolute rate `10 GB/s` (every link set to it; latencies
  are kept).
- memory: `100%` (the default), a share `50%` or factor `0.5x` of every device's cap, or an
  absolute size `8 GiB` (every device's cap set to it).
- devices: `all` (the default) or `N`: keep the first N devices of the cluster (cluster
  order) and the links among them. Pins to removed devices are dropped, and so are `place`
  statements that name them; the row's `reason` says so (a warning, not a failure), since
  the point of `--devices` is to ask what the graph does on a smaller cluster. A plan that
  then cannot run (an op only the removed devices could run, `expert` with an incomplete
  placement) fails on its own terms, with its own status.
- objective: `spec` (the plan's own objective, the default), `makespan` (one pass through
  the graph: the plan's pipeline settings are dropped) or `pipeline` (the plan's pipeline
  settings; a plan without them gets `Pipeline()`'s schedule, 1f1b, and
  `DEFAULT_PIPELINE_MICROBATCHES` micro-batches).
- microbatches: `spec` (the plan's count, the default) or `N` (1 to 1024): the pipeline's
  micro-batch count. It applies only to points under the pipeline objective; the sweep
  gives every other point the label `spec` (`applies_microbatches`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .. import limits
from ..errors import Diagnostic, UsageError, did_you_mean
from ..model import MAX_MICROBATCHES, Device, Link, Pipeline, Problem
from ..units import RANGES, UNITS, format_quantity, parse_number, range_side, whole_bytes

DEFAULT_BANDWIDTH = "1x"
DEFAULT_MEMORY = "100%"
DEFAULT_DEVICES = "all"
DEFAULT_OBJECTIVE = "spec"
DEFAULT_MICROBATCHES = "spec"
#: `--objective` values
OBJECTIVE_LABELS: tuple[str, ...] = (DEFAULT_OBJECTIVE, "makespan", "pipeline")
#: micro-batches of `--objective pipeline` on a plan that sets none and no `--microbatches`:
#: the language's default (1) is one pass with nothing to overlap, not a pipeline
DEFAULT_PIPELINE_MICROBATCHES = 8

_QUANTITY = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z/%]*)\s*$")


class SettingError(ValueError):
    """A setting label that cannot be applied to a given problem (e.g. too many devices)."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One point of the settings grid: canonical labels for bandwidth, memory, devices,
    objective and micro-batches."""

    bandwidth: str = DEFAULT_BANDWIDTH
    memory: str = DEFAULT_MEMORY
    devices: str = DEFAULT_DEVICES
    objective: str = DEFAULT_OBJECTIVE
    microbatches: str = DEFAULT_MICROBATCHES


# -- parsing ------------------------------------------------------------------------------


def _usage(option: str, value: str, what: str, example: str) -> UsageError:
    return UsageError(Diagnostic(
        "E611", f"{option}: `{value}` is not {what}", None,
        (f"for example `{option} {example}`",)))


def _split(text: str, option: str) -> list[str]:
    """The values of a comma-separated list; E611 for one of commas alone (`,`), which
    named nothing (before: an empty sweep, reported as "no plan found")."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise UsageError(Diagnostic("E611", f"{option}: `{text}` names no value", None,
                                    (f"give one value or more, or leave {option} out",)))
    return parts


def _dedupe(labels: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(labels))


def _parse_counts(text: str | None, option: str, *, default: str, most: int | None,
                  what: str, in_range: str, example: str) -> tuple[str, ...]:
    """Canonical labels of a comma-separated list of counts from 1 to `most` (no limit when
    None); `default` (also what an empty list means) passes through. `what` and `in_range`
    name the value a part that is no integer, or one out of range, is not."""
    if text is None or not text.strip():
        return (default,)
    out: list[str] = []
    for part in _split(text, option):
        if part == default:
            out.append(part)
            continue
        try:
            n = int(part)
        except ValueError:
            raise _usage(option, part, what, example) from None
        if n < 1 or (most is not None and n > most):
            raise _usage(option, part, in_range, example)
        out.append(str(n))
    return _dedupe(out)


#: a share's or factor's label, which is the value applied: 12 significant digits, so
#: that values a sweep names apart stay apart (`:g`'s 6 made 80.00001% and 80.000012% one
#: point, run at 80%)
_DIGITS = ".12g"


#: the factors that can keep a value of the language's range in it (`units.RANGES`): a
#: larger one puts every cap or bandwidth past the range, a smaller one below it; where one
#: within these still does, `apply_setting` refuses the setting for that spec
_MEMORY_SHARES = (RANGES["size"][0] / RANGES["size"][1], RANGES["size"][1] / RANGES["size"][0])
_BANDWIDTH_FACTORS = (RANGES["bandwidth"][0] / RANGES["bandwidth"][1],
                      RANGES["bandwidth"][1] / RANGES["bandwidth"][0])


def _factor_label(value: float) -> str:
    return f"{value:{_DIGITS}}x"


def parse_bandwidths(text: str | None, option: str = "--bandwidth") -> tuple[str, ...]:
    """Canonical bandwidth labels of a comma-separated list (`1GB/s,10Gbps` or `0.5x,2x`).

    Raises `UsageError` (E611) naming the option and the bad value.
    """
    if text is None or not text.strip():
        return (DEFAULT_BANDWIDTH,)
    return _dedupe([canonical_bandwidth(part, option) for part in _split(text, option)])


def _quantity(part: str, option: str, what: str, example: str) -> tuple[float, str]:
    """A number and its unit (`8GiB`, `2x`, `50%`); `UsageError` (`what`, `example`) if
    `part` is not one."""
    m = _QUANTITY.match(part)
    if m is None:
        raise _usage(option, part, what, example)
    return parse_number(m.group(1)), m.group(2)


def canonical_bandwidth(part: str, option: str = "--bandwidth") -> str:
    """The canonical label of one bandwidth value; `UsageError` if it is not one."""
    value, unit = _quantity(part, option, "a bandwidth or a factor", "1GB/s,10GB/s or 0.5x,2x")
    if unit.lower() == "x":
        if not _BANDWIDTH_FACTORS[0] <= value <= _BANDWIDTH_FACTORS[1]:
            raise _usage(option, part, "a factor from 1e-15x to 1e+15x (a link's bandwidth "
                         "stays from 1 B/s to 1 PB/s)", "0.5x,2x")
        return _factor_label(value)
    if unit not in UNITS["bandwidth"]:
        raise _usage(option, part, "a bandwidth (units: " + ", ".join(UNITS["bandwidth"])
                     + ") or a factor such as 2x", "1GB/s,10GB/s or 0.5x,2x")
    base = value * UNITS["bandwidth"][unit]
    if not base > 0 or not math.isfinite(base):
        raise _usage(option, part, "a positive bandwidth", "1GB/s,10GB/s")
    return format_quantity(base, "bandwidth")


def parse_memories(text: str | None, option: str = "--memory") -> tuple[str, ...]:
    """Canonical memory labels of a comma-separated list (`50%,100%`, `0.5x`, `8GiB`)."""
    if text is None or not text.strip():
        return (DEFAULT_MEMORY,)
    return _dedupe([canonical_memory(part, option) for part in _split(text, option)])


def canonical_memory(part: str, option: str = "--memory") -> str:
    """The canonical label of one memory value; `UsageError` if it is not one."""
    value, unit = _quantity(part, option, "a share, a factor or a size", "50%,75%,100%")
    if not value > 0 or not math.isfinite(value):
        raise _usage(option, part, "a positive share, factor or size", "50%,75%,100%")
    if unit in ("%", "x", "X"):
        share = value / 100 if unit == "%" else value
        if not _MEMORY_SHARES[0] <= share <= _MEMORY_SHARES[1]:
            raise _usage(option, part, "a share from 2^-50 (about 8.9e-14%) to 2^50 "
                         "(about 1.1e+17%) of each cap (a cap stays from 1 B to 1 PiB)",
                         "50%,75%,100%")
        return f"{value:{_DIGITS}}%" if unit == "%" else f"{value * 100:{_DIGITS}}%"
    if unit not in UNITS["size"]:
        raise _usage(option, part, "a share (`50%`), a factor (`0.5x`) or a size (units: "
                     + ", ".join(UNITS["size"]) + ")", "50%,75%,100%")
    base = value * UNITS["size"][unit]
    if not 1 <= base <= RANGES["size"][1]:  # a spec's sizes: every later stage stays exact
        raise _usage(option, part, "a size from 1 B to 1 PiB", "8GiB,16GiB")
    # whole bytes from the digits, down as a spec's `memory` (`1.001KB` is 1001 B, though
    # its float is 1000.9999999999999 B)
    m = _QUANTITY.match(part)
    assert m is not None  # `_quantity` matched it
    cap, _ = whole_bytes(m.group(1), UNITS["size"][unit], base, down=True)
    return format_quantity(float(cap), "size")


def parse_devices(text: str | None, option: str = "--devices") -> tuple[str, ...]:
    """Canonical device-count labels of a comma-separated list of positive integers."""
    return _parse_counts(text, option, default=DEFAULT_DEVICES, most=None,
                         what="a number of devices", in_range="a positive number of devices",
                         example="2,4,8")


def parse_objectives(text: str | None, option: str = "--objective") -> tuple[str, ...]:
    """Objective labels of a comma-separated list (`makespan,pipeline`; `spec`: the plan's
    own)."""
    if text is None or not text.strip():
        return (DEFAULT_OBJECTIVE,)
    out: list[str] = []
    for part in _split(text, option):
        label = part.lower()
        if label not in OBJECTIVE_LABELS:
            raise UsageError(Diagnostic(
                "E611", f"{option}: `{part}` is not an objective", None,
                (*did_you_mean(label, OBJECTIVE_LABELS),
                 f"choose from {', '.join(OBJECTIVE_LABELS)}, e.g. `{option} "
                 "makespan,pipeline`")))
        out.append(label)
    return _dedupe(out)


def parse_microbatches(text: str | None, option: str = "--microbatches") -> tuple[str, ...]:
    """Micro-batch labels of a comma-separated list of counts from 1 to 1024 (`spec`: the
    plan's own)."""
    return _parse_counts(text, option, default=DEFAULT_MICROBATCHES, most=MAX_MICROBATCHES,
                         what="a number of micro-batches",
                         in_range=f"a number of micro-batches from 1 to {MAX_MICROBATCHES}",
                         example="4,8,16")


def grid(bandwidths: tuple[str, ...], memories: tuple[str, ...],
         devices: tuple[str, ...], objectives: tuple[str, ...] = (DEFAULT_OBJECTIVE,),
         microbatches: tuple[str, ...] = (DEFAULT_MICROBATCHES,)) -> tuple[Setting, ...]:
    """Every combination, in the order given (objective outermost, then micro-batches,
    devices, memory; bandwidth innermost)."""
    return tuple(Setting(b, m, d, o, k) for o in objectives for k in microbatches
                 for d in devices for m in memories for b in bandwidths)


def applies_microbatches(problem: Problem, objective: str) -> bool:
    """Whether a micro-batch count means anything for `problem` under `objective`: the
    point is under the pipeline objective (asked for, or the plan's own)."""
    return objective == "pipeline" or (objective == DEFAULT_OBJECTIVE
                                       and problem.pipeline is not None)


# -- ordering (for sorted output and chart axes) ------------------------------------------


def bandwidth_key(label: str) -> tuple[int, float]:
    """Sort key: factors first (by factor), then absolute rates (by rate)."""
    if label.endswith("x"):
        return (0, parse_number(label[:-1]))
    return (1, _base(label, "bandwidth"))


def memory_key(label: str) -> tuple[int, float]:
    """Sort key: shares first (by share), then absolute sizes (by size)."""
    if label.endswith("%"):
        return (0, parse_number(label[:-1]))
    return (1, _base(label, "size"))


def devices_key(label: str) -> tuple[int, int]:
    """Sort key: counts ascending, `all` last."""
    return (1, 0) if label == DEFAULT_DEVICES else (0, int(label))


def objective_key(label: str) -> int:
    """Sort key: `spec`, `makespan`, `pipeline` (unknown labels last)."""
    return OBJECTIVE_LABELS.index(label) if label in OBJECTIVE_LABELS else len(OBJECTIVE_LABELS)


def microbatches_key(label: str) -> tuple[int, int]:
    """Sort key: `spec` first, then counts ascending."""
    return (0, 0) if label == DEFAULT_MICROBATCHES or not label.isdigit() else (1, int(label))


def setting_key(s: Setting) -> tuple[Any, ...]:
    """Sort key of a setting: bandwidth, then memory, devices, objective, micro-batches."""
    return (bandwidth_key(s.bandwidth), memory_key(s.memory), devices_key(s.devices),
            objective_key(s.objective), microbatches_key(s.microbatches))


#: each swept axis's default label (`Setting`)
AXIS_DEFAULTS = {"bandwidth": DEFAULT_BANDWIDTH, "memory": DEFAULT_MEMORY,
                 "devices": DEFAULT_DEVICES}


def leeway(problem: Problem, axis: str, label: str) -> tuple[float, tuple[int, float]]:
    """How little label `label` of `axis` (`bandwidth`, `memory`, `devices`) constrains
    `problem`: the bandwidth of all its links, the memory of all its devices or the devices
    it keeps, then the label's sort key. Labels of one kind order by their sort keys alone;
    this also orders a share beside a size (`75%` of 8 GiB devices leaves more than `4
    GiB`) and a factor beside a rate."""
    if axis == "devices":
        kept = len(problem.cluster.devices) if label == DEFAULT_DEVICES else int(label)
        return float(kept), devices_key(label)
    if axis == "memory":
        devices = _scaled_memory(problem.cluster.devices, label)
        return float(sum(d.memory_bytes for d in devices)), memory_key(label)
    links = _scaled_bandwidth(problem.cluster.links, label)
    return float(sum(lk.bandwidth_Bps for lk in links)), bandwidth_key(label)


def held_labels(problem: Problem, labels: dict[str, set[str]]) -> dict[str, str]:
    """Per axis of `labels` (its labels swept): the one a chart of another axis holds it
    at, the default when swept, else the least constrained (`leeway`)."""
    held: dict[str, str] = {}
    for axis, swept in labels.items():
        if swept:
            held[axis] = AXIS_DEFAULTS[axis] if AXIS_DEFAULTS[axis] in swept else max(
                swept, key=functools.partial(leeway, problem, axis))
    return held


def _base(label: str, dim: str) -> float:
    number, _, unit = label.partition(" ")
    return parse_number(number) * UNITS[dim][unit]


# -- applying -----------------------------------------------------------------------------


def apply_setting(problem: Problem, setting: Setting) -> tuple[Problem, list[str]]:
    """`problem` under `setting`, and warnings for the row's reason.

    Raises `SettingError` when the setting cannot apply (more devices than the cluster has).
    The input problem is not changed (frozen dataclasses are replaced, never mutated).
    """
    warnings: list[str] = []
    cluster = problem.cluster
    devices = cluster.devices
    links = cluster.links
    pins = dict(problem.pins)
    placement = dict(problem.placement)
    if setting.devices != DEFAULT_DEVICES:
        n = int(setting.devices)
        if n > len(devices):
            raise SettingError(f"--devices {n}: cluster `{cluster.name}` has only "
                               f"{len(devices)} devices")
        devices = devices[:n]
        links = tuple(lk for lk in links if lk.src < n and lk.dst < n)
        warnings += _drop_removed_devices(problem, n, pins, placement)
    if setting.memory != DEFAULT_MEMORY:
        devices = _scaled_memory(devices, setting.memory)
        _within("--memory", setting.memory, "size",
                {d.name: float(d.memory_bytes) for d in devices}, cluster.name)
    if setting.bandwidth != DEFAULT_BANDWIDTH:
        links = _scaled_bandwidth(links, setting.bandwidth)
        _within("--bandwidth", setting.bandwidth, "bandwidth",
                {f"{devices[lk.src].name} -> {devices[lk.dst].name}": lk.bandwidth_Bps
                 for lk in links}, cluster.name)
    pipeline = _pipeline(problem, setting)
    pipelines = pipeline.data_parallel if pipeline is not None else 1
    if pipelines != "auto" and pipelines > len(devices):  # what `check` says of such a spec
        raise SettingError(f"--devices {setting.devices}: plan `{problem.name}`'s "
                           f"`data_parallel {pipelines}` runs {pipelines} pipelines, which "
                           f"need at least {pipelines} devices")
    if devices is cluster.devices and links is cluster.links:
        if pipeline == problem.pipeline:
            return problem, warnings
        return dataclasses.replace(problem, pipeline=pipeline), warnings
    new_cluster = dataclasses.replace(cluster, devices=devices, links=links)
    return dataclasses.replace(problem, cluster=new_cluster, pins=MappingProxyType(pins),
                               placement=MappingProxyType(placement),
                               pipeline=pipeline), warnings


def _within(option: str, label: str, dim: str, values: dict[str, float],
            cluster: str) -> None:
    """`SettingError` where `label` takes a value of `values` (what it set, by name) out of
    the language's range for `dim`, as a spec's own value out of it is refused."""
    low, high = RANGES[dim]
    for name, value in values.items():
        # the language's rule (`units.range_side`: 0 outside; a bound met but for rounding
        # inside), as a spec's own value is judged
        if range_side(value, dim, positive=True) is not None:
            raise SettingError(
                f"{option} {label}: makes `{name}` of cluster `{cluster}` "
                f"{format_quantity(value, dim) if math.isfinite(value) else 'infinite'}, "
                f"outside {format_quantity(low, dim)} to {format_quantity(high, dim)}")


def _drop_removed_devices(problem: Problem, n: int, pins: dict[int, int],
                          placement: dict[int, int]) -> list[str]:
    """Remove from `pins` and `placement` what names a device from the `n`-th on; the
    warnings that say so."""
    cluster, ops = problem.cluster, problem.graph.ops
    removed = {d.name for d in cluster.devices[n:]}
    dropped = sorted((ops[i].name, cluster.devices[d].name) for i, d in pins.items() if d >= n)
    lost_places = sum(1 for d in placement.values() if d >= n)
    for table in (pins, placement):
        for i in [i for i, d in table.items() if d >= n]:
            del table[i]
    warnings = []
    if dropped:
        shown = ", ".join(f"{o}→{d}" for o, d in dropped[:3])
        more = f" and {len(dropped) - 3} more" if len(dropped) > 3 else ""
        warnings.append(f"dropped {len(dropped)} pin(s) to removed devices: {shown}{more}")
    if lost_places:
        warnings.append(f"dropped {lost_places} place(s) on removed devices "
                        f"({', '.join(sorted(removed)[:3])}{'…' if len(removed) > 3 else ''})")
    return warnings


def _scaled_memory(devices: tuple[Device, ...], memory: str) -> tuple[Device, ...]:
    """Each device's cap scaled by a share (`50%`) or set to a size."""
    if memory.endswith("%"):
        share = parse_number(memory[:-1]) / 100.0
        return tuple(dataclasses.replace(d, memory_bytes=int(d.memory_bytes * share))
                     for d in devices)
    cap = int(_base(memory, "size"))
    return tuple(dataclasses.replace(d, memory_bytes=cap) for d in devices)


def _scaled_bandwidth(links: tuple[Link, ...], bandwidth: str) -> tuple[Link, ...]:
    """Each link's bandwidth scaled by a factor (`2x`) or set to a bandwidth."""
    if bandwidth.endswith("x"):
        f = parse_number(bandwidth[:-1])
        return tuple(dataclasses.replace(lk, bandwidth_Bps=lk.bandwidth_Bps * f)
                     for lk in links)
    bw = _base(bandwidth, "bandwidth")
    return tuple(dataclasses.replace(lk, bandwidth_Bps=bw) for lk in links)


def _pipeline(problem: Problem, setting: Setting) -> Pipeline | None:
    """The problem's pipeline under the setting's objective and micro-batches (module
    docstring); `SettingError` for micro-batches without a pipeline, or too many for the
    `pipeline_copies` limit (E016, checked here before the point's work)."""
    if setting.objective == "makespan":
        pipeline = None
    elif setting.objective == "pipeline":
        pipeline = problem.pipeline or Pipeline(microbatches=DEFAULT_PIPELINE_MICROBATCHES)
    elif setting.objective == DEFAULT_OBJECTIVE:
        pipeline = problem.pipeline
    else:
        raise SettingError(f"--objective {setting.objective}: not an objective")
    if setting.microbatches != DEFAULT_MICROBATCHES:
        if pipeline is None:
            raise SettingError(f"--microbatches {setting.microbatches}: plan `{problem.name}` "
                               "is not compared under the pipeline objective")
        pipeline = dataclasses.replace(pipeline, microbatches=int(setting.microbatches))
    if pipeline is not None:  # the point's simulation copies the graph per micro-batch
        ops, edges = len(problem.graph.ops), len(problem.graph.edges)
        copies = limits.pipeline_copies(pipeline.microbatches, ops, edges)
        if copies > limits.active().pipeline_copies:
            raise SettingError(
                f"{pipeline.microbatches} micro-batches of plan `{problem.name}` would copy "
                f"{copies:_} ops and edges, more than the `pipeline_copies` limit "
                f"({limits.active().pipeline_copies:_}, E016); "
                + limits.raise_hint("pipeline_copies", copies, lead="fewer, or"))
    return pipeline
