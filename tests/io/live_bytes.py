"""The bytes of the storages torch makes while a dispatch mode is on: how the tests measure
what a step holds (the loss's tensors, a pipeline rank's step in `torch_pipeline_runner`)."""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class Live(TorchDispatchMode):  # type: ignore[misc]
    """The bytes of the storages torch makes while it is on (not those of `given`, which
    views of them reach), alive and at the most."""

    def __init__(self, *given: Any) -> None:
        super().__init__()
        self.live: dict[int, int] = {t.untyped_storage().data_ptr(): 0 for t in given}
        self.now = self.peak = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in torch.utils._pytree.tree_leaves(out):
            storage = t.untyped_storage() if isinstance(t, torch.Tensor) else None
            if storage is None or storage.data_ptr() in self.live or not storage.nbytes():
                continue
            key, n = storage.data_ptr(), storage.nbytes()
            self.live[key] = n
            self.now += n
            self.peak = max(self.peak, self.now)
            weakref.finalize(storage, self._gone, key)
        return out

    def _gone(self, key: int) -> None:
        self.now -= self.live.pop(key, 0)
