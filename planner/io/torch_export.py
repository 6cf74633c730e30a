"""Apply a plan to a PyTorch model: an fx GraphModule with its ops on the planned devices.

`apply_plan(traced, placement, devices)` takes a model captured by `planner.io.torch_import`
(so op names are the importer's; an op may be several nodes of the graph), a placement
`{op: spec device}` (a plan's `placement`) and a map `{spec device: torch device}`, and
returns a `Placed` model, which takes the inputs the captured graph takes:

- every module an op calls, and every tensor read by attribute, is moved to its op's device
  (colocation in the imported spec keeps a module's calls on one device); a tensor that ops
  on several devices read (a tied weight, `tie` in the spec) stays on its first user's and
  is copied to each other device (`.to()`, listed in `copies` under the attribute's name),
  so that autograd sums its gradient into the one parameter;
- an input (placeholder) is moved to its op's device as it enters (a no-op when the caller
  already put it there);
- on every edge whose producer and consumer the plan puts on different *spec* devices, one
  `x.to(device)` is inserted, shared by every consumer on that device: one copy per tensor
  and destination, as planner's cost model counts them. Two spec devices mapped to one torch
  device (every device on `cpu`, to check a plan numerically) still get their copies, so
  the copies always match the plan's cross-device edges;
- ops run in the traced order, which is a valid topological order;
- in a graph `torch.export` captured, devices baked in from the example (`arange(...,
  device=cpu)`, `x.to(cpu)`) follow their op's device, and export's checks of its own
  assumptions about the example (`_assert_tensor_metadata`, input guards) are left out;
- the backward ops of a `--training` spec (`x.bwd`, colocated with `x`) need nothing: autograd
  runs each where its forward op ran, `.to()` included.

`device_map` is the placement as `{module path: device}` in the form Hugging Face
accelerate's `dispatch_model(model, device_map)` takes (`cuda:N` as `N`) when the plan has
one, else None with the reason in `device_map_note` (`planner.io.torch_device_map`, which
also finds the nearest module-level plan).

Devices of the spec map to torch devices by `device_map` given by the user, else by kind:
a device whose kind (or name) starts with `cpu` is `cpu`; any other is `cuda:N`, N being the
digits ending its name (`gpu3` -> `cuda:3`), or its position among the accelerators (for
every accelerator where the digits would give two devices one number, as for two nodes'
`n0.gpu0` and `n1.gpu0`); a `--device-map` that puts a device where the rule puts another
is E930.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import Diagnostic, SpecError, UsageError, did_you_mean
from ..model import Problem
from ..units import format_bytes
from ..workload.roofline import PROFILES
from ..workload.training import BWD_SUFFIX
from .device_map import torch_device_names
from .torch_device_map import device_map
from .torch_import import Traced, require_torch, to_workload
from .torch_load import quiet_copy


@dataclass
class Placed:
    """A model with a plan applied (see the module docstring)."""

    module: Any  # torch.fx.GraphModule
    #: (producer op, spec device) of every inserted `.to()` at a cross-device edge
    copies: list[tuple[str, str]] = field(default_factory=list)
    #: (input op, spec device) of the inputs moved as they enter
    inputs: list[tuple[str, str]] = field(default_factory=list)
    devices: dict[str, str] = field(default_factory=dict)
    #: module path or tensor attribute -> the spec device of the ops that use it
    owners: dict[str, str] = field(default_factory=dict)
    device_map: dict[str, int | str] | None = None
    device_map_note: str = ""


def torch_devices(cluster: Any, given: Mapping[str, str] | None = None) -> dict[str, str]:
    """`{spec device: torch device string}` for the devices of `cluster` (see module doc)."""
    torch = require_torch()
    names = [d.name for d in cluster.devices]
    given = dict(given or {})
    for name, value in given.items():
        if name not in names:
            raise UsageError(Diagnostic("E930", f"--device-map names `{name}`, no device of "
                                        f"cluster `{cluster.name}`", None,
                                        did_you_mean(name, names)))
        try:
            torch.device(value)
        except (RuntimeError, TypeError) as err:
            raise UsageError(Diagnostic("E930", f"--device-map {name}={value}: not a torch "
                                        f"device ({err})", None,
                                        ("e.g. cpu, cuda:0, meta",))) from None
    named = {k: str(torch.device(v)) for k, v in given.items()}
    default = torch_device_names(cluster)
    for name, device in default.items():  # a device the map leaves to the default rule
        other = next((k for k, v in named.items() if v == device), None)
        if name not in named and device != "cpu" and other is not None:
            raise UsageError(Diagnostic(
                "E930", f"--device-map puts `{other}` on {device}, where the default rule "
                f"puts `{name}`: two devices of the plan would be one", None,
                (f"map `{name}` too: --device-map ...,{name}=cuda:K",)))
    return {**default, **{k: str(v) for k, v in given.items()}}


def parse_device_map(text: str | None) -> dict[str, str]:
    """`gpu0=cuda:0,gpu1=cpu` -> a dict (E930 when malformed)."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise UsageError(Diagnostic("E930", f"--device-map item `{item}` is not "
                                        "SPEC_DEVICE=TORCH_DEVICE", None,
                                        ("e.g. --device-map gpu0=cuda:0,gpu1=cuda:1",)))
        out[name.strip()] = value.strip()
    return out


