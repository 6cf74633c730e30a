"""A traced model's ops timed on a device (`--measure DEVICE`), and its graph run with a
profiler range per op (for `--times`).

`measure` runs a copy of the model `warmup` times, then `repeat` times timing every node
between two synchronisations on accelerators, and gives each node's median; the importer
(`torch_import`) sums them per op as `time[KIND]`. Measured times differ from run to run.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import Diagnostic, UsageError
from .torch_load import quiet_copy, require_torch
from .torch_units import OP_KINDS

if TYPE_CHECKING:
    from torch import fx

    from .torch_import import Traced

__all__ = ["measure", "run_annotated"]


def measure(traced: Traced, device: str, warmup: int = 3, repeat: int = 10,
            training: bool = False, threads: int | None = None) -> dict[str, float]:
    """fx node name -> median seconds over `repeat` runs on `device`, after `warmup` runs.

    Runs a copy of the model (the caller's stays where it is); on accelerators every node
    is timed between two synchronisations. `threads` sets torch's intra-op threads for the
    runs (on a busy machine, 1 avoids threads waiting on each other for milliseconds).
    """
    torch = require_torch()
    # lazy: optional (the `torch` extra)
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
    gm = quiet_copy(traced.gm).to(dev)
    inputs = tuple(x.to(dev) if isinstance(x, torch.Tensor) else x for x in traced.inputs)
    samples: dict[str, list[float]] = {name: [] for name in traced.names}

    class Timing(Interpreter):  # type: ignore[misc, unused-ignore]  # Any without torch
        keep = False

        def run_node(self, n: fx.Node) -> Any:
            if n.name not in traced.names and n.op in OP_KINDS and not n.users:
                return None  # an exported graph's check of the example's own inputs
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
    """Run the traced graph with one `record_function(op name)` range per op (from its
    first node to its last: an op of several nodes is one range), so that a `torch.profiler`
    Chrome trace of it feeds `--times` (see `planner.io.times`)."""
    torch = require_torch()
    # lazy: optional (the `torch` extra)
    from torch.fx import Interpreter

    first = {u.nodes[0].name: u.name for u in traced.units}
    last = {u.nodes[-1].name for u in traced.units}
    ranges: list[Any] = []

    class Annotated(Interpreter):  # type: ignore[misc, unused-ignore]  # Any without torch
        def run_node(self, n: fx.Node) -> Any:
            if n.name in first:  # the units are runs of consecutive nodes: one at a time
                ranges.append(torch.profiler.record_function(first[n.name]))
                ranges[-1].__enter__()
            try:
                return super().run_node(n)
            finally:
                if n.name in last and ranges:
                    ranges.pop().__exit__(None, None, None)

    return Annotated(traced.gm).run(*inputs)
