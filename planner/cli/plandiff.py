"""What changed between two plans: figures (makespan, bound, peak memory per device), the
ops that moved, the devices whose load changed.

A side's `order` (a plan file's, or the ops each device of a `--json` report ran) is
compared too: a device whose kept ops run in another order is listed (`reordered`), with
how many of them changed position, though no op moved.

A side is read from a plan file (`solve --out`: a placement and an order, no figures), a
`solve --json` / `simulate --json` document (figures in its `result`), the JSON of
`export torch --pipeline` (the split it exports, as `simulate --placement` reads it), or a
bare `{"placement": {op: device}}`. With a spec, sides without figures are simulated (both,
so that the two are judged by one model); without one, only the placements are compared.

A pipeline plan (`objective pipeline`) is judged as the pipeline runs it, as `solve` judges
it: its iteration (with the plan file's `replicas` and `recompute`) is the figure compared
and gated, its memory and devices' busy time the pipeline's (a replica's included), and it
is feasible when it runs (`pipeline.verdict`), its bound the iteration's
(`pipeline.bound`); one pass's makespan and bound are shown beside them. A
hybrid plan's replica groups and the devices that recompute are part of the plan: a change
of them is listed (`regrouped`, `recompute`), and the devices it touches count as changed,
though no op moved.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..bounds import lower_bound
from ..errors import Diagnostic, JsonSpans, Span, SpecError, UsageError
from ..pipeline.bound import pipeline_bound
from ..pipeline.schedule import run as run_pipeline
from ..pipeline.verdict import pipeline_breaks
from ..plan import (
    check_shapes,
    load_plan,
    load_recompute,
    load_replicas,
    order_of,
    placement_of_wrong_type,
)
from ..simulate import simulate
from ..spec.load import load_path
from .difffigures import check_figures
from .given import exported, made_for, one_plan_of, parsed_json
from .runs import problem_of

if TYPE_CHECKING:
    from ..model import Problem

PLAN_FORMAT = "planner.plan"


@dataclass(frozen=True, slots=True)
class DeviceLoad:
    """One device's share of a plan (None: not known without a simulation)."""

    ops: int
    busy_s: float | None = None
    memory_peak_bytes: int | None = None
    memory_cap_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"ops": self.ops, "busy_s": self.busy_s,
                "memory_peak_bytes": self.memory_peak_bytes,
                "memory_cap_bytes": self.memory_cap_bytes}


@dataclass
class Side:
    """One plan as read (and perhaps simulated)."""

    file: str
    data: dict[str, Any]  # what `load_plan` reads: at least {"placement": {...}}
    #: the file's text and where `data` is in it (a command's envelope holds it as `result`)
    text: str | None = None
    at: tuple[str, ...] = ()
    plan: str | None = None
    algorithm: str = ""
    source: str = "placement"  # figures: from the file; simulated: with --spec
    makespan_s: float | None = None
    lower_bound_s: float | None = None
    feasible: bool | None = None
    devices: dict[str, DeviceLoad] = field(default_factory=dict)
    #: a pipeline plan's iteration (None for one pass's plan, or not known)
    iteration_s: float | None = None
    #: a pipeline plan whose iteration never ends (its stages wait on each other): no
    #: iteration, and no one-pass plan either (before: said to be one, and gated E644)
    never_ends: bool = False
    #: the lower bound on that iteration (`pipeline.bound`; `lower_bound_s` is one pass's)
    iteration_bound_s: float | None = None
    #: a hybrid plan's replicated stages: a stage's device -> its group, itself first
    replicas: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the devices that recompute their activations
    recompute: tuple[str, ...] = ()
    #: each device's ops in the order the file gives (none: the simulator chooses)
    order: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def placement(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.data["placement"].items()}

    @property
    def has_figures(self) -> bool:
        return self.makespan_s is not None

    @property
    def knows_cluster(self) -> bool:
        """Whether `devices` are its cluster's, every one (a report's or a simulation's),
        not only those a placement names."""
        return self.source != "placement"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "plan": self.plan, "algorithm": self.algorithm,
                "source": self.source, "makespan_s": self.makespan_s,
                "lower_bound_s": self.lower_bound_s, "feasible": self.feasible,
                "iteration_s": self.iteration_s, "iteration_bound_s": self.iteration_bound_s,
                "iteration_never_ends": self.never_ends,
                "replicas": {k: list(g) for k, g in self.replicas.items()},
                "recompute": list(self.recompute),
                "devices": [{"name": n, **d.to_json()} for n, d in self.devices.items()]}