def forward_placement(traced: Traced, placement: Mapping[str, str]) -> dict[str, str]:
    """`placement` without the backward ops of a `--training` spec (`x.bwd`): autograd runs
    each where its forward op ran, which is where the spec colocates it."""
    ops = set(traced.names.values())
    return {op: dev for op, dev in placement.items()
            if not (op.endswith(BWD_SUFFIX) and op.removesuffix(BWD_SUFFIX) in ops
                    and placement[op.removesuffix(BWD_SUFFIX)] == dev)}


def check_placement(traced: Traced, placement: Mapping[str, str]) -> None:
    """E945 unless `placement` places exactly the traced model's ops."""
    ops = list(traced.names.values())
    missing = [o for o in ops if o not in placement]
    unknown = [o for o in placement if o not in set(ops)]
    apart = [o for o in unknown if o.endswith(BWD_SUFFIX)
             and placement.get(o.removesuffix(BWD_SUFFIX)) not in (None, placement[o])]
    if apart:  # before: "places an op the model lacks", did you mean its forward op?
        forward = apart[0].removesuffix(BWD_SUFFIX)
        raise SpecError(Diagnostic(
            "E945", f"the plan places backward op `{apart[0]}` on `{placement[apart[0]]}` and "
            f"its forward op `{forward}` on `{placement[forward]}`"
            + (f" ({len(apart) - 1} more such op(s))" if len(apart) > 1 else "")
            + ": autograd runs a backward op where its forward op ran", None,
            ("place each backward op with its forward op, as the spec colocates them (`planner "
             "simulate` reports the split colocation)",)))
    if missing or unknown:
        parts = []
        if unknown:
            parts.append(f"places {len(unknown)} op(s) the model lacks (`{unknown[0]}`...)")
        if missing:
            parts.append(f"leaves {len(missing)} of the model's ops unplaced (`{missing[0]}`...)")
        hints = did_you_mean(unknown[0], ops) if unknown else ()
        raise SpecError(Diagnostic(
            "E945", "the plan does not match the traced model: it " + " and ".join(parts),
            None,
            hints or ("import the model again (planner import torch) and solve that spec",)))


def check_params(problem: Problem, traced: Traced) -> None:
    """E945 where an op of the spec holds other params than the traced model's op of that
    name (a model changed since its import: a plan sized for 4 MiB there would place 64 MiB),
    forward ops only (a `--training` spec's backward ops hold the gradients)."""
    model = {op.name: op.params_bytes
             for op in to_workload(traced, "model", PROFILES["cpu"]).ops}
    differ = [(op.name, op.params_bytes, model[op.name]) for op in problem.graph.ops
              if op.name in model and op.params_bytes != model[op.name]]
    if differ:
        name, spec_bytes, model_bytes = differ[0]
        more = f" ({len(differ) - 1} more op(s) differ)" if len(differ) > 1 else ""
        raise SpecError(Diagnostic(
            "E945", f"the plan's spec does not match the traced model: op `{name}` holds "
            f"{format_bytes(model_bytes)} of params in the model, {format_bytes(spec_bytes)} "
            f"in the spec{more}", None,
            ("the model changed since its import: import it again (planner import torch) "
             "and solve that spec",)))


