"""PyTorch models -> workloads: torch.fx graphs with shapes, parameters and (measured) times.

Loading. `TARGET` is `package.module:NAME` or `path/to/file.py:NAME` (NAME defaults to
`model`): an `nn.Module`, or a callable without arguments that returns one. Example inputs
are `--input SHAPE[:DTYPE]` (`8x16`, `4x3x32x32:float16`, `2x10:int64`; floats are
`torch.randn` under seed 0, integers zeros) or `--example EXPR`, a Python expression
evaluated with `torch` and the target's module in scope, giving a tensor or a tuple.

Tracing. `torch.fx.symbolic_trace` (modules of `torch.nn` stay leaves, Python loops unroll),
then `ShapeProp` runs the graph once on the example inputs for every node's shapes and
dtypes, counting FLOPs with `torch.utils.flop_counter` as it goes (matrix products,
convolutions and attention: 2 per multiply-add; everything else 0). `torch.export` is not
used: its graph is of aten ops, whose names no longer say which module ran them, and
applying a plan needs the modules.

Ops. Every placeholder, `call_module`, `call_function` and `call_method` node is one op,
named after the module it runs or runs in: a module call by its path (`layer1.0.conv1`;
the k-th further call of one module `path@k`, torch's own convention), a function or
method by `scope.node` (`layer1.0.add_3`; top level: `add_3`). Each op's comment says what
it calls (its `source`). `params` are the parameters and buffers of the module it calls,
or the ones it reads by attribute (`get_attr`): charged to its first user, with every user
colocated, since one tensor lives on one device. `output` is the bytes of the tensors the
node returns; an edge carries its producer's output. A consumer of a tuple of tensors (an
`LSTMCell`'s `(h, c)`) is colocated with its producer, as such values are not copied;
values that hold no tensor (`x.size(0)`) cost 0 bytes.

Times. `time` is the roofline estimate on a reference profile (`planner.workload.roofline`),
bytes moved being inputs, params and outputs (none for views). `--measure DEVICE` also
runs the graph there (`warmup` runs, then `repeat` runs timing every node, synchronised
on accelerators) and writes each node's median as `time[KIND]` (KIND: `cpu`, `gpu` for
`cuda`, else the device type, or `--kind`). Measured times differ from run to run, so such
a spec is the one output of `planner` that is not the same byte for byte each time.
`--training` adds backward ops as `import onnx --training` does (times:
`BACKWARD_FLOP_FACTOR` x the forward for ops with FLOPs, 1 x otherwise, measured or not).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import importlib.util
import io
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..errors import Diagnostic, Span, SpecError, UsageError, did_you_mean
from ..workload import Imported, Workload, WorkOp, rounded_text
from ..workload.roofline import PROFILES, DeviceProfile
from ..workload.training import BACKWARD_FLOP_FACTOR, add_backward

if TYPE_CHECKING:
    from torch import fx

#: node kinds that become ops
OP_KINDS = ("placeholder", "call_module", "call_function", "call_method")
#: functions and methods that return a view (or a Python value): they move no bytes
VIEWS = {"getitem", "getattr", "size", "dim", "view", "reshape", "flatten", "squeeze",
         "unsqueeze", "permute", "transpose", "t", "expand", "narrow", "chunk", "split",
         "unbind", "view_as", "expand_as", "unflatten", "contiguous", "detach"}


def require_torch() -> ModuleType:
    """The `torch` module, or a usage error (E938) naming the extra that installs it."""
    try:
        import torch
    except ImportError:
        raise UsageError(Diagnostic(
            "E938", "PyTorch is not installed", None,
            ("install PyTorch's CPU build, then the extra: pip install torch --index-url "
             "https://download.pytorch.org/whl/cpu && pip install 'planner[torch]' (for a "
             "CUDA build, see https://pytorch.org/get-started/locally/)",))) from None
    module: ModuleType = torch  # (Any to mypy where torch is not installed)
    return module


# ---- loading ------------------------------------------------------------------------------


def load_target(target: str) -> tuple[Any, dict[str, Any]]:
    """The `nn.Module` that `TARGET` names, and the namespace of the module defining it."""
    torch = require_torch()
    where_text, sep, attr = target.rpartition(":")
    if not sep or not attr.isidentifier():
        where_text, attr = target, "model"
    file = Path(where_text)
    span = Span.start_of(where_text) if where_text.endswith(".py") else None

    def bad(message: str, *hints: str) -> SpecError:
        return SpecError(Diagnostic("E939", message, span, hints))

    try:
        if where_text.endswith(".py"):
            if not file.is_file():
                raise bad(f"no such Python file: {where_text}")
            name = f"_planner_model_{abs(hash(str(file.resolve())))}"
            spec = importlib.util.spec_from_file_location(name, file)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # dataclasses and pickling look modules up by name
            spec.loader.exec_module(module)
        else:
            module = _import_module(where_text)
    except SpecError:
        raise
    except Exception as err:  # noqa: BLE001 - user code may raise anything
        raise bad(f"cannot import {where_text}: {type(err).__name__}: {err}",
                  "TARGET is `package.module:NAME` or `file.py:NAME`") from None
    namespace = vars(module)
    if attr not in namespace:
        raise bad(f"{where_text} defines no `{attr}`",
                  *did_you_mean(attr, [k for k in namespace if not k.startswith("_")]))
    found = namespace[attr]
    if not isinstance(found, torch.nn.Module) and callable(found):
        try:
            found = found()
        except Exception as err:  # noqa: BLE001
            raise bad(f"`{attr}()` raised {type(err).__name__}: {err}") from None
    if not isinstance(found, torch.nn.Module):
        raise bad(f"`{attr}` is a {type(found).__name__}, not a torch.nn.Module (or a "
                  "function returning one)")
    return found, namespace


def _import_module(name: str) -> Any:
    """`importlib.import_module`, also looking in the working directory, as `python -m`
    does: the `planner` script's `sys.path` lacks it, so `planner import torch mymodel:model`
    would miss `./mymodel.py`. The directory is appended (it shadows nothing installed), and
    only when the module is found nowhere else."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        cwd = os.getcwd()
        if err.name != name.partition(".")[0] or any(
                os.path.abspath(p or ".") == cwd for p in sys.path):
            raise
        sys.path.append(cwd)
        return importlib.import_module(name)


