"""PyTorch models -> workloads: captured graphs with shapes, parameters and (measured) times.

Loading (`planner.io.torch_load`): `TARGET` is `package.module:NAME`, `file.py:NAME` or a
saved program `file.pt2`; example inputs are `--input SHAPE[:DTYPE]` or `--example EXPR`
(a tensor, a tuple of positional inputs or a dict of keyword inputs).

Capture (`planner.io.torch_capture`): `torch.export` (aten ops, keyword inputs, what
Hugging Face models need), or `torch.fx.symbolic_trace` (`torch.nn` modules as leaves);
by default export, falling back to fx. Then the graph runs once on the example inputs for
every node's outputs, counting FLOPs with `torch.utils.flop_counter`
(`planner.io.torch_flops`: 2 per multiply-add for matrix products, convolutions and
attention; other ops 0, a warning W948 naming those that may do matrix work uncounted).

Ops (`planner.io.torch_units`). `--granularity op` makes every node one op; `module` or
`module:DEPTH` one op per module call (and per run of glue code between calls), so that
the spec's cuts can only fall on module boundaries, which is what an accelerate
`device_map` can express. An op is named after its module: a whole call by its path
(`layer1.0.conv1`; the k-th further call of one module `path@k`, torch's own convention),
anything else by `scope.node` (`layer1.0.add_`; top level: `add_`). Each op's comment says
what it runs and the module class. `params` are the parameters and buffers of the modules
it calls or the tensors it reads by attribute (`get_attr`): charged to its first user, with
every user of that name colocated, since one tensor lives on one device; a tensor the model
reaches under several names (tied weights) is held by the first user under each, each
keeping a copy (`tie` in the spec, see `_Params`). `output` is the bytes of the
tensors an op gives to other ops; an edge carries those its consumer takes. A consumer of a
tuple of tensors (an `LSTMCell`'s `(h, c)`) is colocated with its producer, as such values
are not copied; values that hold no tensor (`x.size(0)`) cost 0 bytes.

Times. `time` is the roofline estimate on a reference profile (`planner.workload.roofline`),
summed over an op's nodes, the bytes a node moves being its inputs, params and outputs
(none for views; an embedding reads the rows it gathers, not its whole table).
`--measure DEVICE` (`torch_measure`) also runs the graph there (`warmup` runs, then
`repeat` runs timing every node, synchronised on accelerators) and writes each op's summed
medians as `time[KIND]` (KIND: `cpu`, `gpu` for `cuda`, else the device type, or
`--kind`). Measured times differ from run to run, so such a spec is the one output of
`planner` that is not the same byte for byte each time. `--training` adds backward ops as
`import onnx --training` does (times: `BACKWARD_FLOP_FACTOR` x the forward for ops with
FLOPs, 1 x otherwise, measured or not), and charges the exported script's loss to the op
that makes the output's `logits` (`torch_loss`).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..disjoint import Disjoint
from ..errors import Diagnostic, Severity, SpecError, UsageError
from ..workload import Imported, Workload, WorkOp, rounded_text
from ..workload.roofline import PROFILES, DeviceProfile
from ..workload.training import BACKWARD_FLOP_FACTOR, BWD_SUFFIX, add_backward
from .torch_capture import capture
from .torch_flops import Counter
from .torch_load import Example, example_inputs, load_target, require_torch, target_file
from .torch_loss import charge_loss
from .torch_measure import measure, run_annotated
from .torch_units import OP_KINDS, Unit, stack_of, unique_names, units

__all__ = ["OP_KINDS", "Example", "Traced", "example_inputs", "forward_ops",
           "import_torch", "load_target", "measure", "regroup", "require_torch",
           "run_annotated", "target_file", "to_workload", "trace"]

if TYPE_CHECKING:
    from torch import fx

#: functions and methods that return a view (or a Python value): they move no bytes
VIEWS = {"getitem", "getattr", "size", "dim", "view", "reshape", "flatten", "squeeze",
         "unsqueeze", "permute", "transpose", "t", "expand", "narrow", "chunk", "split",
         "unbind", "view_as", "expand_as", "unflatten", "contiguous", "detach"}


# ---- tracing ------------------------------------------------------------------------------


@dataclass
class Traced:
    """A captured model: its fx graph, its ops (units of nodes), what each node produced."""

    model: Any  # the nn.Module, or the ExportedProgram a .pt2 held
    gm: Any  # torch.fx.GraphModule
    #: the example inputs, flattened in the order of the graph's placeholders
    inputs: tuple[Any, ...]
    #: fx node name -> op name, for every node that is (part of) an op (graph order)
    names: dict[str, str]
    #: the ops, in graph order (`planner.io.torch_units`)
    units: list[Unit] = field(default_factory=list)
    method: str = "fx"
    granularity: str = "op"
    #: why capture fell back from torch.export to torch.fx, or ""
    fallback: str = ""
    #: the inputs the graph (and a placed model) takes: the example, plus `use_cache=False`
    #: where capture added it
    example: Example = field(default_factory=Example)
    #: fx node name -> bytes of the tensors it returned
    output_bytes: dict[str, int] = field(default_factory=dict)
    #: fx node names whose value is a single tensor (the ones `.to()` can copy)
    tensors: set[str] = field(default_factory=set)
    #: fx node names whose value holds tensors inside a tuple, list or dict
    containers: set[str] = field(default_factory=set)
    flops: dict[str, float] = field(default_factory=dict)
    #: fx node name -> the shape of the tensor it returned (nodes returning one tensor)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: fx node name -> aten ops it ran that no FLOP formula covers (`torch_flops`)
    uncounted: dict[str, list[str]] = field(default_factory=dict)
    trace_s: float = 0.0

    def nodes(self) -> Iterator[Any]:
        """The fx nodes that are (part of) ops, in graph order."""
        return (n for n in self.gm.graph.nodes if n.name in self.names)

    def unit_of(self) -> dict[str, Unit]:
        """Op name -> its unit."""
        return {u.name: u for u in self.units}


def grouped(gm: Any, method: str, granularity: str) -> tuple[list[Unit], dict[str, str]]:
    """The ops of captured graph `gm` at `granularity` (`torch_units`), uniquely named, and
    the op of each fx node in them: `trace`'s grouping, which the capture does not depend on
    (so one capture serves every granularity)."""
    found = units(gm, method, granularity)
    unique_names(found)
    return found, {n.name: u.name for u in found for n in u.nodes}


def trace(model: Any, example: Example | tuple[Any, ...], method: str = "auto",
          granularity: str = "op") -> Traced:
    """Capture `model` (`torch_capture`) and run it once on `example` for every node's
    outputs and FLOPs; group the nodes into ops by `granularity` (`torch_units`)."""
    torch = require_torch()
    # lazy: optional (the `torch` extra; torch_values imports torch)
    from torch.fx import Interpreter

    from .torch_values import flat_tensors

    if not isinstance(example, Example):
        example = Example(tuple(example))
    start = time.perf_counter()
    captured = capture(model, example, method)
    gm = captured.gm
    found, names = grouped(gm, captured.method, granularity)
    traced = Traced(model, gm, captured.inputs, names, found, captured.method, granularity,
                    captured.fallback, captured.example)
    counter = Counter()
    values: dict[str, Any] = {}
    current: list[str] = []

    class Recording(Interpreter):  # type: ignore[misc, unused-ignore]  # Any without torch
        def run_node(self, n: fx.Node) -> Any:
            current[:] = [n.name]
            value, flops, missed = counter.run(lambda: super(Recording, self).run_node(n))
            traced.flops[n.name] = flops
            if missed:
                traced.uncounted[n.name] = missed
            values[n.name] = value
            return value

    try:
        with torch.no_grad():
            Recording(gm).run(*captured.inputs)
    except Exception as err:  # noqa: BLE001 - the user's model on the user's inputs
        cause = err.__cause__ or err
        text = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
        where = names.get(current[0], current[0]) if current else "?"
        raise SpecError(Diagnostic(
            "E944", f"{type(model).__name__} fails on the example inputs at op `{where}`: "
            f"{type(cause).__name__}: {text}", None,
            ("check the --input shapes and dtypes against the model's forward()",))
        ) from None
    for name, value in values.items():
        tensors = flat_tensors(value)
        traced.output_bytes[name] = sum(t.numel() * t.element_size() for t in tensors)
        if isinstance(value, torch.Tensor):
            traced.tensors.add(name)
            traced.shapes[name] = tuple(int(d) for d in value.shape)
        elif tensors:
            traced.containers.add(name)
    traced.trace_s = time.perf_counter() - start
    return traced


def forward_ops(ops: Sequence[str]) -> set[str]:
    """`ops` without the backward ops of a `--training` spec (`x.bwd` of an op `x`)."""
    names = set(ops)
    return {o for o in ops if not (o.endswith(BWD_SUFFIX) and o.removesuffix(BWD_SUFFIX)
                                   in names)}


def regroup(traced: Traced, ops: Sequence[str]) -> Traced:
    """`traced` with the granularity whose ops are `ops` (a spec's, backward ops aside):
    `export torch` finds the granularity `import torch` was given. Unchanged when none fits
    (applying the plan then says which ops differ)."""
    wanted = forward_ops(ops)
    deepest = max((len(stack_of(n)) for n in traced.nodes()), default=0)
    for granularity in ("op", "module", *(f"module:{d}" for d in range(1, deepest + 1))):
        found = units(traced.gm, traced.method, granularity)
        unique_names(found)
        if {u.name for u in found} == wanted:
            return dataclasses.replace(
                traced, units=found, granularity=granularity,
                names={n.name: u.name for u in found for n in u.nodes})
    return traced


# ---- the workload -------------------------------------------------------------------------


# long: one pass over the units, each summing its nodes' costs and edges
# complex: per node: params (`_Params`: once per tensor, tied ones per name), input bytes
# and edges once per input tensor, temp and time; the branches fill one unit's accumulators
def to_workload(traced: Traced, name: str, profile: DeviceProfile,
                measured: dict[str, float] | None = None, kind: str = "cpu") -> Workload:
    """The op graph of `traced` (see the module docstring)."""
    # lazy: optional (the `torch` extra)
    import torch

    gm = traced.gm
    names = traced.names
    w = Workload(name)
    groups: Disjoint[str] = Disjoint()
    params_of = _Params(gm, torch, groups)
    users_outside = _used_outside(traced)
    for unit in traced.units:
        op_name = unit.name
        params = 0
        time_s = 0.0
        flops = 0.0
        edges: dict[str, int] = {}
        taken: set[str] = set()
        temp = 0
        for n in unit.nodes:
            owned: list[str] = []
            if n.op == "call_module":
                owned.append(n.target)
            owned.extend(a.target for a in n.all_input_nodes if a.op == "get_attr")
            node_params = sum(params_of.take(key, n, op_name) for key in owned)
            params += node_params
            in_bytes = 0
            for a in n.all_input_nodes:
                if a.name not in names:
                    continue
                nbytes = traced.output_bytes.get(a.name, 0)
                in_bytes += nbytes
                source = names[a.name]
                if source == op_name:
                    continue
                if a.name not in taken:
                    taken.add(a.name)
                    edges[source] = edges.get(source, 0) + nbytes
                if a.name in traced.containers:
                    groups.union(source, op_name)
            out_bytes = traced.output_bytes.get(n.name, 0)
            if n.name not in users_outside:
                temp = max(temp, out_bytes)
            node_flops = traced.flops.get(n.name, 0.0)
            flops += node_flops
            time_s += profile.time_s(node_flops, _moved(n, in_bytes, node_params, out_bytes))
        for source, nbytes in edges.items():
            w.connect(source, op_name, nbytes)
        out = sum(traced.output_bytes.get(n.name, 0) for n in unit.nodes
                  if n.name in users_outside)
        op = w.add(WorkOp(op_name, time_s, flops, params_bytes=params, output_bytes=out,
                          temp_bytes=temp if len(unit.nodes) > 1 else 0,
                          comment=_unit_source(unit, gm), type=_unit_type(unit)))
        if measured is not None and all(n.name in measured for n in unit.nodes):
            op.time_by_kind[kind] = sum(measured[n.name] for n in unit.nodes)
    if traced.granularity != "op":
        _keep_a_device_map(traced, groups)
    w.ties = params_of.ties(w)
    w.colocations = groups.groups([o.name for o in w.ops])
    return w


class _Params:
    """Which op holds each parameter and buffer: its first user, and, for a tensor that
    the model reaches under several names (tied weights: GPT-2's `transformer.wte.weight`
    is `lm_head.weight`), the first user under each other name too, each holding a copy
    (`tie` in the spec). Users of one name share a device (colocated): one module called
    twice, or code reading an attribute."""

    def __init__(self, gm: Any, torch: Any, groups: Disjoint[str]) -> None:
        self.gm, self.torch, self.groups = gm, torch, groups
        self.names: dict[int, list[str]] = {}  # tensor id -> its names in the model
        for key, t in [*gm.named_parameters(remove_duplicate=False),
                       *gm.named_buffers(remove_duplicate=False)]:
            self.names.setdefault(id(t), []).append(key)
        #: tensor id -> (first op, the name it used, whether through a module call)
        self.first: dict[int, tuple[str, str, bool]] = {}
        self.holders: dict[int, list[str]] = {}  # tied tensor id -> ops holding a copy
        self.size: dict[int, int] = {}

    def take(self, key: str, n: Any, op: str) -> int:
        """The bytes op `op` comes to hold by node `n`'s use of module or attribute `key`."""
        held = 0
        owner, leaf = self._owner(key)
        module = not isinstance(getattr(owner, leaf), self.torch.Tensor)
        for name, t in self._tensors(key, n):
            tid = id(t)
            first = self.first.get(tid)
            if first is None:
                self.first[tid] = (op, name, module)
                self.size[tid] = int(t.numel() * t.element_size())
                held += self.size[tid]
            elif first[0] == op:
                continue
            elif first[1] == name or len(self.names.get(tid, ())) < 2 or module or first[2]:
                # one name, or a module's own parameter (an export cannot copy it to a
                # second device: `torch_export.apply_plan` moves whole modules): one device
                self.groups.union(first[0], op)
            else:
                hold = self.holders.setdefault(tid, [first[0]])
                if op not in hold:
                    hold.append(op)
                    held += self.size[tid]
        return held

    def _tensors(self, key: str, n: Any) -> list[tuple[str, Any]]:
        """(name, tensor) of each parameter and buffer that `key` names, as node `n` uses
        it: a tied tensor by the name whose module `n` runs in."""
        owner, leaf = self._owner(key)
        thing = getattr(owner, leaf)
        if isinstance(thing, self.torch.Tensor):
            names = self.names.get(id(thing), [key])
            stack = {path for path, _ in (n.meta.get("nn_module_stack") or {}).values()}
            used = [x for x in names if x.rpartition(".")[0] in stack]
            return [(max(used, key=len) if used else key, thing)]
        seen: dict[int, tuple[str, Any]] = {}
        for name, t in [*thing.named_parameters(remove_duplicate=False),
                        *thing.named_buffers(remove_duplicate=False)]:
            seen.setdefault(id(t), (f"{key}.{name}", t))
        return list(seen.values())

    def _owner(self, key: str) -> tuple[Any, str]:
        """The module holding attribute `key`, and the attribute's name there."""
        owner_path, _, leaf = key.rpartition(".")
        return (self.gm.get_submodule(owner_path) if owner_path else self.gm), leaf

    def ties(self, w: Workload) -> list[tuple[list[str], int, str]]:
        """One tie per set of holders that may run apart (the bytes of the tensors they
        share summed); of holders colocated anyway, the first keeps the one copy."""
        groups = self.groups
        params = {o.name: o for o in w.ops}
        by_set: dict[tuple[str, ...], int] = {}
        weight: dict[tuple[str, ...], str] = {}  # the name of the set's first weight
        for tid, hold in self.holders.items():
            first: dict[str, str] = {}
            for h in hold:
                if first.setdefault(groups.find(h), h) != h:
                    params[h].params_bytes -= self.size[tid]
            ops = tuple(first.values())
            if len(ops) > 1:
                by_set[ops] = by_set.get(ops, 0) + self.size[tid]
                weight.setdefault(ops, self.names.get(tid, [self.first[tid][1]])[0])
        pairs: set[tuple[str, ...]] = set()
        out: list[tuple[list[str], int, str]] = []
        for ops, nbytes in by_set.items():
            mine = {tuple(sorted(p)) for p in itertools.combinations(ops, 2)}
            if mine & pairs:  # ops sharing weights in two ways: one device, as before
                for h in ops[1:]:
                    groups.union(ops[0], h)
                    params[h].params_bytes -= nbytes
                continue
            pairs |= mine
            out.append((list(ops), nbytes, weight[ops]))
        return out


def _keep_a_device_map(traced: Traced, groups: Disjoint[str]) -> None:
    """At module granularity, colocate what an accelerate `device_map` cannot split: code
    between module calls with the ops whose tensors it reads (accelerate moves only a
    module's inputs, so such code runs where its inputs are), and the calls of one module
    (a map gives a module one device). Every plan of the spec is then a device map."""
    names = traced.names
    first_call: dict[str, str] = {}
    inputs = {u.name for u in traced.units if u.is_input}
    for unit in traced.units:
        if unit.module:
            groups.union(first_call.setdefault(unit.module, unit.name), unit.name)
        if unit.module or unit.is_input:
            continue
        for n in unit.nodes:
            for a in n.all_input_nodes:
                source = names.get(a.name)
                if source is not None and source != unit.name and source not in inputs \
                        and a.name in traced.tensors:
                    groups.union(source, unit.name)


def _used_outside(traced: Traced) -> set[str]:
    """Nodes whose value leaves their op (to another op, or out of the model)."""
    names = traced.names
    out = set()
    for n in traced.nodes():
        if not n.users or any(u.name not in names or names[u.name] != names[n.name]
                              for u in n.users):
            out.add(n.name)
    return out


#: modules and aten ops that gather rows of a table: they read what they write
_GATHERS = ("Embedding", "embedding")


def _moved(n: Any, in_bytes: int, params: int, out_bytes: int) -> float:
    """Bytes node `n` moves: none for a view; an embedding reads the rows it returns."""
    target = _target_name(n)
    if n.op != "call_module" and (target in VIEWS or target.split(".")[0] in VIEWS):
        return 0.0
    if target.split(".")[0] in _GATHERS or (
            n.op == "call_module" and _module_class(n) in _GATHERS):
        return float(in_bytes + 2 * out_bytes)
    return float(in_bytes + params + out_bytes)


def _module_class(n: Any) -> str:
    """The class of the module a `call_module` node calls."""
    stack = n.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    cls = next(reversed(stack.values()))[1]
    return cls.__name__ if isinstance(cls, type) else str(cls).rpartition(".")[2]


def _unit_type(unit: Unit) -> str:
    """The op's type: its module's class for a whole module call (`Conv2d`, `GPT2Block`),
    the function for one call of code (`add`, `scaled_dot_product_attention`), else the
    class whose code it is; `input` for an input."""
    if unit.is_input:
        return "input"
    if unit.module:
        return unit.module_type
    if len(unit.nodes) == 1:
        return _target_name(unit.nodes[0]).split(".")[0].strip("_") or "code"
    return unit.module_type or "code"


def _unit_source(unit: Unit, gm: Any) -> str:
    if len(unit.nodes) == 1:
        where = f" in {unit.module_type} {unit.scope}" if unit.module_type and \
            unit.nodes[0].op != "call_module" else ""
        return _source(unit.nodes[0], gm) + where
    what = f"module {unit.module}" if unit.module else (
        f"code of {unit.scope}" if unit.scope else "top-level code")
    kinds = {_target_name(n) for n in unit.nodes}
    return (f"{what}: {unit.module_type or 'model'} ({len(unit.nodes)} nodes: "
            + ", ".join(sorted(kinds)[:6]) + (", ..." if len(kinds) > 6 else "") + ")")


def _target_name(n: Any) -> str:
    """`conv1` for a module call, `add` for `operator.add`, `linear.default` for an aten op."""
    if isinstance(n.target, str):
        return n.target
    name = getattr(n.target, "__name__", "")
    return name.removeprefix("aten.") if name else str(n.target).removeprefix("aten.")


def _source(n: Any, gm: Any) -> str:
    if n.op == "call_module":
        return f"call_module {n.target}: {type(gm.get_submodule(n.target)).__name__}"
    if n.op == "call_function" and str(n.target).startswith("aten."):
        return f"call_function {n.target}"
    if n.op == "call_function":
        where = getattr(n.target, "__module__", None) or ""
        where = "torch" if where.startswith("torch") else where
        qual = f"{where}.{_target_name(n)}" if where and where != "_operator" else \
            f"operator.{_target_name(n)}"
        return f"call_function {qual}"
    if n.op == "call_method":
        return f"call_method Tensor.{n.target}"
    return f"placeholder {n.name}"


# ---- the importer -------------------------------------------------------------------------


# complex: the command's steps in order (profile, load, trace, measure, build, backward ops,
# header); the branches are its options, each read where its step uses it
def import_torch(target: str, shapes: Sequence[str] = (), example: str | None = None,
                 profile: str = "v100", measure_on: str | None = None, kind: str | None = None,
                 warmup: int = 3, repeat: int = 10, training: bool = False,
                 optimizer: str = "adam", name: str | None = None,
                 command: str | None = None, threads: int | None = None,
                 capture_method: str = "auto", granularity: str = "op") -> Imported:
    """`planner import torch`: load, capture, (measure,) and build the workload."""
    torch = require_torch()
    prof = PROFILES.get(profile)
    if prof is None:
        raise UsageError(Diagnostic("E930", f"unknown device profile `{profile}`", None,
                                    ("one of: " + ", ".join(PROFILES),)))
    model, namespace = load_target(target)
    inputs = example_inputs(shapes, example, namespace, model)
    traced = trace(model, inputs, capture_method, granularity)
    measured = None
    measure_s = 0.0
    if measure_on is not None:
        start = time.perf_counter()
        measured = measure(traced, measure_on, warmup, repeat, training, threads)
        measure_s = time.perf_counter() - start
        kind = kind or _default_kind(torch.device(measure_on).type)
    cls = type(model).__name__ if not target.endswith(".pt2") else target.rpartition("/")[
        2].removesuffix(".pt2")
    graph_name = name or _graph_name(cls)
    w = to_workload(traced, graph_name, prof, measured, kind or "cpu")
    forward_ops = len(w.ops)
    total_flops = sum(traced.flops.get(n.name, 0.0) for n in traced.nodes())
    n_params = sum(p.numel() for p in traced.gm.parameters())
    loss = ""
    if training:
        by_name = {o.name: o for o in w.ops}
        factor = {o.name: BACKWARD_FLOP_FACTOR if (o.flops or 0) > 0 else 1.0 for o in w.ops}

        def backward(op: WorkOp) -> tuple[float, float | None]:
            f = factor[op.name]
            return (op.time_s or 0.0) * f, (op.flops or 0.0) * f

        placeholders = [traced.names[n.name] for n in traced.nodes() if n.op == "placeholder"]
        add_backward(w, backward, optimizer, skip=placeholders)
        for op in w.ops[forward_ops:]:  # measured backward: the same factor on the forward
            fwd = by_name.get(op.name.removesuffix(".bwd"))
            if fwd is not None and kind is not None and kind in fwd.time_by_kind:
                op.time_by_kind[kind] = fwd.time_by_kind[kind] * factor[fwd.name]
        loss = charge_loss(traced, w, prof)
    lines = [
        f"Generated by:\n$ {command}" if command else "Generated by planner.io.torch_import",
        (f"Source: {target}, {cls} captured with {_how(traced)} (PyTorch "
         f"{torch.__version__}); inputs "
         + ", ".join([*(_describe(x) for x in inputs.args),
                      *(f"{k}={_describe(x)}" for k, x in inputs.kwargs.items())]) + "."),
        (f"Granularity: {granularity}"
         + (" (one op per module call, and per run of code between calls)"
            if granularity != "op" else " (one op per graph node)") + "."),
        (f"Graph: {len(w.ops)} ops, {len(w.edges)} edges; forward "
         f"{rounded_text(total_flops, 'work')} (torch.utils.flop_counter), "
         f"{n_params:,} parameters."),
        (f"Op times: `time` is the roofline max(FLOPs / peak, bytes / bandwidth) on "
         f"{prof.summary('fp32')}."),
    ]
    if measured is not None:
        lines.append(f"`time[{kind}]` measured on {measure_on}: median of {repeat} runs after "
                     f"{warmup} warm-up runs"
                     + (f", {threads} thread(s)" if threads else "")
                     + " (measured times are not reproducible byte for byte).")
    lines.append(
        f"Training step: backward ops (x{BACKWARD_FLOP_FACTOR:g} the forward for ops with "
        f"FLOPs, estimated, not measured), colocated with their forward ops; gradients and "
        f"{optimizer} state are their params." + (f"\n{loss}" if loss else "") if training
        else "Inference (forward pass only).")
    stats = {"ops_forward": float(forward_ops), "flops": total_flops, "params": float(n_params),
             "trace_s": traced.trace_s, "measure_s": measure_s}
    return Imported(w, "\n".join(lines), _uncounted_warning(traced, measured), stats)


def _how(traced: Traced) -> str:
    if traced.method == "export":
        return "torch.export"
    return "torch.fx" + (f" (torch.export failed: {traced.fallback})" if traced.fallback
                         else "")


def _uncounted_warning(traced: Traced, measured: dict[str, float] | None) -> list[Diagnostic]:
    """W948 naming the ops that may do matrix work no FLOP formula counts (not measured)."""
    found: dict[str, list[str]] = {}
    for node, ops in traced.uncounted.items():
        if measured is not None and node in measured:
            continue
        for op in ops:
            found.setdefault(op, []).append(traced.names.get(node, node))
    if not found:
        return []
    listed = "; ".join(f"{op} in `{users[0]}`" + (f" and {len(users) - 1} more op(s)"
                                                     if len(users) > 1 else "")
                       for op, users in sorted(found.items()))
    return [Diagnostic("W948", f"no FLOP formula for {listed}: their time counts the bytes "
                       "they move only", None,
                       ("measure them: --measure cpu (or cuda:0)",),
                       severity=Severity.WARNING)]


def _default_kind(device_type: str) -> str:
    return {"cuda": "gpu"}.get(device_type, device_type)


def _describe(x: Any) -> str:
    # lazy: optional (the `torch` extra)
    import torch

    if isinstance(x, torch.Tensor):
        return "x".join(map(str, x.shape)) + f" {str(x.dtype).removeprefix('torch.')}"
    return type(x).__name__


def _graph_name(cls: str) -> str:
    return cls or "model"
