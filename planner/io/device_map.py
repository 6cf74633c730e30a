"""Read a Hugging Face accelerate `device_map` as a placement (no torch needed).

A `device_map` is the JSON object `dispatch_model(model, device_map)` takes: module path ->
device, where a device is an int N (`cuda:N`) or a torch device string (`"cuda:1"`, `"cpu"`,
`"mps"`; `"cuda"` is `cuda:0`). `planner simulate SPEC --placement device_map.json` reads
one through `placement_from_device_map`, which turns it into the plan JSON
`{"placement": {op: spec device}}` that `planner.plan.load_plan` reads.

The spec's ops are named as `planner import torch` names them: module paths
(`layer1.0.conv1`, a further call `layer1.0@1`), the code of a scope that is no whole
module call (`layer1.0.add_`, top-level `add_3`), inputs after their argument (`x`), and
maybe a uniqueness suffix (`#2`). A key applies to an op that is the key's module or lies
inside it (`layer1` applies to `layer1.0.add_`; `""` is the whole model), and to a module op
it is part of (`transformer.h.0.attn` applies to the op `transformer.h.0`). The longest
applying key wins; keys inside one op that disagree split it across devices: an error.
A key naming the module that registers a tied weight (T5's `shared`, whose weight the
embeddings and the head use: `tie ... { weight shared.weight }` in the spec) places no op.
Ops no key covers (inputs, code outside every mapped module) are placed where accelerate
would run them: where their first placed input comes from, else where their first placed
consumer runs, else on the device of the first mapped op.

Torch devices map back to spec devices through the inverse of `torch_device_names` (the
rule `planner export torch` maps spec devices by when no `--device-map` is given).
Problems are E949 errors located at the key's value (`errors.JsonSpans`; the file's lines
are never quoted); keys and values from the file are shown as every JSON reader shows them
(`errors.quoted`: backticks, JSON's escapes), so a key holding control characters cannot
forge output lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..errors import Diagnostic, DiagnosticSink, JsonSpans, SpecError, did_you_mean, quoted
from ..model import Cluster, Graph, Problem

#: what may follow a key inside an op's name: a submodule or scope, a further call, a suffix
_SEPARATORS = re.compile(r"[.@#]")
#: a further call's and a uniqueness suffix, stripped to find the module an op calls
_CALL_SUFFIX = re.compile(r"(?:@\d+)?(?:#\d+)?$")
#: a torch device string: a type, maybe an index (`cuda:1`, `cpu`, `mps`, `xpu:0`)
_TORCH_DEVICE = re.compile(r"[a-z][a-z0-9_]*(?::\d+)?")
_TRAILING_DIGITS = re.compile(r"(\d+)$")
#: how many devices a hint lists before `and N more`
_LISTED = 16


#: the code of every problem of a device_map read as a placement: the file is never quoted
#: (docs/limits.md: a placement file is quoted only when it is a JSON object with `placement`)
DEVICE_MAP_CODE = "E949"

#: the device types of torch (and accelerate's `disk`): a value naming none of them is no
#: device, and a file holding one is not read as a device map (nor quoted back)
DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "npu", "hpu", "mlu", "xla", "meta", "ipu",
                "privateuseone", "disk")
_DEVICE_VALUE = re.compile(rf"(?:{'|'.join(DEVICE_TYPES)})(?::\d+)?")


def looks_like_device_map(data: Any) -> bool:
    """Whether `data` reads as an accelerate device map: a non-empty JSON object without a
    `placement`, each value a device index or a device string (`cuda:1`, `cpu`, `disk`).
    Anything else (a credentials file given by mistake) is left to the plan reader, which
    says it is no placement without quoting it."""
    return (isinstance(data, dict) and bool(data) and "placement" not in data
            and all((isinstance(v, int) and not isinstance(v, bool) and v >= 0)
                    or (isinstance(v, str) and _DEVICE_VALUE.fullmatch(v) is not None)
                    for v in data.values()))


def torch_device_names(cluster: Cluster) -> dict[str, str]:
    """`{spec device: torch device}` by the default rule: a device whose kind (or name)
    starts with `cpu` is `cpu`; any other is `cuda:N`, N being the digits ending its name
    (`gpu3` -> `cuda:3`), or else the number of accelerators before it. Where that gives
    two accelerators one number (`n0.gpu0` and `n1.gpu0` of two nodes), each is numbered
    by its position among the accelerators instead: two devices of a plan are never one."""
    out: dict[str, str] = {}
    accelerators: list[str] = []
    for d in cluster.devices:
        if (d.kind or d.name).lower().startswith("cpu"):
            out[d.name] = "cpu"
            continue
        digits = _TRAILING_DIGITS.search(d.name)
        out[d.name] = f"cuda:{int(digits.group(1)) if digits else len(accelerators)}"
        accelerators.append(d.name)
    if len({out[n] for n in accelerators}) < len(accelerators):
        out.update({n: f"cuda:{k}" for k, n in enumerate(accelerators)})
    return out


def placement_from_device_map(problem: Problem, data: Any, source: str,
                              text: str | None = None) -> dict[str, object]:
    """`{"placement": {op: spec device}}` for the accelerate `device_map` `data` (the parsed
    JSON object of the file `source`, whose `text` places each report at its key's value);
    `SpecError` (E949) when it cannot be one (see the module doc)."""
    sink = DiagnosticSink()
    where = JsonSpans(source, text, (), sink)
    if not isinstance(data, Mapping) or not data:
        raise SpecError(Diagnostic(
            "E949", "a device_map must be a non-empty JSON object {module path: device}",
            where(), ('for example {"conv1": 0, "layer1": "cuda:1", "fc": "cpu"}',)))
    devices = _key_devices(problem.cluster, data, where, sink)
    graph = problem.graph
    names = [d.name for d in problem.cluster.devices]
    placement = _covered(graph, devices, names, where, sink)
    sink.raise_if_errors()
    _propagate(graph, placement)
    return {"placement": {op.name: names[d] for op, d in zip(graph.ops, placement, strict=True)}}


def _shown(value: Any) -> str:
    """A key or value from the file as messages show it (`errors.quoted`); a list or an
    object by its type and size."""
    if isinstance(value, list | dict):
        return f"{'a list' if isinstance(value, list) else 'an object'} {quoted(value)}"
    return quoted(value)


def _torch_device(value: Any) -> str | None:
    """The torch device a device_map value names, or None when it names none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"cuda:{value}" if value >= 0 else None
    if isinstance(value, str):
        if value == "cuda":
            return "cuda:0"
        if value != "disk" and _TORCH_DEVICE.fullmatch(value):
            return value
    return None


def _key_devices(cluster: Cluster, data: Mapping[Any, Any], where: JsonSpans,
                 sink: DiagnosticSink) -> dict[str, int | None]:
    """Each string key -> the index of its spec device (None where the value names none:
    reported once per distinct value, at its first key)."""
    to_torch = torch_device_names(cluster)
    by_torch: dict[str, list[int]] = {}
    for i, d in enumerate(cluster.devices):
        by_torch.setdefault(to_torch[d.name], []).append(i)
    out: dict[str, int | None] = {}
    reported: set[str] = set()
    for key, value in data.items():
        if not isinstance(key, str):
            sink.error("E949", f"device_map key {_shown(key)} is not a module path", where(),
                       "keys are module paths such as `transformer.h.0`")
            continue
        torch_dev = _torch_device(value)
        owners = by_torch.get(torch_dev, []) if torch_dev is not None else []
        out[key] = owners[0] if len(owners) == 1 else None
        if len(owners) == 1 or repr(value) in reported:
            continue
        reported.add(repr(value))
        head = f"device_map puts {_shown(key)} on {_shown(value)}"
        if torch_dev is None:
            sink.error("E949", f"{head}, which is not a device", where(key),
                       _not_a_device(value))
        elif not owners:
            sink.error("E949", f"{head}: no device of cluster `{cluster.name}` is torch device "
                       f"`{torch_dev}`", where(key), _devices_hint(cluster, to_torch, value))
        else:
            both = ", ".join(f"`{cluster.devices[i].name}`" for i in owners)
            sink.error("E949", f"{head}: devices {both} of cluster `{cluster.name}` are all "
                       f"torch device `{torch_dev}`", where(key),
                       "give a placement file naming the spec's devices instead: "
                       '{"placement": {op: device}}')
    return out


def _not_a_device(value: Any) -> str:
    if value == "disk":
        return ("offloading to disk is not planned: planner places ops on devices that run "
                "them; map the module to a device (e.g. `cpu`) to compare")
    return "a device is an int N (cuda:N) or a torch device such as `cuda:1`, `cpu`, `mps`"


def _devices_hint(cluster: Cluster, to_torch: Mapping[str, str], value: Any) -> str:
    if isinstance(value, str) and value in to_torch:
        return (f"`{value}` is a device of the spec, torch device `{to_torch[value]}`: a "
                "device_map names torch devices")
    pairs = [f"`{name}` ({dev})" for name, dev in to_torch.items()]
    more = f" and {len(pairs) - _LISTED} more" if len(pairs) > _LISTED else ""
    listed = ", ".join(pairs[:_LISTED]) or "none"
    return f"cluster `{cluster.name}` has the devices {listed}{more}"


def _ancestors(name: str) -> Iterator[str]:
    """The keys that would apply to op `name` as its module or a scope holding it: `""`,
    each prefix ending before a `.`, `@` or `#`, and `name` itself (shortest first)."""
    yield ""
    for m in _SEPARATORS.finditer(name):
        if m.start():
            yield name[: m.start()]
    yield name


def _covered(graph: Graph, devices: Mapping[str, int | None], names: Sequence[str],
             where: JsonSpans, sink: DiagnosticSink) -> list[int]:
    """Per op, the device index its applying keys give it, or -1 where no key applies.

    Reports the keys that apply to no op and the ops whose parts the keys split."""
    inside: dict[str, list[str]] = {}  # module path -> the keys naming parts of it
    for key in devices:
        for m in re.finditer(r"\.", key):
            inside.setdefault(key[: m.start()], []).append(key)
    used: set[str] = set()
    placement = [-1] * len(graph.ops)
    for i, op in enumerate(graph.ops):
        outer = [k for k in _ancestors(op.name) if k in devices]
        used.update(outer)
        parts = inside.get(op.name, [])
        module = _CALL_SUFFIX.sub("", op.name)
        if module != op.name:
            parts = parts + inside.get(module, [])
        used.update(parts)
        if parts:
            placement[i] = _one_device(graph, op.name, parts, devices, names, where, sink)
        elif outer:
            placement[i] = _index(devices[outer[-1]])
    used.update(_tied_weight_keys(graph, devices))
    unused = [k for k in devices if k not in used]
    if unused:
        candidates = _module_paths(graph)
        for key in unused:
            hints = () if sink.full else did_you_mean(key[:200], candidates)
            sink.error("E949", f"device_map key {_shown(key)} applies to no op of "
                       f"graph `{graph.name}`", where(key),
                       *(hints or ("keys are module paths, as `planner import torch` names "
                                   "ops; a plan file is {\"placement\": {op: device}}",)))
    return placement


def _tied_weight_keys(graph: Graph, keys: Iterable[str]) -> set[str]:
    """The keys naming a module that registers a tied weight (T5's `shared`, `tie ... {
    weight shared.weight }`): each places the weight, which every holder keeps a copy of,
    and no op."""
    weights = [t.weight for t in graph.ties if t.weight]
    return {k for k in keys for w in weights if k in ("", w) or w.startswith(k + ".")}


def _index(device: int | None) -> int:
    return -1 if device is None else device


def _one_device(graph: Graph, op: str, parts: list[str], devices: Mapping[str, int | None],
                names: Sequence[str], where: JsonSpans, sink: DiagnosticSink) -> int:
    """The one device the keys naming parts of module op `op` agree on (-1 and an error
    where they put its parts on two devices)."""
    first = next((k for k in parts if devices[k] is not None), None)
    if first is None:
        return -1
    here = devices[first]
    other = next((k for k in parts if devices[k] not in (None, here)), None)
    if here is None or other is None:
        return _index(here)
    there = devices[other]
    assert there is not None
    sink.error("E949", f"device_map splits op `{op}` of graph `{graph.name}` across devices: "
               f"{_shown(first)} is on `{names[here]}` and "
               f"{_shown(other)} on `{names[there]}`", where(other),
               f"planner places each op on one device: map the whole module `{op}` to one")
    return -1


def _module_paths(graph: Graph) -> list[str]:
    """Every op name and every module or scope path holding one, in graph order."""
    seen: dict[str, None] = {}
    for op in graph.ops:
        for path in _ancestors(op.name):
            if path:
                seen.setdefault(path)
    return list(seen)


def _propagate(graph: Graph, placement: list[int]) -> None:
    """Place the ops no key covers (-1), in place, as accelerate would run them.

    In topological order an op goes where its first placed input (by edge order) comes
    from. Then, round by round until none changes, an op still unplaced goes where its
    first consumer placed in an earlier round runs. What is left (no path to a mapped op)
    goes to the device of the first mapped op.
    """
    edges = graph.edges
    first_mapped = next((d for d in placement if d >= 0), 0)
    for i in graph.topological_order:
        if placement[i] < 0:
            placement[i] = next((placement[edges[k].src] for k in graph.predecessors[i]
                                 if placement[edges[k].src] >= 0), -1)
    left = [i for i, d in enumerate(placement) if d < 0]
    while left:
        found = {i: d for i in left
                 for d in [next((placement[edges[k].dst] for k in graph.successors[i]
                                 if placement[edges[k].dst] >= 0), -1)] if d >= 0}
        if not found:
            break
        for i, d in found.items():
            placement[i] = d
        left = [i for i in left if i not in found]
    for i in left:
        placement[i] = first_mapped