_PLAN_HINT = ("give a plan file (`planner solve --out PLAN.json`) or the output of "
              "`planner solve --json` / `planner simulate --json`")


def _not_a_plan(shown: str, why: str) -> SpecError:
    return SpecError(Diagnostic("E642", f"no plan in {shown}: {why}", Span.start_of(shown),
                                (_PLAN_HINT,)))


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def read_side(path: Path) -> Side:
    """Read one side; E642 for a file that holds no plan (E001-E004 to read it; invalid JSON
    as `simulate --placement` reports it, `given.parsed_json`)."""
    shown, text, data = parsed_json(path, "E642")
    if not isinstance(data, dict):
        raise _not_a_plan(shown, "a JSON object was expected")
    at: tuple[str, ...] = ()
    if "format_version" in data:  # a command's envelope: the plan is its result
        data, at = _result_of(data, shown), ("result",)
    data = exported(data, JsonSpans(shown, text, at))  # `export torch --pipeline`'s: its plan
    if data.get("format", PLAN_FORMAT) != PLAN_FORMAT:
        raise _not_a_plan(shown, f"unknown format {data.get('format')!r}")
    if not isinstance(data.get("placement"), Mapping):
        wrong = placement_of_wrong_type(data)
        if wrong:  # at the value (`"placement": false`), as simulate reports it
            raise SpecError(Diagnostic(
                "E642", f"no plan in {shown}: `placement` is {wrong}, not an object of op "
                "names to device names", JsonSpans(shown, text, at)("placement"),
                (_PLAN_HINT,)))
        raise _not_a_plan(shown, "no `placement` object")
    check_shapes(data, shown, text, at)  # null means absent; a wrong type is no plan's
    check_figures(data, shown, text, at)  # a report's, compared as written
    side = Side(shown, data, text, at,
                data.get("plan") if isinstance(data.get("plan"), str) else None,
                str(data.get("algorithm") or ""))
    side.replicas, side.recompute = _groups(data.get("replicas")), _names(data.get("recompute"))
    side.order = _order(order_of(data))
    counts = _counts(side.placement)
    if _number(data.get("makespan_s")) is not None:
        side.source = "figures"
        side.makespan_s = _number(data.get("makespan_s"))
        side.lower_bound_s = _number(data.get("lower_bound_s"))
        side.feasible = bool(data.get("feasible", True)) and data.get("status") != "infeasible"
        for d in data.get("devices") or []:
            if isinstance(d, dict) and isinstance(d.get("name"), str):
                side.devices[d["name"]] = DeviceLoad(
                    counts.get(d["name"], 0), _number(d.get("busy_s")),
                    _int(d.get("memory_peak_bytes")), _int(d.get("memory_cap_bytes")))
        _pipeline_figures(side, data.get("pipeline"))
    for name, n in counts.items():
        side.devices.setdefault(name, DeviceLoad(n))
    return side


def _result_of(envelope: dict[str, Any], shown: str) -> dict[str, Any]:
    """A command's `--json` envelope's plan; E642 for a run that failed, or one whose
    result holds none (`compare`'s rows, `check`'s counts)."""
    result, run = envelope.get("result"), envelope.get("command")
    if isinstance(result, dict) and "placement" in result:
        return result
    named = (f"the `{run}` run" if isinstance(run, str) else "the run") + " it records"
    why = (" (it failed)" if envelope.get("ok") is not True else "" if result is None
           else " (a `solve` or `simulate` run's result does)")
    raise _not_a_plan(shown, named + (" has no result" if result is None else
                                      " holds no plan") + why)


