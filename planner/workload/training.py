"""Turn a forward graph into a training step: one backward op per forward op.

For every forward op `x` (except data inputs) a backward op `x.bwd` is added, colocated
with `x` (as frameworks colocate gradients with their ops, so the weights, their gradient
and the optimizer state share one device) and marked `backward_of x` (a pipeline runs it
in the micro-batch's backward pass):

- edges: `x -> x.bwd` (the stashed activations, kept on the device), and for every forward
  edge `u -> v` of `b` bytes, `v.bwd -> u.bwd` of `b` bytes (the gradient of that tensor);
  a data input `u`, which has no backward op to keep its output, gets `u -> v.bwd` of `b`
  bytes instead (the batch `v`'s backward reads: a weight's gradient needs its input);
- compute: given by the caller (measured backward times, or the roofline of the backward
  FLOPs: `BACKWARD_FLOP_FACTOR` times the forward FLOPs for matrix products and
  convolutions, which need gradients of both operands, once for everything else; bytes
  moved twice the forward's);
- memory: `x.bwd` holds the gradient of `x`'s parameters plus the optimizer state
  (`OPTIMIZER_STATE`: none for SGD, one copy for momentum, two for Adam), and outputs the
  gradients of `x`'s inputs (the bytes of its incoming edges).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Final

from ..errors import Diagnostic, UsageError
from . import WorkEdge, Workload, WorkOp

#: backward FLOPs / forward FLOPs for ops whose weights (or second operand) need a gradient
BACKWARD_FLOP_FACTOR: Final = 2.0
#: optimizer -> copies of the parameters it keeps besides the gradient
OPTIMIZER_STATE: Final[dict[str, int]] = {"sgd": 0, "momentum": 1, "adam": 2}
BWD_SUFFIX: Final = ".bwd"


def add_backward(w: Workload, backward: Callable[[WorkOp], tuple[float, float | None]],
                 optimizer: str = "adam", skip: Collection[str] = ()) -> None:
    """Append backward ops, edges and colocation pairs to `w` in place.

    `backward(op)` returns the backward op's (seconds, FLOPs or None). Ops named in `skip`
    (data inputs) get no backward op and receive no gradient.
    """
    if optimizer not in OPTIMIZER_STATE:
        raise UsageError(Diagnostic("E930", f"unknown optimizer `{optimizer}`", None,
                                    ("one of: " + ", ".join(OPTIMIZER_STATE),)))
    state = 1 + OPTIMIZER_STATE[optimizer]
    names = {o.name for o in w.ops}
    fwd = [o for o in w.ops if o.name not in skip]
    bwd_name: dict[str, str] = {}
    for o in fwd:
        name = o.name + BWD_SUFFIX
        while name in names:
            name += "_"
        names.add(name)
        bwd_name[o.name] = name
    grad_in: dict[str, int] = {}
    for e in w.edges:
        if e.src in bwd_name and e.dst in bwd_name:
            grad_in[e.dst] = grad_in.get(e.dst, 0) + e.bytes
    fwd_edges = list(w.edges)
    for o in reversed(fwd):
        seconds, flops = backward(o)
        w.add(WorkOp(bwd_name[o.name], seconds, flops, params_bytes=o.params_bytes * state,
                     output_bytes=grad_in.get(o.name, 0), backward_of=o.name, type=o.type))
    _connect_backward(w, fwd, fwd_edges, bwd_name)
    w.colocations.extend([o.name, bwd_name[o.name]] for o in fwd)
    # tied forward ops' backward ops hold the tied weight's gradient and optimizer state
    w.ties.extend(([bwd_name[n] for n in names], nbytes * state, weight)
                  for names, nbytes, weight in list(w.ties) if all(n in bwd_name for n in names))


def optimizer_of(params: Iterable[tuple[int, int]]) -> str | None:
    """The optimizer whose state `add_backward` gave the backward ops, from the params of
    each (forward op, its backward op) pair: the backward op holds the forward op's times
    1 + OPTIMIZER_STATE (a spec prints sizes to 4 significant digits, so the ratio is
    rounded); None when no pair with params says, or the pairs disagree."""
    found = {round(b / f) - 1 for f, b in params if f > 0 and abs(b / f - round(b / f)) < 0.05}
    names = [name for name, copies in OPTIMIZER_STATE.items() if {copies} == found]
    return names[0] if names else None


def _connect_backward(w: Workload, fwd: list[WorkOp], fwd_edges: list[WorkEdge],
                      bwd_name: dict[str, str]) -> None:
    """The backward ops' edges (module docstring): stashed activations, gradients, and
    the data inputs their consumers' backward ops read."""
    for o in fwd:
        w.connect(o.name, bwd_name[o.name], o.output_bytes)
    for e in reversed(fwd_edges):
        if e.src in bwd_name and e.dst in bwd_name:
            w.connect(bwd_name[e.dst], bwd_name[e.src], e.bytes)
    for e in fwd_edges:  # a data input has no backward op to keep it
        if e.src not in bwd_name and e.dst in bwd_name:
            w.connect(e.src, bwd_name[e.dst], e.bytes)