def example_inputs(shapes: Sequence[str] = (), expression: str | None = None,
                   namespace: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """Inputs from `--input SHAPE[:DTYPE]` options or an `--example` expression."""
    torch = require_torch()
    if bool(shapes) == bool(expression):
        raise UsageError(Diagnostic("E943", "give the example inputs by --input or by "
                                    "--example (one of the two)", None,
                                    ("e.g. --input 8x16 or --example 'torch.randn(8, 16)'",)))
    if expression:
        try:
            value = eval(expression, {"torch": torch, **(namespace or {})})
        except Exception as err:  # noqa: BLE001 - the user's expression
            raise UsageError(Diagnostic("E943", f"--example `{expression}` raised "
                                        f"{type(err).__name__}: {err}", None)) from None
        return tuple(value) if isinstance(value, (tuple, list)) else (value,)
    generator = torch.Generator().manual_seed(0)
    out = []
    for text in shapes:
        dims_text, _, dtype_text = text.partition(":")
        dtype = getattr(torch, dtype_text or "float32", None)
        try:
            dims = tuple(int(d) for d in dims_text.replace(",", "x").split("x"))
        except ValueError:
            dims = ()
        if not dims or any(d < 0 for d in dims) or not isinstance(dtype, torch.dtype):
            raise UsageError(Diagnostic("E943", f"--input `{text}` is not SHAPE[:DTYPE]", None,
                                        ("e.g. 8x16, 4x3x32x32:float16 or 2x10:int64",)))
        if dtype.is_floating_point:
            out.append(torch.randn(dims, generator=generator).to(dtype))
        else:
            out.append(torch.zeros(dims, dtype=dtype))
    return tuple(out)


# ---- tracing ------------------------------------------------------------------------------


@dataclass
class Traced:
    """A traced model: its fx graph, op names, and what each node produced."""

    model: Any
    gm: Any  # torch.fx.GraphModule
    inputs: tuple[Any, ...]
    #: fx node name -> op name, for every node that is an op (graph order)
    names: dict[str, str]
    #: fx node name -> bytes of the tensors it returned
    output_bytes: dict[str, int] = field(default_factory=dict)
    #: fx node names whose value is a single tensor (the ones `.to()` can copy)
    tensors: set[str] = field(default_factory=set)
    #: fx node names whose value holds tensors inside a tuple, list or dict
    containers: set[str] = field(default_factory=set)
    flops: dict[str, float] = field(default_factory=dict)
    trace_s: float = 0.0

    def nodes(self) -> Iterator[Any]:
        """The fx nodes that are ops, in graph order."""
        return (n for n in self.gm.graph.nodes if n.name in self.names)


def op_names(gm: Any) -> dict[str, str]:
    """fx node name -> op name (see the module docstring), unique within the graph."""
    calls: dict[str, int] = {}
    used: set[str] = set()
    out: dict[str, str] = {}
    for n in gm.graph.nodes:
        if n.op not in OP_KINDS:
            continue
        if n.op == "call_module":
            k = calls.get(n.target, 0)
            calls[n.target] = k + 1
            name = n.target if k == 0 else f"{n.target}@{k}"
        elif n.op == "placeholder":
            name = n.name
        else:
            stack = n.meta.get("nn_module_stack") or {}
            scope = next(reversed(stack)) if stack else ""
            name = f"{scope}.{n.name}" if scope else n.name
        base, k = name, 1
        while name in used:
            k += 1
            name = f"{base}#{k}"
        used.add(name)
        out[n.name] = name
    return out


def trace(model: Any, inputs: tuple[Any, ...]) -> Traced:
    """Trace `model` with torch.fx and run it once on `inputs` for shapes and FLOPs."""
    torch = require_torch()
    from torch.fx.passes.shape_prop import ShapeProp
    from torch.utils.flop_counter import FlopCounterMode

    start = time.perf_counter()
    try:
        gm = torch.fx.symbolic_trace(model)
    except Exception as err:  # noqa: BLE001 - fx raises TraceError, TypeError, ...
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise SpecError(Diagnostic(
            "E942", (f"torch.fx cannot trace {type(model).__name__}: "
                     f"{type(err).__name__}: {first}"), None,
            (("control flow that depends on tensor values cannot be traced; move it into a "
              "module torch.fx keeps whole, or make it depend on shapes only"),))) from None
    flops: dict[str, float] = {}

    class Counting(ShapeProp):  # type: ignore[misc, unused-ignore]  # Any without torch
        def run_node(self, n: fx.Node) -> Any:
            with FlopCounterMode(display=False) as counter:
                value = super().run_node(n)
            flops[n.name] = float(counter.get_total_flops())
            return value

    values: dict[str, Any] = {}
    current: list[str] = []

    class Recording(Counting):
        def run_node(self, n: fx.Node) -> Any:
            current[:] = [n.name]
            value = super().run_node(n)
            values[n.name] = value
            return value

    try:
        # ShapeProp prints the failing node's traceback itself: keep it off the terminal
        with torch.no_grad(), contextlib.redirect_stderr(io.StringIO()):
            Recording(gm).propagate(*inputs)
    except Exception as err:  # noqa: BLE001 - the user's model on the user's inputs
        cause = err.__cause__ or err
        text = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
        where = op_names(gm).get(current[0], current[0]) if current else "?"
        raise SpecError(Diagnostic(
            "E944", f"{type(model).__name__} fails on the example inputs at op `{where}`: "
            f"{type(cause).__name__}: {text}", None,
            ("check the --input shapes and dtypes against the model's forward()",))
        ) from None
    traced = Traced(model, gm, inputs, op_names(gm), flops=flops)
    for name, value in values.items():
        tensors = _tensors(value)
        traced.output_bytes[name] = sum(t.numel() * t.element_size() for t in tensors)
        if isinstance(value, torch.Tensor):
            traced.tensors.add(name)
        elif tensors:
            traced.containers.add(name)
    traced.trace_s = time.perf_counter() - start
    return traced


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


# ---- measuring ----------------------------------------------------------------------------


def measure(traced: Traced, device: str, warmup: int = 3, repeat: int = 10,
            training: bool = False, threads: int | None = None) -> dict[str, float]:
    """fx node name -> median seconds over `repeat` runs on `device`, after `warmup` runs.

    Runs a copy of the model (the caller's stays where it is); on accelerators every node
    is timed between two synchronisations. `threads` sets torch's intra-op threads for the
    runs (on a busy machine, 1 avoids threads waiting on each other for milliseconds).
    """
    torch = require_torch()
    from torch.fx import Interpreter

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise UsageError(Diagnostic("E930", f"--measure `{device}` is not a torch device: "
                                    f"{err}", None, ("e.g. cpu, cuda:0",))) from None
    if dev.type != "cpu" and not _available(torch, dev):
        raise UsageError(Diagnostic("E930", f"--measure `{device}`: no such device here", None,
                                    ("measure on cpu, or on a machine with that device",)))
    if warmup < 0 or repeat < 1 or (threads is not None and threads < 1):
        raise UsageError(Diagnostic("E930", "--warmup must be >= 0, --repeat and --threads "
                                    ">= 1", None))
    sync = _synchronizer(torch, dev)
    gm = copy.deepcopy(traced.gm).to(dev)
    inputs = tuple(x.to(dev) if isinstance(x, torch.Tensor) else x for x in traced.inputs)
    samples: dict[str, list[float]] = {name: [] for name in traced.names}

    class Timing(Interpreter):  # type: ignore[misc, unused-ignore]  # Any without torch
        keep = False

        def run_node(self, n: fx.Node) -> Any:
            if n.op not in OP_KINDS or n.op == "placeholder":
                return super().run_node(n)
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            sync()
            start = time.perf_counter()
            value = getattr(self, n.op)(n.target, args, kwargs)
            sync()
            if self.keep:
                samples[n.name].append(time.perf_counter() - start)
            return value

    timer = Timing(gm)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(threads or before)
        with torch.set_grad_enabled(training):
            for k in range(warmup + repeat):
                timer.keep = k >= warmup
                timer.run(*inputs)
    finally:
        torch.set_num_threads(before)
    return {name: statistics.median(s) for name, s in samples.items() if s}


def _available(torch: Any, dev: Any) -> bool:
    module = getattr(torch, dev.type, None)
    try:
        count = module.device_count() if module is not None else 0
    except Exception:  # noqa: BLE001 - a backend without devices
        return False
    return bool(count) and (dev.index or 0) < count


def _synchronizer(torch: Any, dev: Any) -> Callable[[], None]:
    module = getattr(torch, dev.type, None)
    if dev.type == "cpu" or module is None or not hasattr(module, "synchronize"):
        return lambda: None
    return lambda: module.synchronize(dev) if dev.type == "cuda" else module.synchronize()


def run_annotated(traced: Traced, *inputs: Any) -> object:
    """Run the traced graph with one `record_function(op name)` range per op, so that a
    `torch.profiler` Chrome trace of it feeds `--times` (see `planner.io.times`)."""
    torch = require_torch()
    from torch.fx import Interpreter

    names = traced.names

    class Annotated(Interpreter):  # type: ignore[misc, unused-ignore]  # Any without torch
        def run_node(self, n: fx.Node) -> Any:
            if n.name not in names:
                return super().run_node(n)
            with torch.profiler.record_function(names[n.name]):
                return super().run_node(n)

    return Annotated(traced.gm).run(*inputs)


# ---- the workload -------------------------------------------------------------------------


def to_workload(traced: Traced, name: str, profile: DeviceProfile,
                measured: dict[str, float] | None = None, kind: str = "cpu") -> Workload:
    """The op graph of `traced` (see the module docstring)."""
    import torch

    gm = traced.gm
    names = traced.names
    w = Workload(name)
    groups = _Groups()
    first_user: dict[str, str] = {}  # module path or attribute -> first op using it
    for n in traced.nodes():
        op_name = names[n.name]
        out_bytes = traced.output_bytes.get(n.name, 0)
        params = 0
        owned: list[str] = []
        if n.op == "call_module":
            owned.append(n.target)
        owned.extend(a.target for a in n.all_input_nodes if a.op == "get_attr")
        for key in owned:
            if key in first_user:
                groups.join(first_user[key], op_name)
                continue
            first_user[key] = op_name
            params += _bytes_of(gm, key, torch)
        in_bytes = 0
        for a in n.all_input_nodes:
            if a.name not in names:
                continue
            nbytes = traced.output_bytes.get(a.name, 0)
            in_bytes += nbytes
            w.connect(names[a.name], op_name, nbytes)
            if a.name in traced.containers:
                groups.join(names[a.name], op_name)
        flops = traced.flops.get(n.name, 0.0)
        target = _target_name(n)
        moved = 0.0 if (n.op != "call_module" and target in VIEWS) else float(
            in_bytes + params + out_bytes)
        op = w.add(WorkOp(op_name, profile.time_s(flops, moved), flops, params_bytes=params,
                          output_bytes=out_bytes, comment=_source(n, gm)))
        if measured is not None and n.name in measured:
            op.time_by_kind[kind] = measured[n.name]
    w.colocations = groups.lists([o.name for o in w.ops])
    return w


def _target_name(n: Any) -> str:
    return n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")


def _source(n: Any, gm: Any) -> str:
    if n.op == "call_module":
        return f"call_module {n.target}: {type(gm.get_submodule(n.target)).__name__}"
    if n.op == "call_function":
        where = getattr(n.target, "__module__", None) or ""
        where = "torch" if where.startswith("torch") else where
        qual = f"{where}.{_target_name(n)}" if where and where != "_operator" else \
            f"operator.{_target_name(n)}"
        return f"call_function {qual}"
    if n.op == "call_method":
        return f"call_method Tensor.{n.target}"
    return f"placeholder {n.name}"


def _bytes_of(gm: Any, path: str, torch: Any) -> int:
    """Bytes of the parameters and buffers of module or tensor attribute `path`."""
    owner_path, _, leaf = path.rpartition(".")
    owner = gm.get_submodule(owner_path) if owner_path else gm
    thing = getattr(owner, leaf)
    if isinstance(thing, torch.Tensor):
        return int(thing.numel() * thing.element_size())
    tensors = [*thing.parameters(), *thing.buffers()]
    return int(sum(t.numel() * t.element_size() for t in tensors))


class _Groups:
    """Union-find over op names, for colocation groups that share members."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra

    def lists(self, order: list[str]) -> list[list[str]]:
        by_root: dict[str, list[str]] = {}
        for name in order:
            if name in self.parent:
                by_root.setdefault(self.find(name), []).append(name)
        return [m for m in by_root.values() if len(m) > 1]


# ---- the importer -------------------------------------------------------------------------


def import_torch(target: str, shapes: Sequence[str] = (), example: str | None = None,
                 profile: str = "v100", measure_on: str | None = None, kind: str | None = None,
                 warmup: int = 3, repeat: int = 10, training: bool = False,
                 optimizer: str = "adam", name: str | None = None,
                 command: str | None = None, threads: int | None = None) -> Imported:
    """`planner import torch`: load, trace, (measure,) and build the workload."""
    torch = require_torch()
    prof = PROFILES.get(profile)
    if prof is None:
        raise UsageError(Diagnostic("E930", f"unknown device profile `{profile}`", None,
                                    ("one of: " + ", ".join(PROFILES),)))
    model, namespace = load_target(target)
    inputs = example_inputs(shapes, example, namespace)
    traced = trace(model, inputs)
    measured = None
    measure_s = 0.0
    if measure_on is not None:
        start = time.perf_counter()
        measured = measure(traced, measure_on, warmup, repeat, training, threads)
        measure_s = time.perf_counter() - start
        kind = kind or _default_kind(torch.device(measure_on).type)
    graph_name = name or _graph_name(type(model).__name__)
    w = to_workload(traced, graph_name, prof, measured, kind or "cpu")
    forward_ops = len(w.ops)
    total_flops = sum(traced.flops.get(n.name, 0.0) for n in traced.nodes())
    n_params = sum(p.numel() for p in model.parameters())
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
    lines = [
        f"Generated by:\n$ {command}" if command else "Generated by planner.io.torch_import",
        (f"Source: {target}, {type(model).__name__} traced with torch.fx (PyTorch "
         f"{torch.__version__}); inputs "
         + ", ".join(_describe(x) for x in inputs) + "."),
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
        f"{optimizer} state are their params." if training
        else "Inference (forward pass only).")
    stats = {"ops_forward": float(forward_ops), "flops": total_flops, "params": float(n_params),
             "trace_s": traced.trace_s, "measure_s": measure_s}
    return Imported(w, "\n".join(lines), [], stats)


def _default_kind(device_type: str) -> str:
    return {"cuda": "gpu"}.get(device_type, device_type)


def _describe(x: Any) -> str:
    import torch

    if isinstance(x, torch.Tensor):
        return "x".join(map(str, x.shape)) + f" {str(x.dtype).removeprefix('torch.')}"
    return type(x).__name__


def _graph_name(cls: str) -> str:
    return cls or "model"