def _pipeline_figures(side: Side, pipeline: Any) -> None:
    """A `--json` report's pipeline (`result.pipeline`): its iteration, whether it fits, and
    each device's memory and busy time as the pipeline holds and runs it (as `solve`'s
    pipeline view shows them: a replica runs its stage's micro-batches with no op placed)."""
    if not isinstance(pipeline, dict):
        return
    side.iteration_s = _number(pipeline.get("iteration_s"))
    side.never_ends = side.iteration_s is None
    side.iteration_bound_s = _number(pipeline.get("iteration_bound_s"))
    side.feasible = bool(side.feasible) and pipeline.get("fits", True) is not False
    for d in pipeline.get("devices") or []:
        if isinstance(d, dict) and d.get("name") in side.devices:
            side.devices[d["name"]] = dataclasses.replace(
                side.devices[d["name"]], memory_peak_bytes=_int(d.get("memory_bytes")),
                busy_s=_number(d.get("busy_s")))


def _groups(raw: Any) -> dict[str, tuple[str, ...]]:
    """A file's `replicas` as written (`load_replicas` checks them against a spec): the
    well-formed groups of two devices or more."""
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): tuple(v) for k, v in raw.items()
            if isinstance(v, list) and len(v) > 1 and all(isinstance(n, str) for n in v)}


def _names(raw: Any) -> tuple[str, ...]:
    """A file's `recompute` as written: its device names, sorted."""
    return tuple(sorted({n for n in raw if isinstance(n, str)})) if isinstance(raw, list) else ()


