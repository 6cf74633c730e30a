"""Shared machinery of the generators: ops from FLOPs and element counts, roofline times."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import Diagnostic, UsageError
from ..units import DIM_WORDS, RANGES, format_bytes_of, format_quantity, range_text
from ..workload import ROUNDED_UNITS, Workload, WorkOp, out_of_range, rounded_text
from ..workload.roofline import DTYPE_BYTES, PROFILES, DeviceProfile
from ..workload.training import BACKWARD_FLOP_FACTOR, OPTIMIZER_STATE, add_backward

#: an op input: a producer's name, or (name, bytes) when it sends only part of its output
Input = str | tuple[str, int]
#: called with a graph's ops and edges before it is built (the CLI refuses one over a limit)
SizeCheck = Callable[[int, int], None]


def graph_size(ops: int, edges: int, data: int, data_edges: int,
               training: bool) -> tuple[int, int]:
    """(ops, edges) of a generated graph whose forward pass has `ops` ops and `edges` edges,
    `data` of those ops data inputs with `data_edges` edges out of them; with `training`,
    plus what `add_backward` adds: a backward op per other op, an edge from each of those
    ops to its backward op, a gradient edge per edge between two of them, and per edge out
    of a data input (each to another op) one to its consumer's backward op."""
    if not training:
        return ops, edges
    grads = ops - data
    return ops + grads, edges + grads + (edges - data_edges) + data_edges


class Builder:
    """Builds a workload op by op; sizes are given in elements of the chosen dtype."""

    def __init__(self, name: str, profile: str, dtype: str, optimizer: str | None = None
                 ) -> None:
        """E930 for an unknown `profile`, `dtype` or `optimizer` (None: no training), before
        any op is built."""
        for what, value, known in (("device profile", profile, PROFILES),
                                   ("dtype", dtype, DTYPE_BYTES),
                                   ("optimizer", optimizer, OPTIMIZER_STATE)):
            if value is not None and value not in known:
                raise UsageError(Diagnostic("E930", f"unknown {what} `{value}`", None,
                                            ("one of: " + ", ".join(known),)))
        self.w = Workload(name)
        self.profile: DeviceProfile = PROFILES[profile]
        self.dtype = dtype
        self.elem = DTYPE_BYTES[dtype]
        self.data_ops: list[str] = []
        self._cost: dict[str, tuple[float, float]] = {}
        self._matmul: set[str] = set()
        self._out: dict[str, int] = {}

    def data(self, name: str, nbytes: int) -> str:
        """A data input (token ids): it writes its bytes to memory; no backward op."""
        self.w.add(WorkOp(name, self.profile.time_s(0.0, nbytes, self.dtype), 0.0,
                          output_bytes=nbytes))
        self._out[name] = nbytes
        self._cost[name] = (0.0, float(nbytes))
        self.data_ops.append(name)
        return name

    def weights(self, name: str, elems: int) -> str:
        """A variable shared by several ops: it holds the weights and sends them to its users.

        Its time is reading them once from memory (bytes / bandwidth); its backward op, the
        optimizer update, is timed by twice those bytes.
        """
        nbytes = elems * self.elem
        self.w.add(WorkOp(name, self.profile.time_s(0.0, nbytes, self.dtype), 0.0,
                          params_bytes=nbytes))
        self._out[name] = nbytes
        self._cost[name] = (0.0, float(nbytes))
        return name

    def op(self, name: str, flops: float, out_elems: int, inputs: Sequence[Input] = (),
           params_elems: int = 0, matmul: bool = False, moved: float | None = None) -> str:
        """Add a compute op; bytes moved default to its inputs + params + output."""
        out = out_elems * self.elem
        params = params_elems * self.elem
        in_bytes = 0
        for item in inputs:
            src, nbytes = item if isinstance(item, tuple) else (item, self._out[item])
            self.w.connect(src, name, nbytes)
            in_bytes += nbytes
        if moved is None:
            moved = float(in_bytes + params + out)
        self.w.add(WorkOp(name, self.profile.time_s(flops, moved, self.dtype), flops,
                          params_bytes=params, output_bytes=out))
        self._out[name] = out
        self._cost[name] = (flops, moved)
        if matmul:
            self._matmul.add(name)
        return name

    def train(self, optimizer: str) -> None:
        """Append the backward pass (see `planner.workload.training`)."""
        def backward(op: WorkOp) -> tuple[float, float | None]:
            flops, moved = self._cost[op.name]
            factor = BACKWARD_FLOP_FACTOR if op.name in self._matmul else 1.0
            return self.profile.time_s(flops * factor, 2 * moved, self.dtype), flops * factor

        add_backward(self.w, backward, optimizer, skip=self.data_ops)

    def check_ranges(self) -> None:
        """E930 for options that make a quantity no spec may hold (a time over 11.6 days, a
        tensor over 1 PiB: `--hidden 1000000000`), before the spec is written."""
        found = out_of_range(self.w)
        if found is not None:
            where, key, value, dim, side = found
            word = DIM_WORDS[dim]
            shown = _shown(value, dim, side)
            way = "smaller" if side == "above" else "larger"  # the way back into the range
            raise UsageError(Diagnostic(
                "E930", f"these options make {where}'s `{key}` {shown}, "
                f"{side} the valid range of a {word}", None,
                (f"a {word} is {range_text(dim)}; make the model {way} "
                 "(--hidden, --seq, --batch, --vocab)",)))

    def assumptions(self, batch: int, training: bool, optimizer: str) -> str:
        """Header lines on how the numbers were made."""
        lines = [(f"Op times: roofline max(FLOPs / peak, bytes / bandwidth) on "
                 f"{self.profile.summary(self.dtype)}; {self.dtype} tensors, batch {batch}.")]
        if training:
            lines.append(f"Training step: one backward op per forward op (x"
                         f"{BACKWARD_FLOP_FACTOR:g} FLOPs for matrix products), colocated "
                         f"with it; gradients and {optimizer} state are their params.")
        else:
            lines.append("Inference (forward pass only).")
        return "\n".join(lines)


def _shown(value: float, dim: str, side: str) -> str:
    """An out-of-range `value` as a person reads it: a size above the range in binary
    units, with the decimals it takes to read above it (`1024.001 TiB`, not `1024.00`)."""
    if dim == "size" and side == "above":
        return format_bytes_of(value, RANGES["size"][1])[0]
    return rounded_text(value, dim) if dim in ROUNDED_UNITS else format_quantity(value, dim)


def check_positive(**values: int) -> None:
    """Raise `UsageError` for a size option below 1."""
    for key, value in values.items():
        if value < 1:
            flag = f"--{key.replace('_', '-')}"
            raise UsageError(Diagnostic("E930", f"{flag} must be at least 1, not {value}",
                                        None, (f"give {flag} a whole number of 1 or more",)))
