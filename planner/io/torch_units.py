"""Which captured nodes make one op: the granularity of an imported PyTorch model.

Every node of a captured graph (`planner.io.torch_capture`) carries the stack of module
calls it ran in (`nn_module_stack`: call key, module path, class; a module's k-th further
call has the key `path@k`). A **unit** is what becomes one op of the spec:

- `op` granularity: every node is a unit (an fx `call_module` is one node; an aten op of
  `torch.export` is one node);
- `module:DEPTH`: each node goes to its innermost module call at nesting depth at most
  DEPTH (the model itself is depth 0, its children depth 1, ...); `module` alone is the
  innermost call at any depth. A unit is a maximal run of consecutive nodes (graph order,
  which is the order forward() ran them) going to the same call. A run may be a whole
  module call (every node of the call, and nothing else) or the code of a module's own
  forward() between its children's calls ("glue": `x + y`, a view, a mask), or a part of
  a call interrupted by another (rare; its module's parameters then tie the parts
  together, as any shared parameter does). Runs of consecutive nodes keep the contracted
  graph acyclic: a run never waits for a later one.

Names: a whole call is its module path (`layer1.0`, `transformer.h.3`; a further call
`path@k`); any other unit is `path.node` after its first node (`layer1.0.add_`; at the top
level just `node`). Inputs (placeholders) are units of their own, named after them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import Diagnostic, UsageError

#: node kinds that can be ops
OP_KINDS = ("placeholder", "call_module", "call_function", "call_method")
_GRANULARITY = re.compile(r"op|module(?::(\d{1,4}))?")


@dataclass
class Unit:
    """One op of the spec: nodes of the captured graph (see the module docstring)."""

    name: str
    nodes: list[Any] = field(default_factory=list)  # fx nodes, graph order
    #: the module path when the unit is a whole module call, else ""
    module: str = ""
    #: the class of that module (or of the innermost module the nodes ran in), or ""
    module_type: str = ""
    #: the path of the innermost module call the unit's nodes all ran in ("" = the model)
    scope: str = ""
    #: how many calls of `module` the graph makes (a SplitPoint at a module called twice
    #: splits twice)
    calls: int = 0
    is_input: bool = False


def parse_granularity(text: str) -> int | None:
    """`op` -> -1, `module` -> None (any depth), `module:D` -> D (E943 otherwise)."""
    match = _GRANULARITY.fullmatch(text.strip())
    if match is None or (match.group(1) is not None and int(match.group(1)) < 1):
        raise UsageError(Diagnostic("E943", f"--granularity `{text}` is not op, module or "
                                    "module:DEPTH (DEPTH >= 1)", None,
                                    ("e.g. --granularity module:2 (depth 1: the model's "
                                     "children)",)))
    if text.strip() == "op":
        return -1
    return int(match.group(1)) if match.group(1) is not None else None


def stack_of(n: Any) -> list[tuple[str, str, str]]:
    """(call key, module path, class name) of the module calls node `n` ran in, outermost
    first, the model itself left out."""
    out = []
    for key, value in (n.meta.get("nn_module_stack") or {}).items():
        path, cls = value
        if not path:
            continue
        name = cls.__name__ if isinstance(cls, type) else str(cls).rpartition(".")[2]
        out.append((str(key).removeprefix("L__self__"), str(path), name))
    return out


def is_op(n: Any, method: str) -> bool:
    """Whether node `n` becomes (part of) an op: not a parameter read or the output, and,
    in an exported graph, not a check that no op uses (`_assert_tensor_metadata`, the
    `_guards_fn` export adds for its input guards) nor an input that holds no tensor."""
    if n.op not in OP_KINDS:
        return False
    if method == "export" and n.op == "placeholder":  # a constant (`use_cache=False`) is no op
        return hasattr(n.meta.get("val"), "shape")
    return not (method == "export" and not n.users)


def units(gm: Any, method: str, granularity: str = "op") -> list[Unit]:
    """The units of `gm`'s op nodes, in graph order (see the module docstring)."""
    depth = parse_granularity(granularity)
    nodes = [n for n in gm.graph.nodes if is_op(n, method)]
    stacks = {n.name: stack_of(n) for n in nodes}
    members: dict[str, set[str]] = {}  # call key -> nodes that ran inside it
    calls: dict[str, int] = {}  # module path -> calls
    for n in nodes:
        for key, path, _ in stacks[n.name]:
            if key not in members:
                calls[path] = calls.get(path, 0) + 1
            members.setdefault(key, set()).add(n.name)
    out: list[Unit] = []
    run_key: str | None = None
    for n in nodes:
        stack = stacks[n.name]
        cut = stack if depth is None else stack[:max(depth, 0)]
        key = "" if n.op == "placeholder" else (cut[-1][0] if cut else "")
        if depth == -1 or n.op == "placeholder" or key != run_key or not out:
            out.append(Unit("", is_input=n.op == "placeholder"))
            run_key = key
        out[-1].nodes.append(n)
    for unit in out:
        _describe(unit, stacks, members, calls, depth)
    return out


def _describe(unit: Unit, stacks: dict[str, list[tuple[str, str, str]]],
              members: dict[str, set[str]], calls: dict[str, int], depth: int | None) -> None:
    first = unit.nodes[0]
    if unit.is_input:
        unit.name = first.name
        return
    common = _common(stacks[n.name] for n in unit.nodes)
    names = {n.name for n in unit.nodes}
    whole = next((entry for entry in reversed(common) if members[entry[0]] == names), None)
    if whole is not None and (depth == -1 or whole == common[-1]):
        key, path, cls = whole
        unit.module, unit.module_type, unit.calls = path, cls, calls[path]
        suffix = key.rpartition("@")[2] if "@" in key.rpartition(".")[2] else ""
        unit.name = f"{path}@{suffix}" if suffix else path
        unit.scope = path
        return
    scope = common[-1] if common else None
    unit.scope = scope[1] if scope else ""
    unit.module_type = scope[2] if scope else ""
    unit.name = f"{unit.scope}.{first.name}" if scope else first.name


def _common(stacks: Iterator[list[tuple[str, str, str]]]) -> list[tuple[str, str, str]]:
    """The longest prefix the stacks share."""
    common: list[tuple[str, str, str]] | None = None
    for stack in stacks:
        if common is None:
            common = list(stack)
            continue
        k = 0
        while k < min(len(common), len(stack)) and common[k] == stack[k]:
            k += 1
        del common[k:]
    return common or []


def unique_names(found: list[Unit]) -> None:
    """Make unit names unique (`name#2`, ...), as two glue runs may share a first node's
    name only by accident but must not share an op name."""
    used: set[str] = set()
    for unit in found:
        base, k, name = unit.name, 1, unit.name
        while name in used:
            k += 1
            name = f"{base}#{k}"
        used.add(name)
        unit.name = name