def apply_plan(traced: Traced, placement: Mapping[str, str], devices: Mapping[str, str],
               move: bool = True) -> Placed:
    """The placed GraphModule and its copies (see the module docstring).

    `move=False` builds the graph without moving modules and tensors (to write its code on
    a machine that lacks the devices).
    """
    torch = require_torch()
    placement = forward_placement(traced, placement)
    check_placement(traced, placement)
    names = traced.names
    where = {fx_name: placement[op] for fx_name, op in names.items()}
    unknown = sorted({d for d in where.values() if d not in devices})
    if unknown:
        raise SpecError(Diagnostic("E945", f"the plan uses device `{unknown[0]}`, which the "
                                   "device map lacks", None))
    old = traced.gm
    root = quiet_copy(old)
    graph = torch.fx.Graph()
    graph._codegen = quiet_copy(old.graph._codegen)  # an exported graph's (args, kwargs)
    env: dict[str, Any] = {}
    copies: dict[tuple[str, str], Any] = {}
    placed = Placed(root, devices=dict(devices))
    owners = placed.owners
    for n in old.graph.nodes:
        if n.op == "placeholder":
            env[n.name] = graph.node_copy(n, lambda a: env[a.name])
            if n.name in names and n.name in traced.tensors:
                moved = graph.call_method("to", (env[n.name], devices[where[n.name]]))
                moved.meta["planner_input"] = (names[n.name], where[n.name])
                placed.inputs.append((names[n.name], where[n.name]))
                env[n.name] = moved
            continue
        if n.name not in names:  # get_attr, output, and an exported graph's checks
            if not _is_check(n):
                env[n.name] = graph.node_copy(n, lambda a: env[a.name])
            continue
        dev = where[n.name]
        for a in n.all_input_nodes:
            if a.op == "get_attr":  # a tensor used on two devices is copied (a tied weight)
                owners.setdefault(a.target, dev)
        keys = [n.target] if n.op == "call_module" else []
        for key in keys:
            if owners.setdefault(key, dev) != dev:
                raise SpecError(Diagnostic(
                    "E945", f"`{key}` is used by ops on `{owners[key]}` and on `{dev}`; its "
                    "parameters can live on one device only", None,
                    ("solve the spec `planner import torch` wrote: it colocates such ops",)))

        def arg(a: Any, dev: str = dev, consumer: str = n.name) -> Any:
            if a.op == "get_attr" and owners.get(a.target, dev) != dev:
                return _attribute_copy(graph, env[a.name], a.target, dev, copies, placed)
            if a.name not in names or where[a.name] == dev:
                return env[a.name]
            if a.name in traced.containers:
                raise SpecError(Diagnostic(
                    "E945", f"`{names[consumer]}` takes a tuple of tensors from "
                    f"`{names[a.name]}` on another device", None,
                    ("solve the spec `planner import torch` wrote: it colocates them",)))
            if a.name not in traced.tensors:
                return env[a.name]  # a Python value (a size): nothing to copy
            key = (a.name, dev)
            if key not in copies:
                copies[key] = graph.call_method("to", (env[a.name], devices[dev]))
                copies[key].meta["planner_copy"] = (names[a.name], dev)
                placed.copies.append((names[a.name], dev))
            return copies[key]

        env[n.name] = graph.node_copy(n, arg)
        env[n.name].meta["planner_op"] = names[n.name]
        if traced.method == "export":
            _retarget(env[n.name], torch.device(devices[dev]), torch)
    graph.lint()
    placed.module = torch.fx.GraphModule(root, graph, class_name="Placed" + type(
        traced.model).__name__)
    if move:
        place_parameters(placed)
    placed.device_map, placed.device_map_note = device_map(traced, where, devices, owners)
    return placed


def _attribute_copy(graph: Any, node: Any, key: str, dev: str,
                    copies: dict[tuple[str, str], Any], placed: Placed) -> Any:
    """Tensor attribute `key` (a weight tied to an op on another device) copied to `dev`,
    once per device: autograd sums the copies' gradients into the one parameter."""
    at = (f"{key} (attribute)", dev)  # apart from the activations' (node name, device)
    if at not in copies:
        copies[at] = graph.call_method("to", (node, placed.devices[dev]))
        copies[at].meta["planner_copy"] = (key, dev)
        placed.copies.append((key, dev))
    return copies[at]


def _is_check(n: Any) -> bool:
    """An exported graph's check of its own assumptions (`_assert_tensor_metadata`, the
    input guards): dropped from a placed graph, since they assert the example's devices."""
    if n.op == "call_module":
        return str(n.target) == "_guards_fn"
    return n.op == "call_function" and not n.users and "._assert" in f".{n.target}"


def _retarget(node: Any, device: Any, torch: Any) -> None:
    """Point the devices an exported graph baked in (`arange(..., device=cpu)`,
    `x.to(cpu)`) at the device the plan runs `node` on."""
    node.args = tuple(device if isinstance(a, torch.device) else a for a in node.args)
    node.kwargs = {k: device if isinstance(v, torch.device) else v
                   for k, v in node.kwargs.items()}