def _order(raw: Any) -> dict[str, tuple[str, ...]]:
    """A file's order as written (`load_plan` checks it against a spec): the devices whose
    entry is a list of op names."""
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): tuple(v) for k, v in raw.items()
            if isinstance(v, list) and all(isinstance(n, str) for n in v)}


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _counts(placement: Mapping[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for dev in placement.values():
        out[dev] = out.get(dev, 0) + 1
    return out


def simulate_side(side: Side, problem: Any, plans: Collection[str] = ()) -> None:
    """Fill `side`'s figures by simulating its plan on `problem` (E503-E505 when the plan
    does not fit the spec; E516 for a file made for another of the spec's `plans`); a
    pipeline plan as the pipeline runs it (the module docstring)."""
    where = JsonSpans(side.file, side.text, side.at)
    made_for(problem, side.data, plans, where)
    try:
        plan = load_plan(problem, side.data, side.file, side.text, side.at)
    except SpecError as err:
        raise SpecError(_other_graph_hint(err.diagnostics)) from None
    result = simulate(problem, plan)
    devs = problem.cluster.devices
    side.source = "simulated"
    side.plan = problem.name
    side.makespan_s = _number(result.makespan_s)
    side.lower_bound_s = _number(lower_bound(problem).makespan_s)
    side.feasible = result.feasible
    peaks = [int(b) for b in result.memory_peak_bytes]
    busy = [float(b) for b in result.busy_s]
    if problem.pipeline is not None:
        replicas = load_replicas(problem, side.data, plan.placement, side.file, side.text,
                                 side.at)
        again = load_recompute(problem, side.data, side.file, side.text, side.at, replicas,
                               plan.placement)
        index = problem.cluster.device_index
        run = run_pipeline(problem, plan.placement, problem.pipeline,
                           [index[n] for n in again], replicas)
        side.iteration_s = _number(run.iteration_s)
        side.never_ends = side.iteration_s is None
        # as `solve` bounds it: a plan's replicas allow replicated stages
        side.iteration_bound_s = _number(pipeline_bound(
            problem, side.lower_bound_s or 0.0, replicated=bool(replicas)).iteration_s)
        side.feasible = not pipeline_breaks(problem, result, run)
        peaks = [int(b) for b in run.memory_bytes]
        busy = [float(b) for b in run.busy_s]  # over the iteration, replicas' included
    placed = _counts(side.placement)  # the ops placed there (a deadlock runs fewer)
    side.devices = {dev.name: DeviceLoad(placed.get(dev.name, 0), busy[d], peaks[d],
                                         int(dev.memory_bytes))
                    for d, dev in enumerate(devs)}


#: a plan file's ops that the spec's graph lacks (E503) or places not (E505): a graph changed
_OTHER_OPS = ("E503", "E505")


def _other_graph_hint(diags: tuple[Diagnostic, ...]) -> list[Diagnostic]:
    """`diags` with a hint on the first E503/E505: a file made before the graph changed
    (an op renamed, added) needs no simulation on today's spec; `solve --json` outputs carry
    their own figures (docs/ci.md)."""
    out, hinted = list(diags), False
    for k, d in enumerate(out):
        if d.code in _OTHER_OPS and not hinted:
            hinted = True
            out[k] = dataclasses.replace(d, hints=(*d.hints, (
                f"if {d.span.file if d.span else 'the file'} was made before the graph "
                "changed (an op renamed or added), diff the two `planner solve SPEC --json` "
                "outputs instead: each carries its own figures, and needs no --spec")))
    return out


def spec_problem(spec: Path, plan: str | None, old: Side) -> tuple[Problem, list[str]]:
    """The spec's plan to simulate both sides with: `--plan`, else the plan the old file
    names when the spec has it, else the spec's only plan (E602 otherwise); and the names
    of the spec's plans."""
    loaded = load_path(spec)
    plans = loaded.spec.plans
    name = plan if plan is not None else (old.plan if old.plan in plans else None)
    return problem_of(loaded, name), list(plans)


def one_plan(old: Side, new: Side, plans: Collection[str]) -> None:
    """E516 where the two files name two plans of the spec (`given.one_plan_of`)."""
    if old.plan is not None and new.plan is not None:
        one_plan_of((old.file, old.plan), (new.file, new.plan), plans,
                    JsonSpans(new.file, new.text, new.at))


@dataclass(frozen=True, slots=True)
class PlanDiff:
    """What changed from `old` to `new`."""

    old: Side
    new: Side
    moved: tuple[tuple[str, str, str], ...]  # (op, old device, new device), in new's order
    added: tuple[str, ...]
    removed: tuple[str, ...]
    devices: tuple[str, ...]  # every device either side knows, old's order first
    changed_devices: tuple[str, ...]
    #: (stage's device, old group, new group) for each replicated stage whose group changed
    regrouped: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
    #: (device, ops that changed position, ops it keeps) for each device whose kept ops
    #: (on it in both plans) run in another order
    reordered: tuple[tuple[str, int, int], ...] = ()
    #: the devices of one side's cluster only, where both sides know their cluster's
    devices_added: tuple[str, ...] = ()
    devices_removed: tuple[str, ...] = ()

    @property
    def recompute_changed(self) -> bool:
        return self.old.recompute != self.new.recompute

    @property
    def measure(self) -> tuple[str, float | None, float | None]:
        """The figure the plans are compared by, old and new: the iteration where both are
        a pipeline's, else the makespan."""
        if any(s.iteration_s is not None or s.never_ends for s in (self.old, self.new)):
            return "iteration", self.old.iteration_s, self.new.iteration_s
        return "makespan", self.old.makespan_s, self.new.makespan_s

    @property
    def slower_pct(self) -> float | None:
        """How much slower the new plan is, in % of the old `measure` (negative: faster);
        0 for figures equal to a billionth (one schedule's float sums in another order:
        1f1b's and gpipe's iteration, 0.17356431825166696 and ...693 s, is one)."""
        _, a, b = self.measure
        if a is None or b is None:
            return None
        if math.isclose(a, b, rel_tol=1e-9):
            return 0.0
        if a <= 0:
            return 0.0 if b <= a else math.inf
        return (b - a) / a * 100

    def to_json(self) -> dict[str, Any]:
        pct = self.slower_pct
        return {"old": self.old.to_json(), "new": self.new.to_json(),
                "measure": self.measure[0],
                "slower_pct": pct if pct is None or math.isfinite(pct) else None,
                "moved": [{"op": o, "from": a, "to": b} for o, a, b in self.moved],
                "added": list(self.added), "removed": list(self.removed),
                "regrouped": [{"stage": k, "from": list(a), "to": list(b)}
                              for k, a, b in self.regrouped],
                "reordered": [{"device": dev, "ops_changed_position": n, "ops_kept": m}
                              for dev, n, m in self.reordered],
                "recompute_changed": self.recompute_changed,
                "devices_changed": list(self.changed_devices),
                "devices_added": list(self.devices_added),
                "devices_removed": list(self.devices_removed)}


def compare(old: Side, new: Side) -> PlanDiff:
    """The differences between two sides; E647 when they share no op (plans of two graphs:
    a gate between them would pass whatever they cost)."""
    a, b = old.placement, new.placement
    if a and b and a.keys().isdisjoint(b):
        raise UsageError(Diagnostic(
            "E647", f"{old.file} and {new.file} share no op: they are plans of different "
                    "graphs", None,
            ("diff two plans of one spec: before and after a change of the plan, the "
             "algorithm or the spec",)))
    moved = tuple((op, a[op], dev) for op, dev in b.items() if op in a and a[op] != dev)
    devices = tuple(dict.fromkeys([*old.devices, *new.devices]))
    empty = DeviceLoad(0)
    regrouped = tuple((k, old.replicas.get(k, (k,)), new.replicas.get(k, (k,)))
                      for k in dict.fromkeys([*old.replicas, *new.replicas])
                      if old.replicas.get(k, (k,)) != new.replicas.get(k, (k,)))
    roles_a, roles_b = roles(old), roles(new)
    came, gone = _only_in(new, old), _only_in(old, new)
    changed = tuple(d for d in devices
                    if _load_changed(old.devices.get(d, empty), new.devices.get(d, empty))
                    or any(d in (x, y) for _, x, y in moved)
                    or roles_a.get(d) != roles_b.get(d) or d in gone or d in came)
    return PlanDiff(old, new, moved, tuple(op for op in b if op not in a),
                    tuple(op for op in a if op not in b), devices, changed, regrouped,
                    _reordered(old, new, devices), came, gone)


def _only_in(side: Side, other: Side) -> tuple[str, ...]:
    """The devices of `side`'s cluster that `other`'s lacks, where both know their
    cluster's (a placement names only the devices its ops use)."""
    if not (side.knows_cluster and other.knows_cluster):
        return ()
    return tuple(d for d in side.devices if d not in other.devices)


def _reordered(old: Side, new: Side, devices: tuple[str, ...]
               ) -> tuple[tuple[str, int, int], ...]:
    """(device, ops at another position, ops kept) for each device that both files give an
    order of and whose kept ops (placed on it in both) run in another order; the ops that
    moved to or from it change no position of the others."""
    a, b = old.placement, new.placement
    out = []
    for dev in devices:
        if dev not in old.order or dev not in new.order:
            continue
        was = [op for op in old.order[dev] if a.get(op) == dev == b.get(op)]
        now = [op for op in new.order[dev] if a.get(op) == dev == b.get(op)]
        if len(set(was)) != len(was) or sorted(was) != sorted(now):
            continue  # an order that repeats or lacks an op: no position to compare
        shifted = sum(x != y for x, y in zip(was, now, strict=True))
        if shifted:
            out.append((dev, shifted, len(was)))
    return tuple(out)


def roles(side: Side) -> dict[str, tuple[str, bool]]:
    """What a device does beyond its placed ops: the stage it is a replica of (its
    stage's device), and whether it recomputes."""
    out = {d: (k, False) for k, g in side.replicas.items() for d in g[1:]}
    for d in side.recompute:
        out[d] = (out.get(d, ("", False))[0], True)
    return out


def _load_changed(a: DeviceLoad, b: DeviceLoad) -> bool:
    """Whether a device's load differs: its op count, and its busy time where both sides
    know it (a plan file has none: one side unknown is no change, as the text shows)."""
    if a.ops != b.ops:
        return True
    if a.busy_s is None or b.busy_s is None:
        return False
    # busy time rounded to a nanosecond: equal schedules re-timed give equal loads
    return round(a.busy_s, 9) != round(b.busy_s, 9)
