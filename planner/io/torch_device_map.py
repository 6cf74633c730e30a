"""A plan as an accelerate `device_map`, and the nearest module-level plan when it is none.

Hugging Face accelerate's `dispatch_model(model, device_map)` (and transformers'
`from_pretrained(..., device_map=...)`) puts every module named in the map on its device
and hooks it so that its inputs move there when it is called. Code that is not a module
call (`x + y`, a view, a mask built in a model's forward()) runs where its inputs already
are. So a placement is a device map exactly when every tensor that crosses devices enters
a module call that runs wholly on one device (as do the module's other calls).
`device_map(...)` gives the map (keyed by the outermost module calls that run on one
device), or None and the first op that breaks the rule. Its keys are module paths only
(accelerate's `check_device_map` warns of any other): a tensor read by code outside them
is keyed by the module holding it (`""`, the model itself, for ViT's `class_token`), which
`dispatch_model`'s hook of that module places.

For a plan that is no device map, `nearest(...)` builds module-level alternatives: for each
depth D, every module call at depth at most D (`--granularity module:D`) goes to the
device holding most of its FLOPs in the plan (its nodes, the first device on ties), or to the
device its ops are pinned to (a spec's `pin`), and code between calls goes with the ops whose
tensors it reads (so that it needs no copy); the alternative that simulates fastest
(planner's simulator, on the plan's own spec: memory caps and pins included) among those
that break no rule of the spec is offered with its cost next to the plan's, else the fastest
with what it breaks (a module holding ops pinned to two devices, at every depth: no
module-level plan keeps both pins). `planner export torch --nearest` exports one that
fits and refuses one that does not.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..disjoint import Disjoint
from ..model import Problem
from ..plan import Plan
from ..simulate import simulate
from ..units import format_seconds
from ..workload.training import BWD_SUFFIX
from .torch_import import Traced
from .torch_units import Unit, stack_of, units

__all__ = ["Alternative", "device_map", "nearest"]


def _value(torch_device: str) -> int | str:
    """accelerate's spelling: `cuda:N` as N."""
    return int(torch_device.split(":")[1]) if re.fullmatch(r"cuda:\d+", torch_device) \
        else torch_device


def device_map(traced: Traced, where: Mapping[str, str], devices: Mapping[str, str],
               owners: Mapping[str, str]) -> tuple[dict[str, int | str] | None, str]:
    """The accelerate map of the placement `where` ({fx node: spec device}), or None and
    why (see the module docstring). Its keys are the outermost module calls that run on one
    device (all calls of that module on the same one); code outside them must take its
    tensors from its own device. Every key is a module path (see `_held`)."""
    inputs = {n.name for u in traced.units if u.is_input for n in u.nodes}
    nodes = [n for n in traced.nodes() if n.name not in inputs]
    chosen, why = _mapped_modules(traced, where, nodes, inputs)
    if chosen is None:
        return None, why
    out: dict[str, int | str] = {m: _value(devices[d]) for m, d in chosen.items()}
    first = next((where[n.name] for n in nodes), None)
    model = traced.model if hasattr(traced.model, "named_buffers") else traced.gm
    return _with_held_tensors(model, out, {k: _value(devices[d]) for k, d in owners.items()},
                              _value(devices[first]) if first is not None else 0)


def _with_held_tensors(model: Any, out: dict[str, int | str], owners: Mapping[str, int | str],
                       first: int | str) -> tuple[dict[str, int | str] | None, str]:
    """The map `out` (the mapped modules) with keys for the tensors outside them: a module
    code calls outside them by its path, a tensor by the module holding it (`_held`), and the
    modules inside two keys (`_nested`); and its note, or None and why."""
    modules = dict(model.named_modules())
    read: dict[str, int | str] = {}  # tensors that code (not a mapped module) reads
    for key, dev in owners.items():
        if not _covers(out, key):
            (out if key in modules else read)[key] = dev
    held, why = _held(model, out, read, first)
    if held is None:
        return None, why
    note = "every tensor that crosses devices enters a module"
    outer = [h for h in held if h == "" or any(k.startswith(f"{h}.") for k in out)]
    out.update(held)
    if outer:
        out = _nested(model, out)
    named = [t for t in read if t.rpartition(".")[0] in held]
    if named:
        note += _held_note(named, held)
    return out, note


def _covers(keys: Mapping[str, object], name: str) -> bool:
    return any(name == k or name.startswith(f"{k}.") for k in keys)


def _held(model: Any, out: Mapping[str, int | str], read: Mapping[str, int | str],
          first: int | str) -> tuple[dict[str, int | str] | None, str]:
    """{module path: device} keying the modules that hold a tensor no key covers (`""`: the
    model itself), or None and why. accelerate's `check_device_map` warns of a key that
    names no module, and its hooks place a module's own tensors with the module, so such a
    tensor is keyed by its module, on the device of the code that reads it (else the first
    node's device); one module's tensors read on two devices can have no key."""
    held: dict[str, int | str] = {}
    reader: dict[str, str] = {}
    for name, _ in (*model.named_parameters(), *model.named_buffers()):
        if _covers(out, name):
            continue
        holder = name.rpartition(".")[0]
        if name not in read:
            held.setdefault(holder, first)
            continue
        if holder in reader and held[holder] != read[name]:
            return None, (f"`{reader[holder]}` and `{name}`, tensors of "
                          f"{f'`{holder}`' if holder else 'the model itself'}, are read on "
                          "two devices; accelerate puts a module's own tensors on one")
        reader.setdefault(holder, name)
        held[holder] = read[name]
    return held, ""


