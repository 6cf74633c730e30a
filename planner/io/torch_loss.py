"""The model's outputs as the exported script sees them, and the memory and time of the
loss it computes on them, charged to the op that makes the logits.

`export torch --pipeline --code` writes a script whose `loss_fn` (the default loss) is the
cross-entropy of the output's `logits` against integer labels: on the last stage, after
each micro-batch's forward pass, torch runs `cross_entropy(logits.float())`, whose
`log_softmax` keeps its fp32 result until the micro-batch's backward pass (4 bytes per
logit, on top of the logits that torch's stage keeps), and whose backward makes an fp32
gradient of that result and then of the logits (8 bytes per logit at once, before the
gradient reaches the op that made the logits). Logits of another dtype are first copied to
fp32 (a forward transient of 4 bytes per logit). A traced graph holds no loss, so
`import torch --training` charges it to the op that makes `logits`, which runs where the
loss runs (on the last stage): that op's `output` gains the kept fp32 result (so a
micro-batch in flight holds it, under every schedule and with recomputation, which torch
runs outside the loss), its `temp` the fp32 copy, its backward op's `temp` the two
gradients, and both ops' times the loss's roofline bytes (`flops` 0). Measured times
(`--measure`) leave the loss out. The user's `--loss` cannot be known at import: the spec
counts the default loss; a model without `logits` (mean squared error) gets no charge.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING, Any

from ..units import format_bytes

if TYPE_CHECKING:
    from ..workload import Workload
    from ..workload.roofline import DeviceProfile
    from .torch_import import Traced

#: bytes per logit the cross-entropy keeps until backward: log_softmax's fp32 result
KEPT_PER_LOGIT = 4
#: bytes per logit the cross-entropy's backward holds at once: the fp32 gradients of the
#: log_softmax result (nll_loss's backward) and of its input (log_softmax's backward)
BACKWARD_PER_LOGIT = 8


@dataclass(frozen=True, slots=True)
class Outputs:
    """The model's output as the last stage returns it: flat tensors, their shapes, how
    they make the model's output and which is `logits`."""

    shapes: list[list[int] | None]
    #: `torch.utils._pytree.treespec_dumps` of the output's structure (None: one tensor, or
    #: a structure that does not serialise)
    spec: str | None
    logits: int | None
    #: the fx node of each flat output ("" for a leaf that is no node)
    nodes: tuple[str, ...] = ()


def model_outputs(traced: Traced) -> Outputs:
    """The model's outputs for one micro-batch (`Outputs`): an exported graph returns its
    flat outputs and keeps their structure in `_out_spec` (a ModelOutput's); an fx graph
    returns the structure itself."""
    output = next((n for n in traced.gm.graph.nodes if n.op == "output"), None)
    if output is None:
        return Outputs([], None, None)
    # lazy: optional (the torch extra), and only for an output: a script of a graph that
    # has none is written without torch (tests/hardening/test_generated_names.py)
    from torch.utils import _pytree

    leaves, structure = _pytree.tree_flatten(output.args[0])
    spec = getattr(traced.gm, "_out_spec", None) if traced.method == "export" else structure
    if spec is None or spec.num_leaves != len(leaves):
        spec = structure
    names = [getattr(leaf, "name", "") for leaf in leaves]
    shapes = [list(traced.shapes[n]) if n in traced.shapes else None for n in names]
    try:
        text = None if spec.is_leaf() else _pytree.treespec_dumps(spec)
    except Exception:  # noqa: BLE001 - a type that pytree cannot serialise
        text = None
    return Outputs(shapes, text, _logits_index(spec), tuple(names))


def _logits_index(spec: Any) -> int | None:
    """Where `logits` is among the flat outputs of a dict-like output (a ModelOutput)."""
    if spec.is_leaf() or not issubclass(spec.type, dict) or "logits" not in (spec.context
                                                                             or ()):
        return None
    at = 0
    children = spec.children() if hasattr(spec, "children") else spec.children_specs
    for key, child in zip(spec.context, children, strict=True):
        if key == "logits":
            return at if child.is_leaf() else None
        at += child.num_leaves
    return None


def charge_loss(traced: Traced, w: Workload, profile: DeviceProfile) -> str:
    """Charge the script's cross-entropy to the op of `w` (a training graph, backward ops
    added) that makes the logits (module docstring); the header's sentence on it, or ""
    where the model returns no `logits` (nothing is charged)."""
    found = model_outputs(traced)
    node = found.nodes[found.logits] if found.logits is not None else ""
    shape = found.shapes[found.logits] if found.logits is not None else None
    op_name = traced.names.get(node)
    bwd = next((o for o in w.ops if op_name and o.backward_of == op_name), None)
    if shape is None or bwd is None:  # no logits, or an input's (which gets no gradient)
        return ""
    fwd = next(o for o in w.ops if o.name == op_name)
    logits = prod(shape)
    itemsize = traced.output_bytes.get(node, 0) // max(1, logits)
    kept = KEPT_PER_LOGIT * logits
    cast = 0 if itemsize == KEPT_PER_LOGIT else KEPT_PER_LOGIT * logits
    fwd.output_bytes += kept
    fwd.temp_bytes = max(fwd.temp_bytes, cast)
    bwd.temp_bytes = max(bwd.temp_bytes, BACKWARD_PER_LOGIT * logits - bwd.output_bytes)
    for e in w.edges:  # the activations the backward op reads: the kept result too
        if e.src == op_name and e.dst == bwd.name:
            e.bytes += kept
    # roofline bytes: log_softmax reads and writes 4 B a logit; its backward makes nll's
    # gradient (4 B), reads it and the kept result and writes the logits' gradient (12 B);
    # a copy to fp32 and back adds itemsize + 4 B each way
    cast_bytes = 0 if not cast else (itemsize + KEPT_PER_LOGIT) * logits
    fwd.time_s = (fwd.time_s or 0.0) + profile.time_s(0.0, 8 * logits + cast_bytes)
    bwd.time_s = (bwd.time_s or 0.0) + profile.time_s(0.0, 16 * logits + cast_bytes)
    return (f"Loss: the exported script's cross-entropy of `logits` ({'x'.join(map(str, shape))}"
            f") is charged to `{op_name}`: its output counts the fp32 log-softmax kept until "
            f"backward ({format_bytes(kept)} a micro-batch), `{bwd.name}`'s temp the fp32 "
            f"gradients its backward makes ({format_bytes(BACKWARD_PER_LOGIT * logits)}), "
            f"their `time` its roofline bytes (not in measured times); `--loss` is not "
            f"counted.")