def place_parameters(placed: Placed) -> None:
    """Move the modules and attributes of `placed.module` to their ops' devices (what
    `apply_plan` does unless `move=False`; under `FakeTensorMode`, fake tensors result)."""
    torch = require_torch()
    for key, dev in placed.owners.items():
        _move(placed.module, key, placed.devices[dev], torch)


def _move(root: Any, path: str, device: str, torch: Any) -> None:
    """Move module or tensor attribute `path` of `root` to `device`, in place.

    Tensors are replaced one by one rather than by `Module.to`, which also works under
    `FakeTensorMode` (where `Module.to` cannot swap a parameter's storage).
    """
    owner_path, _, leaf = path.rpartition(".")
    owner = root.get_submodule(owner_path) if owner_path else root
    thing = getattr(owner, leaf)
    places = ([(m, n) for m in thing.modules() for n in (*m._parameters, *m._buffers)]
              if isinstance(thing, torch.nn.Module) else [(owner, leaf)])
    for module, name in places:
        if name in module._parameters:
            p = module._parameters[name]
            if p is not None:
                module._parameters[name] = torch.nn.Parameter(p.detach().to(device),
                                                              p.requires_grad)
        elif name in module._buffers:
            b = module._buffers[name]
            if b is not None:
                module._buffers[name] = b.to(device)
        else:
            setattr(module, name, getattr(module, name).to(device))


def placement_of(placed: Placed, traced: Traced, inputs: tuple[Any, ...]) -> dict[str, str]:
    """Re-trace a placed model, run it, and read back `{op: spec device}` from the device
    each op's tensors come out on (ops that return no tensor are left out).

    Needs distinct torch devices for distinct spec devices. Under
    `torch._subclasses.FakeTensorMode` the devices need not exist: `cuda:1` can be checked
    on a machine without a GPU, and an op given tensors of two devices still fails.
    """
    torch = require_torch()
    # lazy: optional (the `torch` extra)
    from torch.fx import Interpreter

    back = {v: k for k, v in placed.devices.items()}
    if len(back) != len(placed.devices):
        raise UsageError(Diagnostic("E930", "reading a placement back needs one torch device "
                                    "per spec device", None))
    gm = torch.fx.symbolic_trace(placed.module) if traced.method == "fx" else placed.module
    found: dict[str, str] = {}

    class Where(Interpreter):  # type: ignore[misc, unused-ignore]  # Any without torch
        def run_node(self, n: Any) -> Any:
            value = super().run_node(n)
            # a re-traced (fx) graph keeps the node names; an exported one is not re-traced,
            # and its names shift where a copy took one (`to`), so the op rides in its meta
            op = traced.names.get(n.name) if traced.method == "fx" else \
                n.meta.get("planner_op")
            if op is not None and n.op != "placeholder":
                tensors = _flat(value, torch)
                if tensors:
                    found[op] = back[str(tensors[0].device)]
            return value

    with torch.no_grad():
        Where(gm).run(*inputs)
    return found


def copies_of(placed: Any, traced: Traced) -> list[tuple[str, str]]:
    """(producer op, torch device) of every `.to()` a re-trace of `placed` finds that is
    not an input's move: what the placed model really copies."""
    torch = require_torch()
    gm = torch.fx.symbolic_trace(placed) if traced.method == "fx" else placed
    out = []
    for n in gm.graph.nodes:
        if n.op != "call_method" or n.target != "to" or n.args[0].op == "placeholder":
            continue  # not a copy, or an input's move
        src = n.args[0]
        while src.op == "call_method" and src.target == "to":  # past an input's move
            src = src.args[0]
        if src.name in traced.names:
            out.append((traced.names[src.name], str(n.args[1])))
    return out


def _flat(value: Any, torch: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flat(v, torch)]
    return []


def export_document(placed: Placed, plan_name: str,
                    placement: Mapping[str, str]) -> dict[str, Any]:
    """What `planner export torch` writes: devices, copies and the accelerate map."""
    return {
        "format": "planner-torch-placement",
        "version": 1,
        "plan": plan_name,
        "devices": dict(placed.devices),
        "placement": dict(placement),
        "copies": [{"tensor": op, "to": dev, "device": placed.devices[dev]}
                   for op, dev in placed.copies],
        "inputs": [{"input": op, "to": dev, "device": placed.devices[dev]}
                   for op, dev in placed.inputs],
        "device_map": placed.device_map,
        "device_map_note": placed.device_map_note,
    }