def _nested(model: Any, out: dict[str, int | str]) -> dict[str, int | str]:
    """`out` in the modules' order, and a key for each module that holds a tensor and lies
    in two keys: `dispatch_model` hooks it with the outer key's device but the inner key
    puts its tensors on the inner one (keying it gives it its own hook)."""
    order = {path: k for k, (path, _) in enumerate(model.named_modules())}
    for path, module in model.named_modules():
        if path in out or next(module.parameters(), next(module.buffers(), None)) is None:
            continue
        around = [k for k in out if k == "" or path.startswith(f"{k}.")]
        if len(around) > 1:
            out[path] = out[max(around, key=len)]
    return dict(sorted(out.items(), key=lambda kv: order[kv[0]]))


def _held_note(named: list[str], held: Mapping[str, int | str]) -> str:
    """What a user needs to know of the tensors `named` that code outside mapped modules
    reads, keyed by the modules holding them (`held`)."""
    note = (f"; {len(named)} tensor(s) read outside any mapped module (`{named[0]}`"
            f"{', ...' if len(named) > 1 else ''}) are keyed by the module holding them")
    if "" in held:  # its default is the first GPU of a set, not the map's first
        note += ("; `\"\"` is the model itself, whose own tensors dispatch_model puts on "
                 f"its main_device: pass main_device={held['']!r}")
    return note


def _mapped_modules(traced: Traced, where: Mapping[str, str], nodes: list[Any],
                    inputs: set[str]) -> tuple[dict[str, str] | None, str]:
    """{module path: spec device} of the outermost module calls whose nodes all run on one
    device, or None and why when code outside them takes a tensor from another device."""
    names = traced.names
    stacks = {n.name: stack_of(n) for n in nodes}
    on: dict[str, set[str]] = {}  # module path -> devices its calls' nodes run on
    for n in nodes:
        for _, path, _ in stacks[n.name]:
            on.setdefault(path, set()).add(where[n.name])
    chosen: dict[str, str] = {}
    for n in nodes:
        mapped = next((p for _, p, _ in stacks[n.name] if len(on[p]) == 1), None)
        if mapped is not None:
            chosen[mapped] = where[n.name]
            continue
        for a in n.all_input_nodes:  # code outside every mapped module
            if a.name in names and a.name not in inputs and a.name in traced.tensors \
                    and where[a.name] != where[n.name]:
                return None, (f"`{names[n.name]}` is code outside any module that runs on one "
                              f"device, and takes `{names[a.name]}` from another device; "
                              "accelerate's hooks move only a module's inputs")
    return chosen, ""


@dataclass
class Alternative:
    """A module-level plan near a plan that is no device map."""

    granularity: str
    placement: dict[str, str]  # spec op -> spec device
    makespan_s: float
    plan_makespan_s: float
    fits: bool  # the simulator finds no violation of the spec: memory, pins, ...
    why: str = ""  # the first violation, where it does not fit

    def describe(self) -> str:
        """One line: what it is and what it costs."""
        head = (f"the nearest module-level plan ({self.granularity}) simulates at "
                f"{format_seconds(self.makespan_s)}")
        if not math.isfinite(self.plan_makespan_s):
            head += (" (the plan itself breaks the spec's rules: `planner simulate` with it "
                     "says how)")
        else:
            extra = (self.makespan_s / self.plan_makespan_s - 1.0) * 100 \
                if self.plan_makespan_s > 0 else 0.0
            extra = 0.0 if abs(extra) < 0.05 else extra  # no "-0.0%"
            head += (f" against the plan's {format_seconds(self.plan_makespan_s)} "
                     f"({extra:+.1f}%)")
        return head + ("" if self.fits else f"; it breaks the spec ({self.why})")


def nearest(traced: Traced, problem: Problem, plan: Plan) -> Alternative | None:
    """The best module-level alternative to `plan`, or None when the model has no module
    calls (see the module docstring). Alternatives run in the simulator's default order."""
    ops = problem.graph.ops
    devs = problem.cluster.devices
    placement = {ops[i].name: devs[d].name for i, d in enumerate(plan.placement)}
    node_dev = {n: placement[op] for n, op in traced.names.items() if op in placement}
    pinned = {ops[i].name.removesuffix(BWD_SUFFIX): devs[d].name  # a backward op's: its
              for i, d in problem.pins.items()}  # forward op's (a spec colocates them, E258)
    plan_s = simulate(problem, plan).makespan_s
    best: Alternative | None = None
    depth, seen = 1, None
    while True:
        found = units(traced.gm, traced.method, f"module:{depth}")
        shape = [len(u.nodes) for u in found]
        if shape == seen or depth > 64:
            break
        seen = shape
        moved = _assign(traced, problem, found, node_dev, pinned)
        spec_placement = {op: moved[n] for n, op in traced.names.items()}
        for op in ops:  # a training step's backward ops go where their forward ops do
            forward = op.name.removesuffix(BWD_SUFFIX)
            if op.name not in spec_placement and forward in spec_placement:
                spec_placement[op.name] = spec_placement[forward]
        makespan, why = _makespan(problem, spec_placement)
        alt = Alternative(f"module:{depth}", spec_placement, makespan, plan_s, not why, why)
        if best is None or (alt.fits, -alt.makespan_s) > (best.fits, -best.makespan_s):
            best = alt
        depth += 1
    return best


# complex: three unions (calls of one module, code between calls, spec colocations), then a
# FLOP vote per group; they share `unit_of` and the union-find, the vote reads them all
def _assign(traced: Traced, problem: Problem, found: list[Unit],
            node_dev: Mapping[str, str], pinned: Mapping[str, str]) -> dict[str, str]:
    """fx node -> device: module calls, each with the code that reads its tensors and with
    the ops the spec colocates with it, on the device its ops are pinned to (`pinned`: spec
    op -> device), else on the device holding most of their FLOPs. A group with ops pinned
    to two devices goes by FLOPs: the simulator reports the pin it breaks."""
    unit_of = {n.name: k for k, u in enumerate(found) for n in u.nodes}
    groups: Disjoint[int] = Disjoint()  # over the units' positions: `units` names may repeat
    join, root = groups.union, groups.find

    first_call: dict[str, int] = {}
    for k, u in enumerate(found):
        if u.module:
            join(first_call.setdefault(u.module, k), k)
        if u.module or u.is_input:
            continue
        for n in u.nodes:
            for a in n.all_input_nodes:
                j = unit_of.get(a.name)
                if j is not None and j != k and not found[j].is_input \
                        and a.name in traced.tensors:
                    join(j, k)
    by_op = {op: n for n, op in traced.names.items()}
    for group in problem.graph.colocations:
        members = [unit_of[by_op[problem.graph.ops[i].name]] for i in group
                   if problem.graph.ops[i].name in by_op]
        for k in members[1:]:
            join(members[0], k)
    weight: dict[int, dict[str, float]] = {}
    for k, u in enumerate(found):
        w = weight.setdefault(root(k), {})
        for n in u.nodes:
            d = node_dev[n.name]
            w[d] = w.get(d, 0.0) + traced.flops.get(n.name, 0.0) + 1e-9
    pins = _group_pins(traced, found, root, pinned)
    out: dict[str, str] = {}
    for k, u in enumerate(found):
        w, to = weight[root(k)], pins.get(root(k), set())
        # its one pin's device, else the first of the heaviest (dict order)
        dev = next(iter(to)) if len(to) == 1 else max(w, key=lambda d: w[d])
        for n in u.nodes:
            out[n.name] = dev
    _inputs_to_readers(traced, found, unit_of, pins, root, out)
    return out


def _inputs_to_readers(traced: Traced, found: list[Unit], unit_of: Mapping[str, int],
                       pins: Mapping[int, set[str]], root: Callable[[int], int],
                       out: dict[str, str]) -> None:
    """A model input that is not pinned goes where its readers went, to the device whose
    readers compute most (before: it stayed on its op's device, and the plan paid a copy to
    readers that moved: 4.3 us where 2.3 us ran, `--nearest`)."""
    for k, u in enumerate(found):
        if not u.is_input or pins.get(root(k)):
            continue
        reads: dict[str, float] = {}
        for n in u.nodes:
            for user in n.users:
                j = unit_of.get(user.name)
                if j is not None and j != k:
                    d = out[user.name]
                    reads[d] = reads.get(d, 0.0) + traced.flops.get(user.name, 0.0) + 1e-9
        if reads:
            dev = max(reads, key=lambda d: reads[d])
            for n in u.nodes:
                out[n.name] = dev


def _group_pins(traced: Traced, found: list[Unit], root: Callable[[int], int],
                pinned: Mapping[str, str]) -> dict[int, set[str]]:
    """Group (its root unit) -> the devices its ops are pinned to."""
    out: dict[int, set[str]] = {}
    for k, u in enumerate(found):
        for n in u.nodes:
            dev = pinned.get(traced.names.get(n.name, ""))
            if dev is not None:
                out.setdefault(root(k), set()).add(dev)
    return out


def _makespan(problem: Problem, placement: Mapping[str, str]) -> tuple[float, str]:
    """Simulated makespan of `placement` under the spec's models, and the first rule of the
    spec it breaks ("" when it breaks none: it fits)."""
    index = problem.cluster.device_index
    plan = Plan(tuple(index[placement[o.name]] for o in problem.graph.ops))
    result = simulate(problem, plan)
    first = next(iter(result.violations), None)
    return result.makespan_s, "" if first is None else f"{first.kind}: {first.message}"
